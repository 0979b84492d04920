"""Days and months a query names with their year favour the memories valid from then."""

import subprocess
import sys

from hypothesis import given, settings, strategies as st

from personal_memory import MemoryStore
from personal_memory.search import ranking
from personal_memory.search.dates import named_periods
from personal_memory.times import format_time


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
    for text in ("version 1.2.2023.5", "3.14.2023", "12.10.20234", "2023年13月"):
        assert named_periods(text) == (), text


def test_no_year_or_no_such_day_names_nothing():
    for text in ("May I export my notes?", "in March", "June 12", "31 February 2023",
                 "2023-13-01", "route 2023", "12 Mayday 2020", "0000-01-01"):
        assert named_periods(text) == (), text


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_read_without_error(text):
    for start, end in named_periods(text):
        assert start < end


def test_hostile_text_is_read_in_linear_time():
    """Each fragment that could make a pattern backtrack, repeated to half a megabyte (a
    query holds 1,000 characters at most): linear, all of them take a few seconds; a
    quadratic pattern would take hours. The timeout is generous on purpose."""
    code = ("import sys\nfrom personal_memory.search.dates import named_periods\n"
            "for unit in sys.argv[1:]:\n"
            "    named_periods(unit * (512 * 1024 // len(unit)))\n"
            "print('done')\n")
    units = ["1 ", "12 May ", "May 1", "2020-", "1st of ", "Oct. ", "2023年 ", "1.1.",
             "2023년 1", " "]
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


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(1, 30)), max_size=8),
       st.lists(st.integers(-60, 90), max_size=40))
def test_the_fast_paths_mask_is_the_rule(spans_, times):
    """The fast path's binary search over merged periods equals :func:`dates.inside`."""
    import numpy as np
    from personal_memory.search.dates import inside, periods_mask
    periods = tuple((a, a + n) for a, n in spans_)
    mask = periods_mask(np.array(times, dtype=np.int64), periods)
    assert mask.tolist() == [inside(t, periods) for t in times]
