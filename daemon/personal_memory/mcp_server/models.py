"""What the MCP tools return: output models built from the API's records, so their JSON
schemas follow the records (a renamed field changes the schema, and fails a test)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..records import Changes, NoteView, RevisionRecord, SearchResult, Status, WriteResult

TIME_HELP = ("ISO 8601: YYYY-MM-DD (midnight UTC) or a timestamp with a zone, "
             "e.g. 2025-02-01T09:30:00Z")


class SearchOutput(BaseModel):
    namespace: str
    query: str
    as_of: str | None = Field(description="knowledge cutoff used; null means everything known")
    valid_at: str = Field(description="the time the answer is about")
    count: int
    unembedded: int = Field(0, description="visible memories without a vector yet, ranked "
                            "by keywords alone")
    hint: str | None = Field(None, description="why there are no results, when there are none")
    results: list[SearchResult] = Field(
        description="best first; each holds the revision (content, title, source, times, "
        "provenance with the note's path) and its scores: the fused score, BM25 (keyword, "
        "higher is better) and cosine, with their ranks")


class ReadOutput(BaseModel):
    note: NoteView = Field(description="the note as known at the cutoff: title, aliases, "
                           "tags, links, its sections in document order (memory ID, heading "
                           "path, line span, revision and time, text) and the whole text; "
                           "deleted is true when the note had been deleted by then; "
                           "path_then is its path at the cutoff when it has moved since")


class ChangesOutput(BaseModel):
    changes: Changes = Field(description="since and until as absolute times; without a "
                             "query the notes that changed, newest first, each with its "
                             "sections added, revised (diff: [-removed-] {+added+}) or "
                             "retracted, and notes moved; with a query the results that "
                             "moved, most first, and the IDs of those unchanged")


class HistoryOutput(BaseModel):
    namespace: str
    memory_id: str
    as_of: str | None
    revisions: list[RevisionRecord] = Field(description="oldest first; tombstones have "
                                            "deleted true; a purged revision has purged "
                                            "(when and why) and no text")


class WriteOutput(BaseModel):
    result: WriteResult = Field(description="the revision; created is false when an "
                                "identical revision already existed")


class StatusOutput(BaseModel):
    writes_enabled: bool
    status: Status = Field(description="counts; search and vectors (pending, rate, ETA); "
                           "the sync daemon: running or not, last sync, files indexed, and "
                           "problems: notes or folders that could not be imported, until "
                           "they can")
