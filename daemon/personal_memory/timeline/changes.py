"""What changed between two cutoffs: the memories whose visible revision differs (each
side resolved exactly as a search at that cutoff resolves it), grouped by note, with a
note that moved shown as one move; or, for a query, the two exact searches compared
result by result."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from functools import lru_cache

from ..notes.front_matter import property_values
from ..notes.model import is_record, record_id
from ..records import NoteChange, NoteCounts, ResultChange, RevisionRecord, SearchResult, SectionChange
from ..search.text import marks
from ..store import Database
from ..times import parse_time
from .diffs import word_diff

# A text change counts as half of moving from absent to the better of its two ranks.
TEXT_CHANGE_WEIGHT = 0.5
# A section removed and one added to the same note at the same moment are one section
# whose heading was renamed when this much of their text (below the heading) is the same.
RENAMED_SIMILARITY = 0.6
# Words compared, a section's first: matching words in order takes time that grows with
# the square of their number when one repeats (a part of one long line; parts are at most
# 1,800 characters otherwise).
RENAME_WORDS = 1000


def _same_text(a: RevisionRecord, b: RevisionRecord, of_note: bool = False) -> bool:
    """Whether two revisions say the same. A note's section carries its note's title, and
    a new title (a renamed file's) is the note's change, said once by its record: not a
    revision of each section (``of_note``)."""
    return (a.content == b.content and a.heading_path == b.heading_path
            and (of_note or a.title == b.title))


@dataclass
class _Group:
    """One note's (or lone memory's) changes while they are collected."""
    key: str
    is_note: bool = False
    sections: list[SectionChange] = field(default_factory=list)
    record_before: RevisionRecord | None = None
    record_after: RevisionRecord | None = None
    record_time: str | None = None
    record_changed: bool = False
    moved_from: str | None = None
    moved_at: str | None = None
    order: dict[str, int] = field(default_factory=dict)


def knowledge_changes(db: Database, namespace: str, since: int, until: int, limit: int,
                      offset: int = 0, notes: list[str] | None = None,
                      ) -> tuple[list[NoteChange], NoteCounts]:
    """The notes (and lone memories) whose visible text differs between ``since`` and
    ``until``, newest change first, at most ``limit`` of them after the first ``offset``,
    and the counts of all (of these ``notes`` only, when given: one note's diff, under
    each path it had)."""
    with db.snapshot():
        rows = db.changed_between(namespace, since, until, notes)
        recs = db.revisions_by_id([i for _, b, a in rows for i in (b, a) if i is not None])
        moves = [m for m in db.moves_between(namespace, since, until)
                 if notes is None or m.old_note in notes or m.new_note in notes]
        groups = _collect(rows, recs)
        for move in moves:
            _merge_move(groups, move.old_note, move.new_note, move.known_at)
        for g in groups.values():
            if g.is_note:
                g.sections = _one_per_section(_pair_renames(g.sections))
        ordered = sorted(groups.values(), key=lambda g: (_time_key(_latest(g)), g.key),
                         reverse=True)
        page = ordered[offset:offset + limit]
        for g in page:  # document order, read while the snapshot is open
            if g.is_note:
                record = db.visible(namespace, record_id(g.key), until, until)
                if record is None:
                    record = db.visible(namespace, record_id(g.moved_from or g.key), since,
                                        since)
                ids = (record.metadata or {}).get("sections", []) if record else []
                g.order = {m: i for i, m in enumerate(ids)}
    notes = [_note_change(g) for g in ordered]
    of_notes = [n for n in notes if n.note is not None]  # the rest: memories of the API
    sections = Counter(s.change for n in notes for s in n.sections)
    counts = NoteCounts(notes=len(of_notes), memories=len(notes) - len(of_notes),
                        notes_added=sum(n.change == "added" for n in of_notes),
                        notes_deleted=sum(n.change == "deleted" for n in of_notes),
                        notes_moved=sum(n.change == "moved" for n in of_notes),
                        added=sections["added"], revised=sections["revised"],
                        retracted=sections["retracted"])
    return [_shown(n, g) for n, g in zip(notes[offset:offset + limit], page)], counts


def _collect(rows, recs: dict[int, RevisionRecord]) -> dict[str, _Group]:
    groups: dict[str, _Group] = {}

    def shown(rid: int | None) -> RevisionRecord | None:
        r = recs.get(rid) if rid is not None else None
        return None if r is None or r.hidden else r

    for memory_id, b, a in rows:
        before, after = shown(b), shown(a)
        any_rev = recs.get(a) if a is not None else recs.get(b)
        note = any_rev.note if any_rev is not None else None
        if is_record(memory_id, note):
            g = groups.setdefault(note, _Group(note, is_note=True))
            g.record_before, g.record_after = before, after
            g.record_time = recs[a].known_at if a is not None else None
            g.record_changed = (before is None) != (after is None) or (
                before is not None and (before.content != after.content
                                        or before.title != after.title
                                        or before.metadata != after.metadata))
            continue
        if before is None and after is None:
            continue
        if before is not None and after is not None and _same_text(before, after,
                                                                   note is not None):
            continue
        why = None
        if before is None:
            kind, when = "added", after.known_at
        elif after is None:
            kind = "retracted"
            when = recs[a].known_at if a is not None else None  # None: validity ended
            winner = recs.get(a) if a is not None else None
            why = ("validity ended" if winner is None else "purged" if winner.purged
                   else "tombstone")
        else:
            kind, when = "revised", after.known_at
        shape = after or before
        g = groups.setdefault(note or memory_id, _Group(note or memory_id))
        g.is_note = g.is_note or note is not None
        g.sections.append(SectionChange(memory_id=memory_id, change=kind,
                                        heading_path=shape.heading_path, known_at=when,
                                        before=before, after=after, why=why))
    # A note whose record alone is unchanged and that has no section change is no change.
    return {k: g for k, g in groups.items() if g.sections or g.record_changed}


def _merge_move(groups: dict[str, _Group], old: str, new: str, at: str) -> None:
    """The old note's retractions and the new note's additions become one move: a section
    found at both paths with the same text is no change, with another text a revision."""
    gone, came = groups.get(old), groups.get(new)
    if gone is None or not _was_there(gone):
        # Nothing was at the old path when the span began: a note added (and moved)
        # inside the span is new at its final path, not moved from one nobody saw.
        return
    if came is None:
        came = groups[new] = _Group(new, is_note=True)
    groups.pop(old, None)
    came.moved_from = (gone.moved_from if gone and gone.moved_from else old)
    came.moved_at = at
    if gone is not None:
        came.record_before = gone.record_before
    retracted = {s.memory_id[len(old):]: s for s in (gone.sections if gone else [])
                 if s.change == "retracted"}
    sections = []
    for s in came.sections:
        was = retracted.pop(s.memory_id[len(new):], None) if s.change == "added" else None
        if was is None:
            sections.append(s)
        elif not _same_text(was.before, s.after, of_note=True):
            sections.append(SectionChange(memory_id=s.memory_id, change="revised",
                                          heading_path=s.heading_path, known_at=s.known_at,
                                          before=was.before, after=s.after,
                                          moved_from=was.memory_id))
    others = [s for s in (gone.sections if gone else []) if s.change != "retracted"]
    came.sections = sections + others + list(retracted.values())


def _was_there(g: _Group) -> bool:
    """Whether the group's note (or its sections) was visible when the span began."""
    return g.record_before is not None or any(s.before is not None for s in g.sections)


def _one_per_section(sections: list[SectionChange]) -> list[SectionChange]:
    """The parts of one long section added (or retracted) together as one change of it,
    counting its ``parts``, the first part standing for them (a 5,000-line note's section
    cut in 18 listed 18 times). A revised part keeps its own change (its own word diff)."""
    at: dict[tuple, int] = {}
    out: list[SectionChange] = []
    for s in sections:
        shape = s.after or s.before
        key = None if s.change == "revised" or shape is None else (s.change, s.why,
                                                                     shape.section)
        if key is None or key not in at:
            if key is not None:
                at[key] = len(out)
            out.append(s)
            continue
        kept = out[at[key]]
        base = s if s.memory_id == shape.section else kept  # the first part stands
        out[at[key]] = replace(base, parts=kept.parts + 1)
    return out


def _pair_renames(sections: list[SectionChange]) -> list[SectionChange]:
    """A section removed from a note and one added to it at the same moment with mostly
    the same text are one section whose heading was renamed: a revision, with its diff."""
    added = [s for s in sections if s.change == "added"]
    removed = [s for s in sections if s.change == "retracted" and s.why == "tombstone"]
    if not added or not removed:
        return sections
    olds = {s.memory_id: s for s in removed}
    matched = renamed_pairs([(s.memory_id, s.before, s.known_at) for s in removed],
                            [(s.memory_id, s.after, s.known_at) for s in added])
    paired: dict[str, SectionChange] = {}
    for new in added:
        best = olds.get(matched.get(new.memory_id, ""))
        if best is not None:
            paired[new.memory_id] = SectionChange(
                memory_id=new.memory_id, change="revised", heading_path=new.heading_path,
                known_at=new.known_at, before=best.before, after=new.after,
                moved_from=best.memory_id, why="heading renamed")
    used = set(matched.values())
    return [paired.get(s.memory_id, s) for s in sections if s.memory_id not in used]


def renamed_pairs(removed: list[tuple[str, RevisionRecord, str]],
                  added: list[tuple[str, RevisionRecord, str]]) -> dict[str, str]:
    """New ID -> old ID for each section added that is one removed at the same moment with
    its heading renamed (mostly the same words below the heading): ``removed`` holds
    (ID, its last text, when it was removed), ``added`` (ID, its first text, when). The
    one rule of :func:`_pair_renames` and of a section's history across renames."""
    paired: dict[str, str] = {}
    used: set[str] = set()
    for new_id, after, added_at in added:
        best, score = None, RENAMED_SIMILARITY
        for old_id, before, removed_at in removed:
            if old_id in used or old_id == new_id or removed_at != added_at:
                continue
            a, b = _body(before), _body(after)
            if not a or not b:
                continue  # no words to compare: nothing says they are one section
            matcher = SequenceMatcher(None, a, b, autojunk=False)
            # the quick bounds first: each is at least the ratio
            if matcher.real_quick_ratio() >= score and matcher.quick_ratio() >= score \
                    and (ratio := matcher.ratio()) >= score:
                best, score = old_id, ratio
        if best is not None:
            used.add(best)
            paired[new_id] = best
    return paired


@lru_cache(maxsize=1)
def _word() -> re.Pattern:
    """A word: letters with their combining marks and digits (an apostrophe inside). List
    markers, checkboxes, table pipes, emphasis and link brackets are markup, not words: two
    checklists share all of theirs."""
    char = f"(?:[^\\W_]|[{marks()}])"
    return re.compile(f"{char}+(?:['’]{char}+)*")


# An ordered list's number and a task's checkbox ("1.", "- [x]"): markup too.
_MARKERS = re.compile(r"^\s*(?:>\s*)*(?:\d{1,9}[.)]|[-*+])?\s*\[[ xX]\](?=\s|$)"
                      r"|^\s*(?:>\s*)*\d{1,9}[.)](?=\s|$)"
                      r"|(?<=\])\([^()\s]*\)", re.M)  # and a link's destination


def _body(r: RevisionRecord) -> list[str]:
    """A section's first :data:`RENAME_WORDS` words below its heading line, without its
    markup, casefolded."""
    lines = r.content.split("\n")
    if lines and lines[0].lstrip().startswith("#"):
        lines = lines[1:]
    text = _MARKERS.sub(" ", "\n".join(lines))
    return [m.group(0).casefold()
            for m in itertools.islice(_word().finditer(text), RENAME_WORDS)]


def _latest(g: _Group) -> str | None:
    times = [s.known_at for s in g.sections if s.known_at]
    times += [t for t in (g.record_time, g.moved_at) if t]
    return max(times, key=_time_key) if times else None


def _time_key(iso: str | None) -> int:
    return -1 if iso is None else parse_time(iso)


def _note_change(g: _Group) -> NoteChange:
    if g.moved_from is not None:
        change = "moved"
    elif g.record_changed and g.record_before is None:
        change = "added"
    elif g.record_changed and g.record_after is None:
        change = "deleted"
    elif not g.is_note and g.sections[0].change in ("added", "retracted"):
        change = "added" if g.sections[0].change == "added" else "deleted"
    else:
        change = "revised"
    titles = [r.title for r in (g.record_after, g.record_before) if r is not None and r.title]
    titles += [r.title for s in g.sections for r in (s.after, s.before)
               if r is not None and r.title]
    gone = "deleted" if g.is_note and g.record_after is None else "removed"
    sections = [s if s.why != "tombstone" else replace(
        s, why=gone if g.is_note else "forgotten") for s in g.sections]
    return NoteChange(note=g.key if g.is_note else None, title=titles[0] if titles else None,
                      change=change, latest=_latest(g), sections=sections,
                      moved_from=g.moved_from,
                      record_changes=_record_changes(g.record_before, g.record_after))


def _record_changes(before: RevisionRecord | None, after: RevisionRecord | None,
                    ) -> dict[str, list]:
    """The note-level fields that differ between two records: title, aliases, tags, and
    the other properties whose values changed (``{key: values}`` before and after; None
    where the key is absent)."""
    if before is None or after is None:
        return {}
    out: dict[str, list] = {}
    if before.title != after.title:
        out["title"] = [before.title, after.title]
    for key in ("aliases", "tags"):
        old = (before.metadata or {}).get(key, [])
        new = (after.metadata or {}).get(key, [])
        if old != new:
            out[key] = [old, new]
    if before.content != after.content:  # the front matter as written
        old_p, new_p = property_values(before.content), property_values(after.content)
        unread = any("front_matter_error" in (r.metadata or {}) for r in (before, after))
        if old_p is None or new_p is None or unread:  # a block that does not read says nothing
            return out
        keys = [k for k in dict.fromkeys([*old_p, *new_p]) if old_p.get(k) != new_p.get(k)]
        if keys:
            out["properties"] = [{k: old_p.get(k) for k in keys},
                                 {k: new_p.get(k) for k in keys}]
    return out


def _shown(n: NoteChange, g: _Group) -> NoteChange:
    """A returned note's sections in document order (retractions last), with diffs: new
    records, nothing mutated."""
    order = g.order
    sections = sorted(n.sections, key=lambda s: (s.change == "retracted",
                                                 order.get(s.memory_id, len(order)),
                                                 s.memory_id))
    with_diffs = [s if s.change != "revised" else replace(
        s, diff=word_diff(s.before.content, s.after.content)) for s in sections]
    return replace(n, sections=with_diffs)


def result_changes(before: list[SearchResult], after: list[SearchResult],
                   visible_at_until, still_a_result, moved: dict[str, str] | None = None,
                   ) -> tuple[list[ResultChange], list[str]]:
    """Compare two ranked lists of one query. ``visible_at_until(memory_id)`` tells a
    result that fell out of the list from one that was retracted, and
    ``still_a_result(memory_id)`` one pushed below the list from one that no longer
    matches. ``moved`` maps a note's path at the start to its path at the end, for the
    notes moved in between: a result under the old path is the same result under the new
    one."""
    moved = moved or {}
    rank_a = {r.memory_id: (i, r) for i, r in enumerate(after, 1)}
    rank_b, came_from = {}, {}
    # A result of the start that is not the result of its ID at the end (its note moved
    # and fell out of the list, or another note was moved onto its path) is keyed apart,
    # with the ID its note has at the end (None: none, it was deleted).
    apart: dict[str, str | None] = {}
    taken = set(moved.values())  # paths a note was moved onto
    for i, r in enumerate(before, 1):
        key = now = _moved_id(r, moved)
        if now != r.memory_id and now in rank_a:
            came_from[now] = r.memory_id
        elif now != r.memory_id or (r.revision.note in taken
                                    and r.revision.note not in moved):
            key = "\0" + r.memory_id
            apart[key] = now if now != r.memory_id else None
        rank_b[key] = (i, r)
    changed: list[ResultChange] = []
    unchanged: list[str] = []
    for key in list(dict.fromkeys([*rank_a, *rank_b])):
        memory_id = key[1:] if key in apart else key
        rb, b = rank_b.get(key, (None, None))
        ra, a = rank_a.get(key, (None, None))
        text_changed = a is not None and b is not None and not _same_text(a.revision,
                                                                          b.revision)
        if ra == rb and not text_changed and key not in came_from:
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
        elif text_changed:
            change = "changed"
        else:
            change = "moved"
        impact = abs((1.0 / rb if rb else 0.0) - (1.0 / ra if ra else 0.0))
        if text_changed:
            impact += TEXT_CHANGE_WEIGHT / min(ra, rb)
        shape = (a or b).revision
        why, retracted, then = None, False, apart.get(key, memory_id)
        if ra is None:
            retracted = then is None or not visible_at_until(then)
            why = ("retracted" if retracted else
                   "below the top N" if still_a_result(then) else "no longer matches")
        changed.append(ResultChange(
            memory_id=memory_id, note=shape.note, title=shape.title,
            heading_path=shape.heading_path, change=change, rank_before=rb, rank_after=ra,
            score_before=b.score if b else None, score_after=a.score if a else None,
            text_changed=text_changed,
            retracted=retracted, impact=impact,
            diff=word_diff(b.content, a.content) if text_changed else "",
            before=b.revision if b else None, after=a.revision if a else None, why=why,
            moved_from=came_from.get(key)))
    changed.sort(key=lambda c: (-c.impact, c.rank_after or 10**9, c.memory_id))
    return changed, unchanged


def _moved_id(r: SearchResult, moved: dict[str, str]) -> str:
    """A result's ID under its note's path at the end of the span."""
    note = r.revision.note
    if note is None or note not in moved or not r.memory_id.startswith(note):
        return r.memory_id
    return moved[note] + r.memory_id[len(note):]
