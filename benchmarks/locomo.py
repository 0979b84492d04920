"""Retrieval quality on LoCoMo (ACL 2024): long, dated conversations with questions whose
evidence turns are known. Run as a script:

    .venv/bin/python benchmarks/locomo.py ../shared/data/locomo/*.json

Get the data from the snap-research/locomo repository (data/locomo10.zip); it is not part
of this project. Each turn is stored as a memory known at its session's date (one
namespace per conversation); every question is asked after the last session. Reported per
question category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5 adversarial
apart) and overall (1 to 4): R@5, R@10 (share of evidence turns in the top k), Hit@5 (any
evidence in the top 5), nDCG@10, for:

- ``shipped``: ``MemoryStore.search`` as it ranks today (with its p50/p95 latency);
- ``bm25_porter``: its keyword arm alone (FTS5 BM25, Porter stemmer over unicode61);
- ``bm25``: the same without stemming (the tokenizer before stemming was adopted).

The two BM25 arms are computed over exactly the stored turns with the text normalised as
the store normalises it. Saves JSON to benchmarks/results/locomo.json.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import apsw

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "daemon"))

from personal_memory import MemoryStore  # noqa: E402
from personal_memory.embedding import normalize_text  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
TOKENIZERS = {"bm25": ("unicode61", ["remove_diacritics", "2"]),
              "bm25_porter": ("porter", ["unicode61", "remove_diacritics", "2"])}


def session_time(text: str) -> str:
    """'1:56 pm on 8 May, 2023' as ISO 8601 (UTC: the data has no zone)."""
    dt = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return dt.replace(tzinfo=timezone.utc).isoformat()


def turns(conversation: dict) -> list[tuple[str, str, str]]:
    """(dia_id, known_at, text) of every turn, in order."""
    out = []
    n = 1
    while f"session_{n}_date_time" in conversation:
        when = session_time(conversation[f"session_{n}_date_time"])
        for turn in conversation.get(f"session_{n}") or []:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            out.append((turn["dia_id"], when, text))
        n += 1
    return out


def evidence_ids(item: dict) -> list[str]:
    """The question's evidence turns, with the data's odd forms ("D8:6; D9:17", "D:11:26",
    "D30:05") mended."""
    ids = []
    for raw in item.get("evidence") or []:
        for part in re.split(r"[;,]\s*|\s+", str(raw)):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                ids.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return list(dict.fromkeys(ids))


def metrics(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    rel = set(relevant)
    dcg = sum(1 / math.log2(i + 2) for i, m in enumerate(ranked[:10]) if m in rel)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(rel))))
    return {"R@5": len(rel & set(ranked[:5])) / len(rel),
            "R@10": len(rel & set(ranked[:10])) / len(rel),
            "Hit@5": float(bool(rel & set(ranked[:5]))),
            "nDCG@10": dcg / ideal if ideal else 0.0}


class KeywordArm:
    """FTS5 BM25 over the turns of one conversation, with a given tokenizer."""

    def __init__(self, rows: list[tuple[str, str]], tokenizer: tuple[str, list[str]]):
        self.conn = apsw.Connection(":memory:")
        name, args = tokenizer
        spec = " ".join([name, *args])
        self.conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(dia, content, tokenize='{spec}')")
        self.conn.executemany("INSERT INTO t VALUES (?, ?)",
                              [(d, normalize_text(text)) for d, text in rows])
        self.tokenize = self.conn.fts5_tokenizer(name, args)

    def rank(self, query: str, limit: int = 10) -> list[str]:
        terms = list(dict.fromkeys(t[2] for t in self.tokenize(
            normalize_text(query).encode(), apsw.FTS5_TOKENIZE_QUERY, None)))
        if not terms:
            return []
        match = " OR ".join('content:"' + t.replace('"', '""') + '"' for t in terms)
        return [d for (d,) in self.conn.execute(
            "SELECT dia FROM t WHERE t MATCH ? ORDER BY bm25(t), dia LIMIT ?", (match, limit))]


def run(paths: list[str]) -> dict:
    per: dict[str, dict[int, list[dict]]] = {m: {} for m in ("shipped", *TOKENIZERS)}
    latencies = []
    stored = questions = 0
    with tempfile.TemporaryDirectory() as tmp, MemoryStore.open(Path(tmp) / "m.db") as store:
        for path in paths:
            conversation = json.loads(Path(path).read_text())
            namespace = Path(path).stem
            rows = turns(conversation)
            with store.batch():
                for i, (dia, when, text) in enumerate(rows):
                    # Turns of one session share its time; a microsecond apart keeps order.
                    at = datetime.fromisoformat(when).timestamp() * 1_000_000 + i
                    store.remember(dia, text, namespace=namespace,
                                   known_at=datetime.fromtimestamp(at / 1e6, timezone.utc))
            stored += len(rows)
            arms = {m: KeywordArm([(d, t) for d, _, t in rows], spec)
                    for m, spec in TOKENIZERS.items()}
            for item in conversation["qa"]:
                relevant = evidence_ids(item)
                if not relevant:
                    continue
                questions += 1
                cat = item["category"]
                t0 = time.perf_counter()
                shipped = [r.memory_id for r in store.search(item["question"],
                                                              namespace=namespace, limit=10)]
                latencies.append(time.perf_counter() - t0)
                per["shipped"].setdefault(cat, []).append(metrics(shipped, relevant))
                for m, arm in arms.items():
                    per[m].setdefault(cat, []).append(metrics(arm.rank(item["question"]),
                                                              relevant))

    def mean(rows: list[dict]) -> dict[str, float]:
        return {k: round(statistics.fmean(r[k] for r in rows), 3) for k in rows[0]}

    table = {}
    for method, cats in per.items():
        overall = [r for c in (1, 2, 3, 4) for r in cats.get(c, [])]
        table[method] = {"overall": mean(overall) | {"questions": len(overall)},
                         **{CATEGORIES[c]: mean(rows) | {"questions": len(rows)}
                            for c, rows in sorted(cats.items())}}
    latencies.sort()
    return {"conversations": [Path(p).stem for p in paths], "turns": stored,
            "questions_with_evidence": questions, "methods": table,
            "shipped_latency_ms": {"p50": round(1000 * latencies[len(latencies) // 2], 2),
                                   "p95": round(1000 * latencies[int(len(latencies) * 0.95)], 2)}}


def markdown(result: dict) -> str:
    cols = ["overall", "multi-hop", "temporal", "open-domain", "single-hop", "adversarial"]
    lines = ["| method | " + " | ".join(f"R@5 {c}" for c in cols) + " | R@10 overall | "
             "nDCG@10 overall |", "| --- |" + " ---: |" * (len(cols) + 2)]
    for method, row in result["methods"].items():
        lines.append(f"| {method} | " + " | ".join(f"{row[c]['R@5']:.3f}" if c in row else "-"
                                                  for c in cols)
                     + f" | {row['overall']['R@10']:.3f} | {row['overall']['nDCG@10']:.3f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="LoCoMo conversation JSON files")
    ap.add_argument("--out", default=str(HERE / "results" / "locomo.json"))
    args = ap.parse_args()
    result = run(args.paths)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    print(f"\n{result['turns']} turns, {result['questions_with_evidence']} questions with "
          f"evidence; shipped search p50 {result['shipped_latency_ms']['p50']} ms, p95 "
          f"{result['shipped_latency_ms']['p95']} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
