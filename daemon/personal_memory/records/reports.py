"""Reports of the store's state and of operations: counts, status, syncs, embedding runs,
purges, health."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

from .base import Record
from .replication import ReplicaPurge, Replication  # noqa: F401 (field types)


@dataclass(frozen=True)
class SkippedFile(Record):
    """A file (or folder) a sync could not import, and why."""
    path: str
    reason: str


@dataclass(frozen=True)
class Problem(Record):
    """What could not be imported, kept until it can be. ``stale``: a note imported before,
    whose last good version stays searchable."""
    namespace: str
    collection: str
    path: str
    reason: str
    since: str
    stale: bool


@dataclass
class SyncReport(Record):
    """What one sync did (mutable while the sync runs; merged batch by batch)."""
    files_scanned: int = 0
    files_imported: int = 0
    files_removed: int = 0
    files_moved: int = 0
    chunks_added: int = 0
    chunks_changed: int = 0
    chunks_tombstoned: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    warnings: list[SkippedFile] = field(default_factory=list)  # imported, not all of it read
    files_reidentified: int = 0  # imported again for a new note model version
    transactions: int = 0
    dry_run: bool = False

    def merge(self, other: "SyncReport") -> None:
        for name in ("files_scanned", "files_imported", "files_removed", "files_moved",
                     "chunks_added", "chunks_changed", "chunks_tombstoned",
                     "files_reidentified", "transactions"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped.extend(other.skipped)
        self.warnings.extend(other.warnings)

    @property
    def changed(self) -> bool:
        return bool(self.chunks_added or self.chunks_changed or self.chunks_tombstoned)

    def summary(self) -> str:
        text = (f"{self.files_scanned} file{'' if self.files_scanned == 1 else 's'} "
                f"scanned, {self.files_imported} imported, "
                f"{self.files_removed} removed")
        if self.files_moved:
            text += f", {self.files_moved} moved"
        text += (f"; chunks: {self.chunks_added} added, {self.chunks_changed} changed, "
                 f"{self.chunks_tombstoned} tombstoned; {len(self.skipped)} skipped")
        if self.warnings:
            text += f"; {len(self.warnings)} with warnings"
        if self.files_reidentified:
            text += f"; {self.files_reidentified} re-identified for the new note model"
        return ("dry run (nothing written): " + text) if self.dry_run else text


@dataclass(frozen=True)
class SyncRun(Record):
    """One recorded sync: kind (sync, startup, event...), folders, counts, status
    (running, ok, refused, interrupted, failed)."""
    id: int
    started_at: str
    finished_at: str | None
    pid: int
    kind: str
    roots: list[str]
    files_scanned: int
    chunks_added: int
    chunks_changed: int
    chunks_tombstoned: int
    errors: list[SkippedFile]
    status: str


@dataclass(frozen=True)
class EmbeddingRun(Record):
    """One call that gave revisions their vectors. ``below``: the lowest revision id it
    handled (pass it back to continue from there); ``remaining``: what is still without a
    vector (None when not counted); ``reused``: vectors copied from an identical passage
    instead of running the model; ``dropped``: vectors of other models deleted first."""
    embedder: str
    embedded: int
    below: int | None
    remaining: int | None
    per_second: float | None
    reused: int = 0
    dropped: int = 0
    interrupted: bool = False


@dataclass(frozen=True)
class Counts(Record):
    revisions: int
    memories: int  # what a search can return: sections and lone memories
    notes: int  # note records
    tombstones: int


@dataclass(frozen=True)
class VectorStatus(Record):
    semantic: str  # one line: which model, or keyword-only and why
    embedder: str | None
    pending_vectors: int
    embedding_per_second: float | None
    # How long the pending will take: by their tokens (a sample counted by the model) at
    # the tokens per second it last got; by passages where the model counts no tokens.
    eta_seconds: float | None = None
    # The threads the model last read passages with, and the rates that choice rests on.
    embedding_threads: str | None = None
    # Whether embedding_per_second is a run's that goes on (a live process wrote it), not
    # an earlier run's (a daemon restarted shows that until its first batch)
    rate_current: bool = False


@dataclass(frozen=True)
class DaemonStatus(Record):
    """The sync daemon's state, as it records it in the database."""
    daemon_running: bool
    daemon_state: str
    daemon_pid: int | None
    daemon_heartbeat_at: str | None
    watched_folders: list[str]
    last_sync_started_at: str | None
    last_sync_status: str | None
    last_successful_sync_at: str | None
    files_indexed: int
    notes_to_reidentify: int  # imported by an older note model; the next sync does them
    note_model_version: int
    last_sync_errors: list[SkippedFile]
    problems: list[Problem]
    # Every folder imported into the namespace, by the daemon or by 'memory sync'.
    imported_folders: list[str] = field(default_factory=list)
    # Notes imported with a warning, as long as it holds: front matter read as text, or
    # the headings past the limit read as text.
    warnings: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class Status(Record):
    """Counts (of one namespace, or all), search, vectors and the daemon."""
    namespace: str | None
    counts: Counts
    vector_backend: str
    vectors: VectorStatus
    daemon: DaemonStatus
    replication: "Replication | None" = None
    # Purges whose erasure is not finished (the file or the replica may still hold the
    # text) until ``memory purge --resume`` finishes them.
    purges_unfinished: list["PurgeAudit"] = field(default_factory=list)
    clock: "ClockStatus | None" = None


@dataclass(frozen=True)
class Stats(Record):
    path: str
    namespace: str | None
    counts: Counts
    namespaces: dict[str, int]
    bytes: int
    vector_backend: str
    vectors: VectorStatus


@dataclass(frozen=True)
class ClockStatus(Record):
    """The transaction clock: this machine's time, the newest ``known_at`` stored, how far
    the clock is behind it (new writes are stamped after it whatever the clock says), and
    how many revisions ``memory repair-clock`` would append (in which notes) where an
    earlier version let a clock running ahead stamp a revision after later writes."""
    now: str
    newest_known_at: str | None
    behind_seconds: float
    memories_to_repair: int
    notes_to_repair: list[str]  # the first 20 notes, sorted
    last_repair: str | None = None


@dataclass(frozen=True)
class ClockRepair(Record):
    """What ``memory repair-clock`` appended: at stored stamps (the newest ``stamp``),
    where the stamps made another revision win than the note's writes so far say, a copy
    of what should win there or a tombstone (timeline/clock.py). ``repair_id`` None:
    nothing to repair, nothing appended."""
    repair_id: int | None
    repaired_at: str
    repaired_by: str
    stamp: str | None
    newest_before: str | None
    clock_behind_seconds: float
    revision_ids: list[int]
    notes: list[str]


@dataclass(frozen=True)
class ClockAnomaly(Record):
    """A revision known after now (beyond the tolerance): written by a clock that ran
    ahead, or a future ``--known-at`` of an older version. New writes are stamped after
    it; ``memory doctor`` names it."""
    revision_id: int
    namespace: str
    memory_id: str
    known_at: str


@dataclass(frozen=True)
class Health(Record):
    integrity: str
    revisions: int
    schema_version: int
    supported_schema_version: int
    vectors: dict[str, int]
    pending_vectors: int
    future_revisions: list[ClockAnomaly] = field(default_factory=list)
    clock_behind_by_seconds: float = 0.0  # the newest revision is this far ahead of now
    newest_known_at: str | None = None
    clock: ClockStatus | None = None
    # the search index was built by this version's rules (else the next writer rebuilds it)
    index_current: bool = True


@dataclass(frozen=True)
class PurgeAudit(Record):
    """One entry of the purge audit: when, what kind of selection, why, which revisions
    (never the text, never the selected ID or path)."""
    id: int
    purged_at: str
    namespace: str
    selector: str
    reason: str | None
    revision_ids: list[int]
    revisions: int
    # What its erasure still lacks: "file" (not proven gone from the database files),
    # "replica" (the replica not made to forget); empty once finished.
    unfinished: list[str] = field(default_factory=list)

    @property
    def left(self) -> str:
        """What an unfinished purge still lacks, in words, and the command that does it."""
        what = " and ".join({"file": "the database file may still hold the text",
                             "replica": "the replica still holds it"}.get(p, p)
                            for p in self.unfinished)
        command = "memory purge --resume" + (" --replicas" if "replica" in self.unfinished
                                             else "")
        return (f"purge {self.id} of {self.purged_at} is unfinished ({what}): run "
                f"'{command}'")


@dataclass(frozen=True)
class PurgeReport(Record):
    """What a purge selected and, unless a dry run, the proof: occurrences of the purged
    text, in every form the store may hold it, in the database file and its WAL (0 for a
    proven purge), copies in other files beside it, and advice when the proof failed."""
    namespace: str
    selector: str
    dry_run: bool
    revision_ids: list[int]
    memory_ids: list[str]
    purged_at: str | None = None
    reason: str | None = None
    bytes_scanned: int = 0
    occurrences: int = 0
    files_scanned: list[str] = field(default_factory=list)
    other_files_with_copies: dict[str, int] = field(default_factory=dict)
    wal_checkpoint_blocked: bool = False
    advice: str | None = None
    # With replication set up: the purge carried to the replica, or why it was not.
    replica: "ReplicaPurge | None" = None
    replica_warning: str | None = None
    # The audit IDs of purges this one finished, and of those still unfinished (see
    # ``MemoryStore.purge``); ``proven``: a text was scanned for and found nowhere.
    finished: list[int] = field(default_factory=list)
    unfinished: list[int] = field(default_factory=list)
    proven: bool = False
    # Whether what is unfinished includes a replica's forgetting (then '--replicas' too).
    unfinished_replica: bool = False
    # A dry run's selection that the purge itself would refuse, and why.
    refused: str | None = None
    # Nothing matched in ``namespace``: the other namespaces where the same selection does.
    elsewhere: list[str] = field(default_factory=list)
    # Collections (``namespace/collection: folder``) whose name or folder holds the text:
    # their binding is kept (where the notes are read from), and left out of the proof.
    kept_bindings: list[str] = field(default_factory=list)
    # A note purged only before a time: its later revisions keep its path, so the path
    # stays (the purged revisions keep their IDs) and the proof is of their texts.
    kept_path: bool = False

    RESUME: ClassVar[str] = "no new selection (unfinished purges only)"

    @property
    def resume_only(self) -> bool:
        return self.selector == self.RESUME

    @property
    def resume_command(self) -> str:
        """The command that finishes what is unfinished."""
        return "memory purge --resume" + (" --replicas" if self.unfinished_replica else "")


@dataclass(frozen=True)
class Appended(Record):
    """What was appended after a revision: the newest revision id now, and the notes
    (``COLLECTION/path.md``) those revisions belong to."""
    newest: int
    notes: list[str]


class Checkpoint(NamedTuple):
    """The result of emptying the WAL: ``busy`` when a reader kept it from finishing."""
    busy: bool
    frames_left: int


@dataclass(frozen=True)
class Capabilities(Record):
    """What this installation's SQLite offers. ``fts5``/``vector_error``: None when fine,
    else why not."""
    sqlite: str
    apsw: str
    fts5: str | None
    vector_backend: str | None
    vector_error: str | None
    sqlite_vec_installed: bool
    sqlite_vec_version: str | None
