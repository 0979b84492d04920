"""The public Python API: :class:`MemoryStore`. The CLI, the daemon, the MCP server and the
page are thin adapters over it; every method validates its arguments (``arguments``),
calls one engine function and returns a named record."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

from . import arguments as args
from .embedding import models as embedders
from .embedding.runner import embed_pending, embedder_pid, eta_seconds
from .errors import DatabaseCorrupt, DiskFull, InvalidArgument, NotFound, SchemaError
from .limits import (CLOCK_TOLERANCE_US, MAX_ID_CHARS, MAX_LIMIT, MAX_QUERY_CHARS,
                     REPLICA_MAX_LAG_SECONDS)
from .notes.folders import Folder
from .records import (Activity, Appended, Capabilities, Changes, ClockAnomaly, ClockRepair,
                      DaemonStatus, EmbeddingRun, FolderEntry, FolderListing, Health, Link,
                      Links, NoteTimeline, NoteView, PurgeAudit, PurgeReport, RecentNote,
                      Replication, Restored, RevisionRecord, SearchResults, Stats, Status,
                      SyncReport, SyncRun, VectorStatus, WriteResult)
from .search import grouping, reference, syntax
from .search.contract import NO_WORDS, Ranked, Semantic, has_words, query_terms
from .search.snippets import with_snippets
from .store import SCHEMA_VERSION, Database, capabilities
from .sync.folder_sync import FolderSync
from .sync.status import daemon_status, pid_alive
from .timeline import moves, writes
from .timeline.clock import clock_status, repair_clock
from .timeline.purge import purge as purge_revisions
from .timeline.links import note_embeds, note_links, resolve_targets, search_embeds
from .timeline.reading import read_note
from .times import format_time, now_micros, parse_moment, parse_time

EXPORT_FORMAT = "personal-memory-export"
EXPORT_VERSION = 1

# Guards the lazy creation of a store's in-memory search index: the MCP server's warm-up
# thread and its tool threads may reach it at the same moment.
_INDEX_LOCK = threading.Lock()


class MemoryStore:
    """A point-in-time memory store in one SQLite file. One object per thread; readers
    on several threads share one search index through :meth:`share_search_index`."""

    def __init__(self, db: Database, embedder: embedders.Embedder | None = None,
                 embedder_note: str = ""):
        self._db = db
        self._index = None  # the fast search path's in-memory state, built on first search
        self._embedder = embedder
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
        self._db.close()

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
        nothing. Much faster for bulk imports than one transaction per write."""
        return self._db.transaction()

    def remember(self, memory_id: str, content: str, *, namespace: str,
                 title: str | None = None, source: str | None = None,
                 known_at: Any = None, valid_from: Any = None, valid_to: Any = None,
                 provenance: dict | None = None) -> WriteResult:
        """Append a revision. An identical, still-visible revision makes this a no-op
        (``created`` False). A ``known_at`` before the memory's newest revision is stored
        but not current (``current`` False, ``newer`` the revision that wins now)."""
        with self._db.transaction():
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
            return writes.forget(self._db, memory_id, namespace=namespace, known_at=known_at,
                                 valid_from=valid_from, valid_to=valid_to)

    # -- reads --------------------------------------------------------------------------

    def _now(self) -> int:
        """Now, for reads: the wall clock, or the newest revision when the clock is behind
        it (writes are stamped after it, so "now" must see them)."""
        with self._db.errors():
            newest = self._db.max_known_at()
        return now_micros() if newest is None else max(now_micros(), newest)

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
                found = self._search_index().search(self._db, parsed, namespace=namespace,
                                                    as_of=cutoff, valid_at=at, limit=limit,
                                                    semantic=semantic)
                rows = [[r] for r in found.results]
            else:
                found, rows = self._grouped(parsed, group, namespace, cutoff, at, limit,
                                            semantic)
            if snippets:
                flat = with_snippets(self._db, [r for g in rows for r in g],
                                     query_terms(self._db, parsed.words), namespace, cutoff,
                                     at)
                it = iter(flat)
                rows = [[next(it) for _ in g] for g in rows]
            found.results = grouping.merged(rows)
            if snippets:
                found.results = search_embeds(self._db, namespace, cutoff, at,
                                              found.results)
            if not found.results and cutoff is not None:
                return self._before_anything(found, namespace, cutoff, at)
        return self._results(found, cutoff, at)

    def _grouped(self, parsed, group: str, namespace: str, cutoff: int | None, at: int,
                 limit: int, semantic) -> tuple[Ranked, list[grouping.Group]]:
        """The first ``limit`` groups of the ranked rows: ranked twice the limit deep,
        then deeper (doubling, up to MAX_LIMIT rows) while fewer groups than asked were
        found and the ranking had more rows to give."""
        window = min(2 * limit, MAX_LIMIT)
        while True:
            found = self._search_index().search(self._db, parsed, namespace=namespace,
                                                as_of=cutoff, valid_at=at, limit=window,
                                                semantic=semantic)
            key = grouping.key_for(group, parsed, found.results)
            rows = grouping.groups(found.results, limit, key)
            if len(rows) == limit or len(found.results) < window or window == MAX_LIMIT:
                found.left_out = grouping.left_out(limit, len(rows), found.left_out)
                return found, rows
            window = min(2 * window, MAX_LIMIT)

    def _before_anything(self, found: Ranked, namespace: str, cutoff: int,
                         at: int) -> SearchResults:
        """An empty answer whose cutoff precedes everything the namespace holds says so,
        and when its first knowledge arrived, instead of "nothing fits"."""
        first = self._db.first_known(namespace)
        out = self._results(found, cutoff, at)
        if first is None:
            out.no_answer = f"nothing is known in namespace {namespace!r}"
        elif cutoff < first:
            out.earliest = format_time(first)
            out.no_answer = (f"nothing was known yet at {format_time(cutoff)}: the earliest "
                             f"knowledge in namespace {namespace!r} is from {out.earliest}")
        return out

    def _semantic(self, query: str) -> Semantic | None:
        model = self._embedder
        if model is None:
            return None
        return Semantic(model.key, embedders.query_soon(model, query), model.no_answer_below)

    def _results(self, found: Ranked, cutoff: int | None, at: int) -> SearchResults:
        return SearchResults(found.results, as_of=format_time(cutoff), valid_at=format_time(at),
                             semantic=self.embedder, unembedded=found.unembedded,
                             no_answer=found.no_answer, left_out=found.left_out,
                             known_up_to=self.known_up_to())

    def known_up_to(self) -> str | None:
        """On a replica, the newest knowledge it holds (it may lag the database); else None."""
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
            if not found.results and cutoff is not None:  # the same words as search's
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
                           more=max(0, counts["notes"] + counts["memories"] - offset
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
        results, unchanged = result_changes(list(before), list(after), visible,
                                            still_a_result)
        counts = {kind: sum(r.change == kind for r in results)
                  for kind in ("new", "gone", "up", "down", "changed")}
        counts["unchanged"] = len(unchanged)
        return Changes(namespace=namespace, since=format_time(start), until=format_time(end),
                       query=query, counts=counts, results=results, unchanged=unchanged)

    def history(self, memory_id: str, *, namespace: str, as_of: Any = None,
                ) -> list[RevisionRecord]:
        """Every revision of a memory known by ``as_of``, tombstones and purged stubs
        included, oldest first; a section of a note that moved includes the revisions it
        had under the note's earlier paths (each with its own ``memory_id``)."""
        memory_id = args.memory_id_arg(memory_id)
        namespace = args.namespace_arg(namespace)
        cutoff = args.optional_cutoff(as_of)
        with self._db.errors(), self._db.snapshot():
            revisions = moves.history(self._db, namespace, memory_id, cutoff)
        if not revisions:
            when = f" as of {format_time(cutoff)}" if cutoff is not None else ""
            raise NotFound(f"memory {memory_id!r} has no revisions in namespace "
                           f"{namespace!r}{when}")
        return revisions

    def timeline(self, note: str, *, namespace: str) -> NoteTimeline:
        """Every revision of a note's sections and record, under each path it had (a note
        that moved brings its earlier revisions), oldest first, its moves, and the moves
        away from this path."""
        note = args.note_arg(note)
        namespace = args.namespace_arg(namespace)
        with self._db.errors(), self._db.snapshot():
            chain = moves.chain(self._db, namespace, note)
            away = moves.departures(self._db, namespace, note)
            revisions = []
            for path in [m.old_note for m in chain] + [note]:
                revisions += self._db.note_revisions(namespace, path)
        if not revisions:
            raise NotFound(f"note {note!r} is not known in namespace {namespace!r} (give "
                           "COLLECTION/path.md, as in memory IDs)")
        revisions.sort(key=lambda r: (parse_time(r.known_at), r.revision_id))
        return NoteTimeline(note=note, revisions=revisions, moves=chain, moved_away=away)

    def activity(self, *, namespace: str, bucket: str = "day") -> Activity:
        """How many revisions became known per day (or week), over the whole history."""
        namespace = args.namespace_arg(namespace)
        if bucket not in ("day", "week"):
            raise InvalidArgument(f"bucket: {bucket!r} is not day or week")
        size = 86_400_000_000 * (7 if bucket == "week" else 1)
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
        with self._db.errors(), self._db.snapshot():
            records = self._db.visible_records(namespace, cutoff, at)
        here, below = [], {}
        prefix = folder + "/"
        for r in records:
            if not r.note.startswith(prefix):
                continue
            rest = r.note[len(prefix):]
            if "/" in rest:
                sub = prefix + rest.split("/", 1)[0]
                below[sub] = below.get(sub, 0) + 1
            else:
                here.append(FolderEntry(note=r.note, title=r.title, known_at=r.known_at))
        if not here and not below:
            raise NotFound(f"folder {folder!r} holds no notes in namespace {namespace!r}"
                           + (f" as of {format_time(cutoff)}" if cutoff is not None else "")
                           + " (give COLLECTION or COLLECTION/sub/folder)")
        here.sort(key=lambda e: e.note)
        return FolderListing(namespace=namespace, folder=folder, as_of=format_time(cutoff),
                             notes=here[:limit], folders=dict(sorted(below.items())),
                             more=max(len(here) - limit, 0))

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
        cutoff = args.optional_cutoff(as_of)
        with self._db.snapshot():
            yield from self._db.revisions_in(namespace, cutoff)

    def export_document(self, *, namespace: str | None = None, as_of: Any = None) -> dict:
        """The export file's content: a versioned JSON document of revisions (the file
        format itself, so a mapping)."""
        records = [r.to_dict() for r in self.export(namespace=namespace, as_of=as_of)]
        cutoff = args.optional_cutoff(as_of)
        return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                "exported_at": format_time(now_micros()), "namespace": namespace,
                "as_of": format_time(cutoff), "revisions": records}

    def export_to(self, path: str, *, namespace: str | None = None, as_of: Any = None,
                  ) -> int:
        """Write :meth:`export_document` to a new file (never overwrites); the number of
        revisions written."""
        doc = self.export_document(namespace=namespace, as_of=as_of)
        try:
            with open(path, "x", encoding="utf-8") as fh:
                fh.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
        except FileExistsError:
            raise InvalidArgument(f"export: {path} already exists; export never "
                                  "overwrites") from None
        except OSError as exc:
            raise NotFound(f"export: cannot write {path}: {exc.strerror}") from None
        return len(doc["revisions"])

    # -- state --------------------------------------------------------------------------

    def stats(self, namespace: str | None = None) -> Stats:
        with self._db.errors(), self._db.snapshot():
            counts = self._db.counts(namespace)
            namespaces = self._db.namespaces()
            vectors = self._vector_status(namespace)
        size = sum(os.path.getsize(self.path + suffix) for suffix in ("", "-wal")
                   if os.path.exists(self.path + suffix))
        return Stats(path=os.path.abspath(self.path), namespace=namespace, counts=counts,
                     namespaces=namespaces, bytes=size, vector_backend=self.vector_backend,
                     vectors=vectors)

    def status(self, namespace: str | None = None,
               replica_max_lag: float = REPLICA_MAX_LAG_SECONDS) -> Status:
        """Counts (of one namespace, or all), search and vectors, and the sync daemon's
        state: running or not, last sync, files indexed, problems. The time left for the
        vectors is estimated only while something embeds them: the daemon, or a process
        (a one-shot sync, a reembed) that committed vectors lately and still runs."""
        with self._db.errors(), self._db.snapshot():
            daemon = daemon_status(self._db, namespace)
            vectors = self._vector_status(namespace)
            embedder = embedder_pid(self._db)
            if not daemon.daemon_running and not (embedder and pid_alive(embedder)):
                vectors = replace(vectors, eta_seconds=None)  # nothing embeds: no estimate
            found = Status(namespace=namespace, counts=self._db.counts(namespace),
                           vector_backend=self.vector_backend, vectors=vectors,
                           daemon=daemon, clock=clock_status(self._db),
                           purges_unfinished=[p for p in self._db.purges() if p.unfinished])
        return replace(found, replication=self.replication(replica_max_lag))

    def replication(self, max_lag: float = REPLICA_MAX_LAG_SECONDS) -> Replication:
        """How the Litestream replica stands (``absent`` when none is set up); lagging
        when more than ``max_lag`` seconds behind the last write."""
        from .replication.health import replication
        return (Replication("replica", destination=self._replica, position=self.known_up_to(),
                            max_lag_seconds=max_lag) if self._replica is not None
                else replication(Path(self._db.path), max_lag))

    @staticmethod
    def restore(source: str, to: str | os.PathLike, *, at: Any = None,
                ssh_key: str | None = None) -> Restored:
        """Restore a replica (a folder, an ``sftp://`` or ``s3://`` URL, or a database
        with a replica set up) or a ``memory backup`` file into the new file ``to``, as
        of ``at`` (replicas only), then check the copy: integrity, schema, revisions,
        the newest ``known_at``. ``ssh_key``: the key for an ``sftp://`` URL (default:
        the user's usual one). The copy is made and checked in a scratch folder beside
        ``to``: a restore leaves the checked file at ``to``, or nothing (``ok`` False)."""
        from .replication.restore import (check_source, check_target, place,
                                          remove_leftovers, scratch_folder, write_copy)
        when = args.optional_cutoff(at, "at")
        at_text = format_time(when) if when is not None else None
        target = check_target(Path(to))
        check_source(source)
        remove_leftovers(target.parent)
        with scratch_folder(target) as scratch:
            try:
                copy = write_copy(source, scratch, at_text, ssh_key)
                with MemoryStore.open(copy, read_only=True, create=False,
                                      embedder="none") as store:
                    health = store.health()
            except (DatabaseCorrupt, SchemaError) as exc:  # said of the source
                return Restored(source=source, path=str(target), at=at_text,
                                integrity="failed", schema_version=0, revisions=0,
                                newest_known_at=None, ok=False, problem=str(exc).replace(
                                    str(scratch / "restored.db"), source))
            except DiskFull:
                raise DiskFull(f"restore: disk full writing the copy beside {target}; "
                               "nothing was written (free space and restore again)") from None
            # an older schema is fine (the next writer upgrades it); a newer one is not ours
            ok = (health.integrity == "ok"
                  and health.schema_version <= health.supported_schema_version)
            if ok:
                place(copy, target)
        return Restored(source=source, path=str(target), at=at_text,
                        integrity=health.integrity, schema_version=health.schema_version,
                        revisions=health.revisions, newest_known_at=health.newest_known_at,
                        ok=ok)

    def sync_status(self, namespace: str | None = None) -> DaemonStatus:
        """The sync daemon's part of :meth:`status` alone (no revision counts: cheap
        enough to ask after every sync)."""
        with self._db.errors(), self._db.snapshot():
            return daemon_status(self._db, namespace)

    def sync_runs(self, limit: int = 10) -> list[SyncRun]:
        """The most recent folder syncs, newest first: kind, folders, counts, skipped files
        and status (running, ok, refused, interrupted, failed)."""
        with self._db.errors(), self._db.snapshot():
            return self._db.last_sync_runs(limit)

    def health(self) -> Health:
        """Integrity check, revision count, schema version, vectors, and the clock:
        revisions known after now (beyond the tolerance), how far the newest revision is
        ahead of the clock, and what ``repair_clock`` would repair."""
        now = now_micros()
        with self._db.errors(), self._db.snapshot():
            clock = clock_status(self._db)
            return Health(integrity=self._db.integrity(),
                          revisions=self._db.counts(None).revisions,
                          schema_version=self._db.schema_version(),
                          supported_schema_version=SCHEMA_VERSION,
                          vectors=self._db.vector_counts(),
                          pending_vectors=self.pending_vectors(),
                          future_revisions=[ClockAnomaly(r.revision_id, r.namespace,
                                                         r.memory_id, r.known_at) for r in
                                            self._db.known_after(now + CLOCK_TOLERANCE_US)],
                          clock_behind_by_seconds=clock.behind_seconds,
                          newest_known_at=clock.newest_known_at, clock=clock)

    def repair_clock(self) -> ClockRepair:
        """Make each note what its last sync recorded again where an earlier version
        stamped a write before a revision a clock running ahead had stamped later: one
        audited append after every stored revision (:mod:`personal_memory.timeline.clock`)."""
        with self._db.errors():
            return repair_clock(self._db)

    def backup(self, dest: str) -> None:
        """A consistent copy to a new file (0600), safe while the daemon writes."""
        with self._db.errors():
            self._db.backup_to(dest)

    # -- vectors ------------------------------------------------------------------------

    def pending_vectors(self, namespace: str | None = None) -> int:
        """Revisions a search can rank that have no vector from this store's model yet
        (0 when search is keyword-only: there is no model to wait for)."""
        if self._embedder is None:
            return 0
        with self._db.errors(), self._db.snapshot():
            return self._db.count_missing_vectors(self._embedder.key, namespace)

    def _model(self) -> embedders.Embedder:
        if self._embedder is None:
            raise InvalidArgument("embedder: search is keyword-only here "
                                  f"({self._embedder_note}); there is nothing to embed with")
        return self._embedder

    def embed_pending(self, *, batch_size: int = 32, max_rows: int | None = None,
                      below: int | None = None,
                      progress: Callable[[int, int], None] | None = None,
                      cancel: Callable[[], bool] | None = None) -> EmbeddingRun:
        """Give vectors to revisions that lack them, newest first, one transaction per
        batch, reusing the vector of an identical passage. ``cancel`` is asked before each
        passage: stopping keeps what was embedded, and the next call resumes (``below``:
        pass the returned one back to continue from there)."""
        model = self._model()
        with self._db.errors():
            return embed_pending(self._db, model, batch_size=batch_size, max_rows=max_rows,
                                 below=below, progress=progress, cancel=cancel)

    def reembed(self, *, everything: bool = False, batch_size: int = 32,
                progress: Callable[[int, int], None] | None = None,
                cancel: Callable[[], bool] | None = None) -> EmbeddingRun:
        """Rebuild vectors for this store's model: vectors of other models or versions are
        deleted (they cannot be compared with this model's queries), then every revision
        without a vector is embedded. The same model's vectors of whole sections (before
        pieces) are kept until the end, so a short section's is reused. ``everything``
        also drops this model's own vectors first. Revisions are never touched."""
        model = self._model()
        key, earlier = model.key, tuple(getattr(model, "earlier_keys", ()))
        with self._db.errors(), self._db.transaction():
            dropped = self._db.drop_vectors(keep=None if everything else (key, *earlier))
            if everything:
                self._db.bump_index_generation()  # readers reload their vectors
        run = self.embed_pending(batch_size=batch_size, progress=progress, cancel=cancel)
        if earlier and not run.interrupted:
            with self._db.errors(), self._db.transaction():
                dropped += self._db.drop_vectors(keep=(key,))
        return EmbeddingRun(**{**run.to_dict(), "dropped": dropped})

    def _vector_status(self, namespace: str | None) -> VectorStatus:
        rate = self._db.meta("embedding_rate")
        pending = self.pending_vectors(namespace)
        per_second = float(rate) if rate else None
        return VectorStatus(semantic=self._embedder_note, embedder=self.embedder,
                            pending_vectors=pending, embedding_per_second=per_second,
                            eta_seconds=eta_seconds(self._db, self._embedder, pending)
                            if self._embedder is not None else None,
                            embedding_threads=self._db.meta("embedding_threads"))

    # -- erasure ------------------------------------------------------------------------

    def purge(self, *, namespace: str, memory_id: str | None = None, note: str | None = None,
              matching: str | None = None, known_before: Any = None,
              reason: str | None = None, dry_run: bool = False,
              replicas: bool = False) -> PurgeReport:
        """Erase revisions for good: by memory ID, by note (``COLLECTION/path.md``: every
        section, and the path itself) or by text (every revision holding it anywhere: text,
        title, heading path, memory ID, note path, source, metadata), in one namespace,
        optionally only those known before a time. Each becomes a stub (its ID, times,
        "purged at T" and the reason); the text leaves the full-text index, the vectors,
        the bookkeeping tables, the WAL and the free pages, and the files are then scanned
        to prove it. The one operation that changes past answers. Raises
        :class:`~personal_memory.errors.PurgeRefused` while a note file still holds the
        text (the next sync would import it again). With a replica set up, ``replicas``
        carries the purge there (see :mod:`personal_memory.replication.forget`); without
        it the report warns that the replica still holds the text. Replication is paused
        for every purge. A purge that could not prove its erasure (a reader kept the WAL
        from emptying, the replica was not reached, the process was killed) stays in the
        audit as unfinished, and the next purge finishes it, whatever it selects:
        ``matching`` names a text to prove gone, and with nothing selected only the
        unfinished work is done (:meth:`purges` says what each still lacks)."""
        namespace = args.namespace_arg(namespace)
        if sum(x is not None for x in (memory_id, note, matching)) > 1:
            raise InvalidArgument("purge: choose one of memory_id, note, matching (or none, "
                                  "to finish unfinished purges only)")
        before = args.optional_time(known_before, "known_before")
        reason = args.text(reason, "reason", MAX_QUERY_CHARS, optional=True)
        if memory_id is not None:
            memory_id = args.memory_id_arg(memory_id)
            selector = f"memory_id {memory_id}"
        elif note is not None:
            note = args.note_arg(note)
            selector = "note (its path is not recorded)"
        elif matching is not None:
            matching = args.text(matching, "matching", MAX_QUERY_CHARS)
            selector = "matching (the text is not recorded)"
        else:
            selector = PurgeReport.RESUME
        from .replication import control, forget, litestream
        db_path = Path(self._db.path)  # the real file's path (resolved at open)
        selection = dict(namespace=namespace, selector=selector, memory_id=memory_id,
                         note=note, matching=matching, known_before=before, reason=reason,
                         dry_run=dry_run)
        dest = litestream.read_destination(db_path)
        shadow = litestream.shadow_dir(db_path)
        if dry_run:
            with self._db.errors():
                return purge_revisions(self._db, **selection)
        # Replication paused for every purge: Litestream's read transaction would keep the
        # WAL from emptying, and its own WAL copies (dropped here) hold the text too.
        pause = control.paused(db_path) if dest is not None else contextlib.nullcontext()
        with pause, self._db.errors():
            report = purge_revisions(
                self._db, **selection, companions=[str(shadow)],
                replica_set_up=dest is not None,
                then=(lambda patterns: forget.forget(db_path, patterns))
                if dest is not None and replicas else None)
        if dest is not None and not replicas and report.unfinished:
            return replace(report, replica_warning=(
                f"the replica at {dest.url} still holds the purged text in older "
                "snapshots and WAL segments; run the purge again with replicas "
                "(--replicas) to make it forget"))
        return report

    def purges(self) -> list[PurgeAudit]:
        """The audit record: every purge, when, what kind of selection, why, and the
        revision IDs it blanked (never the text)."""
        with self._db.errors(), self._db.snapshot():
            return self._db.purges()

    # -- notes folders ------------------------------------------------------------------

    def sync(self, folders: list[Folder], *, dry_run: bool = False, full: bool = False,
             allow_mass_delete: bool = False, known_at: str | None = None,
             kind: str = "sync", progress: Callable[[int, int], None] | None = None,
             cancel: Callable[[], bool] | None = None) -> SyncReport:
        """Reconcile whole folders with the store (see :mod:`personal_memory.sync`)."""
        syncer = FolderSync(self._db, allow_mass_delete=allow_mass_delete, known_at=known_at,
                            progress=progress, cancel=cancel)
        with self._db.errors():
            return syncer.sync(folders, dry_run=dry_run, full=full, kind=kind)

    def sync_paths(self, scopes: dict[Folder, set[str]], *, allow_mass_delete: bool = False,
                   kind: str = "event", progress: Callable[[int, int], None] | None = None,
                   cancel: Callable[[], bool] | None = None) -> SyncReport:
        """Reconcile only the given relative paths (files or folders) of each folder."""
        syncer = FolderSync(self._db, allow_mass_delete=allow_mass_delete,
                            progress=progress, cancel=cancel)
        with self._db.errors():
            return syncer.sync_paths(scopes, kind=kind)

    @staticmethod
    def check_folder(folder: Folder) -> None:
        """Raise :class:`~personal_memory.errors.RootUnavailable` if the folder is missing,
        not a folder or unlistable."""
        FolderSync.check_root(folder)

    def record_daemon(self, *, state: str, started_at: int, roots: list[str]) -> None:
        """The daemon's heartbeat: its pid, state and folders, stamped now."""
        with self._db.errors():
            self._db.set_daemon(pid=os.getpid(), started_at=started_at,
                                heartbeat_at=now_micros(), roots=roots, state=state)

