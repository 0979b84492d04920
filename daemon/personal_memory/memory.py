"""The public Python API: :class:`MemoryStore`. The CLI, the daemon, the MCP server and the
page are thin adapters over it; every method validates its arguments (``arguments``),
calls one engine function and returns a named record."""

from __future__ import annotations

import difflib
import json
import os
import threading
import unicodedata
from collections import Counter
from dataclasses import replace
from typing import Any, Iterator

from . import arguments as args
from .embedding import models as embedders
from .errors import InvalidArgument, NotFound
from .limits import FIRST_RESULT_MORE, MAX_ID_CHARS, MAX_LIMIT
from .notes.folders import Folder
from .records import (Activity, AnswerCounts, Appended, Capabilities, Changes, FolderEntry, FolderListing, Link,
                      Links, NoteTimeline, NoteView, RecentNote, RevisionRecord, SearchResults,
                      TagListing, WriteResult)
from .search import grouping, lexicon, reference, syntax
from .search.contract import NO_WORDS, Ranked, Semantic, has_tag, has_words
from .search.dates import impossible_dates
from .search.snippets import holds_a_word, names_all, with_snippets
from .search.text import is_phrase, model_text
from .store import Database, capabilities
from .timeline import moves, renames, writes
from .timeline.links import note_embeds, note_links, resolve_targets, search_embeds
from .timeline.reading import read_note, unknown_note
from .times import format_time, now_micros, parse_moment, parse_time
from .upkeep import Upkeep

EXPORT_FORMAT = "personal-memory-export"
EXPORT_VERSION = 1

# Guards the lazy creation of a store's in-memory search index: the MCP server's warm-up
# thread and its tool threads may reach it at the same moment.
_INDEX_LOCK = threading.Lock()


class _Reference:
    """The reference path where the in-memory index must not look (MemoryStore._ranker)."""

    @staticmethod
    def search(db, query, **kw) -> Ranked:
        return reference.search_reference(db, query, **kw)


_UNCOMMITTED = _Reference()


class MemoryStore(Upkeep):
    """A point-in-time memory store in one SQLite file. One object per thread; readers
    on several threads share one search index through :meth:`share_search_index`."""

    def __init__(self, db: Database, embedder: embedders.Embedder | None = None,
                 embedder_note: str = ""):
        if isinstance(db, (str, bytes, os.PathLike)):  # MemoryStore("notes.db")
            raise TypeError(f"MemoryStore({db!r}): open a store by its path with "
                            "MemoryStore.open(path)")
        self._db = db
        self._index = None  # the fast search path's in-memory state, built on first search
        self._embedder = embedder
        self._holds_encoder = embedder is not None
        if self._holds_encoder:
            embedders.hold_encoder()
        self._embedder_note = embedder_note or (f"semantic: {embedder.key}" if embedder
                                                else "keyword-only")

    @classmethod
    def open(cls, path: str | os.PathLike, *, read_only: bool = False,
             vector_backend: str = "auto", create: bool = True,
             embedder: "str | embedders.Embedder" = "auto") -> "MemoryStore":
        """Open (or create) a store. ``embedder``: ``auto`` (the semantic model where it is
        installed, else keyword-only), ``e5``, ``none``, or an :class:`Embedder` object."""
        if isinstance(embedder, str):
            model, note = embedders.load(embedder)
        else:
            model, note = embedder, ""
        db = Database.open(path, read_only=read_only, vector_backend=vector_backend,
                           create=create)
        from .replication.restore import remove_leftovers
        remove_leftovers(os.path.dirname(db.path))  # a killed restore's old history
        return cls(db, model, note)

    @classmethod
    def open_replica(cls, url: str, *, vector_backend: str = "auto",
                     embedder: "str | embedders.Embedder" = "auto") -> "MemoryStore":
        """A read-only store reading a Litestream replica in place (never written to); the
        process it needs: :mod:`personal_memory.replication.replica`."""
        from .replication.replica import open_database
        model, note = embedders.load(embedder) if isinstance(embedder, str) else (embedder, "")
        store = cls(open_database(url, vector_backend), model, note)
        store._replica = url
        return store

    _replica: str | None = None  # the replica's URL, for a store opened by open_replica

    def reopen(self, *, read_only: bool | None = None) -> "MemoryStore":
        """Another connection to the same file with the same semantic model, for another
        thread (a store belongs to one thread)."""
        if self._replica is not None:
            return MemoryStore.open_replica(self._replica, vector_backend=self.vector_backend,
                                            embedder=self._embedder or "none")
        return MemoryStore(Database.open(self.path, read_only=self.read_only if read_only is None
                                         else read_only,
                                         vector_backend=self.vector_backend, create=False),
                           self._embedder, self._embedder_note)

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._db.close()
        finally:
            if self._holds_encoder:
                self._holds_encoder = False
                embedders.release_encoder()

    @property
    def path(self) -> str:
        return self._db.path

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    @property
    def vector_backend(self) -> str:
        return self._db.vector_backend

    @property
    def embedder(self) -> str | None:
        """The key (model and version) of the vectors this store searches and writes, or
        None when search is keyword-only."""
        return self._embedder.key if self._embedder is not None else None

    @property
    def model(self) -> "embedders.Embedder | None":
        """The embedder object itself (None: keyword-only), for another store that must
        search with the same model (:meth:`reopen`, a reader pool)."""
        return self._embedder

    @property
    def embedder_note(self) -> str:
        """One line: semantic (which model) or keyword-only (and why)."""
        return self._embedder_note

    @staticmethod
    def capabilities(vector_backend: str = "auto") -> Capabilities:
        """SQLite version, FTS5 and the vector backend this installation would use."""
        return capabilities(vector_backend)

    # -- writes -------------------------------------------------------------------------

    def batch(self):
        """A context manager: every remember/forget inside is one transaction, all or
        nothing. Much faster for bulk imports than one transaction per write. A batch
        inside a batch is a part of it, undone whole when it fails (the outer goes on if
        the error is caught)."""
        return self._db.transaction(part=True)

    def remember(self, memory_id: str, content: str, *, namespace: str,
                 title: str | None = None, source: str | None = None,
                 known_at: Any = None, valid_from: Any = None, valid_to: Any = None,
                 provenance: dict | None = None) -> WriteResult:
        """Append a revision. An identical, still-visible revision makes this a no-op
        (``created`` False). A ``known_at`` before the memory's newest revision is stored
        but not current (``current`` False, ``newer`` the revision that wins now)."""
        with self._db.transaction():
            self._not_synced(memory_id, namespace, "remember")
            return writes.remember(self._db, memory_id, content, namespace=namespace,
                                   title=title, source=source, known_at=known_at,
                                   valid_from=valid_from, valid_to=valid_to,
                                   provenance=provenance)

    def forget(self, memory_id: str, *, namespace: str, known_at: Any = None,
               valid_from: Any = None, valid_to: Any = None) -> WriteResult:
        """Append a tombstone hiding the memory over [valid_from, valid_to) (default: from
        its known_at on). Forgetting a memory already hidden then (an identical repeat, an
        earlier tombstone, a purge) is a no-op (``created`` False); one with nothing known
        and valid then is an error."""
        with self._db.transaction():
            self._not_synced(memory_id, namespace, "forget")
            return writes.forget(self._db, memory_id, namespace=namespace, known_at=known_at,
                                 valid_from=valid_from, valid_to=valid_to)

    def _not_synced(self, memory_id: Any, namespace: Any, verb: str) -> None:
        """A note's section (or any ID under a folder synced into the namespace) is
        written by the sync alone, from its file: a write through the API would stand in
        for the file's text until the file changed. Refused, saying what to do instead."""
        memory_id, namespace = args.memory_id_arg(memory_id), args.namespace_arg(namespace)
        collection = memory_id.split("/", 1)[0] if "/" in memory_id else None
        latest = self._db.latest_revision(namespace, memory_id)
        synced = (collection is not None
                  and self._db.collection_root(namespace, collection) is not None)
        if synced or (latest is not None and latest.note is not None):
            where = f"the folder synced as {collection!r}" if synced else \
                f"the note {latest.note!r}"
            raise InvalidArgument(
                f"memory_id: {memory_id!r} belongs to {where} in namespace {namespace!r}: "
                f"the sync writes it from the file, so edit the file instead (or {verb} "
                "it under an ID outside that folder)")

    # -- reads --------------------------------------------------------------------------

    def _now(self) -> int:
        """Now, for reads: the wall clock, or the newest revision when the clock is behind
        it (writes are stamped after it, so "now" must see them)."""
        with self._db.errors():
            newest = self._db.max_known_at()
        return now_micros() if newest is None else max(now_micros(), newest)

    def cutoff(self, as_of: Any) -> int | None:
        """A cutoff as this store reads it (microseconds; None for None): ``now`` and a
        span back (``7d``) count from the store's now, never before its newest revision."""
        return args.optional_cutoff(as_of, now=self._now)

    def _search_args(self, query, namespace, as_of, valid_at, limit):
        """Validated arguments of a search: query, namespace, cutoff, valid_at, limit."""
        query = args.query_arg(query)
        limit = args.limit_arg(limit)
        namespace = args.namespace_arg(namespace)
        return (query, namespace, *args.moment(as_of, valid_at, self._now), limit)

    def search(self, query: str, *, namespace: str, as_of: Any = None, valid_at: Any = None,
               limit: int = 10, tags: list[str] | None = None,
               snippets: bool = False, group: str | None = None) -> SearchResults:
        """Rank what was visible at ``as_of`` (default: everything known) for a time
        ``valid_at`` (default: the cutoff, or now). The query may use the search syntax
        (``"exact phrase"``, ``-word``, ``path:``, ``folder:``, ``file:``, ``section:``,
        ``tag:``; see :mod:`personal_memory.search.syntax`); ``tags`` and the filters keep
        only some rows before ranking. ``snippets`` gives each result the lines that best
        match, with their place in the file. ``group``: None (default) answers each
        ranked section; ``"note"`` one result per note (its best-ranked section; a query
        that names one note with ``path:``, ``file:`` or ``section:`` gets that note's
        sections), ``"section"`` one per section (a long section's parts merged). Grouped,
        ``limit`` counts groups and ``also`` (with snippets) names the lines where the
        group's other rows matched. The returned list also carries the resolved ``as_of``
        and ``valid_at``."""
        query, namespace, cutoff, at, limit = self._search_args(query, namespace, as_of,
                                                                valid_at, limit)
        group = args.group_arg(group)
        parsed = syntax.parse(query, args.tags_arg(tags))
        out = self._ranked(parsed, namespace, cutoff, at, limit, snippets, group)
        if parsed.folders:
            out.warnings = self._folder_warnings(query, parsed, namespace, cutoff, at)
        out.warnings += [f"{date} is no day of the calendar: searched as plain words"
                         for date in impossible_dates(parsed.words)]
        return out

    def _folder_warnings(self, query: str, parsed: syntax.Query, namespace: str,
                         cutoff: int | None, at: int) -> list[str]:
        """Folder filters that name no folder known at the cutoff (read only when the
        query has one)."""
        with self._db.errors(), self._db.snapshot():
            notes = {r.note for r in self._db.visible_records(namespace, cutoff, at)
                     if r.note}
        where = (f"as of {format_time(cutoff)} " if cutoff is not None else "") + \
            f"in namespace {namespace!r}"
        return syntax.folder_warnings(query, parsed.folders, notes, where)

    def _ranked(self, parsed: syntax.Query, namespace: str, cutoff: int | None, at: int,
                limit: int, snippets: bool, group: str | None) -> SearchResults:
        if not has_words(parsed.words):
            return self._results(Ranked(no_answer=NO_WORDS), cutoff, at)
        semantic = self._semantic(parsed.words)
        with self._db.errors():
            if group is None:
                found = self._ranker().search(self._db, parsed, namespace=namespace,
                                              as_of=cutoff, valid_at=at, limit=limit,
                                              semantic=semantic)
                rows = [[r] for r in found.results]
            else:
                found, rows = self._grouped(parsed, group, namespace, cutoff, at, limit,
                                            semantic)
            worth_showing = words = None  # without snippets, no result shows more
            if snippets:
                rows = [g[:grouping.GROUP_ROWS] for g in rows]
                terms = found.terms
                flat, words = with_snippets(self._db, [r for g in rows for r in g],
                                            found.marks, namespace, cutoff, at)
                it = iter(flat)
                rows = [[next(it) for _ in g] for g in rows]
                worth_showing = holds_a_word(self._db, terms)
                if group == "note":
                    first = rows[0][0] if rows else None
                    alone = all(is_phrase(t) for t in terms)  # dates' phrases, or none
                    named = names_all(self._db, terms)
                    rows = [grouping.name_matched(g, worth_showing, alone, named)
                            for g in rows]
                    if rows and rows[0][0] is not first:
                        words = None  # those were the lines of the row no longer first
            found.results = grouping.merged(rows, FIRST_RESULT_MORE, worth_showing)
            if words is not None:  # the first row is the first result's best
                found.results[0] = grouping.words_first(found.results[0], words)
            if snippets:
                found.results = search_embeds(self._db, namespace, cutoff, at,
                                              found.results, found.visible_notes)
            if not found.results:
                return self._before_anything(found, namespace, cutoff, at)
        return self._results(found, cutoff, at)

    def _grouped(self, parsed, group: str, namespace: str, cutoff: int | None, at: int,
                 limit: int, semantic) -> tuple[Ranked, list[grouping.Group]]:
        """The first ``limit`` groups of the ranked rows: ranked twice the limit deep,
        then deeper (doubling, up to MAX_LIMIT rows) while fewer groups than asked were
        found and the ranking had more rows to give."""
        window = min(2 * limit, MAX_LIMIT)
        while True:
            found = self._ranker().search(self._db, parsed, namespace=namespace,
                                          as_of=cutoff, valid_at=at, limit=window,
                                          semantic=semantic)
            key = grouping.key_for(group, parsed, found.results)
            rows = grouping.groups(found.results, limit, key)
            if len(rows) == limit or len(found.results) < window or window == MAX_LIMIT:
                if key is grouping.note_key and found.scored_notes is not None:
                    # places of notes: the rows left out may be sections of a note shown
                    found.left_out = max(0, min(limit, found.scored_notes()) - len(rows))
                else:
                    found.left_out = grouping.left_out(limit, len(rows), found.left_out)
                return found, rows
            window = min(2 * window, MAX_LIMIT)

    def _before_anything(self, found: Ranked, namespace: str, cutoff: int | None,
                         at: int) -> SearchResults:
        """An empty answer whose cutoff precedes everything the namespace holds says so,
        and when its first knowledge arrived, instead of "nothing fits"; one in a namespace
        that holds nothing at all names those that hold something (a misspelt name)."""
        out = self._results(found, cutoff, at)
        held = self._db.holds_namespace(namespace)
        first = self._db.first_known(namespace) if held and cutoff is not None else None
        if not held:
            others = [n for n in self._db.namespaces() if n != namespace]
            out.no_answer = f"nothing is known in namespace {namespace!r}" + (
                "; this database holds " + ", ".join(repr(n) for n in others[:10])
                + (" and more" if len(others) > 10 else "") if others else "")
        elif first is not None and cutoff < first:
            out.earliest = format_time(first)
            out.no_answer = (f"nothing was known yet at {format_time(cutoff)}: the earliest "
                             f"knowledge in namespace {namespace!r} is from {out.earliest}")
        return out

    def _semantic(self, query: str) -> Semantic | None:
        model = self._embedder
        if model is None:
            return None
        # The model reads the query as it reads the notes (NFKC: ﾊﾞｯｸｱｯﾌﾟ is バックアップ).
        return Semantic(model.key, embedders.query_soon(model, model_text(query)),
                        model.no_answer_below,
                        getattr(model, "word_pieces", None))

    def _results(self, found: Ranked, cutoff: int | None, at: int) -> SearchResults:
        return SearchResults(found.results, as_of=format_time(cutoff), valid_at=format_time(at),
                             semantic=self.embedder, unembedded=found.unembedded,
                             no_answer=found.no_answer, left_out=found.left_out,
                             known_up_to=self._position(), missing=found.missing)

    def known_up_to(self) -> str | None:
        """On a replica, the newest knowledge it holds (it may lag the database); else None."""
        if self._replica is None:
            return None
        with self._db.snapshot():  # as a search does: a reader left behind catches up
            return self._position()

    def _position(self) -> str | None:
        """:meth:`known_up_to` on the connection as it is (a search's answer says where the
        connection it read stood, not one taken since)."""
        if self._replica is None:
            return None
        with self._db.errors():
            return format_time(self._db.last_known())

    def search_reference(self, query: str, *, namespace: str, as_of: Any = None,
                         valid_at: Any = None, limit: int = 10,
                         tags: list[str] | None = None) -> SearchResults:
        """The same search by the slow, obviously correct path: the visible rows are copied
        into a fresh FTS5 index and ranked there, and cosine is computed row by row from
        the stored vectors. For audits: its answers must equal :meth:`search`'s."""
        query, namespace, cutoff, at, limit = self._search_args(query, namespace, as_of,
                                                                valid_at, limit)
        parsed = syntax.parse(query, args.tags_arg(tags))
        if not has_words(parsed.words):
            return self._results(Ranked(no_answer=NO_WORDS), cutoff, at)
        with self._db.errors():
            found = reference.search_reference(self._db, parsed, namespace=namespace,
                                               as_of=cutoff, valid_at=at, limit=limit,
                                               semantic=self._semantic(parsed.words))
            if not found.results:  # the same words as search's
                return self._before_anything(found, namespace, cutoff, at)
        return self._results(found, cutoff, at)

    def fingerprint(self) -> tuple:
        """The file's identity and the generation of its derived data."""
        with self._db.errors():
            return tuple(self._db.fingerprint())

    def warm(self) -> None:
        """Build the in-memory search index now rather than on the first search (vectors
        included), fetch the postings of the most frequent terms, and load the semantic
        model. Long-running readers call this at start."""
        with self._db.errors():
            self._search_index().warm(self._db, self.embedder)
        if self._embedder is not None:
            self._embedder.query("warm up")
            lexicon.known("warm")  # the word lists a query's unheld word is checked against

    def _ranker(self):
        """What ranks a search: the in-memory index, or inside a write transaction (a
        search in a batch) the reference path, which reads what this connection sees and
        keeps nothing: the index must never hold a row that a rollback takes back."""
        return _UNCOMMITTED if self._db.writing else self._search_index()

    def _search_index(self):
        with _INDEX_LOCK:
            if self._index is None:
                from .search.in_memory import SearchIndex
                self._index = SearchIndex()
            return self._index

    def share_search_index(self, other: "MemoryStore") -> None:
        """Use ``other``'s in-memory search index (same database, another connection), so
        that a reader with one connection per thread keeps one copy in memory."""
        index = other._search_index()
        with _INDEX_LOCK:
            self._index = index

    def get(self, memory_id: str, *, namespace: str, as_of: Any = None,
            valid_at: Any = None) -> RevisionRecord | None:
        """The visible revision of one memory at (``as_of``, ``valid_at``), or None when
        it is unknown then or hidden (by a tombstone or a purge)."""
        memory_id = args.memory_id_arg(memory_id)
        namespace = args.namespace_arg(namespace)
        cutoff, at = args.moment(as_of, valid_at, self._now)
        with self._db.errors(), self._db.snapshot():
            return self._db.visible(namespace, memory_id, cutoff, at)

    def read(self, note: str, *, namespace: str, as_of: Any = None,
             valid_at: Any = None) -> NoteView:
        """A whole note (``COLLECTION/path.md``) as known at ``as_of`` (default: everything
        known): title, tags, and its sections in document order with their memory IDs,
        line spans, revisions and times, and the text put back together. A note that has
        moved since is read under the path it had then (``path_then``). A note deleted by
        then is returned with ``deleted`` set; an unknown one raises NotFound."""
        note = args.note_arg(note)
        namespace = args.namespace_arg(namespace)
        cutoff, at = args.moment(as_of, valid_at, self._now)
        with self._db.errors():
            view = read_note(self._db, namespace, note, cutoff, at)
            if view.deleted or "![" not in view.text:
                return view
            return replace(view, embeds=note_embeds(self._db, namespace,
                                                    view.path_then or view.note, cutoff, at))

    def changes(self, *, namespace: str, since: Any, until: Any = None,
                query: str | None = None, limit: int = 20, offset: int = 0,
                note: str | None = None) -> Changes:
        """What changed between ``since`` (excluded) and ``until`` (included; default now).
        Times are as for ``as_of``, or spans back from now (``24h``, ``7d``, ``2w``),
        resolved once. Without a query: the notes whose sections were added, revised (with
        a word-level diff) or retracted, and notes moved, newest first (at most ``limit``
        notes). With one: the results of the query at both times (two exact searches of
        ``limit`` results), what moved the answer most first; results the same in text and
        rank are listed by ID in ``unchanged``. ``offset`` skips that many notes (the next
        page); ``more`` says how many notes follow the page. ``note`` (without a query):
        that note's changes alone, under every path it had in the span."""
        from .timeline.changes import knowledge_changes, result_changes
        namespace = args.namespace_arg(namespace)
        limit = args.limit_arg(limit)
        offset = args.offset_arg(offset)
        now = self._now()
        start = parse_moment(since, "since", now)
        end = now if until is None else parse_moment(until, "until", now, day_end=True)
        if start >= end:
            raise InvalidArgument(f"since: {format_time(start)} is not before until "
                                  f"{format_time(end)}")
        # a time after now is now, echoed: what arrives later must not change the answer
        # (a span wholly after now holds no change)
        start, end = min(start, now), min(end, now)
        if query is None:
            paths = None
            if note is not None:
                note = args.note_arg(note)
                with self._db.errors(), self._db.snapshot():
                    paths = moves.paths_of(self._db, namespace, note)
            with self._db.errors():
                notes_changed, counts = knowledge_changes(self._db, namespace, start, end,
                                                          limit, offset, paths)
            return Changes(namespace=namespace, since=format_time(start),
                           until=format_time(end), query=None, counts=counts,
                           notes=notes_changed, offset=offset,
                           more=max(0, counts.notes + counts.memories - offset
                                        - len(notes_changed)))
        query = args.query_arg(query)
        # Two exact point-in-time searches: each side is what a search at that time gives.
        before = self.search(query, namespace=namespace, as_of=format_time(start),
                             limit=limit)
        after = self.search(query, namespace=namespace, as_of=format_time(end), limit=limit)

        def visible(memory_id: str) -> bool:
            return self.get(memory_id, namespace=namespace,
                            as_of=format_time(end)) is not None

        wider: list[str] = []

        def still_a_result(memory_id: str) -> bool:
            if not wider:  # the same search without the cut, once, when one is needed
                wider.extend(r.memory_id for r in self.search(
                    query, namespace=namespace, as_of=format_time(end), limit=MAX_LIMIT))
            return memory_id in wider
        with self._db.errors(), self._db.snapshot():
            moved = moves.moved_paths(self._db, namespace, start, end)
        results, unchanged = result_changes(list(before), list(after), visible,
                                            still_a_result, moved)
        kinds = Counter(r.change for r in results)
        counts = AnswerCounts(new=kinds["new"], gone=kinds["gone"], up=kinds["up"],
                              down=kinds["down"], changed=kinds["changed"],
                              moved=kinds["moved"], unchanged=len(unchanged))
        return Changes(namespace=namespace, since=format_time(start), until=format_time(end),
                       query=query, counts=counts, results=results, unchanged=unchanged)

    def history(self, memory_id: str, *, namespace: str, as_of: Any = None,
                ) -> list[RevisionRecord]:
        """Every revision of a memory known by ``as_of``, tombstones and purged stubs
        included, oldest first; a section of a note that moved includes the revisions it
        had under the note's earlier paths (each with its own ``memory_id``)."""
        memory_id = args.memory_id_arg(memory_id)
        namespace = args.namespace_arg(namespace)
        cutoff = args.optional_cutoff(as_of, now=self._now)
        with self._db.errors(), self._db.snapshot():
            revisions = moves.history(self._db, namespace, memory_id, cutoff)
            composed = unicodedata.normalize("NFC", memory_id)
            if not revisions and composed != memory_id:  # a note's path is stored NFC
                revisions = moves.history(self._db, namespace, composed, cutoff)
        if not revisions:
            when = f" as of {format_time(cutoff)}" if cutoff is not None else ""
            named = self._sections_named(memory_id, namespace, cutoff)
            raise NotFound(f"memory {memory_id!r} has no revisions in namespace "
                           f"{namespace!r}{when}{named}")
        return revisions

    def _sections_named(self, memory_id: str, namespace: str, cutoff: int | None) -> str:
        """When ``memory_id`` is a note's path, or a section ID of a note that holds no
        such section: the note's sections by the cutoff (the closest first), for the
        error to name ("#" may be in a file's name, so each place before a "#" is tried
        as the note's end, the longest first)."""
        ends = [len(memory_id)] + [i for i in range(len(memory_id) - 1, 0, -1)
                                   if memory_id[i] == "#"][:8]
        for end in ends:
            note = memory_id[:end]
            try:
                found = self.timeline(note, namespace=namespace).revisions
            except NotFound:
                continue
            ids = list(dict.fromkeys(
                r.memory_id for r in found if r.memory_id.startswith(note + "#")
                and r.memory_id != note + "#"
                and (cutoff is None or parse_time(r.known_at) <= cutoff)))
            if not ids:
                return ""
            if note == memory_id:
                named = ", ".join(repr(i) for i in ids[:3]) + (", ..." if len(ids) > 3 else "")
                return (f"; it is a note, and its memories are its sections ({named}); "
                        "read shows the whole note at a cutoff")
            close = difflib.get_close_matches(memory_id, ids, n=3, cutoff=0)
            named = ", ".join(repr(i) for i in close) + (", ..." if len(ids) > 3 else "")
            return (f"; its note {note!r} has no such section; it has {named} (a "
                    "heading's '#' is left out of its section's ID; read lists them all)")
        with self._db.errors(), self._db.snapshot():  # a path given without its collection
            meant = self._db.notes_meant(namespace, unicodedata.normalize(
                "NFC", memory_id.split("#")[0]), cutoff)
        return ("; did you mean " + " or ".join(repr(m) for m in meant) + "? (a section's ID "
                "starts with its note's)") if meant else ""

    def timeline(self, note: str, *, namespace: str, as_of: Any = None) -> NoteTimeline:
        """Every revision of a note's sections and record known by ``as_of`` (default:
        everything known), under each path it had (a note that moved brings its earlier
        revisions), oldest first, its moves, and the moves away from this path: nothing
        learnt after the cutoff (a later heading, a later move's new path)."""
        note = args.note_arg(note)
        namespace = args.namespace_arg(namespace)
        cutoff, _ = args.moment(as_of, None, self._now)
        with self._db.errors(), self._db.snapshot():
            chain = moves.chain(self._db, namespace, note)
            away = moves.departures(self._db, namespace, note)
            revisions = []
            for path in [m.old_note for m in chain] + [note]:
                revisions += self._db.note_revisions(namespace, path)
        if cutoff is not None:
            def known(r) -> bool:
                return parse_time(r.known_at) <= cutoff
            chain, away = [m for m in chain if known(m)], [m for m in away if known(m)]
            revisions = [r for r in revisions if known(r)]
        if not revisions:
            with self._db.errors(), self._db.snapshot():
                raise unknown_note(self._db, namespace, note, cutoff)
        revisions.sort(key=lambda r: (parse_time(r.known_at), r.revision_id))
        with self._db.errors(), self._db.snapshot():  # a heading's rename: where it went
            revisions = renames.marked(self._db, namespace, revisions)
        return NoteTimeline(note=note, revisions=revisions, moves=chain, moved_away=away)

    def activity(self, *, namespace: str, bucket: str = "day") -> Activity:
        """How many revisions became known per minute, hour, day or week, over the whole
        history."""
        namespace = args.namespace_arg(namespace)
        sizes = {"minute": 60_000_000, "hour": 3_600_000_000, "day": 86_400_000_000,
                 "week": 7 * 86_400_000_000}
        if bucket not in sizes:
            raise InvalidArgument(f"bucket: {bucket!r} is not minute, hour, day or week")
        size = sizes[bucket]
        with self._db.errors(), self._db.snapshot():
            rows = self._db.activity(namespace, size)
        return Activity(namespace=namespace, bucket=bucket,
                        starts=[format_time(s) for s, _ in rows], revisions=[n for _, n in rows])

    def folder(self, folder: str, *, namespace: str, as_of: Any = None,
               limit: int = 200) -> FolderListing:
        """The notes directly in ``folder`` (``COLLECTION`` or ``COLLECTION/sub/dir``) as
        known at ``as_of``, sorted by path (at most ``limit``), and its subfolders with
        how many notes each holds."""
        folder = args.text(folder, "folder", MAX_ID_CHARS).strip("/")
        namespace = args.namespace_arg(namespace)
        limit = args.limit_arg(limit)
        cutoff, at = args.moment(as_of, None, self._now)
        here, below = [], {}
        prefix = folder + "/"
        with self._db.errors(), self._db.snapshot():  # one moment for the list and its times
            for r in self._db.visible_records(namespace, cutoff, at):
                if not r.note.startswith(prefix):
                    continue
                rest = r.note[len(prefix):]
                if "/" in rest:
                    sub = prefix + rest.split("/", 1)[0]
                    below[sub] = below.get(sub, 0) + 1
                else:
                    here.append(r)
            if not here and not below:
                raise NotFound(f"folder {folder!r} holds no notes in namespace {namespace!r}"
                               + (f" as of {format_time(cutoff)}" if cutoff is not None
                                  else "") + " (give COLLECTION or COLLECTION/sub/folder)")
            here.sort(key=lambda r: r.note)
            shown = self._listed(here[:limit], namespace, cutoff, at)
        return FolderListing(namespace=namespace, folder=folder, as_of=format_time(cutoff),
                             notes=shown, folders=dict(sorted(below.items())),
                             more=max(len(here) - limit, 0))

    def _listed(self, records: list[RevisionRecord], namespace: str, cutoff: int | None,
                at: int) -> list[FolderEntry]:
        """Notes' records as listing entries, each with when the note last changed by the
        cutoff: its record or one of its sections (as :attr:`NoteView.changed_at`). Call
        inside the snapshot the records were read in."""
        def changed(r: RevisionRecord) -> str:
            times = [s.known_at for m in (r.metadata or {}).get("sections", [])
                     if (s := self._db.visible(namespace, m, cutoff, at)) is not None]
            return max([r.known_at, *times], key=parse_time)
        return [FolderEntry(note=r.note, title=r.title, known_at=changed(r)) for r in records]

    @staticmethod
    def tags_alone(query: str) -> tuple[str, ...]:
        """The tags of a query that is ``tag:`` filters alone (nothing to rank by, so no
        search: :meth:`tagged` lists what it asks for), else ()."""
        return syntax.tags_alone(query)

    def tagged(self, tags: list[str], *, namespace: str, as_of: Any = None,
               valid_at: Any = None, limit: int = 200) -> TagListing:
        """The notes with any of ``tags`` (or a tag nested under one: ``project`` lists
        ``project/alpha``) as known at ``as_of`` and valid at ``valid_at`` (as a search's
        times), sorted by path (at most ``limit``): what a search with the same tags
        filter would look in."""
        wanted = args.tags_arg(tags)
        if not wanted:
            raise InvalidArgument("tags: give at least one tag")
        namespace = args.namespace_arg(namespace)
        limit = args.limit_arg(limit)
        cutoff, at = args.moment(as_of, valid_at, self._now)
        with self._db.errors(), self._db.snapshot():  # one moment for the list and its times
            found = sorted((r for r in self._db.visible_records(namespace, cutoff, at)
                            if has_tag((r.metadata or {}).get("tags", ()), wanted)),
                           key=lambda r: r.note)
            shown = self._listed(found[:limit], namespace, cutoff, at)
        return TagListing(namespace=namespace, tags=list(wanted), as_of=format_time(cutoff),
                          notes=shown, more=max(len(found) - limit, 0),
                          valid_at=format_time(at))

    def recent_notes(self, *, namespace: str, limit: int = 50) -> list[RecentNote]:
        """The notes changed most recently, newest first."""
        namespace = args.namespace_arg(namespace)
        limit = args.limit_arg(limit)
        out = []
        with self._db.errors(), self._db.snapshot():
            for note, last in self._db.recent_notes(namespace, limit):
                record = self._db.winner(namespace, note + "#", None, self._now())
                out.append(RecentNote(note=note, title=record.title if record else None,
                                      changed_at=format_time(last),
                                      deleted=record is None or record.hidden))
        return out

    def links(self, note: str, *, namespace: str, as_of: Any = None,
              valid_at: Any = None) -> Links:
        """A note's links at ``as_of`` (default: everything known): what it linked to
        (notes, sections, blocks, attachments, URLs, or dangling) and which notes linked to
        it then (backlinks), each with the linking section and its line in the file."""
        note = args.note_arg(note)
        namespace = args.namespace_arg(namespace)
        cutoff, at = args.moment(as_of, valid_at, self._now)
        with self._db.errors():
            return note_links(self._db, namespace, note, cutoff, at)

    def resolve_links(self, note: str, targets: list[tuple[str, bool]], *, namespace: str,
                      as_of: Any = None) -> list[Link]:
        """Where links written in a note point at ``as_of``, resolved as :meth:`links`
        resolves them: ``targets`` are (target as written, whether a Markdown link rather
        than a wikilink), one Link each, in order."""
        note = args.note_arg(note)
        namespace = args.namespace_arg(namespace)
        cutoff, at = args.moment(as_of, None)
        targets = [(str(target), bool(markdown)) for target, markdown in targets]
        with self._db.errors():
            return resolve_targets(self._db, namespace, note, targets, cutoff, at)

    def appended_since(self, revision_id: int | None, *,
                       namespace: str | None = None) -> Appended:
        """The newest revision id, and the notes of the revisions appended after
        ``revision_id`` (None: only the newest id). For readers that announce changes."""
        with self._db.errors(), self._db.snapshot():
            newest = self._db.max_revision_id()
            notes = ([] if revision_id is None or newest <= revision_id else
                     self._db.notes_appended_after(revision_id, namespace))
        return Appended(newest=newest, notes=notes)

    def export(self, *, namespace: str | None = None, as_of: Any = None,
               ) -> Iterator[RevisionRecord]:
        cutoff, _ = args.moment(as_of, None, self._now)  # after now: now
        with self._db.snapshot():
            yield from self._db.revisions_in(namespace, cutoff)

    def export_document(self, *, namespace: str | None = None, as_of: Any = None) -> dict:
        """The export file's content: a versioned JSON document of revisions (the file
        format itself, so a mapping)."""
        cutoff, _ = args.moment(as_of, None, self._now)  # once: "1h" is one moment
        records = [r.to_dict() for r in self.export(
            namespace=namespace, as_of=None if cutoff is None else format_time(cutoff))]
        return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                "exported_at": format_time(now_micros()), "namespace": namespace,
                "as_of": format_time(cutoff), "revisions": records}

    def export_to(self, path: str, *, namespace: str | None = None, as_of: Any = None,
                  ) -> int:
        """Write :meth:`export_document` to a new file (never overwrites); the number of
        revisions written."""
        doc = self.export_document(namespace=namespace, as_of=as_of)
        try:  # private to the user, whatever the umask, as the database and a backup are
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with open(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
        except FileExistsError:
            raise InvalidArgument(f"export: {path} already exists; export never "
                                  "overwrites") from None
        except OSError as exc:
            raise NotFound(f"export: cannot write {path}: {exc.strerror}") from None
        return len(doc["revisions"])
