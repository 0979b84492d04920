"""The sync daemon: watch folders and keep the store current.

watchdog's events are hints, never truth: they can be dropped, reordered or coalesced.
Each event only marks a path dirty; once a path has been quiet for the settle window the
daemon reconciles that path (or folder) against the disk, exactly as ``memory sync`` would.
A full reconcile runs at start, after an inotify overflow, after the observer is restarted
and on a periodic safety-net rescan.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from . import notify
from .errors import DatabaseBusy, DiskFull, LockedError, RootUnavailable, SyncError
from .folders import Folder, SyncReport
from .markdown import is_note_name, is_watched_dir
from .memory import MemoryStore
from .paths import ensure_private_dir, lock_path
from .limits import HEARTBEAT_SECONDS
from .times import now_micros

log = logging.getLogger("personal_memory.watch")

EXIT_LOCKED = 75
EMBED_BATCH = 4  # memories per embedding step: at most about a second of work (long sections)
EMBED_RETRY_SECONDS = 30
# A path that keeps changing is still imported at least this often.
MAX_DELAY_FACTOR = 10
# After a busy or full database, retry after 2 s, doubling up to this.
MAX_BACKOFF_SECONDS = 60.0
ROOT_RETRY_SECONDS = 2.0
INOTIFY_WATCHES = Path("/proc/sys/fs/inotify/max_user_watches")
# Where watchdog reports a lost-events overflow (it only logs it).
OBSERVER_LOGGERS = ("watchdog.observers.inotify", "watchdog.observers.inotify_c",
                    "watchdog.observers.inotify_buffer", "fsevents")


class DaemonLock:
    """One daemon per database: an exclusive ``fcntl`` lock on a file beside it."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        ensure_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise LockedError(f"another 'memory watch' (pid {holder}) already uses this "
                              f"database (lock {self.path})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "DaemonLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class _OverflowWatch(logging.Handler):
    """watchdog only logs an inotify queue overflow; turn that log line into a rescan."""

    def __init__(self, on_overflow: Callable[[], None]):
        super().__init__(logging.WARNING)
        self.on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.on_overflow()


def _watchdog_observer():
    from watchdog.observers import Observer
    return Observer()


class Watcher:
    """Owns the long-running loop; the ``memory watch`` command only wires it."""

    def __init__(self, store: MemoryStore, folders: list[Folder], *, settle_ms: int = 300,
                 rescan_interval: float = 600.0, allow_mass_delete: bool = False,
                 observer_factory: Callable[[], object] = _watchdog_observer):
        self.store = store
        self.folders = folders
        self.settle = settle_ms / 1000
        self.rescan_interval = rescan_interval
        self.allow_mass_delete = allow_mass_delete
        self.observer_factory = observer_factory
        self.stop_event = threading.Event()
        self._ping_every = notify.watchdog_interval()
        self._next_ping: float | None = time.monotonic() if self._ping_every else None
        self._next_beat = time.monotonic() + HEARTBEAT_SECONDS
        self._pending: dict[tuple[Folder, str], tuple[float, float]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._rescan_reason: str | None = None
        self._observer = None
        self._lost: set[Folder] = set()
        self._started_at = now_micros()
        self._backoff = 0.0
        self._last_sync: tuple[str, str, SyncReport] | None = None
        self._retry_at: float | None = None
        self._retry_reason = ""
        # Vectors are made after the writes commit, a batch at a time between events.
        self._embed_more = store.embedder is not None
        self._embed_below: int | None = None  # the cursor: ids below it are still to check
        self._embed_retry_at: float | None = None
        self._next_embed_status = 0.0
        self._embedded = 0
        self._embed_seconds = 0.0
        # The database's own files never count as note changes (it may live in a notes
        # folder), and a database deleted or replaced under us is detected by its inode.
        db = os.path.abspath(store.path)
        self._own_files = {db + suffix for suffix in ("", "-wal", "-shm", "-journal", ".lock")}
        self._db_identity = _identity(db)
        self._overflow = _OverflowWatch(lambda: self.request_rescan("inotify queue overflow"))

    # -- called from watchdog's thread ---------------------------------------------------------

    def mark(self, path: str) -> None:
        """Note that something happened at ``path``; it is imported once quiet."""
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        now = time.monotonic()
        for folder in self.folders:
            root = str(folder.root)
            if path == root or path.startswith(root + os.sep):
                rel = os.path.relpath(path, root) if path != root else ""
                rel = "" if rel == "." else rel.replace(os.sep, "/")
                with self._lock:
                    first, _ = self._pending.get((folder, rel), (now, now))
                    self._pending[(folder, rel)] = (first, now)
                self._wake.set()

    def relevant(self, path: str | bytes, is_directory: bool) -> bool:
        """Whether an event at ``path`` can change what is indexed: a folder, or a file
        with a note's name, and never the database's own files."""
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if os.path.abspath(path) in self._own_files:
            return False
        return is_directory or is_note_name(os.path.basename(path))

    def request_rescan(self, reason: str) -> None:
        with self._lock:
            self._rescan_reason = self._rescan_reason or reason
        self._wake.set()

    def stop(self) -> None:
        self.stop_event.set()
        self._wake.set()

    # -- observer --------------------------------------------------------------------------------

    def _start_observer(self) -> None:
        from watchdog.events import FileSystemEventHandler

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                if event.is_directory and event.event_type == "modified":
                    return  # its entries' own events say what changed
                for path in (event.src_path, getattr(event, "dest_path", "")):
                    if path and watcher.relevant(path, event.is_directory):
                        watcher.mark(path)

        class RootHandler(FileSystemEventHandler):
            """Watches a root's parent: inotify says nothing when the root itself moves."""

            def __init__(self, root: str):
                self.root = root

            def on_any_event(self, event) -> None:
                if self.root in (event.src_path, getattr(event, "dest_path", "")):
                    watcher.mark(self.root)

        self._stop_observer()
        observer = self.observer_factory()
        handler = Handler()
        for folder in self.folders:
            try:
                if folder.root.parent.is_dir() and folder.root.parent != folder.root:
                    observer.schedule(RootHandler(str(folder.root)), str(folder.root.parent),
                                      recursive=False)
                if folder not in self._lost and folder.root.is_dir():
                    observer.schedule(handler, str(folder.root), recursive=True)
            except OSError as exc:
                self._watch_failed(folder, exc)
        try:
            observer.start()
        except OSError as exc:
            self._watch_failed(None, exc)
        self._observer = observer

    def _watch_failed(self, folder: Folder | None, exc: OSError) -> None:
        where = folder.root if folder else "the notes folders"
        if exc.errno == errno.ENOSPC:  # from inotify: too few watches
            limit = _read_int(INOTIFY_WATCHES)
            log.error("cannot watch %s: the inotify watch limit (fs.inotify.max_user_watches"
                      "=%s) is reached; raise it with 'sysctl fs.inotify.max_user_watches="
                      "524288'. Falling back to a rescan every 60 s.", where, limit)
            self.rescan_interval = min(self.rescan_interval or 60.0, 60.0)
        else:
            raise exc

    def _stop_observer(self) -> None:
        if self._observer is not None:
            try:
                self._observer.stop()
                self._observer.join(timeout=5)
            except Exception as exc:  # a dead observer may fail to stop; we replace it anyway
                log.warning("stopping the file observer failed: %s", exc)
            self._observer = None

    def _observer_healthy(self) -> bool:
        observer = self._observer
        if observer is None or not observer.is_alive():
            return False
        # An emitter thread dies when its folder is deleted or after a handler error.
        return all(e.is_alive() for e in getattr(observer, "emitters", ()))

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> int:
        """Watch until :meth:`stop`; returns the process exit code."""
        for name in OBSERVER_LOGGERS:
            logging.getLogger(name).addHandler(self._overflow)
        self._check_watch_limit()
        try:
            self._heartbeat("starting")
            self._start_observer()
            # Ready once watching: a long first sync is progress, not a slow start.
            notify.notify("READY=1\nSTATUS=initial sync")
            self._full("startup")
            notify.notify("STATUS=" + self.status_line())  # also when the startup sync failed
            self._heartbeat("watching")
            return self._loop()
        finally:
            notify.notify("STOPPING=1")
            self._stop_observer()
            for name in OBSERVER_LOGGERS:
                logging.getLogger(name).removeHandler(self._overflow)
            try:
                self._heartbeat("stopped")
            except Exception as exc:
                log.warning("could not record the stop: %s", exc)

    def _loop(self) -> int:
        now = time.monotonic()
        next_rescan = now + self.rescan_interval if self.rescan_interval > 0 else None
        next_root_check = None
        while not self.stop_event.is_set():
            now = time.monotonic()
            if self._database_replaced():
                log.error("the database %s was deleted or replaced while the daemon ran; "
                          "exiting so that the service restarts on the current file",
                          self.store.path)
                return 1
            if self._retry_at is not None and now >= self._retry_at:
                self._retry_at = None
                self.request_rescan(self._retry_reason)
            if not self._observer_healthy():
                log.warning("a file watch stopped; checking the folders and restarting it")
                self._retry_or_lose(self.folders)
                self._start_observer()
                if not self._observer_healthy():
                    log.error("the file observer cannot be restarted; exiting")
                    return 1
                self.request_rescan("observer restarted")
            if self._lost and (next_root_check is None or now >= next_root_check):
                self._retry_lost_roots()
                next_root_check = now + ROOT_RETRY_SECONDS
            with self._lock:
                reason, self._rescan_reason = self._rescan_reason, None
            if reason:
                self._full(reason)
            elif next_rescan is not None and now >= next_rescan:
                self._full("periodic rescan")
            if next_rescan is not None and (reason or now >= next_rescan):
                next_rescan = time.monotonic() + self.rescan_interval
            self._flush_settled()
            self._progress(0, 0)
            if self._next_settle() is None:  # nothing waiting to be imported
                self._embed_step()
            deadlines = [self._next_beat, self._next_ping, next_rescan, self._next_settle(),
                         self._retry_at, self._embed_retry_at,
                         time.monotonic() if self._embed_more else None,
                         next_root_check if self._lost else None]
            timeout = max(0.0, min(d for d in deadlines if d is not None) - time.monotonic())
            self._wake.wait(timeout)
            self._wake.clear()
        return 0

    def _progress(self, done: int, total: int) -> None:
        """Keep the heartbeat and systemd's watchdog fed, also between the batches of a long
        sync. The watchdog is fed only while the file watches are alive."""
        now = time.monotonic()
        if now >= self._next_beat:
            self._heartbeat("waiting for folder" if self._lost else "watching")
            self._next_beat = now + HEARTBEAT_SECONDS
        if self._next_ping is not None and now >= self._next_ping:
            if self._observer_healthy():
                notify.notify("WATCHDOG=1")
            self._next_ping = now + self._ping_every
        if total:
            notify.notify(f"STATUS=syncing: {done} of {total} changed files")

    def _embed_step(self) -> None:
        """Embed one batch of memories that have no vector yet. Imports come first: the
        loop calls this only when no change is waiting, and a batch takes a second or two."""
        now = time.monotonic()
        if self._embed_retry_at is not None:
            if now < self._embed_retry_at:
                return
            self._embed_retry_at, self._embed_more = None, True
        if not self._embed_more or self.stop_event.is_set():
            return
        try:
            done = self.store.embed_pending(max_rows=EMBED_BATCH, batch_size=EMBED_BATCH,
                                            below=self._embed_below)
        except (DatabaseBusy, DiskFull) as exc:
            log.warning("%s while embedding; retrying in %d s", exc, EMBED_RETRY_SECONDS)
            self._embed_more, self._embed_retry_at = False, now + EMBED_RETRY_SECONDS
            self._embed_below = None
            return
        self._embedded += done["embedded"]
        self._embed_seconds += time.monotonic() - now
        self._embed_below = done["below"]
        # A full batch: more may wait below the cursor. A short one: the scan reached the
        # oldest revision, and what a later sync writes starts a new scan from the top.
        self._embed_more = done["embedded"] == EMBED_BATCH
        if self._embed_more:
            if now >= self._next_embed_status:
                self._next_embed_status = now + 30
                notify.notify(f"STATUS=embedding: {self.store.pending_vectors()} memories "
                              "to go")
            return
        self._embed_below = None
        if self._embedded:
            log.info("embedded %d memories in %.1f s (%.1f per second); all are searchable "
                     "by meaning", self._embedded, self._embed_seconds,
                     self._embedded / max(self._embed_seconds, 1e-9))
            self._embedded, self._embed_seconds = 0, 0.0
            notify.notify("STATUS=" + self.status_line())

    def _next_settle(self) -> float | None:
        with self._lock:
            if not self._pending:
                return None
            return min(min(last + self.settle, first + self.settle * MAX_DELAY_FACTOR)
                       for first, last in self._pending.values())

    def _flush_settled(self) -> None:
        now = time.monotonic()
        scopes: dict[Folder, set[str]] = {}
        with self._lock:
            for key, (first, last) in list(self._pending.items()):
                if now - last >= self.settle or now - first >= self.settle * MAX_DELAY_FACTOR:
                    folder, rel = key
                    scopes.setdefault(folder, set()).add(rel)
                    del self._pending[key]
        if any("" in s for s in scopes.values()):  # something happened to a root itself
            self._retry_or_lose([f for f, s in scopes.items() if "" in s])
        scopes = {f: s for f, s in scopes.items() if f not in self._lost}
        if not scopes:
            return
        self._sync(lambda: self.store.sync_paths(
            scopes, kind="event", allow_mass_delete=self.allow_mass_delete,
            progress=self._progress, cancel=self.stop_event.is_set), "change")

    def _full(self, reason: str) -> None:
        live = [f for f in self.folders if f not in self._lost]
        with self._lock:  # everything pending is covered by the full reconcile
            self._pending.clear()
        if live:
            self._sync(lambda: self.store.sync(
                live, kind=reason.replace(" ", "-"), allow_mass_delete=self.allow_mass_delete,
                progress=self._progress, cancel=self.stop_event.is_set), reason)

    def _sync(self, action: Callable[[], SyncReport], what: str) -> None:
        t0 = time.monotonic()
        try:
            report = action()
        except RootUnavailable as exc:
            log.error("%s", exc)
            self._retry_or_lose(self.folders)
            return
        except SyncError as exc:
            log.error("%s", exc)
            return
        except (DatabaseBusy, DiskFull) as exc:
            # Nothing was written; a full rescan retries everything, after a back-off.
            self._backoff = min(MAX_BACKOFF_SECONDS, self._backoff * 2 or 2.0)
            self._retry_at = time.monotonic() + self._backoff
            self._retry_reason = ("database was busy" if isinstance(exc, DatabaseBusy)
                                  else "disk was full")
            waiting = ("waiting for the database lock (another process is writing)"
                       if isinstance(exc, DatabaseBusy) else "waiting for disk space")
            log.warning("%s during %s; %s, retrying in %.0f s", exc, what, waiting,
                        self._backoff)
            notify.notify(f"STATUS={waiting}")
            return
        self._backoff = 0.0
        if report.changed or what != "change":  # new revisions, or a rescan: look again
            self._embed_more = self.store.embedder is not None
            self._embed_below = None
        if report.changed or report.skipped or what != "change":
            skipped = "".join(f"; skipped {s['path']}: {s['reason']}"
                              for s in report.skipped[:20])
            more = len(report.skipped) - 20
            log.info("%s: %s (%d transactions, %.0f ms)%s%s", what, report.summary(),
                     report.transactions, (time.monotonic() - t0) * 1000, skipped,
                     f"; and {more} more" if more > 0 else "")
        self._last_sync = (time.strftime("%H:%M:%S"), what, report)
        notify.notify("STATUS=" + self.status_line())

    def status_line(self) -> str:
        """What systemd shows for the service: folders, notes indexed, the last sync and
        what it changed, and problems to look at."""
        watched = [str(f.root) for f in self.folders if f not in self._lost]
        parts = [f"watching {', '.join(watched) or 'nothing'}"]
        if self._lost:
            parts.append(f"waiting for {', '.join(str(f.root) for f in self._lost)}")
        try:
            status = self.store.sync_status()
            parts.append(f"{status['files_indexed']} notes indexed")
            if status["problems"]:
                parts.append(f"{len(status['problems'])} problems (memory status)")
        except (DatabaseBusy, DiskFull):
            pass
        if self._last_sync is not None:
            at, what, report = self._last_sync
            parts.append(f"last {what} at {at}: {report.chunks_added} added, "
                         f"{report.chunks_changed} changed, {report.chunks_tombstoned} "
                         "tombstoned")
        return "; ".join(parts)

    def _retry_or_lose(self, folders: list[Folder]) -> None:
        for folder in folders:
            try:
                self.store.check_folder(folder)
            except RootUnavailable as exc:
                if folder not in self._lost:
                    log.error("%s; waiting for it to come back", exc)
                    self._lost.add(folder)
                    self._heartbeat("waiting for folder")
        self._wake.set()

    def _retry_lost_roots(self) -> None:
        back = []
        for folder in list(self._lost):
            try:
                self.store.check_folder(folder)
            except RootUnavailable:
                continue
            back.append(folder)
        if back:
            for folder in back:
                self._lost.discard(folder)
                log.info("%s is back; watching it again", folder.root)
            self._start_observer()  # the old inotify watches died with the old folder
            self.request_rescan("folder returned")
            self._heartbeat("watching")

    def _heartbeat(self, state: str) -> None:
        try:
            self.store.record_daemon(state=state, started_at=self._started_at,
                                     roots=[str(f.root) for f in self.folders])
        except (DatabaseBusy, DiskFull) as exc:  # the next beat tries again
            log.warning("could not record the heartbeat: %s", exc)

    def _database_replaced(self) -> bool:
        return _identity(os.path.abspath(self.store.path)) != self._db_identity

    def _check_watch_limit(self) -> None:
        if not sys.platform.startswith("linux"):
            return
        try:
            limit = int(INOTIFY_WATCHES.read_text().strip())
        except (OSError, ValueError) as exc:
            # A system unit's sandbox (ProcSubset=pid) hides /proc/sys: say so, don't guess.
            log.warning("cannot read %s (%s), so the inotify watch limit is not checked; if "
                        "changes in deep folders go unnoticed, raise it with 'sysctl "
                        "fs.inotify.max_user_watches=524288'", INOTIFY_WATCHES,
                        getattr(exc, "strerror", None) or exc)
            return
        dirs = 0
        for folder in self.folders:
            for _, subdirs, _ in os.walk(folder.root):
                subdirs[:] = [d for d in subdirs if is_watched_dir(d)]
                dirs += 1
        if dirs > limit * 0.9:
            log.warning("the notes need %d inotify watches but fs.inotify.max_user_watches is "
                        "%d; raise it with 'sysctl fs.inotify.max_user_watches=524288'",
                        dirs, limit)
            self.rescan_interval = min(self.rescan_interval or 60.0, 60.0)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def run_daemon(db_path: Path, folders: list[Folder], *, settle_ms: int, rescan_interval: float,
               allow_mass_delete: bool, vector_backend: str = "auto",
               embedder: str = "auto", install_signals: bool = True) -> int:
    """Open the database, lock it and watch until a signal. Returns the exit code."""
    # Open (and so validate) the database first: a foreign file gets no stray lock file.
    with MemoryStore.open(db_path, vector_backend=vector_backend, embedder=embedder) as store, \
            DaemonLock(lock_path(db_path)):  # LockedError: the CLI exits 75
        watcher = Watcher(store, folders, settle_ms=settle_ms, rescan_interval=rescan_interval,
                          allow_mass_delete=allow_mass_delete)
        if install_signals:
            _install_signals(watcher)
        log.info("watching %s into %s (settle %d ms, %s)",
                 ", ".join(f"{f.root} as {f.namespace}/{f.collection}" for f in folders),
                 db_path, settle_ms,
                 f"rescan every {rescan_interval:g} s" if rescan_interval else "rescans off")
        log.info("search: %s", store.embedder_note)
        code = watcher.run()
        log.info("stopped")
        return code


def _install_signals(watcher: Watcher) -> None:
    import signal

    def handle(signum, frame):
        if watcher.stop_event.is_set():
            log.warning("second signal: stopping now")
            os._exit(1)  # SQLite rolls back the open transaction; nothing half-written
        log.info("signal %d: finishing the current transaction, then stopping", signum)
        watcher.stop()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
