"""Following a note across its moves: which path it had at a cutoff, and a memory's
revisions under every ID it had. A move is one instant (``known_at`` of the move): before
it the note lived at its old path, from it at the new one."""

from __future__ import annotations

from dataclasses import replace

from ..limits import FOREVER_US
from ..notes.model import record_id
from ..records import Move, RevisionRecord
from ..store import Database
from ..times import format_time, parse_time
from . import renames


def path_at(db: Database, namespace: str, note: str, cutoff: int | None) -> str:
    """The ID the note ``note`` (its path now) had at ``cutoff``: walk back along the moves
    into it that happened after the cutoff, latest first."""
    if cutoff is None:
        return note
    at = cutoff
    current, before = note, FOREVER_US
    for _ in range(10_000):  # a chain of moves; bounded against a cycle of renames
        step = db.move_into(namespace, current, at, before)
        if step is None:
            return current
        current, before = step.old_note, step.known_at
    return current


def chain(db: Database, namespace: str, note: str, known_by: int | None = None,
          ) -> list[Move]:
    """Every move that brought the note to ``note`` (known by ``known_by``, when given),
    oldest first."""
    out = []
    current, before = note, FOREVER_US if known_by is None else known_by + 1
    for _ in range(10_000):
        step = db.move_into(namespace, current, -1, before)
        if step is None:
            break
        out.append(Move(namespace, step.old_note, current, format_time(step.known_at)))
        current, before = step.old_note, step.known_at
    return out[::-1]


def departures(db: Database, namespace: str, note: str) -> list[Move]:
    """Every move that took a note away from the path ``note``, oldest first."""
    return [m for m in db.moves_of(namespace, [note]) if m.old_note == note]


def departure_at(db: Database, namespace: str, note: str, known_at: str) -> Move | None:
    """The move that took a note away from the path ``note`` at ``known_at`` (the time of
    the tombstones it wrote there), or None: a deletion."""
    return next((m for m in departures(db, namespace, note) if m.known_at == known_at), None)


def moved_paths(db: Database, namespace: str, since: int, until: int) -> dict[str, str]:
    """For each note moved in (since, until]: its path at ``since`` -> its path at
    ``until`` (a chain of moves followed; a note moved back maps to its own path)."""
    moved: dict[str, str] = {}
    for m in db.moves_between(namespace, since, until):
        for old, new in list(moved.items()):
            if new == m.old_note:
                moved[old] = m.new_note
        moved.setdefault(m.old_note, m.new_note)
    return moved


def paths_of(db: Database, namespace: str, note: str) -> list[str]:
    """Every path the note had: ``note`` and those it was moved from."""
    return [note] + [m.old_note for m in reversed(chain(db, namespace, note))]


def former_ids(db: Database, namespace: str, memory_id: str, note: str,
               ) -> list[tuple[str, int]]:
    """(ID, the time it stopped being the memory's ID) for each earlier ID of a note's
    memory, newest first: the same heading path under each former path of the note."""
    suffix = memory_id[len(note):]
    out = []
    current, before = note, FOREVER_US
    for _ in range(10_000):
        step = db.move_into(namespace, current, -1, before)
        if step is None:
            break
        current, before = step.old_note, step.known_at
        out.append((current + suffix, step.known_at))
    return out


def history(db: Database, namespace: str, memory_id: str, cutoff: int | None,
            chain: frozenset = frozenset()) -> list[RevisionRecord]:
    """Every revision of a memory known by ``cutoff``, oldest first, following its note
    back across moves (the revisions of each former ID known before the move away from
    it, its tombstone by the move included) and its section back across heading renames
    (:mod:`renames`)."""
    revisions = _moves_marked(db, namespace, _history(db, namespace, memory_id, cutoff))
    earlier = lambda old, bound, c: history(db, namespace, old, bound, c)  # noqa: E731
    if not revisions and cutoff is not None:
        # an ID a heading's rename made after the cutoff: the section's past under the ID
        # it had then, as a note's later move is followed back
        later = db.history(namespace, memory_id, None)
        before = renames.renamed_from(db, namespace, later[0]) if later else None
        if before is not None and (before, later[0].known_at) not in chain:
            return earlier(before, cutoff, chain | {(before, later[0].known_at)})
    return renames.followed(db, namespace, revisions, cutoff, earlier, chain)


def _moves_marked(db: Database, namespace: str, revisions: list[RevisionRecord],
                  ) -> list[RevisionRecord]:
    """Each tombstone that its note's move wrote, with the ID the memory had after it."""
    out = []
    for r in revisions:
        if r.deleted and r.note and r.memory_id.startswith(r.note):
            move = departure_at(db, namespace, r.note, r.known_at)
            if move is not None:
                new_note = move.new_note
                new_id = new_note + r.memory_id[len(r.note):]
                arrived = db.history(namespace, new_id, parse_time(r.known_at))
                kept = (bool(arrived) and arrived[-1].known_at == r.known_at
                        and not arrived[-1].deleted)
                if not kept:  # its heading renamed on the way: the section it became
                    taken = {old: new for new, old in renames.renames_at(
                        db, namespace, new_note, r.known_at).items()}
                    new_id = taken.get(r.memory_id)
                r = replace(r, moved_to=new_id or new_note)
        out.append(r)
    return out


def _history(db: Database, namespace: str, memory_id: str, cutoff: int | None,
             ) -> list[RevisionRecord]:
    revisions = db.history(namespace, memory_id, cutoff)
    # the note's path, from its ID's revisions; from later ones (their path alone) when
    # the ID is one it got by a move after the cutoff
    named = revisions or (db.history(namespace, memory_id, None) if cutoff is not None
                          else [])
    note = next((r.note for r in reversed(named) if r.note), None)
    if note is None or not (memory_id == note or memory_id.startswith(record_id(note))):
        return revisions
    # Each ID the memory had, in its own span of time: a note renamed A to B and back to A
    # holds ID A twice, and A's revisions are listed once, each in the span it was written
    # in. At the instant of a move, the old ID's tombstone comes first (its era is older).
    formers = former_ids(db, namespace, memory_id, note)
    since = [left_at for _, left_at in formers[1:]] + [None]  # when each became the ID
    current = formers[0][1] if formers else None
    spans: list[tuple[int, RevisionRecord]] = [
        (0, r) for r in revisions if current is None or parse_time(r.known_at) >= current]
    for n, ((old_id, left_at), start) in enumerate(zip(formers, since), 1):
        bound = left_at if cutoff is None else min(cutoff, left_at)
        spans.extend((-n, r) for r in db.history(namespace, old_id, bound)
                     if start is None or parse_time(r.known_at) >= start)
    return [r for _, r in sorted(spans, key=lambda e: (parse_time(e[1].known_at), e[0],
                                                       e[1].revision_id))]
