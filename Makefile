# gpubench: `make demo` runs a short suite on this machine and writes report/index.html,
# `make setup` builds .venv, `make test` runs the suite.
#
# Two installs by purpose, each with its own stamp in .venv:
#   make demo   -> gpubench[demo]: the report's libraries and TensorFlow for the CPU, nothing else
#   make setup  -> gpubench[dev]:  every extra plus the test tools (what `make test` and `make lint` use),
#                  installed on top of the same .venv
# Set-up prints a line per step and pip's own progress (PIP_FLAGS=--quiet to hush it).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
DEMO_STAMP := $(VENV)/.installed-demo
PIP_FLAGS ?= --progress-bar on
# checkov (the Kubernetes policy scanner the suite runs on schedules/) pins boto3 and packaging
# below the project's own, so it lives in a virtualenv of its own, put on PATH for the tests.
TOOLS  := .venv-tools
CHECKOV := $(TOOLS)/checkov/bin/checkov

.PHONY: setup setup-demo lint test demo clean help

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

setup: $(STAMP)  ## create .venv with every extra the tests need (gpubench[dev])

setup-demo: $(DEMO_STAMP)  ## create .venv with only what the demo needs (gpubench[demo])

# A current pip: it shows a progress bar while it installs (minutes for TensorFlow), not only downloads.
$(BIN)/python:
	@echo "[setup] creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "[setup] upgrading pip in $(VENV)"
	$(BIN)/python -m pip install $(PIP_FLAGS) --upgrade pip

# --no-compile: Python writes the bytecode of what the demo imports when it first imports it
# (3,600 files, 76 MB), instead of pip compiling every module at install (7,400 files, 159 MB).
# Measured 2026-11-27 on a fresh clone after `make demo`: .venv holds 2.02e9 bytes (2.08e9 on
# disk, 1.94 GiB; `du -sh` 2.0G).
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	@echo "[setup] installing gpubench[demo] into $(VENV): TensorFlow for the CPU and the report's libraries"
	$(BIN)/python -m pip install $(PIP_FLAGS) --no-compile -e '.[demo]'
	@touch $@
	@echo "[setup] gpubench[demo] installed"

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "[setup] installing gpubench[dev] into $(VENV): every extra and the test tools"
	$(BIN)/python -m pip install $(PIP_FLAGS) -e '.[dev]'
	@touch $@
	@echo "[setup] gpubench[dev] installed"

# --dist loadfile: a module-scoped fixture (the campaign story, the e2e demo run)
# runs once, on one worker (pytest 9 + xdist 3.8 do not honour xdist_group marks:
# xdist renames item._nodeid, pytest 9 reads item._id). --no-loadscope-reorder: files
# are handed out in collection order, the longest first (tests/suite_order.py), so the
# workers end together instead of one taking a long file last.
# TEST_WORKERS: one more than the cores. A quarter of the suite's time is spent waiting
# (servers, subprocesses, sshd), so a third worker on two cores fills it: 9 min 4 s
# against 10 min 44 s to 11 min 25 s with two (2026-11-25 and -26, 2 cores, 1,007 CPU-seconds).
# On 2026-11-28 00:08 UTC, a fresh clone of 3e86297 under CI=true on a quiet 2-core machine (load 1.5):
# `make test` 4 min 44 s (pytest 4 min 43 s) for 3,536 tests with three workers (the goal is
# 5 minutes for the whole of `make test`).
# Wall times mislead on a shared machine: GPUBENCH_SUITE_CPU=FILE records each test's CPU seconds
# (its process and the children it waited for); `python tests/suite_order.py FILE` ranks the files by them.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
lint: setup  ## ruff (lint and format check) and the import-layer contract
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

$(CHECKOV):
	$(PYTHON) -m venv $(TOOLS)/checkov
	$(TOOLS)/checkov/bin/python -m pip install --quiet --upgrade pip
	$(TOOLS)/checkov/bin/python -m pip install --quiet 'checkov>=3.2,<4'

test: lint $(CHECKOV)  ## lint, then run the whole test suite (parallel, CPU only)
	PATH="$(CURDIR)/$(TOOLS)/checkov/bin:$$PATH" $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -q --durations=15

# DEMO_ARGS: extra `python -m analysis demo` flags, e.g. DEMO_ARGS="--hourly-usd 0.25";
# GPUBENCH_LOCAL_HOURLY_USD in the environment sets this machine's price too.
demo: $(DEMO_STAMP)  ## install gpubench[demo] only, then run a short real suite on this machine (results/), collect it and write report/index.html
	$(BIN)/python -m analysis demo $(DEMO_ARGS)

clean:  ## remove the virtualenv and build leftovers
	rm -rf $(VENV) $(TOOLS) build *.egg-info .pytest_cache
