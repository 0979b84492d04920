"""A database on a real full disk before anything opened it (no -wal or -shm file yet):
SQLite cannot make its WAL index and says only "disk I/O error". Every reader names the
full disk, and the daemon waits for space instead of exiting."""

import json
import os
import subprocess
from contextlib import contextmanager

import pytest

from daemon_harness import Daemon
from support import fill_disk, run_memory, small_disk, wait_for


@contextmanager
def _synced_on_small_disk(tmp_path, size="900k"):
    """(database, notes): a note synced into a database on a small disk, not yet full."""
    with small_disk(tmp_path / "small", size) as small:
        notes = tmp_path / "notes"
        notes.mkdir()
        (notes / "a.md").write_text("# Plan\n\nthe zeppelin plan\n")
        db = small / "m.db"
        assert run_memory("--db", db, "sync", notes).returncode == 0
        yield db, notes


@pytest.fixture
def full_disk(tmp_path):
    """(database, notes): the database synced onto a small disk, then the disk filled."""
    with _synced_on_small_disk(tmp_path) as (db, notes):
        assert not os.path.exists(f"{db}-wal") and not os.path.exists(f"{db}-shm")
        fill_disk(db.parent)
        assert os.statvfs(db.parent).f_bavail == 0
        yield db, notes


def test_every_reader_names_the_full_disk(full_disk):
    db, _ = full_disk
    for command in (["search", "zeppelin"], ["status"], ["ui", "--no-open", "--port", "0"]):
        for name in ("-wal", "-shm"):  # as before any reader came: SQLite leaves stubs
            if os.path.exists(f"{db}{name}"):
                os.unlink(f"{db}{name}")
        p = run_memory("--db", db, *command)
        assert p.returncode == 2, (command, p.stdout, p.stderr)
        assert "the disk is full" in p.stderr and "0 bytes free in" in p.stderr, p.stderr
        assert "disk I/O error" not in p.stderr.split("(")[0]  # the cause comes first
    p = run_memory("--db", db, "doctor")
    assert p.returncode == 1 and "the disk is full" in p.stdout, p.stdout


@pytest.fixture
def waiting(full_disk):
    """The daemon started on the full disk, once it says it waits for space."""
    db, notes = full_disk
    d = Daemon(db, notes)
    try:
        d.start(wait_ready=False)
        d.wait_message("STATUS=waiting for disk space", timeout=60)
        yield d
    finally:
        d.close()


def test_the_daemon_waits_for_space_at_start_then_imports(full_disk, waiting):
    db, notes = full_disk
    d = waiting
    wait_for(lambda: "waiting for disk space" in d.log(), what="the reason in the log")
    assert "the disk is full" in d.log() and "disk I/O error" in d.log()
    (notes / "late.md").write_text("a latecomer quagga\n")
    wait_for(lambda: d.log().count("retrying in") >= 2, timeout=30, what="a second try")
    assert d.proc.poll() is None  # waiting, not exited
    (db.parent / "filler").unlink()
    try:
        wait_for(lambda: d.search_ids("quagga") == ["notes/late.md"], timeout=60,
                 what="the import once there is space")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the daemon's log:\n{d.log()}") from None
    assert d.search_ids("zeppelin") == ["notes/a.md#Plan"]
    (notes / "later.md").write_text("watched as usual okapi\n")
    wait_for(lambda: d.search_ids("okapi") == ["notes/later.md"], what="events after")
    assert d.stop() == 0


def test_a_signal_while_waiting_for_space_stops_cleanly(waiting):
    assert waiting.stop() == 0
    assert "stopped" in waiting.log()


def test_a_daemon_that_holds_its_lock_but_writes_nothing_is_named_stuck(tmp_path):
    """A daemon that cannot write (a full disk under a running one; here, stopped with
    SIGSTOP) is still running: status says it is not writing rather than not running,
    and doctor fails."""
    import signal
    import time

    import apsw
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Plan\n\nthe zeppelin plan\n")
    d = Daemon(tmp_path / "m.db", notes)
    try:
        d.start()
        os.kill(d.proc.pid, signal.SIGSTOP)
        conn = apsw.Connection(str(tmp_path / "m.db"))
        conn.execute("UPDATE daemon SET heartbeat_at = ?",
                     (int((time.time() - 3600) * 1e6),))
        conn.close()
        status = run_memory("--db", tmp_path / "m.db", "status").stdout
        assert "daemon        running (not writing" in status, status
        # its row names a daemon killed before it (it could not write its own): the lock
        # still says who runs
        dead = subprocess.Popen(["true"])
        dead.wait()
        conn = apsw.Connection(str(tmp_path / "m.db"))
        conn.execute("UPDATE daemon SET pid = ?", (dead.pid,))
        conn.close()
        status = json.loads(run_memory("--db", tmp_path / "m.db", "status",
                                       "--json").stdout)["daemon"]
        assert status["daemon_running"] and status["daemon_pid"] == d.proc.pid, status
        assert status["daemon_state"].startswith("not writing"), status
        doctor = run_memory("--db", tmp_path / "m.db", "doctor")
        assert doctor.returncode == 1 and "[fail] disk" in doctor.stdout, doctor.stdout
        os.kill(d.proc.pid, signal.SIGCONT)
        assert d.stop() == 0
    finally:
        if d.proc and d.proc.poll() is None:
            os.kill(d.proc.pid, signal.SIGCONT)
        d.close()
    status = run_memory("--db", tmp_path / "m.db", "status").stdout
    assert "daemon        not running" in status, status


def test_doctor_fails_when_the_disk_beside_the_database_is_full(tmp_path):
    with _synced_on_small_disk(tmp_path) as (db, _):
        assert run_memory("--db", db, "search", "zeppelin").returncode == 0  # WAL made
        fill_disk(db.parent)
        doctor = run_memory("--db", db, "doctor")
        assert doctor.returncode == 1, doctor.stdout
        assert "[fail] disk           0 MiB free beside the database" in doctor.stdout


def test_status_says_at_once_when_a_running_daemon_has_no_room(tmp_path):
    """The daemon's heartbeat stays fresh for a while after the disk fills under it (it
    can write nothing, the heartbeat included): status names the lack of room at once
    rather than "watching" alone."""
    with _synced_on_small_disk(tmp_path, "24m") as (db, notes):  # room enough to say nothing
        d = Daemon(db, notes)
        try:
            d.start()
            state = json.loads(run_memory("--db", db, "status", "--json").stdout)
            assert state["daemon"]["daemon_state"] == "watching", state["daemon"]
            fill_disk(db.parent)
            status = run_memory("--db", db, "status")
            assert status.returncode == 0, status.stderr
            assert ("watching (only 0.0 MiB free beside the database: nothing new is "
                    "recorded once the disk is full)") in status.stdout, status.stdout
            (db.parent / "filler").unlink()
            state = json.loads(run_memory("--db", db, "status", "--json").stdout)
            assert state["daemon"]["daemon_state"] == "watching", state["daemon"]
            assert d.stop() == 0
        finally:
            d.close()
