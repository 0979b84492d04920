"""Periods a query names ("on 13 October 2023", "in December 2023", "2023-10-13",
"2023年10月13日", "2023년 10월", "13.10.2023", "25/12/2025", "2026/03/14", "week 11", "2026-W11",
"Q1 2026", "the first of April 2026", and without the year: "on March 14", "in March", "am
14.03.", "Sa 14.3.", "on 23/09"): the periods
whose memories the ranking favours (``ranking.DATED``): a note whose file name names a
day, week, quarter or month inside one, or a memory outside notes valid from one
(:func:`periods.about`).

A month needs its year, or a preposition before it ("in March", "im März"), so "May I
export?" names no period; a day, week or month without its year is that one of every
year in :data:`YEARS`. Month names are English (full, or the usual three-letter
abbreviations), German, French, Spanish, Italian, Portuguese or Dutch (full), read in
NFKC ("März" typed with a combining mark is März). Weeks are ISO weeks, Monday to
Sunday. A period is half-open, in UTC microseconds, like every stored time. Each pattern
is a plain alternation with bounded repeats (linear time on any input), and a date that
does not exist (31 February, week 54) names nothing.
"""

from __future__ import annotations

import re
import unicodedata
from calendar import monthrange
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from itertools import groupby

import numpy as np

from ..times import DAY_US, to_micros
from .periods import inside, periods_mask, span_of
from .ranking import EARLIER_YEARS

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
# The languages whose full month names a preposition goes before ("for Julio" is a name,
# "in Mayo" no month)
_BEFORE_MONTH = {"in": ("en", "it", "nl"), "during": ("en",), "for": ("en",),
                 "throughout": ("en",), "im": ("de",), "en": ("fr", "es"), "em": ("pt",),
                 "a": ("it",)}
_LANGUAGES = {}
for _lang, _names in _MONTHS.items():
    for _name in _names.split():
        _LANGUAGES.setdefault(_name, set()).add(_lang)
_MONTH = r"(?P<{}>" + "|".join(sorted(_NUMBER, key=len, reverse=True)) + r")\.?"
# 13th, 1st; 1er (French), 1º (Spanish, Portuguese: "1o" in NFKC); 13. (German, Dutch)
_DAY = r"(?P<{}>\d{{1,2}})(?:st|nd|rd|th|er|o|\.)?"
_YEAR = r"(?P<{}>\d{{4}})"
_OF = r"(?:(?:of|de)\s+)?"  # 13 of March 2021, 13 de octubre de 2023
_ORDINALS = {w: i + 1 for i, w in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
    .split())}
_ORDINALS.update({f"twenty-{w}": 20 + i for w, i in list(_ORDINALS.items()) if i < 10})
_ORDINALS.update({"thirtieth": 30, "thirty-first": 31})
_ORDINAL_OF = {i: w for w, i in _ORDINALS.items()}
_ORDINAL_WORDS = "|".join(sorted(_ORDINALS, key=len, reverse=True))
_SPACE = r"\s{1,3}"

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
    # a month without its year after a preposition of its language: "in March", "im
    # März", "en mars" (_BEFORE_MONTH)
    rf"\b(?:in|during|for|throughout|im|en|em|a){_SPACE}{_MONTH.format('m9')}"
    r"(?!\w)(?!,?\s+(?:(?:of|de)\s+)?\d)",
    # ISO weeks: 2026-W11, 2026W11; week 11 (of 2026), KW 11, Woche 11, semaine 11
    r"\b(?P<y10>\d{4})-?W(?P<w10>\d{1,2})\b",
    r"\b(?:week|wk|kw|woche|semaine|semana|settimana)\s{0,3}(?:(?:no|nr|n°)\.?\s*|#)?"
    r"(?P<w11>\d{1,2})(?:(?:,|\s+of|\s+in)?\s+(?P<y11>\d{4})|/(?P<y14>\d{4}))?"
    r"(?![\w.:/-]?\d)",
    # quarters with their year: Q1 2026, Q1 of 2026, 2026-Q1
    r"\bQ(?P<q12>[1-4])\s+(?:of\s+)?(?P<y12>\d{4})\b|\b(?P<y13>\d{4})-?Q(?P<q13>[1-4])\b",
    # the year first with slashes or dots: 2026/03/14, 2026.3.14
    r"(?<![\d./-])(?P<y15>\d{4})(?P<sep15>[/.])(?P<m15>\d{1,2})(?P=sep15)(?P<d15>\d{1,2})"
    r"(?!\d|[./-]\d)",
    # a day in words: the first of April, the twenty-first of March 2026
    rf"\b(?P<o16>{_ORDINAL_WORDS})\s+of\s+{_MONTH.format('m16')}(?:,?\s+{_YEAR.format('y16')})?"
    r"(?!\w)",
]), re.IGNORECASE)
# "the week of March 9": the Monday-to-Sunday week holding the day named after it
_WEEK_OF = re.compile(r"\bweek\s+of\s+(?:the\s+)?$", re.IGNORECASE)
# A day named without its year is that day of every year in this span (a daily note of
# any year); "may 3" in lower case is a verb and a number, not a day.
YEARS = range(1970, 2101)


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WOCHENTAGE = ("montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag")
# Monday first in Dutch, Spanish, Portuguese, Italian and French: read only with the
# word for "last" ("vorige maandag", "el lunes pasado", "lundi dernier")
_WEEKDAYS_MORE = ("maandag dinsdag woensdag donderdag vrijdag zaterdag zondag",
                  "lunes martes miércoles jueves viernes sábado domingo",
                  "segunda-feira terça-feira quarta-feira quinta-feira sexta-feira sábado "
                  "domingo",
                  "segunda terça quarta quinta sexta sábado domingo",
                  "lunedì martedì mercoledì giovedì venerdì sabato domenica",
                  "lundi mardi mercredi jeudi vendredi samedi dimanche")
_WEEKDAY = {name: i for names in (_WEEKDAYS, _WOCHENTAGE) for i, name in enumerate(names)}
_WEEKDAY["sonnabend"] = 5
_WEEKDAY_MORE = {name: i for names in _WEEKDAYS_MORE for i, name in enumerate(names.split())}
# typed without their accents too ("lunedi scorso", "sabado pasado", "terca-feira passada")
_WEEKDAY_MORE.update({unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode():
                      i for name, i in list(_WEEKDAY_MORE.items())})
_LAST_DE = r"letzte[nmrs]?|vorige[nmrs]?|vergangene[nmrs]?"
# How many days, weeks or months ago ("two weeks ago", "vor 3 Tagen"): a number, or one
# to twelve in words
_NUMBERS = {w: i + 1 for words in ("one two three four five six seven eight nine ten "
                                   "eleven twelve", "eins zwei drei vier fünf sechs "
                                   "sieben acht neun zehn elf zwölf")
            for i, w in enumerate(words.split())}
_NUMBERS.update({"a": 1, "an": 1, "ein": 1, "einem": 1, "einer": 1, "einen": 1})
_FEW = r"\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True))
# Days and spans named from the day asked about, as a question puts them in English or
# German, and today, yesterday, the day before, this or last week or month and last Monday
# in Dutch, Spanish, Portuguese, Italian and French ("hier", French for yesterday, is
# German for here: not read). Matched in lower case, case-sensitively: "thıs" (a dotless
# i) is none.
_THIS = r"this|diese[nmrs]?|deze|est[ae]|questa|questo|cette|ce"
_WEEK = r"week|month|woche|monat|maand|semana|mes|mês|settimana|mese|semaine|mois"
_RELATIVE = re.compile(
    r"\b(?:(?P<dby>the\s+day\s+before\s+yesterday|vorgestern|eergisteren|anteayer"
    r"|anteontem|avant-hier|l'altro\s+ieri|altroieri)"
    r"|(?P<today>today|tonight|this\s+(?:morning|afternoon|evening)|heute|vandaag|hoy"
    r"|hoje|oggi|aujourd'hui)"
    r"|(?P<yesterday>yesterday|last\s+night|gestern|gisteren|ayer|ontem|ieri)"
    r"|(?P<dat>the\s+day\s+after\s+tomorrow|übermorgen)|(?P<tomorrow>tomorrow)"
    r"|(?P<wbl>the\s+week\s+before\s+last|vorletzte[nmrs]?\s+woche)"
    r"|(?P<next>next|nächste[nmrs]?|kommende[nmrs]?)\s+(?P<nextunit>week|month|woche|monat)"
    r"|(?P<weekend>(?:(?P<lastwe>last|this\s+past|letzte[ns]?|vorige[ns]?)|this|dieses)\s+"
    r"(?:weekend|wochenende))"
    rf"|(?P<ago>{_FEW})\s+(?P<agounit>days?|weeks?|months?)\s+ago"
    rf"|vor\s+(?P<vor>{_FEW})\s+(?P<vorunit>tag(?:en)?|woche[n]?|monat(?:en)?)"
    # "on the 6th": the latest 6th of a month, where the sentence or clause ends after
    # it (not "on the 6th of March", a day named, nor "on the 6th floor")
    r"|on\s+the\s+(?P<nth>[1-9]|[12]\d|3[01])(?:st|nd|rd|th)"
    r"(?=\s*(?:[?.!,;:)]|$)|\s+(?:and|or|at|in|with|when|because|to|for|from)\b)"
    rf"|(?P<which>last|{_THIS}|{_LAST_DE}|vorige)\s+(?P<unit>{_WEEK})"
    rf"|(?:(?:la|el|a|o|il|le)\s+)?(?P<unit2>{_WEEK})\s+"
    r"(?P<last2>pasad[ao]|passad[ao]|scors[ao]|derni[eè]re?)"
    rf"|(?:last|on|this\s+past|{_LAST_DE}|am)\s+(?P<wd>" + "|".join(_WEEKDAY) + r")"
    r"|(?:vorige|afgelopen)\s+(?P<wd2>" + "|".join(_WEEKDAYS_MORE[0].split()) + r")"
    r"|(?P<wd3>" +
    "|".join(sorted(set(_WEEKDAY_MORE) - set(_WEEKDAYS_MORE[0].split()), key=len,
                    reverse=True)) +
    r")\s+(?:pasado|passad[ao]|scors[ao]|dernier))"
    r"(?![\w'-])")
# "am 14.03.", "vom 9.3.26", "Montag, 9.3.": a German day without its year (or with two
# digits of it), read only after a word that says a date follows, since "1.2." alone may
# be a version or a chapter
_GERMAN_DAY = re.compile(
    r"(?:\b(?:am|vom|zum|bis|ab|seit|den|dem)\s{1,3}|\b(?:" + "|".join(_WEEKDAY) +
    r"|mo|di|mi|fr|sa)\.?,?\s{1,3})"  # "Sa 14.3.26" ("So", "Do": English words)
    r"(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<y>\d{2})?(?![\d]|\.\d)", re.IGNORECASE)

# "on 23/09", "Tuesday 23/9", "le 23/09/2025", "12/25/2025": a day and month written with
# slashes, in the writer's order: a number over 12 is the day, and when either could be
# the day, both days are named. Without its year it is read only after a word that says
# a date follows, since "3/4" alone is a fraction as often (and never before "of": "on 1/4
# of the days"; "by", "so", "do", "am" and "ab" announce fractions as often as days).
_ANNOUNCED = (r"on|since|from|until|till|before|after|dated|le|du|au|el|del|dal|al|dia|op"
              r"|tot|vom|zum|bis|seit")
_SHORT_DAYS = r"mon|tue|tues|wed|thu|thur|thurs|fri|sun"
_SLASHED = re.compile(
    rf"(?:\b(?:{_ANNOUNCED})\s{{1,3}}(?:the\s{{1,3}})?|\b(?:" + "|".join(_WEEKDAY) +
    rf"|{_SHORT_DAYS})\.?,?\s{{1,3}})"
    r"(?P<a>\d{1,2})/(?P<b>\d{1,2})(?:/(?P<y>\d{4}|\d{2}))?(?![\d/]|[.,]\d|\s+of\b)"
    r"|(?<![\d/.,])(?P<a2>\d{1,2})/(?P<b2>\d{1,2})/(?P<y2>\d{4})(?![\d/]|[.,]\d)",
    re.IGNORECASE)

# A span of days: "3-9 March", "March 3 to 9, 2026", "vom 3. bis 9. März", "du 3 au 9
# mars", "between 3 and 9 March"; and two days named in full joined the same way ("from
# March 28 to April 3", "between 2026-03-03 and 2026-03-09", "vom 3.3. bis 9.3."). An
# "and" joins them only after "between" (or its word in another language).
_TO = r"-|–|—|to|until|till|through|thru|bis|au|al|a|tot|and|und|et|y|e|en|tussen"
_AND = ("and", "und", "et", "y", "e", "en")
_BETWEEN = re.compile(r"\b(?:between|zwischen|entre|tra|fra|tussen)\s{1,3}(?:the\s{1,3}|dem\s{1,3}"
                      r"|le\s{1,3}|el\s{1,3})?$", re.IGNORECASE)
_JOIN = re.compile(rf"\s{{0,3}}(?P<to>{_TO})\s{{0,3}}(?:the\s{{1,3}}|dem\s{{1,3}}|le\s{{1,3}}"
                   r"|el\s{1,3})?", re.IGNORECASE)
_DAY_RANGE = re.compile(
    rf"(?<![\w.,:/-])(?P<a1>\d{{1,2}})(?:st|nd|rd|th|er|o|\.)?\s{{0,3}}(?P<to1>{_TO})\s{{0,3}}"
    rf"(?:the\s{{1,3}})?{_DAY.format('b1')}\s+{_OF}{_MONTH.format('m1')}(?:,?\s+{_OF}{_YEAR.format('y1')})?"
    r"(?!\w)"
    rf"|\b{_MONTH.format('m2')}\s+{_DAY.format('a2')}\s{{0,3}}(?P<to2>{_TO})\s{{0,3}}"
    rf"(?P<b2>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+{_YEAR.format('y2')})?(?![\w.,:]\d)(?!\w)",
    re.IGNORECASE)

# Two slashed days joined, the first announced or after "between": "from 13/3 to 19/3",
# "between 5/3 and 9/3" (the second needs no word of its own: "to 1/2 cup" alone is not
# read as a day).
_SLASH = r"(?P<{0}a>\d{{1,2}})/(?P<{0}b>\d{{1,2}})(?:/(?P<{0}y>\d{{4}}|\d{{2}}))?"
_SLASHED_SPAN = re.compile(
    rf"\b(?P<word>{_ANNOUNCED}|between|zwischen|entre|tra|fra|tussen)\s{{1,3}}"
    rf"(?:the\s{{1,3}}|dem\s{{1,3}}|le\s{{1,3}}|el\s{{1,3}})?{_SLASH.format('f')}"
    rf"\s{{0,3}}(?P<to>{_TO})\s{{0,3}}(?:the\s{{1,3}}|dem\s{{1,3}}|le\s{{1,3}}|el\s{{1,3}})?"
    rf"{_SLASH.format('l')}(?![\d/]|[.,]\d|\s+of\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Named:
    """The periods a query names (``periods``), and those it names first (``latest``):
    each named with its year or from the moment asked about, and of a day, week or month
    named without its year, its latest by that moment ("on March 14", asked in December
    2026, is 2026-03-14 first, then the years before: ``ranking.EARLIER_YEARS``). False
    when none is named."""
    periods: tuple[tuple[int, int], ...] = ()
    latest: tuple[tuple[int, int], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.periods)


def named_periods(text: str, at: int | None = None) -> tuple[tuple[int, int], ...]:
    """The days, weeks, months and quarters ``text`` names, as [start, end) in UTC
    microseconds, in the order named, each once: with their year, without it (that day,
    week or month of every year, none after ``at``), and, given the moment ``at`` the
    question is about, days named from it ("yesterday", "last Monday", "this week":
    :func:`relative_periods`)."""
    return periods_named(text, at).periods


def periods_named(text: str, at: int | None = None) -> Named:
    """:func:`named_periods`, and which of them are named first (:class:`Named`)."""
    found: dict[tuple[int, int], None] = {}
    latest: dict[tuple[int, int], None] = {}
    if at is not None:
        found.update(dict.fromkeys(relative_periods(text, at)))
        latest.update(found)
    text = unicodedata.normalize("NFKC", text)
    seen: set[tuple] = set()  # what a yearless name was read as, once
    matches = [(m, _named(m, m.lastgroup.lstrip("ymdwq"))) for m in _PATTERNS.finditer(text)]
    matches += [(m, _german_day(m)) for m in _GERMAN_DAY.finditer(text)]
    matches += [(m, day) for m in _SLASHED.finditer(text) for day in _slashed_days(m)]
    for first, last in dict.fromkeys(_day_ranges(text, matches)):  # each span once
        spans = _range_spans(first, last, at)
        found.update(dict.fromkeys(spans))
        latest.update(dict.fromkeys(spans if first[0] or last[0] else spans[-1:]))
    for m, named in matches:
        if named is None or named in seen:
            continue
        if named[0] is None:
            seen.add(named)
        years = YEARS if named[0] is None else (named[0],)
        periods = [p for y in years if (p := span_of(y, *named[1:])) is not None
                   and (named[0] is not None or at is None or p[0] <= at)]
        if named[1] == "day" and _WEEK_OF.search(text[max(0, m.start() - 24):m.start()]):
            periods = [_week_of(p) for p in periods]
        found.update(dict.fromkeys(periods))
        if periods:  # years run upwards: the last is the latest
            latest.update(dict.fromkeys(periods if named[0] is not None else periods[-1:]))
    return Named(tuple(found), tuple(latest))


def date_words(text: str) -> frozenset[str]:
    """The words (in lower case) of the days, weeks, months and relative days ``text``
    names ("december", "5th", "yesterday"): read as a date, they are not missing from the
    notes when no note holds them as a word."""
    text = unicodedata.normalize("NFKC", text)
    lower = text.lower()
    spans = [(lower, m.span()) for m in _RELATIVE.finditer(lower)] + [
        (text, m.span()) for pattern in (_PATTERNS, _GERMAN_DAY, _SLASHED, _DAY_RANGE,
                                         _SLASHED_SPAN)
        for m in pattern.finditer(text)]
    return frozenset(w.lower() for source, (a, b) in spans
                     for w in re.findall(r"\w+", source[a:b]))


def described(named: Named) -> str:
    """The period a query names first, in words, as a no-answer names it: "Sunday 29
    November 2026", "the week of Monday 23 November 2026", "November 2026", "14 March
    2026 to 16 March 2026"; "and 2 more" when it names more."""
    periods = named.latest or named.periods
    start, end = periods[0]
    first = datetime.fromtimestamp(start / 1e6, timezone.utc)
    last = datetime.fromtimestamp((end - 1) / 1e6, timezone.utc)
    day = f"{first:%A} {first.day} {first:%B %Y}"
    if end - start == DAY_US:
        text = day
    elif end - start == 7 * DAY_US and first.weekday() == 0:
        text = f"the week of {day}"
    elif first.day == 1 and last.month == first.month and last.day == monthrange(
            first.year, first.month)[1]:
        text = f"{first:%B %Y}"
    else:
        text = f"{first.day} {first:%B %Y} to {last.day} {last:%B %Y}"
    more = len(periods) - 1
    return text + (f" and {more} more" if more else "")


def written_dates(text: str) -> tuple[list[str], list[str]]:
    """The dates ``text`` (read in NFKC) names, as written, in two kinds: those a note
    could write the same way, each read as one phrase of its words (a day, a month with
    its year, a week or a quarter that exists: "March 14", "14th of March 2026",
    "2026-03-11", "14.03.", "23/09", "March 2026", "week 11", "Q1 2026"); and those named
    from the day asked about or as a span, which no note's words say ("last week",
    "yesterday", "3-9 March", "from 13/3 to 19/3"). A month named alone ("in March")
    is in neither: its name is a word."""
    written, dropped = written_forms(text)
    return [date for date, _, _ in written], dropped


def written_forms(text: str, at: int | None = None
                  ) -> tuple[list[tuple[str, tuple[str, ...], bool]], list[str]]:
    """:func:`written_dates`, the first kind each with the other ways a note writes the
    same day or month (:func:`_forms`): "March 14" is also "14 March", "14th of March",
    "14. März", "14 de marzo"; "2026-03-11" also "11.03.2026", "March 11"; "March 2026"
    also "2026-03", "März 2026". Weeks, quarters, and a slashed day that reads two ways
    ("3/4") have none. Given the moment ``at`` the question is about, a day named from it
    ("tomorrow", "yesterday", "last Monday", "on the 6th") is written too, as its day's
    forms: its own words are no form of it ("tomorrow" in a note is another day). Each
    is (as written, its forms, whether its own words are one of them)."""
    text = unicodedata.normalize("NFKC", text)
    found = [(m.span(), named) for m in _PATTERNS.finditer(text)
             if m.lastgroup.lstrip("ymdwq") != "9"
             and _exists(named := _named(m, m.lastgroup.lstrip("ymdwq")))]
    found += [((m.start("d"), m.end()), named) for m in _GERMAN_DAY.finditer(text)
              if _exists(named := _german_day(m))]
    for m in _SLASHED.finditer(text):
        days = [day for day in _slashed_days(m) if _exists(day)]
        if days:
            found.append(((_date_start(m), m.end()), days[0] if len(days) == 1 else None))
    lower = text.lower()
    spans_of = [m.span() for m in _RELATIVE.finditer(lower)] + [
        m.span() for pattern in (_DAY_RANGE, _SLASHED_SPAN) for m in pattern.finditer(text)]
    # a day named from the moment asked about, alone (not inside a span): its day's forms
    relative = {span: (start.year, "day", start.month, start.day)
                for span, start, count in (_relative_days(text, at) if at is not None else ())
                if count == 1}
    outer = _outermost(spans_of)
    dropped = [text[a:b] for a, b in outer if (a, b) not in relative]
    named_at = {}
    for span, named in found:
        named_at.setdefault(span, named)
    written = [(text[a:b], _forms(named_at.get((a, b))), True)
               for a, b in _outermost(list(named_at))
               if not any(c <= a and b <= d for c, d in spans_of)]
    written += [(text[a:b], _forms(relative[(a, b)]), False) for a, b in outer
                if (a, b) in relative]
    # a query of many dates: the first few are each their ways of writing, the rest as
    # written, or no term (some twenty phrases a date; 1,000 characters hold sixty dates)
    kept = written[:DATES_WRITTEN_WAYS]
    kept += [(date, (), own) for date, _, own in written[DATES_WRITTEN_WAYS:] if own]
    dropped += [date for date, _, own in written[DATES_WRITTEN_WAYS:] if not own]
    return kept, dropped


_ORDINAL = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}
DATES_WRITTEN_WAYS = 8  # the dates of a query searched as each way a note writes them


def _forms(named: tuple | None) -> tuple[str, ...]:
    """The ways a note writes the day or month ``named`` (:func:`_named`): with each
    language's name of the month (and English's short one), in each order English
    writes; with its year, in numbers too (ISO, day first with dots, and month first with
    slashes where it cannot be read the other way). A day with its year is also written
    without it ("March 11" in a note of 2026). Numbers alone without a year are no form:
    "14.03" is as often a time or a version."""
    if named is None or named[1] not in ("day", "month"):
        return ()
    year, month = named[0], named[2]
    names = [(lang, names.split()[month - 1]) for lang, names in _MONTHS.items()]
    short = [n for n, number in _NUMBER.items() if number == month  # "mar", "sept"
             and all(n not in full.split() for full in _MONTHS.values())]
    if named[1] == "month":
        return tuple(dict.fromkeys([f"{name} {year}" for _, name in names]
                                   + [f"{n} {year}" for n in short]
                                   + [f"{year}-{month:02}", f"{month:02}.{year}"]))
    day = named[3]
    th = _ORDINAL.get(day, "th")
    forms = []
    for lang, name in names:
        forms.append(f"{day} {name}")
        if lang == "en":
            forms += [f"{name} {day}", f"{name} {day}{th}", f"{day}{th} {name}",
                      f"{day}{th} of {name}", f"{_ORDINAL_OF[day]} of {name}"]
            forms += [f for n in short for f in (f"{n} {day}", f"{n} {day}{th}", f"{day} {n}")]
        elif lang in ("es", "pt"):
            forms.append(f"{day} de {name}")
        elif lang == "fr" and day == 1:
            forms.append(f"1er {name}")
    if year is not None:
        forms += [f"{year}-{month:02}-{day:02}", f"{day:02}.{month:02}.{year}",
                  f"{day}.{month}.{year}"]
        if day > 12 or day == month:
            forms += [f"{month}/{day}/{year}", f"{month:02}/{day:02}/{year}"]
    return tuple(dict.fromkeys(forms))


def impossible_dates(text: str) -> list[str]:
    """The days ``text`` writes with a month's name or as numbers that no calendar has
    ("29 February 2026", "31 April", "2026-02-30"), as written (NFKC), once each: such a
    date names no period, and its words are searched as words."""
    text = unicodedata.normalize("NFKC", text)
    out = [m.group() for m in _PATTERNS.finditer(text)
           if m.lastgroup.lstrip("ymdwq") in ("1", "2", "4", "6", "7", "8", "15", "16")
           and (named := _named(m, m.lastgroup.lstrip("ymdwq"))) is not None
           and named[1] == "day" and not _exists(named)]
    return list(dict.fromkeys(out))


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans no other holds, in order (each once)."""
    spans = sorted(set(spans), key=lambda s: (s[0], -s[1]))
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if not out or b > out[-1][1] and a >= out[-1][1]:
            out.append((a, b))
    return out


def _exists(named: tuple | None) -> bool:
    """Whether a day or month :func:`_named` read is one of the calendar's (of a leap
    year, when named without its year)."""
    return named is not None and span_of(named[0] or 2024, *named[1:]) is not None


def share(span: tuple[int, int], named: Named) -> float:
    """How much of a period's gain a span gets: 1 when the periods named first hold it
    whole, :data:`ranking.EARLIER_YEARS` when only an earlier year's does, else 0."""
    return (1.0 if inside(span, named.latest) else
            EARLIER_YEARS if inside(span, named.periods) else 0.0)


def shares(starts: np.ndarray, ends: np.ndarray, named: Named) -> np.ndarray:
    """:func:`share` over arrays of spans (the fast path's rows)."""
    return np.where(periods_mask(starts, ends, named.latest), 1.0,
                    np.where(periods_mask(starts, ends, named.periods), EARLIER_YEARS, 0.0))


def _named(m: re.Match, slot: str) -> tuple | None:
    """What a match names: (year or None, "day" | "month" | "week" | "quarter", numbers)."""
    group = m.group
    if slot in ("10", "11", "14"):  # 14: "KW 11/2026"
        year = group("y" + slot)
        week = group("w10" if slot == "10" else "w11")
        return (int(year) if year else None, "week", int(week))
    if slot in ("12", "13"):
        return (int(group("y" + slot)), "quarter", int(group("q" + slot)))
    month = group("m" + slot)
    number = int(month) if month.isdigit() else _NUMBER.get(month.lower())
    if number is None:  # a letter that matches only ignoring case ("aprıl", "ſept")
        return None
    if slot == "16":  # the first of April
        day = _ORDINALS.get(group("o16").lower())
        return None if day is None else (_year(group("y16")), "day", number, day)
    if slot in "789":
        if month == "may":  # "may 3", "in may": a verb in lower case
            return None
        if slot == "9" and not _LANGUAGES.get(month.lower(), set()) & set(
                _BEFORE_MONTH[m.group().split()[0].lower()]):
            return None
        return (None, "month", number) if slot == "9" else \
            (None, "day", number, int(group("d" + slot)))
    day = group("d" + slot) if slot != "3" else None
    return (int(group("y" + slot)), "day", number, int(day)) if day else \
        (int(group("y" + slot)), "month", number)


def _german_day(m: re.Match) -> tuple:
    """Two digits of a year are 2000 to 2069 or 1970 to 1999 (as strptime's %y)."""
    return (_year(m.group("y")), "day", int(m.group("m")), int(m.group("d")))


def _year(digits: str | None) -> int | None:
    """A year written with four digits, or two (2000 to 2069, 1970 to 1999: as strptime's
    %y), or None."""
    if not digits:
        return None
    return int(digits) if len(digits) == 4 else int(digits) + (2000 if int(digits) < 70
                                                                 else 1900)


def _day_ranges(text: str, matches: list[tuple[re.Match, tuple | None]]
                ) -> list[tuple[tuple, tuple]]:
    """The spans of days the text names (:data:`_DAY_RANGE`, and two named days joined by
    :data:`_JOIN`), as (first day, last day), each named as :func:`_named` names a day."""
    out = []
    for m in _DAY_RANGE.finditer(text):
        slot = "1" if m.group("m1") else "2"
        month = m.group("m" + slot)
        number = _NUMBER.get(month.lower())
        if number is None or (m.group("to" + slot).lower() in _AND
                              and not _BETWEEN.search(text[max(0, m.start() - 24):m.start()])):
            continue
        year = int(m.group("y" + slot)) if m.group("y" + slot) else None
        out.append(((year, "day", number, int(m.group("a" + slot))),
                    (year, "day", number, int(m.group("b" + slot)))))
    for m in _SLASHED_SPAN.finditer(text):
        if m.group("to").lower() in _AND and m.group("word").lower() in _ANNOUNCED.split("|"):
            continue  # "and" joins after "between" alone
        if all(int(m.group(x + "a")) < int(m.group(x + "b"))
               and int(m.group(x + "b")) in (2, 3, 4, 8) and not m.group(x + "y")
               for x in "fl"):
            continue  # "from 1/2 to 3/4 cup": two fractions
        firsts = _readings(m.group("fa"), m.group("fb"), m.group("fy"))
        lasts = _readings(m.group("la"), m.group("lb"), m.group("ly"))
        out += [(first, last) for first, a in firsts for last, b in lasts
                if a is None or b is None or a == b]
    days = sorted(((_date_start(m), m.end(), named, _written_order(m, named))
                   for m, named in matches if named is not None and named[1] == "day"),
                  key=lambda d: d[:2])
    places = [list(same) for _, same in groupby(days, key=lambda d: d[:2])]
    for here, there in zip(places, places[1:]):
        (begin, end), start = here[0][:2], there[0][0]
        join = _JOIN.fullmatch(text, end, start) if start > end else None
        if join is None:
            continue
        if join.group("to").lower() in _AND and not _BETWEEN.search(
                text[max(0, begin - 24):begin]):
            continue
        # a slashed day read both ways pairs with the other read the same way
        out += [(first, last) for _, _, first, a in here for _, _, last, b in there
                if a is None or b is None or a == b]
    return out


def _written_order(m: re.Match, named: tuple) -> str | None:
    """For a slashed day read one way of two, which: "dm" day first, "md" month first."""
    if m.re is not _SLASHED:
        return None
    a, b = int(m.group("a") or m.group("a2")), int(m.group("b") or m.group("b2"))
    return None if a == b else "md" if named[2] == a else "dm"


def _date_start(m: re.Match) -> int:
    """Where a day's match begins to write the date, after the word that announced it
    ("bis 9.3.", "on 23/09")."""
    names = m.re.groupindex
    for name in ("d", "a", "a2"):
        if name in names and m.start(name) >= 0:
            return m.start(name)
    return m.start()


def _range_spans(first: tuple, last: tuple, at: int | None) -> list[tuple[int, int]]:
    """[start, end) of the days from ``first`` to ``last`` (each (year or None, "day",
    month, day)): of the year given, or of every year in :data:`YEARS` (none starting
    after ``at``); a last day before the first in the calendar is in the next year."""
    order = (first[2], first[3]) <= (last[2], last[3])
    if not order and (first[0] is not None and first[0] == last[0] or first[2] <= last[2]):
        return []  # "9-3 March", "from March 9 to March 3": no span (only December to
        # January runs into the next year)
    if first[0] is not None or last[0] is not None:
        start_year = first[0] if first[0] is not None else \
            last[0] if order else last[0] - 1
        pairs = [(start_year, last[0] if last[0] is not None else
                  start_year if order else start_year + 1)]
    else:
        pairs = [(y, y if order else y + 1) for y in YEARS]
    out = []
    for y1, y2 in pairs:
        a, b = span_of(y1, "day", first[2], first[3]), span_of(y2, "day", last[2], last[3])
        if a and b and a[0] < b[1] and (first[0] is not None or last[0] is not None
                                        or at is None or a[0] <= at):
            out.append((a[0], b[1]))
    return out


def _slashed_days(m: re.Match) -> list[tuple]:
    """The day or days a slashed date names: day first or month first, whichever can be
    (both when both can)."""
    return [named for named, _ in _readings(m.group("a") or m.group("a2"),
                                            m.group("b") or m.group("b2"),
                                            m.group("y") or m.group("y2"))]


def _readings(first: str, second: str, year: str | None) -> list[tuple[tuple, str | None]]:
    """The days ``first``/``second``[/``year``] can name, each with its order ("dm" day
    first, "md" month first; None when both numbers are the same), day first first."""
    a, b = int(first), int(second)
    full = _year(year)
    orders = [(b, a, "dm")] + ([(a, b, "md")] if a != b else [])  # (month, day, order)
    return [((full, "day", month, day), order if a != b else None)
            for month, day, order in orders if 1 <= month <= 12]


def _week_of(day: tuple[int, int]) -> tuple[int, int]:
    """The Monday-to-Sunday week that holds a day."""
    weekday = datetime.fromtimestamp(day[0] / 1e6, timezone.utc).weekday()
    start = day[0] - weekday * DAY_US
    return start, start + 7 * DAY_US


def relative_periods(text: str, at: int) -> list[tuple[int, int]]:
    """The days ``text`` names from the day of ``at`` in this machine's time zone (the
    user's calendar): today, yesterday, the day before yesterday, last night, last (or
    on, or this past) Monday (the latest before today), this, last or next week (Monday to
    Sunday) or month, the week before last, tomorrow and the day after, in English or
    German (heute, gestern, letzte Woche, vorletzte Woche, nächste Woche, am Montag);
    today, yesterday, the day before, this or last week or month and last Monday in
    Dutch, Spanish, Portuguese, Italian and French too (ayer, la semana pasada, le mois
    dernier, vorige maandag, lunedì scorso).
    Each is the label's day as the dates named in full are, [00:00, 24:00) UTC, so
    "yesterday" finds the daily note named by yesterday's date."""
    out = []
    for _, start, days in _relative_days(unicodedata.normalize("NFKC", text), at):
        begin = to_micros(datetime(start.year, start.month, start.day, tzinfo=timezone.utc))
        out.append((begin, begin + days * DAY_US))
    return out


def _relative_days(text: str, at: int) -> list[tuple[tuple[int, int], object, int]]:
    """Each day or span ``text`` (in NFKC) names from the day of ``at``: (where it is
    written, its first day, how many days)."""
    try:
        today = datetime.fromtimestamp(at / 1e6).date()
    except (OverflowError, ValueError, OSError):  # outside what a calendar date holds
        return []
    out = []
    for m in _RELATIVE.finditer(text.lower()):
        name = m.group("wd") or m.group("wd2") or m.group("wd3")
        weekday = _WEEKDAY.get(name, _WEEKDAY_MORE.get(name)) if name else None
        try:
            start, days = _relative_day(m, today, weekday)
        except (OverflowError, ValueError):  # before year 1 or after 9999
            continue
        out.append((m.span(), start, days))
    return out


def _relative_day(m: re.Match, today, weekday: int | None):
    """The first day and the number of days a relative name means, from ``today``."""
    if m.group("dby"):
        return today - timedelta(days=2), 1
    if m.group("today"):
        return today, 1
    if m.group("yesterday"):
        return today - timedelta(days=1), 1
    if m.group("tomorrow") or m.group("dat"):
        return today + timedelta(days=1 if m.group("tomorrow") else 2), 1
    if m.group("wbl"):
        return today - timedelta(days=today.weekday() + 14), 7
    if m.group("next"):
        if m.group("nextunit")[0] in "wW":  # week, Woche
            return today - timedelta(days=today.weekday() - 7), 7
        first = (today.replace(day=28) + timedelta(days=4)).replace(day=1)
        return first, monthrange(first.year, first.month)[1]
    if m.group("weekend"):  # Saturday and Sunday of this week, or of the week before
        saturday = today - timedelta(days=today.weekday()) + timedelta(days=5)
        return (saturday - timedelta(days=7) if m.group("lastwe") else saturday), 2
    if m.group("nth"):  # the latest such day of a month, today's month first
        month = today.replace(day=1)
        for _ in range(12):
            if int(m.group("nth")) <= monthrange(month.year, month.month)[1]:
                day = month.replace(day=int(m.group("nth")))
                if day <= today:
                    return day, 1
            month = (month - timedelta(days=1)).replace(day=1)
        raise ValueError("no such day of a month")
    if m.group("ago") or m.group("vor"):
        count = m.group("ago") or m.group("vor")
        n = int(count) if count.isdigit() else _NUMBERS[count]
        unit = (m.group("agounit") or m.group("vorunit"))[0]
        if unit in "dt":  # days, Tagen
            return today - timedelta(days=n), 1
        if unit == "w":  # the week (Monday to Sunday) n weeks before this one
            return today - timedelta(days=today.weekday() + 7 * n), 7
        first = today.replace(day=1)
        for _ in range(n):
            first = (first - timedelta(days=1)).replace(day=1)
        return first, monthrange(first.year, first.month)[1]
    unit = m.group("unit") or m.group("unit2")
    last = bool(m.group("unit2")) or (m.group("which") is not None and re.fullmatch(
        _THIS, m.group("which")) is None)
    if unit in ("week", "woche", "semana", "settimana", "semaine"):
        start = today - timedelta(days=today.weekday())
        return (start - timedelta(days=7) if last else start), 7
    if unit:
        first = today.replace(day=1)
        if last:
            first = (first - timedelta(days=1)).replace(day=1)
        return first, monthrange(first.year, first.month)[1]
    return today - timedelta(days=(today.weekday() - weekday) % 7 or 7), 1
