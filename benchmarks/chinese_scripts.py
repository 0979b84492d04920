"""Traditional and simplified Chinese, keyword-only, on the Obsidian help vault's zh/.

    .venv/bin/python benchmarks/chinese_scripts.py --vault PATH/obsidian-help/zh \
        [--source OTHER/daemon] [--out benchmarks/results/chinese_scripts.json]

The simplified notes are imported, and every heading that OpenCC's ``s2t`` writes
otherwise is asked in traditional characters (as a reader in Taiwan or Hong Kong types
it): is the heading's own note first? ``--source`` runs the same with another version of
the package (its daemon/ folder), for a before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

RUN = r"""
import json, sys
from pathlib import Path
import opencc
from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
db, vault = sys.argv[1], Path(sys.argv[2])
traditional = opencc.OpenCC("s2t").convert
store = MemoryStore.open(db, embedder="none")
store.sync([Folder.of(vault)])
asked = []
for path in sorted(vault.rglob("*.md")):
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = line.lstrip("#").strip()
        if line.startswith("#") and line.lstrip("#").startswith(" ") and heading \
                and traditional(heading) != heading:
            asked.append((f"{vault.name}/{path.relative_to(vault).as_posix()}",
                          traditional(heading)))
first = sum(1 for note, query in asked
            if [r.note for r in store.search(query, namespace="notes", group="note",
                                             limit=1)] == [note])
print(json.dumps({"queries": len(asked), "hit_at_1": round(first / len(asked), 3)}))
"""


def measure(source: Path, vault: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, "-c", RUN, str(Path(tmp) / "m.db"), str(vault)],
                              env={**os.environ, "PYTHONPATH": str(source)},
                              capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", type=Path, required=True)
    ap.add_argument("--source", type=Path, help="another version's daemon/ folder")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "chinese_scripts.json")
    a = ap.parse_args()
    out = {"this_version": measure(HERE.parent / "daemon", a.vault)}
    if a.source:
        out["other_version"] = measure(a.source, a.vault)
    print(json.dumps(out))
    a.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
