"""The note model: a Markdown note as the store keeps it. Pure functions, no I/O.

A note (``COLLECTION/path.md``) becomes one memory per section part, identified by its
heading path the way Obsidian links to headings (``notes/Setup.md#Install#On Linux``),
plus one note record (``notes/Setup.md#``) holding what belongs to the whole note: its
front matter, title, aliases, tags, links and the order of its sections. See
docs/data-model.md for the identity rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Iterable

from ..limits import MAX_HEADINGS, MAX_TITLE_CHARS
from . import front_matter, links, markdown
from .markdown import Piece

# The version of these rules (sections, identities, indexed text, what a record holds). A
# database records the version each file was imported with; a sync imports files of an
# older version once more (version 3 added the note's embeds to its record: a note without
# embeds gets no new revision; version 4 reads links in angle brackets, [a](<My note.md>),
# a heading's text from its first 800 characters, lists a note's ![alt](url) embeds as
# markdown_embeds, and marks the parts after a long section's first with the section they
# continue, so only parts this package cut are merged in search answers; version 5 gives a
# note's first section the words of its other properties, keyword-indexed (a note of
# properties alone gets an empty section for them), and counts the wikilinks of its
# properties among its links: only a note with such properties gets new revisions, of
# that section (its text unchanged, or new and empty) and of its record); version 6 keeps
# the values of keys that differ only in case (Owner: beside owner:) and of !!set, !!omap
# and !!pairs properties, which version 5 dropped; version 7 gives a note with no text
# and no other property (empty, or a title, aliases or tags alone) its empty section too,
# so that it is found by its name (only such notes get a new revision); version 8 reads
# the headings after a note's first 2,000 (MAX_HEADINGS) as text of the section before
# them and counts autolinks (<https://...>) among a note's links (only such notes get new
# revisions); version 9 keeps that notice in the note's record, so that `memory status`
# names the note (only such notes get a new revision, of their record); version 10 indexes
# a section without its HTML tags (a video's <div style="...">: its attributes are no words
# of the note; only sections with such tags get a new revision, their text unchanged);
# version 11 keeps a heading's #, ^, | and brackets in its title and heading path ("C#
# tips", not "C tips"; its memory ID still drops them) and shows a wikilink in it by its
# text (only notes with such headings get new revisions).
CHUNKER_VERSION = 11
PREVIOUS_CHUNKER_VERSION = 1  # paragraphs packed into numbered chunks (note.md#3)

_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


@dataclass(frozen=True)
class ParsedSection:
    """One memory of a note: a section, or a part of a long one."""
    memory_id: str
    heading_path: tuple[str, ...]  # enclosing headings then its own; () before the first
    text: str  # as stored: the section's lines (after any repeated table header)
    index_text: str  # the words indexed: links as read, no URLs or icon codes
    line_start: int  # 1-based, inclusive
    line_end: int  # 1-based, inclusive (blank lines after the text included)
    lines: int  # source lines it stands for (the last also the empty one after a final \n)
    context: int  # leading lines of text repeated from earlier (a table's header)
    tags: tuple[str, ...]
    links: tuple[str, ...]
    part: int = 1  # which part of its section (a long section is cut into several)
    part_of: str | None = None  # for parts after the first: the first part's memory ID
    properties: str = ""  # the note's first section: its other properties, as words

    def metadata(self) -> dict:
        meta: dict = {"lines": self.lines}
        if self.properties:
            meta["properties"] = self.properties
        if self.context:
            meta["context"] = self.context
        if self.part_of is not None:
            meta["part"] = self.part
            meta["part_of"] = self.part_of
        if self.tags:
            meta["tags"] = list(self.tags)
        if self.links:
            meta["links"] = list(self.links)
        return meta


@dataclass(frozen=True)
class Note:
    note_id: str  # COLLECTION/path.md
    title: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]  # front matter and inline, normalised
    links: tuple[str, ...]
    embeds: tuple[str, ...]
    dates: dict[str, str]
    front_matter: str  # the block as written, fences included ("" without one)
    head_lines: int  # lines before the first section: the front matter and blank lines
    front_matter_error: str | None
    sections: tuple[ParsedSection, ...] = field(default=())
    markdown_embeds: tuple[str, ...] = ()  # those of the embeds written ![alt](url)
    notice: str | None = None  # imported, but not all of it as written (see MAX_HEADINGS)

    @property
    def record_id(self) -> str:
        return record_id(self.note_id)

    def index_title(self, heading_path: tuple[str, ...]) -> str:
        """The title text indexed with a section: note title, aliases, heading path."""
        return " \n".join([self.title, *self.aliases, *heading_path])

    def metadata(self) -> dict:
        meta: dict = {"sections": [s.memory_id for s in self.sections],
                      "lines": self.head_lines}
        for key in ("aliases", "tags", "links", "embeds", "markdown_embeds"):
            if getattr(self, key):
                meta[key] = list(getattr(self, key))
        if self.dates:
            meta["dates"] = dict(self.dates)
        if self.front_matter_error:
            meta["front_matter_error"] = self.front_matter_error
        if self.notice:
            meta["notice"] = self.notice
        return meta


def value_links(block: str) -> list[str]:
    """The wikilink targets written in the values of a front matter block as written (not
    in its keys or comments), in order, once each: a note's property links."""
    if "[[" not in block:
        return []
    return _wikilinks((front_matter.property_values(block, every=True) or {}).values())


def _wikilinks(values: Iterable[str]) -> list[str]:
    """The wikilink targets in property values, in order, once each (an embed or a
    Markdown link in a property is no link of the note)."""
    return list(dict.fromkeys(o.target for v in values if "[[" in v
                              for o in links.occurrences(v) if not o.embed and not o.markdown))


def note_id(collection: str, relpath: str) -> str:
    return f"{collection}/{relpath}"


def record_id(note: str) -> str:
    """The memory ID of a note's record: the note ID and an empty heading link."""
    return note + "#"


def legacy_chunk_number(memory_id: str, note: str) -> int | None:
    """N when ``memory_id`` is ``note#N``, a numbered chunk of the previous note model
    (a note named ``a.md#3.md`` shares the prefix of ``a.md`` but not those IDs)."""
    prefix = record_id(note)
    rest = memory_id[len(prefix):] if memory_id.startswith(prefix) else ""
    return int(rest) if rest.isdecimal() else None


def is_record(memory_id: str, note: str | None) -> bool:
    """Whether a revision (its memory ID and note) is a note's record. (The store has
    the same test in SQL: ``Connection.note_record``.)"""
    return note is not None and memory_id == record_id(note)


def same_heading(written: str, wanted: str) -> bool:
    """Whether a heading is the one a link or a user names: alike as memory IDs and heading
    links read them (case aside), so "C tips" names "C# tips", as in Obsidian."""
    return markdown.id_text(written).casefold() == markdown.id_text(wanted).casefold()


def under(heading_path, other_path) -> bool:
    """Whether a section with ``other_path`` belongs to the section with ``heading_path``
    when it follows it: a deeper heading under it, or a later part of it (a long section
    is split into parts with the same path). The first that does not is the next heading
    of the same or a higher level, where the section ends (as Obsidian reads it)."""
    path, other = list(heading_path or []), list(other_path or [])
    return bool(path) and len(other) >= len(path) and other[:len(path)] == path


def file_title(relpath: str) -> str:
    name = PurePosixPath(relpath).name
    for suffix in markdown.NOTE_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return (name or relpath)[:MAX_TITLE_CHARS]


def _without_headings(text: str) -> str:
    if "#" not in text:
        return text
    return "\n".join(line for line in text.split("\n") if not _HEADING_LINE.match(line))


# A heading a template fills in ("# {{date:dddd D MMMM}}", Templater's "<% tp.file.title %>")
# names no note: a template is titled by its file name ("Daily template").
_TEMPLATED = re.compile(r"\{\{.*?\}\}|<%.*?%>")


def parse_note(text: str, collection: str, relpath: str) -> Note:
    """A note's text (decoded) as the store keeps it."""
    structure = markdown.parse(text)
    meta = front_matter.FrontMatter()
    if structure.front_matter_yaml is not None:
        meta = front_matter.parse(structure.front_matter_yaml)
    named = structure.first_heading  # the heading right after the block, whatever it holds
    if meta.error:  # kept as plain text: the block becomes part of the first section
        structure = markdown.parse(text, front_matter_as_text=True)
    if meta.title:
        title = meta.title
    elif named and named[0] == 1 and named[1] and not _TEMPLATED.search(named[1]):
        title = named[1]  # (a typo in the block renames nothing)
    else:
        title = file_title(relpath)
    nid = note_id(collection, relpath)
    used: set[str] = {record_id(nid)}
    tried: dict[str, int] = {}  # base -> every "base (n)" below it is taken
    sections = []
    first_id = nid
    spans = line_spans(structure.body_start, [p.end - p.start for p in structure.parts],
                       text.endswith("\n"))
    for part, (line_start, line_end) in zip(structure.parts, spans):
        sec = part.section
        path = sec.parents + (sec.heading,) if sec.level else ()
        if part.number == 1:
            base = nid + "".join("#" + (c or "(untitled)") for c in path)
        elif sec.level:
            base = f"{first_id} (part {part.number})"
        else:  # parts of the text before the first heading
            base = f"{nid}#(part {part.number})"
        memory_id = base
        n = tried.get(base, 2)  # not 2 each time: 100,000 headings "# h" are linear
        while memory_id in used:
            memory_id = f"{base} ({n})"
            n += 1
        tried[base] = n
        if part.number == 1:
            first_id = memory_id
        used.add(memory_id)
        source = part.text.split("\n")[part.context:]
        plain = "\n".join(source)
        index_text, outgoing, tags = links.read(part.text, _without_headings(plain))
        sections.append(ParsedSection(
            memory_id=memory_id, heading_path=sec.shown, text=part.text, index_text=index_text,
            line_start=line_start, line_end=line_end, lines=part.end - part.start,
            context=part.context,
            tags=tuple(tags), links=tuple(outgoing), part=part.number,
            part_of=None if part.number == 1 else first_id))
    if not sections:
        # Nothing below the front matter (a contact, a book's record, a note made by
        # following a link, a person's aliases): one empty section holds its properties,
        # so that the note is found by them, by its name and by its aliases.
        (line, _), = line_spans(structure.body_start, [0], text.endswith("\n"))
        sections.append(ParsedSection(
            memory_id=nid, heading_path=(), text="", index_text="", line_start=line,
            line_end=line, lines=0, context=0, tags=(), links=()))
    if sections and meta.properties:  # indexed as words of the note's first section
        sections[0] = replace(sections[0], properties=links.reading_text(meta.properties))
    all_tags = dict.fromkeys(meta.tags)
    all_links: dict[str, None] = dict.fromkeys(_wikilinks(meta.linked))
    all_embeds: dict[str, None] = {}
    markdown_embeds: dict[str, None] = {}  # resolved as Markdown links (URL-decoded)
    for s in sections:
        all_tags.update(dict.fromkeys(s.tags))
        all_links.update(dict.fromkeys(s.links))
        if "![" in s.text:
            for o in links.occurrences(s.text):
                if o.embed:
                    all_embeds.setdefault(o.target, None)
                    if o.markdown:
                        markdown_embeds.setdefault(o.target, None)
    return Note(note_id=nid, title=title, aliases=meta.aliases, tags=tuple(all_tags),
                links=tuple(all_links), embeds=tuple(all_embeds), dates=meta.dates,
                front_matter=structure.head_text(text), head_lines=structure.body_start,
                front_matter_error=meta.error, sections=tuple(sections),
                markdown_embeds=tuple(markdown_embeds), notice=(
                    f"{MAX_HEADINGS + structure.headings_over:,} headings: those after the "
                    f"first {MAX_HEADINGS:,} are read as text of the section before them"
                    if structure.headings_over else None))


def line_spans(head_lines: int, counts: list[int], ends_with_newline: bool,
               ) -> list[tuple[int, int]]:
    """1-based (first, last) lines of each section from the sections' line counts in
    document order, as an editor numbers them (no line after a final newline)."""
    total = head_lines + sum(counts) - (1 if ends_with_newline else 0)
    spans = []
    line = head_lines + 1
    for count in counts:
        if count == 0:  # the empty section of a note of properties alone: its last line
            spans.append((max(total, 1), max(total, 1)))
            continue
        spans.append((line, max(line, min(line + count - 1, total))))
        line += count
    return spans


def reassemble(head: Piece, sections: list[Piece]) -> str:
    """A note's text from its head (the record's front matter and head lines) and its
    sections, in document order."""
    return markdown.reassemble([head, *sections])
