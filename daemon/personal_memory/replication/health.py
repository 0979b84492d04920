"""How the replica stands: absent, healthy, lagging or failing, and why."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import PersonalMemoryError
from ..limits import REPLICA_MAX_LAG_SECONDS
from ..records import Replication
from ..times import format_time
from . import control, litestream


def last_write(db: Path) -> int:
    """When a writer last appended to the database, in microseconds: its WAL's time (a
    checkpoint rewrites the main file later, adding nothing to replicate)."""
    wal = Path(str(db) + "-wal")
    return os.stat(wal if wal.exists() else db).st_mtime_ns // 1000


def replication(db: Path, max_lag: float = REPLICA_MAX_LAG_SECONDS) -> Replication:
    try:
        dest = litestream.read_destination(db)
    except PersonalMemoryError as exc:
        return Replication("failing", problem=str(exc), max_lag_seconds=max_lag)
    if dest is None:
        return Replication("absent", max_lag_seconds=max_lag)
    base = dict(destination=dest.url, running=control.running(db), max_lag_seconds=max_lag)
    if dest.readable_here and not Path(dest.location).is_dir():
        return Replication("failing", **base,
                           problem=f"the replica folder {dest.location} is missing")
    try:
        found = litestream.ltx_files(db)
    except PersonalMemoryError as exc:
        return Replication("failing", **base, problem=str(exc))
    if not found:
        return Replication("failing", **base, problem="nothing replicated yet" + (
            "" if base["running"] else "; replication is not running"))
    top = max(f.max_txid for f in found)
    # when the newest transaction arrived (a later compaction of it adds nothing new)
    arrived = min(f.written for f in found if f.max_txid == top)
    txid = f"{top:016x}"
    if not any(f.level == litestream.SNAPSHOT_LEVEL for f in found):
        return Replication("failing", **base, generation=txid, generations=len(found),
                           problem=(
                               "the replica holds no snapshot, so it cannot be restored "
                               "(were its files deleted?); replication writes a fresh one "
                               "when it notices"))
    # Litestream gives whole seconds: a replica as new as the WAL can read 1 s older
    lag = max(0.0, (last_write(db) - arrived) / 1e6 - 1.0)
    record = dict(**base, generation=txid, generations=len(found),
                  position=format_time(arrived), lag_seconds=round(lag, 3))
    if not base["running"]:
        return Replication("failing", **record, problem=(
            "replication is not running: start the companion service "
            "(memory replicate setup installs it) or 'memory replicate run'"))
    error = control.last_error(db)
    if lag > 0 and error and error[0] // 1_000_000 > arrived // 1_000_000:
        # a write waits, and Litestream failed since the replica last moved
        return Replication("failing", **record, problem=(
            f"Litestream cannot bring the replica up to date: {error[1]} "
            f"(at {format_time(error[0])})"))
    if lag > max_lag:
        return Replication("lagging", **record, problem=(
            f"the replica is {lag:.0f} s behind the database (more than {max_lag:.0f} s)"))
    return Replication("healthy", **record)
