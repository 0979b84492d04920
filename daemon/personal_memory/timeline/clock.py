"""The clock's state and its repair.

Transaction time only moves forward (``writes.next_known_at``), so a database written by
this version never holds a revision stamped before an earlier-written one. An earlier
version did: its clock ignored revisions stamped far ahead (a machine's clock a day fast,
then corrected), so the writes after the correction were stamped before them, and the
readers disagreed at the cutoffs in between (a renamed-away section searchable that read
does not have, a deleted note's section found).

:func:`repair_clock` makes every cutoff show what the log held once: each revision counts
from its *effective* stamp, the newest stamp written up to it (what this clock would have
given it; never earlier than its own, so nothing is shown before it was stamped), and
what each note is at a cutoff is what its record's last write so far says. Where the
stored stamps show something else, it appends, at that stamp, a copy of what should win
there (or a tombstone); a copy wins its stamp's ties, by id. Nothing is rewritten; the
appended revisions are audited in ``clock_repairs``.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass

from ..embedding.runner import carry_vectors
from ..notes.model import is_record, record_id
from ..records import ClockRepair, ClockStatus, RevisionRecord
from ..store import Database
from ..times import format_time, now_micros, parse_time
from . import writes

LISTED_NOTES = 20


@dataclass(frozen=True)
class _Fix:
    """One revision the repair appends: at ``at``, where ``shown`` wins (an original
    revision, an earlier fix, or nothing), ``want`` should (a revision to copy; None:
    the memory is hidden)."""
    at: int
    namespace: str
    memory_id: str
    note: str
    shown: "RevisionRecord | _Fix | None"
    want: RevisionRecord | None


def clock_status(db: Database) -> ClockStatus:
    """This machine's time against the newest stamp, and what a repair would append."""
    now = now_micros()
    newest = db.max_known_at()
    plan = _to_repair(db)
    notes = sorted({fix.note for fix in plan})
    return ClockStatus(now=format_time(now), newest_known_at=format_time(newest),
                       behind_seconds=max(0.0, ((newest or now) - now) / 1e6),
                       memories_to_repair=len({(f.note, f.memory_id) for f in plan}),
                       notes_to_repair=notes[:LISTED_NOTES],
                       last_repair=format_time(db.last_clock_repair()))


def _to_repair(db: Database) -> list[_Fix]:
    plan: list[_Fix] = []
    for (namespace, note), effective in sorted(db.effective_stamps().items()):
        plan += _note_fixes(namespace, note, db.note_revisions(namespace, note),
                            effective)
    return plan


def _shown(value: "RevisionRecord | _Fix | None") -> RevisionRecord | None:
    """What a winner shows: the revision it is or copies (None: hidden or nothing)."""
    revision = value.want if isinstance(value, _Fix) else value
    return None if revision is None or revision.hidden else revision


def _same(a: RevisionRecord | None, b: RevisionRecord | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.title, a.content, a.heading_path, a.metadata, a.source) == \
        (b.title, b.content, b.heading_path, b.metadata, b.source)


def _note_fixes(namespace: str, note: str, revisions: list[RevisionRecord],
                effective: dict[int, int]) -> list[_Fix]:
    """The fixes of one note, stamp by stamp: at each stamp where what wins differs from
    what the note's writes so far say (its record's last write: deleted, or the sections
    it lists, each at its last write)."""
    by_id = sorted(revisions, key=lambda r: r.revision_id)
    # Effective stamps never go down in write order: the writes so far are a prefix.
    written = [r for r in by_id if r.revision_id in effective]  # not a repair's copies
    stamps = sorted({parse_time(r.known_at) for r in by_id} | set(effective.values()))
    # Each memory's revisions with their times (known, valid from, valid to), parsed once.
    own: dict[str, list[tuple[int, int, int | None, RevisionRecord]]] = {}
    for r in by_id:
        own.setdefault(r.memory_id, []).append((
            parse_time(r.known_at), parse_time(r.valid_from),
            None if r.valid_to is None else parse_time(r.valid_to), r))
    rec = record_id(note)
    fixes: list[_Fix] = []
    latest: dict[str, _Fix] = {}  # each memory's last fix so far
    last: dict[str, RevisionRecord] = {}
    done = 0
    for t in stamps:
        while done < len(written) and effective[written[done].revision_id] <= t:
            last[written[done].memory_id] = written[done]
            done += 1
        record = last.get(rec)
        listed = None if record is None else set() if record.hidden else \
            set((record.metadata or {}).get("sections", [])) | {rec}
        for memory_id in sorted(own):
            want = last.get(memory_id)
            if listed is not None and memory_id not in listed:
                want = None
            # the visibility rule (store.visibility) at cutoff and valid time t
            eligible = [(known, r.revision_id, r) for known, start, end, r in own[memory_id]
                        if known <= t and start <= t and (end is None or t < end)]
            best = max(eligible, default=None)
            shown: RevisionRecord | _Fix | None = best[2] if best else None
            fix = latest.get(memory_id)
            if fix is not None and (best is None or fix.at >= best[0]):
                shown = fix  # appended later: a fix wins its stamp's ties
            if not _same(_shown(shown), _shown(want)):
                latest[memory_id] = _Fix(t, namespace, memory_id, note, shown, want)
                fixes.append(latest[memory_id])
    return fixes


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return f"uid {os.getuid()}"


def repair_clock(db: Database) -> ClockRepair:
    """In one write transaction: append every fix of :func:`_to_repair`, at its stamp, a
    copy of what should win there (its text, title, metadata and indexed text) or a
    tombstone. Audited in ``clock_repairs``; ``stamp`` is the newest stamp it wrote at."""
    now = now_micros()
    with db.transaction():
        newest = db.max_known_at()
        plan = _to_repair(db)
        if not plan:
            return ClockRepair(None, format_time(now), _who(), None, format_time(newest),
                               max(0.0, ((newest or now) - now) / 1e6), [], [])
        before = db.max_revision_id()
        appended: list[int] = []
        ids: dict[int, int] = {}  # id() of a fix -> the revision it appended
        # At one stamp a note's record goes first when it is hidden and last when it is
        # copied, as a sync writes them (no cutoff sees the difference).
        order = sorted(range(len(plan)), key=lambda i: (
            plan[i].at, plan[i].note,
            (plan[i].want is not None and not plan[i].want.hidden)
            == is_record(plan[i].memory_id, plan[i].note), i))
        for i in order:
            fix = plan[i]
            shown, want = fix.shown, _shown(fix.want)
            if want is None:
                hides = ids[id(shown)] if isinstance(shown, _Fix) else (
                    shown.revision_id if shown is not None else None)
                rec = db.insert_revision(
                    namespace=fix.namespace, memory_id=fix.memory_id, known_at=fix.at,
                    valid_from=fix.at, valid_to=None, deleted=True, hides_revision=hides,
                    title=None, content="", source=None, provenance=None,
                    content_hash=writes.content_hash(""), note=fix.note)
            else:
                index_title, index_content = db.indexed_as(want.revision_id)
                rec = db.insert_revision(
                    namespace=want.namespace, memory_id=want.memory_id, known_at=fix.at,
                    valid_from=fix.at, valid_to=None, deleted=False, hides_revision=None,
                    title=want.title, content=want.content, source=want.source,
                    provenance=want.provenance, content_hash=want.content_hash,
                    note=want.note, heading_path=want.heading_path, metadata=want.metadata,
                    index_title=index_title, index_content=index_content)
            ids[id(fix)] = rec.revision_id
            appended.append(rec.revision_id)
        carry_vectors(db, before)
        who = _who()
        stamp = max(fix.at for fix in plan)
        audit = db.add_clock_repair(repaired_at=now, repaired_by=who, stamp=stamp,
                                    newest_before=newest, revision_ids=appended)
    return ClockRepair(audit, format_time(now), who, format_time(stamp), format_time(newest),
                       max(0.0, ((newest or now) - now) / 1e6), appended,
                       sorted({fix.note for fix in plan}))
