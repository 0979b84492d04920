"""personal-memory: a local, point-in-time memory of your notes for assistants."""

from .errors import PersonalMemoryError
from .memory import MemoryStore, RevisionRecord
from .search import SearchResult

__all__ = ["MemoryStore", "RevisionRecord", "SearchResult", "PersonalMemoryError"]
__version__ = "0.1.0"
