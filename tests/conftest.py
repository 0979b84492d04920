import sys

import pytest

from support import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

from personal_memory import MemoryStore  # noqa: E402


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "memory.db")


@pytest.fixture
def store(db_path):
    """A store with a small deterministic stand-in for the semantic model; tests that rank
    by meaning call ``store.embed_pending()`` after writing."""
    from ground_truth import ToyEmbedder
    with MemoryStore.open(db_path, embedder=ToyEmbedder()) as s:
        yield s
