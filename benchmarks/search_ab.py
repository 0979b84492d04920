"""Two versions of the fast search path, interleaved query by query on one busy machine.

    .venv/bin/python benchmarks/search_ab.py --old /tmp/base --new . --sizes 20000 100000

Each tree builds its own database of the same seeded corpus (benchmarks/corpus.py, with
paragraphs of --paragraph-words words, so the model reads a long section in several
pieces) with the
synthetic vectors. Then one reader process per tree (the thread pools of `memory search`)
warms its index, and the driver sends each query to both, alternating which goes first.
On a loaded machine the ratios (new / old) mean more than the absolute times: both
readers see the same load at the same moment. Plain searches (limit 10) and, where the
tree has it, a grouped search with snippets (``group="note"``; an older tree's
``whole_sections``) are timed. Saves JSON to benchmarks/results/search_ab.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

BUILD = r"""
import sys
sys.path[:0] = [sys.argv[1] + "/daemon", sys.argv[4]]
from corpus import Corpus, SyntheticEmbedder, load
from personal_memory import MemoryStore
db, size = sys.argv[2], int(sys.argv[3])
with MemoryStore.open(db, embedder=SyntheticEmbedder()) as store:
    load(store, Corpus(seed=1, paragraph_words=int(sys.argv[5])).writes(size))
    store.embed_pending(batch_size=2000)
"""

READER = r"""
import inspect, json, sys, time
sys.path[:0] = [sys.argv[1] + "/daemon", sys.argv[3]]
from personal_memory.cli.app import limit_threads
limit_threads("search")
from corpus import SyntheticEmbedder
from personal_memory import MemoryStore
from personal_memory.times import format_time
store = MemoryStore.open(sys.argv[2], read_only=True, embedder=SyntheticEmbedder())
store.warm()
params = inspect.signature(store.search).parameters
grouped = ({"group": "note", "snippets": True} if "group" in params else
           {"whole_sections": True, "snippets": True})
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    q = json.loads(line)
    kw = dict(namespace="notes", as_of=format_time(q["as_of"]),
              valid_at=format_time(q["valid_at"]), limit=10)
    if q["grouped"]:
        kw.update(grouped)
    t = time.perf_counter()
    res = store.search(q["query"], **kw)
    took = time.perf_counter() - t
    print(json.dumps({"s": took, "n": len(res)}), flush=True)
"""


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def stats(times: list[float]) -> dict:
    return {"p50_ms": round(statistics.median(times) * 1000, 2),
            "p95_ms": round(pct(times, 0.95) * 1000, 2),
            "max_ms": round(max(times) * 1000, 2)}


def build(tree: Path, db: Path, size: int, paragraph_words: int) -> None:
    subprocess.run([sys.executable, "-c", BUILD, str(tree), str(db), str(size), str(HERE),
                    str(paragraph_words)], check=True)


def start(tree: Path, db: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", READER, str(tree), str(db), str(HERE)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert json.loads(proc.stdout.readline())["ready"]
    return proc


def ask(proc: subprocess.Popen, query: dict) -> float:
    proc.stdin.write(json.dumps(query) + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())["s"]


def compare(old: Path, new: Path, size: int, queries: list[dict], tmp: Path,
            paragraph_words: int) -> dict:
    dbs = {}
    for name, tree in (("old", old), ("new", new)):
        dbs[name] = tmp / f"{name}{size}.db"
        build(tree, dbs[name], size, paragraph_words)
    procs = {name: start(tree, dbs[name]) for name, tree in (("old", old), ("new", new))}
    out = {"revisions": size, "paragraph_words": paragraph_words}
    try:
        for grouped in (False, True):
            times: dict[str, list[float]] = {"old": [], "new": []}
            for i, q in enumerate(queries):
                order = ("old", "new") if i % 2 == 0 else ("new", "old")
                for name in order:
                    times[name].append(ask(procs[name], q | {"grouped": grouped}))
            ratios = [n / o for n, o in zip(times["new"], times["old"])]
            out["grouped" if grouped else "plain"] = {
                "old": stats(times["old"]), "new": stats(times["new"]),
                "new_over_old_p50": round(statistics.median(times["new"])
                                          / statistics.median(times["old"]), 2),
                "new_over_old_p95": round(pct(times["new"], 0.95)
                                          / pct(times["old"], 0.95), 2),
                "median_per_query_ratio": round(statistics.median(ratios), 2)}
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the older tree (a git worktree)")
    ap.add_argument("--new", default=str(HERE.parent))
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000])
    ap.add_argument("--queries", type=int, default=120)
    ap.add_argument("--paragraph-words", type=int, default=120,
                    help="120: 1.5 pieces a section (the help vault: 1.6); 40: 3.4")
    ap.add_argument("--out", default=str(HERE / "results" / "search_ab.json"))
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(Path(args.new) / "daemon"))
    from corpus import Corpus
    queries = Corpus(seed=1).queries(args.queries)
    results = {"queries": args.queries, "sizes": []}
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            entry = compare(Path(args.old).resolve(), Path(args.new).resolve(), size, queries,
                            Path(tmp), args.paragraph_words)
            print(json.dumps(entry), flush=True)
            results["sizes"].append(entry)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
