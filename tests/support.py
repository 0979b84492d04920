"""Helpers shared by the tests (fixtures live in conftest.py, which uses these)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
MEMORY = [sys.executable, "-m", "personal_memory"]


def user_env(extra: dict | None = None) -> dict:
    """The environment of a process started as a user would start it, without this
    machine's MEMORY_* and NOTIFY_*. Keyword-only unless ``extra`` asks for the semantic
    model (MEMORY_EMBEDDER): embedding every note of every test would take minutes; the
    tests of semantic search ask for it. ``PM_TEST_EMBEDDER=e5`` runs every process with
    the model on (the hostile runs' second pass, docs/operations.md#with-the-model-on)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "NOTIFY_"))}
    env["MEMORY_EMBEDDER"] = os.environ.get("PM_TEST_EMBEDDER", "none")
    env.update(extra or {})
    return env


def vault_of(tmp_path: Path, files: dict[str, str], name: str = "vault") -> Path:
    """A notes folder ``tmp_path/name`` holding ``files`` (relative path: text)."""
    vault = tmp_path / name
    vault.mkdir(exist_ok=True)
    for path, text in files.items():
        (vault / path).parent.mkdir(parents=True, exist_ok=True)
        (vault / path).write_text(text)
    return vault


def run_memory(*args, env=None, input=None, timeout=60, cwd=None):
    """Run the CLI as a user would: a fresh process (see :func:`user_env`)."""
    full_env = user_env(env)
    return subprocess.run(MEMORY + [str(a) for a in args], capture_output=True, text=True,
                          env=full_env, input=input, timeout=timeout, cwd=cwd)


def remember_all(db, memories: dict[str, str], namespace: str | None = None) -> None:
    """Write ``memories`` (ID: text) as ``memory remember`` writes each, with the semantic
    model the command would use (:func:`user_env`) making their vectors, in this process:
    for tests whose subject is what comes after, not a process per memory."""
    from personal_memory import MemoryStore
    from personal_memory.settings import resolve
    chosen = resolve(environ=user_env(), db=str(db), namespace=namespace)
    with MemoryStore.open(db, embedder=chosen.embedder) as store:
        for memory_id, text in memories.items():
            store.remember(memory_id, text, namespace=chosen.namespace)
        if store.embedder is not None:
            store.embed_pending()


def ids(results) -> list[str]:
    """Memory IDs of search results, in rank order."""
    return [r.memory_id for r in results]


def keyword_ids(store, query: str, namespace: str = "notes", limit: int = 1000) -> list[str]:
    """Sorted IDs of the results with a keyword match (a semantic model ranks every row,
    so results found by meaning alone are left out)."""
    return sorted(r.memory_id for r in store.search(query, namespace=namespace, limit=limit)
                  if r.bm25 is not None)


def word_hits(search_json: str) -> list[dict]:
    """The results of ``memory search --json`` with a keyword match (with the model on,
    every visible row ranks by meaning too)."""
    import json
    return [r for r in json.loads(search_json)["results"] if r["bm25"] is not None]


def wait_for(predicate, timeout=20.0, interval=0.05, what="condition"):
    """Poll until ``predicate()`` is truthy (returned), or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _mount_small_disk(folder, size: str) -> str | None:
    """A tmpfs of ``size`` at ``folder``; None when mounted, else why it cannot be."""
    if os.geteuid() != 0:
        return "a small disk is a tmpfs, and mounting one needs root"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                           str(folder)], capture_output=True, text=True)
    return None if done.returncode == 0 else f"cannot mount a tmpfs here: {done.stderr.strip()}"


def fill_disk(folder: Path) -> None:
    """Fill the disk that holds ``folder`` with a file named filler: not a byte left."""
    # Unbuffered: a buffered file that holds the bytes a full disk refused raises again
    # when it is closed. Smaller writes take what the larger ones left.
    with open(folder / "filler", "wb", buffering=0) as fh:
        for size in (65536, 4096, 512, 1):
            try:
                while fh.write(b"\0" * size):
                    pass
            except OSError:
                pass


@contextlib.contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``folder`` (made if missing), a real disk to fill, for the
    block; the test is skipped, saying why, where none can be mounted."""
    import pytest
    folder.mkdir(exist_ok=True)
    why = _mount_small_disk(folder, size)
    if why:
        pytest.skip(why)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)
