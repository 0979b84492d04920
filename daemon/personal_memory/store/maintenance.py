"""SQL of counting, checking and copying a database, and probing this SQLite build."""

from __future__ import annotations

import os

import apsw

from ..errors import DiskFull, InvalidArgument, NotFound, PersonalMemoryError
from ..records import Capabilities, Counts
from .connection import create_private_file, load_vector_backend, sqlite_vec_path, translate


def capabilities(vector_backend: str = "auto") -> Capabilities:
    """What this installation's SQLite offers: its version, FTS5, the vector backend."""
    probe = apsw.Connection(":memory:")
    try:
        try:
            probe.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
            fts5 = None
        except apsw.Error as exc:
            fts5 = str(exc)
        installed = sqlite_vec_path() is not None
        try:
            active = load_vector_backend(probe, vector_backend)
        except PersonalMemoryError as exc:
            return Capabilities(apsw.sqlite_lib_version(), apsw.apsw_version(), fts5, None,
                                str(exc), installed, None)
        version = (next(probe.execute("SELECT vec_version()"))[0]
                   if active == "sqlite-vec" else None)
        return Capabilities(apsw.sqlite_lib_version(), apsw.apsw_version(), fts5, active,
                            None, installed, version)
    finally:
        probe.close()


class Maintenance:
    """Mixin of :class:`~personal_memory.store.Database`: counts, checks, backup."""

    def counts(self, namespace: str | None) -> Counts:
        where, params = ("WHERE namespace = ?", (namespace,)) if namespace else ("", ())
        record = self.note_record
        revs, mems, notes, tombs = next(iter(self.conn.execute(
            "SELECT count(*), count(DISTINCT CASE WHEN NOT "
            f"{record} THEN namespace || char(0) || memory_id END), count(DISTINCT CASE WHEN "
            f"{record} THEN namespace || char(0) || memory_id END), "
            f"coalesce(sum(deleted), 0) FROM revisions {where}", params)))
        # A note's record holds its metadata; memories are what a search can return.
        return Counts(revisions=revs, memories=mems, notes=notes, tombstones=tombs)

    def namespaces(self) -> dict[str, int]:
        return dict(self.execute("SELECT namespace, count(*) FROM revisions "
                                 "GROUP BY namespace ORDER BY namespace"))

    def integrity(self) -> str:
        return "; ".join(r[0] for r in self.conn.execute("PRAGMA quick_check"))

    def schema_version(self) -> int:
        return self.scalar("PRAGMA user_version")

    def checkpoint(self) -> None:
        """Write the write-ahead log into the database file and empty it (as far as
        readers let it: what is left stays in the log)."""
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def backup_to(self, dest: str) -> None:
        """A consistent copy through SQLite's online backup into a new file that only the
        user can read; an existing file is never overwritten."""
        if os.path.lexists(dest):
            raise InvalidArgument(f"backup: {dest} already exists; backup never overwrites")
        try:
            create_private_file(dest)
        except OSError as exc:
            raise NotFound(f"backup: cannot write {dest}: {exc.strerror}") from None
        try:
            target = apsw.Connection(dest)
            try:
                with target.backup("main", self.conn, "main") as b:
                    while not b.done:
                        b.step(1024)
            finally:
                target.close()
        except apsw.Error as exc:
            os.unlink(dest)
            if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):  # the source's fault
                raise translate(exc, self.path) from None
            if isinstance(exc, apsw.FullError):  # its message says "not an error"
                raise DiskFull(f"backup: cannot write {dest}: disk full; nothing was "
                               "written") from None
            raise NotFound(f"backup: cannot write {dest}: {exc}") from None
