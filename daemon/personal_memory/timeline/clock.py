"""The clock's state and its repair.

Transaction time only moves forward (``writes.next_known_at``), so a database written by
this version never holds a revision stamped before an earlier-written one. An earlier
version did: its clock ignored revisions stamped far ahead (a machine's clock a day fast,
then corrected), so the writes after the correction were stamped before them, and once
their time came the older revisions won again (a renamed-away section, a deleted note, an
old text back). :func:`repair_clock` appends, after every stored revision, what each
affected note memory's last write said; nothing is rewritten, and the repair is audited.
"""

from __future__ import annotations

import getpass
import os

from ..embedding.runner import carry_vectors
from ..notes.model import is_record, record_id
from ..records import ClockRepair, ClockStatus, RevisionRecord
from ..store import Database
from ..times import format_time, now_micros
from . import writes

LISTED_NOTES = 20


def clock_status(db: Database) -> ClockStatus:
    """This machine's time against the newest stamp, and what a repair would append."""
    now = now_micros()
    newest = db.max_known_at()
    plan = _to_repair(db)
    notes = sorted({winner.note for winner, _ in plan})
    return ClockStatus(now=format_time(now), newest_known_at=format_time(newest),
                       behind_seconds=max(0.0, ((newest or now) - now) / 1e6),
                       memories_to_repair=len(plan),
                       notes_to_repair=notes[:LISTED_NOTES],
                       last_repair=format_time(db.last_clock_repair()))


def _to_repair(db: Database) -> list[tuple[RevisionRecord, RevisionRecord | None]]:
    """(winner, what it should be: a revision to copy, or None for a tombstone) of every
    memory of each note where some memory's last write is not its newest stamp. A note is
    what its record's last write says: deleted, or the sections it lists, each at its last
    write; any other memory of the note live at the newest stamp is hidden."""
    plan = []
    for namespace, note in sorted({(ns, note) for ns, note, *_ in db.stamp_mismatches()}):
        revisions = db.note_revisions(namespace, note)  # oldest stamp first
        last = {r.memory_id: r for r in sorted(revisions, key=lambda r: r.revision_id)}
        top = {r.memory_id: r for r in revisions}
        record = last.get(record_id(note))
        if record is None:  # no record to say what the note is: left as it is
            continue
        listed = set() if record.hidden else set(
            (record.metadata or {}).get("sections", [])) | {record.memory_id}
        for memory_id, winner in sorted(top.items()):
            want = last[memory_id] if memory_id in listed and not last[memory_id].hidden \
                else None
            if want is None and not winner.hidden:
                plan.append((winner, None))
            elif want is not None and want.revision_id != winner.revision_id:
                plan.append((winner, want))
    return plan


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return f"uid {os.getuid()}"


def repair_clock(db: Database) -> ClockRepair:
    """In one write transaction: for every note memory whose last write lost to an older
    revision stamped later, append at one new stamp (after every stored revision) a copy
    of that last write (its text, title, metadata and indexed text), or a tombstone when
    it hid the memory (a deletion or a purge). Audited in ``clock_repairs``."""
    now = now_micros()
    with db.transaction():
        newest = db.max_known_at()
        plan = _to_repair(db)
        if not plan:
            return ClockRepair(None, format_time(now), _who(), None, format_time(newest),
                               max(0.0, ((newest or now) - now) / 1e6), [], [])
        stamp = writes.next_known_at(db)
        before = db.max_revision_id()
        appended, notes = [], set()
        # A note's record goes first when it is hidden and last when it is copied, as a
        # sync writes them (one stamp: no cutoff sees the difference).
        for winner, want in sorted(plan, key=lambda p: (p[1] is not None) == is_record(
                p[0].memory_id, p[0].note)):
            notes.add(winner.note)
            if want is None:
                rec = db.insert_revision(
                    namespace=winner.namespace, memory_id=winner.memory_id, known_at=stamp,
                    valid_from=stamp, valid_to=None, deleted=True,
                    hides_revision=winner.revision_id, title=None, content="", source=None,
                    provenance=None, content_hash=writes.content_hash(""), note=winner.note)
            else:
                index_title, index_content = db.indexed_as(want.revision_id)
                rec = db.insert_revision(
                    namespace=want.namespace, memory_id=want.memory_id, known_at=stamp,
                    valid_from=stamp, valid_to=None, deleted=False, hides_revision=None,
                    title=want.title, content=want.content, source=want.source,
                    provenance=want.provenance, content_hash=want.content_hash,
                    note=want.note, heading_path=want.heading_path, metadata=want.metadata,
                    index_title=index_title, index_content=index_content)
            appended.append(rec.revision_id)
        carry_vectors(db, before)
        who = _who()
        audit = db.add_clock_repair(repaired_at=now, repaired_by=who, stamp=stamp,
                                    newest_before=newest, revision_ids=appended)
    return ClockRepair(audit, format_time(now), who, format_time(stamp), format_time(newest),
                       max(0.0, ((newest or now) - now) / 1e6), appended, sorted(notes))
