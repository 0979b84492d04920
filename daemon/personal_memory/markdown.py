"""Markdown notes to chunks: pure functions, no I/O.

A note is decoded strictly (UTF-8, no NUL), line endings are normalised and a BOM dropped.
Text is split at blank lines into paragraphs, which are packed into chunks of at most
1,800 characters; a longer paragraph is cut at the last whitespace before the limit. Only
whitespace between paragraphs changes. The title is the first ATX heading outside fenced
code, else the file name.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_CHUNK_CHARS = 1800
MAX_TITLE_CHARS = 200
NOTE_SUFFIXES = (".md", ".markdown")

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


class BadNote(ValueError):
    """A note that cannot be imported; the message is the reason."""


@dataclass(frozen=True)
class Chunk:
    number: int  # 1-based
    text: str
    line_start: int  # 1-based, inclusive
    line_end: int


def decode(data: bytes) -> str:
    """Bytes of a note to normalised text, or :class:`BadNote` saying why not."""
    if len(data) > MAX_FILE_BYTES:
        raise BadNote(f"too large ({len(data)} bytes; the limit is {MAX_FILE_BYTES})")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise BadNote(f"contains a NUL byte at offset {nul} (binary file?)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadNote(f"invalid UTF-8 at byte {exc.start}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def title_of(text: str, filename: str) -> str:
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is None:
            h = _HEADING.fullmatch(line)
            if h and h.group(2) and h.group(2).strip():
                return h.group(2).strip()[:MAX_TITLE_CHARS]
    stem = PurePosixPath(filename).name
    for suffix in NOTE_SUFFIXES:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return (stem or filename)[:MAX_TITLE_CHARS]


def _paragraphs(text: str) -> list[tuple[str, int, int]]:
    """(text, first line, last line) of each run of non-blank lines."""
    out = []
    current: list[str] = []
    start = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            if not current:
                start = number
            current.append(line)
        elif current:
            out.append(("\n".join(current), start, number - 1))
            current = []
    if current:
        out.append(("\n".join(current), start, start + len(current) - 1))
    return out


def _cut(paragraph: str, first_line: int) -> list[tuple[str, int, int]]:
    """Split an over-long paragraph at the last whitespace before the limit."""
    pieces = []
    line = first_line
    rest = paragraph
    while len(rest) > MAX_CHUNK_CHARS:
        window = rest[:MAX_CHUNK_CHARS]
        cut = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
        if cut <= 0:
            cut = MAX_CHUNK_CHARS  # no whitespace at all: a hard cut
            head, tail = rest[:cut], rest[cut:]
        else:
            head, tail = rest[:cut], rest[cut + 1:]
        lines_in_head = head.count("\n")
        gap = 1 if rest[cut:cut + 1] == "\n" else 0
        pieces.append((head, line, line + lines_in_head))
        line += lines_in_head + gap
        rest = tail
    if rest:
        pieces.append((rest, line, line + rest.count("\n")))
    return pieces


def chunk(text: str) -> list[Chunk]:
    """Pack paragraphs into chunks of at most MAX_CHUNK_CHARS characters."""
    pieces: list[tuple[str, int, int]] = []
    for para, start, end in _paragraphs(text):
        pieces.extend(_cut(para, start) if len(para) > MAX_CHUNK_CHARS else [(para, start, end)])
    chunks: list[Chunk] = []
    buf: list[str] = []
    first = last = 0
    size = 0
    for piece, start, end in pieces:
        extra = len(piece) + (2 if buf else 0)
        if buf and size + extra > MAX_CHUNK_CHARS:
            chunks.append(Chunk(len(chunks) + 1, "\n\n".join(buf), first, last))
            buf, size = [], 0
            extra = len(piece)
        if not buf:
            first = start
        buf.append(piece)
        size += extra
        last = end
    if buf:
        chunks.append(Chunk(len(chunks) + 1, "\n\n".join(buf), first, last))
    return chunks


def normalise_path(relpath: str) -> str:
    """NFC and forward slashes, so one note has one ID on every platform."""
    return unicodedata.normalize("NFC", relpath.replace("\\", "/"))


def chunk_id(collection: str, relpath: str, number: int) -> str:
    return f"{collection}/{relpath}#{number}"


def is_note_name(name: str) -> bool:
    """A visible Markdown file; editors' swap, backup, lock and temp files are not notes."""
    if name.startswith((".", "#", "~")) or name.endswith(("~", "#")):
        return False
    return name.lower().endswith(NOTE_SUFFIXES)


def is_watched_dir(name: str) -> bool:
    """Hidden folders (.git, .obsidian, .trash...) are never walked."""
    return not name.startswith(".")
