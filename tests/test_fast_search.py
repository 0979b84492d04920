"""The fast search path must give the reference path's answers, exactly: the same memories
in the same order with the same ranks, scores equal within the fused tie rule (1e-9), the
same count of rows without a vector and the same no-answer reason."""

import os
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from ground_truth import ToyEmbedder
from personal_memory import MemoryStore
from personal_memory.search.ranking import bm25_tied, competition_ranks, competition_ranks_array, cosine_tied
from personal_memory.times import format_time
from test_properties import DAY, T0, apply, event, text


def same(fast, ref):
    assert [r.memory_id for r in fast] == [r.memory_id for r in ref]
    assert (fast.unembedded, fast.no_answer, fast.left_out) == (ref.unembedded, ref.no_answer,
                                                                ref.left_out)
    assert fast.missing == ref.missing
    for a, b in zip(fast, ref):
        assert a.revision_id == b.revision_id and abs(a.score - b.score) <= 1e-9
        assert a.bm25_rank == b.bm25_rank and a.cosine_rank == b.cosine_rank
        assert (a.bm25 is None) == (b.bm25 is None)
        if a.bm25 is not None:
            assert bm25_tied(a.bm25, b.bm25)
        assert (a.cosine is None) == (b.cosine is None)
        if a.cosine is not None:
            assert cosine_tied(a.cosine, b.cosine)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.lists(event, min_size=1, max_size=30), second=st.lists(event, max_size=15),
       queries=st.lists(st.tuples(text, st.integers(0, 70), st.integers(-50, 10),
                                  st.sampled_from(["a", "b"]), st.booleans(),
                                  st.integers(1, 20)), min_size=1, max_size=4),
       embed=st.lists(st.sampled_from([None, 0, 2, 5, 1000]), min_size=2, max_size=2))
def test_fast_path_equals_reference(first, second, queries, embed):
    """Random histories, cutoffs and valid times, with none, some (the newest) or all of
    the revisions embedded before each round of searches."""
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder=ToyEmbedder()) as store:
            for batch, rows in zip((first, second), embed):  # the index refreshes between
                apply(store, sorted(batch, key=lambda e: e[4]))
                if rows is not None:
                    store.embed_pending(max_rows=rows)
                for q, day, shift, ns, now, limit in queries:
                    as_of = None if now else format_time(T0 + day * DAY)
                    valid_at = None if now else format_time(T0 + (day + shift) * DAY)
                    kw = dict(namespace=ns, as_of=as_of, valid_at=valid_at, limit=limit)
                    same(store.search(q, **kw), store.search_reference(q, **kw))


def test_fast_path_on_a_larger_random_corpus(tmp_path):
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from corpus import Corpus, SyntheticEmbedder, load
    corpus = Corpus(seed=3)
    writes = corpus.writes(3000)
    # 384 dimensions with similarities as dense as a real model's: the float32 screening
    # of the fast path must still find the exact answer.
    with MemoryStore.open(tmp_path / "m.db", embedder=SyntheticEmbedder()) as store:
        load(store, writes[:2000])
        store.embed_pending(batch_size=500)
        qs = corpus.queries(60)
        for q in qs[:30]:
            kw = dict(namespace="notes", as_of=format_time(q["as_of"]),
                      valid_at=format_time(q["valid_at"]), limit=20)
            same(store.search(q["query"], **kw), store.search_reference(q["query"], **kw))
        load(store, writes[2000:])  # appended while the index is warm
        store.embed_pending(max_rows=600, batch_size=300)  # some of them embedded
        for q in qs[30:]:
            kw = dict(namespace="notes", as_of=format_time(q["as_of"]),
                      valid_at=format_time(q["valid_at"]), limit=20)
            same(store.search(q["query"], **kw), store.search_reference(q["query"], **kw))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.5, 0.5 + 4e-7, 0.5 + 8e-7, 0.5 + 1.3e-6, 0.3, 0.9,
                                 0.9 - 9e-7, 2.0, 2.0 + 1e-9, 2.0 + 3e-9]), max_size=30),
       st.booleans())
def test_vectorised_ranks_equal_the_reference(scores, bm25):
    import numpy as np
    tied = bm25_tied if bm25 else cosine_tied
    ref = competition_ranks(list(enumerate(scores)), tied)
    fast = competition_ranks_array(np.array(scores, dtype=float), tied)
    assert [ref[i] for i in range(len(scores))] == fast.tolist()


HEADINGS = ["Plan", "Notes", "Plan", "Risks", "Links"]
# File names with words of the notes, in a title (first heading) or not: a name's words the
# title lacks are indexed with it, as the other properties are with the first section.
NAMES = ["n0", "apple plan", "Straße café", "ink-jade", "coffee"]
note_version = st.tuples(
    st.integers(0, 4),                                      # which note
    st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(HEADINGS), text,
                                            st.sampled_from(["", " #work", " [[x|fig]]"])),
                                  max_size=4)),             # None: the note is deleted
    st.lists(st.sampled_from(["work", "home", "work/deep"]), max_size=2),  # front matter
    st.sampled_from(["", "# Plan\n\n", "# apple jade\n\n", "# Coffee\n\n"]),  # title
    st.sampled_from(["", "author: grape Straße\n", "owner: '[[hotel]]'\nyear: 2024\n"]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.lists(note_version, min_size=1, max_size=4), min_size=1, max_size=4),
       queries=st.lists(st.tuples(text, st.integers(0, 5), st.booleans(),
                                  st.sampled_from([None, ["work"], ["home", "work/deep"],
                                                   ["none"]])), min_size=1, max_size=4))
def test_fast_path_equals_reference_on_synced_notes_with_tags(steps, queries):
    """Note records are never ranked, and the tags filter picks the same rows on both
    paths, at every cutoff (a tag added or removed later changes nothing before)."""
    from pathlib import Path
    from personal_memory.notes.folders import Folder
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "v"
        vault.mkdir()
        (vault / "anchor.md").write_text("anchor\n")  # the folder never looks emptied
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder=ToyEmbedder()) as store:
            for day, step in enumerate(steps):
                for which, body, tags, title, properties in step:
                    path = vault / f"{NAMES[which]}.md"
                    if body is None:
                        path.unlink(missing_ok=True)
                        continue
                    front = (f"tags: [{', '.join(tags)}]\n" if tags else "") + properties
                    head = f"---\n{front}---\n" if front else ""
                    path.write_text(head + title + "".join(f"## {h}\n\n{words}{extra}\n\n"
                                                   for h, words, extra in body))
                store.sync([Folder.of(vault)], known_at=format_time(T0 + day * DAY),
                           allow_mass_delete=True, full=True)
                store.embed_pending()
                for q, at_day, now, tags in queries:
                    kw = dict(namespace="notes", tags=tags, limit=50,
                              as_of=None if now else format_time(T0 + at_day * DAY))
                    fast, ref = store.search(q, **kw), store.search_reference(q, **kw)
                    same(fast, ref)
                    assert all(not r.memory_id.endswith("#") for r in fast)


def test_a_grouped_search_scores_once_however_deep_it_reads(tmp_path, monkeypatch):
    """Grouping reads the ranking deeper while it finds too few notes: each depth is fused
    again from one scoring, and the groups are those of the reference path's whole
    ranked list, with its scores."""
    import random

    from personal_memory.notes.folders import Folder
    from personal_memory.search import grouping, syntax
    from personal_memory.search.in_memory import SearchIndex
    rng = random.Random(7)
    words = ["amber", "birch", "cedar", "delta", "ember", "fjord"]
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "big.md").write_text("# Big\n\n" + "\n\n".join(
        f"## S{k}\n\namber birch amber {k}" for k in range(30)) + "\n")
    for n in range(12):
        (vault / f"n{n}.md").write_text(f"# N{n}\n\n" + " ".join(
            rng.choices(words, k=rng.randint(3, 30))) + "\n")
    calls = {"_score": 0, "_fused": 0}
    for name in calls:
        real = getattr(SearchIndex, name)

        def counted(self, *a, _real=real, _name=name, **kw):
            calls[_name] += 1
            return _real(self, *a, **kw)
        monkeypatch.setattr(SearchIndex, name, counted)
    with MemoryStore.open(tmp_path / "m.db", embedder=ToyEmbedder()) as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        s.embed_pending()
        deeper = 0
        for query in ("amber", "amber birch", "cedar fjord", "delta amber ember"):
            every = list(s.search_reference(query, namespace="notes", limit=1000))
            for limit in (1, 4, 9):
                calls.update(_score=0, _fused=0)
                got = s.search(query, namespace="notes", limit=limit, group="note")
                key = grouping.key_for("note", syntax.parse(query), every)
                want = [g[0] for g in grouping.groups(every, limit, key)]
                assert [r.memory_id for r in got] == [r.memory_id for r in want]
                assert all(abs(a.score - b.score) <= 1e-9 for a, b in zip(got, want))
                assert calls["_score"] == 1
                deeper += calls["_fused"] > 1
        assert deeper  # some answer needed a deeper window


def test_words_whose_stem_stems_again_match_in_both_paths(tmp_path):
    """Porter turns "coffee" into "coffe" and "coffe" into "coff": the reference path
    matches the index's terms as themselves, never stemming a stemmed term again."""
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        for i, text in enumerate(["coffee at the lake", "generalization of agreed terms",
                                  "the lake was cold", "we agreed on coffee"]):
            store.remember(f"m{i}", text, namespace="n")
        for query in ("coffee", "agreed generalization", "lake coffee"):
            fast = store.search(query, namespace="n")
            ref = store.search_reference(query, namespace="n")
            assert [(r.memory_id, r.bm25) for r in fast] == [(r.memory_id, r.bm25) for r in ref]
            assert fast and all(r.bm25 for r in fast)


def test_a_revision_the_read_could_not_see_is_waited_for_not_lost(tmp_path, monkeypatch):
    """Ids are dense: a read that shows a later revision but not an earlier one (a
    replica's reader given a stale page) loads up to the hole and takes the rest on a
    later search, so the hidden revision is not lost from the index for good; a hole that
    stays (a log an older version left so) is taken as one after a while."""
    from personal_memory.search import in_memory
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        for i, word in enumerate(["alpha", "bravo", "charlie", "delta", "echo"]):
            store.remember(f"m{i}", word, namespace="notes",
                           known_at=format_time(T0 + i * DAY))
        index, db = store._search_index(), store._db
        real = db.revision_meta_since
        hidden = lambda last: (r for r in real(last) if r[0] != 4)  # noqa: E731
        monkeypatch.setattr(db, "revision_meta_since", hidden)
        with db.snapshot():
            index.refresh(db)
        assert index.last_id == 3
        monkeypatch.setattr(db, "revision_meta_since", real)
        assert [r.memory_id for r in store.search("delta", namespace="notes")] == ["m3"]
        assert index.last_id == 5
        index._reset()
        monkeypatch.setattr(db, "revision_meta_since", hidden)
        monkeypatch.setattr(in_memory, "GAP_PATIENCE_SECONDS", 0.0)
        with db.snapshot():
            index.refresh(db)
        assert index.last_id == 5  # a hole that stays is passed


# Texts with dates written in numbers and in words, their numbers alone and in other
# orders: a date's phrase is held only where its numbers are written together, in order,
# or where the same day is written another way ("15 January", "Jan 15th", "15. Januar");
# "yesterday", asked on 2026-02-05, is 4 February 2026 written any way.
DATE_PIECES = ["2025-01-15", "2025", "01", "15", "15/01", "15.01.2025", "2025-01-15 2025-01-15",
               "01 15 2025", "apple", "echo", "15 15", "2025-01", "January 15", "15th of January",
               "15. Januar", "Jan 15th", "January 2025", "1/15/2025", "15 de enero", "January",
               "2025/01/15", "the fifteenth of January", "2026-02-04", "4. Februar",
               "February 4th"]
dated_text = st.lists(st.sampled_from(DATE_PIECES), min_size=1, max_size=6).map(" ".join)
date_query = st.sampled_from(["what happened on 2025-01-15", "apple 2025-01-15", "15.01.2025",
                              "on 15/01 echo", "2025-01 apple 2025", "15 15", "2025-01-15 15",
                              "between 2025-01-15 and 2025-01-16", "what did I do on January 15",
                              "15 January 2025 apple", "in January 2025", "am 15.01. echo",
                              "the fifteenth of January 2025", "Mi 15.1.25 apple",
                              "what did I do yesterday", "yesterday apple",
                              " ".join(f"{d} January 2025" for d in range(7, 17))])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.lists(st.tuples(st.sampled_from(["m0", "m1", "m2", "m3", "m4"]), dated_text,
                                 st.sampled_from(["", "2025-01-15", "apple",
                                                  "2025-01-15 and 2025-01-15"])),
                       min_size=1, max_size=12),
       queries=st.lists(date_query, min_size=1, max_size=3))
def test_a_date_in_numbers_is_one_phrase_on_both_paths_and_in_the_ground_truth(bodies, queries):
    import ground_truth as gt
    from test_properties import revs_of
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder=None) as store:
            for day, (mid, body, title) in enumerate(bodies):
                store.remember(mid, body, title=title or None, namespace="a",
                               known_at=format_time(T0 + day * DAY))
            at = T0 + 400 * DAY
            kw = dict(namespace="a", limit=50, as_of=format_time(at), valid_at=format_time(at))
            for q in queries:
                fast, ref = store.search(q, **kw), store.search_reference(q, **kw)
                same(fast, ref)
                want = gt.expected(revs_of(store), q, "a", at, at, None, None)
                assert [r.memory_id for r in fast] == [w[0] for w in want]
                assert [r.bm25 for r in fast] == [w[2] for w in want]


@settings(max_examples=300, deadline=None)
@given(terms=st.lists(st.sampled_from(["14", "march", "of", "14th", "2026"]), max_size=20),
       wanted=st.lists(st.sampled_from(["14", "march", "of", "14th"]), min_size=1, max_size=3))
def test_a_phrase_counted_by_index_is_counted_as_token_by_token(terms, wanted):
    """The fast path counts a phrase's instances from where its first word stands
    (in_memory._instances); the plain count walks every token (text.instances)."""
    from personal_memory.search.in_memory import _instances
    from personal_memory.search.text import instances
    assert _instances(terms, wanted) == instances(terms, " ".join(wanted))


def test_a_query_of_more_dates_than_the_phrases_kept_after_one_of_them(tmp_path):
    """Phrases asked for again while the cache of phrases is cleared for new ones are
    still answered (a KeyError once more than PHRASES_KEPT were new)."""
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.remember("m0", "On 15 January 2025 and 9 January 2025 we met.", namespace="a")
        many = " ".join(f"{d} January 2025" for d in range(7, 17))  # 15 and 16 as written
        for q in (many, "15 January 2025 apple", many, "15 January 2025"):
            fast, ref = store.search(q, namespace="a"), store.search_reference(q, namespace="a")
            same(fast, ref)
            assert [r.memory_id for r in fast] == ["m0"], q


def test_a_phrase_the_tokenizer_reads_otherwise_is_found_by_its_words(tmp_path, monkeypatch):
    """A phrase of stemmed terms the tokenizer would stem again cannot be asked of FTS5:
    its rows are those holding its words, read again; the answers are the same."""
    from personal_memory.search import in_memory
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        for i, text in enumerate(["Paid on 15 January 2025.", "Feb 28th: the boat", "15 apples",
                                  "2025-01-15 and 15.01.2025", "January 15th, then 28 Feb"]):
            store.remember(f"m{i}", text, namespace="a")
        queries = ["what did I pay on January 15", "15.01.2025", "February 28 boat"]
        fast = [[(r.memory_id, r.score) for r in store.search(q, namespace="a")] for q in queries]
        monkeypatch.setattr(in_memory, "_reads_as_itself", lambda db, phrase: False)
        index = store._search_index()
        index._phrases.clear()
        again = [[(r.memory_id, r.score) for r in store.search(q, namespace="a")] for q in queries]
        assert again == fast and all(fast), fast
        for q in queries:
            same(store.search(q, namespace="a"), store.search_reference(q, namespace="a"))


def test_a_row_holding_only_the_numbers_of_a_question_is_unrelated_on_both_paths(tmp_path):
    """"tomatoes sow indoors 15": a numbered list's "15." or a price of 15 holds nothing
    the question asks, so a row far from it in meaning is left out as unrelated, by both
    paths; a query of numbers alone still finds the rows holding them."""
    import numpy as np

    class Near(ToyEmbedder):
        def _vector(self, text):
            v = np.zeros(self.dimensions, dtype=np.float32)
            v[0 if "tomato" in text else 1] = 1.0
            return v
    with MemoryStore.open(tmp_path / "m.db", embedder=Near()) as store:
        for mid, body in [("sow", "Sow the tomatoes indoors in March."),
                          ("list", "Steps: 1. wake 2. walk 15. sleep"),
                          ("bus", "The bus ticket costs 15 euros."),
                          ("tea", "Green tea at noon.")]:
            store.remember(mid, body, namespace="n", known_at="2025-01-01")
        store.embed_pending()
        for q in ("tomatoes sow indoors 15", "tomatoes 15 2"):
            fast, ref = store.search(q, namespace="n"), store.search_reference(q, namespace="n")
            same(fast, ref)
            assert [r.memory_id for r in fast] == ["sow"] and fast.left_out == 3, q
        fast, ref = store.search("15", namespace="n"), store.search_reference("15", namespace="n")
        same(fast, ref)
        assert sorted(r.memory_id for r in fast[:2]) == ["bus", "list"]
