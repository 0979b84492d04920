"""Search quality on the Obsidian help vault, judged on questions written by reading the notes
before any search was run (benchmarks/data/help_questions.json), with a development and a
held-out half. Run as a script:

    .venv/bin/python benchmarks/help_questions.py --vault PATH/obsidian-help/en \
        [--db /tmp/help.db] [--source OTHER_CHECKOUT] \
        [--out benchmarks/results/help_questions.json]

Imports the folder (the English part of github.com/obsidianmd/obsidian-help) through
``MemoryStore`` with the semantic model on (e5) and embeds every section; the database is
kept at ``--db`` so that a rerun reuses it (a sync of an unchanged folder imports nothing
and nothing is left to embed: the first run embedded 1,540 sections in 18 minutes on a busy
2-core machine, a rerun takes about 2). Each question is searched as MCP memory_search
searches (limit 5, snippets, one result per note), and again at limit 10 for MRR@10. A result
is relevant when its note is one of the question's notes. Reported per split (dev, heldout;
fresh and fresh2: 60 and 80 more questions written after every ranking choice; dev2) and
per kind:

- ``first``, ``top3``: share of questions whose first relevant result is at rank 1, in the
  top 3 (of the 5 an assistant gets); ``mrr10``: mean reciprocal rank at limit 10;
- ``section``: the first relevant result is a section (or part of a long one) holding
  answer lines;
  ``shown``: its snippet (the ``file:line`` span shown), or on the first result one of
  the note's other sections it shows (``more``), overlaps the answer's lines;
- nonsense (made-up words): share of queries that get any result (should be 0), by shape;
- generated made-up words (a fixed seed, ten shapes): how many get any result, alone and
  in five frames beside real words;
- translated: development questions put into French, German or Spanish, judged as the
  question they translate (notes in English): how many get an answer, the right note
  first or in the top 5, against the English question's first;
- filler (question-form, one right section): the results beyond the first of the right note
  (``mean_beyond``; ``mean_others``: those of other notes), how many of them share no
  content word with the question (matched by stop-words or by a vague likeness of
  meaning), the rank of the right note and whether its snippet shows the answer.
  ``others`` (results of notes not judged relevant) is reported for the questions too.

``--source DIR`` runs another checkout of the package (DIR/daemon is imported instead of this
tree's): give each checkout its own ``--db``, then compare the two JSON files. Before any
search, the data is checked: answer lines inside their files, every paraphrase sharing no
content word with its answer lines and their heading.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "help_questions.json"
LIMIT = 5  # memory_search's default
KINDS = ("howto", "where", "trouble", "paraphrase", "keywords", "question-form")
SPLITS = ("dev", "heldout")
# Questions also have a third set, written after every ranking choice and run once to
# report, a second development set (dev2), written later still, and a fourth set (fresh2,
# 80 questions) written after dev2's ranking choices, run once to report.
QUESTION_SPLITS = SPLITS + ("fresh", "dev2", "fresh2")

# Function words: a query word in this list is not a "content word" (paraphrase check,
# filler results that share only these with the question).
STOP = frozenset("""
a an the and or but if of to in on at by for with from into onto out up down over under about
as is are was were be been being am do does did done doing have has had having i me my mine
we our you your yours it its this that these those there here what which who whom whose when
where why how can could should would will shall may might must not no nor so too very just
than then them they their he she his her him one some any all each every other another such
own same both few more most only also again once s t don doesn didn won isn aren wasn weren
let get got way thing things much many off via per without within after still between before
during while until upon through across against among
""".split())


def content_words(text: str) -> set[str]:
    """Lower-cased words minus STOP, with a crude suffix strip (so "notes" meets "note")."""
    out = set()
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        if w in STOP or len(w) < 2:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[:-len(suffix)]
                break
        out.add(w)
    return out


def check_data(data: dict, vault: Path) -> list[str]:
    """What is wrong with the question file (empty when nothing)."""
    files: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        if path not in files:
            files[path] = (vault / path).read_text(encoding="utf-8").splitlines()
        return files[path]

    def heading(path: str, first: int) -> str:
        return next((l for l in reversed(lines(path)[:first]) if l.startswith("#")), "")

    errors = [f"{t['id']}: translates no question {t['of']}" for t in data.get("translated", [])
              if t["of"] not in {q["id"] for q in data["questions"]}]
    for item in data["questions"] + data["filler"]:
        for path in item["relevant"]:
            if not (vault / path).is_file():
                errors.append(f"{item['id']}: no note {path}")
        for span in item["answer"]:
            a, b = span["lines"]
            if span["path"] not in item["relevant"] or not 1 <= a <= b <= len(lines(span["path"])):
                errors.append(f"{item['id']}: bad answer span {span}")
        if item.get("kind") == "paraphrase":
            words = set()
            for span in item["answer"]:
                a, b = span["lines"]
                words |= content_words("\n".join(lines(span["path"])[a - 1:b])
                                       + "\n" + heading(span["path"], a))
            shared = content_words(item["query"]) & words
            if shared:
                errors.append(f"{item['id']}: paraphrase shares {sorted(shared)}")
    return errors


def commit_of(root: Path, *paths: str) -> str | None:
    """The checkout's commit (with paths: the last commit that changed them)."""
    try:
        return subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%H", "--", *paths],
                              check=True, capture_output=True, text=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def package_arguments(ap: argparse.ArgumentParser, out: Path) -> None:
    """The options every benchmark over a vault of the package takes: --db, --source, --out."""
    ap.add_argument("--db", type=Path, help="database to build or reuse (default: a file in "
                    "/tmp named after the package's commit)")
    ap.add_argument("--source", type=Path, help="another checkout of the package to run")
    ap.add_argument("--out", type=Path, default=out)


def package_run(args: argparse.Namespace, name: str) -> tuple[Path, Path, dict]:
    """The checkout to run (its daemon/ put first on the path), the database (``--db``, or
    /tmp/NAME-COMMIT.db), and what a result records of them."""
    root = (args.source or HERE.parent).resolve()
    sys.path.insert(0, str(root / "daemon"))
    commit = commit_of(root)
    db = args.db or Path(f"/tmp/{name}-{(commit or 'unknown')[:12]}.db")
    return root, db, {"source": str(args.source) if args.source else "this checkout",
                      "commit": commit, "daemon_commit": commit_of(root, "daemon")}


def open_vault(db: Path, vault: Path):
    """The store at ``db`` holding the vault, every section embedded (reused when there)."""
    from personal_memory import MemoryStore
    from personal_memory.notes.folders import Folder

    folder = Folder.of(vault)
    store = MemoryStore.open(db, embedder="e5")
    started = time.perf_counter()
    report = store.sync([folder])
    pending = store.pending_vectors()
    print(f"{db}: {report.files_imported} notes imported, {pending} sections to embed",
          file=sys.stderr)
    if pending:
        shown = [0]

        def progress(done: int, total: int) -> None:
            if done - shown[0] >= total / 10 or done == total:
                shown[0] = done
                print(f"  embedded {done} of {total}", file=sys.stderr)

        run = store.embed_pending(progress=progress)
        if store.pending_vectors():
            raise SystemExit(f"{store.pending_vectors()} sections left without a vector "
                             f"(interrupted: {run.interrupted})")
    return store, folder, {"notes_imported": report.files_imported,
                           "sections_embedded_now": pending,
                           "prepare_seconds": round(time.perf_counter() - started, 1)}


class Searcher:
    def __init__(self, store, folder):
        self.store, self.folder, self.sections = store, folder, {}
        self.prefix = folder.collection + "/"

    def __call__(self, query: str, limit: int):
        for whole in ({"group": "note"}, {"whole_sections": True}, {}):
            try:  # one result per note as MCP gives them (else per section, as a version can)
                return self.store.search(query, namespace=self.folder.namespace,
                                         limit=limit, snippets=True, **whole)
            except TypeError:
                continue
        raise AssertionError("unreachable: the last form takes no grouping argument")

    def path(self, result) -> str | None:
        note = result.note
        return note[len(self.prefix):] if note and note.startswith(self.prefix) else note

    def section_span(self, result) -> tuple[int, int] | None:
        """The file lines of the section a result belongs to."""
        if result.note not in self.sections:
            view = self.store.read(result.note, namespace=self.folder.namespace)
            self.sections[result.note] = {s.memory_id: (s.line_start, s.line_end)
                                          for s in view.sections}
        return self.sections[result.note].get(result.memory_id)


def overlaps(span, answers) -> bool:
    return span is not None and span[0] is not None and any(
        span[0] <= b and a <= span[1] for a, b in answers)


def judge(search: Searcher, item: dict) -> dict:
    relevant = set(item["relevant"])
    found = search(item["query"], LIMIT)
    paths = [search.path(r) for r in found]
    rank = next((i + 1 for i, p in enumerate(paths) if p in relevant), None)
    out = {"id": item["id"], "rank": rank, "results": len(found),
           "top": [f"{p}:{r.snippet.line_start}-{r.snippet.line_end}" if r.snippet else p
                   for p, r in zip(paths, found)],
           "section": False, "shown": False}
    if rank:
        hit = found[rank - 1]
        answers = [tuple(s["lines"]) for s in item["answer"] if s["path"] == paths[rank - 1]]
        out["section"] = overlaps(search.section_span(hit), answers)
        shown = [hit.snippet] + [m.snippet for m in getattr(hit, "more", ())]
        out["shown"] = any(s is not None and overlaps((s.line_start, s.line_end), answers)
                           for s in shown)
    wide = [search.path(r) for r in search(item["query"], 10)]
    rank10 = next((i + 1 for i, p in enumerate(wide) if p in relevant), None)
    out["rr10"] = 1 / rank10 if rank10 else 0.0
    words = content_words(item["query"])

    def unrelated(r) -> bool:  # shares no content word with the question
        return not words & content_words(" ".join([r.title or "", *(r.heading_path or []),
                                                   r.content]))
    beyond = [r for i, r in enumerate(found) if i + 1 != rank]
    out["others"] = sum(1 for p in paths if p not in relevant)
    out["beyond"] = len(beyond)
    out["beyond_no_shared_word"] = sum(1 for r in beyond if unrelated(r))
    return out


def summary(rows: list[dict]) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0}
    share = lambda key: round(sum(1 for r in rows if key(r)) / n, 3)  # noqa: E731
    return {"n": n,
            "first": share(lambda r: r["rank"] == 1),
            "top3": share(lambda r: r["rank"] is not None and r["rank"] <= 3),
            "top5": share(lambda r: r["rank"] is not None),
            "mrr10": round(statistics.fmean(r["rr10"] for r in rows), 3),
            "section": share(lambda r: r["section"]),
            "shown": share(lambda r: r["shown"]),
            "mean_others": round(statistics.fmean(r["others"] for r in rows), 2),
            "mean_beyond": round(statistics.fmean(r["beyond"] for r in rows), 2),
            "mean_beyond_no_shared_word": round(
                statistics.fmean(r["beyond_no_shared_word"] for r in rows), 2)}


def generated_nonsense(seed: int = 11, each: int = 60) -> list[tuple[str, str, str]]:
    """(shape, frame, query): made-up words drawn with a fixed seed, ``each`` of ten shapes
    (pronounceable of 2 to 4 syllables, keyboard mashes of 5, 8 and 12 letters, a real word
    of the vault with a syllable before or after it, a capitalised name, letters with
    digits), asked alone and in five frames beside real words ("how do I use {}?")."""
    rng = random.Random(seed)
    consonants, vowels = "bcdfghjklmnprstvwxz", "aeiou"

    def syllables(n: int) -> str:
        return "".join(rng.choice(consonants) + rng.choice(vowels)
                       + (rng.choice(consonants) if rng.random() < 0.4 else "")
                       for _ in range(n))

    def mash(n: int) -> str:
        return "".join(rng.choice("qwertyuiopasdfghjklzxcvbnm") for _ in range(n))

    real = ["note", "sync", "plugin", "vault", "graph", "link", "theme", "publish",
            "canvas", "search", "tag", "file"]
    shapes = {"syllables2": lambda: syllables(2), "syllables3": lambda: syllables(3),
              "syllables4": lambda: syllables(4), "mash5": lambda: mash(5),
              "mash8": lambda: mash(8), "mash12": lambda: mash(12),
              "word+syllable": lambda: rng.choice(real) + syllables(1),
              "syllable+word": lambda: syllables(1) + rng.choice(real),
              "name": lambda: syllables(3).capitalize(),
              "digits": lambda: syllables(2) + str(rng.randint(1, 999))}
    frames = ["{}", "how do I use {}?", "{} settings", "what is {}?",
              "enable {} in obsidian", "{} sync error"]
    return [(shape, frame, frame.format(make()))
            for shape, make in shapes.items() for frame in frames for _ in range(each)]


def made_up_alone_and_framed(search) -> dict:
    """How many generated made-up words get an answer: alone, and in frames beside real
    words (where a word the model reads in two pieces counts as real, docs/data-model.md)."""
    out: dict = {}
    for shape, frame, query in generated_nonsense():
        where = "alone" if frame == "{}" else "framed"
        cell = out.setdefault(where, {"n": 0, "answered": 0, "by_shape": {}, "examples": []})
        cell["n"] += 1
        if len(search(query, LIMIT)):
            cell["answered"] += 1
            cell["by_shape"][shape] = cell["by_shape"].get(shape, 0) + 1
            if len(cell["examples"]) < 20:
                cell["examples"].append(query)
    return out


def run(store, folder, data: dict) -> dict:
    search = Searcher(store, folder)
    started = time.perf_counter()
    rows = {item["id"]: judge(search, item) for item in data["questions"]}
    by = {}
    for split in QUESTION_SPLITS:
        items = [q for q in data["questions"] if q["split"] == split]
        by[split] = {"all": summary([rows[q["id"]] for q in items])}
        for kind in KINDS:
            by[split][kind] = summary([rows[q["id"]] for q in items if q["kind"] == kind])
    nonsense = {}
    for split in SPLITS:
        items = [q for q in data["nonsense"] if q["split"] == split]
        answered = {q["id"]: len(search(q["query"], LIMIT)) for q in items}
        shapes = sorted({q["shape"] for q in items})
        nonsense[split] = {
            "n": len(items),
            "answered": round(sum(1 for v in answered.values() if v) / len(items), 3),
            "mean_results": round(statistics.fmean(answered.values()), 2),
            "by_shape": {s: round(sum(1 for q in items if q["shape"] == s and answered[q["id"]])
                                  / sum(1 for q in items if q["shape"] == s), 3)
                         for s in shapes},
            "answered_queries": [q["query"] for q in items if answered[q["id"]]]}
    filler = {}
    filler_rows = {q["id"]: judge(search, q) for q in data["filler"]}
    for split in SPLITS:
        items = [filler_rows[q["id"]] for q in data["filler"] if q["split"] == split]
        filler[split] = summary(items)
        filler[split]["with_beyond"] = round(
            sum(1 for r in items if r["beyond"]) / len(items), 3)
    originals = {q["id"]: q for q in data["questions"]}
    translated_rows = [{**judge(search, {**originals[t["of"]], "id": t["id"],
                                         "query": t["query"]}), "lang": t["lang"]}
                       for t in data.get("translated", [])]
    translated = {}
    if translated_rows:
        english = [rows[t["of"]] for t in data["translated"]]
        translated = {"n": len(translated_rows),
                      "answered": sum(1 for r in translated_rows if r["results"]),
                      "first": sum(1 for r in translated_rows if r["rank"] == 1),
                      "top5": sum(1 for r in translated_rows if r["rank"] is not None),
                      "first_in_english": sum(1 for r in english if r["rank"] == 1),
                      "per_query": translated_rows}
    generated = made_up_alone_and_framed(search)
    return {"questions": by, "nonsense": nonsense, "generated_nonsense": generated,
            "filler": filler, "translated": translated,
            "search_seconds": round(time.perf_counter() - started, 1),
            "per_question": list(rows.values()), "per_filler": list(filler_rows.values())}


def table(result: dict) -> str:
    head = f"{'':22}{'n':>4}{'first':>7}{'top3':>7}{'mrr10':>7}{'sect':>7}{'shown':>7}{'others':>8}"
    lines = [head]
    for split in QUESTION_SPLITS:
        for kind, s in result["questions"][split].items():
            if s["n"]:
                lines.append(f"{split + ' ' + kind:22}{s['n']:>4}{s['first']:>7.2f}"
                             f"{s['top3']:>7.2f}{s['mrr10']:>7.2f}{s['section']:>7.2f}"
                             f"{s['shown']:>7.2f}{s['mean_others']:>8.2f}")
    for split in SPLITS:
        f, n = result["filler"][split], result["nonsense"][split]
        lines.append(f"{split} filler: n={f['n']} first={f['first']:.2f} shown={f['shown']:.2f} "
                     f"results beyond the right one={f['mean_beyond']:.2f} (other notes: "
                     f"{f['mean_others']:.2f}; sharing no content word with the question: "
                     f"{f['mean_beyond_no_shared_word']:.2f})")
        lines.append(f"{split} nonsense: n={n['n']} answered={n['answered']:.2f} "
                     f"mean results={n['mean_results']:.2f} {n['by_shape']}")
    for where, g in result.get("generated_nonsense", {}).items():
        lines.append(f"generated made-up words, {where}: answered {g['answered']} of {g['n']} "
                     f"{g['by_shape']}")
    t = result.get("translated")
    if t:
        lines.append(f"translated (fr/de/es): n={t['n']} answered={t['answered']} "
                     f"first={t['first']} top5={t['top5']} (the same in English: first="
                     f"{t['first_in_english']})")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", required=True, type=Path,
                    help="the en/ folder of a clone of obsidianmd/obsidian-help")
    package_arguments(ap, HERE / "results" / "help_questions.json")
    args = ap.parse_args()
    root, db, about = package_run(args, "help-questions")
    vault = args.vault.resolve()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    errors = check_data(data, vault)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    store, folder, prepared = open_vault(db, vault)
    with store:
        result = {**about, "embedder": store.embedder, "limit": LIMIT, "db": db.name,
                  **prepared, **run(store, folder, data)}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
