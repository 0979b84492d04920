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
            assert abs(score["d1:2"].score - (own + ranking.CONTEXT_BEFORE * lent)) < 1e-12
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
