#!/usr/bin/env bash
# Snakemake runs this inside the new environment after creating it: install the afbench of the
# checkout this workflow lives in, without touching the pinned dependencies.
set -euo pipefail
python -m pip install --no-deps --no-build-isolation "$(dirname "$0")/../.."
