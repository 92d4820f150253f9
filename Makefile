# One command sets up and runs: `make demo` (pipeline on the embedded demo release, offline),
# `make test` (the test suite). Only python3 (>= 3.11), make and git are needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.afbench-installed
# the rules call `afbench` from the active environment: run Snakemake with the venv on PATH
ACTIVATE := PATH="$(CURDIR)/$(BIN):$$PATH"

.PHONY: setup demo official test lint format bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

demo: setup
	$(ACTIVATE) snakemake --profile profiles/default

official: setup
	$(ACTIVATE) snakemake --profile profiles/default --configfile config/config.yaml

test: setup
	$(ACTIVATE) python -m pytest

lint: setup
	$(BIN)/ruff check scripts tests bench
	$(BIN)/ruff format --check scripts tests bench
	$(BIN)/snakefmt --check workflow
	$(ACTIVATE) snakemake --profile profiles/default --lint

format: setup
	$(BIN)/ruff format scripts tests bench
	$(BIN)/snakefmt workflow

bench: setup
	$(ACTIVATE) python bench/run.py

clean:
	rm -rf results .snakemake
