"""The reference path's cosine by sqlite-vec (float32, in SQLite) agrees with numpy's exact
float64 (the default) within float32's error; the fast path is held to the exact rule
elsewhere."""

import random

import pytest

from ground_truth import ToyEmbedder
from personal_memory import MemoryStore
from personal_memory.store import sqlite_vec_path

VOCAB = ("river stone cloud paper garden window letter music winter summer coffee tea "
         "train station market bread cheese apple orange lemon salt pepper forest "
         "mountain valley lake ocean island bridge tower castle").split()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("parity") / "m.db")
    rng = random.Random(1234)
    with MemoryStore.open(path, embedder=ToyEmbedder()) as store:
        writes = []  # stored oldest first: known_at never steps back
        for i in range(400):
            words = [rng.choice(VOCAB) for _ in range(rng.randint(3, 25))]
            writes.append((f"2025-01-{1 + i % 28:02d}T{i % 24:02d}:00:00Z", f"m{i:03d}",
                           " ".join(words), rng.choice(VOCAB).title()))
            if i % 7 == 0:
                writes.append((f"2025-02-{1 + i % 28:02d}T00:00:00Z", f"m{i:03d}",
                               " ".join(reversed(words)), None))
        for known_at, mid, body, title in sorted(writes, key=lambda w: w[0]):
            store.remember(mid, body, namespace="p", title=title, known_at=known_at)
        store.embed_pending()
    return path


def test_backend_choice_is_reported(corpus):
    assert sqlite_vec_path() is not None, "sqlite-vec must be installed for the native backend"
    with MemoryStore.open(corpus, read_only=True) as s:
        assert s.vector_backend == "python"  # auto: the exact rule
    with MemoryStore.open(corpus, read_only=True, vector_backend="sqlite-vec") as s:
        assert s.vector_backend == "sqlite-vec"


def test_sqlite_vec_agrees_within_float32_on_500_random_searches(corpus):
    rng = random.Random(99)
    native = MemoryStore.open(corpus, read_only=True, vector_backend="sqlite-vec",
                              embedder=ToyEmbedder())
    exact = MemoryStore.open(corpus, read_only=True, embedder=ToyEmbedder())
    try:
        compared = 0
        for _ in range(500):
            q = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 5)))
            as_of = f"2025-{rng.randint(1, 3):02d}-{rng.randint(1, 28):02d}"
            # The reference path is the one that computes cosine with the chosen backend.
            a = native.search_reference(q, namespace="p", as_of=as_of, limit=20)
            b = exact.search_reference(q, namespace="p", as_of=as_of, limit=20)
            assert len(a) == len(b)
            fused = {r.memory_id: r.score for r in b}
            for x, y in zip(a, b):
                assert x.cosine == pytest.approx(y.cosine, abs=1e-6)
                assert x.score == pytest.approx(y.score, abs=1e-4)
                # the same memory, or one whose exact score is as close as float32 can tell
                assert x.memory_id == y.memory_id or abs(fused[x.memory_id] - y.score) < 1e-4
            compared += bool(a)
        assert compared > 450
    finally:
        native.close()
        exact.close()
