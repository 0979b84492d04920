"""A purge carried to the replica. Litestream's older snapshots and WAL segments still
hold what a purge erased, and so does its own copy of the WAL beside the database. With
replication paused: delete both, write a fresh generation from the purged database, then
prove it by restoring the replica to a temporary file and scanning its bytes (restored,
so decompressed) for the text."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from ..errors import ReplicationError
from ..records import ReplicaPurge
from ..store import scan_files
from . import control, litestream

FRESH_GENERATION_WAIT = 60.0


def forget(db: Path, patterns: list[bytes]) -> ReplicaPurge:
    """Call with replication paused (:func:`control.paused`)."""
    dest = litestream.read_destination(db)
    assert dest is not None
    shutil.rmtree(litestream.shadow_dir(db), ignore_errors=True)
    deleted: list[str] = []
    if dest.readable_here:
        generations = Path(dest.location) / "generations"
        if generations.is_dir():
            deleted = sorted(p.name for p in generations.iterdir())
            shutil.rmtree(generations)
    else:
        try:
            deleted = [g.generation for g in litestream.generations(db)]
        except ReplicationError:
            deleted = []
    fresh = _fresh_generation(db, exclude=set(deleted))
    if not dest.readable_here:
        return ReplicaPurge(dest.url, generations_deleted=[], new_generation=fresh,
                            verified=False, unverified=(
                                f"{dest.url}: this program cannot delete the older "
                                f"generations ({', '.join(deleted) or 'none listed'}) of a "
                                "remote replica; delete them with your storage's own tools, "
                                "keeping only " + fresh))
    left = [g.generation for g in litestream.generations(db)]
    unverified = None if left == [fresh] else \
        f"the replica still lists generations {', '.join(left)}"
    if not patterns:  # no text to scan for: no proof to claim
        return ReplicaPurge(dest.url, generations_deleted=deleted, new_generation=fresh,
                            verified=unverified is None, unverified=unverified,
                            scanned=False)
    with tempfile.TemporaryDirectory(prefix="pm-replica-check-") as tmp:
        copy = Path(tmp) / "replica.db"
        litestream.restore_from_config(db, copy)
        files = [str(p) for p in Path(tmp).iterdir() if p.is_file()]
        counts = scan_files(files, patterns)
        size = sum(p.stat().st_size for p in Path(tmp).iterdir() if p.is_file())
    occurrences = sum(counts.values())
    return ReplicaPurge(dest.url, generations_deleted=deleted, new_generation=fresh,
                        occurrences=occurrences, bytes_scanned=size,
                        verified=occurrences == 0 and unverified is None,
                        unverified=unverified)


def _fresh_generation(db: Path, exclude: set[str]) -> str:
    """Run Litestream until the replica holds a new generation with its snapshot."""
    proc = control.start(db, quiet=True)
    try:
        deadline = time.monotonic() + FRESH_GENERATION_WAIT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ReplicationError(f"litestream exited with code {proc.returncode} "
                                       "while writing a fresh generation")
            try:
                found = [g for g in litestream.generations(db) if g.generation not in exclude]
            except ReplicationError:
                found = []
            if found:
                return found[-1].generation
            time.sleep(0.25)
        raise ReplicationError("the replica did not receive a fresh generation within "
                               f"{FRESH_GENERATION_WAIT:.0f} s")
    finally:
        control.stop(proc)
