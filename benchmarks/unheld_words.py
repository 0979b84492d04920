"""Real words the notes do not use, in several languages, model on.

    .venv/bin/python benchmarks/unheld_words.py --vault PATH/obsidian-help \
        [--languages en de fr] [--dbs DIR] [--source OTHER/daemon]

For each language of the Obsidian help vault, every other note (in path order) is imported
into a database of its own, kept in ``--dbs`` between runs (embedding half a language
takes a few minutes). 200 two-word queries pair a word those notes hold (in 3 to 40 places)
with a word of 4 letters or more that only the other half holds, twice or more: a real
word of the language that this database lacks, as a person asks "vacation plans" of notes
that never say vacation. Each such query should be answered by its held word and by
meaning; counted are those that got no answer, by reason (a made-up-looking word, "most
words unknown", no word held), beside 100 queries of two held words. Queries are drawn with
a fixed seed. ``--source`` asks the same with another version of the package.
Saves JSON to benchmarks/results/unheld_words.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "daemon"
_WORD = re.compile(r"[^\W\d_]{4,}")
_MARKUP = re.compile(r"`[^`]*`|\]\([^)]*\)|https?://\S+")

ASK = r"""
import json, sys
from personal_memory import MemoryStore
db, queries = sys.argv[1], json.load(open(sys.argv[2]))
out = []
with MemoryStore.open(db, embedder="e5", read_only=True) as s:
    for q in queries:
        found = s.search(q, namespace="notes", limit=5)
        out.append(None if found else (found.no_answer or ""))
print(json.dumps(out))
"""

BUILD = r"""
import sys
from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
with MemoryStore.open(sys.argv[1], embedder="e5") as s:
    s.sync([Folder.of(sys.argv[2])])
    s.embed_pending()
"""


def words(paths: list[Path]) -> collections.Counter:
    found: collections.Counter = collections.Counter()
    for path in paths:
        text = _MARKUP.sub(" ", path.read_text(encoding="utf-8", errors="replace"))
        found.update(w.lower() for w in _WORD.findall(text))
    return found


def queries(notes: list[Path], seed: int = 3) -> tuple[list[str], list[str]]:
    here, there = words(notes[0::2]), words(notes[1::2])
    only_there = sorted(w for w in there if w not in here and there[w] >= 2)
    held = sorted(w for w in here if 3 <= here[w] <= 40)
    rnd = random.Random(seed)
    pairs = []
    for _ in range(200):
        a, b = rnd.choice(held), rnd.choice(only_there)
        pairs.append(f"{a} {b}" if rnd.random() < 0.5 else f"{b} {a}")
    both = [f"{rnd.choice(held)} {rnd.choice(held)}" for _ in range(100)]
    return pairs, both


def reason(why: str) -> str:
    if "nor one spelled" in why:
        return "made_up_word"
    if "most words" in why:
        return "most_words_unknown"
    return "no_word_held"


def ask(source: Path, db: Path, asked: list[str], tmp: Path) -> list[str | None]:
    qfile = tmp / "q.json"
    qfile.write_text(json.dumps(asked))
    env = {**os.environ, "PYTHONPATH": str(source), "MEMORY_EMBEDDER": "e5"}
    done = subprocess.run([sys.executable, "-c", ASK, str(db), str(qfile)],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", required=True, type=Path)
    ap.add_argument("--languages", nargs="+", default=["en", "de", "fr"])
    ap.add_argument("--dbs", type=Path, default=Path("/tmp/unheld-words"))
    ap.add_argument("--source", type=Path, help="another version's daemon/ folder")
    ap.add_argument("--out", default=str(HERE / "results" / "unheld_words.json"))
    args = ap.parse_args()
    sources = {"this_version": SOURCE}
    if args.source:
        sources["other_version"] = args.source.resolve()
    result = {}
    for lang in args.languages:
        notes = sorted((args.vault / lang).rglob("*.md"))
        folder, db = args.dbs / lang, args.dbs / f"{lang}.db"
        if not db.exists():
            shutil.rmtree(folder, ignore_errors=True)
            for path in notes[0::2]:
                target = folder / path.relative_to(args.vault / lang)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)
            subprocess.run([sys.executable, "-c", BUILD, str(db), str(folder)], check=True,
                           env={**os.environ, "PYTHONPATH": str(SOURCE),
                                "MEMORY_EMBEDDER": "e5"})
        pairs, both = queries(notes)
        result[lang] = {}
        for name, source in sources.items():
            got = ask(source, db, pairs + both, args.dbs)
            refused = [(q, why) for q, why in zip(pairs, got[:len(pairs)]) if why is not None]
            result[lang][name] = {
                "queries": len(pairs),
                "unanswered": len(refused),
                "by_reason": dict(collections.Counter(reason(w) for _, w in refused)),
                "unanswered_examples": [q for q, _ in refused[:10]],
                "two_held_words_unanswered": sum(w is not None for w in got[len(pairs):]),
            }
            print(lang, name, json.dumps(result[lang][name], ensure_ascii=False), flush=True)
    Path(args.out).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
