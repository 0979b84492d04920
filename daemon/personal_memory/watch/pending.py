"""The paths that changed and are not imported yet: a debouncer. Each path is imported
once it has been quiet for the settle window, and at least every ``MAX_DELAY_FACTOR``
windows while it keeps changing. A note file found empty when it settles waits longer
(``EMPTY_SETTLE_SECONDS`` of quiet): editors that truncate a file and write it a moment
later would otherwise have the note recorded as deleted, then restored. Thread-safe: the
observer's thread marks, the loop takes."""

from __future__ import annotations

import os
import stat
import threading
import time

from ..notes.folders import Folder

# A path that keeps changing is still imported at least this often.
MAX_DELAY_FACTOR = 10
# How long an emptied note file must stay empty (and quiet) before it is imported.
EMPTY_SETTLE_SECONDS = 5.0


class PendingPaths:
    def __init__(self, settle_seconds: float, empty_settle_seconds: float = EMPTY_SETTLE_SECONDS):
        self.settle = settle_seconds
        self.empty_settle = max(empty_settle_seconds, settle_seconds)
        self._lock = threading.Lock()
        self._pending: dict[tuple[Folder, str], tuple[float, float]] = {}
        self._held: dict[tuple[Folder, str], float] = {}  # empty files: when they settle

    def mark(self, folder: Folder, rel: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            first, _ = self._pending.get((folder, rel), (now, now))
            self._pending[(folder, rel)] = (first, now)
            self._held.pop((folder, rel), None)  # changed again: settle afresh

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def clear_but_empty(self) -> dict[Folder, set[str]]:
        """Forget every waiting path but those found empty now, and return them: a full
        rescan covers the others, while an emptied file keeps waiting for its long settle
        (an editor that truncates and writes a second later) and the rescan leaves it."""
        with self._lock:
            keys = list(self._pending)
        empty = {key for key in keys if _empty_file(*key)}  # sizes asked outside the lock
        kept: dict[Folder, set[str]] = {}
        with self._lock:
            for key in list(self._pending):
                if key in empty:
                    kept.setdefault(key[0], set()).add(key[1])
                else:
                    del self._pending[key]
                    self._held.pop(key, None)
        return kept

    def next_deadline(self) -> float | None:
        """When the next path settles (monotonic seconds), or None when none waits."""
        with self._lock:
            if not self._pending:
                return None
            return min(self._held[key] if key in self._held else
                       min(last + self.settle, first + self.settle * MAX_DELAY_FACTOR)
                       for key, (first, last) in self._pending.items())

    def take_settled(self, now: float | None = None) -> dict[Folder, set[str]]:
        """The settled paths, by folder, removed from the queue."""
        now = time.monotonic() if now is None else now
        with self._lock:
            due = [(key, last) for key, (first, last) in self._pending.items()
                   if (now >= self._held[key] if key in self._held else
                       now - last >= self.settle or
                       now - first >= self.settle * MAX_DELAY_FACTOR)]
        # The file's size is asked outside the lock: the observer's thread must not wait.
        empty = {key for key, _ in due if key not in self._held and _empty_file(*key)}
        scopes: dict[Folder, set[str]] = {}
        with self._lock:
            for key, last in due:
                if self._pending.get(key, (None, None))[1] != last:
                    continue  # marked again meanwhile: it settles afresh
                if key in empty:
                    self._held[key] = last + self.empty_settle
                    continue
                folder, rel = key
                scopes.setdefault(folder, set()).add(rel)
                del self._pending[key]
                self._held.pop(key, None)
        return scopes


def _empty_file(folder: Folder, rel: str) -> bool:
    """Whether the path is an existing regular file of no bytes."""
    if not rel:
        return False
    try:
        st = os.stat(os.path.join(folder.root, rel))
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0
