"""What a date in a query costs the fast search path, on a store whose every memory writes
dates (a journal's), in one run:

    .venv/bin/python benchmarks/date_queries.py --sizes 20000 100000

Each memory holds four lines of everyday words, each with a day written one of five ways
("14 March", "March 14", "2026-03-14", "14.03.2026", "14th of March") or a price. A day
in a query is searched as each way a note writes it (search/dates.py, ``written_forms``):
the queries "what did I do on March 14" and "budget review 2026-05-05" are timed against
the same queries with a word as common as any of the store's in place of the date ("what
did I do on the train", "budget review train"), alternating, on the same warm index; the
ratio of the two says what the date costs on this machine and load. The first queries are also asked of the reference path, whose answers must be the
same. Keyword arm only (the model's query encoding is the same with or without a date).
Saves JSON to benchmarks/results/date_queries.json.
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
sys.path.insert(0, str(HERE.parent / "daemon"))

from personal_memory import MemoryStore  # noqa: E402

MONTHS = ("January February March April May June July August September October November "
          "December").split()
WORDS = ("meeting lunch budget invoice paid bought train flight dentist call review plan "
         "notes price euros team sprint garden recipe run walk book film").split()


def line(rng: random.Random) -> str:
    d, m = rng.randint(1, 28), rng.randint(1, 12)
    when = rng.choice([f"{d} {MONTHS[m - 1]}", f"{MONTHS[m - 1]} {d}", f"2026-{m:02}-{d:02}",
                       f"{d:02}.{m:02}.2026", f"{d}th of {MONTHS[m - 1]}",
                       f"{rng.randint(1, 99)} euros"])
    return " ".join(rng.choices(WORDS, k=6) + [when] + rng.choices(WORDS, k=4))


def queries() -> list[tuple[str, str]]:
    """(with its date, with a word as common as any in its place)."""
    out = [(f"what did I do on {MONTHS[m]} {d}", "what did I do on the train") for m in range(12)
           for d in (3, 14, 27)]
    out += [(f"budget review 2026-{m + 1:02}-{d:02}", "budget review train") for m in range(12)
            for d in (5, 14)]
    return out


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def run(size: int, folder: str) -> dict:
    rng = random.Random(3)
    path = f"{folder}/dates-{size}.db"
    with MemoryStore.open(path, embedder="none") as store:
        started = time.perf_counter()
        for i in range(size):
            store.remember(f"m{i}", "\n".join(line(rng) for _ in range(4)), namespace="n",
                           valid_from=f"2026-0{1 + i % 9}-10T10:00:00Z")
        built = time.perf_counter() - started
        asked = queries()
        differing = 0
        for dated, _ in asked[:10]:
            fast = store.search(dated, namespace="n", limit=10)
            ref = store.search_reference(dated, namespace="n", limit=10)
            differing += [(r.memory_id, r.score) for r in fast] != [
                (r.memory_id, r.score) for r in ref]
        with_date, without = [], []
        for i, (dated, plain) in enumerate(asked * 3):
            order = [(dated, with_date), (plain, without)]
            for query, times in (order if i % 2 else order[::-1]):
                t = time.perf_counter()
                store.search(query, namespace="n", limit=10)
                times.append((time.perf_counter() - t) * 1000)
    return {"revisions": size, "build_seconds": round(built, 1), "queries": len(asked),
            "repeats": 3, "reference_differing": differing,
            "with_date_ms": {"p50": round(statistics.median(with_date), 2),
                             "p95": round(percentile(with_date, 0.95), 2)},
            "without_date_ms": {"p50": round(statistics.median(without), 2),
                                "p95": round(percentile(without, 0.95), 2)},
            "ratio_p50": round(statistics.median(with_date) / statistics.median(without), 2),
            "ratio_p95": round(percentile(with_date, 0.95) / percentile(without, 0.95), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20000])
    parser.add_argument("--out", default=str(HERE / "results" / "date_queries.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        results = []
        for size in args.sizes:
            results.append(run(size, folder))
            print(json.dumps(results[-1]), flush=True)
    Path(args.out).write_text(json.dumps({"sizes": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
