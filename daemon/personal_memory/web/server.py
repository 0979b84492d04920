"""``memory ui``: the page on 127.0.0.1, a free port unless given, its address (with this
run's secret) the first line of standard output; the default browser opened unless told
not to; Ctrl-C or SIGTERM ends it with exit code 0."""

from __future__ import annotations

import secrets
import signal
import socket
import webbrowser

from ..errors import InvalidArgument
from ..limits import EXIT_OK
from ..readers import ReaderPool
from ..settings import Settings
from ..slow_clients import protocol
from .app import build_app


def listening(port: int | None) -> socket.socket:
    """A socket already listening on loopback, so the printed address answers at once
    (and a free port cannot be taken between choosing it and serving on it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # the connections of a page stopped a moment ago (TIME_WAIT) do not hold its port
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port or 0))
    except OSError as exc:
        sock.close()
        raise InvalidArgument(f"cannot serve on 127.0.0.1:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


def run(config: Settings, port: int | None = None, open_browser: bool = True) -> int:
    pool = ReaderPool(config.db, vector_backend=config.vector_backend,
                      embedder=config.embedder)  # refuses a missing database first
    try:
        return serve(pool, config.namespace, port, open_browser)
    finally:
        pool.close()


def serve(pool: ReaderPool, namespace: str, port: int | None = None,
          open_browser: bool = False) -> int:
    import uvicorn
    sock = listening(port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    url = f"http://127.0.0.1:{port}/?token={token}"
    server = uvicorn.Server(uvicorn.Config(build_app(pool, namespace, token, port),
                                           log_level="warning", access_log=False,
                                           lifespan="off", http=protocol()))

    # uvicorn re-raises the signal it stopped on once it has restored the handlers it
    # found; these make that a clean exit (and cover a signal before it starts)
    def stop(signum, frame):
        server.should_exit = True
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    pool.warm_in_background()  # the index and the model load while the browser opens
    print(url, flush=True)
    if open_browser:
        webbrowser.open(url)
    try:
        server.run(sockets=[sock])  # a first signal stops it gracefully, a second at once
    finally:
        sock.close()
    return EXIT_OK
