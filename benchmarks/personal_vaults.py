"""Questions as people ask them of their own notes, on four made-up personal vaults
(benchmarks/data/personal_vaults: an office worker's, a vet's, a teacher's journal, a
developer's with weekly and monthly notes; daily notes named by their day, meetings,
people, recipes, a few notes in German, French and Portuguese),
each question written by a reader of the notes who ran no search:

    .venv/bin/python benchmarks/personal_vaults.py [--db-dir /tmp/pv] \
        [--source OTHER_CHECKOUT] [--out benchmarks/results/personal_vaults.json]

Each vault is imported with the semantic model on (e5) and every section embedded; each
question is run as MCP memory_search runs it (one result per note, snippets). Reported per
set and per kind: the right note first, in the top 3, MRR@10, and whether the first
result, when it is the right note, shows the answer's line (its snippet or the sections
shown under it); for questions the notes cannot answer, how many got no result and how
many results the others got. ``hamburg`` and ``lyon`` are the development sets (the
share a daily note gains when a question names its day was chosen on them);
``manchester`` and ``porto`` (written after the rule for weekly and monthly notes) are held out. ``--source DIR`` runs another checkout (its daemon/ imported instead of this
tree's) for a before and after; the databases hold nothing version-specific but the
note model, so give each checkout its own ``--db-dir``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "personal_vaults"
LIMIT = 10


def normalized(text: str) -> str:
    """A line as compared: no emphasis marks, list or task markers, case or extra spaces."""
    for mark in ("**", "- [ ]", "- [x]"):
        text = text.replace(mark, "")
    return " ".join(text.lower().split()).lstrip("-*> ").strip()


def judge(store, namespace: str, collection: str, item: dict) -> dict:
    found = store.search(item["question"], namespace=namespace, limit=LIMIT, group="note",
                         snippets=True)
    paths = [r.note[len(collection) + 1:] if r.note else None for r in found]
    relevant = set(item["relevant"])
    rank = next((i + 1 for i, p in enumerate(paths) if p in relevant), None)
    shown = False
    if rank == 1:
        first = found[0]
        texts = [first.snippet.text if first.snippet else ""] + [m.snippet.text
                                                                  for m in first.more]
        shown = normalized(item["answer"])[:40] in normalized(" ".join(texts))
    return {"id": item["id"], "kind": item["kind"], "rank": rank, "results": len(found),
            "shown": shown, "top": paths[:3], "no_answer": found.no_answer}


def summary(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["kind"] != "no_answer"]
    out: dict = {}
    if answerable:
        n = len(answerable)
        out.update(n=n, first=sum(r["rank"] == 1 for r in answerable),
                   top3=sum(r["rank"] is not None and r["rank"] <= 3 for r in answerable),
                   mrr10=round(sum(1 / r["rank"] for r in answerable if r["rank"]) / n, 3),
                   shown=sum(r["shown"] for r in answerable))
    none = [r for r in rows if r["kind"] == "no_answer"]
    if none:
        out["no_answer"] = {"n": len(none), "empty": sum(r["results"] == 0 for r in none),
                            "mean_results": round(statistics.fmean(r["results"]
                                                                   for r in none), 1)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db-dir", type=Path, help="folder for the databases (built or "
                    "reused; default: /tmp/personal-vaults-COMMIT)")
    ap.add_argument("--source", type=Path, help="another checkout of the package to run")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "personal_vaults.json")
    args = ap.parse_args()
    root = (args.source or HERE.parent).resolve()
    sys.path.insert(0, str(root / "daemon"))
    commit = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%H"],
                            capture_output=True, text=True).stdout.strip() or None
    db_dir = args.db_dir or Path(f"/tmp/personal-vaults-{(commit or 'unknown')[:12]}")
    db_dir.mkdir(parents=True, exist_ok=True)
    from personal_memory import MemoryStore
    from personal_memory.notes.folders import Folder

    data = json.loads((DATA / "questions.json").read_text())
    result = {"source": str(args.source) if args.source else "this checkout",
              "commit": commit, "limit": LIMIT, "sets": {}}
    for name, spec in data["sets"].items():
        folder = Folder.of(DATA / name)
        with MemoryStore.open(db_dir / f"{name}.db", embedder="e5") as store:
            store.sync([folder])
            store.embed_pending()
            rows = [judge(store, folder.namespace, folder.collection, q)
                    for q in spec["questions"]]
        kinds = sorted({r["kind"] for r in rows})
        result["sets"][name] = {
            "role": spec["role"], "all": summary(rows),
            "kinds": {k: summary([r for r in rows if r["kind"] == k]) for k in kinds},
            "questions": rows}
        s = result["sets"][name]
        print(f"{name} ({spec['role']}) all: {json.dumps(s['all'])}")
        for k in kinds:
            print(f"  {k:15} {json.dumps(s['kinds'][k])}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
