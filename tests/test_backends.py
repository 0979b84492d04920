"""sqlite-vec and the numpy fallback must rank identically (on the reference path, where
the backend computes cosine; the fast path is held to the reference elsewhere)."""

import random

import pytest

from personal_memory import MemoryStore
from personal_memory.store import sqlite_vec_path

VOCAB = ("river stone cloud paper garden window letter music winter summer coffee tea "
         "train station market bread cheese apple orange lemon salt pepper forest "
         "mountain valley lake ocean island bridge tower castle").split()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("parity") / "m.db")
    rng = random.Random(1234)
    with MemoryStore.open(path) as store:
        for i in range(400):
            words = [rng.choice(VOCAB) for _ in range(rng.randint(3, 25))]
            store.remember(f"m{i:03d}", " ".join(words), namespace="p",
                           title=rng.choice(VOCAB).title(),
                           known_at=f"2025-01-{1 + i % 28:02d}T{i % 24:02d}:00:00Z")
            if i % 7 == 0:
                store.remember(f"m{i:03d}", " ".join(reversed(words)), namespace="p",
                               known_at=f"2025-02-{1 + i % 28:02d}T00:00:00Z")
    return path


def test_backend_choice_is_reported(corpus):
    assert sqlite_vec_path() is not None, "sqlite-vec must be installed for the native backend"
    with MemoryStore.open(corpus, read_only=True) as s:
        assert s.vector_backend == "sqlite-vec"
    with MemoryStore.open(corpus, read_only=True, vector_backend="python") as s:
        assert s.vector_backend == "python"


def test_rankings_identical_on_1000_random_searches(corpus):
    rng = random.Random(99)
    native = MemoryStore.open(corpus, read_only=True, vector_backend="sqlite-vec")
    fallback = MemoryStore.open(corpus, read_only=True, vector_backend="python")
    try:
        compared = 0
        for _ in range(1000):
            q = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 5)))
            as_of = f"2025-{rng.randint(1, 3):02d}-{rng.randint(1, 28):02d}"
            # The reference path is the one that computes cosine with the chosen backend.
            a = native.search_reference(q, namespace="p", as_of=as_of, limit=20)
            b = fallback.search_reference(q, namespace="p", as_of=as_of, limit=20)
            assert [(r.memory_id, r.score, r.bm25_rank, r.cosine_rank) for r in a] == \
                   [(r.memory_id, r.score, r.bm25_rank, r.cosine_rank) for r in b], q
            for x, y in zip(a, b):
                assert x.cosine == pytest.approx(y.cosine, abs=1e-6)
            compared += bool(a)
        assert compared > 900
    finally:
        native.close()
        fallback.close()
