"""Days and months a query names favour the memories about then: a note whose file name
names such a day, a memory outside notes valid from one."""

import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from personal_memory import MemoryStore
from personal_memory.search import ranking
from personal_memory.notes.folders import Folder
from personal_memory.search.dates import YEARS, named_periods
from personal_memory.search.periods import NO_DAY, about, note_day
from personal_memory.times import format_time, parse_time
from support import vault_of


def spans_at(text, at):
    return [(format_time(a)[:10], format_time(b)[:10])
            for a, b in named_periods(text, parse_time(at))]


def spans(text):
    return [(format_time(a)[:10], format_time(b)[:10]) for a, b in named_periods(text)]


def test_days_and_months_with_their_year_are_read():
    assert spans("What did Gina find on 1 February, 2023?") == [("2023-02-01", "2023-02-02")]
    assert spans("plans for January 2022") == [("2022-01-01", "2022-02-01")]
    assert spans("on October 13th, 2023 and Oct. 5, 2024") == [
        ("2023-10-13", "2023-10-14"), ("2024-10-05", "2024-10-06")]
    assert spans("2023-10-13, 2023-12 and 13 of march 2021") == [
        ("2023-10-13", "2023-10-14"), ("2023-12-01", "2024-01-01"), ("2021-03-13", "2021-03-14")]


def test_dates_written_in_other_orders_and_scripts():
    assert spans("2023年10月13日に何をした") == [("2023-10-13", "2023-10-14")]
    assert spans("２０２３年１０月の会議") == [("2023-10-01", "2023-11-01")]
    assert spans("2023년 10월 13일 회의") == [("2023-10-13", "2023-10-14")]
    assert spans("Treffen am 13.10.2023") == [("2023-10-13", "2023-10-14")]
    assert spans("am 13. Oktober 2023, im MÄRZ 2024") == [("2023-10-13", "2023-10-14"),
                                                         ("2024-03-01", "2024-04-01")]
    assert spans("le 1er janvier 2023") == [("2023-01-01", "2023-01-02")]
    assert spans("13 de octubre de 2023") == [("2023-10-13", "2023-10-14")]
    assert spans("5 de março de 2020") == [("2020-03-05", "2020-03-06")]
    assert spans("1º de maio de 2020, im Ma\u0308rz 2021") == [("2020-05-01", "2020-05-02"),
                                                            ("2021-03-01", "2021-04-01")]
    assert spans("12 maggio 2021 e 13 mei 2023") == [("2021-05-12", "2021-05-13"),
                                                    ("2023-05-13", "2023-05-14")]
    assert spans("on 2026/03/14 and 2025.1.5") == [("2026-03-14", "2026-03-15"),
                                                   ("2025-01-05", "2025-01-06")]
    assert spans("the twenty-first of March 2026") == [("2026-03-21", "2026-03-22")]
    assert ("2026-04-01", "2026-04-02") in spans("what happened on the first of April")
    for text in ("version 1.2.2023.5", "3.14.2023", "12.10.20234", "2023年13月",
                 "v2026.3.14.1", "2026/3/14/2", "first of all", "the second of many"):
        assert named_periods(text) == (), text


def test_no_year_or_no_such_day_names_nothing():
    for text in ("May I export my notes?", "in may", "March on", "31 February 2023",
                 "2023-13-01", "route 2023", "12 Mayday 2020", "0000-01-01", "may 3",
                 "version 3.1 march 1.5", "March 14:30", "2/14 march", "30 February"):
        assert named_periods(text) == (), text


def test_a_german_day_written_short_is_read_after_a_word_that_announces_it():
    days = spans("Was habe ich am 14.03. gemacht?")
    assert len(days) == len(YEARS) and ("2026-03-14", "2026-03-15") in days
    assert spans("vom 9.3.26") == [("2026-03-09", "2026-03-10")]
    assert spans("am 14.03.99") == [("1999-03-14", "1999-03-15")]  # as strptime's %y
    assert ("2026-03-09", "2026-03-10") in spans("Montag, 9.3.")
    assert spans("Sa 14.3.26") == spans("Fr., 14.3.26") == [("2026-03-14", "2026-03-15")]
    for text in ("Schritt 1.2. lesen", "version 1.2.10", "am 31.02.", "am 1.13.",
                 "Kapitel 3.4."):
        assert "2026-03-14" not in str(spans(text)) and len(spans(text)) <= 1, text
    assert spans("am 14.03.2026") == [("2026-03-14", "2026-03-15")]


def test_a_slashed_day_is_read_in_the_order_its_numbers_allow():
    """A number over 12 is the day, whichever comes first; when both could be the day,
    both days are named; without a year only after a word that announces a date."""
    days = spans("what did we decide at band practice on 23/09?")
    assert len(days) == len(YEARS) and ("2026-09-23", "2026-09-24") in days
    assert {d[0][5:] for d in spans("until 09/23")} == {"09-23"}
    assert spans("Tuesday 23/9/25") == spans("le 23/09/2025") == [("2025-09-23", "2025-09-24")]
    assert spans("12/25/2025 party") == [("2025-12-25", "2025-12-26")]
    assert spans("on 03/04/2026") == [("2026-04-03", "2026-04-04"), ("2026-03-04", "2026-03-05")]
    assert {d[0][5:] for d in spans("on 3/4")} == {"04-03", "03-04"}
    for text in ("1/2 cup of flour", "reduce it by 1/2 cup", "on 1/4 of the days",
                 "am 3/4 Liter Milch", "do 1/2 of them", "sat 1/2 hour",
                 "a 3/16 inch drill", "on 13/13", "on 31/31/2025",
                 "version 1/2/2023.5", "page 4/12", "on 1/2/20234", "31/02/2026"):
        assert spans(text) == [], text


def test_a_span_of_days_is_read_whole(utc):
    """"3-9 March", "between 3 and 9 March", "from March 28 to April 3": every day between,
    the latest such span first; "and" joins two days only after "between"."""
    at = "2026-12-05T10:00:00Z"
    week = ("2026-03-03", "2026-03-10")
    for text in ("what did I do 3-9 March?", "March 3 to 9", "vom 3. bis 9. März",
                 "du 3 au 9 mars", "del 3 al 9 de marzo", "between 3 and 9 March",
                 "between March 3 and March 9", "vom 3.3. bis 9.3.", "zwischen dem 3. und 9. März"):
        assert week in spans_at(text, at), text
    assert ("2026-03-03", "2026-03-10") in spans("March 3 to 9, 2026")
    assert ("2026-03-03", "2026-03-10") in spans("between 2026-03-03 and 2026-03-09")
    assert ("2025-12-28", "2026-01-04") in spans_at("between Dec 28 and Jan 3", at)
    assert ("2025-12-28", "2026-01-04") in spans("from 28 December 2025 to 3 January 2026")
    assert ("2026-12-28", "2027-01-04") not in spans_at("between Dec 28 and Jan 3", at)
    # a span written backwards in one month is none (December to January runs on)
    for text in ("9-3 March", "the 4-2 May game", "from March 9 to March 3"):
        assert not any(b > a[:8] + f"{int(a[8:]) + 1:02d}" for a, b in spans_at(text, at)
                       if a[:7] == b[:7]), text
        assert not any(a[:4] != b[:4] for a, b in spans_at(text, at)), text
    # a slashed day read both ways pairs with the other read the same way
    assert ("2025-12-25", "2026-01-03") in spans("from 12/25/2025 to 1/2/2026")
    assert ("2025-12-25", "2026-02-02") not in spans("from 12/25/2025 to 1/2/2026")
    assert {("2026-03-05", "2026-03-10"), ("2026-05-03", "2026-09-04")} <= set(
        spans("from 5/3/2026 to 9/3/2026"))
    assert ("2025-05-03", "2026-03-10") not in spans_at("du 5/3 au 9/3", at)
    for text in ("3 and 9 March", "March 3 and March 9", "2026-03-09 to 2026-03-03",
                 "on 23/09 and on 25/09"):
        assert not any(b > a[:8] + f"{int(a[8:]) + 1:02d}" for a, b in spans_at(text, at)
                       if a[:7] == b[:7]), text  # days alone, no span of several


def test_two_slashed_days_joined_are_a_span_and_two_fractions_are_not():
    """The second of two slashed days needs no word before it; "and" joins them after
    "between" alone; "from the 3rd to the 9th of March" is a span too."""
    at = "2026-12-05T10:00:00Z"
    assert ("2026-03-13", "2026-03-20") in spans_at("what did I do from 13/3 to 19/3?", at)
    assert ("2026-03-05", "2026-03-10") in spans_at("between 5/3 and 9/3", at)
    assert ("2026-05-03", "2026-09-04") in spans_at("between 5/3 and 9/3", at)  # US order
    assert ("2026-03-05", "2026-09-04") not in spans_at("between 5/3 and 9/3", at)
    assert ("2026-03-03", "2026-03-10") in spans_at("from the 3rd to the 9th of March", at)
    assert not any(b > a[:8] + f"{int(a[8:]) + 1:02d}" for a, b in spans_at(
        "on 5/3 and 9/3", at) if a[:7] == b[:7])  # "and" without "between": two days
    cup = spans_at("reduce it from 1/2 to 3/4 cup", at)
    assert cup and all(b == a[:8] + f"{int(a[8:]) + 1:02d}" for a, b in cup)  # days alone
    assert spans_at("between 1/4 and 1/2 of the flour", at) == []


def test_a_day_without_its_year_is_that_day_of_every_year():
    for text in ("what did I do on March 14?", "the 14th of March", "le 14 mars",
                 "am 14. März", "Mar 14th"):
        days = spans(text)
        assert len(days) == len(YEARS) and ("2026-03-14", "2026-03-15") in days, text
        assert {d[0][5:] for d in days} == {"03-14"}, text
    assert len(spans("29 February")) == sum(y % 4 == 0 for y in YEARS) - 1  # not 2100
    assert spans("June 12, 2023") == [("2023-06-12", "2023-06-13")]  # the year, when given


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300) | st.lists(st.sampled_from(
    ["am", "14.03.", "week", "11", "KW", "in", "March", "May", "Q1", "2026", "-W11", "of",
     "the", "gestern", "letzte", "Woche", "Montag,", "9.3.", " ", "last"])).map(" ".join),
       st.integers(-62_135_596_800_000_000, 253_402_300_799_000_000))
def test_any_text_is_read_without_error(text, at):
    from personal_memory.search.dates import periods_named
    named = periods_named(text, at)
    for start, end in named.periods:
        assert start < end
    assert set(named.latest) <= set(named.periods)


def test_hostile_text_is_read_in_linear_time():
    """Each fragment that could make a pattern backtrack, repeated to an eighth of a
    megabyte, through both readers (a query holds 1,000 characters at most): linear, all
    of them take seconds;
    a quadratic pattern would take hours. The timeout is generous on purpose."""
    code = ("import sys\nfrom personal_memory.search.dates import named_periods, "
            "written_forms\n"
            "for unit in sys.argv[1:]:\n"
            "    text = unit * (128 * 1024 // len(unit))\n"
            "    named_periods(text, 1_780_000_000_000_000)\n"
            "    written_forms(text)\n"
            "print('done')\n")
    units = ["1 ", "12 May ", "May 1", "2020-", "1st of ", "Oct. ", "2023年 ", "1.1.",
             "2023년 1", " ", "am 1.", "am 1.1", "Montag, ", "in ", "in May", "week ",
             "week 1 ", "2026-W", "Q1 ", "KW 1", "letzte ", "last ", "the week of ",
             "on 1/", "1/1/", "on 1/1/1", "Tue 1/", "lundi ", "vorige ", "3-", "3 to ",
             "between 3 and ", "March 3-", "1 March to ", "between ", "from 1/1 to ",
             "between 1/1 and ", "from the 1st to the ", "2026/1", "2026/1/", "2026.1.1.",
             "first of ", "the twenty-first of May ", "Sa 1.", "the day after ",
             "the week before ", "next ", "vorletzte "]
    p = subprocess.run([sys.executable, "-c", code, *units], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and p.stdout == "done\n", p.stderr[-2000:]


def test_a_dated_question_ranks_what_was_valid_then_first(tmp_path):
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        for mid, day in (("a", "2023-01-20"), ("b", "2023-03-08"), ("c", "2023-05-02")):
            store.remember(mid, "Maria donated a box of books to the shelter",
                           namespace="c", valid_from=day)
            # a row between them holding no query word: no neighbour lends context
            store.remember(mid + "-", "the weather was grey", namespace="c", valid_from=day)
        plain = [r.memory_id for r in store.search("what did Maria donate", namespace="c")]
        assert plain == ["a", "b", "c"]  # equal scores: memory ID order
        for search in (store.search, store.search_reference):
            found = search("what did Maria donate in March 2023?", namespace="c")
            assert [r.memory_id for r in found] == ["b", "a", "c"]
            assert abs(found[0].score - found[1].score - ranking.DATED) < 1e-12
            day = search("what did Maria donate on 2 May 2023", namespace="c")
            assert [r.memory_id for r in day][0] == "c"


@pytest.fixture
def utc(monkeypatch):
    """This process in UTC: relative days are read in the machine's time zone."""
    import time
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_days_named_from_the_day_asked_about(utc):
    at = parse_time("2026-12-05T10:00:00Z")  # a Saturday

    def named(text):
        return [(format_time(a)[:10], format_time(b)[:10]) for a, b in named_periods(text, at)]
    assert named("what did I do yesterday?") == named("last night") == [
        ("2026-12-04", "2026-12-05")]
    assert named("today") == named("this evening") == [("2026-12-05", "2026-12-06")]
    assert named("the day before yesterday") == [("2026-12-03", "2026-12-04")]
    assert named("who called last Monday") == [("2026-11-30", "2026-12-01")]
    assert named("on Saturday") == [("2026-11-28", "2026-11-29")]  # the latest before today
    assert named("this week") == [("2026-11-30", "2026-12-07")]
    assert named("last week") == [("2026-11-23", "2026-11-30")]
    assert named("this month") == [("2026-12-01", "2027-01-01")]
    assert named("last month") == [("2026-11-01", "2026-12-01")]
    assert named("last weekend") == named("this past weekend") == [("2026-11-28", "2026-11-30")]
    assert named("this weekend") == [("2026-12-05", "2026-12-07")]
    assert named("3 days ago") == named("three days ago") == [("2026-12-02", "2026-12-03")]
    assert named("two weeks ago") == named("2 weeks ago") == [("2026-11-16", "2026-11-23")]
    assert named("a month ago") == named("last month")
    assert named("the week before last") == named("two weeks ago")
    assert named("tomorrow") == [("2026-12-06", "2026-12-07")]  # a plan's daily note
    assert named("the day after tomorrow") == [("2026-12-07", "2026-12-08")]
    assert named("next week") == [("2026-12-07", "2026-12-14")]
    assert named("next month") == [("2027-01-01", "2027-02-01")]
    # the latest such day of a month, where the clause ends after it
    assert named("what did I do on the 5th?") == [("2026-12-05", "2026-12-06")]
    assert named("who called on the 6th and why") == [("2026-11-06", "2026-11-07")]
    assert named("on the 31st") == [("2026-10-31", "2026-11-01")]  # November has no 31st
    for text in ("on the 6th floor", "on the 0th", "on the 32nd", "the 5th"):
        assert named(text) == [], text
    for text in ("Monday meeting", "the team meets on Tuesdays", "todays", "weekend plans",
                 "an hour ago", "weeks ago"):
        assert named(text) == [], text
    # and in German
    assert named("Was habe ich gestern gemacht?") == named("yesterday")
    assert named("vorgestern") == named("the day before yesterday")
    assert named("heute") == named("today")
    assert named("letzte Woche") == named("vergangene Woche") == named("last week")
    assert named("diese Woche") == named("this week")
    assert named("letzten Monat") == named("last month")
    assert named("Was war am Montag?") == named("letzten Montag") == named("last Monday")
    assert named("vorigen Samstag") == named("on Saturday")
    assert named("letztes Wochenende") == named("last weekend")
    assert named("vor zwei Wochen") == named("two weeks ago")
    assert named("vor 3 Tagen") == named("3 days ago")
    assert named("vor einem Monat") == named("last month")
    assert named("vorletzte Woche") == named("the week before last")
    assert named("nächste Woche") == named("kommende Woche") == named("next week")
    assert named("übermorgen") == named("the day after tomorrow")
    for text in ("Montagsmeeting", "die Woche", "hier", "heutig", "thıs week"):
        assert named(text) == [], text
    # and in Dutch, Spanish, Portuguese, Italian and French: the days and weeks alone
    for english, others in (
            ("yesterday", ("gisteren", "ayer", "ontem", "ieri")),
            ("today", ("vandaag", "hoy", "hoje", "oggi", "aujourd'hui")),
            ("the day before yesterday", ("eergisteren", "anteayer", "avant-hier")),
            ("last week", ("vorige week", "la semana pasada", "a semana passada",
                           "la settimana scorsa", "la semaine dernière")),
            ("this week", ("deze week", "esta semana", "questa settimana", "cette semaine")),
            ("last month", ("el mes pasado", "o mês passado", "il mese scorso",
                            "le mois dernier")),
            ("this month", ("este mes", "questo mese", "ce mois"))):
        for text in others:
            assert named(text) == named(english), text
    # and last Monday in those five
    for text in ("vorige maandag", "afgelopen maandag", "el lunes pasado", "lunedì scorso",
                 "segunda-feira passada", "a segunda passada", "lundi dernier",
                 "lunedi scorso"):
        assert named(text) == named("last Monday"), text
    assert named("o sábado passado") == named("on Saturday")
    assert named("domenica scorsa") == named("last Sunday")
    for text in ("Was steht hier?", "mes amis", "semanas pasadas", "THıS week", "lundi",
                 "el lunes", "maandag"):
        assert named(text) == [], text
    assert named_periods("yesterday") == ()  # no moment asked about: nothing relative


def test_letters_that_match_only_ignoring_case_and_days_out_of_range_name_nothing(utc):
    """'ı' and 'İ' match i when case is ignored, yet name no month (they crashed the
    search); 'ſ' is an s once read in NFKC; a moment at the ends of the calendar names
    what it can."""
    at = parse_time("2026-03-01T00:00:00Z")  # a Sunday
    for text in ("what did I do on aprıl 3 2026", "APRİL 2026", "on mondaı"):
        assert named_periods(text, at) == (), text
    assert named_periods("last ſunday", at) == named_periods("last sunday", at) == (
        (parse_time("2026-02-22T00:00:00Z"), parse_time("2026-02-23T00:00:00Z")),)
    assert named_periods("yesterday and last week", parse_time("0001-01-02T00:00:00Z")) \
        == ((parse_time("0001-01-01T00:00:00Z"), parse_time("0001-01-02T00:00:00Z")),)
    assert len(named_periods("yesterday", parse_time("9999-12-31T00:00:00Z"))) == 1


def test_a_day_without_its_year_is_none_after_the_day_asked_about(utc):
    days = spans_at("le 14 mars", "2026-03-13T12:00:00Z")
    assert days[-1] == ("2025-03-14", "2025-03-15") and len(days) == 2025 - 1970 + 1
    assert spans_at("le 14 mars", "2026-03-14T00:00:00Z")[-1][0] == "2026-03-14"


def test_yesterday_is_the_day_before_the_cutoff(tmp_path, utc):
    vault = tmp_path / "v"
    (vault / "Daily").mkdir(parents=True)
    for day, text in (("2026-03-13", "called Anna"), ("2026-03-14", "called the bank"),
                      ("2026-03-15", "called Tom")):
        (vault / "Daily" / f"{day}.md").write_text(f"- {text}\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2026-03-10T10:00:00Z")
        for search in (store.search, store.search_reference):
            for as_of, note in (("2026-03-15T20:00:00Z", "v/Daily/2026-03-14.md"),
                                ("2026-03-16T08:00:00Z", "v/Daily/2026-03-15.md")):
                found = search("who called yesterday", namespace="notes", as_of=as_of)
                assert found[0].note == note, (as_of, [r.note for r in found])
                # no word of it in any note, no model: the day alone answers
                found = search("what happened yesterday", namespace="notes", as_of=as_of)
                assert [r.note for r in found] == [note] and found.no_answer is None
                # read as a day, "yesterday" is not a word the notes lack; nor is
                # "happened", the verb the question is framed with
                assert found.missing == []
                found = search("what did Anna say yesterday", namespace="notes", as_of=as_of)
                assert found.missing == ["say"]  # a word of the question the notes lack
            found = search("who called on March 14th", namespace="notes")
            assert found[0].note == "v/Daily/2026-03-14.md" and found.missing == []


def test_a_note_is_about_the_day_its_file_name_names():
    def day(note):
        at = note_day(note)
        return None if at is None else format_time(at)[:10]
    assert day("v/Daily/2026-03-14.md") == "2026-03-14"
    assert day("v/Meetings/2026-03-03 Budget review.md") == "2026-03-03"
    assert day("v/2026_03_14.md") == day("v/20260314 notes.md") == "2026-03-14"
    assert day("v/Journal/2025/Sunday 2025.10.12.md") == "2025-10-12"
    # the year last: with dots day first, with dashes as the numbers allow, else none
    assert day("v/Tagebuch/14.03.2026.md") == day("v/14-03-2026 Montag.md") == \
        day("v/03-14-2026.md") == day("v/14_03_2026.md") == "2026-03-14"
    assert day("v/03.04.2026.md") == "2026-04-03"
    for name in ("v/03-04-2026.md", "v/14.03.20267.md", "v/1.14.03.2026.md",
                 "v/14-03_2026.md", "v/31.02.2026.md", "v/13-13-2026.md", "v/14.03.26.md"):
        assert day(name) is None, name
    for name in ("v/2026-03-14/plan.md", "v/202603141230 zettel.md", "v/2026-13-01.md",
                 "v/2026-02-30.md", "v/1234-05-06.md", "v/2026-03_14.md", "v/notes.md"):
        assert day(name) is None, name
    assert about("v/notes.md", 5) == (NO_DAY, NO_DAY) and about(None, 5) == (5, 6)
    assert about("v/2026-03-14.md", 5)[0] == note_day("v/2026-03-14.md")


def test_a_periodic_note_is_about_its_week_quarter_or_month():
    def span(note):
        a, b = about(note, 5)
        return None if a == NO_DAY else (format_time(a)[:10], format_time(b)[:10])
    assert span("v/Weekly/2026-W11.md") == span("v/2026 w11 review.md") == \
        span("v/Wochen/2026-KW11.md") == span("v/2026-Kw11.md") == \
        ("2026-03-09", "2026-03-16")
    assert span("v/2026-W01.md") == ("2025-12-29", "2026-01-05")  # ISO weeks, from Monday
    assert span("v/Monthly/2026-03.md") == span("v/2026_03 goals.md") == \
        ("2026-03-01", "2026-04-01")
    assert span("v/2026-Q4.md") == ("2026-10-01", "2027-01-01")
    assert span("v/2026-03-14.md") == ("2026-03-14", "2026-03-15")
    for name in ("v/2025-W53.md", "v/2026-W54.md", "v/2026-13.md", "v/1984.md",
                 "v/2019-2020 season.md", "v/2026-03_14.md", "v/2026-03-5.md",
                 "v/Invoice 2024-0042.md", "v/BMW2026-W11.md", "v/2026-Q5.md"):
        assert span(name) is None, name


def test_weeks_quarters_and_months_a_query_names(utc):
    at = "2026-12-05T12:00:00Z"
    assert spans("what shipped in 2026-W11?") == spans("week 11 of 2026") == \
        spans("KW 11 2026") == spans("KW 11/2026") == [("2026-03-09", "2026-03-16")]
    assert ("2026-03-09", "2026-03-16") in spans_at("KW11", at)
    weeks = spans_at("weekly review of week 11", at)
    assert ("2026-03-09", "2026-03-16") in weeks and ("2025-03-10", "2025-03-17") in weeks
    assert spans("Q1 2026") == spans("2026-Q1") == [("2026-01-01", "2026-04-01")]
    assert spans("the Q3 budget") == []  # a quarter needs its year
    months = spans_at("what were my goals for March?", at)
    assert months[-1] == ("2026-03-01", "2026-04-01") and len(months) == 2026 - 1969
    assert spans_at("im März", at) == months and spans_at("In May", at)[-1][0] == "2026-05-01"
    assert spans_at("in March 14", at)[-1] == ("2026-03-14", "2026-03-15")
    assert spans_at("en marzo", at) == spans_at("a marzo", at) == spans_at("em março", at) \
        == months
    for text in ("what gift for Julio", "for Mars rover", "en mar abierto", "in Mayo",
                 "appointment for Mei", "in Mar", "a March"):
        assert spans_at(text, at) == [], text  # a month only after its language's word
    assert spans_at("in December", "2026-11-30T12:00:00Z")[-1][0] == "2025-12-01"
    assert spans("the week of March 9, 2026") == [("2026-03-09", "2026-03-16")]
    assert spans("the week of the 11th of March 2026") == [("2026-03-09", "2026-03-16")]


def test_a_dated_question_ranks_the_daily_note_of_that_day_first(tmp_path):
    """A vault synced today is valid from today: naming today favours none of its notes,
    naming a day favours the note whose file name is that day."""
    vault = tmp_path / "v"
    (vault / "Daily").mkdir(parents=True)
    (vault / "Daily" / "2026-03-14.md").write_text("- bought running shoes\n- called Anna\n")
    (vault / "Daily" / "2026-02-14.md").write_text("- bought flowers\n- called the bank\n")
    (vault / "Shopping.md").write_text("# Shopping\n\nWhat I bought and where.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01T10:00:00Z")
        for search in (store.search, store.search_reference):
            found = search("what did I buy on 14 March 2026", namespace="notes")
            assert found[0].note == "v/Daily/2026-03-14.md"
            found = search("what did I buy in February 2026", namespace="notes")
            assert found[0].note == "v/Daily/2026-02-14.md"
            found = search("what did I buy on 14 March", namespace="notes")
            assert found[0].note == "v/Daily/2026-03-14.md"
            assert [r.dated for r in found] == [ranking.DATED_NOTE] + [0.0] * (len(found) - 1)
            # the sync's day (every note's valid time) against a day before anything
            synced = search("bought on 1 January 2025", namespace="notes")
            before = search("bought on 1 January 2024", namespace="notes")
            assert len(synced) == 3 and [(r.memory_id, r.score) for r in synced] == \
                [(r.memory_id, r.score) for r in before]


def test_a_day_s_number_beside_its_month_is_no_word_of_its_own(tmp_path):
    """"December 1": the day is favoured by its period; "1" alone would match any note
    with a 1 in it (an address, a price) and be marked there."""
    vault = tmp_path / "v"
    (vault / "Daily").mkdir(parents=True)
    (vault / "Daily" / "2026-12-01.md").write_text("- walked the dog\n")
    (vault / "Network.md").write_text("# Network\n\nThe router is at 192.168.178.1\n")
    (vault / "Party.md").write_text("# Party\n\nOn December 1 we meet at eight.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2026-11-01T10:00:00Z")
        for search in (store.search, store.search_reference):
            found = search("what did I do on December 1", namespace="notes")
            assert [r.note for r in found] == ["v/Daily/2026-12-01.md", "v/Party.md"], \
                [r.note for r in found]
            assert search("router 1", namespace="notes")[0].note == "v/Network.md"


def test_a_date_written_in_numbers_is_matched_as_one_phrase(tmp_path):
    """"2026-03-11": its numbers count where they are written together, as that date
    (however it is punctuated: 2026/03/11 reads the same); "2026" or "03" alone is in
    every note of the year or month, and no such note is an answer."""
    vault = tmp_path / "v"
    (vault / "Daily").mkdir(parents=True)
    (vault / "Daily" / "2026-03-11.md").write_text("- walked the dog\n")
    (vault / "Standup.md").write_text("# Standup\n\nMoved the release to 2026/03/11 after "
                                      "the outage.\n\nBudget for 2026 is in 03 of the plan.\n")
    (vault / "Budget.md").write_text("# Budget\n\nThe 2026 budget, version 03, page 11.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2026-04-01T10:00:00Z")
        for search in (store.search, store.search_reference):
            found = search("what did I do on 2026-03-11", namespace="notes")
            assert {r.note for r in found} == {"v/Daily/2026-03-11.md", "v/Standup.md"}, \
                [r.note for r in found]
            assert search("2026 budget", namespace="notes")[0].note == "v/Budget.md"
        shown = store.search("2026-03-11", namespace="notes", snippets=True)
        standup = next(r for r in shown if r.note == "v/Standup.md")
        assert "**2026/03/11**" in standup.snippet.text
        assert "**2026**" not in standup.snippet.text, standup.snippet.text
        assert store.search("14.03.2026", namespace="notes").no_answer


def test_a_day_named_with_its_month_is_one_phrase_and_a_relative_one_no_word(tmp_path):
    """"March 14": "march" alone is in the monthly note's title and every note that names
    another day of March; "last week": "week" is in every weekly plan. The day or week
    is its period's to favour; its words count only written together, or not at all."""
    vault = tmp_path / "v"
    (vault / "Journal").mkdir(parents=True)
    (vault / "Journal" / "2026-03.md").write_text("# March 2026\n\n## Next month\n\nMove flat.\n")
    (vault / "Plan.md").write_text("# Plan\n\nDeadline moved to March 18.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2026-03-10T10:00:00Z")
        (vault / "Journal" / "2026-03-14.md").write_text("- Flohmarkt mit Lena\n")
        (vault / "Journal" / "2026-W11.md").write_text(
            "# Week 11\n\n## Good\n\nShipped the importer.\n\n## Next week\n\nRetro.\n")
        (vault / "Party.md").write_text("# Party\n\nOn March 14 we meet at eight.\n")
        store.sync([Folder.of(vault)], known_at="2026-03-16T10:00:00Z")
        for search in (store.search, store.search_reference):
            found = search("what did I do on March 14", namespace="notes")
            assert [r.note for r in found] == ["v/Journal/2026-03-14.md", "v/Party.md"], \
                [r.note for r in found]
            early = search("what did I do on March 14", namespace="notes",
                           as_of="2026-03-13T12:00:00Z")
            assert not early and early.no_answer, [r.note for r in early]
            week = search("what did I do last week", namespace="notes",
                          as_of="2026-03-18T12:00:00Z")
            assert {r.note for r in week} == {"v/Journal/2026-W11.md",
                                              "v/Journal/2026-03-14.md"}, [r.note for r in week]
            assert all(r.bm25 is None for r in week)  # no word of it is a keyword
    # asked of a week no note is about, by meaning alone: other weeks' notes are no answer
    from ground_truth import ToyEmbedder
    with MemoryStore.open(tmp_path / "m.db", embedder=ToyEmbedder()) as store:
        store.embed_pending()
        for search in (store.search, store.search_reference):
            assert search("what did I do last week", namespace="notes",
                          as_of="2026-03-18T12:00:00Z")
            found = search("what did I do last week", namespace="notes",
                           as_of="2026-04-20T12:00:00Z")
            assert not found and found.no_answer.startswith(
                "no visible memory is about the week of Monday 13 April 2026 (the day or "
                "period the query names)"), (found.no_answer, [r.note for r in found])


def test_a_day_written_another_way_in_the_note_is_the_same_day(tmp_path):
    """A note writes a day its own way ("28. Februar", "Feb 28th", "11.03.2026"), the
    question another ("February 28", "2026-03-11"): the same day is found, on both paths,
    where before nothing was said to be about it. Numbers without a year are no other
    way of writing it ("28.02" is as often a time), nor another day's words."""
    vault = vault_of(tmp_path, {
        "Dentist.md": "# Dentist\n\nAm 28. Februar Zahnreinigung.\n",
        "Boat.md": "# Boat\n\nSailing trip on Feb 28th with Ana.\n",
        "Lease.md": "# Lease\n\nSigned on 11.03.2026 at the agency.\n",
        "Clock.md": "# Clock\n\nThe train left at 28.02 sharp.\n",
        "Other.md": "# Other\n\nOn February 27 and March 28 nothing.\n"}, "v")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2026-03-20T10:00:00Z")
        for search in (store.search, store.search_reference):
            found = search("what did I do on February 28", namespace="notes")
            assert sorted(r.note for r in found) == ["v/Boat.md", "v/Dentist.md"], \
                (found.no_answer, [r.note for r in found])
            assert sorted(r.note for r in search("what happened on 28.02.2026",
                                                 namespace="notes")) == [
                "v/Boat.md", "v/Dentist.md"]
            lease = search("what did I sign on 2026-03-11", namespace="notes")
            assert [r.note for r in lease] == ["v/Lease.md"], [r.note for r in lease]
        lease = store.search("what did I sign on 2026-03-11", namespace="notes", snippets=True)
        assert "**11.03.2026**" in lease[0].snippet.text, lease[0].snippet
        # a heading that writes the day another way names it, as the file name does: the
        # snippet shows the section's lines, not the heading (which left it empty)
        (vault / "2026-03-12.md").write_text("# Thu 12 March 2026\n\n## Work\n- Fixed the boiler.\n")
        store.sync([Folder.of(vault)], known_at="2026-03-20T11:00:00Z")
        day = store.search("what did I do on 2026-03-12", namespace="notes", snippets=True,
                           group="note")
        assert day[0].note == "v/2026-03-12.md" and day[0].snippet.text == "- Fixed the boiler.", \
            day[0].snippet


def test_a_row_that_writes_the_day_named_gains_as_one_valid_then(tmp_path):
    """"What broke on 23.02.2026?": the retro that writes "Feb 23rd" comes before the note
    where the heating broke on another day (the word "broke" weighed more than the date
    alone); on both paths, and the gain is shown (``dated``)."""
    vault = vault_of(tmp_path, {
        "Apartment.md": "# Apartment\n\nThe heating broke on the 16th of February.\n",
        "Retro.md": "# Retro\n\nStaging outage on Feb 23rd: the deploy script failed.\n",
        **{f"f{i}.md": f"# F{i}\n\nFebruary notes {i}: all quiet.\n" for i in range(3)},
        "2026-02-23.md": "# Monday\n\nQuiet day.\n"}, "v")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2026-03-01T10:00:00Z")
        for search in (store.search, store.search_reference):
            found = search("what broke on 23.02.2026?", namespace="notes")
            notes = [r.note for r in found]
            assert notes[:2] == ["v/2026-02-23.md", "v/Retro.md"], notes
            assert [r.dated for r in found[:2]] == [ranking.DATED_NOTE, ranking.WRITES_DATE]


def test_a_query_of_many_dates_searches_the_first_few_in_every_way():
    """Each date is some twenty phrases: of a query with more than DATES_WRITTEN_WAYS, the
    rest are searched as written (a day named from the moment asked, as no term), so a
    1,000-character query of sixty dates stays cheap."""
    from personal_memory.search.dates import DATES_WRITTEN_WAYS, written_forms
    query = " ".join(f"{d} March 2026" for d in range(1, 13)) + " and yesterday"
    written, dropped = written_forms(query, parse_time("2026-03-20T12:00:00Z"))
    assert [date for date, _, _ in written] == [f"{d} March 2026" for d in range(1, 13)]
    assert all(len(forms) > 10 for _, forms, _ in written[:DATES_WRITTEN_WAYS])
    assert all(forms == () for _, forms, _ in written[DATES_WRITTEN_WAYS:])
    assert dropped == ["yesterday"]
    assert len(written_forms("on 1 March 2026 or yesterday",
                             parse_time("2026-03-20T12:00:00Z"))[0]) == 2


def test_a_day_named_from_the_moment_asked_is_found_where_a_note_writes_it(tmp_path):
    """"Tomorrow", asked on 16 March 2026, is 17 March 2026 however a note writes it
    ("17. März 2026"): found, on both paths, where before no memory was said to be about
    it; the word "tomorrow" in a note is no match (it is another day)."""
    vault = vault_of(tmp_path, {
        "Arzttermine.md": "# Arzttermine\n\nHautarzt: 17. März 2026 um 9:30.\n",
        "Plans.md": "# Plans\n\nCall the bank tomorrow.\n",
        "Other.md": "# Other\n\nDentist on 18 March 2026.\n"}, "v")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2026-03-10T10:00:00Z")
        for search in (store.search, store.search_reference):
            found = search("what's happening tomorrow?", namespace="notes",
                           as_of="2026-03-16T12:00:00Z")
            assert [r.note for r in found] == ["v/Arzttermine.md"], \
                (found.no_answer, [r.note for r in found])
            later = search("what did I do yesterday", namespace="notes",
                           as_of="2026-03-19T12:00:00Z")
            assert [r.note for r in later] == ["v/Other.md"], [r.note for r in later]


def test_a_note_about_a_period_asked_about_alone_is_shown_from_its_top(tmp_path):
    """"What did I do last week?" names nothing but the week: its weekly note is shown
    from its top, not by the section nearest such a question in meaning ("Next week");
    a question with words of its own is shown where they are."""
    from ground_truth import ToyEmbedder
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "2026-W11.md").write_text(
        "# Week 11\n\n## Shipped\n\nThe importer.\n\n## Next week\n\nWhat I do next week: "
        "retro.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=ToyEmbedder()) as store:
        store.sync([Folder.of(vault)], known_at="2026-03-16T10:00:00Z")
        store.embed_pending()
        kw = dict(namespace="notes", as_of="2026-03-18T12:00:00Z", snippets=True)
        found = store.search("what did I do last week", group="note", **kw)
        assert found[0].heading_path[-1] == "Shipped", (found[0].heading_path, found[0].snippet)
        assert found[0].also  # the other section is named
        by_section = store.search("what did I do last week", group="section", **kw)
        assert by_section[0].heading_path[-1] == "Next week"  # nearest in meaning
        retro = store.search("the retro last week", group="note", **kw)
        assert retro[0].heading_path[-1] == "Next week", retro[0].heading_path


def test_a_day_no_calendar_has_is_named_in_a_warning(tmp_path):
    """"29 February 2026", "31 April" name no period (a slip of the finger): the search
    says so, and goes on with the words."""
    from personal_memory.search.dates import impossible_dates
    assert impossible_dates("on 29 February 2026 and 31 April; or 2026-02-30") == [
        "29 February 2026", "31 April", "2026-02-30"]
    for text in ("on 29 February 2024", "March 14", "may 35", "2026-03"):
        assert impossible_dates(text) == [], text
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Rent.md").write_text("# Rent\n\nPaid the April rent.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)])
        found = store.search("rent paid on 31 April", namespace="notes")
        assert [r.note for r in found] == ["v/Rent.md"]
        assert found.warnings == ["31 April is no day of the calendar: searched as plain words"]
        assert store.search("rent paid on 30 April", namespace="notes").warnings == []


def test_a_named_week_or_month_ranks_its_periodic_note_first(tmp_path, utc):
    """A weekly note is about its week and a monthly note about its month: a week or month
    named favours them and the days inside; a day named favours only its daily note."""
    vault = tmp_path / "v"
    for folder in ("Daily", "Weekly", "Monthly"):
        (vault / folder).mkdir(parents=True)
    (vault / "Daily" / "2026-03-10.md").write_text("- shipped the login page\n")
    (vault / "Weekly" / "2026-W11.md").write_text("## Shipped\n- login page, search\n")
    (vault / "Weekly" / "2026-W10.md").write_text("## Shipped\n- billing export\n")
    (vault / "Monthly" / "2026-03.md").write_text("## Goals\n- ship search\n")
    (vault / "Search.md").write_text("# Search\n\nWhat shipped and when.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2026-04-01T10:00:00Z")
        for search in (store.search, store.search_reference):
            found = search("what shipped in week 11", namespace="notes")
            assert found[0].note == "v/Weekly/2026-W11.md", found
            assert "v/Weekly/2026-W10.md" not in [r.note for r in found][:2]
            found = search("what shipped in 2026-W10", namespace="notes")
            assert found[0].note == "v/Weekly/2026-W10.md"
            found = search("goals for March", namespace="notes", valid_at="2026-04-01")
            assert found[0].note == "v/Monthly/2026-03.md"
            found = search("what shipped on March 10", namespace="notes")
            assert found[0].note == "v/Daily/2026-03-10.md"
            assert found[1].score < found[0].score - 0.5  # the week holds the day: no gain
            found = search("what shipped the week of March 9, 2026", namespace="notes")
            assert {r.note for r in found[:2]} == {"v/Weekly/2026-W11.md",
                                                    "v/Daily/2026-03-10.md"}


def test_a_day_without_its_year_means_the_latest_first(tmp_path):
    """Two years of daily notes: "on March 14" is this year's first, last year's next
    (0.9 of the gain), and words can still put last year's first."""
    vault = tmp_path / "v"
    (vault / "Daily").mkdir(parents=True)
    (vault / "Daily" / "2025-03-14.md").write_text("- dentist, then groceries\n")
    (vault / "Daily" / "2026-03-14.md").write_text("- groceries\n")
    (vault / "Other.md").write_text("# Other\n\nNothing dated.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(vault)], known_at="2025-06-01T10:00:00Z")
        for search in (store.search, store.search_reference):
            found = search("groceries on March 14", namespace="notes",
                           valid_at="2026-12-01")
            assert [r.note for r in found][:2] == ["v/Daily/2026-03-14.md",
                                                   "v/Daily/2025-03-14.md"]
            assert [r.dated for r in found][:2] == [ranking.DATED_NOTE,
                                                   ranking.DATED_NOTE * ranking.EARLIER_YEARS]
            found = search("groceries on March 14", namespace="notes",
                           valid_at="2025-12-01")  # asked then: 2025's is the latest
            assert found[0].note == "v/Daily/2025-03-14.md" and found[0].dated == 1.0
            found = search("dentist on March 14", namespace="notes", valid_at="2026-12-01")
            assert found[0].note == "v/Daily/2025-03-14.md"
            found = search("groceries on 14 March 2025", namespace="notes")
            assert found[0].note == "v/Daily/2025-03-14.md"  # a year named is meant


def test_the_periods_named_first():
    from personal_memory.search.dates import periods_named
    at = parse_time("2026-12-05T12:00:00Z")
    named = periods_named("in March, on 14 May 2020, week 11", at)
    assert len(named.periods) == 2 * (2026 - 1969) + 1
    assert [(format_time(a)[:10], format_time(b)[:10]) for a, b in named.latest] == [
        ("2026-03-01", "2026-04-01"), ("2020-05-14", "2020-05-15"),
        ("2026-03-09", "2026-03-16")]
    assert not periods_named("nothing dated", at) and periods_named("today", at)


def test_a_row_about_the_day_named_is_not_held_back_by_its_meaning():
    """Its meaning counts when it helps, never below nothing: a daily note unlike the
    question's words ('what did I do yesterday?') keeps what the day gives it."""
    far = ranking.fused_score(None, 1.0, 0.70, 0.80, 0.90, dated=ranking.DATED_NOTE)
    near = ranking.fused_score(None, 1.0, 0.85, 0.80, 0.90, dated=ranking.DATED_NOTE)
    assert far == ranking.DATED_NOTE and near > ranking.DATED_NOTE
    assert ranking.fused_score(None, 1.0, 0.70, 0.80, 0.90) < 0  # undated: as before


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(1, 30)), max_size=8),
       st.lists(st.tuples(st.integers(-60, 90), st.integers(1, 40)), max_size=40))
def test_the_fast_paths_mask_is_the_rule(spans_, rows):
    """The fast path's binary search over merged periods equals :func:`periods.inside`,
    which is checked here against a span held day by day by one period or by periods
    that meet."""
    import numpy as np
    from personal_memory.search.periods import inside, periods_mask
    periods = tuple((a, a + n) for a, n in spans_)
    starts = np.array([a for a, _ in rows], dtype=np.int64)
    ends = np.array([a + n for a, n in rows], dtype=np.int64)
    mask = periods_mask(starts, ends, periods)
    assert mask.tolist() == [inside((a, a + n), periods) for a, n in rows]
    for a, n in rows:  # held whole: periods from one holding its start reach its end
        reach, grown = a, True
        while grown:
            grown = False
            for p, q in periods:
                if p <= reach < q:
                    reach, grown = q, True
        assert inside((a, a + n), periods) == (reach >= a + n)
