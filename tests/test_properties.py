"""Randomised checks of the store against the independent ground truth."""

import contextlib
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ground_truth as gt
from ground_truth import ToyEmbedder
from personal_memory import MemoryStore
from personal_memory.arguments import optional_time
from personal_memory.errors import AlreadyHidden, NotFound
from personal_memory.timeline import writes
from personal_memory.times import format_time, parse_time

WORDS = ["apple", "banana", "cherry", "delta", "echo", "fig", "grape", "hotel", "ink", "jade", "15",
         "会議", "東京", "Straße", "café", "coffee"]  # coffee: a stem Porter stems again; 15 a number
DAY = 86_400_000_000
T0 = 1_735_689_600_000_000  # 2025-01-01

# A quarter of the texts ask a question (the turn before a memory lends it more).
text = st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
                 st.sampled_from(["", "", "", "?"])).map("".join)
# Some queries name a day or a month with its year, around the events' valid times.
dated_text = st.tuples(text, st.sampled_from(["", "", " in January 2025", " on 3 February 2025",
                                               " 2025-01-15", " December 2024"])).map("".join)
event = st.tuples(
    st.sampled_from(["remember", "remember", "remember", "forget", "remember", "remember",
                     "remember", "forget", "purge"]),
    st.sampled_from(["m0", "m1", "m2", "m3", "m4", "m5"]),
    st.sampled_from(["a", "a", "b"]),
    text,
    st.integers(0, 60),           # known day
    st.integers(-30, 60),         # valid_from offset in days (None when < -20)
    st.one_of(st.none(), st.integers(1, 40)),  # valid length in days
)


@contextlib.contextmanager
def any_order():
    """Writes known in any order, as earlier versions stored them (this one refuses a
    known_at before the newest revision): the visibility rule must hold on such files."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writes, "known_at_arg",
                   lambda db, value, field="known_at": optional_time(value, field))
        yield


def apply(store, events):
    with any_order():
        _apply(store, events)


def _apply(store, events):
    for kind, mid, ns, body, day, vf, vlen in events:
        known = T0 + day * DAY
        start = None if vf < -20 else T0 + vf * DAY
        end = None if vlen is None else (start if start is not None else known) + vlen * DAY
        kw = dict(namespace=ns, known_at=format_time(known),
                  valid_from=format_time(start), valid_to=format_time(end))
        if kind == "remember":
            store.remember(mid, body, title=mid.upper(), **kw)
        elif kind == "purge":  # erase what was known before this day (vf < 0: all of it)
            store.purge(namespace=ns, memory_id=mid,
                        known_before=None if vf < 0 else format_time(known))
        else:
            try:
                store.forget(mid, **kw)
            except (AlreadyHidden, NotFound):
                pass


def revs_of(store):
    def us(t):
        return None if t is None else parse_time(t)
    return [gt.Rev(r.revision_id, r.namespace, r.memory_id, us(r.known_at), us(r.valid_from),
                   us(r.valid_to), r.deleted, r.title, r.content, r.purged is not None, r.note)
            for r in store.export()]


def answer(store, q, ns, as_of, valid_at):
    return [(r.memory_id, r.score, r.bm25, r.bm25_rank, r.cosine, r.cosine_rank,
             r.revision_id) for r in store.search(q, namespace=ns, as_of=format_time(as_of),
                                                  valid_at=format_time(valid_at), limit=50)]


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(events=st.lists(event, min_size=1, max_size=25),
       later=st.lists(event, min_size=1, max_size=15),
       query=text, cut_day=st.integers(0, 60), at_shift=st.integers(-40, 0),
       ns=st.sampled_from(["a", "b"]))
def test_appending_after_cutoff_never_changes_answers_at_the_cutoff(
        events, later, query, cut_day, at_shift, ns):
    as_of = T0 + cut_day * DAY
    valid_at = as_of + at_shift * DAY
    early = sorted((e for e in events if e[4] <= cut_day), key=lambda e: e[4])
    later = [e for e in later if e[0] != "purge"]  # a purge changes past answers: on purpose
    # every later event is known strictly after the cutoff
    late = sorted(((k, m, n, b, cut_day + 1 + d % 30, vf, vl) for k, m, n, b, d, vf, vl in later),
                  key=lambda e: e[4])
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder=ToyEmbedder()) as store:
            apply(store, early)
            store.embed_pending()
            before = answer(store, query, ns, as_of, valid_at)
            apply(store, late)
            store.embed_pending()  # later vectors join the median and best: never here
            after = answer(store, query, ns, as_of, valid_at)
    assert before == after


@SETTINGS
@given(events=st.lists(event, min_size=1, max_size=30), query=dated_text,
       cut_day=st.integers(0, 70), at_shift=st.integers(-50, 10),
       ns=st.sampled_from(["a", "b"]), embed=st.sampled_from([None, 3, 1000]))
def test_search_equals_independent_ground_truth(events, query, cut_day, at_shift, ns, embed):
    as_of = T0 + cut_day * DAY
    valid_at = as_of + at_shift * DAY
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder=ToyEmbedder()) as store:
            apply(store, sorted(events, key=lambda e: e[4]))
            if embed is not None:
                store.embed_pending(max_rows=embed)
            embedded = {rid for rid, in store._db.execute("SELECT revision_id FROM vectors")}
            got = [a[:6] for a in answer(store, query, ns, as_of, valid_at)]
            want = gt.expected(revs_of(store), query, ns, as_of, valid_at, ToyEmbedder(),
                               embedded)[:50]
    assert [g[0] for g in got] == [w[0] for w in want]
    for g, w in zip(got, want):
        assert abs(g[1] - w[1]) <= 1e-9  # fused score
        assert g[2] == w[2]              # BM25 identical
        assert g[3] == w[3] and g[5] == w[5]
        assert (g[4] is None) == (w[4] is None)
        if g[4] is not None:
            assert abs(g[4] - w[4]) < 1e-9
