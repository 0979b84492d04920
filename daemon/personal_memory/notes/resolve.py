"""Where a link points, as Obsidian resolves it, among the notes known at one time. Pure.

A wikilink ``[[target#fragment]]`` names a note by its path from the vault's root or by
its file name (``.md`` optional, case ignored); when several notes share the name, the one
in the linking note's folder wins, then the shortest path, then the first in order; an
alias of a note is tried last. A Markdown link ``[text](path.md#fragment)`` (URL-escaped)
is a path relative to the linking note, else, as Obsidian writes them too, a path from
the vault's root or the shortest unique name (``./`` and ``../`` links are relative only;
aliases are never tried). ``#Heading`` (or ``#H1#H2``) names a section,
``#^id`` a block (the line that ends with ``^id``). An empty target is the note itself.
A name with another extension is a note's when a note is so named ("Dr. Hoffmann",
"23.09.2026"), else another file's, an attachment; URLs are external; what matches nothing
is dangling.

Resolution belongs to a time, not to the revision that holds the link: the same
``[[Plan]]`` is dangling before Plan.md exists and resolved after, and points to the new
path after a rename, so links are resolved at each cutoff from the notes visible then.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

NOTE = "note"
SECTION = "section"
BLOCK = "block"
ATTACHMENT = "attachment"
EXTERNAL = "external"
DANGLING = "dangling"


@dataclass(frozen=True)
class Target:
    kind: str  # note, section, block, attachment, external or dangling
    note: str | None = None  # COLLECTION/path.md of the note it resolves to
    fragment: str | None = None  # the heading path or ^block as written


# What ends a file's name as its type: letters and digits, a letter among them (".pdf",
# ".mp3"); ". Who" (Dr. Who), ".2026" (24.12.2026) and ".3" (v1.3) end a note's name, and
# such a link to no note is one to a note not written yet.
_FILE_TYPE = re.compile(r"\.(?=[a-z0-9]*[a-z])[a-z0-9]{1,8}")


def _stem(path: str) -> str:
    low = path.casefold()
    return path[:-3] if low.endswith(".md") else path


class NoteIndex:
    """The notes of one collection known at a time: their paths and aliases."""

    def __init__(self, collection: str, notes: dict[str, list[str]]):
        self.collection = collection
        prefix = collection + "/"
        self.paths: dict[str, str] = {}  # stem of the collection-relative path -> note ID
        self.names: dict[str, list[str]] = {}  # file name stem -> note IDs
        self.aliases: dict[str, list[str]] = {}
        for note, aliases in sorted(notes.items()):
            if not note.startswith(prefix):
                continue
            rel = _stem(note[len(prefix):]).casefold()
            self.paths[rel] = note
            self.names.setdefault(posixpath.basename(rel), []).append(note)
            for alias in aliases:
                self.aliases.setdefault(alias.casefold(), []).append(note)
        self.rels = {note: rel for rel, note in self.paths.items()}

    def tails(self, key: str) -> list[str]:
        """The notes whose path ends with ``/key``: among those of its file name, so a
        partial path costs what the notes so named cost, not a scan of every note."""
        end = "/" + key
        return [n for n in self.names.get(posixpath.basename(key), ())
                if n in self.rels and self.rels[n].endswith(end)]

    def _pick(self, candidates: list[str], source: str) -> str:
        if len(candidates) == 1:
            return candidates[0]
        folder = posixpath.dirname(source)
        return min(candidates, key=lambda n: (posixpath.dirname(n) != folder, len(n), n))

    def resolve(self, raw: str, source: str, markdown: bool = False) -> Target:
        target = raw.strip()
        if markdown:
            if "://" in target or target.startswith(("mailto:", "obsidian:", "tel:")):
                return Target(EXTERNAL)
            target = unquote(target)
        path, _, fragment = target.partition("#")
        fragment = fragment.strip() or None
        kind = (BLOCK if fragment.startswith("^") else SECTION) if fragment else NOTE
        path = path.strip()
        if not path:
            return Target(kind, source, fragment)
        # A name with a dot ("Dr. Hoffmann", "23.09.2026") is a note's when one is so named,
        # else another file's, as Obsidian reads it
        ext = posixpath.splitext(path)[1].casefold()
        missing = Target(ATTACHMENT if _FILE_TYPE.fullmatch(ext) and ext not in (
            ".md", ".markdown") else DANGLING, None, fragment)
        if markdown:
            rel_source = source[len(self.collection) + 1:]
            base = "" if path.startswith("/") else posixpath.dirname(rel_source)
            joined = posixpath.normpath(posixpath.join(base, path.lstrip("/")))
            found = self.paths.get(_stem(joined).casefold())
            if found:
                return Target(kind, found, fragment)
            if path.startswith((".", "/")):  # ./x.md, ../x.md: relative and nothing else
                return missing
        else:
            path = path.removesuffix("\\").strip()  # a table's [[Y\|why]], as stored before
        key = _stem(path).casefold().lstrip("/")
        found = self.paths.get(key)
        if found is None and "/" in key:  # a partial path: the end of a note's path
            tails = self.tails(key)
            found = self._pick(tails, source) if tails else None
        if found is None:
            named = self.names.get(posixpath.basename(key))
            if named and "/" not in key:
                found = self._pick(named, source)
        if found is None and not markdown:
            aliased = self.aliases.get(key)
            found = self._pick(aliased, source) if aliased else None
        return Target(kind, found, fragment) if found else missing


class VisibleNotes:
    """The notes visible at one cutoff as a search's fast path holds them: each note's
    aliases (``aliases``), and each note whose record lists embeds with what it lists
    (``embeds``: note, {"embeds": [...], "markdown_embeds": [...]}), so that the notes
    embedding a search's results are found without reading every record again. The
    :class:`NoteIndex` of a collection is made once."""

    def __init__(self, aliases: dict[str, tuple[str, ...]], embeds: list[tuple[str, dict]]):
        self.aliases = aliases
        self.embeds = embeds
        self._indexes: dict[str, NoteIndex] = {}

    def share(self, other: "VisibleNotes") -> None:
        """Use ``other``'s indexes: it holds the same notes with the same aliases."""
        self._indexes = other._indexes

    def index(self, collection: str) -> NoteIndex:
        if collection not in self._indexes:
            prefix = collection + "/"
            self._indexes[collection] = NoteIndex(collection, {
                n: list(a) for n, a in self.aliases.items() if n.startswith(prefix)})
        return self._indexes[collection]
