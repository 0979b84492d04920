"""personal-memory: a local, point-in-time memory of your notes for assistants.

The names below are imported on first use, so that ``personal_memory.cli`` starts without
numpy and can set the thread pools first."""

from .errors import PersonalMemoryError
from .version import __version__

__all__ = ["MemoryStore", "RevisionRecord", "SearchResult", "SearchResults",
           "PersonalMemoryError", "__version__"]


def __getattr__(name: str):
    if name == "MemoryStore":
        from .memory import MemoryStore
        return MemoryStore
    if name in ("RevisionRecord", "SearchResult", "SearchResults"):
        from . import records
        return getattr(records, name)
    raise AttributeError(f"module 'personal_memory' has no attribute {name!r}")
