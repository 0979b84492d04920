#!/usr/bin/env bash
# The MCP Inspector (a third-party MCP client, from npm) into the tests' cache, and print
# the path of its command. The HTTP server's tests use it when it is there.
set -euo pipefail
version=2.12.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/personal-memory-tests/inspector-$version"
bin="$cache/node_modules/.bin/mcp-inspector"
if [ ! -x "$bin" ]; then
    command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 1; }
    mkdir -p "$cache"
    # No install scripts: the command line client needs none (they build the web UI).
    npm install --prefix "$cache" --no-audit --no-fund --ignore-scripts \
        "@modelcontextprotocol/inspector@$version" >&2
fi
echo "$bin"
