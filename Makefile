# One command sets up and runs: `make demo` (pipeline on the embedded demo release, offline),
# `make test` (the test suite). Only python3 (>= 3.11), make and git are needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.afbench-installed
# what the pipeline needs and nothing else (no test tools): all `make demo` installs
RUN_STAMP := $(VENV)/.afbench-run-installed
# the rules call `afbench` from the active environment: run Snakemake with the venv on PATH
ACTIVATE := PATH="$(CURDIR)/$(BIN):$$PATH"

.PHONY: setup demo official test test-fast lint format bench clean harbor slurm docker docs-image schemas lock

setup: $(STAMP)

# ci/install.py installs one lock of requirements/ (every package, transitive ones too, at its
# version and hashes), then afbench editable without dependencies: with uv (0.13.8, from PyPI)
# from the same indexes and constraints as pip, or with plain pip when uv cannot be installed
# (AFBENCH_INSTALLER=pip: pip only). It refuses a lock written from another pyproject.toml.
$(STAMP): pyproject.toml requirements/test.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python ci/install.py requirements/test.txt
	touch $(STAMP) $(RUN_STAMP)

$(RUN_STAMP): pyproject.toml requirements/run.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python ci/install.py requirements/run.txt
	touch $(RUN_STAMP)

# After changing a dependency in pyproject.toml: write the locks again (requirements/test.txt
# for `make setup`, requirements/run.txt for `make demo`, resolved within test.txt's versions)
# with uv 0.13.8, for every platform on Python >= 3.11. environment.yml and the rules' conda
# environment install the locks themselves (tests/test_packaging.py checks all four agree).
lock:
	$(PYTHON) ci/lock.py

demo: $(RUN_STAMP)
	$(ACTIVATE) snakemake --profile profiles/default

# The README's image: the demo report drawn afresh by this code (its figures and HTML rerun),
# its top 1280 x 2300 px shot with headless Chromium into docs/report.png, and written beside
# it (docs/report.revision) the demo revision it shows and the digest of the report's visible
# text (afbench.report.page.text_digest): a test rebuilds the report and fails when either is not current.
CHROMIUM ?= chromium
DEMO_REVISION = $(shell $(BIN)/python -c "import yaml; print(yaml.safe_load(open('config/demo.yaml'))['release']['revision'])")
TEXT_DIGEST = $(BIN)/python -c "import sys; from afbench.report.page import text_digest; \
	print(text_digest(sys.argv[1]))"

docs-image: $(RUN_STAMP)
	$(ACTIVATE) snakemake --profile profiles/default --forcerun render_figures render_report
	profile=$$(mktemp -d) && \
	$(CHROMIUM) --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	  --disable-background-networking --disable-component-update --disable-sync \
	  --hide-scrollbars --user-data-dir="$$profile" --window-size=1280,2300 \
	  --screenshot="$(CURDIR)/docs/report.png" \
	  "file://$(CURDIR)/results/$(DEMO_REVISION)/report/index.html"; \
	status=$$?; rm -rf "$$profile"; test $$status -eq 0
	{ echo "revision $(DEMO_REVISION)"; \
	  echo "text-sha256 $$($(TEXT_DIGEST) results/$(DEMO_REVISION)/report/index.html)"; \
	} > docs/report.revision

official: $(RUN_STAMP)
	$(ACTIVATE) snakemake --profile profiles/default --configfile config/config.yaml

# The tests start hundreds of Python processes (afbench, Snakemake's jobs): they keep Python's
# compiled modules (__pycache__, ignored by git) even where PYTHONDONTWRITEBYTECODE is set,
# which otherwise recompiles afbench and re-rewrites every test module in each process.
TEST_ENV := env -u PYTHONDONTWRITEBYTECODE

# every test, on three workers (pytest-xdist): the tests that drive the shared SLURM cluster,
# Docker engine or Harbor trials form one group (tests/conftest.py), run one after another on
# one worker, which mostly waits on containers and the cluster, while two workers take the rest
# on the two cores (two workers left a core idle while the engine group waited: 15.5 -> 12.8 min)
# The run leaves its JUnit XML report in $(JUNIT), each failing test's captured output in it
# (pyproject.toml's junit_logging), and names the 25 slowest tests; .ci/run prints the failures
# again at the end of its log (ci/run-tests.sh).
JUNIT ?= test-results/junit.xml

test: setup
	$(ACTIVATE) $(TEST_ENV) python -m pytest -n 3 --dist loadgroup --junitxml=$(JUNIT) --durations=25

# unit and CLI tests only (no Snakemake, SLURM, Harbor, Docker, browser or full-scale inputs):
# for iteration, on three workers (pytest-xdist): one more than the 2-core machine has, since
# its tests wait on servers, timeouts and child processes about a tenth of the time (measured:
# 1 to 5 s less wall than one worker per core, for 3% more CPU). Their temporary folders
# (~300 MB a run; pytest keeps the last three runs') are on the machine's tmpfs where it has
# one: every artifact afbench writes is fsync'd, file and folder, ~3,300 times a run, each
# ~1.3 ms on this machine's disk and nothing in memory
FAST_TMPDIR := $(shell test -d /dev/shm -a -w /dev/shm && echo /dev/shm)
test-fast: setup
	$(ACTIVATE) $(TEST_ENV) $(if $(FAST_TMPDIR),TMPDIR=$(FAST_TMPDIR)) AFBENCH_QUICK_PROPERTIES=1 python -m pytest -n 3 -m "not snakemake and not slurm and not harbor and not docker and not browser and not large"

lint: setup
	$(BIN)/ruff check scripts tests bench ci
	$(BIN)/ruff format --check scripts tests bench ci
	$(BIN)/snakefmt --check workflow
	$(ACTIVATE) snakemake --profile profiles/default --lint

format: setup
	$(BIN)/ruff format scripts tests bench ci
	$(BIN)/snakefmt workflow

bench: setup
	$(ACTIVATE) python bench/run.py

# The JSON Schemas of the artifact kinds (scripts/afbench/data/schemas), generated again from
# their declarations (afbench.kinds); a test holds the committed files to them.
schemas: setup
	$(BIN)/python -m afbench.kinds.schema --write

# Harbor 0.22.0 in its own venv (.harbor-venv, Python >= 3.12), and Harbor 0.26.0 beside it
# (.harbor-venv-0.26.0, for the tests that read newer Harbor's folders); prints each harbor.
harbor:
	bash ci/harbor-setup.sh
	bash ci/harbor-setup.sh 0.26.0

# A one-node SLURM cluster on this machine (root; Debian's slurm-wlm and munge).
slurm:
	bash ci/slurm-up.sh

# A Docker engine for Harbor's `docker` environment (root; Debian's docker.io, Compose v2, a
# local debian:bookworm-slim). `bash ci/docker-up.sh stop` ends the dockerd it started.
docker:
	bash ci/docker-up.sh

clean:
	rm -rf results .snakemake
