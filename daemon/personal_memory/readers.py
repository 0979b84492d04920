"""Read-only stores for servers with a thread per request (the page; any multi-threaded
reader): one connection per thread, one shared in-memory search index, all replaced when
the file is purged or swapped."""

from __future__ import annotations

import logging
import os
import threading
import time

from .embedding import models as embedders
from .errors import PersonalMemoryError
from .memory import MemoryStore
from .store import Database

log = logging.getLogger(__name__)


class ReaderPool:
    """Read-only stores for a server's threads: one connection per thread (a store belongs
    to one thread), one in-memory search index shared by all of them. When the file is
    purged or replaced (its fingerprint moves), every thread gets a fresh store and the
    index starts afresh, so no cache keeps what a purge erased or rows of another file."""

    CHECK_EVERY = 0.5  # seconds between fingerprint checks

    def __init__(self, path: str | os.PathLike, *, vector_backend: str = "auto",
                 embedder: "str | embedders.Embedder" = "auto", read_only: bool = True):
        self.path, self.vector_backend, self.read_only = path, vector_backend, read_only
        self._local = threading.local()
        self._lock = threading.Lock()
        self.first = MemoryStore.open(path, read_only=read_only, vector_backend=vector_backend,
                                      create=False, embedder=embedder)
        self._model = self.first.model
        self._note = self.first.embedder_note
        self._epoch = 0
        self._fingerprint = self.first.fingerprint()
        self._checked = time.monotonic()
        self._missing: PersonalMemoryError | None = None  # why the file cannot be opened

    def warm_in_background(self) -> threading.Thread:
        """Build the shared search index and load the model on a thread of its own, so the
        first search does not build them (a search meanwhile builds what it needs)."""
        def work() -> None:
            try:
                store = self.store()
                store.warm()
            except PersonalMemoryError as exc:  # searches still work: they build it
                log.warning("warming the search index failed: %s", exc)
            finally:
                self._release()
        thread = threading.Thread(target=work, name="warm-search-index", daemon=True)
        thread.start()
        return thread

    def store(self) -> MemoryStore:
        self._check()
        local = self._local
        if getattr(local, "store", None) is None or local.epoch != self._epoch:
            if getattr(local, "store", None) is not None and local.store is not self.first:
                local.store.close()
            store = MemoryStore(Database.open(self.path, read_only=self.read_only,
                                              vector_backend=self.vector_backend,
                                              create=False), self._model, self._note)
            store.share_search_index(self.first)
            local.store, local.epoch = store, self._epoch
        return local.store

    def _check(self) -> None:
        """Replace the stores when the file was purged or replaced; raise the file's error
        (deleted, unreadable) on every call until it can be opened again."""
        now = time.monotonic()
        if self._missing is None and now - self._checked < self.CHECK_EVERY:
            return
        with self._lock:
            if self._missing is None and now - self._checked < self.CHECK_EVERY:
                return
            self._checked = now
            try:
                with MemoryStore.open(self.path, read_only=True, create=False,
                                      embedder="none") as fresh:
                    seen = fresh.fingerprint()
            except PersonalMemoryError as exc:
                self._missing = exc
                raise
            self._missing = None
            if seen != self._fingerprint:
                self._fingerprint = seen
                forget = getattr(self._model, "forget_queries", None)
                if forget is not None:  # questions may hold what a purge erased
                    forget()
                self.first.close()
                self.first = MemoryStore(Database.open(self.path, read_only=self.read_only,
                                                       vector_backend=self.vector_backend,
                                                       create=False), self._model, self._note)
                self._epoch += 1

    def _release(self) -> None:
        """Close this thread's own connection (a thread that is done with the pool)."""
        store = getattr(self._local, "store", None)
        if store is not None and store is not self.first:
            store.close()
        self._local.store = None

    def close(self) -> None:
        self.first.close()
