# gpubench: `make demo` runs a short suite on this machine and writes report/index.html,
# `make setup` builds .venv, `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev

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

test: lint  ## lint, then run the whole test suite (parallel, CPU only)
	$(BIN)/python -m pytest -n auto --dist loadfile -q

# DEMO_ARGS: extra `python -m analysis demo` flags, e.g. DEMO_ARGS="--hourly-usd 0.25";
# GPUBENCH_LOCAL_HOURLY_USD in the environment sets this machine's price too.
demo: setup  ## run a short real suite on this machine (results/), collect it and write report/index.html
	$(BIN)/python -m analysis demo $(DEMO_ARGS)

clean:  ## remove the virtualenv and build leftovers
	rm -rf $(VENV) build *.egg-info .pytest_cache
