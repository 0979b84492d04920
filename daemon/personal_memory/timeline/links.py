"""Links between notes at a cutoff: a note's outgoing links and its backlinks, and the
text its embeds show, each resolved among the notes visible then (see notes.resolve).

The links of each revision are kept with it (its text, and the targets in its metadata);
what they point to is decided at each cutoff, so a link written before its target existed
is dangling before and resolved after, and a rename changes resolution from its instant on,
never before."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Callable

from ..limits import SNIPPET_EMBEDS
from ..notes import links as link_syntax
from ..notes.model import record_id, same_heading, under, value_links
from ..notes.resolve import BLOCK, SECTION, NoteIndex, Target, VisibleNotes
from ..records import Embed, Link, Links, RevisionRecord
from ..search.graph import names_in, names_of
from ..store import Database
from ..times import format_time
from .moves import path_at
from .reading import read_note, section_lines

MAX_EMBED_CHARS = 4000  # the text shown for one embed


class Cutoff:
    """What links are resolved against at one time: the visible notes, and (on demand) the
    sections of each, with their lines. One per call: it reads inside the caller's
    snapshot."""

    def __init__(self, db: Database, namespace: str, as_of: int | None, valid_at: int,
                 notes: VisibleNotes | None = None):
        self.db, self.namespace, self.as_of, self.valid_at = db, namespace, as_of, valid_at
        self.notes = notes  # the visible notes as a search held them: their names, once
        self._indexes: dict[str, NoteIndex] = {}
        self._sections: dict[str, list[tuple[RevisionRecord, int]]] = {}
        self._read: dict[str, RevisionRecord | None] = {}  # records read one by one

    @functools.cached_property
    def records(self) -> dict[str, RevisionRecord]:
        """The visible notes' records, by note (read when first asked for)."""
        return {r.note: r for r in self.db.visible_records(self.namespace, self.as_of,
                                                             self.valid_at)}

    def record(self, note: str) -> RevisionRecord | None:
        """A visible note's record: one read, unless every record was read already."""
        if "records" in self.__dict__:
            return self.records.get(note)
        if note not in self._read:
            self._read[note] = self.db.visible(self.namespace, record_id(note), self.as_of,
                                               self.valid_at)
        return self._read[note]

    def index(self, note: str) -> NoteIndex:
        collection = note.split("/", 1)[0]
        if self.notes is not None:
            return self.notes.index(collection)
        if collection not in self._indexes:
            if "records" in self.__dict__:
                aliases = {n: (r.metadata or {}).get("aliases", [])
                           for n, r in self.records.items()}
            else:  # the names alone, not every record whole
                aliases = {n: meta.get("aliases", []) for n, meta in
                           self.db.visible_record_fields(self.namespace, self.as_of,
                                                         self.valid_at, ("aliases",))}
            self._indexes[collection] = NoteIndex(collection, aliases)
        return self._indexes[collection]

    def sections(self, note: str) -> list[tuple[RevisionRecord, int]]:
        """(revision, first file line) of each visible section of a note, in order."""
        if note not in self._sections:
            spans = section_lines(self.db, self.namespace, note, self.as_of, self.valid_at)
            record = self.record(note)
            out = []
            for memory_id in (record.metadata or {}).get("sections", []) if record else []:
                rev = self.db.visible(self.namespace, memory_id, self.as_of, self.valid_at)
                if rev is not None:
                    out.append((rev, spans.get(memory_id, (1, 1))[0]))
            self._sections[note] = out
        return self._sections[note]

    def with_subsections(self, note: str, section: str) -> list[RevisionRecord]:
        """A section, its later parts and the sections under it (:func:`under`): what
        Obsidian shows for ``![[Note#Section]]``."""
        sections = [rev for rev, _ in self.sections(note)]
        start = next(i for i, rev in enumerate(sections) if rev.memory_id == section)
        out = [sections[start]]
        for rev in sections[start + 1:]:
            if not under(out[0].heading_path, rev.heading_path):
                break
            out.append(rev)
        return out

    def resolve(self, occurrence: link_syntax.Occurrence, source: str) -> tuple[Target, str | None]:
        """The target, and the memory ID of the section or block it names (if found)."""
        target = self.index(source).resolve(occurrence.target, source, occurrence.markdown)
        section = None
        if target.note and target.kind in (SECTION, BLOCK) and target.fragment:
            section = self._find(target.note, target.kind, target.fragment)
        return target, section

    def _find(self, note: str, kind: str, fragment: str) -> str | None:
        if kind == BLOCK:
            marker = fragment.strip()
            for rev, _ in self.sections(note):
                if any(line.rstrip().endswith(marker) for line in rev.content.split("\n")):
                    return rev.memory_id
            return None
        wanted = [h for h in fragment.split("#") if h.strip()]
        for rev, _ in self.sections(note):
            path = rev.heading_path or []
            if wanted and len(path) >= len(wanted) and all(
                    same_heading(h, w) for h, w in zip(path[-len(wanted):], wanted)):
                return rev.memory_id
        return None

    def headings(self, note: str | None, section: str | None) -> tuple[str, ...]:
        """The headings of a section a link resolved to, as written then."""
        if note is None or section is None:
            return ()
        return tuple(next((rev.heading_path or () for rev, _ in self.sections(note)
                           if rev.memory_id == section), ()))

    def links_in(self, note: str) -> list[Link]:
        return [link for link, _ in self.resolved_in(note)]

    def resolved_in(self, note: str) -> list[tuple[Link, Target]]:
        """Each link of a note with its target: what ``memory links`` lists, and what an
        embed shows when the note is read (one resolution for both)."""
        out = []
        record = self.record(note)
        if record is not None and "[[" in record.content \
                and "front_matter_error" not in (record.metadata or {}):
            written = set(value_links(record.content))  # in values, not keys or comments
            lines = record.content.split("\n")
            for occ in link_syntax.occurrences(record.content):  # the properties' links
                if occ.target in written and not occ.embed and not occ.markdown \
                        and not lines[occ.line].lstrip().startswith("#"):  # (line 1 on)
                    target, section = self.resolve(occ, note)
                    out.append((Link(source_note=note, source_section=record.memory_id,
                                     line=1 + occ.line, target=occ.target, embed=False,
                                     kind=target.kind, note=target.note, section=section,
                                     headings=self.headings(target.note, section)),
                                target))
        for rev, first in self.sections(note):
            context = (rev.metadata or {}).get("context", 0)
            for occ in link_syntax.occurrences(rev.content):
                if occ.line < context:
                    continue  # a repeated table header: its links belong to an earlier part
                target, section = self.resolve(occ, note)
                out.append((Link(source_note=note, source_section=rev.memory_id,
                                 line=first + occ.line - context, target=occ.target,
                                 embed=occ.embed, kind=target.kind, note=target.note,
                                 section=section,
                                 headings=self.headings(target.note, section)), target))
        return out


def note_links(db: Database, namespace: str, note: str, as_of: int | None,
               valid_at: int) -> Links:
    """A note's outgoing links and its backlinks at a cutoff."""
    with db.snapshot():
        # the path read as read_note reads it: what it held then (NotFound when nothing)
        view = read_note(db, namespace, note, as_of, valid_at)
        asked, note = note, view.path_then or note
        if view.deleted:
            return Links(note=asked, as_of=format_time(as_of), outgoing=[], backlinks=[],
                         deleted=True, moved_to=view.moved_to)
        at = Cutoff(db, namespace, as_of, valid_at)
        outgoing = at.links_in(note) if note in at.records else []
        backlinks = []
        for source, record in sorted(at.records.items()):
            if source == note:
                continue
            index = at.index(source)
            # A note whose record lists no target that can name this one is not read.
            if any(index.resolve(t, source, markdown).note == note
                   for t in (record.metadata or {}).get("links", [])
                   for markdown in (False, True)):
                backlinks += [link for link in at.links_in(source) if link.note == note]
    return Links(note=asked, as_of=format_time(as_of), outgoing=outgoing, backlinks=backlinks,
                 path_then=note if note != asked else None)


def resolve_targets(db: Database, namespace: str, note: str,
                    targets: list[tuple[str, bool]], as_of: int | None,
                    valid_at: int) -> list[Link]:
    """Where each (target, markdown) written in ``note`` points at a cutoff, as the links
    of :func:`note_links` resolve (for a text that shows them, such as the page)."""
    with db.snapshot():
        source = path_at(db, namespace, note, as_of)
        at = Cutoff(db, namespace, as_of, valid_at)
        found = {}  # a target written many times is resolved once
        for raw, markdown in dict.fromkeys(targets):
            target, section = at.resolve(link_syntax.Occurrence(raw, False, markdown, 0),
                                         source)
            found[raw, markdown] = Link(
                source_note=source, source_section=record_id(source), line=None, target=raw,
                embed=False, kind=target.kind, note=target.note, section=section,
                headings=at.headings(target.note, section))
    return [found[t] for t in targets]


def embedded_text(at: Cutoff, target: Target, section: str | None) -> tuple[str, str | None]:
    """The text an embed shows at the cutoff, and when it was known."""
    record = at.record(target.note) if target.note is not None else None
    if record is None:
        return "", None
    sections = at.sections(target.note)
    if section is not None:
        rev = next(r for r, _ in sections if r.memory_id == section)
        text = rev.content
        if target.kind == SECTION:
            shown = at.with_subsections(target.note, section)
            text = "\n\n".join(r.content for r in shown)
            return text[:MAX_EMBED_CHARS], max(r.known_at for r in shown)
        if target.kind == BLOCK:  # the block: its paragraph, up to the line marked ^id
            lines = text.split("\n")
            end = next(i for i, line in enumerate(lines) if line.rstrip().endswith(
                target.fragment.strip()))
            start = end
            while start > 0 and lines[start - 1].strip():
                start -= 1
            text = "\n".join(lines[start:end + 1]).rstrip()
            text = text[: len(text) - len(target.fragment.strip())].rstrip()
        return text[:MAX_EMBED_CHARS], rev.known_at
    if target.kind in (SECTION, BLOCK):
        return "", None  # a heading or block that is not there
    text = "\n\n".join(r.content for r, _ in sections)
    return text[:MAX_EMBED_CHARS], record.known_at


def note_embeds(db: Database, namespace: str, note: str, as_of: int | None,
                valid_at: int) -> list[Embed]:
    """The embeds of a note at a cutoff, each with the text it shows then."""
    with db.snapshot():
        return _note_embeds_at(Cutoff(db, namespace, as_of, valid_at), note)


def _note_embeds_at(at: Cutoff, note: str) -> list[Embed]:
    out = []
    for link, target in (at.resolved_in(note) if at.record(note) is not None else []):
        if not link.embed:
            continue
        text, known = embedded_text(at, target, link.section)
        out.append(Embed(section=link.source_section, line=link.line, target=link.target,
                         kind=target.kind, note=target.note, source=link.section,
                         known_at=known, text=text))
    return out


def search_embeds(db: Database, namespace: str, as_of: int | None, valid_at: int,
                  results: list, notes: Callable[[], VisibleNotes] | None = None) -> list:
    """Search results (with snippets) as the notes stood at the cutoff: ``embedded_in``,
    the notes that embed each one then, and ``embeds``, what its snippet's lines embed,
    read through. Both resolve against one reading of the notes' records, made only when
    one of them needs it; ``notes``, the visible notes as the search held them (their
    names and embeds), spares reading every record again."""
    at = functools.cache(lambda: Cutoff(db, namespace, as_of, valid_at,
                                        notes() if notes is not None else None))
    embeds_of = functools.cache(lambda note: _note_embeds_at(at(), note))  # once a note
    with db.snapshot():
        hosts = _embedded_in(db, at, namespace, as_of, valid_at, results,
                             notes is not None)
        return [_snippet_embeds(embeds_of, replace(r, embedded_in=tuple(hosts[r.memory_id]))
                                if r.memory_id in hosts else r) for r in results]


def _snippet_embeds(embeds_of: Callable[[str], list[Embed]], r):
    """A result with what its snippet's lines embed (the block of regions that
    ``![[Security#^regions]]`` shows in the note): an answer an assistant would otherwise
    read another note for. At most :data:`SNIPPET_EMBEDS`, the first in the file."""
    s = r.snippet
    if s is None or s.line_start is None or "![[" not in s.text or r.note is None:
        return r
    shown = tuple(e for e in embeds_of(r.note) if e.text and e.line is not None
                  and s.line_start <= e.line <= s.line_end)[:SNIPPET_EMBEDS]
    return replace(r, embeds=shown) if shown else r


def _embedded_in(db: Database, at: Callable[[], Cutoff], namespace: str,
                 as_of: int | None, valid_at: int, results: list,
                 held: bool = False) -> dict[str, list[str]]:
    """For search results (sections): the notes that embed each one at the cutoff, keyed
    by memory ID. Only notes whose record lists embeds are read (``held``: the cutoff's
    notes were read by the search, and ``at()`` holds them)."""
    wanted = {r.memory_id for r in results}
    out: dict[str, list[str]] = {}
    if not results or not db.any_record_with(namespace, "embeds"):
        return out
    notes = at().notes if held else None
    hosts = notes.embeds if notes is not None else db.visible_record_fields(
        namespace, as_of, valid_at, ("embeds", "markdown_embeds"), with_key="embeds")
    # an embed can show one of the results' notes only if it holds its name (graph.names_in)
    names = set()
    for note in {r.note for r in results if r.note is not None}:
        if notes is not None:
            names |= names_of(note, notes.aliases.get(note, ()))
            continue
        record = db.visible(namespace, record_id(note), as_of, valid_at)
        names |= names_of(note, (record.metadata or {}).get("aliases", []) if record else [])
    cut = None
    for source, meta in hosts:
        written_as_markdown = set(meta.get("markdown_embeds", []))
        for raw in meta.get("embeds", []):
            named = names_in(raw)
            if named is not None and not named & names:
                continue
            cut = cut or at()
            occ = link_syntax.Occurrence(raw, True, raw in written_as_markdown, 0)
            target, section = cut.resolve(occ, source)
            if section is not None:
                shown = ([r.memory_id for r in cut.with_subsections(target.note, section)]
                         if target.kind == SECTION else [section])
                for memory_id in wanted.intersection(shown):
                    out.setdefault(memory_id, []).append(source)
            elif target.kind == "note" and target.note:
                for r in results:
                    if r.note == target.note:
                        out.setdefault(r.memory_id, []).append(source)
    return {k: sorted(set(v)) for k, v in out.items()}
