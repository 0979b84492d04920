"""Questions as people type them, in the languages of the Obsidian help vault, keyword-only.

    .venv/bin/python benchmarks/question_frames.py --vault PATH/obsidian-help \
        [--source OTHER/daemon] [--out benchmarks/results/question_frames.json]

Each language's folder is imported alone, and each note's headings and first sentence (as
``vault_notes.py`` draws them) are asked twice: as they are, and inside a question of that
language's function words ("jak mogę ... ?", "hur kan jag ... ?"). Reported per language:

- ``hit_at_1`` / ``hit_at_3``: the heading's own note first / in the top 3, asked as it is
  (the headings hold function words too: what leaving them out costs or gains);
- ``framed_hit_at_1``: the same, asked inside the question;
- ``same_top3``: share of queries whose top 3 notes are the same both ways;
- ``brought_in``: mean number of notes in the question's top 5 that the heading alone does
  not return at all (in its top 50): results that match only the question's little words.

``--source`` runs the same with another version of the package (its daemon/ folder).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from vault_notes import queries_of  # noqa: E402

# A question around the query, in each language's own function words.
FRAMES = {
    "en": "how can I {}?", "de": "wie kann ich {}?", "fr": "est-ce que je {} ?",
    "es": "¿cómo se {}?", "it": "perché non {}?", "pt": "como {}?", "nl": "wanneer kan ik {}?",
    "ru": "как мне {}?", "uk": "як мені {}?", "pl": "jak mogę {}?", "cs": "jak mohu {}?",
    "sk": "ako môžem {}?", "ca": "com puc {}?", "ro": "cum să {}?", "da": "hvordan kan jeg {}?",
    "no": "hvordan kan jeg {}?", "sv": "hur kan jag {}?", "fi": "miten voin {}?",
    "hu": "hogyan tudom {}?", "tr": "{} nedir ve nasıl?", "id": "bagaimana saya bisa {}?",
    "vi": "làm thế nào để {}?", "el": "πώς μπορώ να {};", "ar": "كيف يمكنني {}؟",
    "fa": "چگونه {} ؟", "he": "איך אני {}?", "bn": "আমি কীভাবে {}?",
    "ja": "{}にはどうすればいいですか？",
}

ASK = r"""
import json, sys
from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
db, folder, queries, frame = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3])), sys.argv[4]
def notes(query, limit):
    try:
        return [r.note for r in s.search(query, namespace="notes", limit=limit, group="note")]
    except Exception:
        return []
with MemoryStore.open(db, embedder="none") as s:
    s.sync([Folder.of(folder)])
    out = [(notes(q, 50), notes(frame.format(q), 5)) for _, q in queries]
print(json.dumps(out))
"""


def ask(source: Path, root: Path, queries: list, frame: str) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        qfile = Path(tmp) / "q.json"
        qfile.write_text(json.dumps(queries))
        env = {**os.environ, "PYTHONPATH": str(source), "MEMORY_EMBEDDER": "none"}
        done = subprocess.run([sys.executable, "-c", ASK, str(Path(tmp) / "m.db"), str(root),
                               str(qfile), frame], capture_output=True, text=True, env=env,
                              check=True)
        return json.loads(done.stdout)


def summary(queries: list, found: list) -> dict:
    n = len(queries)
    rank = [(plain.index(note) + 1 if note in plain else None, framed.index(note) + 1
             if note in framed else None) for (note, _), (plain, framed) in zip(queries, found)]
    return {
        "queries": n,
        "hit_at_1": round(sum(r == 1 for r, _ in rank) / n, 3),
        "hit_at_3": round(sum(r is not None and r <= 3 for r, _ in rank) / n, 3),
        "framed_hit_at_1": round(sum(f == 1 for _, f in rank) / n, 3),
        "same_top3": round(sum(p[:3] == f[:3] for p, f in found) / n, 3),
        "brought_in": round(sum(len(set(f) - set(p)) for p, f in found) / n, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", required=True, help="a clone of obsidianmd/obsidian-help")
    ap.add_argument("--source", help="another version's daemon/ folder, for a before")
    ap.add_argument("--languages", default=",".join(FRAMES))
    ap.add_argument("--out", default=str(HERE / "results" / "question_frames.json"))
    args = ap.parse_args()
    sources = {"this": HERE.parent / "daemon"}
    if args.source:
        sources = {"before": Path(args.source), **sources}
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for lang in args.languages.split(","):
            if not (Path(args.vault) / lang).is_dir():
                continue
            root = Path(tmp) / lang
            shutil.copytree(Path(args.vault) / lang, root)
            queries = queries_of(root, lang)
            out[lang] = {name: summary(queries, ask(src, root, queries, FRAMES[lang]))
                         for name, src in sources.items()}
            print(lang, json.dumps(out[lang]), flush=True)
    Path(args.out).write_text(json.dumps({"frames": FRAMES, "languages": out}, indent=1,
                                         ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
