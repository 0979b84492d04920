"""Helpers shared by the tests (fixtures live in conftest.py, which uses these)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMORY = [sys.executable, "-m", "personal_memory"]


def run_memory(*args, env=None, input=None, timeout=60, cwd=None):
    """Run the CLI as a user would: a fresh process, without this machine's MEMORY_*."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    full_env.update(env or {})
    return subprocess.run(MEMORY + [str(a) for a in args], capture_output=True, text=True,
                          env=full_env, input=input, timeout=timeout, cwd=cwd)


def ids(results) -> list[str]:
    """Memory IDs of search results, in rank order."""
    return [r.memory_id for r in results]


def keyword_ids(store, query: str, namespace: str = "notes", limit: int = 1000) -> list[str]:
    """Sorted IDs of the results with a keyword match (the hashed embedding can give a
    small similarity to unrelated text, so vector-only hits are left out)."""
    return sorted(r.memory_id for r in store.search(query, namespace=namespace, limit=limit)
                  if r.bm25 is not None)


def wait_for(predicate, timeout=20.0, interval=0.05, what="condition"):
    """Poll until ``predicate()`` is truthy (returned), or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
