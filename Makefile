# gpubench: `make demo` runs a short suite on this machine and writes report/index.html,
# `make setup` builds .venv, `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
# checkov (the Kubernetes policy scanner the suite runs on schedules/) pins boto3 and packaging
# below the project's own, so it lives in a virtualenv of its own, put on PATH for the tests.
TOOLS  := .venv-tools
CHECKOV := $(TOOLS)/checkov/bin/checkov

.PHONY: setup lint test demo stacks preview clean help

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

setup: $(STAMP)  ## create .venv with every extra the tests need

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# --dist loadfile: a module-scoped fixture (the campaign story, the e2e demo run)
# runs once, on one worker (xdist_group marks are not honoured by pytest 9 + xdist 3.8).
lint: setup  ## ruff (lint and format check) and the import-layer contract
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

$(CHECKOV):
	$(PYTHON) -m venv $(TOOLS)/checkov
	$(TOOLS)/checkov/bin/python -m pip install --quiet --upgrade pip
	$(TOOLS)/checkov/bin/python -m pip install --quiet 'checkov>=3.2,<4'

test: lint $(CHECKOV)  ## lint, then run the whole test suite (parallel, CPU only)
	PATH="$(CURDIR)/$(TOOLS)/checkov/bin:$$PATH" $(BIN)/python -m pytest -n auto --dist loadfile -q --durations=15

# DEMO_ARGS: extra `python -m analysis demo` flags, e.g. DEMO_ARGS="--hourly-usd 0.25";
# GPUBENCH_LOCAL_HOURLY_USD in the environment sets this machine's price too.
demo: setup  ## run a short real suite on this machine (results/), collect it and write report/index.html
	$(BIN)/python -m analysis demo $(DEMO_ARGS)

clean:  ## remove the virtualenv and build leftovers
	rm -rf $(VENV) $(TOOLS) build *.egg-info .pytest_cache
