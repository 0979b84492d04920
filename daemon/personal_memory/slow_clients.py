"""uvicorn's HTTP/1.1 protocol (h11) with deadlines for what a client sends: a request's
head within :data:`~personal_memory.limits.HTTP_HEAD_SECONDS` of the connection opening
(or of its last answer), its body within :data:`~personal_memory.limits.HTTP_BODY_SECONDS`
of the head; past either, the connection is closed. uvicorn closes only a connection left
idle after an answer, so a client that sends a byte now and then (slowloris) kept its
socket for good, and enough of them left no descriptor for anyone else. Both listening
servers (``memory serve --http`` and ``memory ui``) use it; an answer being streamed has
no deadline."""

from __future__ import annotations

import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .limits import HTTP_BODY_SECONDS, HTTP_HEAD_SECONDS

log = logging.getLogger("personal_memory.http")


class SlowClientsClosed(H11Protocol):
    """H11Protocol whose client must send each request in time (the deadlines above)."""

    head_seconds = HTTP_HEAD_SECONDS
    body_seconds = HTTP_BODY_SECONDS
    _phase = None  # what the client is being waited for: h11.IDLE, h11.SEND_BODY or None
    _timer = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
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
