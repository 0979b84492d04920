"""The links between notes at a cutoff, as the ranking reads them (:func:`ranking.linked`):
which notes each note links to, and how many notes link to each. Read from the records
of the notes visible then (the targets each lists: links, embeds and Markdown links) and
resolved among those notes (:mod:`notes.resolve`), so a search at a cutoff sees the links
of then alone. A record lists targets without saying how they were written, so one that
reads as a Markdown link's (a file type of a note, ``%`` escapes, ``./`` or ``../``:
``[index](index.md)``, as Obsidian writes them) is resolved as a Markdown link first,
relative to its note, and any other as a wikilink first; each is then tried the other
way. Pure."""

from __future__ import annotations

import functools
import posixpath
from collections import Counter
from typing import Iterable, Sequence
from urllib.parse import unquote

from ..notes.resolve import NoteIndex


class Resolver:
    """Where the targets a note lists point among one set of notes, ``names``: note ID ->
    its aliases. A target is resolved once per folder that lists it."""

    def __init__(self, names: dict[str, tuple[str, ...]]):
        self.names = names
        collections: dict[str, dict[str, list[str]]] = {}
        for note, aliases in names.items():
            collections.setdefault(note.split("/", 1)[0], {})[note] = list(aliases)
        self._indexes = {c: NoteIndex(c, notes) for c, notes in collections.items()}
        self._seen: dict[tuple[str, str], str | None] = {}  # (folder, target) -> note
        self.touched: set[str] = set()  # after(): the names of the notes that changed

    def after(self, names: dict[str, tuple[str, ...]]) -> "Resolver":
        """A resolver for another set of notes that keeps what this one resolved, but for
        the targets a note added, removed or given other aliases can change: those whose
        file name is such a note's, or one of those aliases (:func:`names_in`)."""
        new = Resolver(names)
        changed = {n for n in self.names.keys() | names.keys()
                   if self.names.get(n) != names.get(n)}
        touched = {key for n in changed
                   for key in names_of(n, (*self.names.get(n, ()), *names.get(n, ())))}
        new.touched = touched
        for key, target in self._seen.items():
            if not _may_name(key[1], touched):
                new._seen[key] = target
        return new

    def kept(self, written: Sequence[str]) -> bool:
        """Whether targets resolved before :meth:`after` made this resolver resolve the
        same here: none can hold the name of a note added, removed or re-aliased."""
        return not any(_may_name(raw, self.touched) for raw in written)

    def targets(self, note: str, written: Sequence[str]) -> frozenset[str]:
        """The notes ``note`` links to (itself left out), from the targets it lists."""
        index = self._indexes.get(note.split("/", 1)[0])
        if index is None:
            return frozenset()
        folder = posixpath.dirname(note)  # resolution depends on it alone (notes.resolve)
        found = set()
        for raw in written:
            if not raw.partition("#")[0].strip():
                continue  # [[#Heading]]: a link within the note
            key = (folder, raw)
            target = self._seen.get(key, ())
            if target == ():
                first = _written_as_markdown(raw)
                target = (index.resolve(raw, note, markdown=first).note
                          or index.resolve(raw, note, markdown=not first).note)
                if target != note:  # "%23Setup" is the note itself, whichever it is
                    self._seen[key] = target
            if target is not None:
                found.add(target)
        found.discard(note)
        return frozenset(found)


def _stem(path: str) -> str:
    return path[:-3] if path.casefold().endswith(".md") else path


def names_of(note: str, aliases: Sequence[str]) -> set[str]:
    """The names a target must hold (:func:`names_in`) to resolve to ``note``: its file
    name and its aliases, case folded."""
    return {posixpath.basename(_stem(note.split("/", 1)[-1]).casefold()),
            *(a.casefold() for a in aliases)}


@functools.lru_cache(maxsize=1 << 18)  # a vault's targets repeat from search to search
def names_in(raw: str) -> frozenset[str] | None:
    """The names a target can be resolved by (notes.resolve): the file name its path ends
    with, read as a wikilink and as a Markdown link, and the whole path (an alias); None
    when it ends in a dot step or a slash, which make it a folder's name."""
    out = set()
    for path in (raw.strip().partition("#")[0].strip().removesuffix("\\").strip(),
                 unquote(raw.strip()).partition("#")[0].strip()):
        if path.rsplit("/", 1)[-1] in (".", "..", ""):
            return None  # "a/..", "a/": the name is the folder's
        key = _stem(path).casefold().lstrip("/")
        out |= {posixpath.basename(key), key}
    return frozenset(out)


def _may_name(raw: str, names: set[str]) -> bool:
    """Whether a target can hold one of ``names`` (:func:`names_in`). Every name a target
    holds is a part of it, case folded, unless it is escaped (%) or ends in a dot step or a
    slash; those are read whole, the others only when a name is a part of them."""
    path = raw.partition("#")[0].rstrip()
    if "%" in raw or path.endswith(("/", ".", "\\")) or not path:
        named = names_in(raw)
        return named is None or bool(named & names)
    folded = raw.casefold()
    return any(name in folded for name in names) and (
        (named := names_in(raw)) is None or bool(named & names))


def _written_as_markdown(raw: str) -> bool:
    path = raw.partition("#")[0].strip()
    return path.casefold().endswith((".md", ".markdown")) or "%" in path \
        or path.startswith(("./", "../"))


class LinkGraph:
    """``out``: the notes each note links to; ``degree[note]``: how many notes link to it."""

    def __init__(self, out: dict[str, frozenset[str]]):
        self.out = {note: targets for note, targets in out.items() if targets}
        self.degree: Counter[str] = Counter()
        for targets in self.out.values():
            self.degree.update(targets)

    @classmethod
    def of(cls, records: Iterable[tuple[str, dict]]) -> "LinkGraph":
        """The graph of ``records``: (note ID, its record's metadata) of every note
        visible at a cutoff."""
        records = list(records)
        resolver = Resolver({note: tuple(meta.get("aliases", ())) for note, meta in records})
        return cls({note: resolver.targets(note, meta["links"]) for note, meta in records
                    if meta.get("links")})

    def targets(self, note: str) -> frozenset[str]:
        return self.out.get(note, frozenset())
