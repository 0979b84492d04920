"""What the MCP tools return. Compact by default: what an assistant needs to answer and to
cite (a place in a note, the lines that matched, when it was known); the API's full
records with ``detail: "full"``. The models are built from the records, so their JSON
schemas follow them (a renamed field changes the schema, and fails a test)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .. import render
from ..records import (Changes, Embed, Link, NoteView, RevisionRecord, SearchResult,
                       SearchResults, Status, TagListing)

def _untitled(schema: dict, cls=None) -> None:
    """No generated titles in the schemas: they repeat each field's name (a third of
    tools/list)."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


def compact_schema(schema):
    """A JSON schema said once: no generated titles, ``anyOf [X, null]`` as a type list,
    no ``default: null`` (a missing optional is null anyway). Equivalent for validation;
    tools/list is what every client loads into its context."""
    if isinstance(schema, list):
        return [compact_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        out[key] = value if key in ("properties", "$defs") else compact_schema(value)
    for key in ("properties", "$defs"):
        if isinstance(out.get(key), dict):
            out[key] = {k: compact_schema(v) for k, v in out[key].items()}
    options = out.get("anyOf")
    if (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
        other = next(o for o in options if o != {"type": "null"})
        # a type's own keywords (maxLength, items) do not apply to null: merge them
        if isinstance(other.get("type"), str) and not set(other) & set(out) - {"anyOf"}:
            del out["anyOf"]
            out.update(other, type=[other["type"], "null"])
    return out


def plain_optionals(schema: dict) -> dict:
    """A tool's compact input schema with its optional arguments' ``null`` left out:
    leaving one out means none already, and function-calling APIs that take one type per
    field (Gemini's) refuse a whole tool list over ``type: [string, null]``. A client that
    sends null anyway is still answered: the arguments are validated by the tool's own
    signature."""
    required = set(schema.get("required", ()))
    props = {}
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        if name not in required and isinstance(kind, list) and "null" in kind:
            rest = [k for k in kind if k != "null"]
            prop = {**prop, "type": rest[0] if len(rest) == 1 else rest}
        props[name] = prop
    return {**schema, "properties": props} if "properties" in schema else schema


class Out(BaseModel):
    model_config = ConfigDict(json_schema_extra=_untitled)


TIME_HELP = "a timestamp with a zone (2025-02-01T09:30:00Z) or a day (YYYY-MM-DD, UTC)"


class Positioned(Out):
    known_up_to: str | None = None  # on a replica: the newest knowledge it holds


class EmbeddedText(Out):
    source: str = Field(description="the embedded section or note")
    text: str = Field(description="its text then (at most 300 characters)")


class MoreOut(Out):
    heading_path: list[str] = Field(default_factory=list)
    line_start: int | None = None
    line_end: int | None = None
    snippet: str


class Hit(Out):
    memory_id: str | None = Field(None, description="omitted when it is the note and "
                                  "'#' before each heading of heading_path")
    note: str | None = Field(None, description="COLLECTION/path.md of the note, if any")
    title: str | None = Field(None, description="omitted when it is the note's file name "
                              "without .md")
    heading_path: list[str] = Field(default_factory=list)
    line_start: int | None = Field(None, description="first line of the snippet in the "
                                   "note's file")
    line_end: int | None = None
    snippet: str = Field(description="the lines that best match, words found in **bold**")
    known_at: str
    score: float
    embedded_in: list[str] = Field(default_factory=list,
                                   description="notes that embed this section then")
    also: list[str] = Field(default_factory=list, description="lines where the note's "
                            "other sections (or parts) matched too")
    embeds: list[EmbeddedText] = Field(default_factory=list, description="what the "
                                       "snippet's lines embed, read through")
    more: list[MoreOut] = Field(default_factory=list, description="first result: the "
                                "note's next-best matching sections")

    @classmethod
    def of(cls, r: SearchResult) -> "Hit":
        s = r.snippet
        path = r.heading_path or []
        usual = r.note is not None and r.memory_id == r.note + "".join("#" + h for h in path)
        return cls(memory_id=None if usual else r.memory_id, note=r.note,
                   title=None if render.named_by_file(r) else r.title,
                   heading_path=path,
                   line_start=s.line_start if s else None, line_end=s.line_end if s else None,
                   snippet=s.text if s else r.content[:300], known_at=r.known_at,
                   score=round(r.score, 3), embedded_in=list(r.embedded_in),
                   also=[render.span(a, b) for a, b in r.also],
                   more=[MoreOut(heading_path=m.heading_path or [],
                                 line_start=m.snippet.line_start,
                                 line_end=m.snippet.line_end, snippet=m.snippet.text)
                         for m in r.more],
                   embeds=[EmbeddedText(source=e.source or e.note or e.target,
                                        text=render.embedded(e.text)) for e in r.embeds])


class SearchOutput(Positioned):
    query: str
    as_of: str | None = Field(description="the cutoff used; null: everything known")
    valid_at: str = Field(description="the time the answer is about")
    count: int
    unembedded: int = Field(0, description="memories without a vector yet, ranked by "
                            "keywords alone")
    hint: str | None = Field(None, description="why there are no results")
    left_out: int = Field(0, description="places left empty: no word of the query, not "
                          "close in meaning")
    warnings: list[str] = Field([], description="about the query (a folder filter "
                                "naming no folder)")
    missing: list[str] = Field([], description="query words no result holds")
    results: list[Hit] = Field(description="best first")
    full: list[dict[str, Any]] | None = Field(
        None, description="with detail=full: each result's record and scores (the API's "
        "SearchResult)")

    @classmethod
    def of(cls, query: str, found: SearchResults, hint: str | None,
           full: bool) -> "SearchOutput":
        return cls(query=query, as_of=found.as_of, valid_at=found.valid_at, count=len(found),
                   unembedded=found.unembedded, hint=hint, left_out=found.left_out,
                   warnings=list(found.warnings), missing=list(found.missing),
                   results=[Hit.of(r) for r in found],
                   known_up_to=found.known_up_to,
                   full=[r.to_dict() for r in found] if full else None)

    @classmethod
    def tagged(cls, query: str, listing: TagListing) -> "SearchOutput":
        """A query of tags alone: the notes that have them, by path, unranked."""
        tags = ", ".join(f"#{t}" for t in listing.tags)
        return cls(query=query, as_of=listing.as_of, valid_at=listing.valid_at,
                   count=len(listing.notes),
                   hint=(f"No words to rank by: the notes tagged {tags}, by path"
                         + (f" ({listing.more} more not shown)" if listing.more else "")
                         + ". Add words to the query to rank them."),
                   results=[Hit(note=e.note, title=e.title, snippet="", known_at=e.known_at,
                                score=0.0) for e in listing.notes])


class Section(Out):
    memory_id: str
    heading_path: list[str]
    line_start: int
    line_end: int
    revision_id: int
    known_at: str


class ReadOutput(Positioned):
    note: str
    title: str | None
    as_of: str | None
    known_at: str = Field(description="when the note (its record or a section) last "
                          "changed, or was deleted, by then")
    deleted: bool
    path_then: str | None = Field(description="its path at the cutoff, when it has moved "
                                  "since (read under it)")
    moved_to: str | None = Field(None, description="deleted by moving away: the note's "
                                 "path after the move (read it there)")
    aliases: list[str]
    tags: list[str]
    links: list[str]
    sections: list[Section] | None = Field(None, description="with outline: in document "
                                           "order, with their line spans")
    line_start: int = Field(description="the first line of text returned")
    line_end: int
    text: str = Field(description="the note (or the asked section or lines), once")
    embeds: list[Embed] = Field(description="what the note embeds, read at the same "
                                "cutoff")

    @classmethod
    def of(cls, view: NoteView, first: int, last: int, text: str,
           outline: bool) -> "ReadOutput":
        return cls(note=view.note, title=view.title, as_of=view.as_of,
                   known_at=view.changed_at,
                   deleted=view.deleted, path_then=view.path_then,
                   moved_to=view.moved_to.new_note if view.moved_to else None,
                   aliases=view.aliases,
                   tags=view.tags, links=view.links,
                   sections=[Section(memory_id=s.memory_id, heading_path=s.heading_path,
                                     line_start=s.line_start, line_end=s.line_end,
                                     revision_id=s.revision_id, known_at=s.known_at)
                             for s in view.sections] if outline else None,
                   line_start=first, line_end=last, text=text,
                   embeds=[e for e in view.embeds if e.line is None or first <= e.line <= last])


class LinksOutput(Positioned):
    note: str
    as_of: str | None
    outgoing: list[Link] = Field(description="the note's links then")
    backlinks: list[Link] = Field(description="the notes that linked to it then")
    deleted: bool = False


class SectionChangeOut(Out):
    memory_id: str
    change: str = Field(description="added, revised or retracted")
    why: str | None = Field(description="for a retraction: deleted, removed, forgotten, "
                            "purged or validity ended; for a revision: heading renamed")
    heading_path: list[str] | None
    known_at: str | None
    diff: str = Field(description="word-level: [-removed-] {+added+}")
    moved_from: str | None


EXCERPT_CHARS = 150  # a page's excerpt of a note's first change
PAGE_HEADINGS = 3  # sections named per note on a page


def excerpt(diff: str) -> str | None:
    """The first change of a word-level diff, with a little context before it."""
    if not diff:
        return None
    marks = [i for i in (diff.find("[-"), diff.find("{+")) if i >= 0]
    start = max(0, min(marks, default=0) - 40)
    piece = diff[start:start + EXCERPT_CHARS]
    if start:
        piece = "… " + piece.lstrip(" …")
    if start + EXCERPT_CHARS < len(diff):
        piece = piece.rstrip(" …") + " …"
    return piece


def heading(s, in_note: bool) -> str:
    """A changed section as a page names it: its headings, or its ID outside notes."""
    return " › ".join(s.heading_path or []) or ("(top)" if in_note else s.memory_id)


class NoteChangeOut(Out):
    note: str | None
    title: str | None
    change: str = Field(description="added, revised, deleted or moved")
    latest: str | None
    moved_from: str | None
    record_changes: dict[str, list] = Field(
        description="title, aliases, tags, properties: [old, new]")
    counts: dict[str, int] = Field({}, description="its sections added, revised, retracted")
    changed: list[str] = Field([], description="on a page: the first sections changed "
                               f"(at most {PAGE_HEADINGS}), by heading")
    excerpt: str | None = Field(None, description="on a page: the first change, in short")
    sections: list[SectionChangeOut] = Field([], description="with note: each section's "
                                             "change and diff")

    @classmethod
    def of(cls, n, sections: bool) -> "NoteChangeOut":
        counts: dict[str, int] = {}
        for s in n.sections:
            counts[s.change] = counts.get(s.change, 0) + 1
        first = next((s.diff for s in n.sections if s.diff), "")
        return cls(note=n.note, title=n.title, change=n.change, latest=n.latest,
                   moved_from=n.moved_from, record_changes=n.record_changes, counts=counts,
                   changed=[] if sections else list(dict.fromkeys(
                       heading(s, n.note is not None) for s in n.sections))[:PAGE_HEADINGS],
                   excerpt=None if sections else excerpt(first),
                   sections=[SectionChangeOut(
                       memory_id=s.memory_id, change=s.change, why=s.why,
                       heading_path=s.heading_path, known_at=s.known_at, diff=s.diff,
                       moved_from=s.moved_from) for s in n.sections] if sections else [])


class ResultChangeOut(Out):
    memory_id: str
    note: str | None
    change: str = Field(description="new, gone, up, down, changed or moved")
    why: str | None = Field(description="for gone: retracted, no longer matches, or below "
                            "the top N")
    moved_from: str | None
    rank_before: int | None
    rank_after: int | None
    text_changed: bool
    diff: str


class ChangesOutput(Positioned):
    since: str
    until: str
    query: str | None
    counts: dict[str, int]
    notes: list[NoteChangeOut]
    results: list[ResultChangeOut]
    unchanged: list[str]
    more: int = Field(description="notes after this page")
    next_cursor: str | None = Field(description="pass as cursor for the next page")
    full: dict[str, Any] | None = Field(None, description="with detail=full: the "
                                        "Python API's Changes, revisions included")

    @classmethod
    def of(cls, c: Changes, cursor: str | None, full: bool,
           sections: bool = True) -> "ChangesOutput":
        """``sections``: each note's sections with their diffs (one note asked for);
        else a page: each note's counts, first headings and an excerpt."""
        return cls(
            since=c.since, until=c.until, query=c.query, counts=c.counts.to_dict(),
            notes=[NoteChangeOut.of(n, sections) for n in c.notes],
            results=[ResultChangeOut(memory_id=r.memory_id, note=r.note, change=r.change,
                                     why=r.why, rank_before=r.rank_before,
                                     rank_after=r.rank_after, text_changed=r.text_changed,
                                     diff=r.diff, moved_from=r.moved_from)
                     for r in c.results],
            unchanged=c.unchanged, more=c.more, next_cursor=cursor,
            full=c.to_dict() if full else None)


class RevisionOut(Out):
    revision_id: int
    memory_id: str
    known_at: str
    valid_from: str
    valid_to: str | None
    deleted: bool
    purged_at: str | None
    purge_reason: str | None
    moved_to: str | None
    content: str

    @classmethod
    def of(cls, r: RevisionRecord) -> "RevisionOut":
        return cls(revision_id=r.revision_id, memory_id=r.memory_id, known_at=r.known_at,
                   valid_from=r.valid_from, valid_to=r.valid_to, deleted=r.deleted,
                   purged_at=r.purged.at if r.purged else None,
                   purge_reason=r.purged.reason if r.purged else None,
                   moved_to=r.moved_to, content=r.content)


class HistoryOutput(Positioned):
    memory_id: str
    as_of: str | None
    revisions: list[RevisionOut] = Field(description="oldest first; tombstones: deleted "
                                         "true (moved_to: the ID after a move); purged "
                                         "ones: purged_at, no text")
    full: list[dict[str, Any]] | None = Field(None, description="with detail=full: the "
                                              "whole revisions (the API's RevisionRecord)")


class WriteOutput(Out):
    memory_id: str
    revision_id: int
    known_at: str
    created: bool = Field(description="false when an identical revision already existed")
    deleted: bool


class StatusOutput(Out):
    writes_enabled: bool
    status: dict[str, Any] = Field(description="the API's Status record: namespace; counts "
                                   "(revisions, memories, notes, tombstones); vectors "
                                   "(semantic, embedder, pending_vectors, "
                                   "embedding_per_second, eta_seconds); daemon "
                                   "(daemon_running, daemon_state, last_sync_status, "
                                   "last_successful_sync_at, files_indexed, problems: what "
                                   "cannot be imported); clock (now, "
                                   "newest_known_at, behind_seconds: this machine's clock "
                                   "behind the newest revision, memories_to_repair and "
                                   "notes_to_repair: what 'memory repair-clock' fixes)")
