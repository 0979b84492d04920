"""An embed as read at a cutoff: one home for the record a note's view and a search
result both carry."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Record


@dataclass(frozen=True)
class Embed(Record):
    """An embed in a note read at a cutoff, with the embedded text as known then."""
    section: str  # the embedding section's memory ID
    line: int | None  # its line in the file
    target: str  # as written
    kind: str
    note: str | None
    source: str | None  # the embedded section's memory ID (None: the whole note)
    known_at: str | None
    text: str  # empty when it does not resolve
