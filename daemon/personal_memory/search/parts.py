"""A long section is stored as several parts (``H (part 2)``, ``H (part 3)``); a search
that finds several of them answers with one result for the section: its best-ranked
part, naming where the other parts matched."""

from __future__ import annotations

import re
from dataclasses import replace

from ..records import SearchResult, SearchResults

_PART = re.compile(r"(?: \(part \d+\)|#\(part \d+\))$")


def section_of(memory_id: str, note: str | None) -> str:
    """The section a part belongs to: its first part's ID (the note's top for the parts
    of the text before the first heading)."""
    if note is None:
        return memory_id
    base = _PART.sub("", memory_id)
    return base if base else note


def merge_parts(results: list[SearchResult], limit: int) -> list[SearchResult]:
    """The results with each section's parts merged into its best-ranked part (in rank
    order), ``also`` holding the other parts' snippet lines; at most ``limit``."""
    kept: dict[str, SearchResult] = {}
    for r in results:
        key = section_of(r.memory_id, r.note)
        first = kept.get(key)
        if first is None:
            if len(kept) == limit:
                continue
            kept[key] = r
            continue
        s = r.snippet
        if s is not None and s.line_start is not None:
            kept[key] = replace(first, also=first.also + ((s.line_start, s.line_end),))
    return list(kept.values())


def merged(found: SearchResults, limit: int) -> SearchResults:
    """``found`` (searched with room to spare) with parts merged, cut to ``limit``."""
    out = SearchResults(merge_parts(found, limit), as_of=found.as_of,
                        valid_at=found.valid_at)
    out.__dict__.update({k: v for k, v in found.__dict__.items()})
    return out
