from datetime import date, datetime, timedelta, timezone

import pytest

from personal_memory.errors import InvalidTime
from personal_memory.times import format_time, parse_cutoff, parse_time


@pytest.mark.parametrize("text, expected", [
    ("2025-02-01", "2025-02-01T00:00:00Z"),
    ("2025-02-01T09:30:00Z", "2025-02-01T09:30:00Z"),
    ("2025-02-01T09:30Z", "2025-02-01T09:30:00Z"),
    ("2025-02-01 09:30:00+02:00", "2025-02-01T07:30:00Z"),
    ("2025-02-01T09:30:00.5-0130", "2025-02-01T11:00:00.500000Z"),
    ("2025-02-01T09:30:00.123456z", "2025-02-01T09:30:00.123456Z"),
    ("2025-01-01T00:30:00+01:00", "2024-12-31T23:30:00Z"),
    ("0001-01-01", "0001-01-01T00:00:00Z"),
    ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
    ("14.03.2026", "2026-03-14T00:00:00Z"),  # day first, as German writes it
    ("1.3.2026", "2026-03-01T00:00:00Z"),
])
def test_accepted_forms_normalise_to_utc_microseconds(text, expected):
    assert format_time(parse_time(text)) == expected


@pytest.mark.parametrize("text, fragment", [
    ("2025-02-01T09:30:00", "no timezone"),
    ("2025-02-01T09:30:00.1234567Z", "sub-microsecond"),
    ("2025-13-01", "out of range"),
    ("2025-02-30", "out of range"),
    ("yesterday", "not a date"),
    ("20250201", "not a date"),
    ("2025-02-01T25:00:00Z", "out of range"),
    ("0001-01-01T00:00:00+01:00", "outside years"),
    ("9999-12-31T23:59:59-01:00", "outside years"),
    ("2025-02-01T09:00:00+24:00", "invalid UTC offset"),
    ("", "not a date"),
    ("31.02.2026", "out of range"),
    ("1.2.26", "not a date"),
    ("١٤.٠٣.٢٠٢٦", "not a date"),
])
def test_rejected_forms_name_the_problem(text, fragment):
    with pytest.raises(InvalidTime) as err:
        parse_time(text, "as_of")
    assert fragment in str(err.value)
    assert str(err.value).startswith("as_of:")


def test_datetime_objects():
    aware = datetime(2025, 2, 1, 12, tzinfo=timezone(timedelta(hours=-5)))
    assert format_time(parse_time(aware)) == "2025-02-01T17:00:00Z"
    assert format_time(parse_time(date(2025, 2, 1))) == "2025-02-01T00:00:00Z"
    with pytest.raises(InvalidTime, match="no timezone"):
        parse_time(datetime(2025, 2, 1))
    with pytest.raises(InvalidTime, match="expected an ISO 8601 string"):
        parse_time(20250201)


def test_round_trip_keeps_microseconds():
    for us in (0, 1, 999_999, 1_700_000_000_123_456, -1):
        assert parse_time(format_time(us)) == us


def test_a_day_as_a_cutoff_means_its_end():
    assert format_time(parse_cutoff("2025-02-14")) == "2025-02-14T23:59:59.999999Z"
    assert format_time(parse_cutoff(date(2025, 2, 14))) == "2025-02-14T23:59:59.999999Z"
    assert format_time(parse_cutoff("9999-12-31")) == "9999-12-31T23:59:59.999999Z"
    # a time given in full is taken as it is
    assert format_time(parse_cutoff("2025-02-14T00:00:00Z")) == "2025-02-14T00:00:00Z"
    with pytest.raises(InvalidTime, match=r"^as_of: .*out of range \([^)]*\)$"):
        parse_cutoff("2025-02-30")  # a date, wrong: no "or a span back from now"
    with pytest.raises(InvalidTime, match=r"has no timezone; add 'Z' or an offset like \+02:00$"):
        parse_cutoff("2025-02-14T10:00")
    with pytest.raises(InvalidTime, match="is not a date .*, or a span back from now such as"):
        parse_cutoff("last tuesdayish")
    # a span, too long for the calendar: said so, not "not a span"
    for span in ("99999999999d", "1000000000000s", "3000000w"):
        with pytest.raises(InvalidTime, match=f"^as_of: '{span}' is outside years 0001 to 9999"):
            parse_cutoff(span)


def test_a_search_as_of_a_day_sees_what_was_learnt_that_day(tmp_path):
    from personal_memory import MemoryStore
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.remember("a", "quokka seen at noon", namespace="n",
                       known_at="2025-02-14T12:00:00Z")
        store.remember("b", "quokka seen the next morning", namespace="n",
                       known_at="2025-02-15T00:00:00Z")
        found = store.search("quokka", namespace="n", as_of="2025-02-14")
        assert [r.memory_id for r in found] == ["a"]
        assert found.as_of == "2025-02-14T23:59:59.999999Z"
        assert [r.memory_id for r in store.search("quokka", namespace="n",
                                                  as_of="2025-02-15")] != ["a"]


def test_a_cutoff_before_anything_was_known_says_when_knowledge_begins(tmp_path):
    from personal_memory import MemoryStore
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.remember("a", "quokka seen", namespace="n", known_at="2025-02-14T12:00:00Z")
        early = store.search("quokka", namespace="n", as_of="2025-02-13")
        assert not early and early.earliest == "2025-02-14T12:00:00Z"
        assert "nothing was known yet at 2025-02-13T23:59:59.999999Z" in early.no_answer
        later = store.search("wombat", namespace="n", as_of="2025-03-01")
        assert not later and later.earliest is None  # known things, none of them fits
        # a namespace that holds nothing (a misspelt one) names those that hold something
        for search in (store.search, store.search_reference):
            for as_of in ("2025-03-01", None):
                empty = search("quokka", namespace="N", as_of=as_of)
                assert empty.no_answer == "nothing is known in namespace 'N'; this " \
                    "database holds 'n'", as_of
