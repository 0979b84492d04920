"""Save on the primary to searchable on a reader of its replica: a note saved in a vault
watched by `memory watch`, replicated by `memory replicate run` (Litestream's default
sync interval, 1 s), and searched by a reader that keeps the replica open through
Litestream's VFS (polling it every second), all real processes, keyword-only.

    .venv/bin/python benchmarks/replica_lag.py [--edits 30] [--s3]

The replica is a local folder, and with ``--s3`` also a bucket on a local S3-protocol
server (moto's server mode, from the test extras). For each edit it times save →
searchable on the primary (the daemon committed it) → searchable on the reader (the
reader's search finds the new word), on one monotonic clock. PM_LAG_VERBOSE=1 prints
each edit; PM_LAG_WAIT sets how long the reader looks for one (60 s). Saves JSON to
benchmarks/results/replica_lag.json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
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
from personal_memory.replication import replica as replicas  # noqa: E402
from replication import pct, primary, stop, wait  # noqa: E402  (the lag there too)

MEMORY = [sys.executable, "-m", "personal_memory"]


def reader(url: str) -> None:
    """In the child: for each word read on stdin, search until it is found; print when."""
    store = MemoryStore.open_replica(url, embedder="none")
    print("ready", flush=True)
    for line in sys.stdin:
        word = line.strip()
        deadline = time.monotonic() + float(os.environ.get("PM_LAG_WAIT", "60"))
        while not store.search(word, namespace="notes", limit=1):
            if time.monotonic() > deadline:
                print("timeout", flush=True)
                break
            time.sleep(0.01)
        else:
            print(time.monotonic_ns(), flush=True)


def caught_up(db: Path, env: dict) -> bool:
    done = subprocess.run(MEMORY + ["--db", str(db), "replicate", "status", "--json"],
                          env=env, capture_output=True, text=True)
    try:
        s = json.loads(done.stdout)
    except ValueError:
        return False
    return s.get("state") == "healthy" and s.get("lag_seconds") == 0


def run(tmp: Path, destination: str, edits: int, env: dict) -> dict:
    vault, db, processes, logs = primary(tmp, destination, env)
    child = None
    on_primary, on_reader = [], []
    try:
        with MemoryStore.open(db, read_only=True, create=False, embedder="none") as store:
            def found(token):
                return bool(store.search(token, namespace="notes", limit=1))
            wait(lambda: found("note 199"), 120)
            wait(lambda: caught_up(db, env), 120)
            url = replicas.replica_url(destination)
            child = subprocess.Popen([sys.executable, __file__, "--reader", url],
                                     env=replicas.environment(url, env), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
            assert child.stdout.readline().strip() == "ready"
            started = time.monotonic()
            for i in range(edits):
                token = "edit" + uuid.uuid4().hex[:10]
                t0 = time.monotonic_ns()
                (vault / f"Note {i}.md").write_text(f"# Note {i}\n\n{token} words\n")
                child.stdin.write(token + "\n")
                child.stdin.flush()
                t1 = wait(lambda: found(token))
                answer = child.stdout.readline().strip()
                if not answer.isdigit():
                    raise RuntimeError(f"the reader did not find edit {i}: {answer!r}")
                on_primary.append((t1 - t0) / 1e9)
                on_reader.append((int(answer) - t0) / 1e9)
                if os.environ.get("PM_LAG_VERBOSE"):
                    print(i, round(time.monotonic() - started, 1), on_reader[-1], flush=True)
                time.sleep(0.3)
    finally:
        if child is not None:
            child.stdin.close()
            child.wait(timeout=30)
        stop(processes, logs)
    return {"edits": edits,
            "save_to_searchable_on_primary_s": {"p50": pct(on_primary, 0.5),
                                                 "p95": pct(on_primary, 0.95)},
            "save_to_searchable_on_reader_s": {"p50": pct(on_reader, 0.5),
                                                "p95": pct(on_reader, 0.95),
                                                "max": round(max(on_reader), 3)}}


def s3_server(tmp: Path, env: dict):
    """moto's S3 server on a free loopback port with a bucket 'notes'; (process, URL)."""
    import boto3
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=open(tmp / "moto.log", "wb"),
                            stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")

    def up():
        try:
            s3.list_buckets()
        except Exception:  # not listening yet
            return False
        return True
    wait(up, 30)
    s3.create_bucket(Bucket="notes")
    env.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test")
    return proc, f"s3://notes/memory?endpoint={endpoint}&region=us-east-1&forcePathStyle=true"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edits", type=int, default=30)
    ap.add_argument("--s3", action="store_true", help="also a bucket on moto's S3 server")
    ap.add_argument("--reader", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results" / "replica_lag.json"))
    a = ap.parse_args()
    if a.reader:
        return reader(a.reader)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env["MEMORY_EMBEDDER"] = "none"
    result = {"cpu": os.cpu_count(), "sync_interval_s": 1}
    with tempfile.TemporaryDirectory(prefix="pm-replica-lag-") as tmp:
        (Path(tmp) / "folder").mkdir()
        result["folder"] = run(Path(tmp) / "folder", str(Path(tmp) / "replica"), a.edits, env)
        print(json.dumps(result["folder"], indent=2), flush=True)
        if a.s3:
            (Path(tmp) / "s3").mkdir()
            proc, url = s3_server(Path(tmp), env)
            try:
                result["s3"] = run(Path(tmp) / "s3", url, a.edits, env)
            finally:
                proc.terminate()
                proc.wait(timeout=20)
            print(json.dumps(result["s3"], indent=2), flush=True)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
