"""`memory changes` at scale: a week's changes without a query, and with one against the
time of the two searches it makes, on the seeded corpus (benchmarks/corpus.py).

    .venv/bin/python benchmarks/changes.py [--revisions 100000] [--windows 30]

Saves JSON to benchmarks/results/changes.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "daemon"))

from corpus import DAY, END, START, Corpus, load  # noqa: E402

from personal_memory import MemoryStore  # noqa: E402
from personal_memory.times import format_time  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def ms(values: list[float]) -> dict:
    return {"p50_ms": round(statistics.median(values) * 1000, 1),
            "p95_ms": round(percentile(values, 0.95) * 1000, 1)}


def run(revisions: int, windows: int, seed: int = 5) -> dict:
    corpus = Corpus(seed=seed)
    writes = corpus.writes(revisions)
    queries = [q["query"] for q in corpus.queries(windows)]
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp, MemoryStore.open(Path(tmp) / "m.db") as store:
        started = time.perf_counter()
        load(store, writes)
        load_s = time.perf_counter() - started
        store.warm()
        spans = []
        for _ in range(windows):
            since = rng.randint(START + 30 * DAY, END - 7 * DAY)
            spans.append((format_time(since), format_time(since + 7 * DAY)))
        plain, listed, asked, searched = [], [], [], []
        for (since, until), query in zip(spans, queries):
            t = time.perf_counter()
            found = store.changes(namespace="notes", since=since, until=until)
            plain.append(time.perf_counter() - t)
            listed.append(found.counts["notes"])
            t = time.perf_counter()
            store.changes(namespace="notes", since=since, until=until, query=query)
            asked.append(time.perf_counter() - t)
            t = time.perf_counter()
            store.search(query, namespace="notes", as_of=since, limit=20)
            store.search(query, namespace="notes", as_of=until, limit=20)
            searched.append(time.perf_counter() - t)
        return {
            "revisions": store.stats().counts.revisions, "load_s": round(load_s, 1),
            "windows": windows, "window_days": 7,
            "changed_memories_per_week": {"median": statistics.median(listed),
                                          "max": max(listed)},
            "without_query": ms(plain),
            "with_query": ms(asked),
            "two_searches": ms(searched),
            "with_query_over_two_searches": round(statistics.median(asked)
                                                  / statistics.median(searched), 2),
            "python": sys.version.split()[0],
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--revisions", type=int, default=100_000)
    ap.add_argument("--windows", type=int, default=30)
    ap.add_argument("--out", default=str(HERE / "results" / "changes.json"))
    args = ap.parse_args()
    result = run(args.revisions, args.windows)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
