"""Whether the sync daemon is alive and current, read from the database it writes."""

from __future__ import annotations

import fcntl
import os

from ..notes import model as notes
from ..limits import DISK_FAIL_BYTES, HEARTBEAT_SECONDS
from ..paths import free_beside, lock_path, real_database
from ..records import DaemonStatus
from ..store import Database
from ..times import format_time, now_micros

STALE_AFTER_US = 3 * HEARTBEAT_SECONDS * 1_000_000


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs. A process killed but not yet reaped by its parent
    (a zombie: kill -9 of a daemon started from a script) has stopped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # the state follows the command's name in parentheses, which may hold any byte
            return f.read().rpartition(b")")[2].split()[:1] != [b"Z"]
    except FileNotFoundError:  # gone meanwhile, unless there is no /proc (macOS)
        return not os.path.isdir("/proc/self")
    except OSError:
        return True


def lock_holder(db_path: str) -> int | None:
    """The daemon that holds this database's lock (``watch.lock``), if one does: it is
    running, even when it cannot write its heartbeat or even its row (a full disk). Its
    pid as the lock file names it, 0 when it could not write even that."""
    try:
        fd = os.open(lock_path(real_database(db_path)), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        named = os.pread(fd, 32, 0).decode(errors="replace").strip()
        return int(named) if named.isdigit() else 0
    except OSError:
        return None
    finally:
        os.close(fd)  # (closing also lets go of the shared lock just taken)
    return None


def daemon_status(db: Database, namespace: str | None = None) -> DaemonStatus:
    """The daemon's state and the last sync runs. A daemon that holds its lock but has
    not written its heartbeat for three beats, or whose row names another (a daemon that
    started after a kill on a full disk), is running and stuck (``not writing``)."""
    daemon = db.daemon()
    running, state = False, daemon.state if daemon else "never started"
    pid = daemon.pid if daemon else None
    said_running = daemon is not None and daemon.state not in ("stopped", "failed")
    if said_running:
        fresh = now_micros() - daemon.heartbeat_at < STALE_AFTER_US
        if db.follow is not None:
            # a replica, read on another machine: the daemon's pid means nothing here,
            # its heartbeat (as far as the replica holds it) says whether it runs
            return _status(db, namespace, daemon, fresh, daemon.state, pid)
        running = fresh and pid_alive(daemon.pid)
    holder = None if running or db.follow is not None else lock_holder(db.path)
    if holder and not pid_alive(holder):
        holder = None  # killed: its last thread closes the lock a moment after the first
    if holder is not None:
        running, pid = True, holder or None
        state = "not writing: no heartbeat lately (a full disk? see its log)"
    elif said_running and not running:
        state = f"ended without stopping, last {daemon.state}"  # kill -9, a second signal
    elif running:
        state += _short_of_space(db.path)
    return _status(db, namespace, daemon, running, state, pid)


def _short_of_space(db_path: str) -> str:
    """A running daemon on a disk that is (nearly) full: its heartbeat, the last thing it
    wrote, stays fresh for a while after it can write nothing, so say so at once."""
    try:
        free = free_beside(db_path)
    except OSError:
        return ""
    if free >= DISK_FAIL_BYTES:
        return ""
    return (f" (only {free / 2**20:,.1f} MiB free beside the database: nothing new is "
            "recorded once the disk is full)")


def _run_status(db: Database, run) -> str:
    """A run's status; one still recorded as running by a process that is gone (a second
    signal, kill -9) reads as interrupted, as the next sync records it."""
    if run.status == "running" and db.follow is None and not pid_alive(run.pid):
        return "interrupted"
    return run.status


def _status(db: Database, namespace: str | None, daemon, running: bool,
            state: str, pid: int | None) -> DaemonStatus:
    last = db.last_sync_runs(1)
    ok = db.last_sync_runs(1, status="ok")
    imported = db.collection_roots(namespace)
    # One namespace's view (an MCP token's) names no other's folders or files: a run's
    # errors are shown when it synced this namespace's folders alone (its own are among
    # its problems in any case).
    watched = [r for r in (daemon.roots if daemon else [])
               if namespace is None or r in imported]
    errors = last[0].errors if last and (namespace is None
                                         or set(last[0].roots) <= set(imported)) else []
    return DaemonStatus(
        daemon_running=running,
        daemon_state=state,
        daemon_pid=pid,
        daemon_heartbeat_at=format_time(daemon.heartbeat_at) if daemon else None,
        watched_folders=watched,
        last_sync_started_at=last[0].started_at if last else None,
        last_sync_status=_run_status(db, last[0]) if last else None,
        last_successful_sync_at=ok[0].finished_at if ok else None,
        files_indexed=db.indexed_files(namespace),
        # Imported by an older note model: the next sync gives them their new identities.
        notes_to_reidentify=db.files_to_reidentify(namespace, notes.CHUNKER_VERSION),
        note_model_version=notes.CHUNKER_VERSION,
        last_sync_errors=errors,
        problems=db.problems(namespace),
        imported_folders=imported,
        warnings=db.note_warnings(namespace))
