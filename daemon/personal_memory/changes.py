"""What changed between two cutoffs: the memories whose visible revision differs (each
side resolved exactly as a search at that cutoff resolves it), grouped by note; or, for a
query, the two exact searches compared result by result."""

from __future__ import annotations

from dataclasses import replace

from .diffs import word_diff
from .notes import is_record, record_id
from .records import (NoteChange, ResultChange, RevisionRecord, SearchResult,
                      SectionChange)
from .store import Database

# A text change counts as half of moving from absent to the better of its two ranks.
TEXT_CHANGE_WEIGHT = 0.5


def _same_text(a: RevisionRecord, b: RevisionRecord) -> bool:
    return (a.content == b.content and a.title == b.title
            and a.heading_path == b.heading_path)


def knowledge_changes(db: Database, namespace: str, since: int, until: int, limit: int,
                      ) -> tuple[list[NoteChange], dict[str, int]]:
    """The notes (and lone memories) whose visible text differs between ``since`` and
    ``until``, newest change first, at most ``limit`` of them, and the counts of all."""
    with db.snapshot():
        rows = db.changed_between(namespace, since, until)
        ids = [i for _, b, a in rows for i in (b, a) if i is not None]
        recs = db.revisions_by_id(ids)
        purged = db.purged_among(ids)

    def shown(rid: int | None) -> RevisionRecord | None:
        r = recs.get(rid) if rid is not None else None
        return None if r is None or r.deleted or rid in purged else r

    groups: dict[str, list[SectionChange]] = {}
    # note -> its record at since, at until, and when the until side was written
    records: dict[str, tuple[RevisionRecord | None, RevisionRecord | None, str | None]] = {}
    in_notes: set[str] = set()
    for memory_id, b, a in rows:
        before, after = shown(b), shown(a)
        any_rev = recs.get(a) if a is not None else recs.get(b)
        note = any_rev.note if any_rev is not None else None
        if is_record(memory_id, note):
            if (before is None) != (after is None) or (
                    before is not None and (before.content != after.content
                                            or before.title != after.title
                                            or before.metadata != after.metadata)):
                records[note] = (before, after, recs[a].known_at if a is not None else None)
            continue
        if before is None and after is None:
            continue
        if before is not None and after is not None and _same_text(before, after):
            continue
        if before is None:
            kind, when = "added", after.known_at
        elif after is None:
            kind = "retracted"
            when = recs[a].known_at if a is not None else None  # None: validity ended
        else:
            kind, when = "revised", after.known_at
        shape = after or before
        if note is not None:
            in_notes.add(note)
        groups.setdefault(note or memory_id, []).append(SectionChange(
            memory_id=memory_id, change=kind, heading_path=shape.heading_path, known_at=when,
            before=before, after=after))
    for note in records:
        groups.setdefault(note, [])
    out: list[NoteChange] = []
    for key, sections in groups.items():
        before_rec, after_rec, record_time = records.get(key, (None, None, None))
        is_note = key in records or key in in_notes
        if key in records and before_rec is None:
            change = "added"
        elif key in records and after_rec is None:
            change = "deleted"
        elif not is_note and sections[0].change in ("added", "retracted"):
            change = "added" if sections[0].change == "added" else "deleted"
        else:
            change = "revised"
        times = [s.known_at for s in sections if s.known_at]
        if record_time:
            times.append(record_time)
        titles = [r.title for r in (after_rec, before_rec) if r is not None and r.title]
        titles += [r.title for s in sections for r in (s.after, s.before)
                   if r is not None and r.title]
        out.append(NoteChange(note=key if is_note else None,
                              title=titles[0] if titles else None, change=change,
                              latest=max(times) if times else None, sections=sections))
    out.sort(key=lambda n: (n.latest or "", n.note or n.sections[0].memory_id), reverse=True)
    counts = {"notes": len(out),
              "notes_added": sum(n.change == "added" for n in out),
              "notes_deleted": sum(n.change == "deleted" for n in out),
              "added": 0, "revised": 0, "retracted": 0}
    for n in out:
        for s in n.sections:
            counts[s.change] += 1
    shown_notes = out[:limit]
    for n in shown_notes:  # document order and diffs, only for what is returned
        if n.note is not None:
            record = db.visible_revision(namespace, record_id(n.note), until, until)
            if record is None or record.deleted:
                record = db.visible_revision(namespace, record_id(n.note), since, since)
            order = _order(record)
            n.sections.sort(key=lambda s: (s.change == "retracted",
                                           order.get(s.memory_id, len(order)), s.memory_id))
        n.sections[:] = [s if s.change != "revised" else replace(
            s, diff=word_diff(s.before.content, s.after.content)) for s in n.sections]
    return shown_notes, counts


def _order(record: RevisionRecord | None) -> dict[str, int]:
    ok = record is not None and not record.deleted
    ids = (record.metadata or {}).get("sections", []) if ok else []
    return {m: i for i, m in enumerate(ids)}


def result_changes(before: list[SearchResult], after: list[SearchResult],
                   visible_at_until) -> tuple[list[ResultChange], list[str]]:
    """Compare two ranked lists of one query. ``visible_at_until(memory_id)`` tells a
    result that fell out of the list from one that was retracted."""
    rank_b = {r.memory_id: (i, r) for i, r in enumerate(before, 1)}
    rank_a = {r.memory_id: (i, r) for i, r in enumerate(after, 1)}
    changed: list[ResultChange] = []
    unchanged: list[str] = []
    for memory_id in list(dict.fromkeys([*rank_a, *rank_b])):
        rb, b = rank_b.get(memory_id, (None, None))
        ra, a = rank_a.get(memory_id, (None, None))
        text_changed = a is not None and b is not None and not _same_text(a.revision,
                                                                          b.revision)
        if ra == rb and not text_changed:
            unchanged.append(memory_id)
            continue
        if rb is None:
            change = "new"
        elif ra is None:
            change = "gone"
        elif ra < rb:
            change = "up"
        elif ra > rb:
            change = "down"
        else:
            change = "changed"
        impact = abs((1.0 / rb if rb else 0.0) - (1.0 / ra if ra else 0.0))
        if text_changed:
            impact += TEXT_CHANGE_WEIGHT / min(ra, rb)
        shape = (a or b).revision
        changed.append(ResultChange(
            memory_id=memory_id, note=shape.note, title=shape.title,
            heading_path=shape.heading_path, change=change, rank_before=rb, rank_after=ra,
            score_before=b.score if b else None, score_after=a.score if a else None,
            text_changed=text_changed,
            retracted=ra is None and not visible_at_until(memory_id), impact=impact,
            diff=word_diff(b.content, a.content) if text_changed else "",
            before=b.revision if b else None, after=a.revision if a else None))
    changed.sort(key=lambda c: (-c.impact, c.rank_after or 10**9, c.memory_id))
    return changed, unchanged
