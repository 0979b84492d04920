"""Each arm of the fusion is measured against the mean of its best three scores, not its
single best: one row that repeats a word many times no longer squashes the others."""

from personal_memory import MemoryStore
from personal_memory.search import ranking


def test_the_scale_is_the_mean_of_the_best_three_above_the_floor():
    assert ranking.arm_scale([9.0, 3.0, 3.0, 1.0]) == 5.0
    assert ranking.arm_scale([4.0]) == 4.0
    assert ranking.arm_scale([]) == 0.0
    # Cosine: only values above the median count, so the spread never vanishes or turns
    # negative while one row is above the median.
    assert ranking.arm_scale([0.85, 0.8, 0.1], 0.8) == 0.85
    assert ranking.arm_scale([0.5, 0.5], 0.5) == 0.5


def test_a_row_repeating_the_word_does_not_squash_the_rest(tmp_path):
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        # Rows holding no query word between them: no neighbour lends context.
        store.remember("loud", "kayak " * 12 + "trip", namespace="n")
        for i in range(4):
            store.remember(f"other{i}", f"a walk in the park number {i}", namespace="n")
            store.remember(f"quiet{i}", f"the kayak was rented on day {i}", namespace="n")
        for found in (store.search("kayak", namespace="n"),
                      store.search_reference("kayak", namespace="n")):
            assert [r.memory_id for r in found][0] == "loud"
            top = sorted((r.bm25 for r in found), reverse=True)[:3]
            scale = sum(top) / 3
            assert scale < found[0].bm25
            for r in found:
                assert abs(r.score - ranking.KEYWORD_WEIGHT * r.bm25 / scale) < 1e-12
            # The single best would have left each quiet row under half of this share.
            assert found[1].score > found[1].bm25 / found[0].bm25 * ranking.KEYWORD_WEIGHT
