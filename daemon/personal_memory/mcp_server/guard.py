"""What every HTTP request passes before the SDK sees it: the Host and Origin it names
(DNS rebinding), the size of its body, a rate per token (or, without one, per address),
and at ``/mcp`` a bearer token that is well formed, known, live and issued for this
server, each refusal with its own one-line reason and a line in the log. A request that
passes carries the namespace it reads in ``scope["state"]``."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import math
import time
from collections import Counter, OrderedDict
from typing import Awaitable, Callable, Iterable, Mapping, NamedTuple
from urllib.parse import parse_qs, urlsplit

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..access.store import AccessStore, TokenRefused
from ..limits import (HTTP_MAX_BODY_BYTES, HTTP_RECHECK_SECONDS, HTTP_SESSION_IDLE_SECONDS,
                      HTTP_SESSIONS_PER_GRANT, MAX_NAMESPACE_CHARS, HTTP_OPEN_PER_GRANT)
from .oauth import NAMESPACE_NAME, REQUEST_BASE, same_url
from .stdio import call_problem

log = logging.getLogger("personal_memory.http")

NAMESPACE_KEY = "memory_namespace"
REFUSED = -32001  # JSON-RPC's implementation-defined server errors: a request refused
MAX_TRACKED = 10_000  # rate buckets kept; the least recently used go first


class Rate(NamedTuple):
    per_minute: float
    burst: int


class Buckets:
    """Token buckets by key: ``wait(key)`` is 0 when a request may go now, else the
    seconds until it may."""

    def __init__(self, rate: Rate):
        self.rate = rate
        self._held: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def wait(self, key: str) -> float:
        now = time.monotonic()
        level, then = self._held.pop(key, (float(self.rate.burst), now))
        level = min(float(self.rate.burst), level + (now - then) * self.rate.per_minute / 60)
        if level >= 1:
            self._held[key] = (level - 1, now)
            wait = 0.0
        else:
            self._held[key] = (level, now)
            wait = (1 - level) * 60 / self.rate.per_minute
        while len(self._held) > MAX_TRACKED:
            self._held.popitem(last=False)
        return wait


def rate_source(address: str) -> str:
    """Whom a rate counts: an address, and every loopback address as one (any program on
    this machine may send from any of 127.0.0.0/8, and would get a rate of its own from
    each)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    mapped = getattr(ip, "ipv4_mapped", None)
    return "loopback" if ip.is_loopback or (mapped is not None and mapped.is_loopback) \
        else address


class Sessions:
    """The MCP sessions each grant holds, as seen from outside the SDK: opened by a
    request without a session that got one, in use while a request names it (a stream
    stays in use), gone at DELETE, at "not found", or idle past the SDK's timeout."""

    def __init__(self, idle: float = HTTP_SESSION_IDLE_SECONDS):
        self.idle = idle
        self._held: dict[str, list] = {}  # session -> [grant, requests under way, last]

    def held_by(self, grant: str) -> int:
        now = time.monotonic()
        for sid in [k for k, (_, busy, last) in self._held.items()
                    if not busy and now - last > self.idle]:
            del self._held[sid]
        return sum(1 for g, _, _ in self._held.values() if g == grant)

    def idlest(self, grant: str) -> str | None:
        """The grant's session with no request under way that was used least recently."""
        idle = [(last, sid) for sid, (g, busy, last) in self._held.items()
                if g == grant and not busy]
        return min(idle)[1] if idle else None

    def drop(self, sid: str) -> None:
        self._held.pop(sid, None)

    def opened(self, sid: str, grant: str) -> None:
        self._held[sid] = [grant, 0, time.monotonic()]

    def begin(self, sid: str) -> None:
        if sid in self._held:
            self._held[sid][1] += 1

    def end(self, sid: str, status: int, deleted: bool) -> None:
        held = self._held.get(sid)
        if held is None:
            return
        held[1], held[2] = held[1] - 1, time.monotonic()
        if status == 404 or (deleted and status < 300):
            del self._held[sid]


def envelope_problem(body: bytes) -> str | None:
    """What makes a POST's body no JSON-RPC message, in one line; None when it is one, or
    not JSON at all (the SDK's parse error says that in one line already)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    except RecursionError:
        return "the body nests its arrays or objects too deep to be read"
    if not isinstance(message, dict):
        return ("the body must be one JSON-RPC message, an object (this server takes no "
                "batches, which MCP dropped in 2025-06-18: send one message per request)")
    if message.get("jsonrpc") != "2.0":
        return 'its "jsonrpc" must be "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        params = message.get("params", {})
        if not isinstance(params, dict):
            return '"params" must be an object'
        return call_problem(message["method"], params)
    if "result" in message or "error" in message:
        return None
    return 'a request names its "method"'


async def _take_body(receive: Receive, limit: int) -> tuple[list[Message], bytes | None]:
    """The messages of a request's body as read, and the body when it is within
    ``limit`` (None past it: reading stops there, and the rest is left to be received; a
    body sent without a length is held to it too; b"" when the client went away)."""
    taken: list[Message] = []
    size, more = 0, True
    while more:
        message = await receive()
        taken.append(message)
        if message["type"] != "http.request":
            return taken, b""
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
        if size > limit:
            return taken, None
    return taken, b"".join(m.get("body", b"") for m in taken)


async def _bounded_body(receive: Receive, limit: int, refuse, declared: str = "",
                        ) -> tuple[list[Message], bytes] | None:
    """The messages of a request's body as read, and the body, when it is within ``limit``
    bytes (``declared``: its Content-Length, over the limit refused before any is read);
    None when the client went away (nothing is answered) or the body was larger (refused
    with 413)."""
    too_big = declared.isdigit() and int(declared) > limit
    taken, body = ([], None) if too_big else await _take_body(receive, limit)
    if _gone(taken):
        return None
    if body is None:
        await refuse(413, "body_too_large", f"the body is larger than {limit} bytes")
        return None
    return taken, body


def _gone(taken: list[Message]) -> bool:
    """Whether the client went away before its body was all read (a slow one cut off):
    nothing is answered, and the SDK is not asked to read a body that is not there."""
    return bool(taken) and taken[-1]["type"] == "http.disconnect"


def _replaying(taken: list[Message], receive: Receive) -> Receive:
    """``receive`` that first gives back what was taken already."""
    queue = list(taken)

    async def replayed() -> Message:
        return queue.pop(0) if queue else await receive()
    return replayed


class Policy(NamedTuple):
    # Host header values accepted (lower case, with the port), each with the base URL a
    # request through it is answered as (issuer, token audience, metadata)
    bases: Mapping[str, str]
    origins: frozenset[str]  # Origin header values accepted (absent is accepted)
    per_token: Rate
    per_address: Rate
    max_form_bytes: int  # bodies outside /mcp (the SDK bounds /mcp's)
    namespace: str  # the namespace an address without ?namespace= reads
    mcp_path: str = "/mcp"


async def _send_json(send: Send, status: int, body: dict,
                     headers: list[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode()),
                            (b"cache-control", b"no-store"), *headers]})
    await send({"type": "http.response.body", "body": data})


class Guard:
    def __init__(self, app: ASGIApp, store: AccessStore, policy: Policy,
                 known: Callable[[], Iterable[str]] = lambda: ()):
        self.app = app
        self.store = store
        self.policy = policy
        self.known = known  # the namespaces a grant may read (see OwnerAuthorization)
        self.tokens = Buckets(policy.per_token)
        self.addresses = Buckets(policy.per_address)
        self.sessions = Sessions()
        self.open: Counter[str] = Counter()  # requests under way per grant (streams too)
        # each request under way: what ends it as its client would see a clean end
        self._ending: set[Callable[[], Awaitable[None]]] = set()
        self._logged_at: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def _log(self, where: str, reason: str, every: float = 60.0) -> None:
        """One line a refusal; the same refusal again within a minute is counted, and
        said with the next line (a flood must not fill the disk with its log)."""
        key = f"{where} {reason}"
        now = time.monotonic()
        then, quiet = self._logged_at.pop(key, (-every, 0))
        if now - then < every:
            self._logged_at[key] = (then, quiet + 1)
            return
        self._logged_at[key] = (now, 0)
        while len(self._logged_at) > MAX_TRACKED:
            self._logged_at.popitem(last=False)
        more = f" (and {quiet} more like it)" if quiet else ""
        log.warning("refused %s: %s%s", where, reason, more)

    def end_streams(self) -> None:
        """The server is stopping: every open stream (a listen, a GET) ends now, as a
        revoked token's does, instead of being cancelled mid-answer when the graceful
        shutdown runs out (a traceback a stream in the log). Called on the event loop."""
        for end in list(self._ending):
            asyncio.ensure_future(end())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", ())}
        path = scope.get("path", "")
        address = (scope.get("client") or ("?", 0))[0]
        where = f"{scope.get('method')} {path} from {address}"

        rpc = path == self.policy.mcp_path

        def refuse(status: int, error: str, description: str, extra=()):
            self._log(where, description)
            # MCP clients show a refusal's reason when it is a JSON-RPC error (the SDK's
            # otherwise says "Server returned an error response"); the OAuth endpoints
            # answer as OAuth does. The headers (WWW-Authenticate) are the same either way.
            body = {"jsonrpc": "2.0", "id": None, "error": {
                "code": REFUSED, "message": description, "data": {"error": error}}} if rpc \
                else {"error": error, "error_description": description}
            return _send_json(send, status, body, list(extra))

        host = headers.get("host", "").lower()
        base = self.policy.bases.get(host)
        if base is None:
            await refuse(421, "misdirected_request", f"Host {host!r} is not this server's")
            return
        if headers.get("host") != host:  # the SDK's own check compares it as written
            scope["headers"] = [(k, v.lower() if k.lower() == b"host" else v)
                                for k, v in scope["headers"]]
        reset = REQUEST_BASE.set(base)
        try:
            await self._checked(scope, receive, send, headers, path, address, base, where,
                                refuse)
        finally:
            REQUEST_BASE.reset(reset)

    async def _checked(self, scope, receive, send, headers, path, address, base, where,
                       refuse) -> None:
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in self.policy.origins:
            await refuse(403, "forbidden_origin", f"Origin {origin!r} may not call this "
                         "server")
            return
        if path == self.policy.mcp_path:
            await self._mcp(scope, receive, send, headers, address, base, refuse)
            return
        wait = self.addresses.wait(rate_source(address))
        if wait:
            await refuse(429, "rate_limited", "too many requests from this address",
                         [(b"retry-after", str(math.ceil(wait)).encode())])
            return
        read = await _bounded_body(receive, self.policy.max_form_bytes, refuse,
                                   headers.get("content-length", ""))
        if read is None:
            return
        await self.app(scope, _replaying(read[0], receive),
                       self._logged(send, where, self._log))

    async def _mcp(self, scope, receive, send, headers, address, base, refuse) -> None:
        bearer = headers.get("authorization", "")
        resource_url = base + self.policy.mcp_path
        www = [f'resource_metadata="{base}/.well-known/oauth-protected-resource'
               f'{self.policy.mcp_path}"']
        # The scope to ask for: the namespace the address names (?namespace=), else the
        # default one. A client that asks for none may otherwise ask for its own defaults
        # ("openid email profile"), which name no notes.
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        asked = query.get("namespace", [self.policy.namespace])[0]
        challenge = [f'scope="{asked}"'] if NAMESPACE_NAME.fullmatch(asked) else []

        async def unauthorized(description: str, given: bool = True) -> None:
            wait = self.addresses.wait(rate_source(address))  # failed tries: per address
            if wait:
                await refuse(429, "rate_limited", "too many failed requests from this "
                             "address", [(b"retry-after", str(math.ceil(wait)).encode())])
                return
            # no credentials at all: no error code in the challenge (RFC 6750 3.1)
            value = ", ".join([*(['Bearer error="invalid_token"',
                                  f'error_description="{description}"'] if given
                                 else ["Bearer"]), *challenge, *www])
            if not given:
                value = value.replace("Bearer, ", "Bearer ", 1)
            await refuse(401, "invalid_token", description,
                         [(b"www-authenticate", value.encode())])

        if not bearer.lower().startswith("bearer "):
            await unauthorized("no bearer token given" if not bearer else
                               "the Authorization header is not a Bearer token",
                               given=bool(bearer))
            return
        try:
            held = self.store.check(bearer[7:].strip())
        except TokenRefused as exc:
            await unauthorized(exc.reason)
            return
        if held.resource is not None and not same_url(held.resource, resource_url):
            await unauthorized("the token was issued for another server")
            return
        wait = self.tokens.wait(f"grant:{held.grant.id}")
        if wait:
            await refuse(429, "rate_limited", f"too many requests for {held.grant.name!r}",
                         [(b"retry-after", str(math.ceil(wait)).encode())])
            return
        wanted = query.get("namespace", [held.grant.namespaces[0]])[0]
        if wanted not in held.grant.namespaces and wanted not in self.known():
            # no consent can grant it: a typo in ?namespace= is said, not re-authorized
            await refuse(404, "unknown_namespace", f"this memory has no namespace "
                         f"{wanted[:MAX_NAMESPACE_CHARS]!r}")
            return
        if wanted not in held.grant.namespaces:
            scope_hint = f', scope="{wanted}"' if NAMESPACE_NAME.fullmatch(wanted) else ""
            await refuse(403, "insufficient_scope", f"this token does not read the "
                         f"namespace {wanted[:MAX_NAMESPACE_CHARS]!r}", [(
                             b"www-authenticate", (f'Bearer error="insufficient_scope"'
                                                   f'{scope_hint}, {www[0]}').encode())])
            return
        scope.setdefault("state", {})[NAMESPACE_KEY] = wanted
        grant, sid = f"grant:{held.grant.id}", headers.get("mcp-session-id")
        if sid is None and scope.get("method") == "POST" \
                and self.sessions.held_by(grant) >= HTTP_SESSIONS_PER_GRANT:
            # Clients that never end their sessions (a one-shot command line: DELETE is
            # only a SHOULD) would be locked out until the idle timeout: the grant's least
            # recently used idle session ends (its client gets 404 and starts another).
            oldest = self.sessions.idlest(grant)
            if oldest is None:
                await refuse(429, "too_many_sessions", f"{held.grant.name!r} holds "
                             f"{HTTP_SESSIONS_PER_GRANT} sessions, each with a request "
                             "under way: end one (DELETE)", [(b"retry-after", b"60")])
                return
            await self._end_session(scope, oldest)
            self.sessions.drop(oldest)
            self._log(f"sessions of {held.grant.name!r}", f"{HTTP_SESSIONS_PER_GRANT} open: "
                      "the least recently used idle one ended for a new one")
        if self.open[grant] >= HTTP_OPEN_PER_GRANT:
            self._log(f"requests of {held.grant.name!r}", f"{HTTP_OPEN_PER_GRANT} under way "
                      "(open streams among them): one more is refused")
            await refuse(429, "too_many_requests_open", f"{held.grant.name!r} has "
                         f"{HTTP_OPEN_PER_GRANT} requests or streams open: close one",
                         [(b"retry-after", b"5")])
            return
        self.open[grant] += 1  # counted at once: another request may come at any await
        try:
            await self._admitted(scope, receive, send, held, grant, sid, bearer, refuse,
                                 address)
        finally:
            self.open[grant] -= 1

    async def _admitted(self, scope: Scope, receive: Receive, send: Send, held, grant: str,
                        sid: str | None, bearer: str, refuse, address: str) -> None:
        """A request whose token and namespace passed, counted among its grant's: the SDK
        answers it; a stream's token is checked again as it runs, and the stream ends
        when the token does or the server stops (:meth:`end_streams`)."""
        # the SDK reads the token after one space: give it so, however it was written
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k.lower() != b"authorization"
                            ] + [(b"authorization", f"Bearer {bearer[7:].strip()}".encode())]
        status = 0
        ended = anyio.Event()
        checked = time.monotonic()
        finished = False

        async def end() -> None:
            """End the answer: its client sees a stream that ended."""
            nonlocal finished
            if ended.is_set():
                return
            ended.set()
            if status and not finished:
                finished = True
                await send({"type": "http.response.body", "body": b"",
                            "more_body": False})

        async def sending(message: Message) -> None:
            nonlocal status, checked, finished
            if ended.is_set():
                return
            if message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            if message["type"] == "http.response.start":
                status = message["status"]
                opened = dict(message.get("headers", ())).get(b"mcp-session-id")
                if sid is None and opened and status < 400:
                    self.sessions.opened(opened.decode("latin-1"), grant)
                elif sid is None and opened:  # the SDK discarded it: name no session
                    message = {**message, "headers": [
                        (k, v) for k, v in message["headers"] if k.lower() != b"mcp-session-id"]}
            elif message.get("more_body") and time.monotonic() - checked >= \
                    HTTP_RECHECK_SECONDS:  # a stream: is its token still good?
                checked = time.monotonic()
                try:
                    self.store.check(bearer[7:].strip())
                except TokenRefused as exc:
                    self._log(f"the stream of {held.grant.name!r}", f"ended: {exc.reason}")
                    await end()
                    return
            await send(message)

        async def receiving() -> Message:
            """The client's messages, or its going away once its stream has ended."""
            if ended.is_set():
                return {"type": "http.disconnect"}
            got: list[Message] = []
            async with anyio.create_task_group() as tasks:
                async def client() -> None:
                    got.append(await receive())
                    tasks.cancel_scope.cancel()

                async def stop() -> None:
                    await ended.wait()
                    tasks.cancel_scope.cancel()
                tasks.start_soon(client)
                tasks.start_soon(stop)
            return got[0] if got else {"type": "http.disconnect"}

        if scope.get("method") == "POST":
            read = await _bounded_body(receive, HTTP_MAX_BODY_BYTES, refuse)
            if read is None:
                return
            taken, body = read
            problem = envelope_problem(body)
            if problem is not None:  # one line, where the SDK prints a validation dump
                self._log(f"POST {self.policy.mcp_path} from {address}", problem)
                await _send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32600, "message": f"Invalid Request: {problem}"}})
                return
            receive = _replaying(taken, receive)  # the SDK reads it all (and bounds it)
        if sid is not None:
            self.sessions.begin(sid)
        self._ending.add(end)
        try:
            await self.app(scope, receiving, sending)
        finally:
            self._ending.discard(end)
            if sid is not None:
                self.sessions.end(sid, status, scope.get("method") == "DELETE")

    async def _end_session(self, scope, sid: str) -> None:
        """End one session as its client would (DELETE, with the same token): the SDK
        frees it at once."""
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (
            b"content-type", b"content-length", b"mcp-session-id")]
        ending = dict(scope, method="DELETE", headers=headers + [
            (b"mcp-session-id", sid.encode("latin-1"))], state=dict(scope.get("state", {})))

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            pass  # the answer is the SDK's to itself
        await self.app(ending, receive, send)

    @staticmethod
    def _logged(send: Send, where: str, say) -> Send:
        """One log line for each refusal of the SDK's OAuth endpoints (unknown client, a
        redirect URI not registered, a wrong PKCE verifier...), and for an authorization
        sent back to the client with an error (no PKCE challenge, a plain one)."""
        status, page = 0, False

        async def logged(message: Message) -> None:
            nonlocal status, page
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = dict(message.get("headers", ()))
                # a page of this server's (the consent page) logs its own refusals
                page = headers.get(b"content-type", b"").startswith(b"text/html")
                if 300 <= status < 400:
                    location = headers.get(b"location", b"")
                    query = parse_qs(urlsplit(location.decode("latin-1")).query)
                    if "error" in query:
                        say(where, (query.get("error_description") or query["error"])[0])
            elif message["type"] == "http.response.body" and 400 <= status < 500 \
                    and not page:
                try:
                    body = json.loads(message.get("body", b"") or b"{}")
                    reason = body.get("error_description") or body.get("error")
                except (ValueError, AttributeError):
                    reason = None
                say(where, reason or f"status {status}")
            await send(message)
        return logged
