"""The database file under hostile conditions: a second name for it (symlink, hard link),
a read-only mount, a database that went missing."""

import os
import shutil
import subprocess
import sys

import pytest

from daemon_harness import Daemon
from support import MEMORY, run_memory, user_env, wait_for


def test_a_symlink_to_the_database_cannot_start_a_second_daemon(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("apple\n")
    db = tmp_path / "m.db"
    d = Daemon(db, notes)
    try:
        d.start()
        link = tmp_path / "other-name.db"
        link.symlink_to(db)
        p = subprocess.run(MEMORY + ["--db", str(link), "watch", str(notes)],
                           capture_output=True, text=True, env=user_env(), timeout=60)
        assert p.returncode == 75 and "already uses this database" in p.stderr
    finally:
        d.close()


def test_a_hard_link_to_the_database_is_refused(tmp_path):
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "remember", "a", "alpha", "-n", "p").returncode == 0
    twin = tmp_path / "twin.db"
    os.link(db, twin)
    for path in (db, twin):
        for args in (["search", "alpha", "-n", "p"], ["remember", "b", "beta", "-n", "p"]):
            p = run_memory("--db", path, *args)
            assert p.returncode == 2 and "hard links" in p.stderr, p.stderr
    twin.unlink()
    assert run_memory("--db", db, "search", "alpha", "-n", "p").returncode == 0


def _in_read_only_mount(folder, *command):
    """Run a command with ``folder`` bind-mounted read-only (a private mount namespace)."""
    script = (f"mount --bind '{folder}' '{folder}' && mount -o remount,ro,bind '{folder}' "
              "&& exec \"$@\"")
    return subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", *command],
                          capture_output=True, text=True, env=user_env(), timeout=60)


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="a read-only bind mount needs root and unshare")
def test_a_database_on_a_read_only_mount_can_be_read(tmp_path):
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "remember", "a", "sync alpha", "-n", "notes").returncode == 0
    ro = tmp_path / "ro"
    ro.mkdir()
    assert run_memory("--db", db, "backup", ro / "m.db").returncode == 0
    p = _in_read_only_mount(ro, *MEMORY, "--db", str(ro / "m.db"), "search", "sync")
    assert p.returncode == 0 and "**sync** alpha" in p.stdout, p.stderr
    p = _in_read_only_mount(ro, *MEMORY, "--db", str(ro / "m.db"), "remember", "b", "x")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_the_daemon_never_creates_a_database_that_went_missing(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("apple\n")
    db = tmp_path / "data" / "m.db"
    p = subprocess.run(MEMORY + ["--db", str(db), "watch", str(notes)], capture_output=True,
                       text=True, env=user_env(), timeout=60)
    assert p.returncode == 2 and "does not create" in p.stderr
    assert not db.exists() and not db.parent.exists()
    db.parent.mkdir()
    db.touch()  # an empty file (a failed create, a truncation) is no database either
    p = subprocess.run(MEMORY + ["--db", str(db), "watch", str(notes)], capture_output=True,
                       text=True, env=user_env(), timeout=60)
    assert p.returncode == 2 and "(or is an empty file)" in p.stderr, p.stderr
    assert db.stat().st_size == 0


def test_a_create_that_fails_on_a_full_disk_leaves_no_empty_file(tmp_path):
    from support import fill_disk, small_disk
    with small_disk(tmp_path / "small", "64k") as small:
        fill_disk(small)
        p = run_memory("--db", small / "m.db", "init")
        assert p.returncode == 2 and "disk" in p.stderr, p.stderr
        assert not (small / "m.db").exists()


def test_a_database_moved_under_the_daemon_keeps_its_writes_and_its_log_is_not_lost(
        tmp_path):
    """The daemon's writes sit in the WAL beside the old name: on finding the file gone
    it writes them into the file it opened (wherever that went). A log left without its
    database (a writer killed before it could) is never taken by a new file: init, a
    sync and the daemon refuse, naming it."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\napple\n")
    db, moved = tmp_path / "m.db", tmp_path / "elsewhere.db"
    daemon = Daemon(db, notes, env={"MEMORY_EMBEDDER": "none"}).start()
    try:
        (notes / "a.md").write_text("# A\n\napple banana\n")
        wait_for(lambda: daemon.search_ids("banana"), what="the edit")
        os.rename(db, moved)
        assert daemon.proc.wait(timeout=60) == 1
    finally:
        daemon.close()
    p = run_memory("--db", moved, "search", "banana")
    assert "notes/a.md" in p.stdout, p.stdout + p.stderr
    assert not os.path.exists(f"{db}-wal") or os.path.getsize(f"{db}-wal") == 0

    # A log that holds writes, without its database: nothing takes it over.
    with open(f"{db}-wal", "wb") as wal:
        wal.write(b"\x37\x7f\x06\x82" + b"\0" * 4096)  # a WAL header's magic, and more
    for command in (["init"], ["sync", str(notes)], ["watch", str(notes), "--new-database"]):
        p = run_memory("--db", db, *command)
        assert p.returncode == 2 and "its write-ahead log" in p.stderr, (command, p.stderr)
        assert "moved or deleted while it was open" in p.stderr and not db.exists()
    assert os.path.getsize(f"{db}-wal") == 4100
