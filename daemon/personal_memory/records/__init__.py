"""The records the API returns: named, frozen, never dicts. Times are ISO 8601 UTC strings
(see :mod:`personal_memory.times`). Every record has ``to_dict()`` for JSON output, and the
MCP output models are built from these classes, so a renamed field changes every edge at
once."""

from .changes import Changes, NoteChange, ResultChange, SectionChange
from .notes import Move, NoteView, SectionView
from .reports import (Capabilities, Checkpoint, ClockAnomaly, Counts, DaemonStatus, EmbeddingRun, Health, Problem,
                      PurgeAudit, PurgeReport, SkippedFile, Stats, Status, SyncReport,
                      SyncRun, VectorStatus)
from .revisions import (PurgeMark, RevisionRecord, SearchResult, SearchResults,
                        WriteResult)

__all__ = ["Capabilities", "Changes", "Checkpoint", "ClockAnomaly", "Counts", "DaemonStatus", "EmbeddingRun", "Health",
           "Move", "NoteChange", "NoteView", "Problem", "PurgeAudit", "PurgeMark",
           "PurgeReport", "ResultChange", "RevisionRecord", "SearchResult", "SearchResults",
           "SectionChange", "SectionView", "SkippedFile", "Stats", "Status", "SyncReport",
           "SyncRun", "VectorStatus", "WriteResult"]
