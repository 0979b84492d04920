"""Periods as spans of time ([start, end) in UTC microseconds, as every stored time): a
calendar day, month, ISO week or quarter; the period a note's file name names, or the
moment a memory outside notes is valid from (what a memory is *about*); and whether the
periods a query names hold such a span. The query's side, reading the periods from its
words, is :mod:`dates`."""

from __future__ import annotations

import re
from bisect import bisect_right
from datetime import datetime, timezone
from functools import lru_cache

import numpy as np

from ..times import DAY_US, to_micros


def period(year: int, month: int, day: int | None) -> tuple[int, int] | None:
    """[start, end) of a day, or of a month when ``day`` is None; None when the calendar
    has no such day or month."""
    try:
        start = datetime(year, month, day or 1, tzinfo=timezone.utc)
        if day is not None:
            return to_micros(start), to_micros(start) + DAY_US
        after = (datetime(year + 1, 1, 1, tzinfo=timezone.utc) if month == 12
                 else datetime(year, month + 1, 1, tzinfo=timezone.utc))
    except ValueError:  # no such day, month or year (31 February, month 13, year 0)
        return None
    return to_micros(start), to_micros(after)


def span_of(year: int, unit: str, *numbers: int) -> tuple[int, int] | None:
    """[start, end) of a day, month, ISO week or quarter of ``year``; None when there is
    no such one (31 February, week 53 of most years, month 13)."""
    if unit == "day":
        return period(year, numbers[0], numbers[1])
    if unit == "month":
        return period(year, numbers[0], None)
    if unit == "quarter":
        first, last = period(year, 3 * numbers[0] - 2, None), \
            period(year, 3 * numbers[0], None)
        return (first[0], last[1]) if first and last else None
    try:
        monday = datetime.fromisocalendar(year, numbers[0], 1).replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return to_micros(monday), to_micros(monday) + 7 * DAY_US


# The period a file name names (Obsidian's daily and periodic notes): a day (2026-03-14.md,
# "2026-03-03 Budget review.md", 2026_03_14, 20260314), an ISO week (2026-W11, 2026-KW11),
# a quarter (2026-Q1) or a month (2026-03); not inside a longer number (a Zettelkasten ID).
# A year alone names none: "1984.md" is a book as often as a yearly note.
_FILE_PERIODS = (
    ("day", re.compile(r"(?<!\d)((?:19|20|21)\d\d)([-_.]?)(\d\d)\2(\d\d)(?!\d)")),
    ("week", re.compile(r"(?<![\d\w])((?:19|20|21)\d\d)[-_ ]?(?:[Ww]|[Kk][Ww])(\d\d?)(?!\d)")),
    ("quarter", re.compile(r"(?<![\d\w])((?:19|20|21)\d\d)[-_ ]?[Qq]([1-4])(?!\d)")),
    ("month", re.compile(r"(?<!\d)((?:19|20|21)\d\d)([-_.])(\d\d)(?![-_.]?\d)")),
)
# A day named with its year last (14.03.2026, 14-03-2026, 03-14-2026): with dots day first,
# as written from Germany to Russia; with a dash or an underscore in whichever order the
# numbers allow, and none when either could be the day (03-04-2026 is 3 April to most of
# the world and 4 March to the United States, and one name alone cannot tell which).
_DAY_FIRST = re.compile(r"(?<![\d\w.])(\d\d)([-_.])(\d\d)\2((?:19|20|21)\d\d)(?!\d|[-_.]\d)")
NO_DAY = np.iinfo(np.int64).min  # a memory about no day: inside no period
FOREVER = np.iinfo(np.int64).max


def note_span(note: str) -> tuple[int, int] | None:
    """The period a note's file name names ([start, end), the first kind found of day,
    week, quarter, month), or None."""
    name = note.rsplit("/", 1)[-1]
    for unit, pattern in _FILE_PERIODS:
        m = pattern.search(name)
        if m is not None:
            numbers = [int(g) for g in m.groups() if g and g.isdigit()]
            return span_of(numbers[0], unit, *numbers[1:])
    m = _DAY_FIRST.search(name)
    if m is None:
        return None
    a, b, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
    if m.group(2) != "." and a <= 12:
        if b <= 12:  # either could be the day
            return None
        a, b = b, a
    return span_of(year, "day", b, a)


def note_day(note: str) -> int | None:
    """The start of the period a note's file name names, or None."""
    span = note_span(note)
    return None if span is None else span[0]


def about(note: str | None, valid_from: int) -> tuple[int, int]:
    """The span of time a memory is about, which a period the query names favours when it
    holds the whole span: a note's day, week, quarter or month, when its file name names
    one (a daily or periodic note), else none for a note (when its text was imported says
    nothing of what it is about: a first sync stamps a whole vault with one day); a memory
    that is no note's is about the moment of its valid time."""
    if note is None:
        return valid_from, valid_from + 1
    span = note_span(note)
    return (NO_DAY, NO_DAY) if span is None else span


@lru_cache(maxsize=64)
def _merged(periods: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Periods sorted, those that touch or overlap made one (once per query's periods:
    the reference path asks for every row)."""
    merged: list[list[int]] = []
    for start, end in sorted(periods):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return tuple((a, b) for a, b in merged)


def inside(span: tuple[int, int], periods: tuple[tuple[int, int], ...]) -> bool:
    """Whether the periods named hold a span (UTC microseconds) whole: a day of March in
    "in March 2026", a weekly note in "last week", not a monthly note in "on March 4"."""
    start, end = span
    merged = _merged(periods)
    i = bisect_right(merged, (start, FOREVER)) - 1  # the last merged period from before it
    return i >= 0 and merged[i][0] <= start and end <= merged[i][1]


def periods_mask(starts: np.ndarray, ends: np.ndarray,
                 periods: tuple[tuple[int, int], ...]) -> np.ndarray:
    """:func:`inside` over arrays of spans (the fast path's rows): one binary search per
    span among the periods merged (a query may name a hundred)."""
    merged = _merged(periods)
    if not merged:
        return np.zeros(len(starts), dtype=bool)
    first = np.array([a for a, _ in merged], dtype=np.int64)
    last = np.array([b for _, b in merged], dtype=np.int64)
    at = np.searchsorted(first, starts, side="right") - 1
    return (at >= 0) & (ends <= last[np.maximum(at, 0)])
