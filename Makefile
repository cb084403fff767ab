# Two entry points, each doing its own set-up on a fresh machine:
#   make run    set up, then run the main job on the embedded CodiEsp data
#   make test   set up, then run the whole test suite
#   make docs   set up, then build the documentation site into docs/_build/html
# The virtual environment is built once; a second call only re-installs when
# pyproject.toml changed.

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.xplant-installed
EXTRAS ?= neural,report,test,llm,deepspeed,trees,descriptions,docs

.PHONY: run test test-fast docs setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/xplant run

test: $(STAMP)
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

# Warnings are errors and every cross-reference must resolve; the examples run.
docs: $(STAMP)
	$(BIN)/python -m sphinx -b html -W --keep-going -n docs docs/_build/html

clean:
	rm -rf $(VENV) build *.egg-info
