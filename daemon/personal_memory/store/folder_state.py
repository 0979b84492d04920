"""SQL of what the folder sync and the daemon record: the stat cache of imported files,
sync runs, and the daemon's heartbeat."""

from __future__ import annotations

import json
import os
from typing import Any

from typing import NamedTuple

from ..notes.folders import FileState
from ..records import Problem, SkippedFile, SyncRun
from ..times import format_time

class DaemonRow(NamedTuple):
    """The daemon's heartbeat row (times in microseconds)."""
    pid: int
    started_at: int
    heartbeat_at: int
    roots: list[str]
    state: str


_RUN_KEYS = ("id", "started_at", "finished_at", "pid", "kind", "roots", "files_scanned",
             "chunks_added", "chunks_changed", "chunks_tombstoned", "errors", "status")


class FolderState:
    """Mixin of :class:`~personal_memory.store.Database`: files, sync_runs, daemon."""

    @property
    def _file_columns(self) -> str:
        return ("size, mtime_ns, ctime_ns, inode, file_hash, chunks, synced_at"
                + (", chunker" if self.at_least(4) else ", 1"))

    def file_states(self, namespace: str, collection: str) -> dict[str, FileState]:
        return {row[0]: FileState(*row[1:]) for row in self.conn.execute(
            f"SELECT path, {self._file_columns} FROM files WHERE namespace = ? "
            "AND collection = ?", (namespace, collection))}

    def file_state(self, namespace: str, collection: str, path: str) -> FileState | None:
        row = next(iter(self.conn.execute(
            f"SELECT {self._file_columns} FROM files "
            "WHERE namespace = ? AND collection = ? AND path = ?",
            (namespace, collection, path))), None)
        return FileState(*row) if row else None

    def put_file_state(self, namespace: str, collection: str, path: str,
                       state: FileState) -> None:
        self.conn.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                          (collection, namespace, path, *state))

    def files_to_reidentify(self, namespace: str | None, version: int) -> int:
        """Files imported with a note model older than ``version``."""
        if not self.at_least(4):
            return self.indexed_files(namespace)
        if namespace is None:
            return self.scalar("SELECT count(*) FROM files WHERE chunker < ?", (version,))
        return self.scalar("SELECT count(*) FROM files WHERE namespace = ? AND chunker < ?",
                           (namespace, version))

    def drop_file_state(self, namespace: str, collection: str, path: str) -> None:
        self.conn.execute("DELETE FROM files WHERE namespace = ? AND collection = ? AND path = ?",
                          (namespace, collection, path))

    def indexed_files(self, namespace: str | None = None) -> int:
        if namespace is None:
            return self.scalar("SELECT count(*) FROM files")
        return self.scalar("SELECT count(*) FROM files WHERE namespace = ?", (namespace,))

    # -- problems: files (and folders) that could not be imported, until they can ---------

    def replace_problems(self, namespace: str, collection: str, scope: list[str] | None,
                         problems: list[Problem], now: int) -> None:
        """Forget the problems recorded under ``scope`` (None: the whole collection), then
        record ``problems`` (their ``since`` is ignored); a problem seen before keeps the
        time it was first seen. Call inside a transaction."""
        if self.schema < 2:
            return
        since = dict(self.conn.execute(
            "SELECT path, since FROM problems WHERE namespace = ? AND collection = ?",
            (namespace, collection)))
        if scope is None:
            self.conn.execute("DELETE FROM problems WHERE namespace = ? AND collection = ?",
                              (namespace, collection))
        else:
            for path in scope:
                self.conn.execute(
                    "DELETE FROM problems WHERE namespace = ? AND collection = ? AND (? = '' "
                    "OR path = ? OR substr(path, 1, length(?) + 1) = ? || '/')",
                    (namespace, collection, path, path, path, path))
        for p in problems:
            self.conn.execute("INSERT OR REPLACE INTO problems VALUES (?,?,?,?,?,?)",
                              (namespace, collection, p.path, p.reason,
                               since.get(p.path, now), int(p.stale)))

    def drop_problem(self, namespace: str, collection: str, path: str) -> None:
        """Forget one recorded problem (``path`` "" is the collection's own). Call inside a
        transaction."""
        if self.schema >= 2:
            self.conn.execute("DELETE FROM problems WHERE namespace = ? AND collection = ? "
                              "AND path = ?", (namespace, collection, path))

    def problems(self, namespace: str | None = None) -> list[Problem]:
        if self.schema < 2:
            return []
        sql = "SELECT namespace, collection, path, reason, since, stale FROM problems"
        params: list[Any] = []
        if namespace is not None:
            sql += " WHERE namespace = ?"
            params.append(namespace)
        return [Problem(ns, coll, path, reason, format_time(since), bool(stale))
                for ns, coll, path, reason, since, stale in self.conn.execute(
                    sql + " ORDER BY collection, path", params)]

    def note_warnings(self, namespace: str | None = None) -> list[Problem]:
        """Indexed notes imported, but not all as written, as their newest record says:
        front matter that could not be read (imported as text, without its title, aliases
        and tags), or a notice (the headings past the limit read as text)."""
        if not self.at_least(4):
            return []
        sql = ("SELECT f.namespace, f.collection, f.path, r.metadata, r.known_at FROM files f "
               "JOIN revisions r ON r.id = (SELECT id FROM revisions WHERE namespace = "
               "f.namespace AND memory_id = f.collection || '/' || f.path || '#' "
               "ORDER BY known_at DESC, id DESC LIMIT 1) "
               "WHERE r.deleted = 0 AND (r.metadata LIKE '%front_matter_error%' "
               "OR r.metadata LIKE '%\"notice\"%')")
        params: list[Any] = []
        if namespace is not None:
            sql += " AND f.namespace = ?"
            params.append(namespace)
        out = []
        for ns, coll, path, meta, known in self.conn.execute(
                sql + " ORDER BY f.collection, f.path", params):
            meta = json.loads(meta)
            if meta.get("front_matter_error"):
                out.append(Problem(ns, coll, path, f"{meta['front_matter_error']}; imported "
                                   "as text (no title, aliases or tags from it)",
                                   format_time(known), False))
            if meta.get("notice"):
                out.append(Problem(ns, coll, path, meta["notice"], format_time(known), False))
        return out

    # -- collections: one folder per name ------------------------------------------------

    def collection_root(self, namespace: str, collection: str) -> str | None:
        return self.meta(f"collection-root:{namespace}/{collection}")

    def collection_roots(self, namespace: str | None = None) -> list[str]:
        """The folders imported into ``namespace`` (None: any), by a sync or the daemon."""
        prefix = "collection-root:" + (f"{namespace}/" if namespace is not None else "")
        return sorted({v for _, v in self.conn.execute(
            "SELECT key, value FROM meta WHERE key >= ? AND key < ?",
            (prefix, prefix + "\U0010ffff"))})

    def collection_bindings(self, namespace: str) -> list[tuple[str, str]]:
        """(collection, folder) of each collection of ``namespace``, by name."""
        prefix = f"collection-root:{namespace}/"
        return [(key[len(prefix):], root) for key, root in self.conn.execute(
            "SELECT key, value FROM meta WHERE key >= ? AND key < ? ORDER BY key",
            (prefix, prefix + "\U0010ffff"))]

    def bind_collection(self, namespace: str, collection: str, root: str) -> None:
        with self.transaction():
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                              (f"collection-root:{namespace}/{collection}", root))

    # -- sync runs ----------------------------------------------------------------------

    def start_sync_run(self, kind: str, roots: list[str], started_at: int) -> int:
        with self.transaction():
            self.conn.execute("INSERT INTO sync_runs (started_at, pid, kind, roots) "
                              "VALUES (?,?,?,?)", (started_at, os.getpid(), kind,
                                                   json.dumps(roots)))
            return self.conn.last_insert_rowid()

    def finish_sync_run(self, run_id: int, *, finished_at: int, files_scanned: int,
                        added: int, changed: int, tombstoned: int,
                        errors: list[SkippedFile], status: str) -> None:
        with self.transaction():
            self.conn.execute(
                "UPDATE sync_runs SET finished_at=?, files_scanned=?, chunks_added=?, "
                "chunks_changed=?, chunks_tombstoned=?, errors=?, status=? WHERE id=?",
                (finished_at, files_scanned, added, changed, tombstoned,
                 json.dumps([e.to_dict() for e in errors]), status, run_id))

    def running_sync_runs(self) -> list[tuple[int, int]]:
        """(id, pid) of the sync runs recorded as running."""
        return self.execute("SELECT id, pid FROM sync_runs WHERE status = 'running'")

    def mark_sync_run(self, run_id: int, status: str, finished_at: int) -> None:
        with self.transaction():
            self.conn.execute("UPDATE sync_runs SET status = ?, finished_at = ? WHERE id = ?",
                              (status, finished_at, run_id))

    def last_sync_runs(self, limit: int = 1, status: str | None = None) -> list[SyncRun]:
        sql = f"SELECT {', '.join(_RUN_KEYS)} FROM sync_runs"
        params: list[Any] = []
        if status:
            sql += " WHERE status = ?"
            params.append(status)
        out = []
        for row in self.conn.execute(sql + " ORDER BY id DESC LIMIT ?", params + [limit]):
            item = dict(zip(_RUN_KEYS, row))
            item.update(started_at=format_time(item["started_at"]),
                        finished_at=format_time(item["finished_at"]),
                        roots=json.loads(item["roots"]),
                        errors=[SkippedFile(**e) for e in json.loads(item["errors"])])
            out.append(SyncRun(**item))
        return out

    # -- the daemon's row ---------------------------------------------------------------

    def set_daemon(self, *, pid: int, started_at: int, heartbeat_at: int, roots: list[str],
                   state: str) -> None:
        with self.transaction():
            self.conn.execute("INSERT OR REPLACE INTO daemon VALUES (1,?,?,?,?,?)",
                              (pid, started_at, heartbeat_at, json.dumps(roots), state))

    def daemon(self) -> "DaemonRow | None":
        row = next(iter(self.conn.execute(
            "SELECT pid, started_at, heartbeat_at, roots, state FROM daemon")), None)
        if row is None:
            return None
        return DaemonRow(row[0], row[1], row[2], json.loads(row[3]), row[4])
