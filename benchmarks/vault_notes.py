"""Notes in other languages and notes as links, on the Obsidian help vault.

    .venv/bin/python benchmarks/vault_notes.py --vault PATH/obsidian-help \
        [--source OTHER/daemon] [--out benchmarks/results/vault_notes.json]

PATH is a clone of github.com/obsidianmd/obsidian-help (every language in its own folder).

- Chinese and Japanese, keyword-only: the ja/ and zh/ folders are imported, and each note's
  own headings and the first sentence of its text are asked as queries; the note's rank
  gives Hit@1, Hit@3 and MRR (reciprocal rank within the top 10). ``--source`` runs the same
  with another version of the package (its daemon/ folder), for a before and after.
- Links, on en/: every link of every note at the latest cutoff, by kind (note, section,
  block, attachment, external, dangling), each resolved one checked against the file
  existing; and the backlinks of 10 notes compared with a grep of the vault for links to
  them (wikilinks by name or path, and Markdown links).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "daemon"

RANKS = r"""
import json, sys
from personal_memory import MemoryStore
try:
    from personal_memory.notes.folders import Folder
except ImportError:  # versions before the subpackages
    from personal_memory.folders import Folder
db, folder, queries = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
with MemoryStore.open(db, embedder="none") as s:
    s.sync([Folder.of(folder)])
    out = []
    for note, query in queries:
        try:
            found = [r.note for r in s.search(query, namespace="notes", limit=10)]
        except Exception:
            found = []
        out.append(found.index(note) + 1 if note in found else None)
print(json.dumps(out))
"""

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.M)
_SENTENCE = re.compile(r"[^。！？.!?\n]{6,}[。！？.!?]")


def queries_of(root: Path, collection: str) -> list[tuple[str, str]]:
    """(note ID, query) pairs: the note's headings and its first sentence of text."""
    out = []
    for path in sorted(root.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        body = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)
        note = f"{collection}/{path.relative_to(root).as_posix()}"
        asks = [h for h in _HEADING.findall(body)][:5]
        plain = "\n".join(line for line in body.split("\n")
                          if line.strip() and not line.lstrip().startswith(("#", ">", "!", "|",
                                                                            "-", "*", "`")))
        sentence = _SENTENCE.search(plain)
        if sentence:
            asks.append(sentence.group(0))
        for q in asks:
            q = re.sub(r"[\"\[\]()*`|]", " ", q).strip().lstrip("-")
            if len(q) >= 2:
                out.append((note, q))
    return out


def ranks(source: Path, root: Path, queries: list) -> list[int | None]:
    with tempfile.TemporaryDirectory() as tmp:
        qfile = Path(tmp) / "q.json"
        qfile.write_text(json.dumps(queries))
        env = {**os.environ, "PYTHONPATH": str(source), "MEMORY_EMBEDDER": "none"}
        done = subprocess.run([sys.executable, "-c", RANKS, str(Path(tmp) / "m.db"), str(root),
                               str(qfile)], capture_output=True, text=True, env=env,
                              check=True)
        return json.loads(done.stdout)


def summary(found: list[int | None]) -> dict:
    n = len(found)
    return {"queries": n,
            "hit_at_1": round(sum(r == 1 for r in found) / n, 3),
            "hit_at_3": round(sum(r is not None and r <= 3 for r in found) / n, 3),
            "mrr": round(sum(1 / r for r in found if r) / n, 3)}


def languages(vault: Path, sources: dict[str, Path]) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for lang in ("ja", "zh"):
            root = Path(tmp) / lang
            shutil.copytree(vault / lang, root)
            queries = queries_of(root, lang)
            out[lang] = {name: summary(ranks(src, root, queries))
                         for name, src in sources.items()}
    return out


_WIKI = re.compile(r"!?\[\[([^\]|#]*)")
_MD = re.compile(r"\]\(([^)\s]+\.md)")


def links(vault: Path) -> dict:
    sys.path.insert(0, str(SOURCE))
    from personal_memory import MemoryStore
    from personal_memory.notes.folders import Folder
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "en"
        shutil.copytree(vault / "en", root)
        with MemoryStore.open(Path(tmp) / "m.db", embedder="none") as s:
            s.sync([Folder.of(root)])
            notes = sorted(f"en/{p.relative_to(root).as_posix()}" for p in root.rglob("*.md"))
            kinds: dict[str, int] = {}
            wrong = 0
            for note in notes:
                for link in s.links(note, namespace="notes").outgoing:
                    kinds[link.kind] = kinds.get(link.kind, 0) + 1
                    if link.note and not (root / link.note[3:]).exists():
                        wrong += 1
            checked = []
            for note in notes[::max(1, len(notes) // 10)][:10]:
                found = {b.source_note for b in s.links(note, namespace="notes").backlinks}
                name = Path(note).stem.casefold()
                rel = note[3:-3].casefold()
                grep = set()
                for other in notes:
                    if other == note:
                        continue
                    text = (root / other[3:]).read_text(encoding="utf-8", errors="replace")
                    for target in _WIKI.findall(text):
                        t = target.strip().casefold().removesuffix(".md")
                        if t and (t == rel or t == name or rel.endswith("/" + t)):
                            grep.add(other)
                    for target in _MD.findall(text):
                        from urllib.parse import unquote
                        resolved = os.path.normpath(os.path.join(
                            os.path.dirname(other[3:]), unquote(target)))
                        if resolved.casefold() == note[3:].casefold():
                            grep.add(other)
                checked.append({"note": note, "backlinks": len(found), "grep": len(grep),
                                "only_in_backlinks": sorted(found - grep),
                                "only_in_grep": sorted(grep - found)})
    return {"notes": len(notes), "links_by_kind": kinds,
            "resolved_to_a_missing_file": wrong, "backlinks_vs_grep": checked}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", required=True, type=Path)
    ap.add_argument("--source", type=Path, help="another version's daemon/ folder")
    ap.add_argument("--out", default=str(HERE / "results" / "vault_notes.json"))
    args = ap.parse_args()
    sources = {"this_version": SOURCE}
    if args.source:
        sources["other_version"] = args.source.resolve()
    result = {"languages": languages(args.vault, sources), "links": links(args.vault)}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
