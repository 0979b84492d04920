"""What reading sections in pieces costs the model, against reading them whole.

    .venv/bin/python benchmarks/pieces_cost.py --vault PATH/obsidian-help/en [--sample 60]

Imports the folder keyword-only into a temporary database, then, for a random sample of its
sections (seeded), times e5 reading each section whole and reading its pieces, one passage
at a time as the embedding worker does, the two interleaved section by section (which
comes first alternates), so that the load of the machine weighs on both alike. A section
of one piece costs the same either way (the same passage) and is only counted. Also
counts pieces and the model's tokens over every section. Saves JSON to
benchmarks/results/pieces_cost.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "daemon"))

from personal_memory import MemoryStore  # noqa: E402
from personal_memory.embedding.models import E5Small, passage_cut, passage_text  # noqa: E402
from personal_memory.embedding.pieces import pieces  # noqa: E402
from personal_memory.notes.folders import Folder  # noqa: E402
from personal_memory.search.text import model_text  # noqa: E402
from personal_memory.store import Database  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", required=True, type=Path)
    ap.add_argument("--sample", type=int, default=60)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "pieces_cost.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(Path(tmp) / "m.db", embedder="none") as store:
            store.sync([Folder.of(args.vault.resolve())])
        db = Database.open(Path(tmp) / "m.db")
        rows = db.missing_vectors("none", 10**7)  # every section, as the model would read it
        db.close()
    sections = []
    for r in rows:
        title = model_text(r.title) if r.title else None
        content = model_text(r.content)
        sections.append((passage_text(title, content), [p.text for p in pieces(title, content)]))
    model = E5Small()
    model.passages(["warm up"])
    tokens = model.tokens
    whole_tokens = sum(tokens(w) for w, _ in sections)
    piece_tokens = sum(tokens(p) for _, ps in sections for p in ps)
    random.seed(1)
    whole_s = pieces_s = 0.0
    timed = read = 0
    for i in random.sample(range(len(sections)), min(args.sample, len(sections))):
        whole, parts = sections[i]
        if len(parts) == 1:
            continue
        for first in ((0, 1) if i % 2 else (1, 0)):
            t0 = time.perf_counter()
            if first == 0:
                model.passages([passage_cut(whole)])
                whole_s += time.perf_counter() - t0
            else:
                for p in parts:
                    model.passages([p])
                pieces_s += time.perf_counter() - t0
        timed += 1
        read += len(parts)
    out = {"sections": len(sections), "pieces": sum(len(ps) for _, ps in sections),
           "sections_of_several_pieces": sum(1 for _, ps in sections if len(ps) > 1),
           "model_tokens_whole": whole_tokens, "model_tokens_pieces": piece_tokens,
           "timed_sections": timed, "timed_pieces": read,
           "whole_s": round(whole_s, 2), "pieces_s": round(pieces_s, 2),
           "pieces_over_whole": round(pieces_s / whole_s, 3) if whole_s else None}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
