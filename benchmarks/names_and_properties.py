"""Notes found by their file name and by their properties, on a made-up engineer's vault
(benchmarks/data/dev_vault, 90 notes with front matter), judged on searches written by a
reader of the notes who ran no search (benchmarks/data/dev_vault_questions.json):

    .venv/bin/python benchmarks/names_and_properties.py [--db /tmp/dev.db] \
        [--source OTHER_CHECKOUT] [--out benchmarks/results/names_and_properties.json]

- ``property``: 20 searches answered only by a value of a front matter property
  (``authors``, ``venue``, ``severity``, ``attendees``, ``owner``, ...), not by the note's
  text;
- ``file-name``: 10 searches by words of a note's file name that its first heading, aliases
  and text do not hold.

The vault is imported with the semantic model on (e5) and every section embedded; each
search is run as MCP memory_search runs it (limit 5, one result per note). Reported per
kind: the right note first, in the top 3, in the top 5, and MRR@5. ``--source DIR`` runs
another checkout (DIR/daemon imported instead of this tree's) for a before and after; give
each its own ``--db``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from help_questions import Searcher, open_vault, package_arguments, package_run

HERE = Path(__file__).resolve().parent
VAULT = HERE / "data" / "dev_vault"
DATA = HERE / "data" / "dev_vault_questions.json"
LIMIT = 5


def run(store, folder, questions: list[dict]) -> dict:
    search = Searcher(store, folder)
    rows = []
    for q in questions:
        paths = [search.path(r) for r in search(q["q"], LIMIT)]
        rank = next((i + 1 for i, p in enumerate(paths) if p in q["expected"]), None)
        rows.append({"id": q["id"], "kind": q["kind"], "rank": rank, "top": paths[:3]})
    kinds = {}
    for kind in dict.fromkeys(q["kind"] for q in questions):
        ranks = [r["rank"] for r in rows if r["kind"] == kind]
        kinds[kind] = {"n": len(ranks), "first": sum(r == 1 for r in ranks),
                       "top3": sum(r is not None and r <= 3 for r in ranks),
                       "top5": sum(r is not None for r in ranks),
                       "mrr5": round(sum(1 / r for r in ranks if r) / len(ranks), 3)}
    return {"kinds": kinds, "questions": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    package_arguments(ap, HERE / "results" / "names_and_properties.json")
    args = ap.parse_args()
    root, db, about = package_run(args, "names-properties")
    questions = json.loads(DATA.read_text(encoding="utf-8"))["questions"]
    missing = [p for q in questions for p in q["expected"] if not (VAULT / p).is_file()]
    if missing:
        print(f"notes named by the questions are missing: {missing}", file=sys.stderr)
        return 1
    store, folder, prepared = open_vault(db, VAULT)
    with store:
        result = {**about, "embedder": store.embedder, "limit": LIMIT, **prepared,
                  **run(store, folder, questions)}
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    for kind, k in result["kinds"].items():
        print(f"{kind:10} n={k['n']} first={k['first']} top3={k['top3']} top5={k['top5']} "
              f"MRR@5={k['mrr5']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
