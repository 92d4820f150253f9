# One command sets up and runs: `make demo` (pipeline on the embedded demo release, offline),
# `make test` (the test suite). Only python3 (>= 3.11), make and git are needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.afbench-installed
# the rules call `afbench` from the active environment: run Snakemake with the venv on PATH
ACTIVATE := PATH="$(CURDIR)/$(BIN):$$PATH"

.PHONY: setup demo official test test-fast lint format bench clean harbor slurm docker docs-image

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,parquet]'
	touch $(STAMP)

demo: setup
	$(ACTIVATE) snakemake --profile profiles/default

# The README's image: the demo report drawn afresh by this code (its figures and HTML rerun),
# its top 1280 x 2300 px shot with headless Chromium into docs/report.png, and the demo
# revision it shows written beside it (docs/report.revision; a test checks it is current).
CHROMIUM ?= chromium
DEMO_REVISION = $(shell $(BIN)/python -c "import yaml; print(yaml.safe_load(open('config/demo.yaml'))['release']['revision'])")

docs-image: setup
	$(ACTIVATE) snakemake --profile profiles/default --forcerun render_figures render_report
	profile=$$(mktemp -d) && \
	$(CHROMIUM) --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	  --disable-background-networking --disable-component-update --disable-sync \
	  --hide-scrollbars --user-data-dir="$$profile" --window-size=1280,2300 \
	  --screenshot="$(CURDIR)/docs/report.png" \
	  "file://$(CURDIR)/results/$(DEMO_REVISION)/report/index.html"; \
	status=$$?; rm -rf "$$profile"; test $$status -eq 0
	echo $(DEMO_REVISION) > docs/report.revision

official: setup
	$(ACTIVATE) snakemake --profile profiles/default --configfile config/config.yaml

test: setup
	$(ACTIVATE) python -m pytest

# unit and CLI tests only (no Snakemake, SLURM, Harbor, Docker, browser or full-scale inputs):
# for iteration, spread over the machine's cores (pytest-xdist)
test-fast: setup
	$(ACTIVATE) python -m pytest -n auto -m "not snakemake and not slurm and not harbor and not docker and not browser and not large"

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

# Harbor 0.22.0 in its own venv (.harbor-venv, Python >= 3.12); prints its harbor executable.
harbor:
	bash ci/harbor-setup.sh

# A one-node SLURM cluster on this machine (root; Debian's slurm-wlm and munge).
slurm:
	bash ci/slurm-up.sh

# A Docker engine for Harbor's `docker` environment (root; Debian's docker.io, Compose v2, a
# local debian:bookworm-slim). `bash ci/docker-up.sh stop` ends the dockerd it started.
docker:
	bash ci/docker-up.sh

clean:
	rm -rf results .snakemake
