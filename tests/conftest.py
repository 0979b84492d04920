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
    with MemoryStore.open(db_path) as s:
        yield s
