"""SQL of the append-only revision log: appends, the visibility rule, history."""

from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

from ..text import normalize_text
from ..notes import is_record, legacy_chunk_number, record_id
from ..records import RevisionRecord
from ..times import format_time
from .connection import cutoff, id_batches

_BASE = ("id, namespace, memory_id, known_at, valid_from, valid_to, deleted, hides_revision, "
         "title, content, source, provenance, content_hash")


def record(row: Sequence[Any]) -> RevisionRecord:
    (rid, namespace, memory_id, known_at, valid_from, valid_to, deleted, hides, title,
     content, source, provenance, digest, note, metadata) = row
    meta = json.loads(metadata) if metadata else None
    heading_path = meta.pop("heading_path", None) if meta else None
    return RevisionRecord(
        revision_id=rid, namespace=namespace, memory_id=memory_id,
        known_at=format_time(known_at), valid_from=format_time(valid_from),
        valid_to=format_time(valid_to), deleted=bool(deleted), hides_revision=hides,
        title=title, content=content, source=source,
        provenance=json.loads(provenance) if provenance else None, content_hash=digest,
        note=note, heading_path=heading_path, metadata=meta or None)


def metadata_json(heading_path: list[str] | None, metadata: dict | None) -> str | None:
    meta = dict(metadata or {})
    if heading_path is not None:
        meta["heading_path"] = list(heading_path)
    return json.dumps(meta, sort_keys=True, ensure_ascii=False) if meta else None


class RevisionLog:
    """Mixin of :class:`~personal_memory.store.Database`: the revisions table."""

    @property
    def columns(self) -> str:
        """The columns :func:`record` reads (files before schema 4 have no note columns)."""
        return _BASE + (", note, metadata" if self.at_least(4) else ", NULL, NULL")

    def max_known_at(self) -> int | None:
        return self.scalar("SELECT max(known_at) FROM revisions")

    def insert_revision(self, *, namespace: str, memory_id: str, known_at: int,
                        valid_from: int, valid_to: int | None, deleted: bool,
                        hides_revision: int | None, title: str | None, content: str,
                        source: str | None, provenance: dict | None,
                        content_hash: str, note: str | None = None,
                        heading_path: list[str] | None = None, metadata: dict | None = None,
                        index_title: str | None = None, index_content: str | None = None,
                        ) -> RevisionRecord:
        """Append one revision; call inside :meth:`transaction`. ``index_title`` and
        ``index_content`` are the text to index when it is not the title and content; a
        note's record (memory ID ``note#``) is not indexed at all."""
        indexed = not deleted and not is_record(memory_id, note)
        index_title = None if index_title == title else index_title
        index_content = None if index_content == content else index_content
        ntitle = normalize_text(index_title if index_title is not None
                                          else title or "")
        ncontent = normalize_text(index_content if index_content is not None
                                            else content)
        length = (len(self.document_tokens(ntitle)) + len(self.document_tokens(ncontent))
                  if indexed else 0)
        meta = metadata_json(heading_path, metadata)
        prov = json.dumps(provenance, sort_keys=True) if provenance else None
        self.conn.execute(
            "INSERT INTO revisions (namespace, memory_id, known_at, valid_from, valid_to, "
            "deleted, hides_revision, title, content, source, provenance, content_hash, "
            "doc_length, note, metadata, index_title, index_content) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (namespace, memory_id, known_at, valid_from, valid_to, int(deleted),
             hides_revision, title, content, source, prov, content_hash, length,
             note, meta, index_title, index_content))
        rowid = self.conn.last_insert_rowid()
        if indexed:
            self.conn.execute("INSERT INTO revisions_fts (rowid, title, content) VALUES (?,?,?)",
                              (rowid, ntitle, ncontent))
        return record((rowid, namespace, memory_id, known_at, valid_from, valid_to, deleted,
                       hides_revision, title, content, source, prov, content_hash, note, meta))

    def indexed_as(self, revision_id: int) -> tuple[str | None, str | None]:
        """The (index_title, index_content) stored with a revision (None: its own)."""
        if not self.at_least(4):
            return None, None
        return next(iter(self.conn.execute(
            "SELECT index_title, index_content FROM revisions WHERE id = ?", (revision_id,))))

    def index_texts(self, revision_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """(title, content) each revision is indexed by, NFKC as indexed."""
        out = {}
        for ids in id_batches(revision_ids):
            for rid, title, content in self.conn.execute(
                    f"SELECT id, {self.index_text} FROM revisions WHERE id IN "
                    "(SELECT value FROM json_each(?))", (ids,)):
                out[rid] = (normalize_text(title or ""),
                            normalize_text(content))
        return out

    def _one(self, sql: str, params: Sequence[Any]) -> RevisionRecord | None:
        row = next(iter(self.conn.execute(sql, params)), None)
        return record(row) if row else None

    def latest_revision(self, namespace: str, memory_id: str) -> RevisionRecord | None:
        return self._one(
            f"SELECT {self.columns} FROM revisions WHERE namespace = ? AND memory_id = ? "
            "ORDER BY known_at DESC, id DESC LIMIT 1", (namespace, memory_id))

    def visible_revision(self, namespace: str, memory_id: str, as_of: int | None,
                         valid_at: int) -> RevisionRecord | None:
        """The winning revision (possibly a tombstone) of one memory at a point in time."""
        return self._one(
            f"SELECT {self.columns} FROM revisions WHERE namespace = ? AND memory_id = ? "
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
                SELECT {self.columns} FROM revisions
                WHERE id IN (SELECT id FROM eligible WHERE rn = 1 AND deleted = 0)
                  AND NOT ({self.purged})
                ORDER BY id""",
            (namespace, cutoff(as_of), valid_at, valid_at))
        return [record(r) for r in rows]

    def changed_between(self, namespace: str, since: int, until: int,
                        ) -> list[tuple[str, int | None, int | None]]:
        """(memory ID, winning revision at ``since``, at ``until``) of every memory whose
        winner (each side at valid time = its cutoff) may differ: one with a revision known
        in (since, until], or whose validity starts or ends in it. Winners may be tombstones
        or purged; None when nothing is visible."""
        win = ("(SELECT id FROM revisions r WHERE r.namespace = :ns AND r.memory_id = "
               "t.memory_id AND r.known_at <= :{0} AND r.valid_from <= :{0} AND "
               "(r.valid_to IS NULL OR :{0} < r.valid_to) ORDER BY r.known_at DESC, r.id DESC "
               "LIMIT 1)")
        return self.execute(
            f"""WITH t AS (
                  SELECT memory_id FROM revisions
                  WHERE known_at > :since AND known_at <= :until AND namespace = :ns
                  UNION
                  SELECT memory_id FROM revisions WHERE namespace = :ns
                    AND valid_from > :since AND valid_from <= :until AND known_at <= :until
                  UNION
                  SELECT memory_id FROM revisions WHERE namespace = :ns
                    AND valid_to > :since AND valid_to <= :until AND known_at <= :until)
                SELECT memory_id, {win.format("since")}, {win.format("until")} FROM t""",
            {"ns": namespace, "since": since, "until": until})

    def purged_among(self, ids: Sequence[int]) -> set[int]:
        if not self.at_least(3) or not ids:
            return set()
        return {rid for (rid,) in self.conn.execute(
            "SELECT id FROM revisions WHERE id IN (SELECT value FROM json_each(?)) "
            f"AND {self.purged}", (json.dumps(list(ids)),))}

    def note_states(self, namespace: str, note: str) -> dict[str, bool]:
        """Every memory ID of a note (its sections and its record): True when its newest
        revision is live, False when it is a tombstone."""
        if not self.at_least(4):
            return {}
        return self._latest_states("note = ?", (namespace, note))

    def legacy_chunk_states(self, namespace: str, note: str) -> dict[str, bool]:
        """:meth:`memory_states` of the numbered chunks the previous note model stored for
        ``note`` (``note#1``, ``note#2``...)."""
        return {m: live for m, live in self.memory_states(namespace, record_id(note)).items()
                if legacy_chunk_number(m, note) is not None}

    def memory_states(self, namespace: str, prefix: str) -> dict[str, bool]:
        """Every memory ID starting with ``prefix``: True when its newest revision is live,
        False when it is a tombstone."""
        return self._latest_states("memory_id >= ? AND memory_id < ?",
                                   (namespace, prefix, prefix + "\U0010ffff"))

    def _latest_states(self, where: str, params: tuple) -> dict[str, bool]:
        """memory ID -> whether its newest revision is live, for the memories of one
        namespace (the first parameter) selected by ``where``."""
        return {m: not deleted for m, deleted in self.conn.execute(
            f"""SELECT memory_id, deleted FROM (
                 SELECT memory_id, deleted, ROW_NUMBER() OVER (
                   PARTITION BY memory_id ORDER BY known_at DESC, id DESC) AS rn
                 FROM revisions WHERE namespace = ? AND {where})
               WHERE rn = 1""", params)}

    def history(self, namespace: str, memory_id: str, as_of: int | None,
                ) -> list[RevisionRecord]:
        rows = self.conn.execute(
            f"SELECT {self.columns} FROM revisions WHERE namespace = ? AND memory_id = ? "
            "AND known_at <= ? ORDER BY known_at, id", (namespace, memory_id, cutoff(as_of)))
        return [record(r) for r in rows]

    def revisions_in(self, namespace: str | None, as_of: int | None,
                     ) -> Iterator[RevisionRecord]:
        sql = f"SELECT {self.columns} FROM revisions WHERE known_at <= ?"
        params: list[Any] = [cutoff(as_of)]
        if namespace is not None:
            sql += " AND namespace = ?"
            params.append(namespace)
        for row in self.conn.execute(sql + " ORDER BY known_at, id", params):
            yield record(row)

    def revisions_by_id(self, ids: Sequence[int]) -> dict[int, RevisionRecord]:
        rows = self.conn.execute(f"SELECT {self.columns} FROM revisions WHERE id IN "
                                 "(SELECT value FROM json_each(?))", (json.dumps(list(ids)),))
        return {row[0]: record(row) for row in rows}
