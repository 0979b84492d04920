"""Notes in other languages and notes as links, on the Obsidian help vault.

    .venv/bin/python benchmarks/vault_notes.py --vault PATH/obsidian-help \
        [--source OTHER/daemon] [--out benchmarks/results/vault_notes.json]

PATH is a clone of github.com/obsidianmd/obsidian-help (every language in its own folder).

- Other languages, keyword-only (``--languages``, default Japanese, Chinese, Thai, Khmer,
  Bengali, Korean, Arabic, Hebrew, Russian, German): each language's folder is imported, and
  - each note's own headings and the first sentence of its text are asked as queries; the
    note's rank gives Hit@1, Hit@3 and MRR (reciprocal rank within the top 10);
  - 150 words of the notes' text, drawn at random (seeded), are asked alone: a word is a
    run of letters and their combining marks, of 4 characters or more, not ASCII; in the
    scripts written without spaces (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) 2 to 5
    characters with their marks taken from inside a run of that script. A result is right when its title
    or text holds the word as written (NFKC, case folded, Arabic and Hebrew vowel points
    optional): precision at 1 and at 5 (per section), and how many words got no result;
  - in Korean, whose words take their particles without a space, also 150 words of three
    syllables or more asked without their last syllable (노트를: 노트), judged the same way.
  ``--source`` runs the same with another version of the package (its daemon/ folder),
  for a before and after.
- Links, on en/: every link of every note at the latest cutoff, by kind (note, section,
  block, attachment, external, dangling), each resolved one checked against the file
  existing; and the backlinks of 10 notes compared with a grep of the vault for links to
  them (wikilinks by name or path, and Markdown links).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "daemon"
sys.path.insert(0, str(SOURCE))

from personal_memory.search.text import clusters  # noqa: E402  (characters with their marks)

RANKS = r"""
import json, sys
from personal_memory import MemoryStore
try:
    from personal_memory.notes.folders import Folder
except ImportError:  # versions before the subpackages
    from personal_memory.folders import Folder
import unicodedata
db, folder, queries = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
words = json.load(open(sys.argv[4]))
def fold(text):  # Arabic and Hebrew vowel points are optional: نُقطة is نقطة
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold()
                   if not ("\u0590" <= ch <= "\u06ff" and unicodedata.category(ch) == "Mn"))
with MemoryStore.open(db, embedder="none") as s:
    s.sync([Folder.of(folder)])
    out = []
    for note, query in queries:
        try:
            found = [r.note for r in s.search(query, namespace="notes", limit=10)]
        except Exception:
            found = []
        out.append(found.index(note) + 1 if note in found else None)
    held = []
    for word in words:
        try:
            top = s.search(word, namespace="notes", limit=5)  # one result per section
        except Exception:
            top = []
        held.append([fold(word) in fold((r.title or "") + " " + r.content) for r in top])
print(json.dumps({"ranks": out, "words": held}))
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


# Scripts written without spaces between words: CJK, Thai, Lao, Myanmar, Khmer.
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff"
                       "\u3400-\u4dbf\u4e00-\u9fff]")
_UNSPACED_RUN = re.compile(f"(?:{_UNSPACED.pattern}[\u0300-\u036f\u0e00-\u0eff"
                           "\u1000-\u109f\u1780-\u17ff\u3099\u309a]*)+")
_MARKUP = re.compile(r"`[^`]*`|\[\[[^\]]*\]\]|\]\([^)]*\)|https?://\S+")


def _runs(text: str) -> list[str]:
    """Runs of letters and their combining marks."""
    out, cur = [], ""
    for ch in text:
        if unicodedata.category(ch)[0] in "LM" and (cur or unicodedata.category(ch)[0] == "L"):
            cur += ch
        else:
            if cur:
                out.append(cur)
            cur = ""
    return out + [cur] if cur else out


def words_of(root: Path, n: int = 150, seed: int = 7) -> list[str]:
    """``n`` words of the notes' text, drawn at random (see the module's docstring)."""
    rnd = random.Random(seed)
    found = set()
    for path in sorted(root.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        body = _MARKUP.sub(" ", re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S))
        for run in _runs(body):
            if run.isascii():
                continue
            if not _UNSPACED.search(run):
                if len(run) >= 4:
                    found.add(run)
                continue
            for part in _UNSPACED_RUN.findall(run):  # "Obsidianの設定": の設定
                units = clusters(part)
                if len(units) >= 4:
                    k = rnd.randint(2, min(5, len(units)))
                    at = rnd.randint(0, len(units) - k)
                    found.add("".join(units[at:at + k]))
    chosen = sorted(found)
    rnd.shuffle(chosen)
    return chosen[:n]


_HANGUL_WORD = re.compile("[\uac00-\ud7af]{3,}")
STEMS = ("ko",)  # a word takes its particles and endings without a space: 노트를, 노트에서


def stems_of(root: Path, n: int = 150, seed: int = 11) -> list[str]:
    """``n`` Korean words of three syllables or more, drawn at random (seeded), without
    their last syllable: the word as asked ("노트"), its particle left out ("노트를")."""
    rnd = random.Random(seed)
    found = set()
    for path in sorted(root.rglob("*.md")):
        text = _MARKUP.sub(" ", path.read_text(encoding="utf-8", errors="replace"))
        found.update(w[:-1] for w in _HANGUL_WORD.findall(text))
    chosen = sorted(found)
    rnd.shuffle(chosen)
    return chosen[:n]


def ranks(source: Path, root: Path, queries: list, words: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        qfile, wfile = Path(tmp) / "q.json", Path(tmp) / "w.json"
        qfile.write_text(json.dumps(queries))
        wfile.write_text(json.dumps(words))
        env = {**os.environ, "PYTHONPATH": str(source), "MEMORY_EMBEDDER": "none"}
        done = subprocess.run([sys.executable, "-c", RANKS, str(Path(tmp) / "m.db"), str(root),
                               str(qfile), str(wfile)], capture_output=True, text=True,
                              env=env, check=True)
        return json.loads(done.stdout)


def _held(held: list[list[bool]], name: str) -> dict:
    w = len(held)
    return {name: w,
            f"{name}_p_at_1": round(sum(bool(h) and h[0] for h in held) / w, 3),
            f"{name}_p_at_5": round(sum(sum(h) / 5 for h in held) / w, 3),
            f"{name}_without_result": sum(not h for h in held)}


def summary(found: dict, words: int) -> dict:
    ranked, held = found["ranks"], found["words"]
    n = len(ranked)
    out = {"queries": n,
           "hit_at_1": round(sum(r == 1 for r in ranked) / n, 3),
           "hit_at_3": round(sum(r is not None and r <= 3 for r in ranked) / n, 3),
           "mrr": round(sum(1 / r for r in ranked if r) / n, 3),
           **_held(held[:words], "words")}
    if held[words:]:
        out.update(_held(held[words:], "stems"))
    return out


LANGUAGES = ("ja", "zh", "th", "km", "bn", "ko", "ar", "he", "ru", "de")


def languages(vault: Path, sources: dict[str, Path], langs=LANGUAGES) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for lang in langs:
            root = Path(tmp) / lang
            shutil.copytree(vault / lang, root)
            queries = queries_of(root, lang)
            words = words_of(root)
            stems = stems_of(root) if lang in STEMS else []
            out[lang] = {name: summary(ranks(src, root, queries, words + stems), len(words))
                         for name, src in sources.items()}
            print(lang, json.dumps(out[lang]), file=sys.stderr, flush=True)
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
    ap.add_argument("--languages", nargs="+", default=list(LANGUAGES),
                    help="folders of the vault to measure (default: %(default)s)")
    args = ap.parse_args()
    sources = {"this_version": SOURCE}
    if args.source:
        sources["other_version"] = args.source.resolve()
    result = {"languages": languages(args.vault, sources, args.languages),
              "links": links(args.vault)}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
