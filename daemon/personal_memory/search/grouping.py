"""Search results grouped after ranking: one result per note (its best-ranked section) or
per section (a long section's parts, as this package cut them, merged into the best-ranked
one). The other rows of a group name the lines where they matched (``also``). Pure: the
ranked list comes in, nothing is re-scored."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..records import MoreLines, SearchResult
from . import syntax

Group = list[SearchResult]  # best-ranked first

# The rows of one group that get snippets (the one shown, its ``more`` and ``also``): a
# note whose every section matches (a word of its title, a query word on every line) gave
# a snippet to each of up to 1,000 rows, seconds of work for lines no one reads.
GROUP_ROWS = 32


def section_key(r: SearchResult) -> str:
    """The section a row belongs to (``RevisionRecord.section``: parts this package cut
    from a long section are one)."""
    return r.revision.section


def note_key(r: SearchResult) -> str:
    """The note a row belongs to (a memory outside notes is a group of its own)."""
    return r.note if r.note is not None else "\0" + r.memory_id


def names_one_note(query: syntax.Query, rows: list[SearchResult]) -> bool:
    """Whether the query asks about one note: a path, file or section filter, and every
    ranked row comes from the same note. Its answer is then that note's sections."""
    return (bool(query.paths or query.files or query.sections) and bool(rows)
            and len({note_key(r) for r in rows}) == 1)


def key_for(group: str, query: syntax.Query,
            rows: list[SearchResult]) -> Callable[[SearchResult], str]:
    """The grouping key of a search's rows (``group``: one of limits.SEARCH_GROUPS)."""
    if group == "note" and not names_one_note(query, rows):
        return note_key
    return section_key


def groups(rows: list[SearchResult], limit: int,
           key: Callable[[SearchResult], str]) -> list[Group]:
    """The first ``limit`` groups in rank order (a group ranks where its best row does),
    each holding every row of the list that belongs to it."""
    kept: dict[str, Group] = {}
    for r in rows:
        k = key(r)
        found = kept.get(k)
        if found is not None:
            found.append(r)
        elif len(kept) < limit:
            kept[k] = [r]
    return list(kept.values())


def name_matched(group: Group, holds: Callable[[SearchResult], bool],
                 period_alone: bool = False,
                 named: Callable[[SearchResult], bool] = lambda r: True) -> Group:
    """A note matched by its name alone (its best row matched by words, but none in its own
    text: the note's title or an alias) is shown by the first of its rows whose own text
    holds a query word. When none does, a query that is the note's name (``named``: its
    title and headings hold every query word) is shown from the note's top (the row that
    comes first in the file): the name is the whole note's, and the section that wins on
    it is only the shortest; a query that asks more ("红烧肉要炖多久" of a note titled
    红烧肉, in a language the words do not reach) by the row nearest it in meaning.
    A note about a period a query asks about alone (``period_alone``: "what did I do last
    week?") is shown from its top too: its period is the whole note's, and the meaning of
    such a question picks no section (it picked a weekly note's "Next week"). The row
    shown carries the note's score (its best row's), by which the note ranks."""
    best = group[0]
    if best.note is None or holds(best):
        return group
    if best.bm25 is None and not (period_alone and best.dated > 0):
        return group
    first = next((r for r in group[1:] if holds(r)), None)
    if first is None:
        near = [r for r in group if r.cosine is not None]
        if near and not period_alone and not named(best):
            first = max(near, key=lambda r: r.cosine)
        else:
            first = min(group, key=_line)
    if first is best:
        return group
    return [replace(first, score=best.score), *(r for r in group if r is not first)]


def _line(r: SearchResult) -> int:
    s = r.snippet
    return s.line_start if s is not None and s.line_start is not None else 2**31


def merged(found: list[Group], more_first: int = 0,
           worth_showing: Callable[[SearchResult], bool] | None = None,
           ) -> list[SearchResult]:
    """One result per group: its best row, ``also`` naming the lines where the others
    matched (their snippets' lines, in rank order; none without snippets). The first
    result also shows the snippets of its group's next ``more_first`` rows that are
    ``worth_showing`` (``more``; every row when None)."""
    out = []
    for i, (best, *rest) in enumerate(found):
        shown = ([r for r in rest if r.snippet is not None
                  and (worth_showing is None or worth_showing(r))][:more_first]
                 if i == 0 else [])
        more = tuple(MoreLines(r.memory_id, r.heading_path, r.snippet) for r in shown)
        spans = tuple(dict.fromkeys(
            (s.line_start, s.line_end) for s in (r.snippet for r in rest
                                                 if all(r is not x for x in shown))
            if s is not None and s.line_start is not None))
        out.append(replace(best, also=spans, more=more) if spans or more else best)
    return out


def words_first(r: SearchResult, snippet) -> SearchResult:
    """``r`` with the lines of its own section that match by words first in its ``more``
    (snippets._ScoredLines.by_words)."""
    return replace(r, more=(MoreLines(r.memory_id, r.heading_path, snippet), *r.more))


def left_out(limit: int, returned: int, unrelated: int) -> int:
    """How many of the ``limit`` results asked for were left empty because the rows that
    would have filled them were unrelated (:func:`contract.unrelated`): never more than
    the places left after the ``returned`` groups."""
    return max(0, min(limit - returned, unrelated))
