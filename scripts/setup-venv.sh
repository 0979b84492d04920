#!/usr/bin/env bash
# Create .venv (with MEMORY_PYTHON or python3) and install the project with the extras
# its caller names (VENV_EXTRAS: run-demo.sh takes replication, run-tests.sh the test
# tools too), again only when pyproject.toml changed. Sourced by run-demo.sh and
# run-tests.sh.
set -euo pipefail
PYTHON="${MEMORY_PYTHON:-python3}"
extras="${VENV_EXTRAS:-test}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=".venv/.personal-memory-installed-$extras"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
    touch "$stamp"
fi
