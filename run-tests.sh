#!/usr/bin/env bash
# Create .venv with the test extras if needed, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup-venv.sh
exec .venv/bin/python -m pytest "$@"
