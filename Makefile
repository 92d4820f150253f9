# One command sets up and runs: `make demo` (pipeline on the embedded demo release, offline),
# `make test` (the test suite). Only python3 (>= 3.11) and make are needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.afbench-installed

.PHONY: setup demo official test lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

demo: setup
	$(BIN)/snakemake --profile profiles/default

official: setup
	$(BIN)/snakemake --profile profiles/default --configfile config/config.yaml

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check scripts tests bench
	$(BIN)/snakemake --profile profiles/default --lint

bench: setup
	$(BIN)/python bench/run.py

clean:
	rm -rf results .snakemake
