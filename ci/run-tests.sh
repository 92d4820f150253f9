#!/usr/bin/env bash
# Run a test command (`make test`, by .ci/run), its output shown and kept in
# test-results/pytest.log, then print what its JUnit XML report (test-results/junit.xml, which
# `make test` writes) says: each failing test's output, the 25 slowest tests and the report's
# path, and pytest's closing line again, last. Exits with the test command's status.
set -euo pipefail
mkdir -p test-results
rm -f test-results/junit.xml test-results/pytest.log  # never a report of an earlier run
status=0
"$@" 2>&1 | tee test-results/pytest.log || status=$?
python3 "$(dirname "$0")/junit_summary.py" test-results/junit.xml test-results/pytest.log
exit "$status"
