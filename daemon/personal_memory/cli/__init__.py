"""The ``memory`` command: an edge over :class:`MemoryStore`."""

from .app import main

__all__ = ["main"]
