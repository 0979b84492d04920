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
import gc
import posixpath
from collections import Counter
from typing import Callable, Iterable, Sequence
from urllib.parse import unquote

from ..notes.resolve import VisibleNotes


class Resolver:
    """Where the targets a note lists point among one set of notes, ``names``: note ID ->
    its aliases. A target is resolved once per folder that lists it."""

    def __init__(self, names: dict[str, tuple[str, ...]], notes: VisibleNotes | None = None):
        self.names = names
        # each collection's NoteIndex, made when first asked for (``notes``: those notes,
        # whose indexes a search's embeds use too)
        self.notes = notes if notes is not None else VisibleNotes(names, [])
        self._collections = {note.split("/", 1)[0] for note in names}
        self._seen: dict[tuple[str, str], str | None] = {}  # (folder, target) -> note
        # _seen's keys (shared with the resolvers after)
        self._naming = NameIndex(lambda key: (key[1],))
        self.touched: set[str] = set()  # after(): the names of the notes that changed

    def after(self, names: dict[str, tuple[str, ...]],
              notes: VisibleNotes | None = None) -> "Resolver":
        """A resolver for another set of notes that keeps what this one resolved, but for
        the targets a note added, removed or given other aliases can change: those whose
        file name is such a note's, or one of those aliases (:func:`names_in`)."""
        new = Resolver(names, notes)
        changed = {n for n in self.names.keys() | names.keys()
                   if self.names.get(n) != names.get(n)}
        touched = {key for n in changed
                   for key in names_of(n, (*self.names.get(n, ()), *names.get(n, ())))}
        new.touched = touched
        new._seen = dict(self._seen)
        for key in self._naming.naming(touched):
            new._seen.pop(key, None)
        new._naming = self._naming
        return new

    def targets(self, note: str, written: Sequence[str]) -> frozenset[str]:
        """The notes ``note`` links to (itself left out), from the targets it lists."""
        collection = note.split("/", 1)[0]
        if collection not in self._collections:
            return frozenset()
        index = self.notes.index(collection)
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
                    self._naming.add(key)
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


class NameIndex:
    """Keys (of resolutions, of records) by the names their targets can be resolved by
    (:func:`names_in`; ``raws_of(key)``: its targets), to find those a changed note's
    names may change without reading them all. A key once added stays (looking up one no
    longer kept finds nothing). Keys are indexed when first looked up: a search that
    never sees a note added or renamed (a command line's one search) never pays for it."""

    def __init__(self, raws_of: Callable[[object], Iterable[str]]):
        self._raws_of = raws_of
        self._keys: dict[str, set] = {}  # target -> the keys that hold it
        self._by_name: dict[str, list[str]] = {}  # name -> the targets it resolves
        self._whole: list[str] = []  # targets read whole: a folder's name, "a/.."
        self._pending: list = []

    def add(self, key) -> None:
        self._pending.append(key)

    def naming(self, names: set[str]) -> set:
        """The keys with a target that can hold one of ``names``: one resolved by such a
        name, or one read whole (:func:`names_in`)."""
        keys = self._keys
        was_on = gc.isenabled()
        gc.disable()  # tens of thousands of new sets: no collection scans them part-built
        try:
            self._index_pending()
        finally:
            if was_on:
                gc.enable()
        out: set = set()
        for raw in [*self._whole, *(r for n in names for r in self._by_name.get(n, ()))]:
            out |= keys[raw]
        return out

    def _index_pending(self) -> None:
        keys = self._keys
        for key in self._pending:
            for raw in self._raws_of(key):
                held = keys.get(raw)
                if held is None:  # a target first seen: its names, once
                    held = keys[raw] = set()
                    named = names_in(raw)
                    if named is None:
                        self._whole.append(raw)
                    else:
                        for name in named:
                            self._by_name.setdefault(name, []).append(raw)
                held.add(key)
        self._pending.clear()


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
