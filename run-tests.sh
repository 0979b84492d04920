#!/usr/bin/env bash
# Create .venv with the test extras if needed, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${MEMORY_PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# Reinstall when the project metadata changed since the last install.
stamp=.venv/.personal-memory-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
    touch "$stamp"
fi
exec .venv/bin/python -m pytest "$@"
