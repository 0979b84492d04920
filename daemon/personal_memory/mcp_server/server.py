"""The MCP stdio server, on the official SDK: the tools registered under their names, each
marked read-only or not. Read-only unless writes are enabled; purge is never offered."""

from __future__ import annotations

import logging
import sys
from typing import NamedTuple

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from ..errors import PersonalMemoryError
from ..limits import EXIT_OK, EXIT_USAGE
from ..settings import Settings
from ..version import __version__
from .stdio import guard_stdin
from .tools import INSTRUCTIONS, MemoryTools

log = logging.getLogger("personal_memory.mcp")


class Tool(NamedTuple):
    name: str
    method: str  # of MemoryTools
    title: str
    read_only: bool
    destructive: bool = False
    idempotent: bool = True


READ_TOOLS = (
    Tool("memory_search", "search", "Search notes at a point in time", True),
    Tool("memory_read", "read", "Read a whole note at a point in time", True),
    Tool("memory_changes", "changes", "What changed between two times", True),
    Tool("memory_history", "history", "Revision history of a memory", True),
    Tool("memory_status", "status", "Memory and sync status", True),
)
WRITE_TOOLS = (
    Tool("memory_remember", "remember", "Remember a fact", False),
    Tool("memory_forget", "forget", "Forget a memory", False, destructive=True),
)


def build_server(config: Settings, *, warm: bool = False) -> MCPServer:
    tools = MemoryTools(config)
    if warm:
        tools.warm_in_background()
    server = MCPServer("personal-memory", title="Personal memory", version=__version__,
                       instructions=INSTRUCTIONS)
    for tool in READ_TOOLS + (WRITE_TOOLS if config.enable_writes else ()):
        server.add_tool(getattr(tools, tool.method), name=tool.name, title=tool.title,
                        annotations=ToolAnnotations(readOnlyHint=tool.read_only,
                                                    destructiveHint=tool.destructive,
                                                    idempotentHint=tool.idempotent,
                                                    openWorldHint=False))
    return server


def serve(config: Settings) -> None:
    server = build_server(config, warm=True)
    log.info("serving %s (namespace %s, %s)", config.db, config.namespace,
             "writes enabled" if config.enable_writes else "read-only")
    guard_stdin()
    server.run("stdio")


def run(config: Settings) -> int:
    """``memory serve``: serve until the client closes stdin; 2 on a setup error."""
    try:
        serve(config)
    except PersonalMemoryError as exc:
        print(f"memory serve: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_OK
