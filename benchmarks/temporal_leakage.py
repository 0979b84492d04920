"""How much do common retrieval shortcuts leak across a knowledge cutoff?

Builds a seeded synthetic history (revisions, bounded corrections, deletions, a second
namespace), asks random questions at random historical cutoffs, and compares each
approach's BM25 top 5 with an independent ground truth (brute-force visibility, then a
fresh FTS5 index of exactly the visible rows). Run as a script:

    .venv/bin/python benchmarks/temporal_leakage.py [--memories 400] [--queries 299] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

import apsw

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "daemon"))

import ground_truth as gt  # noqa: E402

from personal_memory import MemoryStore  # noqa: E402
from personal_memory.errors import AlreadyHidden  # noqa: E402
from personal_memory.times import format_time, parse_time  # noqa: E402

START = parse_time("2024-01-01")
END = parse_time("2025-11-03")
DAY = 86_400_000_000
TOPICS = ["portfolio", "research", "garden", "travel", "kitchen", "budget", "fitness",
          "reading", "project", "meeting", "family", "music", "health", "language", "car"]
WORDS = ("alpha amber anchor apple april arrow atlas basil beacon birch bistro blue bridge "
         "canal cedar chart cobalt comet coral cotton delta desk dune ember falcon fern "
         "fjord forest garnet glacier granite harbor hazel indigo iris ivory jade juniper "
         "kayak kernel lagoon lantern lemon linen maple marble meadow mint nectar north "
         "oasis olive onyx opal orchid pearl pepper pine plum prism quartz quill raven reef "
         "river ruby saffron sage salt sierra silver slate spruce summit thistle tide topaz "
         "tulip umber valley velvet violet walnut willow yarrow zephyr zinc").split()


def _zipf_word(rng: random.Random) -> str:
    # Heavy head, long tail: a few words are very common, most are rare.
    index = min(int(rng.paretovariate(1.1)) - 1, len(WORDS) - 1)
    return WORDS[index]


def _text(rng: random.Random, topic: str) -> str:
    n = rng.randint(8, 30)
    words = [topic if rng.random() < 0.15 else _zipf_word(rng) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def build_history(seed: int, memories: int) -> list[dict]:
    """A list of write events in known_at order."""
    rng = random.Random(seed)
    events: list[dict] = []
    spaces = [("main", memories), ("other", max(1, memories // 5))]
    for namespace, count in spaces:
        for i in range(count):
            mid = f"{namespace}-{i:04d}"
            topic = rng.choice(TOPICS)
            t = rng.randint(START, END - 60 * DAY)
            events.append(dict(kind="remember", ns=namespace, mid=mid, known_at=t,
                               valid_from=t, valid_to=None, title=topic.title(),
                               content=_text(rng, topic)))
            for _ in range(rng.choice([0, 0, 0, 1, 1, 2, 3])):
                t2 = rng.randint(t + DAY, END)
                roll = rng.random()
                if roll < 0.2:  # bounded correction of a past period
                    vf = rng.randint(t, t2 - 1)
                    vt = rng.randint(vf + 1, t2)
                    events.append(dict(kind="remember", ns=namespace, mid=mid, known_at=t2,
                                       valid_from=vf, valid_to=vt, title=topic.title(),
                                       content=_text(rng, topic)))
                elif roll < 0.3:
                    events.append(dict(kind="forget", ns=namespace, mid=mid, known_at=t2,
                                       valid_from=t2, valid_to=None))
                else:
                    events.append(dict(kind="remember", ns=namespace, mid=mid, known_at=t2,
                                       valid_from=t2, valid_to=None, title=topic.title(),
                                       content=_text(rng, topic)))
    events.sort(key=lambda e: (e["known_at"], e["mid"]))
    return events


def load(store: MemoryStore, events: list[dict]) -> list[gt.Rev]:
    """Write the events through the public API; return what was stored, for ground truth."""
    for e in events:
        if e["kind"] == "remember":
            store.remember(e["mid"], e["content"], namespace=e["ns"], title=e["title"],
                           known_at=format_time(e["known_at"]),
                           valid_from=format_time(e["valid_from"]),
                           valid_to=format_time(e["valid_to"]))
        else:
            try:
                store.forget(e["mid"], namespace=e["ns"], known_at=format_time(e["known_at"]))
            except AlreadyHidden:
                pass
    def us(t):
        return None if t is None else parse_time(t)
    return [gt.Rev(r.revision_id, r.namespace, r.memory_id, us(r.known_at), us(r.valid_from),
                   us(r.valid_to), r.deleted, r.title, r.content, note=r.note)
            for r in store.export()]


def make_queries(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed + 1)
    queries = []
    for _ in range(count):
        n = rng.randint(1, 3)
        words = [rng.choice(TOPICS) if rng.random() < 0.3 else _zipf_word(rng)
                 for _ in range(n)]
        as_of = rng.randint(START + 30 * DAY, END)
        valid_at = as_of
        if rng.random() < 0.14:
            valid_at = rng.randint(START, as_of)
        queries.append({"query": " ".join(words), "as_of": as_of, "valid_at": valid_at})
    return queries


class GlobalIndex:
    """One FTS5 index over every non-deleted revision ever written."""

    def __init__(self, revs: list[gt.Rev], predicate=lambda r: True):
        self.conn = apsw.Connection(":memory:")
        self.conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(title, content, {gt.TOKENIZE})")
        for r in revs:
            if not r.deleted and predicate(r):
                self.conn.execute("INSERT INTO f (rowid, title, content) VALUES (?,?,?)",
                                  (r.id, r.title or "", r.content))

    def ranked(self, query: str, limit: int | None) -> list[tuple[int, float]]:
        terms = gt.query_terms(query)
        if not terms:
            return []
        expr = " OR ".join(f'"{t}"' for t in terms)
        sql = "SELECT rowid, bm25(f) FROM f WHERE f MATCH ? ORDER BY bm25(f), rowid"
        if limit:
            sql += f" LIMIT {limit}"
        return [(rid, -s) for rid, s in self.conn.execute(sql, (expr,))]


def run(memories: int = 400, queries: int = 299, seed: int = 7) -> dict:
    events = build_history(seed, memories)
    qs = make_queries(seed, queries)
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore.open(os.path.join(tmp, "leak.db"))
        revs = load(store, events)
        by_id = {r.id: r for r in revs}
        global_index = GlobalIndex(revs)
        approaches = ["latest_only", "global_top20", "global_top50", "global_top100",
                      "global_all_then_filter", "known_by_cutoff_then_filter", "this_store"]
        differs = {a: 0 for a in approaches}
        lost = {a: 0 for a in approaches}
        future = 0
        bm25_mismatch = 0
        hybrid_differs = 0
        earlier_valid = 0
        latest_rows = gt.visible(revs, "main", 1 << 62, 1 << 62)
        latest_bm25_cache: dict[str, dict[str, float]] = {}
        for q in qs:
            as_of, valid_at, text = q["as_of"], q["valid_at"], q["query"]
            earlier_valid += valid_at < as_of
            rows = gt.visible(revs, "main", as_of, valid_at)
            visible_ids = {r.id for r in rows}
            truth_scores = gt.fresh_bm25(rows, text)
            truth = gt.bm25_top(truth_scores, 5)

            def score(name: str, got: list[str]) -> None:
                if got != truth:
                    differs[name] += 1
                if len(got) < len(truth):
                    lost[name] += 1

            # 1. an overwriting store: only the latest version of everything, ever
            if text not in latest_bm25_cache:
                latest_bm25_cache[text] = gt.fresh_bm25(latest_rows, text)
            lat = latest_bm25_cache[text]
            top = gt.bm25_top(lat, 5)
            score("latest_only", top)
            known = {r.memory_id: r for r in latest_rows}
            if any(known[m].known_at > as_of for m in top):
                future += 1
            # 2-4. one global index, top K (or all) matches, then filter to visible rows
            for name, k in (("global_top20", 20), ("global_top50", 50),
                            ("global_top100", 100), ("global_all_then_filter", None)):
                hits = [(by_id[rid].memory_id, s) for rid, s in global_index.ranked(text, k)
                        if rid in visible_ids]
                score(name, [m for m, _ in hits][:5])
            # 5. an index of rows known by the cutoff (no future rows), then filter
            cut = GlobalIndex(revs, lambda r, a=as_of: r.known_at <= a and r.namespace == "main")
            hits = [(by_id[rid].memory_id, s) for rid, s in cut.ranked(text, None)
                    if rid in visible_ids]
            score("known_by_cutoff_then_filter", [m for m, _ in hits][:5])
            # 6. this store
            results = store.search(text, namespace="main", as_of=format_time(as_of),
                                   valid_at=format_time(valid_at), limit=1000)
            store_bm25 = {r.memory_id: r.bm25 for r in results if r.bm25 is not None}
            score("this_store", gt.bm25_top(store_bm25, 5))
            if store_bm25 != truth_scores:
                bm25_mismatch += 1
            want = gt.expected(revs, text, "main", as_of, valid_at)
            if [r.memory_id for r in results] != [w[0] for w in want]:
                hybrid_differs += 1
        store.close()
    n = len(qs)
    table = [{"approach": a, "top5_differs_pct": round(100 * differs[a] / n, 1),
              "lost_results_pct": round(100 * lost[a] / n, 1)} for a in approaches]
    return {"seed": seed, "memories": memories, "revisions": len(revs), "queries": n,
            "queries_with_earlier_valid_at": earlier_valid,
            "latest_only_future_revision_pct": round(100 * future / n, 1),
            "table": table, "this_store_bm25_score_mismatches": bm25_mismatch,
            "this_store_hybrid_order_differs": hybrid_differs}


LABELS = {
    "latest_only": "Latest version only (an overwriting store)",
    "global_top20": "One global index, top 20 matches, then filter",
    "global_top50": "One global index, top 50 matches, then filter",
    "global_top100": "One global index, top 100 matches, then filter",
    "global_all_then_filter": "One global index, every match, then filter",
    "known_by_cutoff_then_filter": "Index of rows known by the cutoff, then filter",
    "this_store": "personal-memory: visibility first, then rank",
}


def markdown(result: dict) -> str:
    lines = ["| Retrieval approach | Top 5 differs | Lost results |", "| --- | ---: | ---: |"]
    for row in result["table"]:
        lines.append(f"| {LABELS[row['approach']]} | {row['top5_differs_pct']}% | "
                     f"{row['lost_results_pct']}% |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=400)
    ap.add_argument("--queries", type=int, default=299)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=str(HERE / "results" / "temporal_leakage.json"))
    args = ap.parse_args()
    result = run(args.memories, args.queries, args.seed)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    print(f"\n{result['revisions']} revisions, {result['queries']} queries "
          f"({result['queries_with_earlier_valid_at']} with an earlier valid_at); "
          f"latest-only answered with a revision not yet known in "
          f"{result['latest_only_future_revision_pct']}% of queries.")
    print(f"this store: {result['this_store_bm25_score_mismatches']} BM25 score mismatches, "
          f"{result['this_store_hybrid_order_differs']} hybrid rankings differing from "
          "ground truth")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
