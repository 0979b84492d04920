"""Memories remembered one after another lend each other context: a reply ranks with the turn
it answers. Notes' sections do not (measured to hurt them); both search paths agree."""

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from personal_memory.search import ranking

QUESTION = "Joanna: What inspired you to start making gaming videos?"
REPLY = "Nate: I am a big fan and thought making videos would be fun."


def ids(found):
    return [r.memory_id for r in found]


def test_a_reply_ranks_above_the_same_words_said_elsewhere(tmp_path):
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        # Revision order: a0:1, a0:2, d1:1, d1:2. Both replies hold the same words; memory
        # ID order alone would put a0:2 first.
        for mid, text in [("a0:1", "Joanna: The weather was grey all week."), ("a0:2", REPLY),
                          ("d1:1", QUESTION), ("d1:2", REPLY)]:
            store.remember(mid, text, namespace="c")
        query = "What inspired Nate to start making gaming videos?"
        for found in (store.search(query, namespace="c"),
                      store.search_reference(query, namespace="c")):
            assert ids(found) == ["d1:1", "d1:2", "a0:2"]
            score = {r.memory_id: r for r in found}
            top = ranking.arm_scale(sorted((r.bm25 for r in found), reverse=True))
            own = ranking.KEYWORD_WEIGHT * score["d1:2"].bm25 / top
            lent = ranking.KEYWORD_WEIGHT * score["d1:1"].bm25 / top  # d1:2 has no follower
            assert abs(score["d1:2"].score - (own + ranking.CONTEXT_QUESTION * lent)) < 1e-12
            assert abs(score["a0:2"].score - (own + ranking.CONTEXT_AFTER * lent)) < 1e-12


def test_a_turn_remembered_after_the_cutoff_lends_nothing(tmp_path):
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.remember("d1:1", "Nate: I thought making videos would be fun.", namespace="c")
        cutoff = store.remember("d1:2", "Nate: I love making videos.", namespace="c").known_at
        store.remember("d1:3", "Joanna: Making gaming videos is fun?", namespace="c")
        then = store.search("making videos fun", namespace="c", as_of=cutoff)
        ref = store.search_reference("making videos fun", namespace="c", as_of=cutoff)
        assert ids(then) == ids(ref)
        # d1:1 gains a tenth of d1:2's score only; d1:3, not known then, lends nothing.
        score = {r.memory_id: r for r in then}
        top = ranking.arm_scale(sorted((r.bm25 for r in then), reverse=True))
        plain = {m: ranking.KEYWORD_WEIGHT * r.bm25 / top for m, r in score.items()}
        assert abs(score["d1:1"].score - (plain["d1:1"] + ranking.CONTEXT_AFTER
                                          * plain["d1:2"])) < 1e-12


def test_sections_of_notes_keep_their_own_scores(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Plan\n\n## Travel\n\ntrain tickets to the coast\n\n"
                                "## Packing\n\nsunscreen and a coast map\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        store.sync([Folder.of(notes)])
        found = store.search("coast train tickets", namespace="notes", limit=5)
        top = ranking.arm_scale(sorted((r.bm25 for r in found), reverse=True))
        for r in found:
            assert abs(r.score - ranking.KEYWORD_WEIGHT * r.bm25 / top) < 1e-12


def test_a_question_lends_its_reply_more_than_a_statement_does(tmp_path):
    """The turn before lends CONTEXT_QUESTION when it asks (ends with a question mark,
    ASCII, fullwidth or Arabic), CONTEXT_BEFORE otherwise; both paths agree."""
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        for mid, text in [("q1", "Joanna: Which videos inspired you?  \n"),
                          ("r1", "Nate: the old arcade ones"),
                          ("x1", "the weather was grey"),
                          ("s1", "Joanna: Those videos inspired me."),
                          ("r2", "Nate: the old arcade ones"),
                          ("x2", "the weather was grey"),
                          ("q3", "Joanna: 这些视频启发了你吗？"),
                          ("r3", "Nate: the old arcade ones")]:
            store.remember(mid, text, namespace="c")
        for found in (store.search("videos inspired arcade", namespace="c"),
                      store.search_reference("videos inspired arcade", namespace="c")):
            score = {r.memory_id: r for r in found}
            top = ranking.arm_scale(sorted((r.bm25 for r in found), reverse=True))
            plain = {m: ranking.KEYWORD_WEIGHT * r.bm25 / top for m, r in score.items()}
            assert abs(score["r1"].score - plain["r1"]
                       - ranking.CONTEXT_QUESTION * plain["q1"]) < 1e-12
            assert abs(score["r2"].score - plain["r2"]
                       - ranking.CONTEXT_BEFORE * plain["s1"]) < 1e-12
            assert abs(score["r3"].score - plain["r3"]) < 1e-12  # q3 holds no query word
    assert ranking.asks("متى؟") and ranking.asks("なぜ？ ") and not ranking.asks("why? no.")


def test_random_conversations_rank_as_the_ground_truth_does(tmp_path):
    """Conversations of random turns, a quarter of them questions, many searches: both
    search paths give the independent ground truth's order and scores."""
    import random

    import ground_truth as gt
    from ground_truth import ToyEmbedder
    from test_properties import revs_of

    words = ["kayak", "lake", "tent", "rain", "coffee", "map", "boots", "fire", "owl", "trail"]
    rng = random.Random(7)
    asked = 0
    for trial in range(12):
        with MemoryStore.open(tmp_path / f"m{trial}.db", embedder=ToyEmbedder()) as store:
            for i in range(rng.randint(8, 30)):
                text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
                text += rng.choice(["", "", "", "?", "？"])
                store.remember(f"t{i:02d}", text, namespace="c")
            store.embed_pending()
            revs = revs_of(store)
            asked += sum(gt_rev.content.endswith(("?", "？")) for gt_rev in revs)
            for _ in range(5):
                query = " ".join(rng.sample(words, 2))
                want = gt.expected(revs, query, "c", revs[-1].known_at, revs[-1].known_at,
                                   ToyEmbedder(), {r.id for r in revs})
                for found in (store.search(query, namespace="c", limit=50),
                              store.search_reference(query, namespace="c", limit=50)):
                    assert [r.memory_id for r in found] == [w[0] for w in want][:50]
                    assert all(abs(r.score - w[1]) <= 1e-9 for r, w in zip(found, want))
    assert asked > 20
