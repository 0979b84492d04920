"""SQL of the append-only revision log: appends, the visibility rule, history."""

from __future__ import annotations

import difflib
import json
import unicodedata
from typing import Any, Iterator, Sequence

from ..notes.model import is_record, legacy_chunk_number, record_id
from ..records import PurgeMark, RevisionRecord
from ..times import format_time
from . import visibility
from .connection import cutoff, id_batches

_BASE = ("id, namespace, memory_id, known_at, valid_from, valid_to, deleted, hides_revision, "
         "title, content, source, provenance, content_hash")


def record(row: Sequence[Any]) -> RevisionRecord:
    (rid, namespace, memory_id, known_at, valid_from, valid_to, deleted, hides, title,
     content, source, provenance, digest, note, metadata, purged_at) = row
    meta = json.loads(metadata) if metadata else None
    heading_path = meta.pop("heading_path", None) if meta else None
    prov = json.loads(provenance) if provenance else None
    purged = None
    if purged_at is not None:  # the stub's provenance holds only the purge's reason
        purged = PurgeMark(at=format_time(purged_at), reason=(prov or {}).get("reason"))
        prov = None
    return RevisionRecord(
        revision_id=rid, namespace=namespace, memory_id=memory_id,
        known_at=format_time(known_at), valid_from=format_time(valid_from),
        valid_to=format_time(valid_to), deleted=bool(deleted), hides_revision=hides,
        title=title, content=content, source=source, provenance=prov, content_hash=digest,
        note=note, heading_path=heading_path, metadata=meta or None, purged=purged)


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
        return (_BASE + (", note, metadata" if self.at_least(4) else ", NULL, NULL")
                + (", purged_at" if self.at_least(3) else ", NULL"))

    def max_known_at(self, at_most: int | None = None) -> int | None:
        """The newest ``known_at`` (not after ``at_most``, when given)."""
        if at_most is None:
            return self.scalar("SELECT max(known_at) FROM revisions")
        return self.scalar("SELECT max(known_at) FROM revisions WHERE known_at <= ?",
                           (at_most,))

    def effective_stamps(self) -> dict[tuple[str, str], dict[int, int]]:
        """For every (namespace, note) holding a revision stamped before one written
        earlier (an earlier version's clock, a day fast and then corrected), each of the
        note's revisions and its effective stamp: the newest stamp of any note revision
        written up to it, which this version's clock would have given it. Memories written
        through the API are left out (an older version let them be backdated on purpose),
        and so are the revisions a clock repair appended (copies, at past stamps). One pass over the log, kept until the file changes (as :meth:`any_record_with`)."""
        if not self.at_least(4):
            return {}
        version = self.changes_seen()
        held = getattr(self, "_effective_stamps", None)
        if held is None or held[0] != version:
            notes: dict[tuple[str, str], dict[int, int]] = {}
            repaired = ("AND id NOT IN (SELECT j.value FROM clock_repairs, "
                        "json_each(clock_repairs.revision_ids) j)" if self.at_least(8) else "")
            for rid, namespace, note, effective in self.conn.execute(
                    f"""WITH e AS (
                         SELECT id, namespace, note, known_at, max(known_at) OVER (
                           ORDER BY id ROWS UNBOUNDED PRECEDING) AS effective
                         FROM revisions WHERE note IS NOT NULL {repaired})
                       SELECT id, namespace, note, effective FROM e
                       WHERE (namespace, note) IN (
                         SELECT namespace, note FROM e WHERE effective > known_at)
                       ORDER BY id"""):
                notes.setdefault((namespace, note), {})[rid] = effective
            held = (version, notes)
            self._effective_stamps = held
        return held[1]

    def live_notes(self, namespace: str, prefix: str) -> list[str]:
        """The notes under ``prefix`` (``COLLECTION/``) with a memory whose newest revision
        is live, sorted."""
        if not self.at_least(4):
            return []
        return [n for (n,) in self.conn.execute(
            f"""SELECT DISTINCT note FROM (
                 SELECT note, {visibility.hidden(self.purged)} AS hidden,
                   ROW_NUMBER() OVER (PARTITION BY memory_id
                                      ORDER BY {visibility.NEWEST_FIRST}) AS rn
                 FROM revisions WHERE namespace = ? AND note >= ? AND note < ?)
               WHERE rn = 1 AND NOT hidden ORDER BY note""",
            (namespace, prefix, prefix + "\U0010ffff"))]

    def add_clock_repair(self, *, repaired_at: int, repaired_by: str, stamp: int,
                         newest_before: int | None, revision_ids: list[int]) -> int:
        """Audit one clock repair; call inside the repair's transaction."""
        self.conn.execute(
            "INSERT INTO clock_repairs (repaired_at, repaired_by, stamp, newest_before, "
            "memories, revision_ids) VALUES (?,?,?,?,?,?)",
            (repaired_at, repaired_by, stamp, newest_before, len(revision_ids),
             json.dumps(revision_ids)))
        return self.conn.last_insert_rowid()

    def last_clock_repair(self) -> int | None:
        """When the last clock repair was made (None: never)."""
        if not self.at_least(8):
            return None
        return self.scalar("SELECT max(repaired_at) FROM clock_repairs")

    def any_record_with(self, namespace: str, key: str) -> bool:
        """Whether any note record of the namespace, at any time, has ``key`` in its
        metadata: a search over a vault without embeds skips looking for embedders. The
        answer is kept until the file changes (SQLite's data_version, this connection's
        own writes included through total_changes)."""
        version = self.changes_seen()
        held = getattr(self, "_records_with", {})
        if held.get((namespace, key), (None,))[0] != version:
            found = self.at_least(4) and self.scalar(
                "SELECT 1 FROM revisions INDEXED BY revisions_note WHERE namespace = ? AND "
                "note IS NOT NULL AND memory_id = note || '#' AND metadata LIKE ? LIMIT 1",
                (namespace, f'%"{key}"%')) is not None
            held[(namespace, key)] = (version, found)
            self._records_with = held
        return held[(namespace, key)][1]

    def visible_records(self, namespace: str, as_of: int | None, valid_at: int,
                        with_key: str | None = None) -> list[RevisionRecord]:
        """The notes' records visible at a point in time (with ``with_key``: only those
        whose metadata has that key, e.g. ``embeds``)."""
        if not self.at_least(4):
            return []
        sql = visibility.winners(self.columns, "namespace = ? AND note IS NOT NULL AND "
                                 "memory_id = note || '#'")
        # The key is tested on the winners only: an older record must not win for it.
        keyed = f" AND metadata LIKE '%\"{with_key}\"%'" if with_key else ""
        return [record(r) for r in self.conn.execute(
            f"SELECT * FROM ({sql}) WHERE NOT {visibility.hidden(self.purged)}{keyed}",
            (namespace, cutoff(as_of), valid_at, valid_at))]

    def visible_record_fields(self, namespace: str, as_of: int | None, valid_at: int,
                              keys: tuple[str, ...], with_key: str | None = None
                              ) -> list[tuple[str, dict]]:
        """:meth:`visible_records` as (note, those of ``keys`` its metadata has), read
        without the rest of each record (a note's list of sections, its links): what
        resolving links among every note needs, at a fraction of the cost."""
        if not self.at_least(4):
            return []
        sql = visibility.winners(self.columns, "namespace = ? AND note IS NOT NULL AND "
                                 "memory_id = note || '#'")
        keyed = f" AND metadata LIKE '%\"{with_key}\"%'" if with_key else ""
        fields = ", ".join(f"metadata -> '$.{key}'" for key in keys)  # as JSON text
        return [(row[0], {key: json.loads(value) for key, value in zip(keys, row[1:])
                          if value is not None})
                for row in self.conn.execute(
                    f"SELECT note, {fields} FROM ({sql}) "
                    f"WHERE NOT {visibility.hidden(self.purged)}{keyed}",
                    (namespace, cutoff(as_of), valid_at, valid_at))]

    def note_revisions(self, namespace: str, note: str) -> list[RevisionRecord]:
        """Every revision of a note's memories (its sections and record), oldest first."""
        if not self.at_least(4):
            return []
        return [record(r) for r in self.conn.execute(
            f"SELECT {self.columns} FROM revisions WHERE namespace = ? AND note = ? "
            "ORDER BY known_at, id", (namespace, note))]

    def notes_ending(self, namespace: str, tail: str, as_of: int | None = None,
                     limit: int = 3) -> list[str]:
        """Notes known by ``as_of`` whose ID ends with ``/`` and ``tail`` (a path given
        without its collection), at most ``limit``, by ID."""
        if not self.at_least(4):
            return []
        tail = "/" + tail
        return [n for n, in self.execute(
            "SELECT DISTINCT note FROM revisions WHERE namespace = ? AND note IS NOT NULL "
            "AND substr(note, -?) = ? AND known_at <= ? ORDER BY note LIMIT ?",
            (namespace, len(tail), tail, cutoff(as_of), limit))]

    def notes_meant(self, namespace: str, given: str, as_of: int | None = None,
                    limit: int = 3) -> list[str]:
        """The notes known by ``as_of`` that a note not known as ``given`` may be, for an
        error to name: :meth:`notes_ending`; else, case aside and with ``.md`` added when
        it has none, those that end with the most of its last folders (a file's path on
        disk, ``/home/me/vault/Health.md``), or whose file is named so ("Project Falcon",
        a note's title as often as not); else a file name a typo away. At most ``limit``,
        by ID."""
        found = self.notes_ending(namespace, given, as_of, limit)
        if found or not self.at_least(4):
            return found
        wanted = unicodedata.normalize("NFC", given.strip()).replace("\\", "/").casefold()
        wanted = wanted.strip("/")
        if not wanted:
            return []
        if not wanted.endswith(".md"):
            wanted += ".md"
        notes = {n.casefold(): n for n, in self.execute(
            "SELECT DISTINCT note FROM revisions WHERE namespace = ? AND note IS NOT NULL "
            "AND known_at <= ?", (namespace, cutoff(as_of)))}
        parts = wanted.split("/")
        for k in range(len(parts), 0, -1):
            tail = "/" + "/".join(parts[-k:])
            found = sorted(n for folded, n in notes.items() if folded.endswith(tail))
            if found:
                return found[:limit]
        names: dict[str, list[str]] = {}
        for folded, n in notes.items():
            names.setdefault(folded.rsplit("/", 1)[-1], []).append(n)
        close = difflib.get_close_matches(parts[-1], list(names), n=limit, cutoff=0.85)
        return sorted(n for name in close for n in names[name])[:limit]

    def holds_namespace(self, namespace: str) -> bool:
        """Whether the namespace holds any revision (one index probe)."""
        return bool(self.execute("SELECT EXISTS (SELECT 1 FROM revisions WHERE namespace = ?)",
                                 (namespace,))[0][0])

    def first_known(self, namespace: str) -> int | None:
        """When the namespace's earliest revision became known (None: it holds none)."""
        return self.execute("SELECT min(known_at) FROM revisions WHERE namespace = ?",
                            (namespace,))[0][0]

    def last_known(self) -> int | None:
        """The newest ``known_at`` the file holds, in any namespace (None: nothing)."""
        return self.execute("SELECT max(known_at) FROM revisions")[0][0]

    def activity(self, namespace: str, bucket_us: int) -> list[tuple[int, int]]:
        """(bucket start, revisions known in it) for every bucket with any, in order."""
        return self.execute(
            "SELECT (known_at / ?) * ? AS start, count(*) FROM revisions WHERE namespace = ? "
            "GROUP BY start ORDER BY start", (bucket_us, bucket_us, namespace))

    def recent_notes(self, namespace: str, limit: int) -> list[tuple[str, int]]:
        """(note, when it last changed) of the notes changed most recently."""
        if not self.at_least(4):
            return []
        return self.execute(
            "SELECT note, max(known_at) AS last FROM revisions WHERE namespace = ? AND note "
            "IS NOT NULL GROUP BY note ORDER BY last DESC, note LIMIT ?", (namespace, limit))

    def notes_appended_after(self, revision_id: int, namespace: str | None) -> list[str]:
        """The notes of the revisions appended after ``revision_id`` (sorted, once each)."""
        if not self.at_least(4):
            return []
        where, params = ("AND namespace = ?", (revision_id, namespace)) if namespace else (
            "", (revision_id,))
        return [n for (n,) in self.conn.execute(
            f"SELECT DISTINCT note FROM revisions WHERE id > ? AND note IS NOT NULL {where} "
            "ORDER BY note", params)]

    def known_after(self, moment: int, limit: int = 20) -> list[RevisionRecord]:
        """Revisions known after ``moment`` (clock anomalies when it is now), oldest first."""
        return [record(r) for r in self.conn.execute(
            f"SELECT {self.columns} FROM revisions WHERE known_at > ? ORDER BY known_at, id "
            "LIMIT ?", (moment, limit))]

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
        meta = metadata_json(heading_path, metadata)
        ntitle, ncontent = self.keyword_texts(
            index_title if index_title is not None else title,
            index_content if index_content is not None else content, note, meta)
        length = (len(self.document_tokens(ntitle)) + len(self.document_tokens(ncontent))
                  if indexed else 0)
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
            if self.at_least(7):
                self.conn.execute("INSERT INTO doc_lengths VALUES (?, ?)", (rowid, length))
        return record((rowid, namespace, memory_id, known_at, valid_from, valid_to, deleted,
                       hides_revision, title, content, source, prov, content_hash, note, meta,
                       None))

    def indexed_as(self, revision_id: int) -> tuple[str | None, str | None]:
        """The (index_title, index_content) stored with a revision (None: its own)."""
        if not self.at_least(4):
            return None, None
        return next(iter(self.conn.execute(
            "SELECT index_title, index_content FROM revisions WHERE id = ?", (revision_id,))))

    def index_texts(self, revision_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """(title, content) each revision is indexed by, as the full-text index holds them."""
        out = {}
        for ids in id_batches(revision_ids):
            for rid, title, content, note, meta in self.conn.execute(
                    f"SELECT id, {self.keyword_columns} FROM revisions WHERE id IN "
                    "(SELECT value FROM json_each(?))", (ids,)):
                out[rid] = self.keyword_texts(title, content, note, meta)
        return out

    def _one(self, sql: str, params: Sequence[Any]) -> RevisionRecord | None:
        row = next(iter(self.conn.execute(sql, params)), None)
        return record(row) if row else None

    def latest_revision(self, namespace: str, memory_id: str) -> RevisionRecord | None:
        return self._one(
            f"SELECT {self.columns} FROM revisions WHERE namespace = ? AND memory_id = ? "
            f"ORDER BY {visibility.NEWEST_FIRST} LIMIT 1", (namespace, memory_id))

    def winner(self, namespace: str, memory_id: str, as_of: int | None,
               valid_at: int) -> RevisionRecord | None:
        """The winning revision of one memory at a point in time: None when nothing is
        eligible; a winner whose ``hidden`` is set hides the memory."""
        return self._one(
            f"SELECT {self.columns} FROM revisions WHERE namespace = ? AND memory_id = ? "
            f"AND {visibility.eligible()} ORDER BY {visibility.NEWEST_FIRST} LIMIT 1",
            (namespace, memory_id, cutoff(as_of), valid_at, valid_at))

    def visible(self, namespace: str, memory_id: str, as_of: int | None,
                valid_at: int) -> RevisionRecord | None:
        """The memory's revision visible at a point in time, or None when it is unknown
        then or hidden (by a tombstone or a purge)."""
        found = self.winner(namespace, memory_id, as_of, valid_at)
        return None if found is None or found.hidden else found

    def visible_revisions(self, namespace: str, as_of: int | None,
                          valid_at: int) -> list[RevisionRecord]:
        """Every visible revision of a namespace: the rule, as one query."""
        sql = visibility.winners(self.columns, "namespace = ?")
        rows = self.conn.execute(
            f"SELECT * FROM ({sql}) WHERE NOT {visibility.hidden(self.purged)} ORDER BY id",
            (namespace, cutoff(as_of), valid_at, valid_at))
        return [record(r) for r in rows]

    def changed_between(self, namespace: str, since: int, until: int,
                        notes: list[str] | None = None,
                        ) -> list[tuple[str, int | None, int | None]]:
        """(memory ID, winning revision at ``since``, at ``until``) of every memory whose
        winner (each side at valid time = its cutoff) may differ: one with a revision known
        in (since, until], or whose validity starts or ends in it (of these ``notes``
        only, when given). Winners may be hidden; None when nothing is eligible."""
        params = {"ns": namespace, "since": since, "until": until}
        only = ""
        if notes is not None:
            only = f" AND note IN ({', '.join(f':n{i}' for i in range(len(notes)))})"
            params.update({f"n{i}": n for i, n in enumerate(notes)})
        return self.execute(
            f"""WITH t AS (
                  SELECT memory_id FROM revisions
                  WHERE known_at > :since AND known_at <= :until AND namespace = :ns{only}
                  UNION
                  SELECT memory_id FROM revisions WHERE namespace = :ns
                    AND valid_from > :since AND valid_from <= :until AND known_at <= :until{only}
                  UNION
                  SELECT memory_id FROM revisions WHERE namespace = :ns
                    AND valid_to > :since AND valid_to <= :until AND known_at <= :until{only})
                SELECT memory_id, {visibility.winner_id("t.memory_id", ":since", ":since")},
                       {visibility.winner_id("t.memory_id", ":until", ":until")} FROM t""",
            params)

    def note_states(self, namespace: str, note: str) -> dict[str, bool]:
        """Every memory ID of a note (its sections and its record): True when its newest
        revision is live, False when it is a tombstone."""
        if not self.at_least(4):
            return {}
        # A memory ID whose newest revision is another note's is not this note's (a file
        # an earlier version imported as a.md#X.md shares the ID of a section of a.md).
        return {m: not hidden for m, hidden, owner in self.conn.execute(
            f"""SELECT memory_id, hidden, note FROM (
                 SELECT memory_id, note, {visibility.hidden(self.purged)} AS hidden,
                   ROW_NUMBER() OVER (PARTITION BY memory_id
                                      ORDER BY {visibility.NEWEST_FIRST}) AS rn
                 FROM revisions WHERE namespace = ? AND memory_id IN (
                   SELECT memory_id FROM revisions WHERE namespace = ? AND note = ?))
               WHERE rn = 1""", (namespace, namespace, note)) if owner == note}

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
        """memory ID -> whether its newest revision is live (not hidden), for the memories
        of one namespace (the first parameter) selected by ``where``."""
        return {m: not hidden for m, hidden in self.conn.execute(
            f"""SELECT memory_id, hidden FROM (
                 SELECT memory_id, {visibility.hidden(self.purged)} AS hidden,
                   ROW_NUMBER() OVER (PARTITION BY memory_id
                                      ORDER BY {visibility.NEWEST_FIRST}) AS rn
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
