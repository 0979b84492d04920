"""Wall time of `memory search` in a fresh process on a small database. Run as a script:

    .venv/bin/python benchmarks/cli_startup.py [--runs 20]

The 500 memories are embedded, so the search loads the semantic model and embeds the
query, as a user's would; the same search keyword-only (`MEMORY_EMBEDDER=none`) and a bare
`python -c pass` are timed in the same run, for scale. Saves JSON to
benchmarks/results/cli_startup.json.
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
sys.path.insert(0, str(HERE.parent / "daemon"))

from personal_memory import MemoryStore  # noqa: E402


def wall(cmd: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **(env or {})})
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", default=str(HERE / "results" / "cli_startup.json"))
    args = ap.parse_args()
    memory = str(Path(sys.executable).with_name("memory"))
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "m.db")
        with MemoryStore.open(db) as store, store.batch():
            for i in range(500):
                store.remember(f"note{i}", f"note number {i} about gardens, trains and tea",
                               namespace="notes")
        with MemoryStore.open(db, embedder="e5") as store:
            store.embed_pending()
        cmd = [memory, "--db", db, "search", "gardens tea", "--limit", "5"]
        search = [wall(cmd, {"MEMORY_EMBEDDER": "e5"}) for _ in range(args.runs)]
        keyword = [wall(cmd, {"MEMORY_EMBEDDER": "none"}) for _ in range(args.runs)]
        bare = [wall([sys.executable, "-c", "pass"]) for _ in range(args.runs)]
    result = {"runs": args.runs, "database_memories": 500,
              "memory_search_p50_s": round(statistics.median(search), 3),
              "memory_search_max_s": round(max(search), 3),
              "keyword_only_search_p50_s": round(statistics.median(keyword), 3),
              "python_startup_p50_s": round(statistics.median(bare), 3)}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
