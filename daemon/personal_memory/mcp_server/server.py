"""The MCP stdio server, on the official SDK: the tools registered under their names, each
marked read-only or not. Read-only unless writes are enabled; purge is never offered."""

from __future__ import annotations

import logging
import os
import sys
from typing import NamedTuple

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from ..errors import PersonalMemoryError
from ..limits import EXIT_OK, EXIT_USAGE
from ..settings import Settings
from ..version import __version__
from .stdio import Relay, is_worker
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


def build_server(config: Settings, *, warm: bool = False,
                 restart_on_change: bool = False) -> MCPServer:
    tools = MemoryTools(config)
    if warm:
        tools.warm_in_background()
    if restart_on_change:
        tools.exit_when_changed()
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
    """The SDK's server on stdio, in the worker process the relay starts: it exits with
    EXIT_RESTART when its database is purged or replaced, and the relay starts a fresh one."""
    server = build_server(config, warm=True, restart_on_change=True)
    log.info("serving %s (namespace %s, %s)", config.db, config.namespace,
             "writes enabled" if config.enable_writes else "read-only")
    server.run("stdio")


def relay(config: Settings) -> int:
    """The relay in front of the worker (see ``stdio``): the worker gets the resolved
    settings through the environment."""
    env = dict(os.environ)
    env.update(MEMORY_DB=str(config.db), MEMORY_NAMESPACE=config.namespace,
               MEMORY_ENABLE_WRITES="1" if config.enable_writes else "0",
               MEMORY_VECTOR_BACKEND=config.vector_backend, MEMORY_EMBEDDER=config.embedder,
               MEMORY_CONFIG=str(config.config_path))
    return Relay([sys.executable, "-m", "personal_memory", "serve"], env).run()


def run(config: Settings) -> int:
    """``memory serve``: serve until the client closes stdin; 2 on a setup error."""
    if not is_worker():
        return relay(config)
    try:
        serve(config)
    except PersonalMemoryError as exc:
        print(f"memory serve: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_OK
