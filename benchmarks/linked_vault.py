"""Searching a large linked vault: what the links between notes cost a search.

    .venv/bin/python benchmarks/linked_vault.py [--sizes 5000 20000] \
        [--out benchmarks/results/linked_vault.json]

For each size it writes a seeded synthetic vault (50 folders of 7 subfolders; each note 90
words, ten links to other notes: wikilinks, aliased and section links, embeds, relative
Markdown links and links to notes never written), imports it keyword-only, and times one
search as the MCP server asks it (limit 10, one result per note, snippets) at each step:
the first search of a fresh store, the same again, after one note's text is edited, after
one note's links change, after a note is added, after one is renamed, and at a cutoff
before those changes. Each is timed on two stores over the same database in the same
run: one ranking as shipped, one with the links' share switched off
(``ranking.linked`` returning its input), so the difference is the links' cost; ``graph``
is the time spent building the link graph. Saves JSON to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUERY = "kettle descaling"


def _note(i: int, n: int, rng: random.Random, words: list[str]) -> str:
    links = []
    for _ in range(10):
        j, k = rng.randrange(n), rng.random()
        links.append(f"[[n{j}]]" if k < .5 else f"[[f{j % 50}/s{j % 7}/n{j}|x]]" if k < .65
                     else f"![[n{j}]]" if k < .75 else f"[t](../../{_path(j)})" if k < .85
                     else f"[[n{j}#H]]" if k < .95 else f"[[Missing{j}]]")
    text = " ".join(rng.choices(words, k=60)) + (" kettle descaling" if i % 20 == 0 else "")
    return (f"# n{i}\n\n{text} {' '.join(links)}\n\n## H\n\n"
            f"{' '.join(rng.choices(words, k=30))}\n")


def _path(i: int) -> str:
    return f"f{i % 50}/s{i % 7}/n{i}.md"


def _write(vault: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)


def measure(n: int, work: Path) -> dict:
    """One size, in this process (run by main in a fresh one per size)."""
    from personal_memory import MemoryStore
    from personal_memory.notes.folders import Folder
    from personal_memory.search import in_memory, ranking

    rng = random.Random(n)
    words = [f"w{i}" for i in range(3000)]
    vault, db = work / "v", work / "m.db"
    started = time.perf_counter()
    _write(vault, {_path(i): _note(i, n, rng, words) for i in range(n)})
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)])
    built = time.perf_counter() - started
    spent: list[float] = []
    build = in_memory.SearchIndex.graph

    def timed(self, everything):
        t = time.perf_counter()
        try:
            return build(self, everything)
        finally:
            spent.append(time.perf_counter() - t)
    in_memory.SearchIndex.graph = timed
    shipped = ranking.linked
    off = lambda kept, fused, note_of, graph: (kept, fused, {})  # noqa: E731
    stores = {"links": MemoryStore.open(db, embedder="none"),
              "without": MemoryStore.open(db, embedder="none")}
    steps = []

    def step(label: str, **kw) -> None:
        row = {"step": label}
        for name, store in stores.items():
            ranking.linked = shipped if name == "links" else off
            spent.clear()
            t = time.perf_counter()
            store.search(QUERY, namespace="notes", limit=10, group="note", snippets=True, **kw)
            row[name + "_ms"] = round((time.perf_counter() - t) * 1e3, 1)
            if name == "links":
                row["graph_ms"] = round(sum(spent) * 1e3, 1)
        ranking.linked = shipped
        steps.append(row)
        print(f"{n:>6} {label:32} links {row['links_ms']:8.1f} ms (graph "
              f"{row['graph_ms']:7.1f})   without {row['without_ms']:8.1f} ms", flush=True)

    def changed(label: str, edit) -> None:
        edit()
        stores["links"].sync([Folder.of(vault)])
        step(label)

    step("first search")
    step("the same again")
    before = max(r.known_at for r in stores["links"].export())
    changed("one note's text edited", lambda: _write(vault, {_path(3): (
        vault / _path(3)).read_text().replace("w", "W", 1)}))
    changed("one note's links changed", lambda: _write(vault, {_path(5): _note(5, n, rng,
                                                                                words)}))
    changed("a note added", lambda: _write(vault, {"f1/added.md": _note(n + 1, n, rng,
                                                                        words)}))
    changed("a note renamed", lambda: os.rename(vault / _path(7), vault / "f7/s0/renamed.md"))
    step("at a cutoff before the changes", as_of=before)
    for store in stores.values():
        store.close()
    return {"notes": n, "links": 10 * n, "import_seconds": round(built, 1), "steps": steps,
            "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "linked_vault.json")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a size, in this process
    args = ap.parse_args()
    if args.one:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(measure(args.one, Path(tmp))))
        return
    out = []
    for n in args.sizes:  # each size in a fresh process: its memory is its own
        p = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True,
                           text=True, check=True)
        lines = p.stdout.strip().split("\n")
        print("\n".join(lines[:-1]), flush=True)
        out.append(json.loads(lines[-1]))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    args.out.write_text(json.dumps({"commit": commit, "query": QUERY, "sizes": out},
                                   indent=1) + "\n")


if __name__ == "__main__":
    main()
