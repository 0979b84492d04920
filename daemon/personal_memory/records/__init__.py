"""The records the API returns: named, frozen, never dicts. Times are ISO 8601 UTC strings
(see :mod:`personal_memory.times`). Every record has ``to_dict()`` for JSON output, and the
MCP output models are built from these classes, so a renamed field changes every edge at
once."""

from .changes import AnswerCounts, Changes, NoteChange, NoteCounts, ResultChange, SectionChange
from .embeds import Embed
from .notes import (Activity, FolderEntry, FolderListing, Link, Links, Move, NoteTimeline,
                    NoteView, RecentNote, SectionView, TagListing)
from .reports import (Appended, Capabilities, Checkpoint, ClockAnomaly, Counts, DaemonStatus, EmbeddingRun, Health, Problem,
                      PurgeAudit, PurgeReport, SkippedFile, Stats, Status, SyncReport,
                      SyncRun, VectorStatus)
from .reports import ClockRepair, ClockStatus
from .replication import ReplicaPurge, Replication, Restored
from .revisions import (MoreLines, PurgeMark, RevisionRecord, SearchResult, SearchResults, Snippet,
                        WriteResult)

__all__ = ["AnswerCounts", "NoteCounts", "Appended", "Capabilities", "Changes", "Checkpoint", "ClockAnomaly", "Counts", "DaemonStatus", "EmbeddingRun", "Health",
           "Activity", "Embed", "FolderEntry", "FolderListing", "Link", "Links", "Move", "NoteChange", "NoteTimeline",
           "RecentNote", "NoteView", "ReplicaPurge", "Replication", "Restored", "Problem", "PurgeAudit", "PurgeMark",
           "PurgeReport", "ResultChange", "RevisionRecord", "SearchResult", "SearchResults",
           "SectionChange", "SectionView", "SkippedFile", "Snippet", "Stats", "Status", "SyncReport",
           "SyncRun", "VectorStatus", "WriteResult"]
__all__ += ["ClockRepair", "ClockStatus", "MoreLines", "TagListing"]
