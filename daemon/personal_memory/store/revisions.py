"""SQL of the append-only revision log: appends, the visibility rule, history."""

from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

from .. import embedding
from ..records import RevisionRecord
from ..times import format_time
from .connection import cutoff

COLUMNS = ("id, namespace, memory_id, known_at, valid_from, valid_to, deleted, hides_revision, "
           "title, content, source, provenance, content_hash")


def record(row: Sequence[Any]) -> RevisionRecord:
    (rid, namespace, memory_id, known_at, valid_from, valid_to, deleted, hides, title,
     content, source, provenance, digest) = row
    return RevisionRecord(
        revision_id=rid, namespace=namespace, memory_id=memory_id,
        known_at=format_time(known_at), valid_from=format_time(valid_from),
        valid_to=format_time(valid_to), deleted=bool(deleted), hides_revision=hides,
        title=title, content=content, source=source,
        provenance=json.loads(provenance) if provenance else None, content_hash=digest)


class RevisionLog:
    """Mixin of :class:`~personal_memory.store.Database`: the revisions table."""

    def max_known_at(self) -> int | None:
        return self.scalar("SELECT max(known_at) FROM revisions")

    def insert_revision(self, *, namespace: str, memory_id: str, known_at: int,
                        valid_from: int, valid_to: int | None, deleted: bool,
                        hides_revision: int | None, title: str | None, content: str,
                        source: str | None, provenance: dict | None,
                        content_hash: str) -> RevisionRecord:
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
        return record((rowid, namespace, memory_id, known_at, valid_from, valid_to, deleted,
                       hides_revision, title, content, source,
                       json.dumps(provenance) if provenance else None, content_hash))

    def _one(self, sql: str, params: Sequence[Any]) -> RevisionRecord | None:
        row = next(iter(self.conn.execute(sql, params)), None)
        return record(row) if row else None

    def latest_revision(self, namespace: str, memory_id: str) -> RevisionRecord | None:
        return self._one(
            f"SELECT {COLUMNS} FROM revisions WHERE namespace = ? AND memory_id = ? "
            "ORDER BY known_at DESC, id DESC LIMIT 1", (namespace, memory_id))

    def visible_revision(self, namespace: str, memory_id: str, as_of: int | None,
                         valid_at: int) -> RevisionRecord | None:
        """The winning revision (possibly a tombstone) of one memory at a point in time."""
        return self._one(
            f"SELECT {COLUMNS} FROM revisions WHERE namespace = ? AND memory_id = ? "
            "AND known_at <= ? AND valid_from <= ? AND (valid_to IS NULL OR ? < valid_to) "
            "ORDER BY known_at DESC, id DESC LIMIT 1",
            (namespace, memory_id, cutoff(as_of), valid_at, valid_at))

    def visible_revisions(self, namespace: str, as_of: int | None,
                          valid_at: int) -> list[RevisionRecord]:
        """Every visible, non-deleted revision: the visibility rule, as one query."""
        rows = self.conn.execute(
            f"""WITH eligible AS (
                  SELECT id, deleted, ROW_NUMBER() OVER (
                    PARTITION BY memory_id ORDER BY known_at DESC, id DESC) AS rn
                  FROM revisions
                  WHERE namespace = ? AND known_at <= ? AND valid_from <= ?
                    AND (valid_to IS NULL OR ? < valid_to))
                SELECT {COLUMNS} FROM revisions
                WHERE id IN (SELECT id FROM eligible WHERE rn = 1 AND deleted = 0)
                  AND NOT ({self.purged})
                ORDER BY id""",
            (namespace, cutoff(as_of), valid_at, valid_at))
        return [record(r) for r in rows]

    def memory_states(self, namespace: str, prefix: str) -> dict[str, bool]:
        """Every memory ID starting with ``prefix``: True when its newest revision is live,
        False when it is a tombstone."""
        return {m: not deleted for m, deleted in self.conn.execute(
            """SELECT memory_id, deleted FROM (
                 SELECT memory_id, deleted, ROW_NUMBER() OVER (
                   PARTITION BY memory_id ORDER BY known_at DESC, id DESC) AS rn
                 FROM revisions WHERE namespace = ? AND memory_id >= ? AND memory_id < ?)
               WHERE rn = 1""", (namespace, prefix, prefix + "\U0010ffff"))}

    def history(self, namespace: str, memory_id: str, as_of: int | None,
                ) -> list[RevisionRecord]:
        rows = self.conn.execute(
            f"SELECT {COLUMNS} FROM revisions WHERE namespace = ? AND memory_id = ? "
            "AND known_at <= ? ORDER BY known_at, id", (namespace, memory_id, cutoff(as_of)))
        return [record(r) for r in rows]

    def revisions_in(self, namespace: str | None, as_of: int | None,
                     ) -> Iterator[RevisionRecord]:
        sql = f"SELECT {COLUMNS} FROM revisions WHERE known_at <= ?"
        params: list[Any] = [cutoff(as_of)]
        if namespace is not None:
            sql += " AND namespace = ?"
            params.append(namespace)
        for row in self.conn.execute(sql + " ORDER BY known_at, id", params):
            yield record(row)

    def revisions_by_id(self, ids: Sequence[int]) -> dict[int, RevisionRecord]:
        rows = self.conn.execute(f"SELECT {COLUMNS} FROM revisions WHERE id IN "
                                 "(SELECT value FROM json_each(?))", (json.dumps(list(ids)),))
        return {row[0]: record(row) for row in rows}
