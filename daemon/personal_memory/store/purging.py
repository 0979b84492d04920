"""SQL of purge: the one audited rewrite of revisions, and proof that a text is gone from
every byte of the database."""

from __future__ import annotations

import json
import os
from typing import Any

from ..text import normalize_text
from ..notes import legacy_chunk_number, record_id

# A purged revision keeps its identity and times; everything that held its text is blank.
PURGED_HASH = "purged"


class Purging:
    """Mixin of :class:`~personal_memory.store.Database`: purge and its proof."""

    def purge_candidates(self, namespace: str, *, memory_id: str | None = None,
                         note: str | None = None, matching: str | None = None,
                         known_before: int | None = None) -> list[dict[str, Any]]:
        """Revisions that still hold text and match the selection, oldest first. A note
        selects its sections and record, and the numbered chunks of the previous note
        model (``note#3``)."""
        note_col = "note" if self.at_least(4) else "NULL"
        sql = ("SELECT id, memory_id, known_at, title, content, provenance, "
               f"{note_col}, {self.metadata_col} FROM revisions "
               f"WHERE namespace = ? AND deleted = 0 AND NOT ({self.purged})")
        params: list[Any] = [namespace]
        if memory_id is not None:
            sql += " AND memory_id = ?"
            params.append(memory_id)
        if note is not None:
            prefix = record_id(note)
            sql += f" AND ({note_col} = ? OR (memory_id >= ? AND memory_id < ?))"
            params += [note, prefix, prefix + "\U0010ffff"]
        if matching is not None:
            sql += " AND (instr(content, ?) > 0 OR instr(coalesce(title, ''), ?) > 0)"
            params += [matching, matching]
        if known_before is not None:
            sql += " AND known_at < ?"
            params.append(known_before)
        keys = ("revision_id", "memory_id", "known_at", "title", "content", "provenance",
                "note", "metadata")
        found = [dict(zip(keys, row)) | {"provenance": json.loads(row[5]) if row[5] else None,
                                         "metadata": json.loads(row[7]) if row[7] else {}}
                 for row in self.conn.execute(sql + " ORDER BY known_at, id", params)]
        if note is not None:
            found = [c for c in found if c["note"] == note or c["note"] is None
                     and legacy_chunk_number(c["memory_id"], note) is not None]
        return found

    @property
    def metadata_col(self) -> str:
        return "metadata" if self.at_least(4) else "NULL"

    def text_elsewhere(self, text: str, excluded: list[int]) -> bool:
        """Whether a revision not in ``excluded`` still holds ``text``."""
        return self.scalar(
            "SELECT count(*) FROM revisions WHERE (instr(content, ?) > 0 OR "
            "instr(coalesce(title, ''), ?) > 0) AND id NOT IN (SELECT value FROM json_each(?))",
            (text, text, json.dumps(excluded))) > 0

    def purge_revisions(self, revision_ids: list[int], *, namespace: str, selector: str,
                        reason: str | None, purged_at: int) -> None:
        """Blank the revisions' text, title, source, provenance, hash and vector, remove them
        from the full-text index, and record the purge (counts and IDs, never the text).
        One transaction; ``secure_delete`` overwrites what SQLite frees."""
        self.execute("PRAGMA secure_delete = ON")
        stub = json.dumps({"purged_at": purged_at, "reason": reason}, sort_keys=True)
        with self.transaction():
            self.conn.execute("INSERT INTO meta VALUES ('purge_in_progress', '1')")
            blank_note_columns = (", metadata = NULL, index_title = NULL, "
                                  "index_content = NULL") if self.at_least(4) else ""
            for rid in revision_ids:
                title, content, record = next(iter(self.conn.execute(
                    f"SELECT {self.index_text}, {self.note_record} FROM revisions "
                    "WHERE id = ?", (rid,))))
                if not record:  # a note's record was never indexed
                    # A contentless FTS5 table forgets a row only when given what it indexed.
                    self.conn.execute(
                        "INSERT INTO revisions_fts (revisions_fts, rowid, title, content) "
                        "VALUES ('delete', ?, ?, ?)",
                        (rid, normalize_text(title) if title else "",
                         normalize_text(content)))
                self.conn.execute(
                    "UPDATE revisions SET title = NULL, content = '', source = NULL, "
                    "provenance = ?, content_hash = ?, doc_length = 0, embedding = NULL, "
                    f"purged_at = ?{blank_note_columns} WHERE id = ?",
                    (stub, PURGED_HASH, purged_at, rid))
            if self.at_least(5):  # a vector is made from the text: it goes too
                self.conn.execute("DELETE FROM vectors WHERE revision_id IN "
                                  "(SELECT value FROM json_each(?))", (json.dumps(revision_ids),))
            self.conn.execute("DELETE FROM meta WHERE key = 'purge_in_progress'")
            # Merge the index into one b-tree so no old segment keeps a deleted term.
            self.conn.execute("INSERT INTO revisions_fts (revisions_fts) VALUES ('optimize')")
            self.conn.execute(
                "INSERT INTO purges (purged_at, namespace, selector, reason, revision_ids, "
                "revisions) VALUES (?,?,?,?,?,?)",
                (purged_at, namespace, selector, reason, json.dumps(revision_ids),
                 len(revision_ids)))
            self.bump_index_generation()

    def rewrite_file(self) -> tuple[int, int]:
        """Rewrite the whole file (VACUUM, with secure_delete on) and empty the WAL into
        it. (busy, frames left): busy is 1 when a reader kept the checkpoint from finishing."""
        self.execute("PRAGMA secure_delete = ON")
        self.execute("VACUUM")
        busy, log, done = next(iter(self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")))
        return busy, log - done if log > 0 else 0

    def purges(self) -> list[dict[str, Any]]:
        if self.schema < 3:
            return []
        keys = ("id", "purged_at", "namespace", "selector", "reason", "revision_ids",
                "revisions")
        return [dict(zip(keys, row)) | {"revision_ids": json.loads(row[5])}
                for row in self.conn.execute(f"SELECT {', '.join(keys)} FROM purges "
                                             "ORDER BY id")]


def scan_files(paths: list[str], needles: list[bytes]) -> dict[str, int]:
    """Occurrences of any needle in each file's raw bytes (files that are gone count 0)."""
    found = {}
    for path in paths:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            found[path] = 0
            continue
        found[path] = sum(data.count(n) for n in needles if n)
    return found


def folder_files(db_path: str) -> list[str]:
    """The database, its WAL and SHM, then every other regular file beside them."""
    own = [db_path + suffix for suffix in ("", "-wal", "-shm")]
    folder = os.path.dirname(os.path.abspath(db_path))
    others = sorted(os.path.join(folder, n) for n in os.listdir(folder)
                    if os.path.join(folder, n) not in own
                    and os.path.isfile(os.path.join(folder, n)))
    return own + others
