"""The daemon's embedding worker: vectors for new revisions, made beside the import path,
never in its turn.

It runs on its own thread and connection at a lower CPU priority (the model's threads
inherit it), asks before every passage whether a change is waiting and then steps aside
until the import is done, and writes each batch in one short transaction, so an import
never waits for the model."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Callable

from ..errors import DatabaseBusy, DiskFull
from ..memory import MemoryStore
from ..render import counted
from . import notify

log = logging.getLogger("personal_memory.watch")

BATCH = 16  # passages per transaction: each is one short write
RETRY_SECONDS = 30  # after a busy or full database
NICE = 10  # the worker's CPU priority, below the import path's
STOP_WAIT_SECONDS = 1.0  # how long a stop waits for the passage in hand


class EmbeddingWorker:
    def __init__(self, store: MemoryStore, busy: Callable[[], bool],
                 status: Callable[[], str] = lambda: ""):
        self._store = store  # only reopened: a connection belongs to one thread
        self._busy = busy
        self._status = status  # the daemon's last status line: the progress joins it
        self.progress = ""  # "embedding: N memories to go" while there is a backlog
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._below: int | None = None
        self.thread = threading.Thread(target=self._run, name="embedding", daemon=True)
        self.embedded = self.reused = 0
        self.seconds = 0.0

    def start(self) -> None:
        self.thread.start()

    def nudge(self) -> None:
        """New revisions were written (or a rescan ran): look for work from the top."""
        self._below = None
        self._wake.set()

    def stop(self, timeout: float = STOP_WAIT_SECONDS) -> None:
        """End after the passage in hand, waiting for it at most ``timeout``: a long
        passage can hold the model for seconds, and a stop must not wait for it (its
        vector is made again at the next start; the thread's write, if it comes, is one
        transaction)."""
        self._stopping.set()
        self._wake.set()
        if self.thread.is_alive():
            self.thread.join(timeout)
            if self.thread.is_alive():
                log.info("stopping without the passage the model is reading (it is "
                         "embedded at the next start)")

    def _cancel(self) -> bool:
        return self._stopping.is_set() or self._busy()

    def _run(self) -> None:
        if sys.platform.startswith("linux"):
            try:  # this thread only (Linux threads are tasks); the model's threads inherit it
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
            except OSError:
                pass
        try:
            store = self._store.reopen()
        except Exception as exc:
            log.error("the embedding worker cannot open the database: %s", exc)
            return
        with store:
            while not self._stopping.is_set():
                self._wake.wait(RETRY_SECONDS)
                self._wake.clear()
                try:
                    self._work(store)
                except Exception as exc:  # noqa: BLE001 (said, then tried again)
                    # A fault here (an I/O error, the model's) must not end the worker
                    # while the daemon imports on: new notes would never get a vector.
                    log.exception("embedding stopped: %s; retrying in %d s", exc,
                                  RETRY_SECONDS)
                    self._below = None
                    self.progress = f"embedding stopped: {exc}; retrying"

    def _work(self, store: MemoryStore) -> None:
        """Embed until nothing is left, stepping aside while a change is waiting."""
        last_status = 0.0
        while not self._stopping.is_set():
            if self._busy():
                time.sleep(0.02)
                continue
            t0 = time.monotonic()
            try:
                run = store.embed_pending(batch_size=BATCH, below=self._below,
                                          cancel=self._cancel)
            except (DatabaseBusy, DiskFull) as exc:
                log.warning("%s while embedding; retrying in %d s", exc, RETRY_SECONDS)
                self._below = None
                return
            self.embedded += run.embedded
            self.reused += run.reused
            self.seconds += time.monotonic() - t0
            if run.interrupted:
                self._below = run.below
                now = time.monotonic()
                if now - last_status > 30 and not self._stopping.is_set():
                    last_status = now
                    self.progress = f"embedding: {store.pending_vectors()} memories to go"
                    base = self._status()
                    notify.notify(f"STATUS={base}; {self.progress}" if base else
                                  f"STATUS={self.progress}")
                continue
            self._below = None
            self.progress = ""
            if self.embedded:
                log.info("embedded %s in %.1f s (%.1f per second, %d reused); all "
                         "are searchable by meaning",
                         counted(self.embedded, "memory", "memories"), self.seconds,
                         self.embedded / max(self.seconds, 1e-9), self.reused)
                self.embedded = self.reused = 0
                self.seconds = 0.0
            return
