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


_ANY_WIKI = re.compile(r"!?\[\[(.+?)\]\]")
_ANY_MD = re.compile(r"!?\[[^\]\n]*\]\(<?([^)>\s]+)>?(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")


def independent_dangling(root: Path) -> dict[str, list[str]]:
    """Every link of every note that names no file of the vault, found without the
    package: wikilinks by path or by name (case-insensitive, ``.md`` optional, the pipe
    of a table escaped as ``\\|``), Markdown links relative to the note, from the vault
    root, or by name; links inside code are not links."""
    files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    paths = {f.casefold() for f in files}
    names = {f.rsplit("/", 1)[-1].casefold() for f in files}

    def exists(target: str) -> bool:
        t = target.strip().casefold()
        for c in (t, t + ".md"):
            if c in paths or c.rsplit("/", 1)[-1] in names and "/" not in c:
                return True
            if "/" in c and any(p.endswith("/" + c) for p in paths):
                return True
        return False

    out: dict[str, list[str]] = {}
    for f in files:
        if not f.endswith(".md"):
            continue
        text = _CODE.sub("", _FENCE.sub("", (root / f).read_text(encoding="utf-8",
                                                               errors="replace")))
        bad = []
        for inner in _ANY_WIKI.findall(text):
            target = re.split(r"\\?\||#|\^", inner, maxsplit=1)[0]
            if target.strip() and not exists(target):
                bad.append(inner)
        for target in _ANY_MD.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue
            from urllib.parse import unquote
            t = unquote(target.split("#", 1)[0])
            if not t:
                continue
            rel = os.path.normpath(os.path.join(os.path.dirname(f), t))
            if not (rel.casefold() in paths or exists(t.lstrip("/"))):
                bad.append(target)
        if bad:
            out["en/" + f] = bad
    return out


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
            dangling = {}
            for note in notes:
                for link in s.links(note, namespace="notes").outgoing:
                    if link.kind == "dangling":
                        dangling.setdefault(note, []).append(link.target)
        independent = independent_dangling(root)
    return {"notes": len(notes), "links_by_kind": kinds,
            "resolved_to_a_missing_file": wrong, "backlinks_vs_grep": checked,
            "dangling": {"this_package": sum(map(len, dangling.values())),
                         "independent_resolver": sum(map(len, independent.values())),
                         "notes_only_here": sorted(set(dangling) - set(independent)),
                         "notes_only_there": sorted(set(independent) - set(dangling)),
                         "here": dangling, "there": independent}}


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
