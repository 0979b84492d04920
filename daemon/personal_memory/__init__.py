"""personal-memory: a local, point-in-time memory of your notes for assistants."""

from .errors import PersonalMemoryError
from .memory import MemoryStore
from .records import RevisionRecord, SearchResult, SearchResults
from .version import __version__

__all__ = ["MemoryStore", "RevisionRecord", "SearchResult", "SearchResults",
           "PersonalMemoryError", "__version__"]
