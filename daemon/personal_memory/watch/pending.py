"""The paths that changed and are not imported yet: a debouncer. Each path is imported
once it has been quiet for the settle window, and at least every ``MAX_DELAY_FACTOR``
windows while it keeps changing. Thread-safe: the observer's thread marks, the loop takes."""

from __future__ import annotations

import threading
import time

from ..notes.folders import Folder

# A path that keeps changing is still imported at least this often.
MAX_DELAY_FACTOR = 10


class PendingPaths:
    def __init__(self, settle_seconds: float):
        self.settle = settle_seconds
        self._lock = threading.Lock()
        self._pending: dict[tuple[Folder, str], tuple[float, float]] = {}

    def mark(self, folder: Folder, rel: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            first, _ = self._pending.get((folder, rel), (now, now))
            self._pending[(folder, rel)] = (first, now)

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()

    def next_deadline(self) -> float | None:
        """When the next path settles (monotonic seconds), or None when none waits."""
        with self._lock:
            if not self._pending:
                return None
            return min(min(last + self.settle, first + self.settle * MAX_DELAY_FACTOR)
                       for first, last in self._pending.values())

    def take_settled(self, now: float | None = None) -> dict[Folder, set[str]]:
        """The settled paths, by folder, removed from the queue."""
        now = time.monotonic() if now is None else now
        scopes: dict[Folder, set[str]] = {}
        with self._lock:
            for key, (first, last) in list(self._pending.items()):
                if now - last >= self.settle or now - first >= self.settle * MAX_DELAY_FACTOR:
                    folder, rel = key
                    scopes.setdefault(folder, set()).add(rel)
                    del self._pending[key]
        return scopes
