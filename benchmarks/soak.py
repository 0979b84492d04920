"""A soak test of the daemon and the MCP server as real processes. Run as a script:

    .venv/bin/python benchmarks/soak.py --minutes 30 [--seed 1] [--notes 300]

It starts `memory watch` on a generated vault and `memory serve` behind an MCP client that
searches without pause, then edits the vault the way people and editors do: creates,
in-place edits, temp-file-and-rename saves, vim-style backup renames, deletes, file renames,
folder renames (case-only ones, and into new nested folders), and kill -9 of the daemon at
random moments followed by a restart. At the end it compares the daemon's database with the
oracle: a fresh `memory sync` of the vault's final state into a new database must give the
same live text for every memory (nothing lost, nothing extra, no tombstone for a file that
exists), and SQLite's integrity check must pass. Saves JSON to benchmarks/results/soak.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "daemon"))
sys.path.insert(0, str(HERE.parent / "tests"))

from daemon_harness import Daemon  # noqa: E402
from sync import WORDS  # noqa: E402  (benchmarks/sync.py: the same vocabulary)

from personal_memory import MemoryStore  # noqa: E402
from personal_memory.notes.folders import Folder  # noqa: E402
from personal_memory.limits import EMBEDDER_CHOICES  # noqa: E402


def text(rng: random.Random) -> str:
    """A note: sometimes front matter with tags, a title heading, paragraphs under a few
    second-level headings (some repeated), now and then an inline tag."""
    paras = []
    if rng.random() < 0.3:
        paras.append(f"---\ntags: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]\n---")
    paras.append(f"# {rng.choice(WORDS).title()} {rng.randint(1, 999)}")
    for _ in range(rng.randint(1, 6)):
        if rng.random() < 0.4:
            paras.append(f"## {rng.choice(WORDS[:8]).title()}")
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 300)))
        paras.append(words + (f" #{rng.choice(WORDS)}" if rng.random() < 0.1 else ""))
    return "\n\n".join(paras) + "\n"


def live(db: Path) -> dict[str, tuple]:
    """memory ID -> (content, title, heading path, metadata) of every live memory, notes'
    records (front matter, tags, section order) included."""
    out: dict[str, tuple] = {}
    with MemoryStore.open(db, read_only=True) as store:
        for r in store.export(namespace="notes"):
            if r.deleted:
                out.pop(r.memory_id, None)
            else:
                out[r.memory_id] = (r.content, r.title, r.heading_path,
                                    json.dumps(r.metadata, sort_keys=True))
    return out


class Vault:
    """The notes folder and the random operations on it."""

    def __init__(self, root: Path, rng: random.Random):
        self.root, self.rng = root, rng

    def notes(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*.md") if not any(
            part.startswith(".") for part in p.relative_to(self.root).parts))

    def folders(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.is_dir()
                      and not p.name.startswith("."))

    def create(self) -> None:
        folders = [self.root] + self.folders()
        target = self.rng.choice(folders) / f"n{self.rng.randrange(10**6)}.md"
        target.write_text(text(self.rng))

    def edit_in_place(self, note: Path) -> None:
        with open(note, "a") as fh:
            fh.write(f"\n{self.rng.choice(WORDS)} appended {self.rng.randrange(1000)}\n")

    def atomic_save(self, note: Path) -> None:
        tmp = note.with_name(f".{note.name}.tmp{self.rng.randrange(10**6)}")
        tmp.write_text(text(self.rng))
        os.replace(tmp, note)

    def vim_save(self, note: Path) -> None:
        backup = note.with_name(note.name + "~")
        os.rename(note, backup)
        note.write_text(text(self.rng))
        os.unlink(backup)

    def delete(self, note: Path) -> None:
        note.unlink()

    def rename_file(self, note: Path) -> None:
        os.rename(note, note.with_name(f"r{self.rng.randrange(10**6)}.md"))

    def rename_folder(self) -> bool:
        folders = self.folders()
        if not folders:
            return False
        folder = self.rng.choice(folders)
        kind = self.rng.choice(["case", "nested", "plain"])
        if kind == "case":
            new = folder.with_name(folder.name.swapcase())
        elif kind == "nested":
            new = folder.with_name(f"moved{self.rng.randrange(1000)}") / folder.name
            new.parent.mkdir(exist_ok=True)
        else:
            new = folder.with_name(f"{folder.name}-{self.rng.randrange(1000)}")
        if new.exists():
            return False
        os.rename(folder, new)
        return True


class Reader(threading.Thread):
    """An MCP client over stdio that searches until told to stop."""

    def __init__(self, db: Path, seed: int, embedder: str):
        super().__init__(daemon=True)
        self.db, self.rng, self.embedder = db, random.Random(seed), embedder
        self.stop_event = threading.Event()
        self.searches = self.errors = 0
        self.error_samples: list[str] = []

    def run(self) -> None:
        asyncio.run(self._go())

    async def _go(self) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "personal_memory.mcp_server", "--db", str(self.db)],
            env={"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "MEMORY_EMBEDDER": self.embedder})
        async with Client(params, mode="legacy") as client:
            while not self.stop_event.is_set():
                query = " ".join(self.rng.sample(WORDS, self.rng.randint(1, 3)))
                try:
                    r = await client.call_tool("memory_search", {"query": query, "limit": 10})
                    if r.is_error:
                        raise RuntimeError(str(r.content)[:300])
                    self.searches += 1
                except Exception as exc:  # counted and reported, never hidden
                    self.errors += 1
                    if len(self.error_samples) < 5:
                        self.error_samples.append(f"{type(exc).__name__}: {exc}")


def run(seconds: float, seed: int = 1, notes: int = 300, kill_every: float = 45.0,
        workdir: Path | None = None, embedder: str = "auto") -> dict:
    rng = random.Random(seed)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="pm-soak-"))
    root = tmp / "vault"
    for i in range(notes):
        folder = root / f"area{i % 12}" / (f"sub{i % 3}" if i % 4 == 0 else "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i:04d}.md").write_text(text(rng))
    db = tmp / "memory.db"
    # The daemon embeds in the background (and is killed while it does); so the first sync
    # imports only.
    subprocess.run([sys.executable, "-m", "personal_memory", "--db", str(db), "sync",
                    "--no-embed", str(root)], check=True, capture_output=True,
                   env={**os.environ, "MEMORY_EMBEDDER": embedder})
    vault = Vault(root, rng)
    daemon = Daemon(db, root, env={"MEMORY_EMBEDDER": embedder})
    ops: Counter = Counter()
    kills = 0
    reader = Reader(db, seed, embedder)
    started = time.monotonic()
    try:
        daemon.start()
        reader.start()
        next_kill = started + rng.expovariate(1 / kill_every)
        while time.monotonic() - started < seconds:
            now = time.monotonic()
            if now >= next_kill:
                daemon.proc.send_signal(signal.SIGKILL)
                daemon.proc.wait()
                daemon.proc = None
                kills += 1
                daemon.start()
                next_kill = time.monotonic() + rng.expovariate(1 / kill_every)
            existing = vault.notes()
            if len(existing) < notes // 2:
                op = "create"
            else:
                op = rng.choices(["create", "edit_in_place", "atomic_save", "vim_save",
                                  "delete", "rename_file", "rename_folder"],
                                 weights=[14, 25, 20, 12, 10, 12, 2])[0]
            try:
                if op == "create":
                    vault.create()
                elif op == "rename_folder":
                    if not vault.rename_folder():
                        continue
                else:
                    getattr(vault, op)(rng.choice(existing))
            except FileNotFoundError:
                continue  # the random pick raced with an earlier rename: no operation
            ops[op] += 1
            time.sleep(rng.expovariate(1 / 0.05))
        daemon.cookie(timeout=120)  # the barrier: the daemon has caught up
        daemon.stop()
    finally:
        reader.stop_event.set()
        reader.join(60)
        daemon.close()
    oracle_db = tmp / "oracle.db"
    with MemoryStore.open(oracle_db) as fresh:
        fresh.sync([Folder.of(root)], allow_mass_delete=True)
    got, want = live(db), live(oracle_db)
    differences = sorted(set(got) ^ set(want)) + sorted(
        m for m in set(got) & set(want) if got[m] != want[m])
    with MemoryStore.open(db, read_only=True, embedder=embedder) as store:
        health = store.health()
        integrity = health.integrity
        revisions = store.stats().counts.revisions
    result = {
        "seconds": round(time.monotonic() - started, 1), "seed": seed, "notes_at_start": notes,
        "notes_at_end": len(vault.notes()), "operations": sum(ops.values()),
        "operations_by_kind": dict(sorted(ops.items())), "daemon_kills": kills,
        "reader_searches": reader.searches, "reader_errors": reader.errors,
        "reader_error_samples": reader.error_samples, "revisions": revisions,
        "live_memories": len(got), "differences": len(differences),
        "difference_samples": differences[:10], "integrity": integrity,
        "embedder": embedder, "vectors": health.vectors,
        "pending_vectors": health.pending_vectors,
    }
    if workdir is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--kill-every", type=float, default=45.0,
                    help="mean seconds between kill -9 of the daemon")
    ap.add_argument("--embedder", default="auto", choices=EMBEDDER_CHOICES,
                    help="semantic model of the daemon and the server (default auto)")
    ap.add_argument("--out", default=str(HERE / "results" / "soak.json"))
    args = ap.parse_args()
    result = run(args.minutes * 60, args.seed, args.notes, args.kill_every,
                 embedder=args.embedder)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    ok = (result["differences"] == 0 and result["reader_errors"] == 0
          and result["integrity"] == "ok")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
