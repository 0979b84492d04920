"""Sync and daemon performance on a generated notes folder. Run as a script:

    .venv/bin/python benchmarks/sync.py [--files 10000] [--edits 40] [--burst 1000]

Measures, each in a fresh process where it matters: the first `memory sync` (files and MB
per second, peak memory) up to keyword-searchable (`--no-embed`), a no-change rescan, and
with `memory watch` running: the time from a save to the note being searchable for single
edits and for a burst, and the daemon's CPU time while idle. Then search by meaning: on a
smaller folder of the same notes (`--embed-files`, default 300), the keyword import, then
`memory reembed` until every section has a vector (passages per second, peak memory).
Last, the daemon with a backlog (`--backlog-notes` long notes, default 1,000: over 2,000
sections waiting for a vector), keyword-only and with the model on, in the same run: save
to searchable, delete to gone, a folder of 120 notes renamed until every note is live
under its new path, and how many of the moved sections the model had to embed again.
With `--vault DIR` (the Obsidian help vault: `git clone
https://github.com/obsidianmd/obsidian-help`), also a real vault's first sync with the
model on: its English part until searchable by words and until fully embedded, and all
its languages until searchable by words, then two minutes of embedding for a rate and an
ETA. `--only vault` runs just that part and updates it in the JSON.
Saves JSON to benchmarks/results/sync.json.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "daemon"))
sys.path.insert(0, str(HERE.parent / "tests"))

from daemon_harness import Daemon, wait_for  # noqa: E402

from personal_memory import MemoryStore  # noqa: E402

WORDS = ("meeting project garden budget travel family recipe book idea plan review draft "
         "client design research music health running coffee weekend release bug fix "
         "deadline invoice sprint launch train museum letter").split()


def make_folder(root: Path, files: int, seed: int = 1) -> int:
    rng = random.Random(seed)
    total = 0
    for i in range(files):
        sub = root / f"area{i % 40:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        target = rng.randint(1024, 4096)
        paras = [f"# Note {i}"]
        size = len(paras[0])
        while size < target:
            para = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60)))
            paras.append(para)
            size += len(para) + 2
        text = "\n\n".join(paras) + "\n"
        (sub / f"note{i:05d}.md").write_text(text)
        total += len(text.encode())
    return total


def timed_cli(db: Path, *args: str) -> tuple[float, float, dict]:
    """Wall seconds, peak RSS in MB and JSON output of one `memory` run. (The peak is the
    child's VmHWM: on Linux ru_maxrss keeps the forking parent's high-water mark.)"""
    script = ("import resource, sys, time, runpy; t = time.perf_counter(); "
              "sys.argv = ['memory'] + sys.argv[1:]; "
              "from personal_memory.cli import main; code = main(); "
              "hwm = [int(x.split()[1]) for x in open('/proc/self/status') "
              "if x.startswith('VmHWM')]; "  # not ru_maxrss: see the docstring
              "sys.stderr.write('\\nBENCH %f %d\\n' % (time.perf_counter() - t, "
              "hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)); "
              "sys.exit(code)")
    p = subprocess.run([sys.executable, "-c", script, "--db", str(db), *args, "--json"],
                       capture_output=True, text=True, check=True)
    line = [x for x in p.stderr.splitlines() if x.startswith("BENCH ")][-1].split()
    return float(line[1]), int(line[2]) / 1024, json.loads(p.stdout)


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run(files: int, edits: int, burst: int, embed_files: int = 300,
        backlog_notes: int = 1000) -> dict:
    out: dict = {"files": files, "python": sys.version.split()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        root = tmp / "notes"
        size = make_folder(root, files)
        db = tmp / "memory.db"
        seconds, rss, report = timed_cli(db, "sync", "--no-embed", str(root))
        out["first_sync"] = {"seconds": round(seconds, 2), "files_per_s": round(files / seconds),
                             "mb_per_s": round(size / 1e6 / seconds, 2),
                             "bytes": size, "peak_rss_mb": round(rss),
                             "chunks": report["chunks_added"]}
        seconds, rss, report = timed_cli(db, "sync", "--no-embed", str(root))
        assert report["chunks_added"] == report["chunks_changed"] == 0
        out["no_change_rescan"] = {"seconds": round(seconds, 3), "peak_rss_mb": round(rss)}

        d = Daemon(db, root, "--settle-ms", "300")
        d.start()
        try:
            out["single_edit_latency_s"] = edit_latencies(d, root, files, edits, seed=5)
            burst_dir = root / "burst"
            burst_dir.mkdir()
            t0 = time.perf_counter()
            for i in range(burst):
                (burst_dir / f"b{i:04d}.md").write_text(f"burst file bursttoken{i}\n")
            written = time.perf_counter() - t0
            with MemoryStore.open(db, read_only=True) as s:
                wait_for(lambda: s.status("notes").daemon.files_indexed >= files + burst, timeout=120,
                         interval=0.02)
            out["burst"] = {"files": burst, "write_s": round(written, 3),
                            "all_searchable_after_first_write_s":
                                round(time.perf_counter() - t0, 3)}
            with MemoryStore.open(db, read_only=True) as s:  # late events of the burst too
                wait_for(lambda: s.sync_runs(1)[0].status != "running", timeout=120)
            time.sleep(5)
            before = _cpu_seconds(d.proc.pid)
            time.sleep(10)
            out["idle_cpu_seconds_per_10s"] = round(_cpu_seconds(d.proc.pid) - before, 3)
        except AssertionError:
            print(d.log()[-3000:], file=sys.stderr)
            raise
        finally:
            d.close()
        out["semantic"] = embedding_run(tmp / "embed", embed_files)
        out["daemon_with_backlog"] = {
            name: backlog_run(tmp / f"backlog-{name}", name, notes=backlog_notes, edits=20,
                              deletes=10, move=120) for name in ("none", "e5")}
        k, m = out["daemon_with_backlog"]["none"], out["daemon_with_backlog"]["e5"]
        out["daemon_with_backlog"]["model_on_vs_keyword_only_p95"] = {
            "edit": round(m["edit_s"]["p95"] / k["edit_s"]["p95"], 2),
            "delete": round(m["delete_s"]["p95"] / k["delete_s"]["p95"], 2)}
    return out


def embedding_run(tmp: Path, files: int) -> dict:
    """Keyword-searchable, then fully embedded by `memory reembed` (passages per second,
    peak memory)."""
    root = tmp / "notes"
    root.mkdir(parents=True)
    make_folder(root, files, seed=2)
    db = tmp / "memory.db"
    keyword_s, _, report = timed_cli(db, "sync", "--no-embed", str(root))
    embed_s, rss, done = timed_cli(db, "reembed")
    return {"files": files, "sections": report["chunks_added"],
            "keyword_searchable_s": round(keyword_s, 2),
            "embedding_s": round(embed_s, 2),
            "fully_embedded_s": round(keyword_s + embed_s, 2),
            "passages_per_s": round(done["embedded"] / embed_s, 1),
            "embedder": done["embedder"], "reembed_peak_rss_mb": round(rss)}


def backlog_run(tmp: Path, embedder: str, notes: int, edits: int, deletes: int,
                move: int) -> dict:
    """The daemon with a backlog: a folder of long notes imported by keywords only (with
    the model on, every section waits for a vector), then edits, deletions and a folder
    move timed until search shows them, while the daemon embeds in the background."""
    root = tmp / f"vault-{embedder}"
    make_folder(root, notes, seed=3)
    team = root / "team"
    team.mkdir()
    for j in range(move):
        (team / f"m{j:03d}.md").write_text(f"# Member {j}\n\nteammate{j} works on the "
                                           f"{WORDS[j % len(WORDS)]} project\n")
    db = tmp / f"memory-{embedder}.db"
    _, _, report = timed_cli(db, "sync", "--no-embed", str(root))
    d = Daemon(db, root, "--settle-ms", "300", env={"MEMORY_EMBEDDER": embedder})
    d.start()
    out: dict = {"embedder": embedder, "notes": notes + move,
                 "sections": report["chunks_added"]}
    try:
        with MemoryStore.open(db, read_only=True, embedder=embedder) as s:
            out["backlog_at_start"] = s.pending_vectors()
        time.sleep(3)  # the embedding worker is busy when the first edit comes
        out["edit_s"] = edit_latencies(d, root, notes, edits, seed=7, pause=0.5)
        rng = random.Random(11)
        gone = []
        for i in rng.sample(range(notes), deletes):
            path = root / f"area{i % 40:02d}" / f"note{i:05d}.md"
            t0 = time.perf_counter()
            path.unlink()
            wait_for(lambda: not d.search_ids(str(i)), timeout=60, interval=0.01)
            gone.append(time.perf_counter() - t0)
            time.sleep(0.5)
        out["delete_s"] = {"p50": round(statistics.median(gone), 3),
                           "p95": round(percentile(gone, 0.95), 3), "deletes": deletes}
        with MemoryStore.open(db, read_only=True, embedder="none") as s:
            before = {h for (h,) in s._db.execute(
                "SELECT passage_hash FROM vectors WHERE passage_hash IS NOT NULL")}
        t0 = time.perf_counter()
        os.rename(team, root / "team moved")
        with MemoryStore.open(db, read_only=True, embedder="none") as s:
            wait_for(lambda: all(s.get(f"{root.name}/team moved/m{j:03d}.md#",
                                       namespace="notes") for j in range(move)),
                     timeout=120, interval=0.01)
            out["move_s"] = {"notes": move, "live_under_new_paths_s":
                             round(time.perf_counter() - t0, 3)}
            if embedder != "none":  # vectors for the moved sections: reused, not embedded
                prefix = f"{root.name}/team moved/"
                ids = [rid for (rid,) in s._db.execute(
                    "SELECT id FROM revisions WHERE note >= ? AND note < ? AND deleted = 0 "
                    "AND memory_id != note || '#'", (prefix, prefix + "\U0010ffff"))]
                wait_for(lambda: s._db.scalar(
                    "SELECT count(*) FROM vectors WHERE revision_id IN "
                    "(SELECT value FROM json_each(?))", (json.dumps(ids),)) == len(ids),
                    timeout=300, interval=0.2)
                fresh = s._db.scalar(
                    "SELECT count(*) FROM vectors WHERE revision_id IN (SELECT value FROM "
                    "json_each(?)) AND passage_hash NOT IN (SELECT value FROM json_each(?))",
                    (json.dumps(ids), json.dumps(sorted(before))))
                out["move_s"]["embeddings_added_by_the_model"] = fresh
                out["move_s"]["vectors_reused"] = len(ids) - fresh
        with MemoryStore.open(db, read_only=True, embedder=embedder) as s:
            out["backlog_at_end"] = s.pending_vectors()
    except AssertionError:
        print(d.log()[-3000:], file=sys.stderr)
        raise
    finally:
        d.close()
    return out


def edit_latencies(d: Daemon, root: Path, files: int, edits: int, seed: int,
                   pause: float = 0.0) -> dict:
    """Save random notes as editors do (a temporary file renamed over the note) and time
    each until its new word is searchable."""
    rng = random.Random(seed)
    latencies = []
    for n in range(edits):
        i = rng.randrange(files)
        path = root / f"area{i % 40:02d}" / f"note{i:05d}.md"
        token = f"edit{n}x{rng.randrange(10**9)}"
        tmpfile = path.with_name("." + path.name + ".tmp")
        tmpfile.write_text(path.read_text() + f"\n{token}\n")
        t0 = time.perf_counter()
        os.replace(tmpfile, path)
        wait_for(lambda: d.search_ids(token), timeout=60, interval=0.01)
        latencies.append(time.perf_counter() - t0)
        time.sleep(pause)
    return {"p50": round(statistics.median(latencies), 3),
            "p95": round(percentile(latencies, 0.95), 3), "settle_ms": 300, "edits": edits}


def vault_run(tmp: Path, vault: Path, sample_s: float = 120.0) -> dict:
    """A real vault's first `memory sync` with the model on, as a user runs it."""
    import shutil
    from personal_memory.times import parse_time
    out: dict = {"vault": vault.name}
    english = vault / "en"
    parts = [("english", english, True), ("all_languages", vault, False)]
    for name, folder, embed in parts:
        root = tmp / name
        shutil.copytree(folder, root)
        notes = list(root.rglob("*.md"))
        db = tmp / f"{name}.db"
        env = dict(os.environ, MEMORY_EMBEDDER="e5")
        args = [sys.executable, "-m", "personal_memory", "--db", str(db), "sync", str(root),
                "--json"] + ([] if embed else ["--no-embed"])
        launched = time.time()
        done = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
        ended = time.time()
        report = json.loads(done.stdout)
        with MemoryStore.open(db, read_only=True, embedder="none") as s:
            run = s.sync_runs(1)[0]
        imported = parse_time(run.finished_at) / 1e6 - launched
        row = {"files": len(notes), "bytes": sum(p.stat().st_size for p in notes),
               "sections": report["chunks_added"],
               "searchable_by_words_s": round(imported, 2)}
        if embed:
            vectors = report["vectors"]
            row |= {"fully_embedded_s": round(ended - launched, 1),
                    "embedded": vectors["embedded"], "reused": vectors["reused"],
                    "model_passages_per_s": vectors["per_second"]}
        else:
            row |= _embedding_sample(db, env, sample_s)
        out[name] = row
    return out


def _embedding_sample(db: Path, env: dict, seconds: float) -> dict:
    """`memory reembed` for ``seconds``, then Ctrl-C: a measured rate on these passages,
    and the ETA for the rest at that rate."""
    import signal
    proc = subprocess.Popen([sys.executable, "-m", "personal_memory", "--db", str(db),
                             "reembed", "--json"], stdout=subprocess.PIPE, text=True, env=env)
    time.sleep(seconds)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    run = json.loads(stdout)
    rate = run["per_second"] or 0
    return {"sample_s": seconds, "ctrl_c_to_exit_s": round(time.perf_counter() - t0, 2),
            "sample_embedded": run["embedded"], "sample_passages_per_s": rate,
            "remaining": run["remaining"],
            "eta_at_that_rate_min": round(run["remaining"] / rate / 60) if rate else None}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--embed-files", type=int, default=300)
    ap.add_argument("--backlog-notes", type=int, default=1000,
                    help="long notes the daemon has to embed while edits are timed")
    ap.add_argument("--vault", type=Path,
                    help="the Obsidian help vault (a clone): a real vault's first sync")
    ap.add_argument("--only", choices=["vault"], help="run one part, keep the others")
    ap.add_argument("--sample-seconds", type=float, default=120.0,
                    help="how long the all-languages vault is embedded for its rate")
    ap.add_argument("--out", default=str(HERE / "results" / "sync.json"))
    args = ap.parse_args()
    if args.only:
        if not args.vault:
            ap.error("--only vault needs --vault DIR")
        result = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    else:
        result = run(args.files, args.edits, args.burst, args.embed_files, args.backlog_notes)
    if args.vault:
        with tempfile.TemporaryDirectory() as tmp:
            result["vault_first_sync"] = vault_run(Path(tmp), args.vault.resolve(),
                                                   args.sample_seconds)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
