"""The public Python API: :class:`MemoryStore`. The CLI, the daemon and the MCP server
are thin adapters over it, so every rule lives here once."""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from typing import Any, Iterator

from . import search as _search
from .errors import AlreadyHidden, InvalidArgument, NotFound
from .store import Database, Revision
from .times import format_time, now_micros, parse_time

MAX_ID_CHARS = 4096  # a note's ID holds its path; PATH_MAX is 4096 on Linux
MAX_TITLE_CHARS = 200
MAX_CONTENT_CHARS = 2_000_000
MAX_NAMESPACE_CHARS = 128


@dataclass(frozen=True)
class RevisionRecord:
    """One stored revision, as returned by ``history`` and write calls."""
    revision_id: int
    namespace: str
    memory_id: str
    known_at: str
    valid_from: str
    valid_to: str | None
    deleted: bool
    hides_revision: int | None
    title: str | None
    content: str
    source: str | None
    provenance: dict | None
    content_hash: str
    created: bool = True

    @classmethod
    def of(cls, r: Revision, created: bool = True) -> "RevisionRecord":
        return cls(r.revision_id, r.namespace, r.memory_id, format_time(r.known_at),
                   format_time(r.valid_from), format_time(r.valid_to), r.deleted,
                   r.hides_revision, r.title, r.content, r.source, r.provenance,
                   r.content_hash, created)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _text(value: object, field: str, limit: int, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{field}: must be a non-empty string")
    if len(value) > limit:
        raise InvalidArgument(f"{field}: {len(value)} characters; the limit is {limit}")
    if "\x00" in value:
        raise InvalidArgument(f"{field}: contains a NUL character")
    return value


def _location(provenance: dict | None) -> dict | None:
    """Provenance minus the whole-file hash: editing one chunk of a note must not
    make a new revision of every other chunk."""
    if not provenance:
        return None
    return {k: v for k, v in provenance.items() if k != "file_hash"}


def _opt_time(value: object, field: str) -> int | None:
    return None if value is None else parse_time(value, field)


class MemoryStore:
    """A point-in-time memory store in one SQLite file."""

    def __init__(self, db: Database):
        self.db = db
        self._index = None  # the fast search path's in-memory state, built on first search

    @classmethod
    def open(cls, path: str | os.PathLike, *, read_only: bool = False,
             vector_backend: str = "auto", create: bool = True) -> "MemoryStore":
        return cls(Database.open(path, read_only=read_only, vector_backend=vector_backend,
                                 create=create))

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    @property
    def path(self) -> str:
        return self.db.path

    @property
    def read_only(self) -> bool:
        return self.db.read_only

    @property
    def vector_backend(self) -> str:
        return self.db.vector_backend

    # -- writes -------------------------------------------------------------------------

    def batch(self):
        """A context manager: every remember/forget inside is one transaction, all or
        nothing. Much faster for bulk imports than one transaction per write."""
        return self.db.transaction()

    def _next_known_at(self, explicit: int | None) -> int:
        """The clock, made strictly increasing within the database; explicit times are
        trusted assertions (historical imports) and are used as given."""
        if explicit is not None:
            return explicit
        last = self.db.max_known_at()
        now = now_micros()
        return now if last is None or now > last else last + 1

    def _interval(self, known_at: Any, valid_from: Any, valid_to: Any,
                  ) -> tuple[int, int | None, int, int | None]:
        """Parse a write's times: (known_at, valid_from as given, effective start,
        valid_to). known_at comes from the clock unless asserted; the interval must be
        non-empty."""
        known = _opt_time(known_at, "known_at")
        vfrom = _opt_time(valid_from, "valid_from")
        vto = _opt_time(valid_to, "valid_to")
        known = self._next_known_at(known)
        start = known if vfrom is None else vfrom
        if vto is not None and vto <= start:
            raise InvalidArgument(f"valid_to: {format_time(vto)} must be after valid_from "
                                  f"{format_time(start)}")
        return known, vfrom, start, vto

    def remember(self, memory_id: str, content: str, *, namespace: str,
                 title: str | None = None, source: str | None = None,
                 known_at: Any = None, valid_from: Any = None, valid_to: Any = None,
                 provenance: dict | None = None) -> RevisionRecord:
        """Append a revision. An identical, still-visible revision makes this a no-op
        that returns the existing revision with ``created=False``."""
        with self.db.transaction():
            return self._remember(memory_id, content, namespace=namespace, title=title,
                                  source=source, known_at=known_at, valid_from=valid_from,
                                  valid_to=valid_to, provenance=provenance)

    def _remember(self, memory_id, content, *, namespace, title=None, source=None,
                  known_at=None, valid_from=None, valid_to=None, provenance=None,
                  ) -> RevisionRecord:
        """``remember`` inside a transaction the caller holds (batched imports)."""
        memory_id = _text(memory_id, "memory_id", MAX_ID_CHARS)
        namespace = _text(namespace, "namespace", MAX_NAMESPACE_CHARS)
        content = _text(content, "content", MAX_CONTENT_CHARS)
        title = _text(title, "title", MAX_TITLE_CHARS, optional=True)
        source = _text(source, "source", MAX_ID_CHARS * 4, optional=True)
        known, vfrom, start, vto = self._interval(known_at, valid_from, valid_to)
        digest = content_hash(content)
        current = self.db.visible_revision(namespace, memory_id, known, start)
        if (current is not None and not current.deleted and current.content_hash == digest
                and current.title == title and current.source == source
                and current.valid_to == vto and (vfrom is None or current.valid_from == vfrom)
                and _location(current.provenance) == _location(provenance)):
            return RevisionRecord.of(current, created=False)
        return RevisionRecord.of(self.db.insert_revision(
            namespace=namespace, memory_id=memory_id, known_at=known, valid_from=start,
            valid_to=vto, deleted=False, hides_revision=None, title=title, content=content,
            source=source, provenance=provenance, content_hash=digest))

    def forget(self, memory_id: str, *, namespace: str, known_at: Any = None,
               valid_from: Any = None, valid_to: Any = None) -> RevisionRecord:
        """Append a tombstone hiding the memory over [valid_from, valid_to) (default: from
        its known_at on). Repeating an identical forget is a no-op; forgetting a memory
        that is already hidden at that time is an error."""
        with self.db.transaction():
            return self._forget(memory_id, namespace=namespace, known_at=known_at,
                                valid_from=valid_from, valid_to=valid_to)

    def _forget(self, memory_id, *, namespace, known_at=None, valid_from=None,
                valid_to=None) -> RevisionRecord:
        memory_id = _text(memory_id, "memory_id", MAX_ID_CHARS)
        namespace = _text(namespace, "namespace", MAX_NAMESPACE_CHARS)
        known, vfrom, start, vto = self._interval(known_at, valid_from, valid_to)
        latest = self.db.latest_revision(namespace, memory_id)
        if latest is None:
            raise NotFound(f"memory {memory_id!r} does not exist in namespace {namespace!r}")
        if (latest.deleted and latest.valid_to == vto
                and (vfrom is None or latest.valid_from == vfrom)):
            return RevisionRecord.of(latest, created=False)
        current = self.db.visible_revision(namespace, memory_id, known, start)
        if current is None or current.deleted:
            raise AlreadyHidden(f"memory {memory_id!r} is not visible at "
                                f"{format_time(start)}; nothing to forget")
        return RevisionRecord.of(self.db.insert_revision(
            namespace=namespace, memory_id=memory_id, known_at=known, valid_from=start,
            valid_to=vto, deleted=True, hides_revision=current.revision_id, title=None,
            content="", source=None, provenance=None, content_hash=content_hash("")))

    # -- reads --------------------------------------------------------------------------

    def _cutoffs(self, as_of: Any, valid_at: Any) -> tuple[int | None, int]:
        cutoff = _opt_time(as_of, "as_of")
        at = _opt_time(valid_at, "valid_at")
        if at is None:
            at = now_micros() if cutoff is None else cutoff
        return cutoff, at

    def _search_args(self, query, namespace, as_of, valid_at, limit):
        """Validated arguments of a search: query, namespace, cutoff, valid_at, limit."""
        query = _search.validate_query(query)
        limit = _search.validate_limit(limit)
        namespace = _text(namespace, "namespace", MAX_NAMESPACE_CHARS)
        cutoff, at = self._cutoffs(as_of, valid_at)
        return query, namespace, cutoff, at, limit

    def search(self, query: str, *, namespace: str, as_of: Any = None, valid_at: Any = None,
               limit: int = 10) -> list[_search.SearchResult]:
        """Rank what was visible at ``as_of`` (default: everything known) for a time
        ``valid_at`` (default: the cutoff, or now)."""
        query, namespace, cutoff, at, limit = self._search_args(query, namespace, as_of,
                                                                valid_at, limit)
        return self._search_index().search(self.db, query, namespace=namespace, as_of=cutoff,
                                  valid_at=at, limit=limit)

    def warm(self) -> None:
        """Build the in-memory search index now rather than on the first search, and fetch
        the postings of the most frequent terms. Long-running readers call this at start."""
        self._search_index().warm(self.db)

    def _search_index(self):
        if self._index is None:
            from .search_index import SearchIndex
            self._index = SearchIndex()
        return self._index

    def share_search_index(self, other: "MemoryStore") -> None:
        """Use ``other``'s in-memory search index (same database, another connection), so
        that a reader with one connection per thread keeps one copy in memory."""
        self._index = other._search_index()

    def search_reference(self, query: str, *, namespace: str, as_of: Any = None,
                         valid_at: Any = None, limit: int = 10) -> list[_search.SearchResult]:
        """The same search by the slow, obviously correct path: the visible rows are copied
        into a fresh FTS5 index and ranked there, and cosine uses the configured vector
        backend. For audits: its answers must equal :meth:`search`'s."""
        query, namespace, cutoff, at, limit = self._search_args(query, namespace, as_of,
                                                                valid_at, limit)
        return _search.search_reference(self.db, query, namespace=namespace, as_of=cutoff,
                                        valid_at=at, limit=limit)

    def history(self, memory_id: str, *, namespace: str, as_of: Any = None,
                ) -> list[RevisionRecord]:
        memory_id = _text(memory_id, "memory_id", MAX_ID_CHARS)
        namespace = _text(namespace, "namespace", MAX_NAMESPACE_CHARS)
        revisions = self.db.history(namespace, memory_id, _opt_time(as_of, "as_of"))
        if not revisions:
            when = f" as of {as_of}" if as_of is not None else ""
            raise NotFound(f"memory {memory_id!r} has no revisions in namespace "
                           f"{namespace!r}{when}")
        return [RevisionRecord.of(r) for r in revisions]

    def export(self, *, namespace: str | None = None, as_of: Any = None,
               ) -> Iterator[RevisionRecord]:
        for r in self.db.revisions_in(namespace, _opt_time(as_of, "as_of")):
            yield RevisionRecord.of(r)

    def stats(self, namespace: str | None = None) -> dict[str, Any]:
        counts = self.db.counts(namespace)
        size = sum(os.path.getsize(self.path + suffix) for suffix in ("", "-wal")
                   if os.path.exists(self.path + suffix))
        return {"path": os.path.abspath(self.path), "namespace": namespace, **counts,
                "namespaces": dict(self.db.namespaces()), "bytes": size,
                "vector_backend": self.vector_backend,
                "embedding": self.db.meta("embedding_version")}
