"""The MCP server, on the official SDK, for stdio and Streamable HTTP alike: the tools registered under their names, each
marked read-only or not; notes as resources; prompts for the questions this memory answers
best. Read-only unless writes are enabled; purge is never offered."""

from __future__ import annotations

import inspect
import logging
import os
import sys
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from mcp_types import ToolAnnotations
from pydantic import ValidationError

from ..errors import PersonalMemoryError
from ..limits import EXIT_OK, EXIT_USAGE
from ..settings import Settings
from ..version import __version__
from . import resources
from .models import compact_schema, plain_optionals
from .stdio import ANNOUNCE_AFTER_ENV, ANNOUNCED_FD_ENV, Relay, is_worker
from .tools import INSTRUCTIONS, REQUEST_NAMESPACE, MemoryTools

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
    Tool("memory_read", "read", "Read a note at a point in time", True),
    Tool("memory_links", "links", "Links and backlinks at a point in time", True),
    Tool("memory_changes", "changes", "What changed between two times", True),
    Tool("memory_history", "history", "Revision history of a memory", True),
    Tool("memory_status", "status", "Memory and sync status", True),
)
WRITE_TOOLS = (
    Tool("memory_remember", "remember", "Remember a fact", False),
    Tool("memory_forget", "forget", "Forget a memory", False, destructive=True),
)


def one_line(exc: ValidationError) -> str:
    """Pydantic's report of bad arguments as one readable line (no URL, no dump)."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "arguments"
        given = repr(err.get("input"))
        given = given if len(given) <= 40 else given[:37] + "..."
        parts.append(f"{field}: {err['msg'][0].lower() + err['msg'][1:]} (got {given})")
    return "; ".join(parts)


def _refuse_unknown(name: str, arguments: dict[str, Any], tools) -> None:
    """An argument the tool does not take is refused, not dropped: a misnamed cutoff
    (``cutoff`` for ``as_of``) would otherwise answer with today's notes."""
    schema = next((tool.input_schema for tool in tools if tool.name == name), None)
    if schema is None:
        return  # the SDK names an unknown tool
    takes = list(schema.get("properties", {}))
    unknown = [key for key in arguments if key not in takes]
    if unknown:
        raise ToolError(f"{name} takes no argument {', '.join(map(repr, unknown))}; "
                        + (f"it takes {', '.join(takes)}" if takes else "it takes none"))


# Where the HTTP guard leaves the namespace a request's token reads (guard.NAMESPACE_KEY;
# not imported: stdio does not load the HTTP modules).
_NAMESPACE_STATE = "memory_namespace"


def _request_namespace(context) -> str | None:
    """The namespace an HTTP request reads (None on stdio)."""
    request = getattr(getattr(context, "_request_context", None), "request", None)
    scope = getattr(request, "scope", None)
    return scope.get("state", {}).get(_NAMESPACE_STATE) if isinstance(scope, dict) else None


class Server(MCPServer):
    """The SDK's server with arguments errors said in one line and the tools' own errors
    as they say them, each call over HTTP reading the namespace its token allows, and
    tools listed with compact schemas."""

    async def list_tools(self):
        return [tool.model_copy(update={
            "input_schema": plain_optionals(compact_schema(tool.input_schema)),
            "output_schema": compact_schema(tool.output_schema)})
            for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        reset = REQUEST_NAMESPACE.set(_request_namespace(context))
        try:
            _refuse_unknown(name, arguments, await super().list_tools())
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(one_line(exc.__cause__)) from None
            if not isinstance(exc, UnexpectedToolError) and isinstance(exc.__cause__, ToolError):
                raise ToolError(str(exc.__cause__)) from None  # ours, without the SDK's prefix
            raise
        finally:
            REQUEST_NAMESPACE.reset(reset)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context=None):
        """A prompt not offered, or asked with arguments missing or wrong, is the client's
        mistake: said in one line (invalid params), not logged as the server's error with
        a traceback."""
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as exc:
            if not isinstance(exc.__cause__, ValueError):  # a bug of ours: logged whole
                raise
            raise MCPError(INVALID_PARAMS, one_line(exc.__cause__)
                           if isinstance(exc.__cause__, ValidationError) else str(exc)) from None

    async def read_resource(self, uri, context=None):
        reset = REQUEST_NAMESPACE.set(_request_namespace(context))
        try:
            return await super().read_resource(uri, context)
        finally:
            REQUEST_NAMESPACE.reset(reset)


def build_server(config: Settings, *, warm: bool = False, restart_on_change: bool = False,
                 auth=None, provider=None) -> MCPServer:
    """The one server of both transports. With ``auth`` (HTTP), ``provider`` is the
    authorization server and change announcements cover every namespace (each session
    listens to the notes its token reads)."""
    tools = MemoryTools(config, remote=auth is not None)
    if provider is not None:  # the scopes it offers are the namespaces this memory holds
        provider.namespaces = tools.namespaces
    if warm:
        tools.warm_in_background()
    if restart_on_change:
        tools.exit_when_changed()
    bus = InMemorySubscriptionBus()

    @asynccontextmanager
    async def lifespan(server):
        async with anyio.create_task_group() as group:
            group.start_soon(_announce_changes, tools, bus, auth is not None)
            yield {}
            group.cancel_scope.cancel()

    server = Server("personal-memory", title="Personal memory", version=__version__,
                    instructions=INSTRUCTIONS, subscriptions=bus, lifespan=lifespan,
                    auth=auth, auth_server_provider=provider)
    for tool in READ_TOOLS + (WRITE_TOOLS if config.enable_writes else ()):
        fn = getattr(tools, tool.method)
        server.add_tool(fn, name=tool.name, title=tool.title,
                        description=inspect.cleandoc(fn.__doc__ or ""),
                        annotations=ToolAnnotations(readOnlyHint=tool.read_only,
                                                    destructiveHint=tool.destructive,
                                                    idempotentHint=tool.idempotent,
                                                    openWorldHint=False))
    resources.register(server, tools)
    return server


async def _announce_changes(tools: MemoryTools, bus: InMemorySubscriptionBus,
                            every_namespace: bool = False, every: float = 1.0) -> None:
    """Tell listening clients which notes changed (resource-updated events) whenever the
    daemon indexes something: the notes of the revisions appended since the last look.
    A worker that replaces another (``stdio``) starts after what that one announced."""
    newest = await anyio.to_thread.run_sync(tools.newest_revision)
    after = os.environ.get(ANNOUNCE_AFTER_ENV, "")
    last = min(int(after), newest) if after.isdigit() else newest
    _tell_relay(last)
    while True:
        await anyio.sleep(every)
        try:
            seen = last
            last, notes = await anyio.to_thread.run_sync(tools.notes_changed_after, last,
                                                         every_namespace)
        except PersonalMemoryError as exc:
            log.warning("could not look for changed notes: %s", exc)
            continue
        if last != seen:
            _tell_relay(last)
        for note in notes:
            await bus.publish(ResourceUpdated(uri=resources.note_uri(note)))
        if notes:
            await bus.publish(ResourceUpdated(uri=resources.RECENT))


def _tell_relay(revision: int) -> None:
    """The newest revision announced up to, for the relay to hand to a replacement."""
    fd = os.environ.get(ANNOUNCED_FD_ENV, "")
    if fd.isdigit():
        try:
            os.write(int(fd), f"{revision}\n".encode())
        except OSError:
            pass  # no relay behind us (run directly): nothing to hand over


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
