"""Temporal behaviour of the store through the public API."""

import apsw
import pytest

from personal_memory import MemoryStore
from personal_memory.errors import (InvalidArgument, InvalidTime, NotFound,
                                    ReadOnlyError, SchemaError)
from personal_memory import times
from support import ids

NS = "t"


def contents(results):
    return [r.content for r in results]


def test_later_revision_replaces_earlier_only_from_its_known_at(store):
    store.remember("role", "I prefer equity research.", namespace=NS, known_at="2025-01-01")
    store.remember("role", "I prefer quantitative trading.", namespace=NS, known_at="2025-03-01")
    assert contents(store.search("prefer", namespace=NS, as_of="2025-02-01")) == [
        "I prefer equity research."]
    assert contents(store.search("prefer", namespace=NS, as_of="2025-03-01")) == [
        "I prefer quantitative trading."]
    assert store.search("prefer", namespace=NS, as_of="2024-12-31T23:59:59.999999Z") == []


def test_retroactive_bounded_correction_is_an_interval_overlay(store):
    store.remember("city", "Lives in Lisbon.", namespace=NS, known_at="2025-01-01",
                   valid_from="2024-01-01")
    # Learned in June that during March the person lived in Porto.
    store.remember("city", "Lives in Porto.", namespace=NS, known_at="2025-06-01",
                   valid_from="2024-03-01", valid_to="2024-04-01")
    ask = lambda as_of, at: contents(store.search("lives", namespace=NS, as_of=as_of, valid_at=at))
    assert ask("2025-05-01", "2024-03-15") == ["Lives in Lisbon."]  # not yet known
    assert ask("2025-07-01", "2024-03-15") == ["Lives in Porto."]
    assert ask("2025-07-01", "2024-02-29") == ["Lives in Lisbon."]  # outside the overlay
    assert ask("2025-07-01", "2024-04-01") == ["Lives in Lisbon."]  # valid_to is exclusive
    assert ask("2025-07-01", "2024-03-01") == ["Lives in Porto."]  # valid_from is inclusive
    assert ask("2025-07-01", "2025-07-01") == ["Lives in Lisbon."]


def test_validity_boundaries_and_defaults(store):
    rec = store.remember("x", "bounded fact", namespace=NS, known_at="2025-01-01",
                         valid_from="2025-01-10", valid_to="2025-01-20")
    assert rec.valid_from == "2025-01-10T00:00:00Z" and rec.valid_to == "2025-01-20T00:00:00Z"
    at = lambda v: ids(store.search("bounded", namespace=NS, as_of="2025-02-01", valid_at=v))
    assert at("2025-01-09T23:59:59.999999Z") == []
    assert at("2025-01-10") == ["x"]
    assert at("2025-01-19T23:59:59.999999Z") == ["x"]
    assert at("2025-01-20") == []
    # valid_at defaults to the cutoff
    assert ids(store.search("bounded", namespace=NS, as_of="2025-01-15")) == ["x"]
    # valid_from defaults to known_at
    rec = store.remember("y", "open fact", namespace=NS, known_at="2025-01-05")
    assert rec.valid_from == rec.known_at == "2025-01-05T00:00:00Z" and rec.valid_to is None
    with pytest.raises(InvalidArgument, match="valid_to"):
        store.remember("z", "bad", namespace=NS, valid_from="2025-01-02", valid_to="2025-01-02")


def test_deletion_keeps_history_searchable_before_it(store):
    store.remember("a", "the alpha plan", namespace=NS, known_at="2025-01-01")
    tomb = store.forget("a", namespace=NS, known_at="2025-02-01")
    assert tomb.deleted and tomb.hides_revision is not None and tomb.content == ""
    assert ids(store.search("alpha", namespace=NS, as_of="2025-01-15")) == ["a"]
    assert ids(store.search("alpha", namespace=NS, as_of="2025-02-01")) == []
    assert ids(store.search("alpha", namespace=NS)) == []
    hist = store.history("a", namespace=NS)
    assert [h.deleted for h in hist] == [False, True]
    assert hist[1].hides_revision == hist[0].revision_id
    assert [h.deleted for h in store.history("a", namespace=NS, as_of="2025-01-15")] == [False]
    # re-remembering after a forget brings it back from then on
    store.remember("a", "the alpha plan", namespace=NS, known_at="2025-03-01")
    assert ids(store.search("alpha", namespace=NS, as_of="2025-03-02")) == ["a"]
    assert ids(store.search("alpha", namespace=NS, as_of="2025-02-15")) == []


def test_bounded_forget_hides_only_its_interval(store):
    store.remember("a", "alpha", namespace=NS, known_at="2025-01-01", valid_from="2024-01-01")
    store.forget("a", namespace=NS, known_at="2025-02-01", valid_from="2024-06-01",
                 valid_to="2024-07-01")
    at = lambda v: ids(store.search("alpha", namespace=NS, as_of="2025-03-01", valid_at=v))
    assert at("2024-06-15") == []
    assert at("2024-05-31") == ["a"] and at("2024-07-01") == ["a"]


def test_forget_rules(store):
    with pytest.raises(NotFound, match="'nope'"):
        store.forget("nope", namespace=NS)
    store.remember("a", "alpha", namespace=NS, known_at="2025-01-01")
    first = store.forget("a", namespace=NS, known_at="2025-02-01")
    again = store.forget("a", namespace=NS, known_at="2025-02-02")
    assert again.created is False and again.revision_id == first.revision_id
    inside = store.forget("a", namespace=NS, known_at="2025-03-01", valid_from="2025-02-15",
                          valid_to="2025-02-20")  # hidden then already: the same no-op
    assert inside.created is False and inside.revision_id == first.revision_id
    assert len(store.history("a", namespace=NS)) == 2


def test_identical_remember_is_a_noop(store):
    a = store.remember("a", "alpha", namespace=NS, title="T", source="s")
    b = store.remember("a", "alpha", namespace=NS, title="T", source="s")
    assert b.created is False and b.revision_id == a.revision_id
    c = store.remember("a", "alpha", namespace=NS, title="Other", source="s")
    assert c.created is True
    d = store.remember("a", "alpha", namespace=NS, title="T", source="s")
    assert d.created is True  # the T version was no longer the visible one
    assert len(store.history("a", namespace=NS)) == 3


def test_namespaces_are_isolated(store):
    store.remember("a", "shared words here", namespace="one")
    store.remember("a", "shared words here too", namespace="two")
    store.remember("b", "shared", namespace="two")
    assert ids(store.search("shared", namespace="one")) == ["a"]
    assert sorted(ids(store.search("shared", namespace="two"))) == ["a", "b"]
    store.forget("a", namespace="one")
    assert ids(store.search("shared", namespace="one")) == []
    assert "a" in ids(store.search("shared", namespace="two"))
    with pytest.raises(NotFound):
        store.history("b", namespace="one")


def test_clock_known_at_is_strictly_increasing_even_if_clock_steps_back(store, monkeypatch):
    monkeypatch.setattr(times, "now_micros", lambda: 1_700_000_000_000_000)
    a = store.remember("a", "one", namespace=NS)
    # A step back within the tolerance (NTP, a suspended laptop): still strictly increasing.
    monkeypatch.setattr(times, "now_micros", lambda: 1_700_000_000_000_000 - 60_000_000)
    b = store.remember("b", "two", namespace=NS)
    c = store.forget("a", namespace=NS)
    stamps = [times.parse_time(r.known_at) for r in (a, b, c)]
    assert stamps[0] < stamps[1] < stamps[2]
    assert stamps[1] == stamps[0] + 1


def test_revisions_are_append_only(store, db_path):
    store.remember("a", "alpha", namespace=NS)
    conn = apsw.Connection(db_path)
    with pytest.raises(apsw.ConstraintError, match="append-only"):
        conn.execute("UPDATE revisions SET content = 'x'")
    with pytest.raises(apsw.ConstraintError, match="append-only"):
        conn.execute("DELETE FROM revisions")
    conn.close()


def test_results_carry_provenance_and_scores(store):
    rec = store.remember("a", "alpha beta", namespace=NS, title="Greek", source="notes/a.md",
                         known_at="2025-01-01")
    assert store.search("alpha", namespace=NS).unembedded == 1
    store.embed_pending()
    (r,) = found = store.search("alpha", namespace=NS)
    assert found.unembedded == 0 and found.semantic == "toy/1"
    d = r.to_dict()
    expected = rec.revision.to_dict()
    assert d == expected | {"score": r.score, "bm25": r.bm25, "bm25_rank": 1,
                                 "cosine": r.cosine, "cosine_rank": 1, "dated": 0.0,
                                 "linked": 0.0, "matched_lines": [1, 1]} and "created" not in d
    assert (d["memory_id"], d["known_at"], d["valid_to"]) == ("a", "2025-01-01T00:00:00Z", None)
    assert r.revision_id == rec.revision_id and r.content_hash == rec.content_hash
    assert len(r.content_hash) == 64 and r.source == "notes/a.md" and r.title == "Greek"
    assert r.bm25 > 0 and r.bm25_rank == 1 and r.cosine_rank == 1 and 0 < r.cosine <= 1
    # One row: it is its own best keyword match (0.4) and its own median cosine (+0).
    assert r.score == pytest.approx(0.4)


def test_unmatched_rows_have_no_bm25(store):
    store.remember("a", "alpha beta", namespace=NS)
    store.remember("b", "gamma delta", namespace=NS)
    results = store.search("alpha", namespace=NS)
    assert ids(results) == ["a"]
    assert store.search("zeta", namespace=NS) == []


@pytest.mark.parametrize("bad, msg, error", [
    ({"query": ""}, "query", InvalidArgument), ({"query": "x" * 1001}, "query", InvalidArgument),
    ({"limit": 0}, "limit", InvalidArgument), ({"limit": True}, "limit", InvalidArgument),
    ({"as_of": "tomorrow"}, "as_of", InvalidTime),
    ({"valid_at": "2025-01-01T10:00"}, "valid_at", InvalidTime),
    ({"namespace": ""}, "namespace", InvalidArgument),
])
def test_bad_search_arguments(store, bad, msg, error):
    kwargs = {"query": "alpha", "namespace": NS} | bad
    with pytest.raises(error) as err:
        store.search(kwargs.pop("query"), **kwargs)
    assert str(err.value).startswith(msg)


def test_schema_guards(tmp_path, db_path):
    foreign = tmp_path / "foreign.db"
    conn = apsw.Connection(str(foreign))
    conn.execute("CREATE TABLE other (x)")
    conn.close()
    with pytest.raises(SchemaError, match="another application"):
        MemoryStore.open(foreign)
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a database at all" * 100)
    with pytest.raises(SchemaError, match="not a SQLite database"):
        MemoryStore.open(text)
    MemoryStore.open(db_path).close()
    conn = apsw.Connection(db_path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(SchemaError, match="newer"):
        MemoryStore.open(db_path, read_only=True)


def test_vectors_of_another_model_version_are_never_compared(db_path):
    from ground_truth import ToyEmbedder

    class NextVersion(ToyEmbedder):
        version = "2"
    with MemoryStore.open(db_path, embedder=ToyEmbedder()) as old:
        for i in range(3):
            old.remember(f"m{i}", f"alpha text {i}", namespace=NS)
        assert old.embed_pending().embedded == 3
    with MemoryStore.open(db_path, embedder=NextVersion()) as new:
        found = new.search("alpha", namespace=NS)
        assert found.unembedded == 3 and all(r.cosine is None for r in found)
        assert new.pending_vectors() == 3
        rebuilt = new.reembed()
        assert rebuilt.dropped == 3 and rebuilt.embedded == 3
        assert rebuilt.remaining == 0 and new.health().vectors == {"toy/2": 3}
        assert all(r.cosine is not None for r in new.search("alpha", namespace=NS))


def test_read_only_store(db_path, tmp_path):
    with pytest.raises(NotFound, match="does not exist"):
        MemoryStore.open(db_path, read_only=True)
    import os
    assert not os.path.exists(db_path)
    with MemoryStore.open(db_path) as s:
        s.remember("a", "alpha", namespace=NS)
    os.chmod(db_path, 0o444)
    try:
        with MemoryStore.open(db_path, read_only=True) as ro:
            assert ids(ro.search("alpha", namespace=NS)) == ["a"]
            with pytest.raises(ReadOnlyError, match="read-only"):
                ro.remember("b", "beta", namespace=NS)
    finally:
        os.chmod(db_path, 0o644)


def test_a_cutoff_after_now_is_now_and_says_so(tmp_path):
    """A cutoff in the future means now: the time used is echoed, and asking again with it
    later gives the same answer, whatever arrived since."""
    from personal_memory.times import parse_time
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.remember("a", "alpha one", namespace="n", known_at="2025-01-01")
        found = store.search("alpha", namespace="n", as_of="2999-01-01")
        assert found.as_of is not None and parse_time(found.as_of) < parse_time("2999-01-01")
        store.remember("b", "alpha two", namespace="n")
        assert [r.memory_id for r in store.search("alpha", namespace="n",
                                                   as_of=found.as_of)] == ["a"]
        assert len(store.search("alpha", namespace="n", as_of="2999-01-01")) == 2
        view = store.history("a", namespace="n", as_of="2999-12-31")
        assert len(view) == 1
        # the export and the changes up to a future time echo now, and answer alike later
        doc = store.export_document(namespace="n", as_of="2999-01-01")
        moved = store.changes(namespace="n", since="2024-12-31", until="2999-01-01")
        assert parse_time(doc["as_of"]) < parse_time("2999-01-01") and len(doc["revisions"]) == 2
        assert parse_time(moved.until) < parse_time("2999-01-01")
        store.remember("c", "alpha three", namespace="n")
        again = store.export_document(namespace="n", as_of=doc["as_of"])
        assert again["as_of"] == doc["as_of"] and len(again["revisions"]) == 2
        assert store.changes(namespace="n", since="2024-12-31",
                             until=moved.until).counts == moved.counts


def test_the_echoed_cutoff_keeps_its_fraction_of_a_second(tmp_path):
    """Two cutoffs within one second can give two answers: each is echoed exactly."""
    from support import run_memory
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.remember("z", "port 5432", namespace="notes", known_at="2025-01-01T09:00:00Z")
        store.remember("a", "port 5433", namespace="notes", known_at="2025-01-01T10:00:00.500Z")
    early = run_memory("--db", db, "search", "port", "--as-of", "2025-01-01T10:00:00.3Z").stdout
    late = run_memory("--db", db, "search", "port", "--as-of", "2025-01-01T10:00:00.9Z").stdout
    assert "as of 2025-01-01 10:00:00.3 UTC" in early and "5433" not in early
    assert "as of 2025-01-01 10:00:00.9 UTC" in late and "5433" in late
    whole = run_memory("--db", db, "search", "port", "--as-of", "2025-01-02T00:00:00Z").stdout
    assert "as of 2025-01-02 00:00:00 UTC" in whole


def test_numbers_from_numpy_are_whole_numbers_and_bad_sizes_are_refused(store):
    """A notebook's limit comes out of numpy or pandas; a batch of 0 did nothing silently."""
    import numpy as np
    store.remember("a", "alpha", namespace=NS)
    assert ids(store.search("alpha", namespace=NS, limit=np.int64(5))) == ["a"]
    for bad in ({"batch_size": 0}, {"batch_size": -1}, {"batch_size": 2.0},
                {"max_rows": -1}):
        with pytest.raises(InvalidArgument, match=next(iter(bad))):
            store.embed_pending(**bad)
    for bad in (np.float64(5), "5", 5.0):
        with pytest.raises(InvalidArgument, match="limit"):
            store.search("alpha", namespace=NS, limit=bad)
