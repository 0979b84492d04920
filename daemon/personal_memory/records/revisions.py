"""A revision as every reader sees it, the result of a write, and search results."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from .base import Record
from .embeds import Embed


@dataclass(frozen=True)
class PurgeMark(Record):
    """When a revision was erased by ``memory purge``, and why (its text is gone)."""
    at: str
    reason: str | None


@dataclass(frozen=True)
class RevisionRecord(Record):
    """One stored revision (a tombstone when ``deleted``; a stub when ``purged``)."""
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
    purged: PurgeMark | None = None
    # history only: on a tombstone its note's move wrote, the ID the memory has after the
    # move (the note's new path when no section there kept this heading path)
    moved_to: str | None = None

    @property
    def hidden(self) -> bool:
        """Whether this revision, as a memory's winner, hides the memory: a tombstone or a
        purged stub. (The same rule in SQL: ``store.visibility.HIDDEN``.)"""
        return self.deleted or self.purged is not None

    @property
    def section(self) -> str:
        """The section it belongs to: the first part's memory ID for a part this package
        cut from a long section (recorded as ``part_of`` when the note was split), else its
        own ID. A heading the user wrote as "Lecture (part 2)" is a section of its own."""
        part_of = (self.metadata or {}).get("part_of") if self.note is not None else None
        return part_of if isinstance(part_of, str) else self.memory_id

    def but(self, **changes: Any) -> "RevisionRecord":
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Its fields; ``moved_to`` only where history set it (an export or a search
        result carries no such field)."""
        out = super().to_dict()
        if out.get("moved_to") is None:
            out.pop("moved_to", None)
        return out


_REVISION_FIELDS = frozenset(f.name for f in fields(RevisionRecord))


class _Revision:
    """Read the revision's fields on the wrapper directly (``result.content``)."""

    revision: RevisionRecord

    def __getattr__(self, name: str) -> Any:
        if name in _REVISION_FIELDS:
            return getattr(self.revision, name)
        raise AttributeError(name)


@dataclass(frozen=True)
class WriteResult(_Revision, Record):
    """What a write did: the revision it appended (or the identical one it found, with
    ``created`` False), and whether that revision is now the memory's current one. A
    backdated write (``known_at`` before the memory's newest revision) is stored but not
    current: ``newer`` is the revision that still wins now."""
    revision: RevisionRecord
    created: bool
    current: bool = True
    newer: RevisionRecord | None = None


@dataclass(frozen=True)
class Snippet(Record):
    """The lines of a result that best match the query (words found marked ``**so**``),
    and where they are in the note's file (1-based, inclusive; None for a memory that is
    not part of a note)."""
    text: str
    line_start: int | None
    line_end: int | None


@dataclass(frozen=True)
class MoreLines(Record):
    """Another matching section of a result's note (or another part of its section),
    shown with the result: its memory ID, headings and snippet."""
    memory_id: str
    heading_path: list[str] | None
    snippet: Snippet


@dataclass(frozen=True)
class SearchResult(_Revision, Record):
    """A visible revision with its fused score and the two components' scores and ranks.
    The revision's fields can be read directly (``result.content``)."""
    revision: RevisionRecord
    score: float
    bm25: float | None
    bm25_rank: int | None
    cosine: float | None
    cosine_rank: int | None
    snippet: Snippet | None = None  # with search(snippets=True)
    embedded_in: tuple[str, ...] = ()  # with snippets: notes that embed this section then
    # When other parts of the same long section also matched (merged into this result):
    # the lines of their snippets.
    also: tuple[tuple[int, int], ...] = ()
    # With snippets: what the snippet's lines embed (``![[note#^block]]``), read through at
    # the same cutoff, as the note shows it.
    embeds: tuple[Embed, ...] = ()
    # The lines of the section's text (1-based, inclusive) of the piece (a paragraph, a
    # list, a group of table rows) most similar to the query; None without a vector.
    matched_lines: tuple[int, int] | None = None
    # With snippets, on the first result: the snippets of the next-best matching sections
    # of its note (their lines are not repeated in ``also``).
    more: tuple[MoreLines, ...] = ()
    # What the score gained for being about a period the query names (a daily note of
    # the day asked about: ranking.DATED_NOTE), else 0.
    dated: float = 0.0
    # What the score gained from the best results that link to its note (ranking.linked),
    # else 0.
    linked: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """One flat mapping: the revision's fields, the scores, and the snippet if any."""
        out = self.revision.to_dict()
        out.update(score=self.score, bm25=self.bm25, bm25_rank=self.bm25_rank,
                   cosine=self.cosine, cosine_rank=self.cosine_rank, dated=self.dated,
                   linked=self.linked,
                   matched_lines=list(self.matched_lines) if self.matched_lines else None)
        if self.snippet is not None:
            out["snippet"] = self.snippet.to_dict()
            out["embedded_in"] = list(self.embedded_in)
        if self.also:
            out["also"] = [list(span) for span in self.also]
        if self.more:
            out["more"] = [m.to_dict() for m in self.more]
        if self.embeds:
            out["embeds"] = [e.to_dict() for e in self.embeds]
        return out


class SearchResults(list):
    """The ranked results of one search (a list), with the times it resolved: ``as_of``
    (None: everything known) and ``valid_at``, as ISO 8601 strings; ``semantic``, the model
    whose vectors ranked it (None: keyword-only); ``unembedded``, how many visible memories
    had no vector yet (ranked by keywords alone); ``no_answer``, why the list is empty when
    nothing matched; ``left_out``, how many rows the limit would also have held that share
    no word with the query and are less similar in meaning than the no-answer bar (noise
    that would only pad the list); ``earliest``, when nothing was known yet at the cutoff,
    the time the namespace's first knowledge arrived (None when it holds none);
    ``warnings``, lines about the query itself, such as a folder filter that names no
    folder known at the cutoff; ``missing``, the query's words (as typed) that no visible
    memory holds, when there are results: they match its other words or its meaning.
    ``known_up_to``, on a replica, the newest knowledge it holds (None on the database
    itself): a cutoff after it may miss what the database learned since."""

    def __init__(self, results=(), *, as_of: str | None, valid_at: str,
                 semantic: str | None = None, unembedded: int = 0,
                 no_answer: str | None = None, left_out: int = 0,
                 earliest: str | None = None, warnings: list[str] | None = None,
                 known_up_to: str | None = None, missing: list[str] | None = None):
        super().__init__(results)
        self.warnings = list(warnings or ())
        self.missing = list(missing or ()) if self else []
        self.as_of = as_of
        self.valid_at = valid_at
        self.semantic = semantic
        self.unembedded = unembedded
        self.no_answer = no_answer
        self.left_out = left_out
        self.earliest = earliest
        self.known_up_to = known_up_to

    def to_dict(self) -> dict[str, Any]:
        """For JSON: what the search resolved and said, and ``results``, each result's own
        mapping (``memory search --json``)."""
        return {"as_of": self.as_of, "valid_at": self.valid_at, "semantic": self.semantic,
                "unembedded": self.unembedded, "no_answer": self.no_answer,
                "left_out": self.left_out, "earliest": self.earliest,
                "warnings": self.warnings, "missing": self.missing,
                "known_up_to": self.known_up_to, "results": [r.to_dict() for r in self]}
