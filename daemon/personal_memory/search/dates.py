"""Days and months a query names ("on 13 October 2023", "in December 2023", "2023-10-13",
"2023年10月13日", "2023년 10월", "13.10.2023", and a day without its year: "on March 14"):
the periods whose memories the ranking favours (``ranking.DATED``): a note whose file
name names a day in one, or a memory outside notes valid from one (:func:`about`).

A month needs its year, so "May I export?" or "in March" name no period; a day without
its year is that day of every year in :data:`YEARS`. Month names are English (full, or
the usual three-letter abbreviations), German, French, Spanish, Italian, Portuguese or
Dutch (full), read in NFKC ("März" typed with a combining mark is März). A period is
half-open, in UTC microseconds, like every stored time. Each pattern is a plain
alternation with bounded repeats (linear time on any input), and a date that does not
exist (31 February) names nothing.
"""

from __future__ import annotations

import re
import unicodedata
from calendar import monthrange
from datetime import datetime, timedelta, timezone

import numpy as np

from ..times import DAY_US, to_micros

_MONTHS = {  # each language's names of the twelve months, January first
    "en": "january february march april may june july august september october november "
          "december",
    "de": "januar februar märz april mai juni juli august september oktober november "
          "dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre "
          "décembre",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre "
          "diciembre",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre "
          "novembre dicembre",
    "pt": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro "
          "dezembro",
    "nl": "januari februari maart april mei juni juli augustus september oktober november "
          "december",
}
_NUMBER = {name: i + 1 for names in _MONTHS.values() for i, name in enumerate(names.split())}
_NUMBER.update({name[:3]: i + 1 for i, name in enumerate(_MONTHS["en"].split())})
_NUMBER["sept"] = 9
_MONTH = r"(?P<{}>" + "|".join(sorted(_NUMBER, key=len, reverse=True)) + r")\.?"
# 13th, 1st; 1er (French), 1º (Spanish, Portuguese: "1o" in NFKC); 13. (German, Dutch)
_DAY = r"(?P<{}>\d{{1,2}})(?:st|nd|rd|th|er|o|\.)?"
_YEAR = r"(?P<{}>\d{{4}})"
_OF = r"(?:(?:of|de)\s+)?"  # 13 of March 2021, 13 de octubre de 2023

_PATTERNS = re.compile("|".join([
    # 13 October 2023, 13th Oct, 2023, 13. Oktober 2023, 13 de octubre de 2023
    rf"\b{_DAY.format('d1')}\s+{_OF}{_MONTH.format('m1')},?\s+{_OF}{_YEAR.format('y1')}\b",
    # October 13, 2023; Oct 13th 2023
    rf"\b{_MONTH.format('m2')}\s+{_DAY.format('d2')},?\s+{_YEAR.format('y2')}\b",
    # October 2023; October, 2023; octubre de 2023
    rf"\b{_MONTH.format('m3')},?\s+{_OF}{_YEAR.format('y3')}\b",
    # 2023-10-13; 2023-10
    r"\b(?P<y4>\d{4})-(?P<m4>\d{2})(?:-(?P<d4>\d{2}))?\b",
    # 2023年10月13日, 2023年10月; 2023년 10월 13일, 2023년 10월
    r"(?<!\d)(?P<y5>\d{4})\s?[年년]\s?(?P<m5>\d{1,2})\s?[月월]"
    r"(?:\s?(?P<d5>\d{1,2})\s?[日일])?",
    # 13.10.2023 (day first, as written from Germany to Russia)
    r"(?<![\d.])(?P<d6>\d{1,2})\.(?P<m6>\d{1,2})\.(?P<y6>\d{4})(?!\d|\.\d)",
    # without the year (tried after the forms with it): 14 March, the 14th of March
    rf"(?<![\w.,:/-]){_DAY.format('d7')}\s+{_OF}{_MONTH.format('m7')}(?!\w)",
    # March 14, Mar 14th
    rf"\b{_MONTH.format('m8')}\s+{_DAY.format('d8')}(?![\w.,:]\d)(?!\w)",
]), re.IGNORECASE)
# A day named without its year is that day of every year in this span (a daily note of
# any year); "may 3" in lower case is a verb and a number, not a day.
YEARS = range(1970, 2101)


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Days and spans named from the day asked about: English, as a question puts them
_RELATIVE = re.compile(
    r"\b(?:(?P<dby>the\s+day\s+before\s+yesterday)"
    r"|(?P<today>today|tonight|this\s+(?:morning|afternoon|evening))"
    r"|(?P<yesterday>yesterday|last\s+night)"
    r"|(?P<which>last|this)\s+(?P<unit>week|month)"
    r"|(?:last|on|this\s+past)\s+(?P<wd>" + "|".join(_WEEKDAYS) + r"))\b", re.IGNORECASE)


def named_periods(text: str, at: int | None = None) -> tuple[tuple[int, int], ...]:
    """The days and months ``text`` names, as [start, end) in UTC microseconds, in the
    order named, each once: with their year, without it (that day of every year), and,
    given the moment ``at`` the question is about, days named from it ("yesterday",
    "last Monday", "this week": :func:`relative_periods`)."""
    found: dict[tuple[int, int], None] = {}
    if at is not None:
        found.update(dict.fromkeys(relative_periods(text, at)))
    yearless: set[tuple[int, int]] = set()
    for m in _PATTERNS.finditer(unicodedata.normalize("NFKC", text)):
        slot = next(i for i in "12345678" if m.group("m" + i))
        month = m.group("m" + slot)
        number = int(month) if month.isdigit() else _NUMBER.get(month.lower())
        if number is None:  # a letter that matches only ignoring case ("aprıl", "ſept")
            continue
        if slot in "78":  # no year: the day in every year, none after the one asked about
            day = (number, int(m.group("d" + slot)))
            if month != "may" and day not in yearless:
                yearless.add(day)
                found.update(dict.fromkeys(p for y in YEARS if (p := _period(y, *day))
                                           and (at is None or p[0] <= at)))
            continue
        year = int(m.group("y" + slot))
        month = number
        day = m.group("d" + slot) if slot != "3" else None
        period = _period(year, month, int(day) if day else None)
        if period is not None:
            found[period] = None
    return tuple(found)


def relative_periods(text: str, at: int) -> list[tuple[int, int]]:
    """The days ``text`` names from the day of ``at`` in this machine's time zone (the
    user's calendar): today, yesterday, the day before yesterday, last night, last (or
    on, or this past) Monday (the latest before today), this or last week (Monday to
    Sunday) or month. Each is the label's day as the dates named in full are, [00:00,
    24:00) UTC, so "yesterday" finds the daily note named by yesterday's date."""
    try:
        today = datetime.fromtimestamp(at / 1e6).date()
    except (OverflowError, ValueError, OSError):  # outside what a calendar date holds
        return []
    out = []
    for m in _RELATIVE.finditer(unicodedata.normalize("NFKC", text)):
        weekday = _WEEKDAYS.index(m.group("wd").lower()) \
            if m.group("wd") and m.group("wd").lower() in _WEEKDAYS else None
        if m.group("wd") and weekday is None:  # "ſunday": matched ignoring case only
            continue
        try:
            start, days = _relative_day(m, today, weekday)
        except (OverflowError, ValueError):  # before year 1 or after 9999
            continue
        begin = to_micros(datetime(start.year, start.month, start.day, tzinfo=timezone.utc))
        out.append((begin, begin + days * DAY_US))
    return out


def _relative_day(m: re.Match, today, weekday: int | None):
    """The first day and the number of days a relative name means, from ``today``."""
    if m.group("dby"):
        return today - timedelta(days=2), 1
    if m.group("today"):
        return today, 1
    if m.group("yesterday"):
        return today - timedelta(days=1), 1
    if m.group("unit") and m.group("unit").lower() == "week":
        start = today - timedelta(days=today.weekday())
        return (start - timedelta(days=7) if m.group("which").lower() == "last" else start), 7
    if m.group("unit"):
        first = today.replace(day=1)
        if m.group("which").lower() == "last":
            first = (first - timedelta(days=1)).replace(day=1)
        return first, monthrange(first.year, first.month)[1]
    return today - timedelta(days=(today.weekday() - weekday) % 7 or 7), 1


def _period(year: int, month: int, day: int | None) -> tuple[int, int] | None:
    try:
        start = datetime(year, month, day or 1, tzinfo=timezone.utc)
        if day is not None:
            return to_micros(start), to_micros(start) + DAY_US
        after = (datetime(year + 1, 1, 1, tzinfo=timezone.utc) if month == 12
                 else datetime(year, month + 1, 1, tzinfo=timezone.utc))
    except ValueError:  # no such day, month or year (31 February, month 13, year 0)
        return None
    return to_micros(start), to_micros(after)


# A day in a file name: 2026-03-14.md (Obsidian's daily notes), "2026-03-03 Budget
# review.md", 2026_03_14, 20260314; not inside a longer number (a Zettelkasten ID)
_FILE_DAY = re.compile(r"(?<!\d)((?:19|20|21)\d\d)([-_.]?)(\d\d)\2(\d\d)(?!\d)")
NO_DAY = np.iinfo(np.int64).min  # a memory about no day: inside no period


def note_day(note: str) -> int | None:
    """The start of the day a note's file name names (its first date), or None."""
    m = _FILE_DAY.search(note.rsplit("/", 1)[-1])
    if m is None:
        return None
    period = _period(int(m.group(1)), int(m.group(3)), int(m.group(4)))
    return period[0] if period else None


def about(note: str | None, valid_from: int) -> int:
    """The moment a memory is about, which a period the query names favours: a note's
    day, when its file name names one (a daily note), else none for a note (when its text
    was imported says nothing of what it is about: a first sync stamps a whole vault with
    one day); a memory that is no note's is about its valid time."""
    if note is None:
        return valid_from
    day = note_day(note)
    return NO_DAY if day is None else day


def inside(moment: int, periods: tuple[tuple[int, int], ...]) -> bool:
    """Whether a time (UTC microseconds) lies in any of ``periods``."""
    return any(start <= moment < end for start, end in periods)


def periods_mask(times: np.ndarray, periods: tuple[tuple[int, int], ...]) -> np.ndarray:
    """:func:`inside` over an array of times (the fast path's rows): one binary search per
    time among the periods merged (a query may name a hundred)."""
    merged: list[list[int]] = []
    for start, end in sorted(periods):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    if not merged:
        return np.zeros(len(times), dtype=bool)
    starts = np.array([a for a, _ in merged], dtype=np.int64)
    ends = np.array([b for _, b in merged], dtype=np.int64)
    at = np.searchsorted(starts, times, side="right") - 1
    return (at >= 0) & (times < ends[np.maximum(at, 0)])
