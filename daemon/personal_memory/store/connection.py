"""Opening a database file, transactions, and turning SQLite's errors into ours."""

from __future__ import annotations

import errno
import json
import os
import shlex
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import apsw

from ..notes.model import file_title
from ..search.text import LEGACY_TEXT_VERSION, TEXT_VERSION, indexes_names_and_properties, normalize_text
from ..errors import (BackendError, DatabaseBusy, DatabaseCorrupt, DatabaseError, DatabaseReadOnly,
                      DiskFull, NotFound, PersonalMemoryError, ReadOnlyError, SchemaError,
                      StoreClosed)
from ..limits import FOREVER_US, VECTOR_BACKENDS
from ..paths import ensure_private_dir, real_database
from .schema import (APPLICATION_ID, DDL, LEGACY_TOKENIZER, MIGRATIONS, SCHEMA_VERSION, TOKENIZER, fts_table)


def sqlite_vec_path() -> str | None:
    try:
        import sqlite_vec
    except ImportError:
        return None
    return sqlite_vec.loadable_path()


def load_vector_backend(conn: apsw.Connection, requested: str) -> str:
    """Load sqlite-vec into ``conn`` when wanted and possible; the backend in use."""
    if requested not in VECTOR_BACKENDS:
        raise BackendError(f"vector backend {requested!r} is unknown; "
                           f"choose one of {', '.join(VECTOR_BACKENDS)}")
    if requested in ("python", "auto"):  # numpy in float64: the exact rule
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


# Below this much room, an I/O error or a file SQLite cannot open or grow is a full disk:
# the WAL index alone takes 32 KiB, and SQLite only says "disk I/O error".
FULL_DISK_BYTES = 256 * 1024


def full_disk(path: str) -> str | None:
    """Why the disk holding ``path`` is full ("0 bytes free in /data"), or None when it
    has room (or cannot be asked)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    # root may use the blocks a file system keeps back for it
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    if st.f_files and (st.f_ffree if os.geteuid() == 0 else st.f_favail) == 0:
        return f"no free inodes in {folder}"
    free = blocks * st.f_frsize
    return f"{free:,} bytes free in {folder}" if free < FULL_DISK_BYTES else None


def _of_replica(path: str) -> str:
    """What an error reading a replica in place adds (its label: "replica URL"): SQLite
    only says "SQL logic error" when Litestream's reader cannot read a file of it."""
    if not path.startswith("replica "):
        return ""
    url = path.removeprefix("replica ")
    return (f" (a file of the replica may be damaged, partly copied or unreadable: 'memory "
            f"restore {url} --to FILE' checks each one)")


def translate(exc: apsw.Error, path: str) -> PersonalMemoryError:
    """Our named error for an SQLite error, with a one-line message naming the file."""
    if isinstance(exc, apsw.ConnectionClosedError):
        return StoreClosed(f"the store of {path} is closed; open it again to use it")
    if isinstance(exc, (apsw.BusyError, apsw.LockedError)):
        return DatabaseBusy(f"database {path} is busy: another process holds the write "
                            "lock; nothing was written")
    if isinstance(exc, apsw.FullError):
        return DiskFull(f"database {path}: disk full; nothing was written")
    if isinstance(exc, (apsw.IOError, apsw.CantOpenError)):
        why = full_disk(path)
        if why:
            return DiskFull(f"database {path}: the disk is full, free some space ({why}; "
                            f"SQLite said \"{exc}\")")
    if isinstance(exc, apsw.ReadOnlyError):
        return DatabaseReadOnly(f"database {path} cannot be written (read-only file, "
                                "folder or mount)")
    if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return DatabaseCorrupt(f"database {path} is damaged or not a database: {exc}"
                               f"{_of_replica(path)}")
    return DatabaseError(f"database {path}: {exc}{_of_replica(path)}")


def create_private_file(path: str) -> None:
    """Create an empty file readable only by the user (SQLite gives its WAL and SHM files
    the same mode), without touching the process umask, which other threads share."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def orphaned_log(path: str) -> str | None:
    """Why ``path`` must not be created afresh: it is missing, yet its write-ahead log
    holds writes (the file was moved or deleted while a process had it open). A new file
    there would take that log for its own, and SQLite removes a log it cannot use: the
    history it holds would be lost. None when there is no such log."""
    wal = path + "-wal"
    try:
        size = os.path.getsize(wal)
    except OSError:
        return None
    if size == 0 or os.path.exists(path):
        return None
    return (f"database {path} does not exist, but its write-ahead log {wal} holds {size:,} "
            "bytes of writes: the database was moved or deleted while it was open. Move it "
            "back beside its log (or, to start over, remove the log first); nothing was "
            "created")


class Connection:
    """One apsw connection to a personal-memory file. Belongs to one thread."""

    def __init__(self, conn: apsw.Connection, path: str, read_only: bool, vector_backend: str):
        self.conn = conn
        self.path = path
        self.read_only = read_only
        self.vector_backend = vector_backend
        self._tokenizer_fn = None
        self._depth = 0
        self._vocab_ready = False
        self.schema = SCHEMA_VERSION  # the file's schema version, set when opened
        self.tokenizer = TOKENIZER  # the one its full-text index was built with
        self.text_version = TEXT_VERSION  # how its indexed text was normalised

    def at_least(self, version: int) -> bool:
        """Whether the file has schema ``version``. (A reader that opened an older file
        sees the upgrade once another process has made it.)"""
        if self.schema < version:
            self.schema = self.scalar("PRAGMA user_version")
        return self.schema >= version

    @property
    def purged(self) -> str:
        """SQL for "this revision was purged"; files older than schema 3 have no purges."""
        return "purged_at IS NOT NULL" if self.at_least(3) else "0"

    @property
    def note_record(self) -> str:
        """SQL for "this revision is a note's record" (metadata, never ranked); the same test
        as :func:`personal_memory.notes.is_record`."""
        return "(note IS NOT NULL AND memory_id = note || '#')" if self.at_least(4) else "0"

    @property
    def index_text(self) -> str:
        """SQL of the (title, content) a revision is indexed by."""
        if self.at_least(4):
            return "coalesce(index_title, title), coalesce(index_content, content)"
        return "title, content"

    @property
    def keyword_columns(self) -> str:
        """SQL of what :meth:`keyword_texts` reads from a revision."""
        return f"{self.index_text}, " + ("note, metadata" if self.at_least(4) else "NULL, NULL")

    def keyword_texts(self, title: str | None, content: str, note: str | None,
                      metadata: str | None) -> tuple[str, str]:
        """(title, content) as the full-text index holds a revision's (``metadata`` as
        stored, JSON): normalised; a note's section titled also by its note's file name
        when the name holds a word the title text lacks (a note titled by its first
        heading is found by its file name's words), and a note's first section followed by
        its other properties (``author: ...``). The keyword index alone: the model reads
        the title and text as they are."""
        ntitle, ncontent = self.normalize(title or ""), self.normalize(content)
        if note is None or not indexes_names_and_properties(self.text_version):
            return ntitle, ncontent
        name = self.normalize(file_title(note))
        if not set(self.document_tokens(name)) <= set(self.document_tokens(ntitle)):
            ntitle = f"{ntitle} \n{name}" if ntitle else name
        if metadata and '"properties"' in metadata:
            properties = json.loads(metadata).get("properties")
            if isinstance(properties, str) and properties:
                ncontent = f"{ncontent}\n{self.normalize(properties)}"
        return ntitle, ncontent

    @classmethod
    def open(cls, path: str | os.PathLike, *, read_only: bool = False,
             vector_backend: str = "auto", create: bool = True):
        path = str(real_database(path))  # the name SQLite keeps its WAL beside
        if vector_backend not in VECTOR_BACKENDS:
            raise BackendError(f"vector backend {vector_backend!r} is unknown; "
                               f"choose one of {', '.join(VECTOR_BACKENDS)}")
        exists = os.path.exists(path)
        if not exists and (orphaned := orphaned_log(path)) is not None:
            raise NotFound(orphaned)
        if not exists and (read_only or not create):
            raise NotFound(f"database {path} does not exist; run 'memory init' or a sync first")
        if exists and os.path.isdir(path):
            raise NotFound(f"database {path} is a directory, not a database file")
        if exists and os.stat(path).st_nlink > 1:
            # SQLite names its WAL after the path it opened: two names, two WALs, corruption.
            raise DatabaseError(f"database {path} has {os.stat(path).st_nlink} names (hard "
                                "links); SQLite keeps its journal beside the name it was "
                                "opened by, so two names would corrupt it: remove the other "
                                "link (a symlink is fine)")
        if read_only:
            flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
            uri = "file:" + _uri_path(path) + "?mode=ro"
        else:
            if not exists:
                try:
                    ensure_private_dir(Path(os.path.abspath(path)).parent)
                    create_private_file(path)
                except OSError as exc:
                    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                        raise DiskFull(f"cannot create database {path}: the disk is full "
                                       f"({exc.strerror}): free some space") from None
                    raise NotFound(f"cannot create database {path}: {exc.strerror}") from None
            flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI
            uri = "file:" + _uri_path(path)
        try:
            return cls._connect(uri, flags, path, read_only, vector_backend)
        except PersonalMemoryError as exc:
            if not read_only and not exists:
                _remove_if_empty(path)  # a full disk: no empty file left to pass for one
            if not (read_only and isinstance(exc, DatabaseError)
                    and isinstance(exc.__cause__, apsw.CantOpenError)):
                raise
            # A WAL database in a folder nothing can write (a read-only mount): SQLite
            # cannot make its -shm file. Nothing can write the file either, so it can be
            # read as immutable, unless its WAL still holds changes.
            folder = os.path.dirname(os.path.abspath(path))
            if os.access(folder, os.W_OK) and not _read_only_mount(folder):
                raise
            wal = path + "-wal"
            if os.path.exists(wal) and os.path.getsize(wal) > 0:
                raise DatabaseReadOnly(
                    f"database {path} is in a read-only folder ({folder}) and its WAL holds "
                    "changes not yet in the file: open it once where it can be written, or "
                    "copy the folder somewhere writable") from None
            return cls._connect(uri + "&immutable=1", flags, path, read_only, vector_backend)

    @classmethod
    def open_uri(cls, uri: str, label: str, *, vector_backend: str = "auto"):
        """A read-only connection through an SQLite URI another module made (a replica
        read through Litestream's VFS); ``label`` names it in errors. Temporary tables
        stay in memory: the VFS holds no temporary files."""
        db = cls._connect(uri, apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI, label, True,
                          vector_backend)
        db.execute("PRAGMA temp_store=MEMORY")
        return db

    @classmethod
    def _connect(cls, uri: str, flags: int, path: str, read_only: bool,
                 vector_backend: str):
        try:
            conn = apsw.Connection(uri, flags=flags)
        except apsw.Error as exc:
            error = translate(exc, path)
            if isinstance(error, DiskFull):
                raise error from exc
            raise NotFound(f"cannot open database {path}: {exc}{_of_replica(path)}") from None
        conn.set_busy_timeout(10_000)
        try:
            backend = load_vector_backend(conn, vector_backend)
            db = cls(conn, path, read_only, backend)
            with db.errors():
                db._prepare_schema()
        except BaseException:
            conn.close()
            raise
        return db

    def _prepare_schema(self) -> None:
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
        self.schema = version
        self.tokenizer = self.meta("tokenizer") or LEGACY_TOKENIZER
        self.text_version = self.meta("text_version") or LEGACY_TEXT_VERSION
        if not self.read_only:
            self.execute("PRAGMA journal_mode=WAL")
            # Safe against corruption in WAL mode; a power cut may lose the last commits,
            # which the next sync re-imports from the notes.
            self.execute("PRAGMA synchronous=NORMAL")
            if version < SCHEMA_VERSION:
                self._migrate(version)
            if not self.index_is_current():
                self._reindex()
            if self.meta("database_id") is None:  # files made before it was recorded
                with self.transaction():
                    self.set_meta("database_id", uuid.uuid4().hex)

    def _migrate(self, version: int) -> None:
        with self.transaction():
            for step in range(version + 1, SCHEMA_VERSION + 1):
                self.conn.execute(MIGRATIONS[step])
            self.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self.schema = SCHEMA_VERSION

    def index_is_current(self) -> bool:
        """Whether the full-text index was built by this version's tokenizer and text rule
        (a reader of an older one reads it its way until a writer re-indexes it)."""
        return self.tokenizer == TOKENIZER and self.text_version == TEXT_VERSION

    def normalize(self, text: str, query: bool = False) -> str:
        """Text as this file's index holds it (its recorded normalisation); ``query``: as
        a query asks for it."""
        return normalize_text(text, self.text_version, query)

    def _reindex(self) -> None:
        """Rebuild the full-text index and the document lengths with :data:`TOKENIZER` and
        :data:`TEXT_VERSION` from the stored revisions; the revisions are not touched."""
        import logging
        log = logging.getLogger("personal_memory.store")
        log.info("re-indexing %s for tokenizer %r and text %r (was %r, %r); revisions are "
                 "unchanged", self.path, TOKENIZER, TEXT_VERSION, self.tokenizer,
                 self.text_version)
        with self.transaction():
            self.tokenizer, self.text_version = TOKENIZER, TEXT_VERSION
            self._tokenizer_fn = None
            self.conn.execute("DROP TABLE revisions_fts")
            self.conn.execute(fts_table(TOKENIZER))
            self.conn.execute("DELETE FROM doc_lengths")
            rows = self.conn.execute(
                f"SELECT id, {self.keyword_columns} FROM revisions WHERE deleted = 0 "
                f"AND NOT ({self.purged}) AND NOT {self.note_record}").fetchall()
            for rid, title, content, note, metadata in rows:
                ntitle, ncontent = self.keyword_texts(title, content, note, metadata)
                self.conn.execute("INSERT INTO revisions_fts (rowid, title, content) "
                                  "VALUES (?, ?, ?)", (rid, ntitle, ncontent))
                self.conn.execute("INSERT INTO doc_lengths VALUES (?, ?)", (rid, len(
                    self.document_tokens(ntitle)) + len(self.document_tokens(ncontent))))
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('tokenizer', ?)",
                              (TOKENIZER,))
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('text_version', ?)",
                              (TEXT_VERSION,))
            self.bump_index_generation()

    def bump_index_generation(self) -> None:
        """Readers compare this counter and rebuild their in-memory index when it moved
        (after a re-index or a purge: rows they cached were rewritten)."""
        self.conn.execute(
            "INSERT INTO meta VALUES ('index_generation', '1') ON CONFLICT (key) DO UPDATE "
            "SET value = CAST(value AS INTEGER) + 1")

    def index_generation(self) -> int:
        """See :meth:`bump_index_generation`. A reader also takes up a new tokenizer here."""
        generation = int(self.meta("index_generation") or 0)
        tokenizer = self.meta("tokenizer") or LEGACY_TOKENIZER
        if tokenizer != self.tokenizer:
            self.tokenizer, self._tokenizer_fn = tokenizer, None
        self.text_version = self.meta("text_version") or LEGACY_TEXT_VERSION
        return generation

    def fingerprint(self) -> "Fingerprint":
        """What identifies the file this connection reads and the state of its derived
        data: a reader that sees another fingerprint must not rank with what it cached."""
        try:
            st = os.stat(self.path)
            where = (st.st_dev, st.st_ino)
        except OSError:
            where = (0, 0)
        with self.snapshot():
            return Fingerprint(where[0], where[1], self.meta("database_id"),
                               self.index_generation())

    def _create_schema(self) -> None:
        self.execute("PRAGMA journal_mode=WAL")
        self.execute("PRAGMA synchronous=NORMAL")
        with self.transaction():
            self.conn.execute(DDL)
            self.execute("INSERT INTO meta VALUES ('tokenizer', ?)", (TOKENIZER,))
            self.execute("INSERT INTO meta VALUES ('text_version', ?)", (TEXT_VERSION,))
            self.execute("INSERT INTO meta VALUES ('database_id', ?)", (uuid.uuid4().hex,))
            self.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self.schema = SCHEMA_VERSION
        self.tokenizer = TOKENIZER

    def close(self) -> None:
        self.conn.close()

    # -- low level --------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | dict = ()) -> list[tuple]:
        return list(self.conn.execute(sql, params))

    def scalar(self, sql: str, params: Sequence[Any] | dict = ()) -> Any:
        row = next(iter(self.conn.execute(sql, params)), None)
        return None if row is None else row[0]

    def changes_seen(self) -> tuple[int, int]:
        """What this connection has seen of the file: SQLite's data_version (others'
        commits) and its own writes (total_changes). An answer kept beside it holds until
        it moves."""
        return self.scalar("PRAGMA data_version"), self.conn.total_changes()

    @contextmanager
    def errors(self) -> Iterator[None]:
        """SQLite errors raised inside become this package's named errors."""
        try:
            yield
        except apsw.Error as exc:
            if self.follow is not None:  # a replica's reader: the next read reconnects
                self.suspect = True
            raise translate(exc, self.path) from exc

    @contextmanager
    def transaction(self, part: bool = False) -> Iterator[None]:
        """One write transaction, taken at once so the clock check and insert are atomic.
        Nested use joins the outer transaction (a batch's writes); with ``part`` it is a
        savepoint of it (a batch in a batch): what fails inside is undone whole, and the
        rest of the outer transaction stays."""
        if self.read_only:
            raise ReadOnlyError(f"database {self.path} is open read-only")
        if self._depth and not part:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        if self._depth:
            self._depth += 1
            try:
                with self.savepoint(f"nested{self._depth - 1}"):
                    yield
            finally:
                self._depth -= 1
            return
        with self.errors():
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                # SQLite may already have rolled back (disk full, I/O error).
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            else:
                self._depth = 0
                try:
                    self.conn.execute("COMMIT")
                except apsw.Error:
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                    raise

    @property
    def writing(self) -> bool:
        """Whether this connection is inside a write transaction (its rows uncommitted)."""
        return self._depth > 0

    @contextmanager
    def savepoint(self, name: str = "part") -> Iterator[None]:
        """A nested, separately undoable part of the current write transaction."""
        self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute(f"ROLLBACK TO {name}")
                self.conn.execute(f"RELEASE {name}")
            raise
        else:
            self.conn.execute(f"RELEASE {name}")

    # Called before each outermost read transaction (a replica's reader checks that it
    # still follows its replica, and may reconnect: replication.replica.Follower).
    follow: Callable[["Database"], None] | None = None
    # A replica's reader that met an error (a page its VFS could not give after a
    # compaction): its follower takes a new connection before the next read.
    suspect: bool = False

    def reconnect(self, fresh: "Database") -> None:
        """Take over ``fresh``'s connection (and its per-connection state) in place of
        this one's, which is closed; callers keep this object."""
        old, follow = self.conn, self.follow
        self.__dict__.update(fresh.__dict__)
        self.follow, self.suspect = follow, False
        old.close()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction: every query inside sees one consistent state."""
        if self.conn.in_transaction:
            yield
            return
        if self.follow is not None:
            self.follow(self)
        with self.errors():
            self.conn.execute("BEGIN")
            try:
                yield
            finally:
                self.conn.execute("COMMIT")

    def meta(self, key: str) -> str | None:
        return self.scalar("SELECT value FROM meta WHERE key = ?", (key,))

    def set_meta(self, key: str, value: str) -> None:
        """Record a derived value (never a revision); call inside :meth:`transaction`."""
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- tokenizing as the index does ---------------------------------------------------

    @property
    def _tokenizer(self):
        if self._tokenizer_fn is None:
            name, *args = shlex.split(self.tokenizer)
            self._tokenizer_fn = self.conn.fts5_tokenizer(name, args)
        return self._tokenizer_fn

    def tokens(self, text: str) -> list[str]:
        """The terms FTS5 sees in ``text``, in order (query-time tokenization)."""
        data = self.normalize(text, query=True).encode("utf-8")
        return [t[2] for t in self._tokenizer(data, apsw.FTS5_TOKENIZE_QUERY, None)]

    def term_spans(self, text: str) -> list[tuple[str, str]]:
        """(the word as written, its term) for each term FTS5 sees in ``text`` at query
        time: "juxzac318" is one term, written with its digits."""
        data = self.normalize(text, query=True).encode("utf-8")
        return [(data[t[0]:t[1]].decode("utf-8", "replace"), t[2])
                for t in self._tokenizer(data, apsw.FTS5_TOKENIZE_QUERY, None)]

    def tokenize_with_offsets(self, data: bytes) -> list[tuple]:
        """(start, end, token, colocated...) byte offsets of each term in UTF-8 ``data``,
        as the index tokenizes a document."""
        return self._tokenizer(data, apsw.FTS5_TOKENIZE_DOCUMENT, None)

    def document_tokens(self, text: str) -> list[str]:
        """Tokens exactly as the FTS5 index stores them for a column of NFKC text."""
        return self._tokenizer(text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None,
                               include_offsets=False, include_colocated=False)


class Fingerprint(NamedTuple):
    device: int
    inode: int
    database_id: str | None  # random, set when the file is created
    generation: int  # moves on a purge or a re-index


def id_batches(ids: Sequence[int], size: int = 30_000) -> Iterator[str]:
    """The ids as JSON arrays of at most ``size``, for ``IN (SELECT value FROM
    json_each(?))`` (one bound parameter, whatever the count)."""
    for start in range(0, len(ids), size):
        yield json.dumps(list(ids[start:start + size]))


def cutoff(as_of: int | None) -> int:
    return FOREVER_US if as_of is None else as_of


def _read_only_mount(folder: str) -> bool:
    """Whether the folder is on a read-only file system (root can write anywhere else)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _uri_path(path: str) -> str:
    from urllib.parse import quote
    return quote(os.path.abspath(path))


def _remove_if_empty(path: str) -> None:
    """Remove a database file this process created and could not write a byte to."""
    try:
        if os.path.getsize(path) == 0:
            os.unlink(path)
    except OSError:
        pass  # gone already, or not ours to remove: the error being raised says enough
