"""uvicorn's HTTP/1.1 protocol (h11) with deadlines for what a client sends: a request's
head within :data:`~personal_memory.limits.HTTP_HEAD_SECONDS` of the connection opening
(or of its last answer), its body within :data:`~personal_memory.limits.HTTP_BODY_SECONDS`
of the head; past either, the connection is closed. uvicorn closes only a connection left
idle after an answer, so a client that sends a byte now and then (slowloris) kept its
socket for good, and enough of them left no descriptor for anyone else. And at most
:func:`connections_allowed` connections are open at once, below the open-file limit
(raised to the hard one): a client reconnecting as fast as it is cut off never leaves the
server unable to accept (each refused accept logged a traceback, megabytes a second).
Both listening servers (``memory serve --http`` and ``memory ui``) use it; an answer
being streamed has no deadline."""

from __future__ import annotations

import logging
import time

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .limits import (HTTP_BODY_SECONDS, HTTP_HEAD_SECONDS, HTTP_MAX_CONNECTIONS,
                     HTTP_SPARE_FILES)

log = logging.getLogger("personal_memory.http")
MOST_OPEN_FILES = 10_240  # the most macOS takes (OPEN_MAX)


def open_files_allowed() -> int:
    """Raise this process's limit of open files to its hard limit (10,240 at most, what
    macOS takes) and return the limit it has: systemd and launchd start a service with
    1,024 or 256."""
    try:
        import resource
    except ImportError:  # not on this system: no limit to raise
        return HTTP_MAX_CONNECTIONS + HTTP_SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = MOST_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, MOST_OPEN_FILES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return MOST_OPEN_FILES if soft == resource.RLIM_INFINITY else soft


def connections_allowed() -> int:
    """How many connections a server keeps at once (raising the open-file limit first)."""
    return max(16, min(HTTP_MAX_CONNECTIONS, open_files_allowed() - HTTP_SPARE_FILES))


class SlowClientsClosed(H11Protocol):
    """H11Protocol whose client must send each request in time (the deadlines above),
    and of whose connections at most ``most`` are open at once (:func:`connections_allowed`,
    set by the server before it starts)."""

    head_seconds = HTTP_HEAD_SECONDS
    body_seconds = HTTP_BODY_SECONDS
    most = HTTP_MAX_CONNECTIONS
    _phase = None  # what the client is being waited for: h11.IDLE, h11.SEND_BODY or None
    _timer = None
    _said = [0.0]  # when too many connections were last logged (once a minute)

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.most:
            now = time.monotonic()
            if now - self._said[0] > 60:
                self._said[0] = now
                log.warning("%d connections are open, the most this server keeps: a new "
                            "one is closed as it comes (a client reconnecting in a loop?)",
                            self.most)
            transport.close()
            return
        self._watch()

    def handle_events(self) -> None:
        super().handle_events()
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._phase = None
        self._cancel()
        super().connection_lost(exc)

    def _watch(self) -> None:
        """(Re)start the deadline when what the client owes changes."""
        state = self.conn.their_state
        phase = state if state in (h11.IDLE, h11.SEND_BODY) else None
        if self.transport.is_closing() or phase is self._phase:
            return
        self._phase = phase
        self._cancel()
        if phase is not None:
            seconds = self.head_seconds if phase is h11.IDLE else self.body_seconds
            self._timer = self.loop.call_later(seconds, self._too_slow)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _too_slow(self) -> None:
        self._timer = None
        if self._phase is not None and not self.transport.is_closing():
            log.debug("closed a connection from %s: its request came too slowly", self.client)
            if self.cycle is not None and not self.cycle.response_complete:
                self.cycle.disconnected = True  # the app's receive() ends as a disconnect
                self.cycle.message_event.set()
            self.transport.close()


def protocol() -> type[SlowClientsClosed]:
    """The protocol a server starts with: the open-file limit raised, and the connections
    it keeps bounded below it."""
    return type("Bounded", (SlowClientsClosed,), {"most": connections_allowed()})
