"""Notes written to hurt the parsers. Run as a script:

    .venv/bin/python benchmarks/hostile_notes.py [--size 65536]

For each fragment that once made a scanner backtrack, the time to parse a note of it
repeated to SIZE and to 4 x SIZE characters (in one process: linear parsing takes about
4 times as long, quadratic 16). Then, each in a fresh `memory sync` process (keyword-only)
of a folder with the hostile note and three ordinary ones: a body of `[a](` repeated to
64 KB and to the largest section a note may hold, and the alias bomb of
tests/test_hostile_notes.py; wall time and peak memory (ru_maxrss) of each. Last, a
search whose result is a note of one line of Hindi (a word on every fourth place) of SIZE
and of 4 x SIZE characters, with its snippet. Saves JSON to
benchmarks/results/hostile_notes.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "daemon"))
sys.path.insert(0, str(HERE.parent / "tests"))

from personal_memory.limits import MAX_CONTENT_CHARS  # noqa: E402
from personal_memory.notes import model  # noqa: E402
from test_hostile_notes import ALIAS_BOMB, REPEATED  # noqa: E402


def parse_seconds(fragment: str, size: int) -> float:
    start = "" if fragment[0] == "#" else "x "
    text = start + fragment * (size // len(fragment))
    began = time.perf_counter()
    model.parse_note(text, "v", "a.md")
    return time.perf_counter() - began


def sync(hostile: str) -> dict:
    """A `memory sync` of the hostile note and three others: seconds, peak MB, output."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "v")
        root.mkdir()
        for i in range(3):
            (root / f"fine{i}.md").write_text(f"an ordinary note {i}\n")
        (root / "hostile.md").write_text(hostile)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
        env.update(MEMORY_EMBEDDER="none", PYTHONPATH=str(HERE.parent / "daemon"))
        began = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", _PEAK, sys.executable, "-m",
                            "personal_memory", "--db", str(Path(tmp, "m.db")), "sync",
                            str(root)], capture_output=True, text=True, env=env)
        seconds = time.perf_counter() - began
    *rest, peak = p.stderr.strip().splitlines()
    return {"seconds": round(seconds, 2), "exit": int(rest[-1]) if rest else None,
            "peak_mb": round(int(peak) / 1024, 1),
            "summary": (p.stdout.splitlines() or ["\n".join(rest)[-300:]])[0]}


def snippet_seconds(size: int) -> float:
    """A search with snippets whose one result is a note of one line of ``size``
    characters of Hindi (every word's place in the line is found for its mark)."""
    from personal_memory import MemoryStore
    from personal_memory.notes.folders import Folder
    phrase = "नोट्स को सिंक करें। "
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "v")
        root.mkdir()
        (root / "line.md").write_text("# line\n\n" + phrase * (size // len(phrase)) + "\n")
        with MemoryStore.open(Path(tmp, "m.db"), embedder="none") as store:
            store.sync([Folder.of(root)])
            began = time.perf_counter()
            found = store.search("सिंक", namespace="notes", limit=1, snippets=True)
            seconds = time.perf_counter() - began
            assert found and found[0].snippet is not None
    return seconds


# Runs a command and prints its exit code and peak resident memory (KB) on stderr: one
# child per measurement, as ru_maxrss of children is the largest of them all.
_PEAK = ("import resource, subprocess, sys\n"
         "code = subprocess.run(sys.argv[1:]).returncode\n"
         "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, sep='\\n',"
         " file=sys.stderr)\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=65536)
    args = ap.parse_args()
    model.parse_note("# warm\n\n[a](b)\n", "v", "a.md")
    scaling = []
    for fragment in REPEATED:
        small, large = parse_seconds(fragment, args.size), parse_seconds(fragment, 4 * args.size)
        scaling.append({"fragment": fragment, "seconds": small, "seconds_4x": large,
                        "ratio": round(large / max(small, 1e-4), 1)})
        print(f"{fragment!r:10} {small:7.3f} s  4x: {large:7.3f} s", flush=True)
    syncs = {
        "mdlink_64k": sync("[a](" * (65536 // 4)),
        "mdlink_max": sync("[a](" * ((MAX_CONTENT_CHARS - 100) // 4)),
        "alias_bomb": sync(ALIAS_BOMB),
    }
    for name, result in syncs.items():
        print(name, result, flush=True)
    small, large = snippet_seconds(args.size), snippet_seconds(4 * args.size)
    snippets = {"seconds": round(small, 3), "seconds_4x": round(large, 3),
                "ratio": round(large / max(small, 1e-4), 1)}
    print("one long line of Hindi, a search with its snippet:", snippets, flush=True)
    out = {"size": args.size, "python": sys.version.split()[0], "scaling": scaling,
           "syncs": syncs, "snippet_of_one_long_line": snippets}
    path = HERE / "results" / "hostile_notes.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print("saved", path)


if __name__ == "__main__":
    main()
