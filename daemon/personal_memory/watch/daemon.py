"""The sync daemon: watch folders and keep the store current.

Each event only marks a path (``pending``); once a path has been quiet for the settle
window the daemon reconciles that path (or folder) against the disk, exactly as ``memory
sync`` would. A full reconcile runs at start, after an inotify overflow, after the
observer is restarted and on a periodic safety-net rescan. Vectors are made by a separate
worker (``embedding``) that steps aside whenever a change is waiting.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from ..errors import (ClockImplausible, DatabaseBusy, DiskFull, NotFound,
                      PersonalMemoryError, RootUnavailable, SyncError)
from ..limits import EXIT_OK, EXIT_PROBLEM, HEARTBEAT_SECONDS
from ..memory import MemoryStore
from ..notes.folders import Folder
from ..notes.markdown import is_watched_dir
from ..records import SyncReport
from ..times import now_micros
from . import notify
from .embedding import EmbeddingWorker
from .lock import DaemonLock
from .mounts import MountWatch, mount_of, mounts
from .observer import (INOTIFY_WATCHES, OBSERVER_LOGGERS, EventFilter, ObserverLifecycle,
                       OverflowWatch, watchdog_observer)
from .pending import MAX_DELAY_FACTOR, PendingPaths

log = logging.getLogger("personal_memory.watch")

# After a busy or full database, retry after 2 s, doubling up to this.
MAX_BACKOFF_SECONDS = 60.0
ROOT_RETRY_SECONDS = 2.0
# A database moved or deleted under the daemon is looked for at least this often (a stat):
# until then its writes go into the file it opened, wherever that went.
DATABASE_CHECK_SECONDS = 2.0
PROBLEMS_LOGGED = 20  # a sync's skipped files and warnings, a log line each, at most


# What the daemon waits out (nothing was written; it retries after a back-off), and how
# it says so.
WAITING = {DatabaseBusy: ("waiting for the database lock (another process is writing)",
                         "retry after a busy database"),
           DiskFull: ("waiting for disk space", "retry after a full disk"),
           ClockImplausible: ("waiting for the system clock to be set right",
                              "retry after a wrong clock")}


class Backoff:
    """Waiting out a busy database or a full disk: 2 s, doubling up to
    MAX_BACKOFF_SECONDS, said in the log and in systemd's status."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wait_after(self, exc: DatabaseBusy | DiskFull | ClockImplausible, during: str) -> float:
        """The next delay, once ``exc`` was met ``during`` something."""
        self.seconds = min(MAX_BACKOFF_SECONDS, self.seconds * 2 or 2.0)
        waiting = WAITING[type(exc)][0]
        log.warning("%s %s; %s, retrying in %.0f s", exc, during, waiting, self.seconds)
        notify.notify(f"STATUS={waiting}")
        return self.seconds

    def reset(self) -> None:
        self.seconds = 0.0


class Watcher:
    """Owns the long-running loop; the ``memory watch`` command only wires it."""

    def __init__(self, store: MemoryStore, folders: list[Folder], *, settle_ms: int = 300,
                 rescan_interval: float = 600.0, allow_mass_delete: bool = False,
                 observer_factory: Callable[[], object] = watchdog_observer,
                 stop_event: threading.Event | None = None):
        self.store = store
        self.folders = folders
        self.rescan_interval = rescan_interval
        self.allow_mass_delete = allow_mass_delete
        self.stop_event = stop_event or threading.Event()
        self.pending = PendingPaths(settle_ms / 1000)
        self._ping_every = notify.watchdog_interval()
        self._next_ping: float | None = time.monotonic() if self._ping_every else None
        self._next_beat = time.monotonic() + HEARTBEAT_SECONDS
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._rescan_reason: str | None = None
        self._lost: set[Folder] = set()
        self._started_at = now_micros()
        self._backoff = Backoff()
        self._last_sync: tuple[str, str, SyncReport] | None = None
        self._retry_at: float | None = None
        self._retry_reason = ""
        self._waiting = ""  # what a back-off waits for, for the heartbeat's state
        self._quiet_since: float | None = None  # a folder went: rescan once quiet, since when
        self._importing = threading.Event()
        self.filter = EventFilter(store.path)
        self.observer = ObserverLifecycle(folders, self.filter, self.mark, self._limit_reached,
                                          observer_factory)
        # A database deleted or replaced under us is detected by its device and inode.
        self._db_identity = _identity(os.path.abspath(store.path))
        self._roots: dict[Folder, tuple] = {}  # see _remounted
        self._next_mount_check = 0.0
        self._mounts_changed = threading.Event()  # told at once by the mount watch
        self._mount_watch = MountWatch(self._mount_table_changed)
        self._overflow = OverflowWatch(lambda: self.request_rescan("inotify queue overflow"))
        self.last_status = ""
        self.embedder = (EmbeddingWorker(store, busy=self.busy,
                                         status=lambda: self.last_status)
                         if store.embedder is not None else None)

    # -- called from other threads -------------------------------------------------------------

    def mark(self, *paths: str | bytes) -> None:
        """Note that something happened at these paths (one event's: a move names two);
        they are imported once quiet, together (``PendingPaths.mark_together``)."""
        keys = []
        for path in paths:
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            for folder in self.folders:
                root = str(folder.root)
                if path == root or path.startswith(root + os.sep):
                    rel = os.path.relpath(path, root) if path != root else ""
                    keys.append((folder, "" if rel == "." else rel.replace(os.sep, "/")))
        if keys:
            self.pending.mark_together(keys)
            self._wake.set()

    def relevant(self, path: str | bytes, is_directory: bool) -> bool:
        return self.filter.relevant(path, is_directory)

    def busy(self) -> bool:
        """A change is waiting or being imported: the embedding worker steps aside."""
        return bool(self.pending) or self._importing.is_set() or self._rescan_reason is not None

    def request_rescan(self, reason: str) -> None:
        with self._lock:
            self._rescan_reason = self._rescan_reason or reason
        self._wake.set()

    def stop(self) -> None:
        self.stop_event.set()
        self._wake.set()

    def _mount_table_changed(self) -> None:
        self._mounts_changed.set()
        self._wake.set()

    def _limit_reached(self) -> None:
        self.rescan_interval = min(self.rescan_interval or 60.0, 60.0)

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> int:
        """Watch until :meth:`stop`; returns the process exit code."""
        for name in OBSERVER_LOGGERS:
            logging.getLogger(name).addHandler(self._overflow)
        self._check_watch_limit()
        try:
            self._heartbeat("starting")
            self._mount_watch.start()
            self._roots = self._root_identities()  # before the watches are made
            self.observer.start(self._lost)
            # Ready once watching: a long first sync is progress, not a slow start.
            notify.notify("READY=1\nSTATUS=initial sync")
            if self.embedder is not None:
                self.embedder.start()
            self._full("startup")
            notify.notify("STATUS=" + self.status_line())  # also when the startup sync failed
            self._heartbeat(self._state())
            return self._loop()
        finally:
            notify.notify("STOPPING=1")
            if self.embedder is not None:
                self.embedder.stop()
            self._mount_watch.stop()
            self.observer.stop()
            for name in OBSERVER_LOGGERS:
                logging.getLogger(name).removeHandler(self._overflow)
            try:
                self._heartbeat("stopped")
            except Exception as exc:
                log.warning("could not record the stop: %s", exc)
            if self._database_replaced():
                try:  # its writes go into the file it opened, wherever it went now
                    self.store.checkpoint()
                except PersonalMemoryError as exc:
                    log.warning("could not write the log into the moved file: %s", exc)

    def _loop(self) -> int:
        now = time.monotonic()
        next_rescan = now + self.rescan_interval if self.rescan_interval > 0 else None
        next_root_check = None
        while not self.stop_event.is_set():
            now = time.monotonic()
            if self._database_replaced():
                log.error("the database %s was deleted, moved or replaced while the daemon "
                          "ran; exiting so that the service restarts on the current file",
                          self.store.path)
                return EXIT_PROBLEM
            if self._retry_at is not None and now >= self._retry_at:
                self._retry_at = None
                self.request_rescan(self._retry_reason)
            remounted = self._remounted()
            if remounted:  # inotify's watches went with the file system they were on
                log.info("%s was mounted or unmounted; watching the folders afresh",
                         ", ".join(str(f.root) for f in remounted))
            if self.observer.stale() or remounted:
                if not remounted:
                    log.info("a folder was deleted or moved away; watching the folders "
                             "afresh")
                self.observer.start(self._lost)
                # rescanned once the burst that moved it is over (a checkout still
                # writing would be read half done: its renames as deletions)
                if self._quiet_since is None:
                    self._quiet_since = now
            if self._quiet_since is not None and now >= self._quiet_deadline():
                self.request_rescan("folder moved")
                self._quiet_since = None
            if not self.observer.healthy():
                log.warning("a file watch stopped; checking the folders and restarting it")
                self._retry_or_lose(self.folders)
                self.observer.start(self._lost)
                if not self.observer.healthy():
                    log.error("the file observer cannot be restarted; exiting")
                    return EXIT_PROBLEM
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
            # while a rescan waits for quiet, it, not the settled paths, is what comes next
            deadlines = [self._next_beat, self._next_ping, next_rescan, self._retry_at,
                         time.monotonic() + DATABASE_CHECK_SECONDS,
                         self.pending.next_deadline() if self._quiet_since is None
                         else self._quiet_deadline(),
                         next_root_check if self._lost else None]
            timeout = max(0.0, min(d for d in deadlines if d is not None) - time.monotonic())
            self._wake.wait(timeout)
            self._wake.clear()
        return EXIT_OK

    def _quiet_deadline(self) -> float:
        """When a rescan that waits for quiet runs: a settle window after the last mark,
        at most ``MAX_DELAY_FACTOR`` windows after it was asked for."""
        return min(self.pending.quiet_at(),
                   self._quiet_since + self.pending.settle * MAX_DELAY_FACTOR)

    def _progress(self, done: int, total: int) -> None:
        """Keep the heartbeat and systemd's watchdog fed, also between the batches of a long
        sync. The watchdog is fed only while the file watches are alive."""
        now = time.monotonic()
        if now >= self._next_beat:
            self._heartbeat(self._state())
            self._next_beat = now + HEARTBEAT_SECONDS
        if self._next_ping is not None and now >= self._next_ping:
            if self.observer.healthy():
                notify.notify("WATCHDOG=1")
            self._next_ping = now + self._ping_every
        if total:
            notify.notify(f"STATUS=syncing: {done} of {total} changed files")

    def _flush_settled(self) -> None:
        if self._quiet_since is not None:
            return  # the rescan after the burst reads these paths too, whole
        scopes = self.pending.take_settled()
        if any("" in s for s in scopes.values()):  # something happened to a root itself
            self._retry_or_lose([f for f, s in scopes.items() if "" in s])
        scopes = {f: s for f, s in scopes.items() if f not in self._lost}
        if not scopes or self._retry_at is not None:
            return  # backing off (a full disk, a busy database): the retry's rescan covers them
        self._sync(lambda: self.store.sync_paths(
            scopes, kind="event", allow_mass_delete=self.allow_mass_delete,
            progress=self._progress, cancel=self.stop_event.is_set), "change")

    def _full(self, reason: str) -> None:
        live = [f for f in self.folders if f not in self._lost]
        # everything pending is covered by the full reconcile, but for emptied files,
        # which wait for their long settle
        waiting = self.pending.clear_but_empty()
        if live:
            self._sync(lambda: self.store.sync(
                live, kind=reason.replace(" ", "-"), allow_mass_delete=self.allow_mass_delete,
                progress=self._progress, cancel=self.stop_event.is_set, hold=waiting), reason)

    def _sync(self, action: Callable[[], SyncReport], what: str) -> None:
        t0 = time.monotonic()
        self._importing.set()
        try:
            report = action()
        except RootUnavailable as exc:
            log.error("%s", exc)
            self._retry_or_lose(self.folders)
            return
        except SyncError as exc:
            log.error("%s", exc)
            return
        except tuple(WAITING) as exc:
            # Nothing was written; a full rescan retries everything, after a back-off.
            delay = self._backoff.wait_after(exc, f"during {what}")
            self._retry_at = time.monotonic() + delay
            self._waiting, self._retry_reason = WAITING[type(exc)]
            self._heartbeat(self._state())  # status says what it waits for, not "watching"
            return
        finally:
            self._importing.clear()
        self._backoff.reset()
        if self._waiting:
            self._waiting = ""
            self._heartbeat(self._state())
        if self.embedder is not None and (report.changed or what != "change"):
            self.embedder.nudge()  # new revisions, or a rescan: look again
        if report.changed or report.skipped or what != "change":
            log.info("%s: %s (%d transactions, %.0f ms)", what, report.summary(),
                     report.transactions, (time.monotonic() - t0) * 1000)
        problems = [("skipped ", s) for s in report.skipped] + [("", w) for w in report.warnings]
        for kind, problem in problems[:PROBLEMS_LOGGED]:
            log.warning("%s%s: %s", kind, problem.path, problem.reason)
        if len(problems) > PROBLEMS_LOGGED:
            log.warning("and %d more", len(problems) - PROBLEMS_LOGGED)
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
            parts.append(f"{status.files_indexed} notes indexed")
            if status.problems:
                parts.append(f"{len(status.problems)} problems (memory status)")
        except (DatabaseBusy, DiskFull):
            pass
        if self._last_sync is not None:
            at, what, report = self._last_sync
            parts.append(f"last {what} at {at}: {report.chunks_added} added, "
                         f"{report.chunks_changed} changed, {report.chunks_tombstoned} "
                         "tombstoned")
        self.last_status = "; ".join(parts)  # the embedding worker adds its progress to it
        progress = self.embedder.progress if self.embedder is not None else ""
        return f"{self.last_status}; {progress}" if progress else self.last_status

    def _retry_or_lose(self, folders: list[Folder]) -> None:
        for folder in folders:
            try:
                self.store.check_folder(folder)
            except RootUnavailable as exc:
                if folder not in self._lost:
                    log.error("%s; waiting for it to come back", exc)
                    self._lost.add(folder)
                    self._heartbeat(self._state())
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
            self.observer.start(self._lost)  # the old inotify watches died with the folder
            self.request_rescan("folder returned")
            self._heartbeat(self._state())

    def _state(self) -> str:
        """The state the heartbeat records: what the daemon waits for, else watching."""
        if self._waiting:
            return self._waiting
        if self._lost:  # (not named: a namespace's status shows its own folders only)
            return "waiting for folder (missing; its notes stay as they were)"
        return "watching"

    def _heartbeat(self, state: str) -> None:
        try:
            self.store.record_daemon(state=state, started_at=self._started_at,
                                     roots=[str(f.root) for f in self.folders
                                            if f not in self._lost])
        except (DatabaseBusy, DiskFull) as exc:  # the next beat tries again
            log.warning("could not record the heartbeat: %s", exc)

    def _remounted(self) -> list[Folder]:
        """The folders whose root is now another directory (a file system mounted on it or
        taken away: its watches are gone, and nothing said so), since last asked; asked
        when the mount watch says the table changed, else at most once a heartbeat (the
        mount table is read each time)."""
        if not self._mounts_changed.is_set() and time.monotonic() < self._next_mount_check:
            return []
        self._mounts_changed.clear()
        now = self._root_identities()
        changed = [f for f, seen in now.items()
                   if f in self._roots and self._roots[f] != seen]
        self._roots = now
        return changed

    def _root_identities(self) -> dict[Folder, tuple]:
        """Each folder's mount and directory now (what its watches are on, when they are
        made), and when to look again."""
        self._next_mount_check = time.monotonic() + HEARTBEAT_SECONDS
        table = mounts()
        return {f: (mount_of(f.root, table), _identity(os.path.abspath(f.root)))
                for f in self.folders}

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
            self._limit_reached()


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _no_database(db_path: Path) -> bool:
    """Missing, or an empty file, with no WAL beside it (what a failed create leaves, or a
    file truncated by mistake): a database would start a second history there too. A
    missing file whose WAL holds writes was moved or deleted while open: opening it says
    so (and creates nothing)."""
    try:
        if os.path.getsize(db_path) > 0:
            return False
    except OSError:
        pass
    wal = f"{db_path}-wal"
    return not (os.path.exists(wal) and os.path.getsize(wal) > 0)


def run_daemon(db_path: Path, folders: list[Folder], *, settle_ms: int, rescan_interval: float,
               allow_mass_delete: bool, vector_backend: str = "auto",
               embedder: str = "auto", install_signals: bool = True,
               new_database: bool = False) -> int:
    """Open the database, lock it and watch until a signal. Returns the exit code. The
    daemon never creates a database unless told to (``new_database``): a missing one may
    be an unmounted drive or a deleted file, and a new one would start a second history."""
    if not new_database and _no_database(db_path):
        raise NotFound(f"database {db_path} does not exist (or is an empty file), and the "
                       "daemon does not create "
                       "one (a missing database may be an unmounted drive or a deleted "
                       "file); create it with 'memory init' or a first 'memory sync', restore "
                       "it, or start afresh with 'memory watch --new-database'")
    stop = threading.Event()
    running: list[Watcher] = []  # woken by a signal once it exists
    if install_signals:
        _install_signals(stop, running)
    # Open (and so validate) the database first: a foreign file gets no stray lock file.
    store = _open_when_possible(db_path, stop, vector_backend=vector_backend,
                                embedder=embedder)
    if store is None:
        log.info("stopped")
        return EXIT_OK
    with store, DaemonLock(db_path):  # LockedError: the CLI exits 75
        watcher = Watcher(store, folders, settle_ms=settle_ms, rescan_interval=rescan_interval,
                          allow_mass_delete=allow_mass_delete, stop_event=stop)
        running.append(watcher)
        if stop.is_set():  # a signal came while it was being set up
            watcher.stop()
        log.info("watching %s into %s (settle %d ms, %s)",
                 ", ".join(f"{f.root} as {f.namespace}/{f.collection}" for f in folders),
                 db_path, settle_ms,
                 f"rescan every {rescan_interval:g} s" if rescan_interval else "rescans off")
        log.info("search: %s", store.embedder_note)
        code = watcher.run()
        log.info("stopped")
        return code


def _open_when_possible(db_path: Path, stop: threading.Event, **options) -> MemoryStore | None:
    """The store, once it opens: a full disk (SQLite cannot even make its WAL files) or a
    busy database is waited out with the loop's back-off, as it is mid-run, and systemd is
    kept told (ready, why it waits, the watchdog). None when stopped while waiting."""
    backoff = Backoff()
    ping_every = notify.watchdog_interval()
    while True:
        try:
            return MemoryStore.open(db_path, **options)
        except (DatabaseBusy, DiskFull) as exc:
            delay = backoff.wait_after(exc, "while opening the database")
            notify.notify("READY=1")  # alive and waiting; a start timeout would only restart it
            deadline = time.monotonic() + delay
            while not stop.is_set() and time.monotonic() < deadline:
                if ping_every:
                    notify.notify("WATCHDOG=1")
                stop.wait(min(ping_every or delay, max(0.0, deadline - time.monotonic())))
            if stop.is_set():
                return None


def _install_signals(stop: threading.Event, running: list[Watcher]) -> None:
    import signal

    def handle(signum, frame):
        if stop.is_set():
            log.warning("second signal: stopping now")
            os._exit(EXIT_PROBLEM)  # SQLite rolls back the open transaction; nothing half-written
        log.info("signal %d: finishing the current transaction, then stopping", signum)
        stop.set()
        for watcher in running:
            watcher.stop()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    if hasattr(signal, "SIGHUP"):  # its terminal closed: a clean stop, not a kill
        signal.signal(signal.SIGHUP, handle)
