#!/usr/bin/env bash
# Create .venv with the test extras if needed, check the import layers, run the whole suite.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup-venv.sh
.venv/bin/lint-imports --no-cache
exec .venv/bin/python -m pytest "$@"
