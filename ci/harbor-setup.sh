#!/usr/bin/env bash
# Install Harbor 0.22.0 (the release's pinned harness) in its own venv, .harbor-venv/, and print
# the path of its `harbor` executable on stdout. `bash ci/harbor-setup.sh 0.26.0` installs that
# Harbor instead, in .harbor-venv-0.26.0/ (the tests that read newer Harbor's job folders use
# it; plans keep pinning 0.22.0). Idempotent: a venv that already has exactly this Harbor is
# left alone. Harbor 0.22.0 needs Python >= 3.12 while the project stays on 3.11,
# so it gets a separate interpreter: $HARBOR_PYTHON if set, else the first python3.12/3.13 found
# on PATH or under pyenv (this machine kind has pyenv's 3.12.1 beside the system's 3.11).
# Debian 12 (bookworm) ships no python3.12 package: elsewhere, install a Python >= 3.12 and set
# HARBOR_PYTHON to it.
set -euo pipefail
cd "$(dirname "$0")/.."
HARBOR_VERSION=${1:-0.22.0}
if [ "$HARBOR_VERSION" = 0.22.0 ]; then
    VENV=${HARBOR_VENV:-.harbor-venv}
else
    VENV=${HARBOR_VENV:-.harbor-venv-$HARBOR_VERSION}
fi
case "$HARBOR_VERSION" in
    0.2[2-6].[0-9]*) ;;
    *) echo "harbor-setup: Harbor $HARBOR_VERSION is not one afbench reads (0.22.0 to 0.26.x)" >&2; exit 2 ;;
esac

say() { echo "harbor-setup: $*" >&2; }

supported() {  # is $1 a Python >= 3.12?
    "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1
}

find_python() {
    local candidate
    if [ -n "${HARBOR_PYTHON:-}" ]; then
        echo "$HARBOR_PYTHON"
        return 0
    fi
    for candidate in python3.12 python3.13 \
        "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 \
        "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13; do
        if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

installed_version() {
    "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("harbor"))' \
        2>/dev/null || true
}

if [ -x "$VENV/bin/harbor" ] && [ "$(installed_version)" = "$HARBOR_VERSION" ]; then
    echo "$(pwd)/$VENV/bin/harbor"
    exit 0
fi

if [ -n "${HARBOR_PYTHON:-}" ] && ! supported "$HARBOR_PYTHON"; then
    say "HARBOR_PYTHON=$HARBOR_PYTHON is not a Python >= 3.12"
    exit 1
fi
if ! PY=$(find_python); then
    say "no Python >= 3.12 found (Harbor $HARBOR_VERSION needs one; the project's own 3.11"
    say "cannot run it). Looked for python3.12, python3.13 on PATH and under"
    say "${PYENV_ROOT:-$HOME/.pyenv}/versions. Debian 12 (bookworm) has no python3.12 package;"
    say "install a Python >= 3.12 (e.g. with pyenv) and set HARBOR_PYTHON=<its path>."
    exit 1
fi
say "using $PY ($("$PY" --version 2>&1)) for Harbor $HARBOR_VERSION in $VENV"
if [ -d "$VENV" ] && ! supported "$VENV/bin/python"; then
    say "$VENV exists but is not a Python >= 3.12 venv; recreating it"
    rm -rf "$VENV"
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
LOG=$(mktemp)
# Harbor's own dependencies are pinned too (ci/harbor-<version>-constraints.txt, a freeze of the
# venv the tests were run with): a new release of one of them on PyPI cannot change the harness.
CONSTRAINTS="ci/harbor-$HARBOR_VERSION-constraints.txt"
pinned=()
if [ -f "$CONSTRAINTS" ]; then
    pinned=(--constraint "$CONSTRAINTS")
else
    say "no $CONSTRAINTS: Harbor $HARBOR_VERSION's dependencies are whatever PyPI has today"
fi
if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${pinned[@]}" \
    "harbor==$HARBOR_VERSION" >"$LOG" 2>&1; then
    cat "$LOG" >&2
    say "pip install harbor==$HARBOR_VERSION failed (log above)"
    rm -f "$LOG"
    exit 1
fi
rm -f "$LOG"
if [ "$(installed_version)" != "$HARBOR_VERSION" ] || [ ! -x "$VENV/bin/harbor" ]; then
    say "pip finished but $VENV/bin/harbor is not Harbor $HARBOR_VERSION"
    exit 1
fi
echo "$(pwd)/$VENV/bin/harbor"
