"""Whether the sync daemon is alive and current, read from the database it writes."""

from __future__ import annotations

import os

from ..notes import model as notes
from ..limits import HEARTBEAT_SECONDS
from ..records import DaemonStatus
from ..store import Database
from ..times import format_time, now_micros

STALE_AFTER_US = 3 * HEARTBEAT_SECONDS * 1_000_000


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def daemon_status(db: Database, namespace: str | None = None) -> DaemonStatus:
    """The daemon's state and the last sync runs."""
    daemon = db.daemon()
    running = False
    if daemon is not None and daemon.state not in ("stopped", "failed"):
        fresh = now_micros() - daemon.heartbeat_at < STALE_AFTER_US
        running = fresh and pid_alive(daemon.pid)
    last = db.last_sync_runs(1)
    ok = db.last_sync_runs(1, status="ok")
    return DaemonStatus(
        daemon_running=running,
        daemon_state=daemon.state if daemon else "never started",
        daemon_pid=daemon.pid if daemon else None,
        daemon_heartbeat_at=format_time(daemon.heartbeat_at) if daemon else None,
        watched_folders=daemon.roots if daemon else [],
        last_sync_started_at=last[0].started_at if last else None,
        last_sync_status=last[0].status if last else None,
        last_successful_sync_at=ok[0].finished_at if ok else None,
        files_indexed=db.indexed_files(namespace),
        # Imported by an older note model: the next sync gives them their new identities.
        notes_to_reidentify=db.files_to_reidentify(namespace, notes.CHUNKER_VERSION),
        note_model_version=notes.CHUNKER_VERSION,
        last_sync_errors=last[0].errors if last else [],
        problems=db.problems(namespace),
        imported_folders=db.collection_roots(namespace),
        warnings=db.front_matter_warnings(namespace))
