"""Records of replication: its health, a restore, and a purge reaching a replica."""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import Record


@dataclass(frozen=True)
class Replication(Record):
    """``state``: absent (not set up), healthy, lagging (behind by more than
    ``max_lag_seconds``) or failing (not running, or the replica cannot be read); or
    replica, for a store that reads a replica (``position``: the newest knowledge in it);
    ``position``: when the replica last received a change; ``lag_seconds``: how far the
    database's last write is ahead of it. ``generation``: the newest transaction the
    replica holds (Litestream 0.5's TXID, in hex); ``generations``: its LTX files."""
    state: str
    destination: str | None = None
    running: bool = False
    generation: str | None = None
    generations: int = 0
    position: str | None = None
    lag_seconds: float | None = None
    max_lag_seconds: float = 0.0
    problem: str | None = None


@dataclass(frozen=True)
class Restored(Record):
    """What ``restore`` wrote and what the checks of the copy found. ``path``: the target,
    written only when ``ok`` (a copy that fails its checks is not kept); ``problem``: why
    the source could not be read or checked at all (damaged, another application's)."""
    source: str
    path: str
    at: str | None
    integrity: str
    schema_version: int
    revisions: int
    newest_known_at: str | None
    ok: bool
    problem: str | None = None  # why the copy could not be checked (a damaged source)


@dataclass(frozen=True)
class ReplicaPurge(Record):
    """A purge carried to the replica: its older files deleted (``generations_deleted``:
    the LTX levels, or a 0.3 replica's generations), a fresh snapshot (``new_generation``)
    written from the purged database, and the proof (the replica restored to a temporary
    file, and its files with their LTX pages decompressed, scanned). ``verified`` False
    says what could not be checked in ``unverified``.
    ``scanned`` False: no text was given, so the replica was rewritten but not scanned."""
    destination: str
    generations_deleted: list[str] = field(default_factory=list)
    new_generation: str | None = None
    occurrences: int = 0
    bytes_scanned: int = 0
    verified: bool = False
    unverified: str | None = None
    scanned: bool = True
