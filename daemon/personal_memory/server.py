"""``python -m personal_memory.server``: the MCP stdio server, same as ``memory serve``."""

import sys

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main(["serve", *sys.argv[1:]]))
