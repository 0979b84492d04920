"""``memory serve --http``: the same server as on stdio (``build_server``: one definition of
every tool, resource and prompt) over the SDK's Streamable HTTP transport at ``/mcp``,
behind OAuth 2.1 (``oauth``, ``consent``) and the request checks of ``guard``.

One process serves every client from one warm index and one model. Like the stdio relay,
a small supervisor holds the listening socket and runs the server in a child: when the
database is purged or replaced the child exits (EXIT_RESTART) and a fresh one takes the
same socket, so nothing a purge erased survives in memory and clients reconnect to the
same address. Options go defaults, parse, validate (:func:`check`)."""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..paths import ensure_private_dir
from ..limits import (EXIT_OK, EXIT_RESTART, HTTP_ADDRESS_BURST,
                      HTTP_ADDRESS_REQUESTS_PER_MINUTE, HTTP_BURST,
                      HTTP_MAX_BODY_BYTES, HTTP_MAX_FORM_BYTES, HTTP_MAX_SESSIONS,
                      HTTP_PORT, HTTP_REQUESTS_PER_MINUTE, HTTP_SESSION_IDLE_SECONDS,
                      MAX_PORT)
from ..settings import Settings
from ..slow_clients import protocol

log = logging.getLogger("personal_memory.http")

MCP_PATH = "/mcp"
WORKER_FD_ENV = "PERSONAL_MEMORY_HTTP_FD"
OPTIONS_ENV = "PERSONAL_MEMORY_HTTP_OPTIONS"


class HttpOptions(NamedTuple):
    """What ``memory serve --http`` was asked for, before it is checked."""
    host: str = "127.0.0.1"
    port: int = HTTP_PORT
    public_url: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    behind_proxy: bool = False
    allow_origins: tuple[str, ...] = ()
    rate_limit: int = HTTP_REQUESTS_PER_MINUTE


class Endpoint(NamedTuple):
    """Checked options: where to listen and the URLs clients know the server by."""
    host: str
    port: int
    base_url: str  # the issuer: metadata, /authorize, /token, /consent hang under it
    tls: tuple[str, str] | None
    behind_proxy: bool
    allow_origins: tuple[str, ...]
    rate_limit: int

    @property
    def resource_url(self) -> str:
        return self.base_url + MCP_PATH


# The plain-HTTP addresses an OAuth issuer may have (the SDK's rule; RFC 8414 wants https)
HTTP_ISSUER_HOSTS = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def check(options: HttpOptions, port: int | None = None) -> Endpoint:
    """The options validated (``port``: the one actually bound, for --port 0)."""
    o = options
    if not 0 <= o.port <= MAX_PORT:
        raise ConfigError(f"--port: {o.port} is not a port (0 to {MAX_PORT})")
    if not 1 <= o.rate_limit <= 1_000_000:
        raise ConfigError(f"--rate-limit: {o.rate_limit} is not a number of requests a "
                          "minute (1 to 1,000,000)")
    if bool(o.tls_cert) != bool(o.tls_key):
        raise ConfigError("--tls-cert and --tls-key go together")
    for flag, path in (("--tls-cert", o.tls_cert), ("--tls-key", o.tls_key)):
        if path and not os.access(path, os.R_OK):
            raise ConfigError(f"{flag}: {path} cannot be read")
    loopback = is_loopback(o.host)
    if not loopback and not (o.tls_cert or o.behind_proxy):
        raise ConfigError(f"--host {o.host} would serve your notes to the network in the "
                          "clear: give --tls-cert and --tls-key, or put a reverse proxy in "
                          "front and say --behind-proxy (docs/http.md)")
    if (o.behind_proxy or not loopback) and not o.public_url:
        raise ConfigError("--public-url: give the https:// address clients reach this "
                          "server at (the proxy's, or this machine's name)")
    port = o.port if port is None else port
    if o.public_url:
        parts = urlsplit(o.public_url)
        try:
            parts.port  # noqa: B018  (a port out of range or not a number raises)
        except ValueError:
            parts = parts._replace(scheme="")
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query \
                or parts.fragment or parts.path not in ("", "/") or "@" in parts.netloc:
            raise ConfigError(f"--public-url: {o.public_url!r} is not a base address such "
                              "as https://memory.example.org")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            raise ConfigError("--public-url: a server reached from other machines needs "
                              "https:// (OAuth 2.1 sends tokens only over TLS)")
        # the scheme's own port is left out, as clients leave it out of Host and URLs
        default = {"http": 80, "https": 443}[parts.scheme]
        netloc = parts.netloc.lower()
        if parts.port == default:
            netloc = netloc.rsplit(":", 1)[0]
        base = f"{parts.scheme}://{netloc}"
    else:
        name = f"[{o.host}]" if ":" in o.host else o.host
        base = f"{'https' if o.tls_cert else 'http'}://{name}:{port}"
    parts = urlsplit(base)
    if parts.scheme == "http" and parts.hostname not in HTTP_ISSUER_HOSTS:
        # the SDK's OAuth metadata takes no other plain-HTTP address, and would stop the
        # server after it said it was serving
        raise ConfigError(f"{'--public-url' if o.public_url else '--host'}: without TLS, "
                          f"OAuth lets a server be reached at localhost, 127.0.0.1 or ::1 "
                          f"only, not {parts.hostname}")
    for origin in o.allow_origins:
        if urlsplit(origin).scheme not in ("http", "https") or _origin(origin) != \
                origin.rstrip("/").lower():
            raise ConfigError(f"--allow-origin: {origin!r} is not an origin such as "
                              "https://app.example.org")
    return Endpoint(o.host, port, base,
                    (o.tls_cert, o.tls_key) if o.tls_cert else None, o.behind_proxy,
                    tuple(x.rstrip("/").lower() for x in o.allow_origins), o.rate_limit)


def bases(endpoint: Endpoint) -> dict[str, str]:
    """Each Host accepted, with the base URL it is answered as: the public address, and
    every loopback name when the server listens on loopback (a client that knows it as
    ``localhost`` is told ``localhost``)."""
    found = {urlsplit(endpoint.base_url).netloc.lower(): endpoint.base_url}
    if is_loopback(endpoint.host):
        for name in ("127.0.0.1", "localhost", "[::1]"):
            host = f"{name}:{endpoint.port}"
            found.setdefault(host, f"{'https' if endpoint.tls else 'http'}://{host}")
    return found


def policy(endpoint: Endpoint, namespace: str):
    """Hosts and origins accepted, the rates, and the namespace read by default."""
    from .guard import Policy, Rate
    accepted = bases(endpoint)
    origins = {_origin(endpoint.base_url), *endpoint.allow_origins,
               *(_origin(b) for b in accepted.values())}
    return Policy(bases=accepted, origins=frozenset(origins),
                  per_token=Rate(endpoint.rate_limit,
                                 max(1, endpoint.rate_limit * HTTP_BURST
                                     // HTTP_REQUESTS_PER_MINUTE)),
                  per_address=Rate(HTTP_ADDRESS_REQUESTS_PER_MINUTE, HTTP_ADDRESS_BURST),
                  max_form_bytes=HTTP_MAX_FORM_BYTES, mcp_path=MCP_PATH, namespace=namespace)


def build_app(config: Settings, endpoint: Endpoint, store, *, restart_on_change=False):
    """The whole ASGI application: the SDK's Streamable HTTP app and OAuth routes, the
    consent page, behind the guard (and CORS for the origins allowed, if any); and the
    guard, which ends the open streams when the server stops."""
    from mcp.server.auth.settings import (AuthSettings, ClientRegistrationOptions,
                                          RevocationOptions)
    from mcp.server.transport_security import TransportSecuritySettings

    from . import oauth_routes
    from .consent import Consent
    from .guard import Guard
    from .oauth import OwnerAuthorization
    from .server import build_server

    rules = policy(endpoint, config.namespace)
    owner = OwnerAuthorization(store, endpoint.base_url, config.namespace,
                               bases=rules.bases.values(), mcp_path=MCP_PATH)
    auth = AuthSettings(
        issuer_url=endpoint.base_url, resource_server_url=endpoint.resource_url,
        validate_token_resource=True, service_documentation_url=None,
        client_registration_options=ClientRegistrationOptions(
            enabled=True, default_scopes=[config.namespace]),
        revocation_options=RevocationOptions(enabled=True))
    server = build_server(config, warm=True, restart_on_change=restart_on_change,
                          auth=auth, provider=owner)
    consent = Consent(owner)
    server.custom_route("/consent", methods=["GET"])(consent.show)
    server.custom_route("/consent", methods=["POST"])(consent.answer)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=endpoint.host,
        max_request_body_size=HTTP_MAX_BODY_BYTES,
        session_idle_timeout=HTTP_SESSION_IDLE_SECONDS, max_sessions=HTTP_MAX_SESSIONS,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=sorted(rules.bases),
            allowed_origins=sorted(rules.origins)))
    oauth_routes.install(app, owner, auth, sorted(set(rules.bases.values())))
    guarded = Guard(app, store, rules, owner.known)
    if not endpoint.allow_origins:
        return guarded, guarded
    from starlette.middleware.cors import CORSMiddleware
    return CORSMiddleware(guarded, allow_origins=list(endpoint.allow_origins),
                          allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
                          allow_headers=["authorization", "content-type", "mcp-session-id",
                                         "mcp-protocol-version", "last-event-id"],
                          expose_headers=["mcp-session-id", "www-authenticate"]), guarded


def serve_worker(config: Settings, endpoint: Endpoint, fd: int) -> int:
    """The child: uvicorn on the inherited socket."""
    import uvicorn

    from ..access.store import AccessStore
    store = AccessStore.open(config.db)
    if not store.has_passphrase():
        log.warning("no passphrase is set: the consent page cannot approve anyone until "
                    "'memory http passphrase' sets one (tokens of 'memory tokens add' work)")
    app, guard = build_app(config, endpoint, store, restart_on_change=True)
    _exit_with_parent()
    tls = endpoint.tls or (None, None)
    # The socket as itself (family and protocol read from the descriptor): uvicorn's fd=
    # takes it for a Unix socket, and asyncio then leaves Nagle on, 40 ms an answer.
    sock = socket.socket(fileno=fd)
    class Server(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:
            guard.end_streams()  # else cancelled when the graceful shutdown runs out
            await super().shutdown(sockets)

    server = Server(uvicorn.Config(
        app, ssl_certfile=tls[0], ssl_keyfile=tls[1], log_level="warning",
        access_log=False, proxy_headers=endpoint.behind_proxy, server_header=False,
        forwarded_allow_ips="127.0.0.1,::1" if endpoint.behind_proxy else None,
        timeout_graceful_shutdown=5, lifespan="on", http=protocol()))
    server.run(sockets=[sock])
    return EXIT_OK


def _exit_with_parent(every: float = 1.0) -> None:
    """The child runs in its own session (a Ctrl-C reaches the supervisor only, which
    stops it once); it must not outlive a supervisor killed outright."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(EXIT_OK)
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, backlog=128)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def run(config: Settings, options: HttpOptions) -> int:
    """The supervisor (or, in the child, the server). The first Ctrl-C or SIGTERM stops
    the server gracefully; a second cuts it short."""
    if config.enable_writes:
        raise ConfigError("--enable-writes: nothing is ever writable over HTTP; serve "
                          "writes on stdio only")
    if WORKER_FD_ENV in os.environ:
        fd = int(os.environ[WORKER_FD_ENV])
        with socket.socket(fileno=os.dup(fd)) as inherited:
            port = inherited.getsockname()[1]
        endpoint = check(options, port=port)
        return serve_worker(config, endpoint, fd)
    check(options)  # refuse bad options before binding anything
    if config.replica:  # a reader's machine keeps only the access file, beside --db
        ensure_private_dir(Path(config.db).expanduser().parent)
    sock = _listen(options.host, options.port)
    endpoint = check(options, port=sock.getsockname()[1])
    local = ""
    if endpoint.behind_proxy:  # where the proxy must send what it receives
        name = f"[{options.host}]" if ":" in options.host else options.host
        local = f" (the proxy forwards to http://{name}:{endpoint.port})"
    print(f"memory: serving MCP at {endpoint.resource_url}{local}", file=sys.stderr,
          flush=True)
    env = dict(os.environ, MEMORY_DB=str(config.db), MEMORY_NAMESPACE=config.namespace,
               MEMORY_VECTOR_BACKEND=config.vector_backend, MEMORY_EMBEDDER=config.embedder,
               MEMORY_CONFIG=str(config.config_path), MEMORY_ENABLE_WRITES="0")
    env[WORKER_FD_ENV] = str(sock.fileno())
    env[OPTIONS_ENV] = json.dumps(options._asdict())
    stops = 0
    child: subprocess.Popen | None = None

    def stop(signum, frame) -> None:
        nonlocal stops
        stops += 1
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM if stops == 1 else signal.SIGKILL)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            child = subprocess.Popen([sys.executable, "-m", "personal_memory", "serve",
                                      "--http"], env=env, pass_fds=(sock.fileno(),),
                                     start_new_session=True)
            code = child.wait()
            if code != EXIT_RESTART or stops:
                return EXIT_OK if stops else code
            log.info("a fresh server takes over (the database was purged or replaced)")
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sock.close()


def options_from_environment() -> HttpOptions | None:
    """In the child: the options the supervisor was given."""
    raw = os.environ.get(OPTIONS_ENV)
    if raw is None:
        return None
    data = json.loads(raw)
    data["allow_origins"] = tuple(data.get("allow_origins") or ())
    return HttpOptions(**data)
