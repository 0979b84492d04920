"""SQL of purge: the one audited rewrite of revisions, and the byte scan that proves a text
is gone from the database files."""

from __future__ import annotations

import json
import os
import secrets
from typing import Any, NamedTuple

from ..notes.front_matter import property_values
from ..notes.model import legacy_chunk_number, record_id
from ..paths import restore_scratch_folders
from ..records import Checkpoint, PurgeAudit
from ..search.text import find_folded, fold
from ..times import format_time
from .connection import id_batches

# A purged revision keeps its identity and times; everything that held its text is blank.
PURGED_HASH = "purged"
# The text columns of a revision a purge by text searches (identity columns included: a
# secret may sit in a heading, hence a memory ID, or in a file name, hence a note).
_TEXT_COLUMNS = ("content", "title", "source", "provenance", "metadata", "index_title",
                 "index_content")
_IDENTITY_COLUMNS = ("memory_id", "note")


class Candidate(NamedTuple):
    """A revision a purge selected. ``rename``: its memory ID or note holds the erased
    text, so both are replaced by a placeholder."""
    revision_id: int
    memory_id: str
    note: str | None
    known_at: int
    deleted: bool
    title: str | None
    content: str
    provenance: dict | None
    metadata: dict
    rename: bool


# meta key prefix of an unfinished purge: ``purge-unfinished:<audit id>`` -> its parts left
UNFINISHED = "purge-unfinished:"


def placeholder() -> str:
    """A new identity for a memory or note whose name was the erased text: unguessable (a
    hash of a short secret could be reversed) and unlike any ID a sync writes."""
    return f"(purged {secrets.token_hex(8)})"


def _in_values(block: str | None, wanted: str) -> bool:
    """Whether a note record's front matter holds ``wanted`` (folded) in its values as
    YAML reads them: written escaped ("\\x41") or folded over lines, the text a search
    finds is not the text as written."""
    if not block or not block.startswith("---"):
        return False
    values = property_values(block, every=True) or {}
    return any(wanted in fold(v) for v in values.values())


class Purging:
    """Mixin of :class:`~personal_memory.store.Database`: purge and its proof."""

    def purge_candidates(self, namespace: str, *, memory_id: str | None = None,
                         note: str | None = None, matching: str | None = None,
                         known_before: int | None = None) -> list[Candidate]:
        """Revisions that match the selection and still hold text (or a name to erase),
        oldest first. A memory ID selects its revisions (their ID stays); a note selects
        its sections, record, tombstones and the numbered chunks of the previous note model,
        and erases the note's path; a text selects every revision holding it in any column,
        identity columns included. With ``known_before``, an ID or a note selects only the
        revisions replaced since and tombstones (a revision still current is the note as
        it reads)."""
        v4 = self.at_least(4)
        note_col = "note" if v4 else "NULL"
        meta_col = "metadata" if v4 else "NULL"
        text_cols = [c for c in _TEXT_COLUMNS if v4 or c not in ("metadata", "index_title",
                                                                "index_content")]
        sql = (f"SELECT id, memory_id, {note_col}, known_at, deleted, title, content, "
               f"provenance, {meta_col} FROM revisions WHERE namespace = ? "
               f"AND NOT ({self.purged})")
        params: list[Any] = [namespace]
        if memory_id is not None:
            sql += " AND memory_id = ? AND deleted = 0"
            params.append(memory_id)
        elif note is not None:
            prefix = record_id(note)
            sql += f" AND ({note_col} = ? OR (memory_id >= ? AND memory_id < ?))"
            params += [note, prefix, prefix + "\U0010ffff"]
        else:  # every form a search finds it in: the text folded as the index folds it
            self.conn.create_scalar_function(
                "pm_holds", lambda value, wanted: wanted in fold(value or ""), 2,
                deterministic=True)
            self.conn.create_scalar_function("pm_in_values", _in_values, 2, deterministic=True)
            in_text = " OR ".join(f"pm_holds({c}, :t)" for c in text_cols)
            if v4:  # a record's front matter also as its values read (escaped, folded)
                in_text += f" OR ({self.note_record} AND pm_in_values(content, :t))"
            in_name = " OR ".join(f"pm_holds({c}, :t)"
                                  for c in _IDENTITY_COLUMNS if v4 or c == "memory_id")
            sql = sql.replace("namespace = ?", "namespace = :ns")
            sql += f" AND (({in_text}) AND deleted = 0 OR {in_name})"
            params = {"ns": namespace, "t": fold(matching)}  # type: ignore[assignment]
        if known_before is not None:
            if isinstance(params, dict):
                sql += " AND known_at < :before"
                params["before"] = known_before
            else:  # an ID's or a note's revisions replaced since, or tombstones: what is
                # still current (a section or record unchanged since) is the note as it
                # reads now
                sql += (" AND known_at < ? AND (deleted = 1 OR EXISTS (SELECT 1 FROM "
                        "revisions AS later WHERE later.namespace = revisions.namespace AND "
                        "later.memory_id = revisions.memory_id AND later.id > revisions.id))")
                params.append(known_before)
        found = []
        for rid, mid, nid, known, deleted, title, content, prov, meta in self.conn.execute(
                sql + " ORDER BY known_at, id", params):
            if note is not None and nid != note and not (
                    nid is None and legacy_chunk_number(mid, note) is not None):
                continue
            rename = note is not None or (matching is not None and any(
                find_folded(x or "", matching) for x in (mid, nid)))
            found.append(Candidate(rid, mid, nid, known, bool(deleted), title, content,
                                   json.loads(prov) if prov else None,
                                   json.loads(meta) if meta else {}, rename))
        return found

    def written_forms(self, ids: list[int], matching: str) -> list[str]:
        """Each occurrence of ``matching`` in the revisions ``ids`` as it is written there
        (NFD, full-width, another case...): what the proof scans the bytes for."""
        v4 = self.at_least(4)
        cols = [c for c in _TEXT_COLUMNS + _IDENTITY_COLUMNS
                if v4 or c not in ("metadata", "index_title", "index_content", "note")]
        found: dict[str, None] = {}
        for batch in id_batches(ids):
            for row in self.conn.execute(
                    f"SELECT {', '.join(cols)} FROM revisions WHERE id IN "
                    "(SELECT value FROM json_each(?))", (batch,)):
                for value in row:
                    found.update(dict.fromkeys(find_folded(value or "", matching)))
        return list(found)

    def text_elsewhere(self, text: str, excluded: list[int]) -> bool:
        """Whether a revision not in ``excluded`` still holds ``text`` (title or content)."""
        return self.scalar(
            "SELECT count(*) FROM revisions WHERE (instr(content, ?) > 0 OR "
            "instr(coalesce(title, ''), ?) > 0) AND id NOT IN (SELECT value FROM json_each(?))",
            (text, text, json.dumps(excluded))) > 0

    def purge_revisions(self, candidates: list[Candidate], *, namespace: str, selector: str,
                        reason: str | None, purged_at: int, erase: list[str],
                        unfinished: list[str]) -> int:
        """Blank the candidates' text, title, source, provenance, metadata, hash and vectors,
        take them out of the full-text index, rename the identities that hold the text,
        scrub ``erase`` (the texts being erased) from the bookkeeping tables, and record
        the purge (kind of selection and IDs, never the text) with the parts of the
        erasure still to do (``unfinished``: see :meth:`unfinished_purges`). One
        transaction, so a purge killed after it is found and finished by the next one;
        ``secure_delete`` overwrites what SQLite frees. Returns the audit entry's ID."""
        self.execute("PRAGMA secure_delete = ON")
        stub = json.dumps({"purged_at": purged_at, "reason": reason}, sort_keys=True)
        ids = [c.revision_id for c in candidates]
        names: dict[str, str] = {}  # an erased memory ID or note -> its placeholder
        for c in candidates:
            if c.rename:
                for name in (c.memory_id, c.note):
                    if name is not None and name not in names:
                        names[name] = placeholder()
        with self.transaction():
            self.conn.execute("INSERT INTO meta VALUES ('purge_in_progress', '1')")
            v4 = self.at_least(4)
            blank_note_columns = (", metadata = NULL, index_title = NULL, "
                                  "index_content = NULL") if v4 else ""
            for c in candidates:
                if not c.deleted:
                    title, content, note, meta, record = next(iter(self.conn.execute(
                        f"SELECT {self.keyword_columns}, {self.note_record} FROM revisions "
                        "WHERE id = ?", (c.revision_id,))))
                    if not record:  # a note's record was never indexed
                        # A contentless FTS5 table forgets a row only when given what it
                        # indexed.
                        self.conn.execute(
                            "INSERT INTO revisions_fts (revisions_fts, rowid, title, content) "
                            "VALUES ('delete', ?, ?, ?)",
                            (c.revision_id, *self.keyword_texts(title, content, note, meta)))
                self.conn.execute(
                    "UPDATE revisions SET title = NULL, content = '', source = NULL, "
                    "provenance = ?, content_hash = ?, doc_length = 0, embedding = NULL, "
                    f"purged_at = ?{blank_note_columns} WHERE id = ?",
                    (stub, PURGED_HASH, purged_at, c.revision_id))
                if c.rename:
                    self.conn.execute("UPDATE revisions SET memory_id = ? WHERE id = ?",
                                      (names[c.memory_id], c.revision_id))
                    if v4 and c.note is not None:
                        self.conn.execute("UPDATE revisions SET note = ? WHERE id = ?",
                                          (names[c.note], c.revision_id))
            # stubs of an earlier purge that kept these names (a note purged only before a
            # time) hold no text: renamed alike, so the names leave the file
            for old, new in names.items():
                self.conn.execute(f"UPDATE revisions SET memory_id = ? WHERE namespace = ? "
                                  f"AND memory_id = ? AND {self.purged}", (new, namespace, old))
                if v4:
                    self.conn.execute(f"UPDATE revisions SET note = ? WHERE namespace = ? "
                                      f"AND note = ? AND {self.purged}", (new, namespace, old))
            if self.at_least(5):  # a vector is made from the text: it goes too
                self.conn.execute("DELETE FROM vectors WHERE revision_id IN "
                                  "(SELECT value FROM json_each(?))", (json.dumps(ids),))
            if self.at_least(7):
                self.conn.execute("DELETE FROM doc_lengths WHERE revision_id IN "
                                  "(SELECT value FROM json_each(?))", (json.dumps(ids),))
            if self.at_least(6):
                for old, new in names.items():
                    self.conn.execute("UPDATE moves SET old_note = ? WHERE old_note = ?",
                                      (new, old))
                    self.conn.execute("UPDATE moves SET new_note = ? WHERE new_note = ?",
                                      (new, old))
            self._scrub_bookkeeping(erase)
            self.conn.execute("DELETE FROM meta WHERE key = 'purge_in_progress'")
            # Merge the index into one b-tree so no old segment keeps a deleted term.
            self.conn.execute("INSERT INTO revisions_fts (revisions_fts) VALUES ('optimize')")
            self.conn.execute(
                "INSERT INTO purges (purged_at, namespace, selector, reason, revision_ids, "
                "revisions) VALUES (?,?,?,?,?,?)",
                (purged_at, namespace, selector, reason, json.dumps(ids), len(ids)))
            audit = self.conn.last_insert_rowid()
            self.set_meta(UNFINISHED + str(audit), ",".join(unfinished))
            self.bump_index_generation()
        return audit

    def unfinished_purges(self) -> dict[int, list[str]]:
        """Purges whose erasure is not proven yet, by audit ID, with what is left:
        ``file`` (the database file and its WAL were not shown free of the text: a reader
        kept the WAL from emptying, or the purge was killed) and ``replica`` (the replica
        was not made to forget)."""
        return {int(key[len(UNFINISHED):]): [p for p in value.split(",") if p]
                for key, value in self.execute(
                    "SELECT key, value FROM meta WHERE key >= ? AND key < ?",
                    (UNFINISHED, UNFINISHED + "\uffff"))}

    def finish_purges(self, part: str) -> list[int]:
        """``part`` done for every unfinished purge; the audit IDs now finished whole."""
        done = []
        with self.transaction():
            for audit, parts in self.unfinished_purges().items():
                left = [p for p in parts if p != part]
                if left:
                    self.set_meta(UNFINISHED + str(audit), ",".join(left))
                else:
                    self.conn.execute("DELETE FROM meta WHERE key = ?",
                                      (UNFINISHED + str(audit),))
                    done.append(audit)
        return done

    def _scrub_bookkeeping(self, erase: list[str]) -> None:
        """The erased texts (in any form a search finds) out of what the sync and the
        daemon record: paths in the stat cache, problems, sync runs, the daemon's folders.
        A collection's binding to its folder stays: it is where the notes are read from
        (and checked before a purge), not note content."""
        texts = [t for t in erase if t and fold(t)]
        if not texts:
            return

        def holds(value: str | None) -> bool:
            return value is not None and any(fold(t) in fold(value) for t in texts)

        for path, coll, ns in self.execute("SELECT path, collection, namespace FROM files"):
            if holds(path):
                self.conn.execute("DELETE FROM files WHERE namespace = ? AND collection = ? "
                                  "AND path = ?", (ns, coll, path))
        if self.at_least(2):
            for rowid, path, reason in self.execute(
                    "SELECT rowid, path, reason FROM problems"):
                if holds(path) or holds(reason):
                    self.conn.execute("DELETE FROM problems WHERE rowid = ?", (rowid,))
        for run_id, roots, errors in self.execute("SELECT id, roots, errors FROM sync_runs"):
            new_roots, new_errors = _scrubbed(roots, texts), _scrubbed(errors, texts)
            if (new_roots, new_errors) != (roots, errors):
                self.conn.execute("UPDATE sync_runs SET roots = ?, errors = ? WHERE id = ?",
                                  (new_roots, new_errors, run_id))
        for (roots,) in self.execute("SELECT roots FROM daemon"):
            if _scrubbed(roots, texts) != roots:
                self.conn.execute("UPDATE daemon SET roots = ?", (_scrubbed(roots, texts),))

    def bindings_holding(self, text: str) -> list[tuple[str, str]]:
        """The collection bindings (``namespace/collection``, folder) whose name or folder
        holds ``text`` in a form a search finds: kept by a purge, so its proof leaves
        their bytes out and names them."""
        prefix = "collection-root:"
        return [(key[len(prefix):], value) for key, value in self.execute(
                    "SELECT key, value FROM meta WHERE key >= ? AND key < ?",
                    (prefix, prefix + "\U0010ffff"))
                if fold(text) and fold(text) in fold(key + "\n" + value)]

    def residue(self, needle: str) -> list[str]:
        """Where ``needle`` still occurs in the database's tables: ``table.column (N
        rows)`` for each, so that a failed proof can name the cause."""
        out = []
        for table, in self.execute("SELECT name FROM sqlite_schema WHERE type = 'table' "
                                   "AND name NOT LIKE 'revisions_fts%' "
                                   "AND name NOT LIKE 'sqlite_%'"):
            columns = [c[1] for c in self.execute(f"PRAGMA table_info({table})")
                       if c[2].upper() in ("TEXT", "")]
            for col in columns:
                n = self.scalar(f"SELECT count(*) FROM {table} WHERE instr({col}, ?) > 0",
                                (needle,))
                if n:
                    out.append(f"{table}.{col} ({n} rows)")
        return out

    def rewrite_file(self) -> Checkpoint:
        """Rewrite the whole file (VACUUM, with secure_delete on) and empty the WAL into
        it; ``busy`` when a reader kept the checkpoint from finishing."""
        self.execute("PRAGMA secure_delete = ON")
        self.execute("VACUUM")
        busy, log, done = next(iter(self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")))
        return Checkpoint(bool(busy), log - done if log > 0 else 0)

    def purges(self) -> list[PurgeAudit]:
        if self.schema < 3:
            return []
        unfinished = self.unfinished_purges()
        return [PurgeAudit(id=row[0], purged_at=format_time(row[1]), namespace=row[2],
                           selector=row[3], reason=row[4], revision_ids=json.loads(row[5]),
                           revisions=row[6], unfinished=unfinished.get(row[0], []))
                for row in self.conn.execute(
                    "SELECT id, purged_at, namespace, selector, reason, revision_ids, "
                    "revisions FROM purges ORDER BY id")]


def _scrubbed(value: str, texts: list[str]) -> str:
    """A JSON bookkeeping value with every erased text (in each form found, or
    JSON-escaped) replaced by ``[purged]``."""
    for t in texts:
        for form in dict.fromkeys(find_folded(value, t) + [json.dumps(t)[1:-1]]):
            value = value.replace(form, "[purged]")
    return value


def scan_files(paths: list[str], needles: list[bytes],
               kept: list[bytes] = ()) -> dict[str, int]:
    """Occurrences of any needle in each file's raw bytes (files that are gone count 0),
    outside the byte strings ``kept`` (what a purge leaves on purpose)."""
    found = {}
    for path in paths:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except (FileNotFoundError, IsADirectoryError):
            found[path] = 0
            continue
        for k in kept:
            data = data.replace(k, b"\0" * len(k))
        found[path] = sum(data.count(n) for n in needles if n)
    return found


def folder_files(db_path: str, companions: list[str] = ()) -> tuple[list[str], list[str]]:
    """The files the store keeps: the database, its WAL and SHM, and every file under the
    ``companions`` folders (Litestream's WAL copies); then every other regular file beside
    the database, and those in a restore's scratch folder there."""
    own = [db_path + suffix for suffix in ("", "-wal", "-shm")]
    for top in companions:
        own += sorted(os.path.join(d, n) for d, _, names in os.walk(top) for n in names)
    folder = os.path.dirname(os.path.abspath(db_path))
    others = sorted(os.path.join(folder, n) for n in os.listdir(folder)
                    if os.path.join(folder, n) not in own
                    and os.path.isfile(os.path.join(folder, n)))
    for scratch in restore_scratch_folders(folder):  # a running restore's copy
        others += sorted(os.path.join(d, n) for d, _, names in os.walk(scratch)
                         for n in names)
    return own, others
