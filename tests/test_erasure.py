"""Erasure that always finishes: a purge beside a running daemon and Litestream, through a
symlinked database path, kept from its proof by a reader and then finished by the next
purge. Every file of the database's folder, Litestream's folder and the restored replica
is scanned by the test itself, not by the product's own proof."""

import json
import os
from pathlib import Path

import apsw
import pytest

from daemon_harness import Daemon
from support import remember_all, run_memory, wait_for
from test_replication import (Replicator, caught_up, env, needs_litestream, note,
                              replicated_once)


def occurrences(folder: Path, text: str) -> dict[str, int]:
    """Every file under ``folder`` (hidden ones too) that holds ``text``."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            n = path.read_bytes().count(text.encode())
            if n:
                found[str(path)] = n
    return found


def purge(db: Path, *args: str) -> tuple[int, dict, str]:
    done = run_memory("--db", db, "purge", *args, "--yes", "--json", env=env(), timeout=240)
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def restored_replica_holds(replica: Path, tmp: Path, text: str) -> dict[str, int]:
    out = tmp / f"check-{os.urandom(4).hex()}" / "r.db"
    out.parent.mkdir()
    done = run_memory("restore", replica, "--to", out, env=env(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return occurrences(out.parent, text)


@pytest.fixture
def linked(tmp_path):
    """A vault indexed by a daemon into a database named through a symlink, replicated by
    `memory replicate run` (set up through the same link)."""
    data, names = tmp_path / "data", tmp_path / "names"
    data.mkdir()
    names.mkdir()
    vault, replica = tmp_path / "vault", tmp_path / "replica"
    vault.mkdir()
    real, link = data / "m.db", names / "m.db"
    link.symlink_to(real)
    note(vault, "First.md", "the first note, before replication started")
    daemon = Daemon(link, vault).start()
    setup = run_memory("--db", link, "replicate", "setup", replica, "--no-service", env=env())
    assert setup.returncode == 0, setup.stderr
    rep = Replicator(link)
    yield vault, link, real, replica, daemon, rep
    rep.stop()
    daemon.close()


@needs_litestream
def test_a_purge_beside_replication_and_the_daemon_through_a_symlink(linked, tmp_path):
    vault, link, real, replica, daemon, rep = linked
    secret = "vault pin 8812-osprey"
    note(vault, "Secret.md", f"the {secret} is in the drawer")
    daemon.cookie()
    wait_for(lambda: caught_up(link), 30, what="the secret in the replica")
    assert (real.parent / f".{real.name}-litestream").is_dir()  # beside the real file
    assert not (link.parent / f".{link.name}-litestream").exists()
    (vault / "Secret.md").unlink()
    daemon.cookie()
    # the form the docs give for scripts: no --replicas, while everything runs
    code, report, err = purge(link, "--matching", "8812-osprey")
    assert code == 0, (report, err)
    assert report["proven"] and report["occurrences"] == 0 and not report["advice"]
    assert str(real) in report["files_scanned"]
    assert report["unfinished"] and "--replicas" in report["replica_warning"]
    assert occurrences(tmp_path / "data", "8812-osprey") == {}
    assert occurrences(tmp_path / "names", "8812-osprey") == {}
    assert restored_replica_holds(replica, tmp_path, "8812-osprey")  # not asked to forget
    # the same text again, now with the replica: finds the unfinished erasure, finishes it
    code, report, err = purge(link, "--matching", "8812-osprey", "--replicas")
    assert code == 0, (report, err)
    assert report["revision_ids"] == [] and report["finished"] and not report["unfinished"]
    assert report["replica"]["verified"] and report["replica"]["generations_deleted"]
    wait_for(lambda: caught_up(link), 30, what="replication resumed after the purge")
    assert occurrences(tmp_path / "data", "8812-osprey") == {}
    assert restored_replica_holds(replica, tmp_path, "8812-osprey") == {}
    daemon.cookie()  # the daemon went on through it all


def test_a_purge_kept_from_its_proof_is_finished_by_the_next(tmp_path):
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    note(vault, "A.md", "the locker combination is 5521-heron")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    (vault / "A.md").write_text("# A\n\nnothing to see\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    reader = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    reader.execute("BEGIN")
    assert next(reader.execute("SELECT count(*) FROM revisions"))[0] > 0  # an old snapshot
    code, report, err = purge(db, "--matching", "5521-heron")
    assert code == 1 and report["revision_ids"] and report["unfinished"]
    assert f"pid {os.getpid()}" in report["advice"], report["advice"]
    reader.execute("COMMIT")
    reader.close()
    # the advice's own remedy: the same purge again
    code, report, err = purge(db, "--matching", "5521-heron")
    assert code == 0, (report, err)
    assert report["finished"] and not report["unfinished"] and report["proven"]
    assert occurrences(tmp_path, "5521-heron") == {}
    again = run_memory("--db", db, "purge", "--matching", "5521-heron", "--yes")
    assert again.returncode == 0 and "Nothing to purge" in again.stdout


def test_resume_alone_finishes_a_purge_by_note(tmp_path):
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    note(vault, "Gone.md", "a paragraph about the 7730-plover account")
    note(vault, "Stays.md", "another note")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    (vault / "Gone.md").unlink()
    assert run_memory("--db", db, "sync", vault).returncode == 0
    reader = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    reader.execute("BEGIN")
    next(reader.execute("SELECT count(*) FROM revisions"))
    code, report, _ = purge(db, "--note", "vault/Gone.md")
    assert code == 1 and report["unfinished"]
    reader.execute("COMMIT")
    reader.close()
    preview = run_memory("--db", db, "purge", "--resume", "--dry-run")
    assert preview.returncode == 0 and "unfinished" in preview.stdout
    done = run_memory("--db", db, "purge", "--resume")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Finished purge" in done.stdout and "no text was given" in done.stdout
    assert occurrences(tmp_path, "7730-plover") == {}


def test_restore_refuses_a_companion_name_and_leaves_one_file_or_nothing(tmp_path):
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    note(vault, "A.md", "alpha")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    backup = tmp_path / "b" / "backup.db"
    backup.parent.mkdir()
    assert run_memory("--db", db, "backup", backup).returncode == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    for name in ("m.db-journal", "m.db-wal", "x.db-shm", "m.db.lock", "m.db.litestream.yml"):
        done = run_memory("restore", backup, "--to", tmp_path / name)
        assert done.returncode == 2 and "choose another name" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    out = tmp_path / "r"
    out.mkdir()
    done = run_memory("restore", backup, "--to", out / "c.db")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["c.db"]
    # a copy that fails its checks (a database of another application) leaves nothing
    other = tmp_path / "b" / "other.db"
    conn = apsw.Connection(str(other))
    conn.execute("CREATE TABLE t (x); INSERT INTO t VALUES ('note text that must not stay')")
    conn.close()
    done = run_memory("restore", other, "--to", out / "d.db")
    assert done.returncode != 0
    assert sorted(p.name for p in out.iterdir()) == ["c.db"]


@needs_litestream
def test_replicate_setup_to_a_folder_that_cannot_be_written_changes_nothing(tmp_path):
    vault, db, ro = tmp_path / "vault", tmp_path / "m.db", tmp_path / "ro"
    vault.mkdir()
    ro.mkdir()
    note(vault, "A.md", "alpha")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    first = tmp_path / "replica"
    assert run_memory("--db", db, "replicate", "setup", first, "--no-service",
                      env=env()).returncode == 0
    config = tmp_path / "m.db.litestream.yml"
    kept = config.read_text()
    if os.geteuid() == 0:  # root writes through any mode: a read-only mount instead
        import subprocess
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs",
                                  str(ro)], capture_output=True, text=True)
        if mounted.returncode != 0:
            pytest.skip(f"root writes through a folder's mode, and no read-only tmpfs can "
                        f"be mounted here: {mounted.stderr.strip()}")
    else:
        ro.chmod(0o555)
    try:
        done = run_memory("--db", db, "replicate", "setup", ro, "--no-service", env=env())
        assert done.returncode == 2 and "cannot be written" in done.stderr, done.stderr
        done = run_memory("--db", db, "replicate", "setup", ro / "sub", "--no-service",
                          env=env())
        assert done.returncode == 2 and "nothing was changed" in done.stderr, done.stderr
    finally:
        if os.geteuid() == 0:
            import subprocess
            subprocess.run(["umount", "-l", str(ro)], capture_output=True)
        else:
            ro.chmod(0o755)
    assert config.read_text() == kept


def test_answers_that_say_the_right_thing(tmp_path):
    """Links of an unknown note, a filter that leaves nothing, words starting with '-',
    an open line range, a tag written with a slash, an API memory in changes, a
    backslash in a file name."""
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    (vault / "back").mkdir(parents=True)
    (vault / "Launch.md").write_text("---\ntags: [work]\n---\n# Launch\n\nlaunch on the "
                                     "date in May\n\nsecond line\n\nthird line\n")
    (vault / "back" / "slash.md").write_text("# Real\n\nin a folder\n")
    (vault / "back\\slash.md").write_text("# Odd\n\na backslash in the name\n")
    done = run_memory("--db", db, "sync", vault)
    assert done.returncode == 0 and "0 skipped" in done.stdout, done.stdout + done.stderr
    read = run_memory("--db", db, "read", "vault/Nope.md")
    links = run_memory("--db", db, "links", "vault/Nope.md")
    assert read.returncode == links.returncode == 2 and "not known" in links.stderr
    early = run_memory("--db", db, "links", "vault/Launch.md", "--as-of", "2001-01-01")
    assert early.returncode == 2 and "not known" in early.stderr
    found = run_memory("--db", db, "search", "launch", "tag:nope")
    assert "the filter tag:nope left nothing" in found.stdout, found.stdout
    found = run_memory("--db", db, "search", "launch", '"no such phrase"')
    assert 'the filter "no such phrase" left nothing' in found.stdout, found.stdout
    found = run_memory("--db", db, "search", "launch", "-date", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["results"] == [], found.stderr
    found = run_memory("--db", db, "search", "launch", "--tag", "work/", "--json")
    assert [r["memory_id"] for r in json.loads(found.stdout)["results"]] == [
        "vault/Launch.md#Launch"]
    lines = run_memory("--db", db, "read", "vault/Launch.md", "--lines", "8-")
    assert lines.returncode == 0 and "third line" in lines.stdout, lines.stderr
    assert "launch on" not in lines.stdout
    assert run_memory("--db", db, "remember", "plain", "an API memory").returncode == 0
    changes = json.loads(run_memory("--db", db, "changes", "--since", "1d", "--json").stdout)
    assert changes["counts"]["notes"] == 3 and changes["counts"]["memories"] == 1
    odd = run_memory("--db", db, "read", "vault/back\\slash.md")
    real = run_memory("--db", db, "read", "vault/back/slash.md")
    assert "a backslash in the name" in odd.stdout and "in a folder" in real.stdout


def test_a_note_named_like_a_drive_is_a_resource_and_lines_run_to_the_end(tmp_path):
    import asyncio
    import sys
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    (vault / "C:drive.md").write_text("# Drive\n\nfirst\n\nlast line\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "personal_memory", "--db", str(db), "serve"],
                                   env={"MEMORY_EMBEDDER": "none"})

    async def go():
        async with Client(params, mode="legacy") as c:
            top = await c.read_resource("note://vault/C%3Adrive.md")
            tail = await c.call_tool("memory_read", {"note": "vault/C:drive.md",
                                                     "lines": "3-"})
            return top.contents[0].text, tail.structured_content
    text, tail = asyncio.run(go())
    assert "last line" in text
    assert "last line" in json.dumps(tail) and "# Drive" not in json.dumps(tail)


@needs_litestream
def test_a_pause_left_by_a_killed_purge_does_not_stop_replication_for_ever(linked):
    import subprocess
    import sys
    vault, link, real, replica, daemon, rep = linked
    wait_for(lambda: caught_up(link), 30, what="the first replication")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (real.parent / f"{real.name}.replication-pause").write_text(gone)  # a purge, killed
    note(vault, "After.md", "written after the purge was killed")
    daemon.cookie()
    wait_for(lambda: caught_up(link), 30, what="replication resumed")
    assert not (real.parent / f"{real.name}.replication-pause").exists()


@needs_litestream
def test_resume_with_replicas_claims_no_proof_without_a_text(tmp_path):
    vault, db, replica = tmp_path / "vault", tmp_path / "m.db", tmp_path / "replica"
    vault.mkdir()
    note(vault, "Gone.md", "the 6612-grebe account")
    note(vault, "Stays.md", "another note")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    replicated_once(db, replica, "the note in the replica")
    assert restored_replica_holds(replica, tmp_path, "6612-grebe")
    (vault / "Gone.md").unlink()
    assert run_memory("--db", db, "sync", vault).returncode == 0
    code, report, err = purge(db, "--note", "vault/Gone.md")  # the replica not asked
    assert code == 0 and report["unfinished"] and report["unfinished_replica"], (report, err)
    # --resume alone does the file's part, not the replica's: it says so and fails
    half = run_memory("--db", db, "purge", "--resume", env=env(), timeout=240)
    assert half.returncode == 1 and "'memory purge --resume --replicas' finishes it" in \
        half.stdout, half.stdout + half.stderr
    done = run_memory("--db", db, "purge", "--resume", "--replicas", env=env(), timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Replica proof" not in done.stdout and "0 occurrences" not in done.stdout
    assert "no text was given to scan it for" in done.stdout, done.stdout
    assert restored_replica_holds(replica, tmp_path, "6612-grebe") == {}


KILLED_WHILE_CHECKING = """
import os, sys
from personal_memory import MemoryStore
MemoryStore.health = lambda self: os._exit(9)  # killed while it checks its copy
from personal_memory.cli.app import main
sys.exit(main(sys.argv[1:]))
"""


def scratch(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".restoring-" in p.name)


def test_a_killed_restore_leaves_its_old_history_only_until_the_next_command(tmp_path):
    import fcntl
    import subprocess
    import sys
    from support import user_env
    vault, live = tmp_path / "vault", tmp_path / "live"
    vault.mkdir()
    live.mkdir()
    db = live / "m.db"
    note(vault, "A.md", "the alarm code 3390-kestrel")
    note(vault, "B.md", "another note")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    backup = tmp_path / "backup.db"
    assert run_memory("--db", db, "backup", backup).returncode == 0
    (vault / "A.md").unlink()
    assert run_memory("--db", db, "sync", vault).returncode == 0
    for _ in range(2):
        killed = subprocess.run([sys.executable, "-c", KILLED_WHILE_CHECKING, "restore",
                                 str(backup), "--to", str(live / "r.db")],
                                env=user_env(), capture_output=True, text=True)
        assert killed.returncode == 9, killed.stderr
        (left,) = scratch(live)
        assert occurrences(live / left, "3390-kestrel")  # the old history, beside the live db
        assert run_memory("--db", db, "status").returncode == 0  # any command on it
        assert scratch(live) == []
    killed = subprocess.run([sys.executable, "-c", KILLED_WHILE_CHECKING, "restore",
                             str(backup), "--to", str(live / "r.db")],
                            env=user_env(), capture_output=True, text=True)
    assert killed.returncode == 9 and len(scratch(live)) == 1
    # a restore still running there: kept, and its copy named by the purge's proof
    running = live / ".s.db.restoring-abcd1234"
    running.mkdir()
    (running / "restored.db").write_bytes(backup.read_bytes())
    lock = os.open(running / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        code, report, err = purge(db, "--matching", "3390-kestrel")
        assert code == 0 and report["proven"], (report, err)
        assert list(report["other_files_with_copies"]) == [str(running / "restored.db")]
        assert scratch(live) == [running.name]  # the killed one's copy is gone
    finally:
        os.close(lock)
    assert run_memory("--db", db, "status").returncode == 0
    assert scratch(live) == [] and occurrences(live, "3390-kestrel") == {}


def test_restore_refuses_a_fifo_takes_a_long_name_and_reports_a_damaged_backup(tmp_path):
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    for i in range(30):
        note(vault, f"N{i}.md", f"note {i} " + "words " * 300)
    assert run_memory("--db", db, "sync", vault).returncode == 0
    backup = tmp_path / "b" / "backup.db"
    backup.parent.mkdir()
    assert run_memory("--db", db, "backup", backup).returncode == 0
    out = tmp_path / "out"
    out.mkdir()
    fifo = tmp_path / "b" / "fifo"
    os.mkfifo(fifo)
    done = run_memory("restore", fifo, "--to", out / "f.db", timeout=30)
    assert done.returncode == 2 and "not a regular file or a folder" in done.stderr
    assert list(out.iterdir()) == []
    long_name = "n" * 242 + ".db"  # 245 bytes: a valid name
    done = run_memory("restore", backup, "--to", out / long_name)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in out.iterdir()] == [long_name]
    (out / long_name).unlink()
    damaged = tmp_path / "b" / "damaged.db"
    data = bytearray(backup.read_bytes())
    data[4096 * 3:4096 * 5] = b"\xff" * 8192
    damaged.write_bytes(bytes(data))
    done = run_memory("restore", damaged, "--to", out / "d.db")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith(f"The copy of {damaged} FAILED its checks"), done.stdout
    assert "restoring-" not in done.stdout + done.stderr and "damaged" in done.stdout
    assert list(out.iterdir()) == []


def test_restore_on_a_full_disk_says_the_disk_is_full(tmp_path):
    from support import small_disk
    db = tmp_path / "m.db"
    remember_all(db, {f"m{i}": os.urandom(20000).hex() for i in range(20)}, namespace="p")
    with small_disk(tmp_path / "small", "200k") as small:
        done = run_memory("restore", db, "--to", small / "r.db")
        assert done.returncode == 2 and "disk full" in done.stderr, done.stderr
        assert "not an error" not in done.stderr and "restoring-" not in done.stderr
        assert list(small.iterdir()) == []
