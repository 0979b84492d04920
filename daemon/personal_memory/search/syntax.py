"""The search syntax, parsed in one place. Pure.

    words                  ranked by keyword and meaning, as before
    "exact phrase"         only memories holding these words in this order (also ranked)
    -word  -"a phrase"     no memory holding it
    path:TEXT              the note's path (COLLECTION/folder/name.md) contains TEXT
    folder:TEXT            the note is in a folder TEXT, or below it (folder:Projects/2025)
    file:TEXT              the note's file name contains TEXT
    section:TEXT           the section's heading path contains TEXT
    tag:NAME               the note has the tag (or a tag nested under it)

A day or month named with its year among the words ("in December 2023", "2023-10-13"),
or a day without it ("on March 14"), also favours the memories about then (a daily
note of that day; :mod:`dates`, ``ranking.DATED``).

A value with spaces is quoted (``path:"Team docs"``); filters of the same kind widen
(any of them), of different kinds narrow (all of them); matching ignores case. Filters are
applied to the visible rows before ranking, so BM25 and the semantic statistics are those
of the filtered set. An unknown ``name:`` is an ordinary word (``10:30``, ``re:``). A
folder: filter that names no folder known, or whose name the next words go on with, gets
a warning (:func:`folder_warnings`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable

from ..errors import InvalidArgument
from ..notes.front_matter import wanted_tag
from ..notes.markdown import id_text
from .dates import Named, periods_named

OPERATORS = ("path", "folder", "file", "section", "tag")
_TOKEN = re.compile(r'(-?)(?:(\w+):)?("([^"]*)("?)|\S+)')


@dataclass(frozen=True)
class Query:
    words: str  # what is ranked: the free words and the phrases' words
    phrases: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()  # words and phrases
    paths: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def filters(self) -> list[str]:
        """The query's filters as a user writes them (tags, paths, phrases, exclusions)."""
        ops = [f"{op}:{v}" for op, values in (("tag", self.tags), ("path", self.paths),
                                              ("folder", self.folders), ("file", self.files),
                                              ("section", self.sections)) for v in values]
        return (ops + [f'"{p}"' for p in self.phrases]
                + [f"-{x}" if " " not in x else f'-"{x}"' for x in self.excluded])

    def periods(self, at: int) -> Named:
        """The days and months the words name, "yesterday" the day before ``at``, the
        moment the answer is about (:mod:`dates`)."""
        return periods_named(self.words, at)

    @property
    def filters_rows(self) -> bool:
        """Whether anything narrows the rows beyond visibility and tags."""
        return bool(self.phrases or self.excluded or self.paths or self.folders or self.files
                    or self.sections)


def parse(text: str, tags: tuple[str, ...] | None = None) -> Query:
    """A query string (and the tags given apart from it) as a :class:`Query`; a malformed
    part is a one-line :class:`InvalidArgument` naming it."""
    words: list[str] = []
    found: dict[str, list[str]] = {k: [] for k in ("phrases", "excluded", *OPERATORS)}
    for m in _TOKEN.finditer(text):
        minus, op, whole, quoted, closing = m.groups()
        if quoted is not None and closing != '"':
            raise InvalidArgument(f"query: the quote in {m.group(0)!r} is not closed")
        value = quoted if quoted is not None else whole
        if op is None and whole.endswith(":") and whole[:-1].casefold() in OPERATORS:
            op, value = whole[:-1], ""
        if op is not None and op.casefold() not in OPERATORS:
            words.append(m.group(0))  # not ours: an ordinary word with a colon
            continue
        if op is not None:
            if minus:
                raise InvalidArgument(f"query: {m.group(0)!r}: a filter cannot be excluded; "
                                      "leave out the '-'")
            if not value.strip():
                raise InvalidArgument(f"query: {m.group(0)!r} has no value (as in "
                                      f"{op.casefold()}:Projects)")
            # a path is stored NFC: a name typed or pasted decomposed (macOS) is the same
            wanted = value.strip()
            found[op.casefold()].append(unicodedata.normalize("NFC", wanted)
                                        if op.casefold() in ("path", "folder", "file")
                                        else wanted)
            continue
        if minus:
            if not value.strip() or value == "-":
                raise InvalidArgument(f"query: {m.group(0)!r}: '-' needs a word after it")
            found["excluded"].append(value.strip())
            continue
        if quoted is not None:
            if not quoted.strip():
                raise InvalidArgument('query: "" is an empty phrase')
            found["phrases"].append(quoted.strip())
        words.append(value)
    ranked = " ".join(w for w in words if w.strip())
    if not ranked.strip():
        raise InvalidArgument("query: give words to search for, besides filters and "
                              "exclusions")
    all_tags = tuple(dict.fromkeys([*(tags or ()), *(wanted_tag(t) for t in found["tag"])]))
    return Query(words=ranked, phrases=tuple(found["phrases"]),
                 excluded=tuple(found["excluded"]), paths=tuple(found["path"]),
                 folders=tuple(found["folder"]), files=tuple(found["file"]),
                 sections=tuple(found["section"]), tags=all_tags)


def tags_alone(text: str) -> tuple[str, ...]:
    """The tags of a query that holds ``tag:`` filters and nothing else (no word to rank
    by: such a query lists the notes that have them), else ()."""
    parts = text.split()
    if parts and all(p[:4].casefold() == "tag:" and len(p) > 4 for p in parts):
        return tuple(p[4:] for p in parts)
    return ()


def section_of(memory_id: str, note: str | None) -> str:
    """The part of a memory ID that names its section (its heading path), as the section
    filter reads it; the whole ID for a memory that is not part of a note."""
    if note and memory_id.startswith(note):
        return memory_id[len(note):].lstrip("#")
    return memory_id


def note_matches(query: Query, note: str | None) -> bool:
    """Whether a note passes the path, folder and file filters (a memory outside notes
    passes only when there are none)."""
    if not (query.paths or query.folders or query.files):
        return True
    if note is None:
        return False
    low = note.casefold()
    folder, _, name = low.rpartition("/")
    if query.paths and not any(p.casefold() in low for p in query.paths):
        return False
    if query.folders and not any(_in_folder(f, f"/{folder}/") for f in query.folders):
        return False
    if query.files and not any(f.casefold() in name for f in query.files):
        return False
    return True


def _in_folder(wanted: str, folder: str) -> bool:
    """Whether ``folder`` (a note's folders, ``/a/b/``, case folded) is the wanted one or
    below it."""
    return f"/{wanted.casefold().strip('/')}/" in folder


MAX_WORDS_TRIED = 5  # words after an unquoted folder: filter that may belong to its name


def folder_warnings(text: str, folders: tuple[str, ...], notes: Iterable[str],
                    where: str) -> list[str]:
    """A line for each folder: filter that names no folder of ``notes`` (known ``where``:
    "as of ... in namespace ..."), or whose name goes on in the words after it unquoted
    (``folder:Obsidian Sync``: the shell ate the quotes)."""
    known = {f"/{n.casefold().rpartition('/')[0]}/" for n in notes}

    def names_one(name: str) -> bool:
        return any(_in_folder(name, f) for f in known)

    out = []
    for wanted in dict.fromkeys(folders):
        longer = next((x for x in reversed(_continued(text, wanted)) if names_one(x)), None)
        if names_one(wanted):
            if longer:
                out.append(f'folder:{wanted} searched the folder "{wanted}"; for the '
                           f'folder "{longer}", quote it: folder:"{longer}"')
        elif longer:
            out.append(f'folder:{wanted} names no folder known {where}; the folder '
                       f'"{longer}" has a space: quote it, folder:"{longer}"')
        else:
            out.append(f"folder:{wanted} names no folder known {where}")
    return out


def _continued(text: str, wanted: str) -> list[str]:
    """``wanted`` followed by one, two... of the plain words after it, where an unquoted
    folder:wanted is followed by some."""
    tokens = list(_TOKEN.finditer(text))
    for i, m in enumerate(tokens):
        minus, op, whole, quoted, _ = m.groups()
        if op and op.casefold() == "folder" and quoted is None and whole == wanted:
            words = []
            for after in tokens[i + 1:i + 1 + MAX_WORDS_TRIED]:
                if after.group(1) or after.group(2) or after.group(4) is not None:
                    break
                words.append(after.group(3))
            return [" ".join([wanted, *words[:k]]) for k in range(1, len(words) + 1)]
    return []


def section_matches(query: Query, memory_id: str, note: str | None) -> bool:
    if not query.sections:
        return True
    text = section_of(memory_id, note).casefold()
    # a heading as written ("C# tips") is in its memory ID as a heading link names it
    return any(s.casefold() in text or id_text(s).casefold() in text for s in query.sections)
