"""One visibility rule: every read agrees with a brute-force oracle on random histories of
writes, forgets, bounded corrections and purges; a purged memory is a hole for get,
forget, search and history, as a user meets it."""

import json
import os
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

import ground_truth as gt
from ground_truth import ToyEmbedder
from personal_memory import MemoryStore

from personal_memory.times import format_time
from support import run_memory
from test_properties import DAY, T0, apply, event, revs_of

MEMORIES = ["m0", "m1", "m2", "m3", "m4", "m5"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(event, min_size=1, max_size=30),
       points=st.lists(st.tuples(st.integers(-2, 70), st.integers(-50, 10)), min_size=1,
                       max_size=6),
       purges=st.lists(st.tuples(st.sampled_from(MEMORIES), st.sampled_from(["a", "b"])),
                       max_size=3))
def test_every_read_agrees_with_the_oracle(events, points, purges):
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder=ToyEmbedder()) as store:
            apply(store, sorted(events, key=lambda e: e[4]))
            for mid, ns in purges:  # purges of whole memories, after everything was written
                store.purge(namespace=ns, memory_id=mid)
            store.embed_pending()
            revs = revs_of(store)
            for day, shift in points:
                as_of, at = T0 + day * DAY, T0 + (day + shift) * DAY
                for ns in ("a", "b"):
                    want = {r.memory_id: r.id for r in gt.visible(revs, ns, as_of, at)}
                    got = {}
                    for m in MEMORIES:
                        rec = store.get(m, namespace=ns, as_of=format_time(as_of),
                                        valid_at=format_time(at))
                        if rec is not None:
                            got[m] = rec.revision_id
                    assert got == want
                    # Every visible memory takes part in a search for the visible titles,
                    # and nothing hidden does in a search for the others' (both paths;
                    # apart, since a query most of whose words no row holds is answered
                    # by meaning alone).
                    kw = dict(namespace=ns, as_of=format_time(as_of),
                              valid_at=format_time(at), limit=50)
                    hidden = [m for m in MEMORIES if m not in want]
                    for query, expect in ((" ".join(want), want), (" ".join(hidden), {})):
                        if not query:
                            continue
                        for found in (store.search(query, **kw),
                                      store.search_reference(query, **kw)):
                            hits = {r.memory_id: r.revision_id for r in found
                                    if r.bm25 is not None}
                            assert hits == expect
                            assert found.unembedded == 0


def test_a_purged_memory_is_a_hole_for_get_forget_and_history(tmp_path):
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "remember", "a", "secret plan", "-n", "n").returncode == 0
    p = run_memory("--db", db, "purge", "--id", "a", "-n", "n", "--reason", "mistake", "--yes")
    assert p.returncode == 0, p.stderr
    with MemoryStore.open(db, embedder="none") as store:
        assert store.get("a", namespace="n") is None
        again = store.forget("a", namespace="n")  # hidden already: a no-op, as a repeat
        assert again.created is False and again.revision.purged is not None
        (stub,) = store.history("a", namespace="n")
        assert stub.purged.reason == "mistake" and stub.purged.at.endswith("Z")
    p = run_memory("--db", db, "forget", "a", "-n", "n")
    assert p.returncode == 0 and "hidden then already (purged at" in p.stdout, p.stderr
    assert len(run_memory("--db", db, "history", "a", "-n", "n", "--json").stdout
               .split('"revision_id"')) == 2  # still the stub alone
    out = run_memory("--db", db, "history", "a", "-n", "n").stdout
    assert "PURGED at" in out and "(mistake)" in out
    data = json.loads(run_memory("--db", db, "history", "a", "-n", "n", "--json").stdout)
    assert data[0]["purged"]["at"].endswith("Z") and data[0]["provenance"] is None
    assert "secret" not in run_memory("--db", db, "search", "secret", "-n", "n").stdout
