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
from ..records import ClockRepair, ClockStatus, RevisionRecord
from ..store import Database
from ..times import format_time, now_micros
from . import writes

LISTED_NOTES = 20


def clock_status(db: Database) -> ClockStatus:
    """This machine's time against the newest stamp, and what a repair would append."""
    now = now_micros()
    newest = db.max_known_at()
    mismatches = _to_repair(db)
    notes = sorted({last.note or last.memory_id for _, last in mismatches})
    return ClockStatus(now=format_time(now), newest_known_at=format_time(newest),
                       behind_seconds=max(0.0, ((newest or now) - now) / 1e6),
                       memories_to_repair=len(mismatches),
                       notes_to_repair=notes[:LISTED_NOTES],
                       last_repair=format_time(db.last_clock_repair()))


def _to_repair(db: Database) -> list[tuple[RevisionRecord, RevisionRecord]]:
    """(newest-stamped, last-written) revision of each note memory where the two differ
    in what they show (a memory hidden by both is hidden either way)."""
    pairs = db.stamp_mismatches()
    found = db.revisions_by_id([i for _, _, top, last in pairs for i in (top, last)])
    both = [(found[top], found[last]) for _, _, top, last in pairs]
    return [(top, last) for top, last in both if not (top.hidden and last.hidden)]


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
        mismatches = _to_repair(db)
        if not mismatches:
            return ClockRepair(None, format_time(now), _who(), None, format_time(newest),
                               max(0.0, ((newest or now) - now) / 1e6), [], [])
        stamp = writes.next_known_at(db)
        before = db.max_revision_id()
        appended, notes = [], set()
        for winner, last in mismatches:
            namespace, memory_id = last.namespace, last.memory_id
            notes.add(last.note or memory_id)
            if last.hidden:
                rec = db.insert_revision(
                    namespace=namespace, memory_id=memory_id, known_at=stamp,
                    valid_from=stamp, valid_to=None, deleted=True,
                    hides_revision=winner.revision_id,
                    title=None, content="", source=None, provenance=None,
                    content_hash=writes.content_hash(""), note=winner.note)
            else:
                index_title, index_content = db.indexed_as(last.revision_id)
                rec = db.insert_revision(
                    namespace=namespace, memory_id=memory_id, known_at=stamp,
                    valid_from=stamp, valid_to=None, deleted=False, hides_revision=None,
                    title=last.title, content=last.content, source=last.source,
                    provenance=last.provenance, content_hash=last.content_hash,
                    note=last.note, heading_path=last.heading_path, metadata=last.metadata,
                    index_title=index_title, index_content=index_content)
            appended.append(rec.revision_id)
        carry_vectors(db, before)
        who = _who()
        audit = db.add_clock_repair(repaired_at=now, repaired_by=who, stamp=stamp,
                                    newest_before=newest, revision_ids=appended)
    return ClockRepair(audit, format_time(now), who, format_time(stamp), format_time(newest),
                       max(0.0, ((newest or now) - now) / 1e6), appended, sorted(notes))
