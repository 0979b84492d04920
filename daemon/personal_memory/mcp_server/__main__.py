"""``python -m personal_memory.mcp_server``: the MCP stdio server, as ``memory serve``."""

import sys

from ..cli.app import main

if __name__ == "__main__":
    raise SystemExit(main(["serve", *sys.argv[1:]]))
