"""Vectors of a semantic model: which revisions still need one, storing them, reading them."""

from __future__ import annotations

import json
from typing import NamedTuple, Sequence

from .connection import id_batches


class PendingPassage(NamedTuple):
    """A revision without a vector: its id and the text it is indexed by."""
    id: int
    title: str | None
    content: str


class StoredVector(NamedTuple):
    seq: int
    revision_id: int
    piece: int
    vector: bytes


class PieceVector(NamedTuple):
    """A vector to store: the revision, which of its pieces, the vector, the hash of the
    exact passage it was made from, and the lines of the section it covers."""
    revision_id: int
    piece: int
    vector: bytes
    passage_hash: str
    first_line: int | None
    last_line: int | None


class Vectors:
    """Mixin of :class:`~personal_memory.store.Database`: the ``vectors`` table (schema 5;
    a row per piece of a section since schema 8). A revision needs vectors when a search
    can rank it: not a tombstone, not purged, not a note's record. A revision's pieces are
    stored together, in one statement, so a revision has all of its vectors or none."""

    @property
    def _needs_vector(self) -> str:
        return f"deleted = 0 AND NOT ({self.purged}) AND NOT {self.note_record}"

    _MISSING = ("NOT EXISTS (SELECT 1 FROM vectors v WHERE v.embedder = ? AND "
                "v.revision_id = revisions.id)")

    def vectors_ready(self) -> bool:
        return self.at_least(5)

    def missing_vectors(self, embedder: str, limit: int, below: int | None = None,
                        ) -> list[PendingPassage]:
        """(id, title, content as indexed) of up to ``limit`` revisions without a vector from
        ``embedder``, newest first (what was just written is searched most), with ids below
        ``below`` when given (a cursor: the next batch never rescans the last)."""
        bound = "" if below is None else f"id < {int(below)} AND "
        return [PendingPassage(*row) for row in self.conn.execute(
            f"SELECT id, {self.index_text} FROM revisions WHERE {bound}{self._needs_vector} "
            f"AND {self._MISSING} ORDER BY id DESC LIMIT ?", (embedder, limit))]

    def missing_sample(self, embedder: str, limit: int) -> list[PendingPassage]:
        """Up to ``limit`` of the revisions without a vector from ``embedder``, spread evenly
        over all of them (an estimate's sample: the newest alone can be unlike the rest)."""
        ids = [i for (i,) in self.conn.execute(
            f"SELECT id FROM revisions WHERE {self._needs_vector} AND {self._MISSING} "
            "ORDER BY id", (embedder,))]
        step = max(len(ids) / limit, 1.0)
        chosen = sorted({ids[int(k * step)] for k in range(min(limit, len(ids)))})
        return [PendingPassage(*row) for batch in id_batches(chosen) for row in self.conn.execute(
            f"SELECT id, {self.index_text} FROM revisions WHERE id IN "
            "(SELECT value FROM json_each(?))", (batch,))]

    def passages_after(self, last_id: int) -> list[PendingPassage]:
        """(id, title, content as indexed) of the revisions appended after ``last_id`` that
        get a vector (of any model)."""
        return [PendingPassage(*row) for row in self.conn.execute(
            f"SELECT id, {self.index_text} FROM revisions WHERE id > ? AND "
            f"{self._needs_vector} ORDER BY id", (last_id,))]

    def embedders(self) -> list[str]:
        """The models that have vectors stored."""
        if not self.vectors_ready():
            return []
        return [k for (k,) in self.execute("SELECT DISTINCT embedder FROM vectors")]

    def count_missing_vectors(self, embedder: str, namespace: str | None = None) -> int:
        where = " AND namespace = ?" if namespace else ""
        params = (namespace,) if namespace else ()
        if self.vectors_ready():  # a reader of a file not yet upgraded: none stored
            where, params = f"{where} AND {self._MISSING}", params + (embedder,)
        return self.scalar(f"SELECT count(*) FROM revisions WHERE {self._needs_vector}"
                           f"{where}", params)

    def add_vectors(self, embedder: str, rows: Sequence[PieceVector]) -> None:
        """Store the vectors of whole revisions, every piece of each (call inside
        :meth:`transaction`); a revision that already has vectors keeps them, and a
        revision purged since it was read gets none."""
        fresh = {r.revision_id for r in rows}
        for ids in id_batches(sorted(fresh)):
            fresh -= {rid for (rid,) in self.conn.execute(
                "SELECT DISTINCT revision_id FROM vectors WHERE embedder = ? AND revision_id "
                "IN (SELECT value FROM json_each(?))", (embedder, ids))}
        self.conn.executemany(
            "INSERT OR IGNORE INTO vectors (revision_id, embedder, piece, vector, passage_hash, "
            "first_line, last_line) "
            f"SELECT id, ?, ?, ?, ?, ?, ? FROM revisions WHERE id = ? AND NOT ({self.purged})",
            ((embedder, r.piece, r.vector, r.passage_hash, r.first_line, r.last_line,
              r.revision_id) for r in rows if r.revision_id in fresh))

    def vectors_of_passages(self, embedder: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """A stored vector of ``embedder`` for each passage hash that has one."""
        out: dict[str, bytes] = {}
        for batch in id_batches(list(hashes)):
            out.update(self.conn.execute(
                "SELECT passage_hash, vector FROM vectors WHERE embedder = ? AND passage_hash "
                "IN (SELECT value FROM json_each(?)) GROUP BY passage_hash", (embedder, batch)))
        return out

    def vector_counts(self) -> dict[str, int]:
        """Revisions with vectors, per embedder."""
        if not self.vectors_ready():
            return {}
        return dict(self.execute("SELECT embedder, count(DISTINCT revision_id) FROM vectors "
                                 "GROUP BY embedder"))

    def piece_count(self, embedder: str) -> int:
        """Vectors (pieces) stored for an embedder."""
        if not self.vectors_ready():
            return 0
        return self.scalar("SELECT count(*) FROM vectors WHERE embedder = ?", (embedder,))

    def piece_lines(self, embedder: str, pieces: Sequence[tuple[int, int]],
                    ) -> dict[tuple[int, int], tuple[int, int]]:
        """The lines (first, last) of each (revision id, piece) that records them."""
        out: dict[tuple[int, int], tuple[int, int]] = {}
        for rid, piece in pieces:
            for first, last in self.conn.execute(
                    "SELECT first_line, last_line FROM vectors WHERE embedder = ? AND "
                    "revision_id = ? AND piece = ? AND first_line IS NOT NULL",
                    (embedder, rid, piece)):
                out[(rid, piece)] = (first, last)
        return out

    def drop_vectors(self, keep: Sequence[str] | None) -> int:
        """Delete the vectors of every embedder but those in ``keep`` (None: all of them)."""
        self.conn.execute("DELETE FROM vectors WHERE embedder NOT IN "
                          "(SELECT value FROM json_each(?))", (json.dumps(list(keep or ())),))
        return self.conn.changes()

    def max_vector_seq(self) -> int:
        if not self.vectors_ready():
            return 0
        return self.scalar("SELECT coalesce(max(seq), 0) FROM vectors")

    def vectors_since(self, embedder: str, seq: int, limit: int,
                      ) -> list[StoredVector]:
        """Up to ``limit`` (seq, revision id, piece, vector) of ``embedder`` added after ``seq``,
        in seq order. (The unary + keeps SQLite on the seq range rather than the index of
        every vector of that embedder.)"""
        if not self.vectors_ready():
            return []
        return [StoredVector(*row) for row in self.conn.execute(
            "SELECT seq, revision_id, piece, vector FROM vectors WHERE seq > ? AND +embedder = ? "
            "ORDER BY seq LIMIT ?", (seq, embedder, limit))]

    def vector_blobs(self, embedder: str, revision_ids: Sequence[int],
                     ) -> dict[int, list[tuple[int, bytes]]]:
        """Each revision's (piece, vector) pairs, in piece order."""
        out: dict[int, list[tuple[int, bytes]]] = {}
        if not self.vectors_ready():
            return out
        for ids in id_batches(revision_ids):
            for rid, piece, blob in self.conn.execute(
                    "SELECT revision_id, piece, vector FROM vectors WHERE embedder = ? AND "
                    "revision_id IN (SELECT value FROM json_each(?)) ORDER BY revision_id, piece",
                    (embedder, ids)):
                out.setdefault(rid, []).append((piece, blob))
        return out

    def cosine_sqlite_vec(self, embedder: str, revision_ids: Sequence[int], query: bytes,
                          ) -> dict[int, tuple[float, int]]:
        """Each revision's best cosine over its pieces and that piece, computed inside
        SQLite by sqlite-vec (float32)."""
        out: dict[int, tuple[float, int]] = {}
        if not self.vectors_ready():
            return out
        for ids in id_batches(revision_ids):
            for rid, piece, dist in self.conn.execute(
                    "SELECT revision_id, piece, vec_distance_cosine(vector, ?) FROM vectors "
                    "WHERE embedder = ? AND revision_id IN (SELECT value FROM json_each(?)) "
                    "ORDER BY revision_id, piece", (query, embedder, ids)):
                if rid not in out or 1.0 - dist > out[rid][0]:
                    out[rid] = (1.0 - dist, piece)
        return out
