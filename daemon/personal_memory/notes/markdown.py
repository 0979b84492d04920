"""Markdown structure: a note's text cut into sections, with line spans. Pure functions.

A note is decoded strictly (UTF-8, no NUL), line endings are normalised and a BOM dropped.
It is parsed with markdown-it-py (CommonMark, tables, front matter). A section is a
top-level heading and the blocks under it, up to the next heading of any level; text
before the first heading is its own section. A heading with nothing under it is joined to
the section that follows it (to the one before it when it is last), so no section is a
bare heading. A section longer than :data:`MAX_CHUNK_CHARS` is cut into parts at block
boundaries (top-level blocks, list items, block quote children, table rows, a paragraph's
lines), never inside a fenced block or a table row; a part that starts inside a table
repeats the table's header rows.

Every line of the note belongs to exactly one part (or to the front matter). A part's
text is its lines with trailing blank lines removed; :func:`reassemble` gives back the
note, except that whitespace-only lines at the end of a part come back empty.
"""

from __future__ import annotations

import os
import re
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import NamedTuple

from ..limits import MAX_HEADINGS, MAX_TITLE_CHARS
from .links import reading_text

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_CHUNK_CHARS = 1800
NOTE_SUFFIXES = (".md", ".markdown")


class BadNote(ValueError):
    """A note that cannot be imported; the message is the reason."""


def decode(data: bytes) -> str:
    """Bytes of a note to normalised text, or :class:`BadNote` saying why not."""
    if len(data) > MAX_FILE_BYTES:
        raise BadNote(f"too large ({len(data)} bytes; the limit is {MAX_FILE_BYTES})")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with its mark (Windows)
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise BadNote(f"invalid UTF-16 at byte {exc.start}") from None
        nul = text.find("\x00")
        if nul >= 0:
            raise BadNote(f"contains a NUL character at {nul} (binary file?)")
        return text.replace("\r\n", "\n").replace("\r", "\n")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise BadNote(f"contains a NUL byte at offset {nul} (" + (
            "saved as UTF-16 without its byte order mark? save it as UTF-8: it is imported "
            "then)" if _utf16(data[:256]) else "binary file?)"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadNote(f"invalid UTF-8 at byte {exc.start}" + _guess(data)) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _utf16(head: bytes) -> bool:
    """Whether a file's first bytes read as UTF-16 text of Latin letters: every other byte
    NUL, the others not."""
    if len(head) < 4:
        return False
    even, odd = head[0::2], head[1::2]
    for zeros, other, encoding in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if not zeros.strip(b"\0") and b"\0" not in other:
            try:
                head[:len(head) // 2 * 2].decode(encoding)
            except UnicodeDecodeError:
                return False
            return True
    return False


def _guess(data: bytes) -> str:
    """What a note that is no UTF-8 may be in, for its error: text from Windows is often
    Windows-1252 (Latin-1), which decodes every byte it holds."""
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return ""
    return " (saved as Windows-1252 or Latin-1? save it as UTF-8: it is imported then)"


@dataclass(frozen=True)
class Section:
    """A heading (``level`` 1-6, ``heading`` its plain text) or the text before the first
    heading (level 0), as the 0-based line range [start, end)."""
    level: int
    heading: str | None
    start: int
    end: int
    parents: tuple[str, ...]  # the plain text of the enclosing headings, outermost first
    # the enclosing headings and its own as a reader sees them (heading_texts); () before
    # the first heading
    shown: tuple[str, ...] = ()


@dataclass(frozen=True)
class Part:
    """A section, or one part of a long one: source lines [start, end) (0-based), the
    text (``context`` repeated header lines first, then the source lines without trailing
    blank lines), and its number within the section (1-based)."""
    section: Section
    number: int
    start: int
    end: int
    text: str
    context: int = 0


@dataclass(frozen=True)
class Structure:
    """A parsed note. The head is lines [0, ``body_start``): the front matter block (fences
    included, ``front_matter_lines`` of them) and the blank lines after it."""
    front_matter_lines: int
    front_matter_yaml: str | None
    body_start: int
    parts: tuple[Part, ...]
    lines: int
    first_heading: tuple[int, str] | None  # (level, text as shown) of one on the first body line
    headings_over: int = 0  # headings after the first MAX_HEADINGS, read as text

    def head_text(self, text: str) -> str:
        return "\n".join(text.split("\n")[:self.front_matter_lines])


@dataclass(frozen=True)
class _Unit:
    """A line a part may start at. ``heading``: a heading starts here (a part never ends
    right after one); ``header``: the header rows of the table whose body row this is."""
    start: int
    heading: bool = False
    header: tuple[int, int] | None = None


@lru_cache(maxsize=1)
def _parser():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin
    # Only the block structure is needed: inline parsing (the slowest part) is skipped and
    # done for heading text alone.
    return MarkdownIt("commonmark").enable("table").use(front_matter_plugin).disable(
        ["inline", "text_join"])


@lru_cache(maxsize=1)
def _inline_parser():
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark")


_ID_UNSAFE = re.compile(r"[#^|\[\]]+")
# A heading's first characters are all its text can show (it is cut at MAX_TITLE_CHARS);
# the inline parser, slow on hostile text, never reads more than these.
HEADING_SOURCE_CHARS = 4 * MAX_TITLE_CHARS


def heading_texts(source: str) -> tuple[str, str]:
    """A heading as plain text (no emphasis marks, link text without its URL), whitespace
    collapsed, two ways: as a memory ID names it, with the characters that separate heading
    links (#, ^, |, brackets) made spaces, as Obsidian's heading links do ("C tips"); and
    as a reader sees it ("C# tips", a wikilink by its text, no block ID). Only the first
    :data:`HEADING_SOURCE_CHARS` of the source are read."""
    parts: list[str] = []
    source = source[:HEADING_SOURCE_CHARS]
    inline = _inline_parser().parseInline(source)[0] if source.strip() else None
    for child in (inline.children or ()) if inline is not None else ():
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    plain = "".join(parts)
    return id_text(plain), " ".join(reading_text(plain).split())[:MAX_TITLE_CHARS]


def id_text(heading: str) -> str:
    """A heading as a memory ID (and a heading link) names it: #, ^, |, brackets made
    spaces, whitespace collapsed."""
    return " ".join(_ID_UNSAFE.sub(" ", heading).split())[:MAX_TITLE_CHARS]


def _blank(line: str) -> bool:
    return not line.strip()


def parse(text: str, *, front_matter_as_text: bool = False) -> Structure:
    """The front matter and the sections (cut into parts) of a note's text. With
    ``front_matter_as_text`` (unreadable YAML) the block is ordinary text of the first
    section."""
    lines = text.split("\n")
    tokens = _parser().parse(text)
    front: tuple[int, int] | None = None
    yaml_text: str | None = None
    headings: list[tuple[int, int, int, str]] = []  # (start, end, level, text)
    units: dict[int, _Unit] = {}
    protected: list[tuple[int, int]] = []  # fenced and indented code, HTML blocks
    container = ""  # the type of the open top-level block
    table_header: tuple[int, int] | None = None
    headings_over = 0
    for i, tok in enumerate(tokens):
        if tok.level == 0 and tok.nesting == 1:
            container = tok.type
        if tok.type == "thead_open" and tok.map:
            table_header = (tok.map[0], tok.map[1] + 1)  # header rows and the delimiter row
        if tok.map is None:
            continue
        start, end = tok.map
        if tok.type == "front_matter":
            front, yaml_text = (start, end), tok.content
            continue
        if tok.type in ("fence", "code_block", "html_block"):
            protected.append((start, end))
        if tok.level == 0 and tok.type == "heading_open" and len(headings) < MAX_HEADINGS:
            headings.append((start, end, int(tok.tag[1]),
                             *heading_texts(tokens[i + 1].content)))
            units[start] = _Unit(start, heading=True)
        elif tok.level == 0 and tok.type == "heading_open":  # text of the section before
            headings_over += 1
            units.setdefault(start, _Unit(start))
        elif tok.level == 0 and tok.nesting >= 0:
            units.setdefault(start, _Unit(start))
        elif tok.level == 1 and tok.nesting >= 0 and (
                tok.type == "list_item_open" or container == "blockquote_open"):
            units.setdefault(start, _Unit(start))
        elif tok.type == "tr_open" and table_header and start >= table_header[1]:
            units.setdefault(start, _Unit(start, header=table_header))
    front_lines = front[1] if front and not front_matter_as_text else 0
    body_start = front_lines
    while body_start < len(lines) and _blank(lines[body_start]):
        body_start += 1
    parts: list[Part] = []
    note = _Lines(lines, units, protected)
    for section in _sections(lines, headings, body_start):
        parts.extend(_split(note, section))
    first = next(((level, shown) for start, _, level, _, shown in headings
                  if start == body_start), None)
    return Structure(front_lines, yaml_text, body_start, tuple(parts), len(lines), first,
                     headings_over)


def _sections(lines: list[str], headings: list[tuple[int, int, int, str, str]],
              body_start: int) -> list[Section]:
    """Sections with their parents; bare headings joined to a neighbour."""
    raw: list[tuple[int, int, Section]] = []  # (start, end of the heading lines, section)
    first = headings[0][0] if headings else len(lines)
    if any(not _blank(x) for x in lines[body_start:first]):
        raw.append((body_start, body_start, Section(0, None, body_start, first, ())))
    stack: list[tuple[int, str, str]] = []
    for n, (start, head_end, level, text, shown) in enumerate(headings):
        end = headings[n + 1][0] if n + 1 < len(headings) else len(lines)
        while stack and stack[-1][0] >= level:
            stack.pop()
        raw.append((start, head_end,
                    Section(level, text, start, end, tuple(t for _, t, _ in stack),
                            tuple(x for _, _, x in stack) + (shown,))))
        stack.append((level, text, shown))
    out: list[Section] = []
    pending: int | None = None  # start of bare headings waiting for the next section
    for n, (start, head_end, section) in enumerate(raw):
        if pending is not None:
            section = _with(section, start=pending)
            pending = None
        if n == 0 and section.start > body_start:
            section = _with(section, start=body_start)  # blank lines before it
        bare = section.level > 0 and all(_blank(x) for x in lines[head_end:section.end])
        if bare and n + 1 < len(raw):
            pending = section.start
        elif bare and out:
            out[-1] = _with(out[-1], end=section.end)
        else:
            out.append(section)
    return out


def _with(section: Section, **changes) -> Section:
    values = {"level": section.level, "heading": section.heading, "start": section.start,
              "end": section.end, "parents": section.parents,
              "shown": section.shown} | changes
    return Section(**values)


class _Lines:
    """A note's lines, measured once so that cutting sections into parts is linear in the
    note's size: the length of any run of lines (trailing blank lines dropped), the units
    in order, and which lines are inside a fenced block."""

    def __init__(self, lines: list[str], units: dict[int, _Unit],
                 protected: list[tuple[int, int]]):
        self.lines, self.units, self.order = lines, units, sorted(units)
        self.prefix = list(accumulate((len(x) + 1 for x in lines), initial=0))
        self.solid_end = []  # [b]: the end of lines[:b + 1] without its trailing blank lines
        end = 0
        for i, line in enumerate(lines):
            end = i + 1 if not _blank(line) else end
            self.solid_end.append(end)
        self.inside = bytearray(len(lines) + 1)
        for a, b in protected:
            self.inside[a + 1:b] = b"\x01" * max(0, b - a - 1)

    def end(self, a: int, b: int) -> int:
        """The end of lines [a, b) without their trailing blank lines."""
        return max(a, self.solid_end[b - 1]) if b > a else a

    def size(self, a: int, b: int) -> int:
        """``len("\\n".join(lines[a:b]))``."""
        return self.prefix[b] - self.prefix[a] - 1 if b > a else 0

    def blank(self, a: int, b: int) -> bool:
        return self.end(a, b) == a

    def units_in(self, a: int, b: int) -> list[int]:
        return self.order[bisect_right(self.order, a):bisect_left(self.order, b)]


def _split(note: _Lines, section: Section) -> list[Part]:
    lines, units = note.lines, note.units
    whole_end = note.end(section.start, section.end)
    if note.size(section.start, whole_end) <= MAX_CHUNK_CHARS:
        return [Part(section, 1, section.start, section.end,
                     "\n".join(lines[section.start:whole_end]))]
    starts = [section.start] + note.units_in(section.start, section.end)
    starts = _add_line_starts(note, starts, section.end)
    kept = [section.start]
    first = units.get(section.start)
    glue = first is not None and first.heading  # a heading never ends a part
    for s in starts[1:]:
        if note.inside[s]:
            continue  # never inside a fenced block
        if _blank(lines[s]):
            continue  # blank lines end the part before them
        unit = units.get(s)
        heading = unit is not None and unit.heading
        if glue or note.blank(kept[-1], s):
            glue = heading
            continue
        kept.append(s)
        glue = heading
    starts = kept
    parts: list[Part] = []
    begin = 0
    while begin < len(starts):
        unit = units.get(starts[begin]) if begin else None
        context = (lines[unit.header[0]:unit.header[1]]
                   if unit is not None and unit.header is not None else [])
        header = len("\n".join(context)) + 1 if context else 0  # and the newline after it
        stop = begin + 1
        while stop < len(starts):
            nxt = starts[stop + 1] if stop + 1 < len(starts) else section.end
            source = note.size(starts[begin], note.end(starts[begin], nxt))
            if (header + source if source else max(0, header - 1)) > MAX_CHUNK_CHARS:
                break
            stop += 1
        end = starts[stop] if stop < len(starts) else section.end
        source = lines[starts[begin]:note.end(starts[begin], end)]
        parts.append(Part(section, len(parts) + 1, starts[begin], end,
                          "\n".join(context + source), len(context)))
        begin = stop
    return parts


def _add_line_starts(note: _Lines, starts: list[int], end: int) -> list[int]:
    """Line boundaries inside a run longer than the limit that no block boundary divides
    (a long paragraph): better a cut between lines than one oversized part."""
    out: list[int] = []
    bounds = starts + [end]
    for a, b in zip(bounds, bounds[1:]):
        out.append(a)
        if b - a > 1 and note.size(a, b) > MAX_CHUNK_CHARS:
            out.extend(range(a + 1, b))
    return out


class Piece(NamedTuple):
    """What a stored part gives back to its note: its text, how many of its first lines
    repeat earlier ones (a table's header), and how many source lines it stands for."""
    text: str
    context: int
    lines: int


def reassemble(pieces: list[Piece]) -> str:
    """The note's text from its pieces in document order: the front matter (context 0)
    and each part."""
    out: list[str] = []
    for text, context, count in pieces:
        lines = text.split("\n")[context:] if text else []
        out.extend(lines + [""] * (count - len(lines)))
    return "\n".join(out)



def normalise_path(relpath: str) -> str:
    """NFC and forward slashes, so one note has one ID on every platform. Only the
    platform's own separator is one: on Linux and macOS a backslash is a character of
    the name (``back\\slash.md`` is not ``back/slash.md``)."""
    return unicodedata.normalize("NFC", relpath.replace(os.sep, "/"))


def is_note_name(name: str) -> bool:
    """A visible Markdown file; editors' swap, backup, lock and temp files are not notes
    (``.x.md.swp``, ``x.md~``, Emacs' ``#x.md#``, Office's ``~$x.md``). A name that only
    begins with ``#`` or ``~`` is a note's."""
    if name.startswith((".", "~$")) or name.endswith(("~", "#")):
        return False
    return name.lower().endswith(NOTE_SUFFIXES)


def shadowed_note(relpath: str) -> str | None:
    """The note whose sections' IDs this path's note ID could be (``a.md#X.md`` is the
    ID of the heading ``X.md`` of ``a.md``), or None: the first part before a ``#`` that
    is a note's path."""
    at = relpath.find("#")
    while at > 0:
        if relpath[:at].lower().endswith(NOTE_SUFFIXES):
            return relpath[:at]
        at = relpath.find("#", at + 1)
    return None


def is_watched_dir(name: str) -> bool:
    """Hidden folders (.git, .obsidian, .trash...) are never walked."""
    return not name.startswith(".")


def is_hidden(relpath: str) -> bool:
    """True when a path relative to a notes folder ("/"-separated) is inside a hidden
    folder, or is one."""
    return any(not is_watched_dir(part) for part in relpath.split("/"))
