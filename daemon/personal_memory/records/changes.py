"""What changed between two cutoffs."""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import Record
from .revisions import RevisionRecord


@dataclass(frozen=True)
class SectionChange(Record):
    """How one memory moved between two cutoffs: ``added`` (not visible at ``since``),
    ``revised`` (another text), ``retracted`` (deleted, renamed away, or no longer valid)."""
    memory_id: str
    change: str
    heading_path: list[str] | None
    known_at: str | None  # when the change became known (None: validity ended by itself)
    before: RevisionRecord | None
    after: RevisionRecord | None
    diff: str = ""  # word-level, for a revision: [-removed-] {+added+}
    moved_from: str | None = None  # the memory's ID before its note moved or heading renamed
    # Why a section was retracted: deleted (its note was), removed (from a note that stays:
    # a section deleted, or renamed to a mostly different text), forgotten (a memory
    # written through the API), purged, or validity ended. For a revision: "heading
    # renamed" (a section removed and one added at the same moment with mostly the same
    # text, paired as one; ``moved_from`` is the old ID).
    why: str | None = None
    # Added or retracted with the parts this package cut from one long section: how many
    # (the first part's ID and text stand for them all).
    parts: int = 1


@dataclass(frozen=True)
class NoteChange(Record):
    """The changes of one note (``note`` None: a memory written through the API, alone).
    ``change``: added, revised, deleted or moved (``moved_from`` the note's old ID)."""
    note: str | None
    title: str | None
    change: str
    latest: str | None  # the newest change's time
    sections: list[SectionChange]
    moved_from: str | None = None
    # What changed in the note's record itself: title, aliases, tags, as [old, new].
    record_changes: dict[str, list] = field(default_factory=dict)


@dataclass(frozen=True)
class ResultChange(Record):
    """One result of a query at two cutoffs: ``new``, ``gone``, ``up``, ``down``,
    ``changed`` (same rank, other text) or ``moved`` (the same, under its note's new
    path); ``impact`` orders them (see data-model.md)."""
    memory_id: str
    note: str | None
    title: str | None
    heading_path: list[str] | None
    change: str
    rank_before: int | None
    rank_after: int | None
    score_before: float | None
    score_after: float | None
    text_changed: bool
    retracted: bool  # gone because it is no longer visible at all
    impact: float
    diff: str
    before: RevisionRecord | None
    after: RevisionRecord | None
    # Why a result is gone: retracted (not visible any more), no longer matches (visible,
    # but no query word and not close in meaning), or below the top N (still a result).
    why: str | None = None
    # The result's ID at ``since`` when its note moved in between (then ``moved`` when its
    # rank and text are the same, else up, down or changed).
    moved_from: str | None = None


@dataclass(frozen=True)
class NoteCounts(Record):
    """How much changed between two cutoffs (without a query): notes (``memories``: those
    written through the API, alone), by what happened to them, and their sections."""
    notes: int = 0
    memories: int = 0
    notes_added: int = 0
    notes_deleted: int = 0
    notes_moved: int = 0
    added: int = 0
    revised: int = 0
    retracted: int = 0


@dataclass(frozen=True)
class AnswerCounts(Record):
    """How a query's results moved between two cutoffs, by kind of change
    (:class:`ResultChange`), and how many stayed the same in text and rank."""
    new: int = 0
    gone: int = 0
    up: int = 0
    down: int = 0
    changed: int = 0
    moved: int = 0
    unchanged: int = 0


@dataclass(frozen=True)
class Changes(Record):
    """What changed between two cutoffs (``since`` excluded, ``until`` included), as ISO
    times. Without a query: ``notes``, newest first, and ``counts``. With one: ``results``
    (what moved the answer most first) and ``unchanged`` (IDs same in text and rank)."""
    namespace: str
    since: str
    until: str
    query: str | None
    counts: NoteCounts | AnswerCounts
    notes: list[NoteChange] = field(default_factory=list)
    results: list[ResultChange] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    offset: int = 0  # notes skipped (a later page of the same comparison)
    more: int = 0  # notes (and memories of the API) after this page
