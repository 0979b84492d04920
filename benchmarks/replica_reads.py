"""Reading a replica in place (Litestream's VFS) against reading the database: how long a
reader takes to open and answer its first search, and searches after that.

    .venv/bin/python benchmarks/replica_reads.py [--revisions 20000] [--queries 200]

A store of synthetic revisions (benchmarks/corpus.py; keyword-only, or with ``--vectors``
a synthetic 384-dimension vector per piece, searched with both arms) replicated to a local
folder by `memory replicate run`; then, each in a process of its own (the VFS's rule),
one reader of the database and one of the replica run the same queries (corpus mix:
rare, common and very common words, now and historical cutoffs) and time them. Each
reader checks that its answers equal the other's. Saves JSON to
benchmarks/results/replica_reads.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "daemon"))

MEMORY = [sys.executable, "-m", "personal_memory"]


def reader(source: str, queries_file: str, replica: bool, vectors: bool) -> None:
    """In the child: open, time the first search, then every query; print JSON."""
    from corpus import SyntheticEmbedder

    from personal_memory import MemoryStore
    from personal_memory.times import format_time
    queries = json.loads(Path(queries_file).read_text())
    embedder = SyntheticEmbedder() if vectors else "none"
    t0 = time.perf_counter()
    store = (MemoryStore.open_replica(source, embedder=embedder) if replica else
             MemoryStore.open(source, read_only=True, embedder=embedder))
    first = None
    times, answers = [], []
    for q in queries:
        s = time.perf_counter()
        found = store.search(q["query"], namespace="notes", as_of=format_time(q["as_of"]),
                             valid_at=format_time(q["valid_at"]), limit=10)
        took = time.perf_counter() - s
        if first is None:
            first = time.perf_counter() - t0
        times.append(took)
        answers.append([(r.revision_id, round(r.score, 9)) for r in found])
    print(json.dumps({"open_and_first_search_s": first, "times": times,
                      "answers": answers}))


def pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))] * 1000, 2)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--reader":
        reader(sys.argv[2], sys.argv[3], sys.argv[4] == "replica", sys.argv[5] == "vectors")
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--revisions", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--vectors", action="store_true",
                    help="give every piece a vector (corpus.SyntheticEmbedder: a real "
                    "model's size) and search with both arms")
    ap.add_argument("--out", default=str(HERE / "results" / "replica_reads.json"))
    a = ap.parse_args()
    from corpus import Corpus, SyntheticEmbedder, load

    from personal_memory import MemoryStore
    from personal_memory.replication import replica as replicas
    from personal_memory.replication.litestream import binary
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env["MEMORY_EMBEDDER"] = "none"
    with tempfile.TemporaryDirectory(prefix="pm-replica-reads-") as tmp:
        db, folder = Path(tmp) / "m.db", Path(tmp) / "replica"
        corpus = Corpus(seed=1)
        with MemoryStore.open(db, embedder=SyntheticEmbedder() if a.vectors
                              else "none") as store:
            load(store, corpus.writes(a.revisions))
            if a.vectors:
                store.embed_pending(batch_size=2000)
        queries = Path(tmp) / "queries.json"
        queries.write_text(json.dumps(corpus.queries(a.queries)))
        subprocess.run(MEMORY + ["--db", str(db), "replicate", "setup", str(folder),
                                 "--no-service"], env=env, check=True, capture_output=True)
        rep = subprocess.Popen(MEMORY + ["--db", str(db), "replicate", "run"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 600
            while not list((folder / "ltx" / "9").glob("*.ltx")):
                if time.monotonic() > deadline:
                    raise TimeoutError("no snapshot in the replica")
                time.sleep(0.2)
            time.sleep(3)  # the last transactions after the snapshot
        finally:
            rep.terminate()
            rep.wait(timeout=60)
        url = replicas.replica_url(str(folder))
        runs = {}
        for name, source, child_env in (("database", str(db), env),
                                        ("replica", url, replicas.environment(url, env))):
            done = subprocess.run([sys.executable, __file__, "--reader", source,
                                   str(queries), name,
                                   "vectors" if a.vectors else "keywords"],
                                  env=child_env, capture_output=True, text=True, check=True)
            runs[name] = json.loads(done.stdout)
        same = runs["database"]["answers"] == runs["replica"]["answers"]
        version = subprocess.run([binary(), "version"], capture_output=True,
                                 text=True).stdout.strip()
        result = {"litestream": version, "cpu": os.cpu_count(), "revisions": a.revisions,
                  "vectors": a.vectors,
                  "queries": a.queries, "database_mb": round(db.stat().st_size / 1e6, 1),
                  "same_answers": same}
        for name, run in runs.items():
            result[name] = {"open_and_first_search_s": round(run["open_and_first_search_s"], 3),
                            "search_ms": {"p50": pct(run["times"][1:], 0.5),
                                          "p95": pct(run["times"][1:], 0.95),
                                          "mean": round(statistics.mean(run["times"][1:])
                                                        * 1000, 2)}}
    print(json.dumps(result, indent=2))
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
