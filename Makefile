# One command sets up and runs: `make demo` (pipeline on the embedded demo release, offline),
# `make test` (the test suite). Only python3 (>= 3.11) and make are needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.afbench-installed

.PHONY: setup demo official test lint bench clean harbor slurm

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

# Harbor 0.22.0 in its own venv (.harbor-venv, Python >= 3.12); prints its harbor executable.
harbor:
	bash ci/harbor-setup.sh

# A one-node SLURM cluster on this machine (root; Debian's slurm-wlm and munge).
slurm:
	bash ci/slurm-up.sh

clean:
	rm -rf results .snakemake
