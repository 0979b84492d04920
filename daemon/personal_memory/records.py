"""The records the API returns: one revision shape, and search results composed of it.
Pure data; times are ISO 8601 UTC strings (see :mod:`times`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any


@dataclass(frozen=True)
class RevisionRecord:
    """One stored revision (a tombstone when ``deleted``), as every reader sees it."""
    revision_id: int
    namespace: str
    memory_id: str
    known_at: str
    valid_from: str
    valid_to: str | None
    deleted: bool
    hides_revision: int | None
    title: str | None
    content: str
    source: str | None
    provenance: dict | None
    content_hash: str
    note: str | None = None  # COLLECTION/path.md of the note it belongs to, if any
    heading_path: list[str] | None = None  # a note section's enclosing headings and its own
    metadata: dict | None = None  # tags, links, line count; a note record's sections
    created: bool = True  # False when a write found an identical revision and added nothing

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def but(self, **changes: Any) -> "RevisionRecord":
        return replace(self, **changes)


_REVISION_FIELDS = frozenset(f.name for f in fields(RevisionRecord))


@dataclass(frozen=True)
class SearchResult:
    """A visible revision with its fused score and the two components' scores and ranks.
    The revision's fields can be read directly (``result.content``)."""
    revision: RevisionRecord
    score: float
    bm25: float | None
    bm25_rank: int | None
    cosine: float | None
    cosine_rank: int | None

    def __getattr__(self, name: str) -> Any:
        if name in _REVISION_FIELDS:
            return getattr(self.revision, name)
        raise AttributeError(name)

    def to_dict(self) -> dict[str, Any]:
        """One flat mapping: the revision's fields (without ``created``) and the scores."""
        out = self.revision.to_dict()
        out.pop("created")
        out.update(score=self.score, bm25=self.bm25, bm25_rank=self.bm25_rank,
                   cosine=self.cosine, cosine_rank=self.cosine_rank)
        return out


class SearchResults(list):
    """The ranked results of one search (a list), with the times it resolved: ``as_of``
    (None: everything known) and ``valid_at``, as ISO 8601 strings; ``semantic``, the model
    whose vectors ranked it (None: keyword-only); ``unembedded``, how many visible memories
    had no vector yet (ranked by keywords alone); ``no_answer``, why the list is empty when
    nothing matched."""

    def __init__(self, results=(), *, as_of: str | None, valid_at: str,
                 semantic: str | None = None, unembedded: int = 0,
                 no_answer: str | None = None):
        super().__init__(results)
        self.as_of = as_of
        self.valid_at = valid_at
        self.semantic = semantic
        self.unembedded = unembedded
        self.no_answer = no_answer


@dataclass(frozen=True)
class NoteSection:
    """One section of a note as read: where it sits in the note and which revision it is."""
    memory_id: str
    heading_path: list[str]
    line_start: int  # 1-based, inclusive, in the note as reassembled
    line_end: int
    revision_id: int
    known_at: str
    content: str


@dataclass(frozen=True)
class NoteView:
    """A whole note as known at ``as_of`` (None: everything known). A note deleted by
    then has ``deleted`` set, ``known_at`` the time of its deletion, and nothing else."""
    note: str
    namespace: str
    as_of: str | None
    deleted: bool
    known_at: str  # when the note (its record) last changed, or was deleted
    title: str | None
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    dates: dict[str, str] = field(default_factory=dict)
    front_matter: str = ""
    sections: list[NoteSection] = field(default_factory=list)
    text: str = ""
    model: str = "sections"  # "numbered chunks": stored by the previous note model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SectionChange:
    """How one memory moved between two cutoffs: ``added`` (not visible at ``since``),
    ``revised`` (another text), ``retracted`` (deleted, renamed away, or no longer valid)."""
    memory_id: str
    change: str
    heading_path: list[str] | None
    known_at: str | None  # when the change became known (None: validity ended by itself)
    before: RevisionRecord | None
    after: RevisionRecord | None
    diff: str = ""  # word-level, for a revision: [-removed-] {+added+}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NoteChange:
    """The changes of one note (``note`` None: a memory written through the API, alone)."""
    note: str | None
    title: str | None
    change: str  # added, revised or deleted
    latest: str | None  # the newest change's time
    sections: list[SectionChange]


@dataclass(frozen=True)
class ResultChange:
    """One result of a query at two cutoffs: ``new``, ``gone``, ``up``, ``down`` or
    ``changed`` (same rank, other text); ``impact`` orders them (see data-model.md)."""
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


@dataclass(frozen=True)
class Changes:
    """What changed between two cutoffs (``since`` excluded, ``until`` included), as ISO
    times. Without a query: ``notes``, newest first, and ``counts``. With one: ``results``
    (what moved the answer most first) and ``unchanged`` (IDs same in text and rank)."""
    namespace: str
    since: str
    until: str
    query: str | None
    counts: dict[str, int]
    notes: list[NoteChange] = field(default_factory=list)
    results: list[ResultChange] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
