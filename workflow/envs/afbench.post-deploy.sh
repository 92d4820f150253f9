#!/usr/bin/env bash
# Snakemake runs this inside the new environment after creating it, from its copy beside the
# environment (.snakemake/conda/<hash>.post-deploy.sh): two folders up is the working
# directory, the checkout the profiles run in. Install the pipeline's lock there, checked
# against its hashes, then that checkout's afbench without dependencies.
set -euo pipefail
checkout="$(dirname "$0")/../.."
python -m pip install --require-hashes --requirement "$checkout/requirements/run.txt"
python -m pip install --no-deps --no-build-isolation "$checkout"
