"""A section whose heading was renamed is one memory under two IDs: the old ID is
tombstoned and the new one written at the same moment, with mostly the same words below
the heading. A section's history follows it across such renames, by the rule the changes
use to call them one revision (:func:`changes.renamed_pairs`). Read only."""

from __future__ import annotations

from dataclasses import replace

from ..notes.model import is_record
from ..records import RevisionRecord
from ..store import Database
from ..times import parse_time
from .changes import renamed_pairs

MAX_RENAMES = 100  # followed back at most this many renames (a Python call stack's worth)


def renames_at(db: Database, namespace: str, note: str, at: str) -> dict[str, str]:
    """New ID -> old ID of the note's sections renamed at the moment ``at``: against its
    own sections removed then, and, when a move brought it there at that moment, those of
    the path it left (a note moved and a heading renamed before one sync)."""
    removed, added = _changed_at(db, namespace, note, at)
    when = parse_time(at)
    came = db.move_into(namespace, note, when - 1, when + 1)
    if came is not None and came.known_at == when:
        removed += _changed_at(db, namespace, came.old_note, at)[0]
    return renamed_pairs(removed, added) if removed and added else {}


def _changed_at(db: Database, namespace: str, note: str, at: str) -> tuple[list, list]:
    """The note's sections removed at ``at`` (ID, their last text, ``at``) and those
    written then that were not there just before (ID, their text, ``at``)."""
    removed, added = [], []
    live: dict[str, bool] = {}  # ID -> whether its last revision so far is text
    last_text: dict[str, RevisionRecord] = {}
    for r in db.note_revisions(namespace, note):
        if is_record(r.memory_id, r.note):
            continue
        if r.known_at == at:
            if r.deleted and live.get(r.memory_id) and r.memory_id in last_text:
                removed.append((r.memory_id, last_text[r.memory_id], at))
            elif not r.deleted and not live.get(r.memory_id) and r.purged is None:
                added.append((r.memory_id, r, at))  # new, or back (a heading renamed back)
        live[r.memory_id] = not r.deleted
        if not r.deleted and r.purged is None:
            last_text[r.memory_id] = r
    return removed, added


def renamed_from(db: Database, namespace: str, r: RevisionRecord) -> str | None:
    """The ID a section had before the rename that wrote ``r``, or None."""
    if r.deleted or r.note is None or is_record(r.memory_id, r.note):
        return None
    return renames_at(db, namespace, r.note, r.known_at).get(r.memory_id)


def followed(db: Database, namespace: str, revisions: list[RevisionRecord],
             cutoff: int | None, earlier_history,
             chain: frozenset = frozenset()) -> list[RevisionRecord]:
    """``revisions`` (one memory's, oldest first) with each tombstone a rename wrote
    naming the ID the section took (``moved_to``), and, before each revision that a
    rename wrote (the first, or one after a tombstone: a heading renamed back), the
    history of the ID it had until then (``earlier_history(ID, cutoff, chain)`` gives it,
    notes' moves followed too), each revision once. ``chain``: the renames being followed
    (ID, moment), none twice: writes at one stamp (a clock repair's) cannot loop."""
    out: list[RevisionRecord] = []
    seen: set[int] = set()
    for i, r in enumerate(revisions):
        starts = i == 0 or revisions[i - 1].deleted
        if starts and len(chain) < MAX_RENAMES:
            old = renamed_from(db, namespace, r)
            if old is not None and (old, r.known_at) not in chain:
                at = parse_time(r.known_at)
                bound = at if cutoff is None else min(cutoff, at)
                for e in earlier_history(old, bound, chain | {(old, r.known_at),
                                                              (r.memory_id, r.known_at)}):
                    if parse_time(e.known_at) <= at and e.revision_id not in seen:
                        seen.add(e.revision_id)
                        out.append(e)
        if r.revision_id not in seen:
            seen.add(r.revision_id)
            out.append(_marked(db, namespace, r))
    # in time; at one moment as put (a rename's tombstone before what it wrote): stable
    out.sort(key=lambda r: parse_time(r.known_at))
    return out


def marked(db: Database, namespace: str, revisions: list[RevisionRecord],
           ) -> list[RevisionRecord]:
    """``revisions`` with each tombstone a heading's rename wrote naming the section's new
    ID (``moved_to``), as a note's timeline draws it: a rename, not a deletion."""
    seen: dict[tuple[str, str], dict[str, str]] = {}
    return [_marked(db, namespace, r, seen) for r in revisions]


def _marked(db: Database, namespace: str, r: RevisionRecord,
            seen: dict | None = None) -> RevisionRecord:
    if not r.deleted or r.moved_to or r.note is None or is_record(r.memory_id, r.note):
        return r
    key = (r.note, r.known_at)
    taken = seen.get(key) if seen is not None else None
    if taken is None:
        taken = {old: new for new, old in renames_at(db, namespace, r.note,
                                                     r.known_at).items()}
        if seen is not None:
            seen[key] = taken
    return replace(r, moved_to=taken[r.memory_id]) if r.memory_id in taken else r
