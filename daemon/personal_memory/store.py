"""The one module that speaks SQL. It wraps apsw once and owns the schema.

Concurrency contract: one writer per database (the sync daemon, or a CLI write); every
write is one ``BEGIN IMMEDIATE`` transaction; readers never block the writer (WAL). A
``Database`` object belongs to one thread; open one per thread for concurrent readers.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import apsw

from . import embedding
from .errors import BackendError, NotFound, ReadOnlyError, SchemaError

SCHEMA_VERSION = 1
APPLICATION_ID = 0x504D454D  # "PMEM": marks the file as ours
TOKENIZER = "unicode61 remove_diacritics 2"
VECTOR_BACKENDS = ("auto", "sqlite-vec", "python")

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE revisions (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    known_at INTEGER NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_to INTEGER,
    deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
    hides_revision INTEGER REFERENCES revisions(id),
    title TEXT,
    content TEXT NOT NULL,
    source TEXT,
    provenance TEXT,
    content_hash TEXT NOT NULL,
    doc_length INTEGER NOT NULL DEFAULT 0,
    embedding BLOB,
    CHECK (valid_to IS NULL OR valid_to > valid_from),
    CHECK ((deleted = 1) = (hides_revision IS NOT NULL))
) STRICT;
CREATE INDEX revisions_identity ON revisions (namespace, memory_id, known_at, id);
CREATE INDEX revisions_known_at ON revisions (known_at);
CREATE INDEX revisions_known ON revisions (namespace, known_at, valid_from, valid_to, memory_id, deleted);
CREATE TRIGGER revisions_no_update BEFORE UPDATE ON revisions
BEGIN SELECT RAISE(ABORT, 'revisions are append-only: UPDATE is not allowed'); END;
CREATE TRIGGER revisions_no_delete BEFORE DELETE ON revisions
BEGIN SELECT RAISE(ABORT, 'revisions are append-only: DELETE is not allowed'); END;
CREATE VIRTUAL TABLE revisions_fts USING fts5(title, content, content='', tokenize='{TOKENIZER}');
CREATE TABLE files (
    collection TEXT NOT NULL,
    namespace TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    file_hash TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    synced_at INTEGER NOT NULL,
    PRIMARY KEY (namespace, collection, path)
) STRICT;
CREATE TABLE sync_runs (
    id INTEGER PRIMARY KEY,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    pid INTEGER NOT NULL,
    kind TEXT NOT NULL,
    roots TEXT NOT NULL,
    files_scanned INTEGER NOT NULL DEFAULT 0,
    chunks_added INTEGER NOT NULL DEFAULT 0,
    chunks_changed INTEGER NOT NULL DEFAULT 0,
    chunks_tombstoned INTEGER NOT NULL DEFAULT 0,
    errors TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL DEFAULT 'running'
) STRICT;
CREATE TABLE daemon (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pid INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    roots TEXT NOT NULL,
    state TEXT NOT NULL
) STRICT;
"""

_COLUMNS = ("id, namespace, memory_id, known_at, valid_from, valid_to, deleted, hides_revision, "
            "title, content, source, provenance, content_hash")


@dataclass(frozen=True)
class Revision:
    revision_id: int
    namespace: str
    memory_id: str
    known_at: int
    valid_from: int
    valid_to: int | None
    deleted: bool
    hides_revision: int | None
    title: str | None
    content: str
    source: str | None
    provenance: dict | None
    content_hash: str

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> "Revision":
        values = list(row)
        values[6] = bool(values[6])
        values[11] = json.loads(values[11]) if values[11] else None
        return cls(*values)


def sqlite_vec_path() -> str | None:
    try:
        import sqlite_vec
    except ImportError:
        return None
    return sqlite_vec.loadable_path()


class Database:
    """An open database file. Create with :meth:`open`."""

    def __init__(self, conn: apsw.Connection, path: str, read_only: bool, vector_backend: str):
        self.conn = conn
        self.path = path
        self.read_only = read_only
        self.vector_backend = vector_backend
        self._tokenizer_fn = None
        self._depth = 0
        self._vocab_ready = False

    @property
    def _tokenizer(self):
        if self._tokenizer_fn is None:
            self._tokenizer_fn = self.conn.fts5_tokenizer("unicode61", ["remove_diacritics", "2"])
        return self._tokenizer_fn

    # -- opening -------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike, *, read_only: bool = False,
             vector_backend: str = "auto", create: bool = True) -> "Database":
        path = os.fspath(path)
        if vector_backend not in VECTOR_BACKENDS:
            raise BackendError(f"vector backend {vector_backend!r} is unknown; "
                               f"choose one of {', '.join(VECTOR_BACKENDS)}")
        exists = os.path.exists(path)
        if not exists and (read_only or not create):
            raise NotFound(f"database {path} does not exist; run 'memory init' or a sync first")
        if exists and os.path.isdir(path):
            raise NotFound(f"database {path} is a directory, not a database file")
        if not exists:
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, mode=0o700, exist_ok=True)
        if read_only:
            flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
            uri = "file:" + _uri_path(path) + "?mode=ro"
        else:
            flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI
            uri = "file:" + _uri_path(path)
        old_umask = os.umask(0o077)
        try:
            conn = apsw.Connection(uri, flags=flags)
        except apsw.Error as exc:
            raise NotFound(f"cannot open database {path}: {exc}") from None
        finally:
            os.umask(old_umask)
        conn.set_busy_timeout(10_000)
        backend = cls._load_vector_backend(conn, vector_backend)
        db = cls(conn, path, read_only, backend)
        try:
            db._prepare_schema(exists)
        except BaseException:
            conn.close()
            raise
        return db

    @staticmethod
    def _load_vector_backend(conn: apsw.Connection, requested: str) -> str:
        if requested == "python":
            return "python"
        ext = sqlite_vec_path()
        if ext is not None:
            try:
                conn.enable_load_extension(True)
                conn.load_extension(ext)
                conn.enable_load_extension(False)
                return "sqlite-vec"
            except apsw.Error as exc:
                if requested == "sqlite-vec":
                    raise BackendError(f"sqlite-vec could not be loaded: {exc}") from None
        elif requested == "sqlite-vec":
            raise BackendError("vector backend 'sqlite-vec' requested but the sqlite-vec "
                               "package is not installed")
        return "python"

    def _prepare_schema(self, existed: bool) -> None:
        try:
            app_id = self.scalar("PRAGMA application_id")
            version = self.scalar("PRAGMA user_version")
        except apsw.NotADBError:
            raise SchemaError(f"{self.path} is not a SQLite database") from None
        if app_id == 0 and version == 0:
            tables = self.scalar("SELECT count(*) FROM sqlite_schema")
            if tables:
                raise SchemaError(f"{self.path} is a SQLite database of another application "
                                  "(no personal-memory schema); refusing to use it")
            if self.read_only:
                raise SchemaError(f"{self.path} is empty; run 'memory init' to create it")
            self._create_schema()
            return
        if app_id != APPLICATION_ID:
            raise SchemaError(f"{self.path} belongs to another application "
                              f"(application_id {app_id:#x}); refusing to use it")
        if version > SCHEMA_VERSION:
            raise SchemaError(f"{self.path} has schema version {version}, newer than this "
                              f"personal-memory supports ({SCHEMA_VERSION}); upgrade the package")
        stored = self.meta("embedding_version")
        if stored != embedding.EMBEDDING_VERSION:
            raise SchemaError(f"{self.path} was built with embedding {stored!r}, but this "
                              f"version uses {embedding.EMBEDDING_VERSION!r}; vectors would "
                              "not be comparable")
        if not self.read_only:
            self.execute("PRAGMA journal_mode=WAL")
            # Safe against corruption in WAL mode; a power cut may lose the last commits,
            # which the next sync re-imports from the notes.
            self.execute("PRAGMA synchronous=NORMAL")

    def _create_schema(self) -> None:
        self.execute("PRAGMA journal_mode=WAL")
        self.execute("PRAGMA synchronous=NORMAL")
        with self.transaction():
            self.conn.execute(_SCHEMA)
            self.execute("INSERT INTO meta VALUES ('embedding_version', ?)",
                         (embedding.EMBEDDING_VERSION,))
            self.execute("INSERT INTO meta VALUES ('embedding_dimensions', ?)",
                         (str(embedding.DIMENSIONS),))
            self.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        self.conn.close()

    # -- low level --------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | dict = ()) -> list[tuple]:
        return list(self.conn.execute(sql, params))

    def scalar(self, sql: str, params: Sequence[Any] | dict = ()) -> Any:
        row = next(iter(self.conn.execute(sql, params)), None)
        return None if row is None else row[0]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction, taken at once so the clock check and insert are atomic.
        Nested use joins the outer transaction (for batched writes)."""
        if self.read_only:
            raise ReadOnlyError(f"database {self.path} is open read-only")
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self.conn.execute("ROLLBACK")
            raise
        else:
            self._depth = 0
            self.conn.execute("COMMIT")

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested, separately undoable part of the current write transaction."""
        self.conn.execute("SAVEPOINT part")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK TO part")
            self.conn.execute("RELEASE part")
            raise
        else:
            self.conn.execute("RELEASE part")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction: every query inside sees one consistent state."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def meta(self, key: str) -> str | None:
        return self.scalar("SELECT value FROM meta WHERE key = ?", (key,))

    def tokens(self, text: str) -> list[str]:
        """The terms FTS5 sees in ``text``, in order (query-time tokenization)."""
        data = embedding.normalize_text(text).encode("utf-8")
        return [t[2] for t in self._tokenizer(data, apsw.FTS5_TOKENIZE_QUERY, None)]

    # -- revisions ------------------------------------------------------------------------

    def max_known_at(self) -> int | None:
        return self.scalar("SELECT max(known_at) FROM revisions")

    def insert_revision(self, *, namespace: str, memory_id: str, known_at: int,
                        valid_from: int, valid_to: int | None, deleted: bool,
                        hides_revision: int | None, title: str | None, content: str,
                        source: str | None, provenance: dict | None,
                        content_hash: str) -> Revision:
        """Append one revision; call inside :meth:`transaction`."""
        ntitle = embedding.normalize_text(title) if title else ""
        ncontent = embedding.normalize_text(content)
        vector = None if deleted else embedding.embed(f"{title or ''}\n{content}")
        length = 0 if deleted else (len(self.document_tokens(ntitle))
                                    + len(self.document_tokens(ncontent)))
        self.conn.execute(
            "INSERT INTO revisions (namespace, memory_id, known_at, valid_from, valid_to, "
            "deleted, hides_revision, title, content, source, provenance, content_hash, "
            "doc_length, embedding) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (namespace, memory_id, known_at, valid_from, valid_to, int(deleted),
             hides_revision, title, content, source,
             json.dumps(provenance, sort_keys=True) if provenance else None,
             content_hash, length, vector))
        rowid = self.conn.last_insert_rowid()
        if not deleted:
            self.conn.execute("INSERT INTO revisions_fts (rowid, title, content) VALUES (?,?,?)",
                              (rowid, ntitle, ncontent))
        return Revision(rowid, namespace, memory_id, known_at, valid_from, valid_to, deleted,
                        hides_revision, title, content, source,
                        dict(provenance) if provenance else None, content_hash)

    def latest_revision(self, namespace: str, memory_id: str) -> Revision | None:
        row = next(iter(self.conn.execute(
            f"SELECT {_COLUMNS} FROM revisions WHERE namespace = ? AND memory_id = ? "
            "ORDER BY known_at DESC, id DESC LIMIT 1", (namespace, memory_id))), None)
        return Revision.from_row(row) if row else None

    def visible_revision(self, namespace: str, memory_id: str, as_of: int | None,
                         valid_at: int) -> Revision | None:
        """The winning revision (possibly a tombstone) of one memory at a point in time."""
        row = next(iter(self.conn.execute(
            f"SELECT {_COLUMNS} FROM revisions WHERE namespace = ? AND memory_id = ? "
            "AND known_at <= ? AND valid_from <= ? AND (valid_to IS NULL OR ? < valid_to) "
            "ORDER BY known_at DESC, id DESC LIMIT 1",
            (namespace, memory_id, _cutoff(as_of), valid_at, valid_at))), None)
        return Revision.from_row(row) if row else None

    def visible_revisions(self, namespace: str, as_of: int | None,
                          valid_at: int) -> list[Revision]:
        """Every visible, non-deleted revision: the visibility rule, as one query."""
        rows = self.conn.execute(
            f"""WITH eligible AS (
                  SELECT id, deleted, ROW_NUMBER() OVER (
                    PARTITION BY memory_id ORDER BY known_at DESC, id DESC) AS rn
                  FROM revisions
                  WHERE namespace = ? AND known_at <= ? AND valid_from <= ?
                    AND (valid_to IS NULL OR ? < valid_to))
                SELECT {_COLUMNS} FROM revisions
                WHERE id IN (SELECT id FROM eligible WHERE rn = 1 AND deleted = 0)
                ORDER BY id""",
            (namespace, _cutoff(as_of), valid_at, valid_at))
        return [Revision.from_row(r) for r in rows]

    def history(self, namespace: str, memory_id: str, as_of: int | None) -> list[Revision]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM revisions WHERE namespace = ? AND memory_id = ? "
            "AND known_at <= ? ORDER BY known_at, id", (namespace, memory_id, _cutoff(as_of)))
        return [Revision.from_row(r) for r in rows]

    def revisions_in(self, namespace: str | None, as_of: int | None) -> Iterator[Revision]:
        sql = f"SELECT {_COLUMNS} FROM revisions WHERE known_at <= ?"
        params: list[Any] = [_cutoff(as_of)]
        if namespace is not None:
            sql += " AND namespace = ?"
            params.append(namespace)
        for row in self.conn.execute(sql + " ORDER BY known_at, id", params):
            yield Revision.from_row(row)

    # -- ranking primitives (reference path) ------------------------------------------------

    def bm25_over(self, revisions: Iterable[Revision], terms: Sequence[str]) -> dict[int, float]:
        """BM25 of exactly ``revisions``: they are copied into a fresh temporary FTS5 index,
        so no other row can touch N, average length or document frequencies. Scores are
        returned positive (higher is better); rows matching no term are absent."""
        if not terms:
            return {}
        conn = self.conn
        conn.execute("DROP TABLE IF EXISTS temp.rank_fts")
        conn.execute(f"CREATE VIRTUAL TABLE temp.rank_fts USING fts5(title, content, "
                     f"tokenize='{TOKENIZER}')")
        try:
            conn.executemany(
                "INSERT INTO temp.rank_fts (rowid, title, content) VALUES (?, ?, ?)",
                ((r.revision_id, embedding.normalize_text(r.title or ""),
                  embedding.normalize_text(r.content)) for r in revisions))
            rows = conn.execute("SELECT rowid, bm25(rank_fts) FROM temp.rank_fts "
                                "WHERE rank_fts MATCH ?", (match_expression(terms),))
            return {rowid: -score for rowid, score in rows}
        finally:
            conn.execute("DROP TABLE temp.rank_fts")

    def embeddings(self, revision_ids: Sequence[int]) -> dict[int, bytes | None]:
        out: dict[int, bytes | None] = {}
        for chunk in _chunks(revision_ids, 30_000):
            ids = json.dumps(list(chunk))
            for rid, blob in self.conn.execute(
                    "SELECT id, embedding FROM revisions WHERE id IN "
                    "(SELECT value FROM json_each(?))", (ids,)):
                out[rid] = blob
        return out

    def cosine_sqlite_vec(self, revision_ids: Sequence[int], query: bytes) -> dict[int, float]:
        """Cosine similarity computed inside SQLite by sqlite-vec (float32)."""
        out: dict[int, float] = {}
        for chunk in _chunks(revision_ids, 30_000):
            for rid, dist in self.conn.execute(
                    "SELECT id, vec_distance_cosine(embedding, ?) FROM revisions WHERE id IN "
                    "(SELECT value FROM json_each(?)) AND embedding IS NOT NULL",
                    (query, json.dumps(list(chunk)))):
                out[rid] = 1.0 - dist
        return out

    # -- primitives for the in-memory search index ----------------------------------------

    def max_revision_id(self) -> int:
        return self.scalar("SELECT coalesce(max(id), 0) FROM revisions")

    def revision_meta_since(self, last_id: int) -> Iterator[tuple]:
        """(id, namespace, namespace NUL memory_id, known_at, valid_from, valid_to, deleted,
        doc_length, embedding) of every revision appended after ``last_id``, in id order."""
        return self.conn.execute(
            "SELECT id, namespace, namespace || char(0) || memory_id, known_at, valid_from, "
            "valid_to, deleted, doc_length, embedding FROM revisions WHERE id > ? ORDER BY id",
            (last_id,))

    def most_frequent_terms(self, limit: int) -> list[str]:
        """The indexed terms held by the most revisions."""
        self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.revisions_terms "
                          "USING fts5vocab(main, revisions_fts, row)")
        return [t for (t,) in self.conn.execute(
            "SELECT term FROM temp.revisions_terms ORDER BY doc DESC LIMIT ?", (limit,))]

    def revision_texts(self, first_id: int, last_id: int) -> list[tuple[int, str, str]]:
        """(id, title, content) of the non-deleted revisions in an id range, NFKC as indexed."""
        return [(rid, embedding.normalize_text(title or ""), embedding.normalize_text(content))
                for rid, title, content in self.conn.execute(
                    "SELECT id, title, content FROM revisions WHERE id > ? AND id <= ? "
                    "AND deleted = 0", (first_id, last_id))]

    def revisions_by_id(self, ids: Sequence[int]) -> dict[int, Revision]:
        rows = self.conn.execute(f"SELECT {_COLUMNS} FROM revisions WHERE id IN "
                                 "(SELECT value FROM json_each(?))", (json.dumps(list(ids)),))
        return {row[0]: Revision.from_row(row) for row in rows}

    def term_postings(self, term: str) -> list[tuple[int, int]]:
        """(revision id, occurrences in title and content) for every revision holding
        ``term``, read from the persistent FTS5 index."""
        if not self._vocab_ready:
            self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.revisions_vocab "
                              "USING fts5vocab(main, revisions_fts, instance)")
            self._vocab_ready = True
        return self.conn.execute("SELECT doc, count(*) FROM temp.revisions_vocab "
                                 "WHERE term = ? GROUP BY doc ORDER BY doc", (term,)).fetchall()

    def document_tokens(self, text: str) -> list[str]:
        """Tokens exactly as the FTS5 index stores them for a column of NFKC text."""
        return self._tokenizer(text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None,
                               include_offsets=False, include_colocated=False)

    # -- notes-folder state -------------------------------------------------------------------

    def file_states(self, namespace: str, collection: str) -> dict[str, tuple]:
        return {row[0]: row[1:] for row in self.conn.execute(
            "SELECT path, size, mtime_ns, ctime_ns, inode, file_hash, chunks, synced_at "
            "FROM files WHERE namespace = ? AND collection = ?", (namespace, collection))}

    def put_file_state(self, namespace: str, collection: str, path: str, *, size: int,
                       mtime_ns: int, ctime_ns: int, inode: int, file_hash: str, chunks: int,
                       synced_at: int) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?)",
            (collection, namespace, path, size, mtime_ns, ctime_ns, inode, file_hash, chunks,
             synced_at))

    def drop_file_state(self, namespace: str, collection: str, path: str) -> None:
        self.conn.execute("DELETE FROM files WHERE namespace = ? AND collection = ? AND path = ?",
                          (namespace, collection, path))

    def start_sync_run(self, kind: str, roots: list[str], started_at: int) -> int:
        with self.transaction():
            self.conn.execute("INSERT INTO sync_runs (started_at, pid, kind, roots) "
                              "VALUES (?,?,?,?)", (started_at, os.getpid(), kind,
                                                   json.dumps(roots)))
            return self.conn.last_insert_rowid()

    def finish_sync_run(self, run_id: int, *, finished_at: int, files_scanned: int,
                        added: int, changed: int, tombstoned: int, errors: list[dict],
                        status: str) -> None:
        with self.transaction():
            self.conn.execute(
                "UPDATE sync_runs SET finished_at=?, files_scanned=?, chunks_added=?, "
                "chunks_changed=?, chunks_tombstoned=?, errors=?, status=? WHERE id=?",
                (finished_at, files_scanned, added, changed, tombstoned,
                 json.dumps(errors), status, run_id))

    def last_sync_runs(self, limit: int = 1, status: str | None = None) -> list[dict]:
        sql = ("SELECT id, started_at, finished_at, pid, kind, roots, files_scanned, "
               "chunks_added, chunks_changed, chunks_tombstoned, errors, status FROM sync_runs")
        params: list[Any] = []
        if status:
            sql += " WHERE status = ?"
            params.append(status)
        keys = ("id", "started_at", "finished_at", "pid", "kind", "roots", "files_scanned",
                "chunks_added", "chunks_changed", "chunks_tombstoned", "errors", "status")
        out = []
        for row in self.conn.execute(sql + " ORDER BY id DESC LIMIT ?", params + [limit]):
            item = dict(zip(keys, row))
            item["roots"] = json.loads(item["roots"])
            item["errors"] = json.loads(item["errors"])
            out.append(item)
        return out

    def set_daemon(self, *, pid: int, started_at: int, heartbeat_at: int, roots: list[str],
                   state: str) -> None:
        with self.transaction():
            self.conn.execute("INSERT OR REPLACE INTO daemon VALUES (1,?,?,?,?,?)",
                              (pid, started_at, heartbeat_at, json.dumps(roots), state))

    def daemon(self) -> dict | None:
        row = next(iter(self.conn.execute(
            "SELECT pid, started_at, heartbeat_at, roots, state FROM daemon")), None)
        if row is None:
            return None
        return {"pid": row[0], "started_at": row[1], "heartbeat_at": row[2],
                "roots": json.loads(row[3]), "state": row[4]}

    def indexed_files(self, namespace: str | None = None) -> int:
        if namespace is None:
            return self.scalar("SELECT count(*) FROM files")
        return self.scalar("SELECT count(*) FROM files WHERE namespace = ?", (namespace,))

    # -- maintenance ------------------------------------------------------------------------

    def counts(self, namespace: str | None) -> dict[str, int]:
        where, params = ("WHERE namespace = ?", (namespace,)) if namespace else ("", ())
        revs, mems, tombs = next(iter(self.conn.execute(
            f"SELECT count(*), count(DISTINCT namespace || char(0) || memory_id), "
            f"coalesce(sum(deleted), 0) FROM revisions {where}", params)))
        return {"revisions": revs, "memories": mems, "tombstones": tombs}

    def namespaces(self) -> list[tuple[str, int]]:
        return self.execute("SELECT namespace, count(*) FROM revisions GROUP BY namespace "
                            "ORDER BY namespace")

    def integrity(self) -> str:
        return "; ".join(r[0] for r in self.conn.execute("PRAGMA quick_check"))

    def backup_to(self, dest: str) -> None:
        """A consistent copy through SQLite's online backup, readable only by the user."""
        old_umask = os.umask(0o077)
        try:
            target = apsw.Connection(dest)
            try:
                with target.backup("main", self.conn, "main") as b:
                    while not b.done:
                        b.step(1024)
            finally:
                target.close()
        except apsw.Error as exc:
            raise NotFound(f"backup: cannot write {dest}: {exc}") from None
        finally:
            os.umask(old_umask)


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 query that matches rows holding any of ``terms`` (each a quoted string)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _cutoff(as_of: int | None) -> int:
    return (1 << 62) if as_of is None else as_of


def _uri_path(path: str) -> str:
    from urllib.parse import quote
    return quote(os.path.abspath(path))


def _chunks(items: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
