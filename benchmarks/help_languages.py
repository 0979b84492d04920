"""Search quality on the German and French help vaults, judged on the help-vault questions
put into those languages (benchmarks/data/help_questions_translated.json). Run as a script:

    .venv/bin/python benchmarks/help_languages.py --vault PATH/obsidian-help \
        [--langs en de fr] [--db-dir /tmp/help-languages] \
        [--out benchmarks/results/help_languages.json]

Each language's folder of a clone of github.com/obsidianmd/obsidian-help is imported into a
database of its own (kept in ``--db-dir`` so that a rerun reuses it) with the model on, and
every section is embedded. A question is judged by the notes that answer it in English: a
note of another language answers when it has the same ``permalink`` in its front matter
(every note of the vault has one). ``en`` runs the English questions the same way, so the
languages are compared by one method. Each question is searched as MCP memory_search
searches (one result per note), at limit 10. Reported per split (dev, heldout, fresh) and
for paraphrases apart from the other kinds: ``first``, ``top3``, ``mrr10`` as in
help_questions.py, and ``answered``: the share that get any result at all (the questions
are real, so an empty reply is a wrong one); the queries left without a result are listed
with the reason the search gave.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "data" / "help_questions.json"
TRANSLATED = HERE / "data" / "help_questions_translated.json"
SPLITS = ("dev", "heldout", "fresh")


def permalinks(folder: Path) -> dict[str, str]:
    """Each note's path (relative to the folder) to its front matter's permalink."""
    out = {}
    for path in sorted(folder.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        front = re.match(r"---\n(.*?)\n---", text, re.S)
        found = front and re.search(r"^permalink:\s*(\S+)", front.group(1), re.M)
        if found:
            out[path.relative_to(folder).as_posix()] = found.group(1).strip("'\"")
    return out


def summary(rows: list[dict]) -> dict:
    if not rows:
        return {"n": 0}
    n = len(rows)
    return {"n": n,
            "first": round(sum(1 for r in rows if r["rank"] == 1) / n, 3),
            "top3": round(sum(1 for r in rows if r["rank"] and r["rank"] <= 3) / n, 3),
            "mrr10": round(statistics.fmean(1 / r["rank"] if r["rank"] else 0 for r in rows), 3),
            "answered": round(sum(1 for r in rows if r["results"]) / n, 3)}


def run_language(root: Path, lang: str, db: Path, items: list[tuple[dict, str]]) -> dict:
    import help_questions as hq

    english, here = permalinks(root / "en"), permalinks(root / lang)
    store, folder, prepared = hq.open_vault(db, root / lang)
    search = hq.Searcher(store, folder)
    rows = []
    with store:
        for question, query in items:
            relevant = {english[p] for p in question["relevant"] if p in english}
            found = search(query, 10)
            links = [here.get(search.path(r) or "") for r in found]
            rank = next((i + 1 for i, p in enumerate(links) if p in relevant), None)
            row = {"of": question["id"], "split": question["split"], "kind": question["kind"],
                   "query": query, "rank": rank, "results": len(found)}
            if not found:
                row["reason"] = getattr(found, "no_answer", None)
            rows.append(row)
    report = {"prepared": prepared}
    for split in SPLITS:
        part = [r for r in rows if r["split"] == split]
        report[split] = {"all": summary(part),
                         "paraphrase": summary([r for r in part if r["kind"] == "paraphrase"]),
                         "other": summary([r for r in part if r["kind"] != "paraphrase"])}
    report["unanswered"] = [r for r in rows if not r["results"]]
    report["per_question"] = rows
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", required=True, type=Path,
                    help="a clone of obsidianmd/obsidian-help (the folder holding en/, de/, fr/)")
    ap.add_argument("--langs", nargs="+", default=["en", "de", "fr"])
    ap.add_argument("--db-dir", type=Path, default=Path("/tmp/help-languages"))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "help_languages.json")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE.parent / "daemon"))
    sys.path.insert(0, str(HERE))
    import help_questions as hq

    data = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    questions = {q["id"]: q for q in data["questions"]}
    translated = json.loads(TRANSLATED.read_text(encoding="utf-8"))["translated"]
    args.db_dir.mkdir(parents=True, exist_ok=True)
    result = {"commit": hq.commit_of(HERE.parent), "languages": {}}
    for lang in args.langs:
        if lang == "en":
            items = [(q, q["query"]) for q in questions.values()]
        else:
            items = [(questions[t["of"]], t["query"]) for t in translated if t["lang"] == lang]
        result["languages"][lang] = run_language(args.vault.resolve(), lang,
                                                 args.db_dir / f"{lang}.db", items)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"{'':26}{'n':>4}{'first':>7}{'top3':>7}{'mrr10':>7}{'answered':>10}")
    for lang, report in result["languages"].items():
        for split in SPLITS:
            for part in ("all", "other", "paraphrase"):
                s = report[split][part]
                if s["n"]:
                    print(f"{lang + ' ' + split + ' ' + part:26}{s['n']:>4}{s['first']:>7.2f}"
                          f"{s['top3']:>7.2f}{s['mrr10']:>7.2f}{s['answered']:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
