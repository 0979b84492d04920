#!/usr/bin/env bash
# Create .venv (with MEMORY_PYTHON or python3) and install the project with its test
# extras, again only when pyproject.toml changed. Sourced by run-demo.sh and run-tests.sh.
set -euo pipefail
PYTHON="${MEMORY_PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.personal-memory-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
    touch "$stamp"
fi
