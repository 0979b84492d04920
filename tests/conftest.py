import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from personal_memory import MemoryStore  # noqa: E402

MEMORY = [sys.executable, "-m", "personal_memory"]


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "memory.db")


@pytest.fixture
def store(db_path):
    with MemoryStore.open(db_path) as s:
        yield s


def run_memory(*args, env=None, input=None, timeout=60, cwd=None):
    """Run the CLI as a user would: a fresh process."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    full_env.update(env or {})
    return subprocess.run(MEMORY + [str(a) for a in args], capture_output=True, text=True,
                          env=full_env, input=input, timeout=timeout, cwd=cwd)
