"""A purge carried to the replica. Litestream's older snapshots and WAL segments still
hold what a purge erased (Litestream 0.5: the LTX files of every level, L0 to L3 and the
L9 snapshots), and so does its own copy beside the database. With replication paused:
delete both, write a fresh snapshot from the purged database, then prove it: the replica
restored to a temporary file, and every file left in the replica and in Litestream's
folder, LTX pages decompressed, scanned for the text."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from ..errors import ReplicationError
from ..records import ReplicaPurge
from ..store import scan_files
from . import control, litestream, ltx

FRESH_GENERATION_WAIT = 60.0


def forget(db: Path, patterns: list[bytes]) -> ReplicaPurge:
    """Call with replication paused (:func:`control.paused`)."""
    dest = litestream.read_destination(db)
    assert dest is not None
    shutil.rmtree(litestream.shadow_dir(db), ignore_errors=True)
    deleted: list[str] = []
    if dest.readable_here:
        # Litestream 0.5's LTX files at every level (L0 to L3, the L9 snapshots), and
        # the generations a 0.3 replica left
        for name in ("ltx", "generations"):
            folder = Path(dest.location) / name
            if folder.is_dir():
                deleted += sorted(f"{name}/{p.name}" for p in folder.iterdir())
                shutil.rmtree(folder)
    else:
        try:
            deleted = sorted({f"ltx/{f.level}" for f in litestream.ltx_files(db)})
        except ReplicationError:
            deleted = []
    fresh = _fresh_generation(db)
    if not dest.readable_here:
        return ReplicaPurge(dest.url, generations_deleted=[], new_generation=fresh,
                            verified=False, unverified=(
                                f"{dest.url}: this program cannot delete the older LTX "
                                f"files ({', '.join(deleted) or 'none listed'}) of a remote "
                                "replica; delete them with your storage's own tools, keeping "
                                f"only the snapshot {fresh}"))
    if not patterns:  # no text to scan for: no proof to claim
        return ReplicaPurge(dest.url, generations_deleted=deleted, new_generation=fresh,
                            verified=True, scanned=False)
    with tempfile.TemporaryDirectory(prefix="pm-replica-check-") as tmp:
        copy = Path(tmp) / "replica.db"
        litestream.restore_from_config(db, copy)
        restored = scan_files([str(p) for p in Path(tmp).iterdir() if p.is_file()], patterns)
        size = sum(p.stat().st_size for p in Path(tmp).iterdir() if p.is_file())
    why_not = ltx.lz4_missing()
    kept = sorted(p for top in (Path(dest.location), litestream.shadow_dir(db))
                  for p in top.rglob("*") if p.is_file())
    in_files, scanned = ltx.scan(kept, patterns) if why_not is None else (0, 0)
    occurrences = sum(restored.values()) + in_files
    return ReplicaPurge(dest.url, generations_deleted=deleted, new_generation=fresh,
                        occurrences=occurrences, bytes_scanned=size + scanned,
                        verified=occurrences == 0 and why_not is None,
                        unverified=why_not)


def _fresh_generation(db: Path) -> str:
    """Run Litestream until the replica holds a snapshot of the purged file; its name."""
    proc = control.start(db, quiet=True)
    try:
        deadline = time.monotonic() + FRESH_GENERATION_WAIT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ReplicationError(f"litestream exited with code {proc.returncode} "
                                       "while writing a fresh snapshot")
            try:
                found = [f for f in litestream.ltx_files(db)
                         if f.level == litestream.SNAPSHOT_LEVEL]
            except ReplicationError:
                found = []
            if found:
                return f"ltx/{found[-1].level}/{found[-1].min_txid:016x}-{found[-1].max_txid:016x}"
            time.sleep(0.25)
        raise ReplicationError("the replica did not receive a fresh snapshot within "
                               f"{FRESH_GENERATION_WAIT:.0f} s")
    finally:
        control.stop(proc)
