#!/usr/bin/env bash
# Create .venv if needed, install, and show point-in-time answers on a temporary database.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${MEMORY_PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.personal-memory-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
    touch "$stamp"
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
.venv/bin/memory --db "$tmp/demo.db" demo
