"""The pieces of a section that the semantic model reads: a long section is matched by its
best paragraph, not by one vector of everything in it (a vector of a long section is the
average of its topics and close to none of them). Each piece is read with the section's
title (the note's title and heading path), so a paragraph keeps its context.

Pieces are blocks between blank lines (a fenced code block stays whole, blank lines and
all); a table is cut into groups of rows, each with the table's header; a block too
short to mean much alone (a lead-in line, a lone heading) joins the next. A short section
is one piece: exactly the passage of the whole section. Linear in the text.
"""

from __future__ import annotations

from typing import NamedTuple

from ..notes.links import fenced
from .models import passage_text as _passage

SHORT_SECTION_CHARS = 400  # a section this short (without its heading) is one piece
MIN_PIECE_CHARS = 120  # a block shorter than this joins the next one
TABLE_ROWS = 8  # table rows per piece (each with the header)
MAX_PIECES = 64  # a huge section: its first pieces, the rest joined into the last


class Piece(NamedTuple):
    """One passage the model reads, and the lines of the section's text it covers
    (1-based, inclusive)."""
    text: str
    first_line: int
    last_line: int


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) 0-based line ranges of the blocks between blank lines, a fenced code
    block kept whole."""
    code = fenced(lines)
    out: list[tuple[int, int]] = []
    start = None
    for i, line in enumerate(lines):
        blank = not line.strip() and not code[i]
        if blank:
            if start is not None:
                out.append((start, i - 1))
                start = None
        elif start is None:
            start = i
    if start is not None:
        out.append((start, len(lines) - 1))
    return out


def _is_table(lines: list[str], first: int, last: int) -> bool:
    return last - first >= 2 and all(lines[i].lstrip().startswith("|")
                                     for i in range(first, last + 1))


def _split_tables(lines: list[str], blocks: list[tuple[int, int]]) -> list[tuple]:
    """Blocks as (first, last, header lines): a long table becomes groups of rows that
    each carry the header (its first two lines)."""
    out: list[tuple] = []
    for first, last in blocks:
        if _is_table(lines, first, last) and last - first + 1 > TABLE_ROWS + 2:
            header = (first, first + 1)
            out.append((first, first + 1 + TABLE_ROWS, None))  # the header's own lines
            for at in range(first + 2 + TABLE_ROWS, last + 1, TABLE_ROWS):
                out.append((at, min(at + TABLE_ROWS - 1, last), header))
        else:
            out.append((first, last, None))
    return out


def pieces(title: str | None, content: str) -> list[Piece]:
    """The passages of one section, in order; one piece (the whole passage) for a short
    section or one with a single block."""
    lines = content.split("\n")
    whole = [Piece(_passage(title, content), 1, len(lines))]
    body_start = 1 if lines and lines[0].startswith("#") else 0  # its heading is the title's
    body = "\n".join(lines[body_start:]).strip()
    if len(body) <= SHORT_SECTION_CHARS:
        return whole
    blocks = _split_tables(lines, [(a + body_start, b + body_start)
                                   for a, b in _blocks(lines[body_start:])])
    if len(blocks) < 2:
        return whole
    groups: list[list[tuple]] = []
    pending: list[tuple] = []
    for block in blocks:
        pending.append(block)
        size = sum(len(lines[i]) for f, la, _ in pending for i in range(f, la + 1))
        if size >= MIN_PIECE_CHARS:
            groups.append(pending)
            pending = []
    if pending:
        if groups:
            groups[-1].extend(pending)
        else:
            groups.append(pending)
    if len(groups) > MAX_PIECES:
        groups = groups[:MAX_PIECES - 1] + [[b for g in groups[MAX_PIECES - 1:] for b in g]]
    if len(groups) < 2:
        return whole
    out = []
    for group in groups:
        parts = []
        for first, last, header in group:
            if header is not None:
                parts.append("\n".join(lines[header[0]:header[1] + 1]))
            parts.append("\n".join(lines[first:last + 1]))
        out.append(Piece(_passage(title, "\n\n".join(parts)), group[0][0] + 1,
                         group[-1][1] + 1))
    return out
