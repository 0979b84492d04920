"""``memory watch`` as a real process on real files, checked through searches."""

import os
import signal
import subprocess
import sys
import time

import pytest

from daemon_harness import Daemon
from support import run_memory, user_env, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")),
                                reason="the daemon needs inotify or FSEvents")


@pytest.fixture
def notes(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "keep.md").write_text("# Keep\n\nsteady anchor note\n")
    for i in range(4):
        (folder / f"filler{i}.md").write_text(f"filler note number{i}\n")
    return folder


@pytest.fixture
def daemon(tmp_path, notes):
    d = Daemon(tmp_path / "m.db", notes)
    d.start()
    yield d
    d.close()


def tombstones(d, memory_id):
    return [h for h in d.history(memory_id) if h.deleted]


def test_startup_imports_existing_notes_and_reports_ready(daemon, notes):
    assert daemon.search_ids("anchor") == ["notes/keep.md#Keep"]
    with daemon.store() as s:
        status = s.status("notes")
        runs = s.sync_runs(5)
    assert status.daemon.daemon_running is True and status.daemon.daemon_pid == daemon.proc.pid
    assert status.daemon.watched_folders == [str(notes)]
    assert status.daemon.files_indexed == len(list(notes.glob("*.md")))
    assert runs[-1].kind == "startup" and runs[-1].status == "ok"
    assert runs[-1].files_scanned == status.daemon.files_indexed
    # systemd's STATUS stays useful: what is watched, how much, and the last sync.
    line = next(x for m in daemon.messages for x in m.splitlines()
                if x.startswith("STATUS=watching"))
    assert f"watching {notes}" in line and f"{status.daemon.files_indexed} notes indexed" in line
    assert "last startup at" in line and f"{status.daemon.files_indexed} added" in line


def test_atomic_save_makes_one_revision(daemon, notes):
    path = notes / "keep.md"
    tmp = notes / ".keep.md.tmp123"
    tmp.write_text("# Keep\n\nsteady anchor note, edited atomically\n")
    os.replace(tmp, path)
    wait_for(lambda: daemon.search_ids("atomically"), what="atomic save")
    daemon.cookie()
    hist = daemon.history("notes/keep.md#Keep")
    assert [h.deleted for h in hist] == [False, False]


def test_vim_style_save_has_no_tombstone(daemon, notes):
    path = notes / "keep.md"
    probe = notes / "4913"
    probe.write_text("")
    probe.unlink()
    os.rename(path, notes / "keep.md~")           # vim's backup by rename
    path.write_text("# Keep\n\nsteady anchor note, saved by vim\n")
    (notes / "keep.md~").unlink()
    wait_for(lambda: daemon.search_ids("vim"), what="vim save")
    daemon.cookie()
    hist = daemon.history("notes/keep.md#Keep")
    assert [h.deleted for h in hist] == [False, False], hist


def test_create_delete_rename(daemon, notes):
    (notes / "new.md").write_text("brand new kumquat\n")
    wait_for(lambda: daemon.search_ids("kumquat") == ["notes/new.md"], what="create")
    (notes / "new.md").rename(notes / "renamed.md")
    wait_for(lambda: daemon.search_ids("kumquat") == ["notes/renamed.md"], what="rename")
    assert tombstones(daemon, "notes/new.md")
    (notes / "renamed.md").unlink()
    wait_for(lambda: daemon.search_ids("kumquat") == [], what="delete")
    with daemon.store() as s:  # history stays searchable at earlier cutoffs
        history = s.history("notes/renamed.md", namespace="notes")
        # The history follows the rename: the note under its first name, then its second.
        assert [(h.memory_id, h.deleted) for h in (history[0], history[-1])] == [
            ("notes/new.md", False), ("notes/renamed.md", True)]
        moved = history[1:3]  # the old name's tombstone and the new name's text, at once
        assert {(h.memory_id, h.deleted) for h in moved} == {
            ("notes/new.md", True), ("notes/renamed.md", False)}
        assert moved[0].known_at == moved[1].known_at
        found = s.search("kumquat", namespace="notes", as_of=moved[0].known_at)
        # the move is one instant (keyword hits: with the model on, every row ranks)
        assert [r.memory_id for r in found if r.bm25 is not None] == ["notes/renamed.md"]


def test_a_note_renamed_twice_within_the_settle_window_is_one_move(daemon, notes):
    (notes / "a.md").write_text("wandering persimmon\n")
    wait_for(lambda: daemon.search_ids("persimmon") == ["notes/a.md"], what="create")
    (notes / "a.md").rename(notes / "b.md")
    time.sleep(0.1)  # the daemon settles after 150 ms of quiet: a.md alone would be due
    (notes / "b.md").rename(notes / "c.md")
    wait_for(lambda: daemon.search_ids("persimmon") == ["notes/c.md"], what="moves")
    with daemon.store() as s:
        history = s.history("notes/c.md", namespace="notes")
        # Each tombstone comes with the new name's text at the same instant (one move, or
        # two on a slow machine): the note was never gone.
        assert history[0].memory_id == "notes/a.md" and history[-1].memory_id == "notes/c.md"
        added = {h.known_at for h in history if not h.deleted}
        assert all(h.known_at in added for h in history if h.deleted), history


def test_a_rename_seen_as_a_deletion_then_a_creation_is_a_move(daemon, notes):
    """git checkout, rsync and scripts rename by deleting, then writing the new file a
    moment later (a new inode): the two are imported at once, and recorded as a move."""
    text = " ".join(f"quince{i} orchard" for i in range(200)) + "\n"
    (notes / "old.md").write_text(text)
    wait_for(lambda: daemon.search_ids("quince7") == ["notes/old.md"], what="create")
    (notes / "old.md").unlink()
    time.sleep(0.1)  # the daemon settles after 150 ms of quiet: old.md alone would be due
    (notes / "new.md").write_text(text)
    wait_for(lambda: daemon.search_ids("quince7") == ["notes/new.md"], what="the move")
    with daemon.store() as s:
        history = s.history("notes/new.md", namespace="notes")
        assert history[0].memory_id == "notes/old.md", history  # followed across the move
        tombstone = next(h for h in history if h.deleted)
        assert any(h.known_at == tombstone.known_at and not h.deleted for h in history)


def test_folder_moved_in_and_out(daemon, notes, tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "a.md").write_text("moved persimmon a\n")
    (outside / "deep" / "b.md").write_text("moved persimmon b\n")
    outside.rename(notes / "inbox")
    wait_for(lambda: sorted(daemon.search_ids("persimmon")) ==
             ["notes/inbox/a.md", "notes/inbox/deep/b.md"], what="folder moved in")
    (notes / "inbox").rename(tmp_path / "gone")
    wait_for(lambda: daemon.search_ids("persimmon") == [], what="folder moved out")
    assert tombstones(daemon, "notes/inbox/deep/b.md")


def test_a_folder_moved_into_a_folder_just_made_is_still_watched(daemon, notes):
    # mkdir then rename at once: inotify reports the move's source unpaired (the new folder
    # had no watch yet), and watchdog then drops the watch of the moved folder's inode.
    (notes / "area").mkdir()
    (notes / "area" / "c.md").write_text("first loquat\n")
    wait_for(lambda: daemon.search_ids("loquat") == ["notes/area/c.md"], what="note imported")
    (notes / "box").mkdir()
    (notes / "area").rename(notes / "box" / "area")
    wait_for(lambda: daemon.search_ids("loquat") == ["notes/box/area/c.md"], what="folder moved")
    with open(notes / "box" / "area" / "c.md", "a") as fh:
        fh.write("then tamarillo\n")
    wait_for(lambda: daemon.search_ids("tamarillo") == ["notes/box/area/c.md"],
             what="an edit inside the moved folder")


def test_bad_files_are_skipped_and_named(daemon, notes):
    (notes / "binary.md").write_bytes(b"abc\x00def")
    (notes / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (notes / "huge.md").write_bytes(b"a " * (1024 * 1024 + 10))
    (notes / "fine.md").write_text("a fine quince\n")
    wait_for(lambda: daemon.search_ids("quince"), what="good file beside bad ones")
    log = wait_for(lambda: all(n in daemon.log() for n in ("binary.md", "latin1.md", "huge.md"))
                   and daemon.log(), what="bad files named in the log")
    assert "NUL byte" in log and "invalid UTF-8" in log and "too large" in log
    assert daemon.history("notes/binary.md") == []
    # a name with a line break cannot forge a log line: it is cited escaped, as by the CLI
    forged = "evil\n2026-12-06 00:00:00,000 personal_memory.watch INFO all good.md"
    (notes / forged).write_bytes(b"bad\x00x")
    log = wait_for(lambda: "all good.md" in daemon.log() and daemon.log(),
                   what="the oddly named file in the log")
    assert "evil\\n2026-12-06" in log, log[-600:]
    assert not any(line.startswith("2026-12-06 00:00:00,000") for line in log.splitlines())
    # a link to a folder made while watching is named at once, not at the next rescan
    (notes.parent / "elsewhere").mkdir()
    (notes / "linked").symlink_to(notes.parent / "elsewhere")
    wait_for(lambda: "skipped linked: a symbolic link to a folder" in daemon.log(),
             what="the linked folder named in the log")


def test_changes_while_stopped_are_picked_up(tmp_path, notes):
    d = Daemon(tmp_path / "m.db", notes)
    try:
        d.start()
        assert d.search_ids("number1")
        assert d.stop() == 0
        (notes / "filler1.md").unlink()
        (notes / "filler2.md").write_text("filler rewritten offline\n")
        (notes / "offline.md").write_text("written while stopped tangerine\n")
        d.start()
        assert d.search_ids("tangerine") == ["notes/offline.md"]
        assert d.search_ids("number1") == []
        assert d.search_ids("offline") == ["notes/filler2.md", "notes/offline.md"] or \
            sorted(d.search_ids("offline")) == ["notes/filler2.md", "notes/offline.md"]
    finally:
        d.close()


def test_root_removed_writes_no_tombstones_and_recovers(daemon, notes, tmp_path):
    moved = tmp_path / "unmounted"
    notes.rename(moved)  # like an unmounted drive: the whole folder disappears
    # The barrier: the daemon has seen the loss and recorded that it waits for the folder.
    with daemon.store() as s:
        wait_for(lambda: s.status().daemon.daemon_state.startswith("waiting for folder"),
                 what="waiting for the folder")
        d = s.status().daemon
        assert d.daemon_state == "waiting for folder (missing; its notes stay as they were)"
        assert d.watched_folders == [] and str(notes) in d.imported_folders  # not "watched"
    assert "missing" in daemon.log()
    assert daemon.search_ids("anchor") == ["notes/keep.md#Keep"]
    assert not tombstones(daemon, "notes/keep.md#Keep")
    moved.rename(notes)
    (notes / "after.md").write_text("back again plum\n")
    wait_for(lambda: daemon.search_ids("plum") == ["notes/after.md"], timeout=30,
             what="re-watch after the folder returned")
    (notes / "later.md").write_text("watched again apricot\n")
    wait_for(lambda: daemon.search_ids("apricot"), what="events after re-watch")
    assert not tombstones(daemon, "notes/keep.md#Keep")


def test_emptied_root_is_refused_by_one_shot_sync(tmp_path, notes):
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "sync", notes).returncode == 0
    for f in notes.iterdir():
        f.unlink()
    p = run_memory("--db", db, "sync", notes)
    assert p.returncode == 2 and "suddenly empty" in p.stderr
    # the command it names is the way out for a folder emptied on purpose
    assert f"run 'memory sync {notes} --allow-mass-delete'" in p.stderr
    from personal_memory import MemoryStore
    with MemoryStore.open(db, read_only=True) as s:
        assert s.stats().counts.tombstones == 0
    p = run_memory("--db", db, "sync", notes, "--allow-mass-delete")
    assert p.returncode == 0, p.stderr
    with MemoryStore.open(db, read_only=True) as s:
        assert s.stats().counts.tombstones > 0
        assert s.search("the", namespace="notes") == []


def test_burst_of_5000_files_is_batched(daemon, notes):
    burst = notes / "burst"
    burst.mkdir()
    for i in range(5000):
        (burst / f"n{i:04d}.md").write_text(f"burst note idx{i} mango\n")
    wait_for(lambda: len(daemon.search_ids("mango", limit=1000)) == 1000, timeout=120,
             what="burst imported")
    with daemon.store() as s:
        wait_for(lambda: s.status("notes").daemon.files_indexed >= 5005, timeout=120, what="all files")
        assert s.search("idx4999", namespace="notes")[0].memory_id == "notes/burst/n4999.md"
        assert s.search("idx0", namespace="notes")[0].memory_id == "notes/burst/n0000.md"
    daemon.cookie(timeout=120)  # about 3 s here (20 s before a folder was listed once a pass)
    txns = [int(line.split("(")[-1].split()[0]) for line in daemon.log().splitlines()
            if "change:" in line and "transactions" in line]
    assert sum(txns) <= 40, txns


KILL_WRITER = """
import sys
from pathlib import Path
folder, version = Path(sys.argv[1]), sys.argv[2]
para = ("word " * 300).strip()
for i in range(int(sys.argv[3])):
    text = "\\n\\n".join(f"{para} {version} part{p} file{i}" for p in range(3))
    (folder / f"f{i:04d}.md").write_text(text)
"""


def test_sigkill_during_a_large_batch_then_restart(tmp_path, notes):
    big = notes / "big"
    big.mkdir()
    n = 1500
    subprocess.run([sys.executable, "-c", KILL_WRITER, big, "vone", str(n)], check=True)
    db = tmp_path / "m.db"
    subprocess.run([sys.executable, "-m", "personal_memory", "--db", db, "sync", "--no-embed",
                    notes], check=True, capture_output=True, env=user_env())
    d = Daemon(db, notes)  # with the model on, it starts with a backlog of 1,500 vectors
    try:
        d.start()
        subprocess.run([sys.executable, "-c", KILL_WRITER, big, "vtwo", str(n)], check=True)
        wait_for(lambda: d.search_ids("vtwo", limit=5), timeout=60, what="first batch")
        d.proc.kill()
        d.proc.wait()
        with d.store() as s:  # its row says watching; the process is gone
            gone = s.status().daemon
        assert not gone.daemon_running and gone.daemon_state.startswith("ended without")
        paths = [f"big/f{i:04d}.md" for i in range(n)]
        after_kill = d.versions(paths)
        assert all(len(v) == 1 for v in after_kill.values())  # no file is half-imported
        assert {"vtwo"} in after_kill.values()
        d.proc = None
        d.start()
        final = d.versions(paths)
        assert all(v == {"vtwo"} for v in final.values())
    finally:
        d.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a zombie is seen in /proc")
def test_status_right_after_kill_9_says_the_daemon_ended(daemon):
    """Killed and not yet reaped by the process that started it (a zombie answers
    kill(pid, 0)), the daemon has ended: status must not say it runs."""
    daemon.proc.kill()
    wait_for(lambda: _state_letter(daemon.proc.pid) == "Z", timeout=10, what="a zombie")
    with daemon.store() as s:
        gone = s.status().daemon
    daemon.proc.wait()
    assert not gone.daemon_running and gone.daemon_state.startswith("ended without"), gone


def _state_letter(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rpartition(b")")[2].split()[0].decode()


def test_second_instance_is_refused(daemon, tmp_path, notes):
    p = run_memory("--db", daemon.db, "watch", notes, timeout=60)
    assert p.returncode == 75
    assert "already uses this database" in p.stderr


def test_sighup_from_a_closed_terminal_is_a_clean_stop(daemon):
    assert daemon.signal(signal.SIGHUP) == 0
    with daemon.store() as s:
        assert s.status().daemon.daemon_state == "stopped"


def test_sigterm_exits_zero_and_records_the_stop(daemon):
    assert daemon.signal(signal.SIGTERM) == 0
    daemon.wait_message("STOPPING=1")
    with daemon.store() as s:
        assert s.status().daemon.daemon_state == "stopped"
    out = run_memory("--db", daemon.db, "status", "--json")
    import json
    assert json.loads(out.stdout)["daemon"]["daemon_running"] is False


def test_systemd_watchdog_pings_while_healthy(tmp_path, notes):
    d = Daemon(tmp_path / "m.db", notes, env={"WATCHDOG_USEC": "400000"})
    try:
        d.start()
        d.wait_message("WATCHDOG=1", timeout=10)
        status = [m for m in d.messages if m.startswith("STATUS=") or "\nSTATUS=" in m]
        assert status
    finally:
        d.close()


def test_status_reports_a_running_daemon(daemon):
    import json
    out = json.loads(run_memory("--db", daemon.db, "status", "--json").stdout)["daemon"]
    assert out["daemon_running"] is True and out["files_indexed"] == 5
    assert out["last_sync_status"] == "ok" and out["last_successful_sync_at"]


def test_a_notify_receiver_that_never_reads_does_not_block_the_daemon(daemon, notes):
    """A full notify queue (more than ten unread datagrams) must not stall imports."""
    for n in range(30):
        (notes / f"queue{n}.md").write_text(f"queued note token{n}x\n")
        wait_for(lambda n=n: daemon.search_ids(f"token{n}x"), timeout=10,
                 what=f"import {n} with an unread notify queue")


def test_a_second_signal_stops_at_once_and_loses_nothing(tmp_path, notes):
    """SIGTERM asks for a stop after the current batch; a second one cuts it short. The
    open transaction is rolled back: every file is imported whole or not at all."""
    big = notes / "big"
    big.mkdir()
    n = 2500
    # Ten sections a file make each batch of 1,000 files last seconds, so the second
    # signal surely arrives while one is in progress, even on a loaded machine.
    subprocess.run([sys.executable, "-c", KILL_WRITER.replace("range(3)", "range(10)"), big,
                    "vone", str(n)], check=True)
    d = Daemon(tmp_path / "m.db", notes)
    try:
        d.start(wait_ready=False)
        d.wait_message("READY=1", timeout=60)
        d.wait_message("STATUS=syncing", timeout=60)  # inside the first sync's batches
        d.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "finishing the current transaction" in d.log(), interval=0.002,
                 what="first signal")
        d.proc.send_signal(signal.SIGTERM)
        code = d.proc.wait(timeout=30)
        if "second signal" in d.log():
            assert code == 1
        else:  # the batch ended in the milliseconds between the two signals: a clean stop
            assert "stopped" in d.log() and code in (0, -signal.SIGTERM), (code, d.log())
        with d.store() as s:
            assert s.health().integrity == "ok"
            indexed = s.status().daemon.files_indexed
        assert 0 < indexed < n  # it did stop early, after a whole batch
        paths = [f"big/f{i:04d}.md" for i in range(n)]
        versions = d.versions(paths, chunks=10)
        assert all(v in ({"vone"}, set()) for v in versions.values())  # whole or absent
        assert sum(v == {"vone"} for v in versions.values()) == indexed
    finally:
        d.close()


def test_watch_flags_win_over_the_config_file(tmp_path, notes):
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'settle_ms = 1234\nrescan_interval = 77\n\n[[folders]]\npath = "{notes}"\n')
    log = tmp_path / "watch.log"
    env = user_env()
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "personal_memory", "--db",
                                 tmp_path / "m.db", "watch", "--config", cfg,
                                 "--rescan-interval", "5", "--new-database"], stderr=fh,
                                env=env)
    try:
        wait_for(lambda: "settle" in log.read_text(), timeout=30, what="startup log line")
        line = next(x for x in log.read_text().splitlines() if "settle" in x)
        assert "settle 1234 ms" in line and "rescan every 5 s" in line  # file, then flag
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_a_database_inside_the_notes_folder_is_not_a_change(tmp_path, notes):
    d = Daemon(notes / "memory.db", notes)
    try:
        d.start()
        with d.store() as s:
            before = len(s.sync_runs(1000))
        for _ in range(3):  # each cookie is one note event, and waits until searchable
            d.cookie()
        with d.store() as s:
            runs = s.sync_runs(1000)[: len(s.sync_runs(1000)) - before]
        # One event run per cookie (two if an editor-like double write split it); a daemon
        # that saw its own writes as changes would sync again and again in between.
        assert len(runs) <= 6, [r.kind for r in runs]
        assert not any(r.files_scanned == 0 and r.kind == "event" for r in runs)
    finally:
        d.close()


def test_a_deleted_database_stops_the_daemon_for_a_restart(tmp_path, notes):
    d = Daemon(tmp_path / "m.db", notes)
    try:
        d.start()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(f"{d.db}{suffix}"):
                os.unlink(f"{d.db}{suffix}")
        (notes / "wake.md").write_text("an event wakes the loop\n")
        assert d.proc.wait(timeout=60) == 1  # the service restarts it onto a new file
        assert "deleted, moved or replaced" in d.log()
    finally:
        d.close()


LOCK_HOLDER = """
import sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()  # held until the test has seen the daemon wait for it
conn.execute("ROLLBACK")
"""


def test_the_daemon_waits_for_a_writer_that_holds_the_lock(tmp_path, notes):
    d = Daemon(tmp_path / "m.db", notes)
    try:
        d.start()
        holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(d.db)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "locked"
            (notes / "during.md").write_text("written while locked damson\n")
            # the daemon's busy timeout (10 s) runs out before it says so
            wait_for(lambda: "waiting for the database lock" in d.log(), timeout=40,
                     what="busy reported")
        finally:
            holder.stdin.close()  # the writer commits nothing and lets go
        assert holder.wait(timeout=60) == 0
        wait_for(lambda: d.search_ids("damson") == ["notes/during.md"], timeout=60,
                 what="import after the lock was released")
        assert d.proc.poll() is None  # still running
    finally:
        d.close()


def test_a_foreign_database_gets_no_lock_file(tmp_path, notes):
    import apsw
    foreign = tmp_path / "foreign.db"
    conn = apsw.Connection(str(foreign))
    conn.execute("CREATE TABLE other (x)")
    conn.close()
    p = run_memory("--db", foreign, "watch", notes, timeout=60)
    assert p.returncode == 2 and "another application" in p.stderr
    assert not (tmp_path / "foreign.db.lock").exists()


def test_a_note_with_an_undecodable_name_does_not_stop_the_daemon(tmp_path, notes):
    d = Daemon(tmp_path / "m.db", notes)
    try:
        d.start()
        with open(os.path.join(os.fsencode(notes), b"bad-\xff.md"), "wb") as fh:
            fh.write(b"bad name\n")
        d.cookie()  # later notes still import
        assert d.proc.poll() is None

        def named():  # its own batch may come after the cookie's on a loaded machine
            with d.store() as s:
                return any(e.path == "bad-\\xff.md" for r in s.sync_runs(50)
                           for e in r.errors)
        wait_for(named, timeout=60, what="the bad name's error in a sync run")
        assert d.proc.poll() is None
    finally:
        d.close()


def test_a_file_truncated_then_written_a_second_later_is_not_deleted(daemon, notes):
    import time
    path = notes / "keep.md"
    path.write_text("")  # an editor truncates the file...
    time.sleep(1.0)  # ...well past the settle window...
    path.write_text("# Keep\n\nsteady anchor note, written after truncation\n")  # ...then writes
    wait_for(lambda: daemon.search_ids("truncation"), what="the rewrite")
    daemon.cookie()
    assert [h.deleted for h in daemon.history("notes/keep.md#Keep")] == [False, False]


def test_a_rescan_leaves_a_truncated_file_to_its_long_settle(tmp_path, notes):
    """The safety-net rescan (here every second) comes while an editor's truncated file
    is still empty: it leaves it, and the text written next is a revision, no deletion."""
    import time
    d = Daemon(tmp_path / "m.db", notes, "--rescan-interval", "1").start()
    try:
        path = notes / "keep.md"
        path.write_text("")
        time.sleep(2.5)  # two rescans, well within the empty file's long settle
        path.write_text("# Keep\n\nsteady anchor note, written after a rescan\n")
        wait_for(lambda: d.search_ids("rescan"), what="the rewrite")
        with d.store() as s:  # the rescans ran meanwhile
            assert any(r.kind == "periodic-rescan" for r in s.sync_runs(50))
        assert [h.deleted for h in d.history("notes/keep.md#Keep")] == [False, False]
    finally:
        d.close()


def test_a_file_that_stays_empty_is_recorded_emptied(daemon, notes):
    (notes / "keep.md").write_text("")
    wait_for(lambda: tombstones(daemon, "notes/keep.md#Keep"), timeout=30,
             what="the emptied note's tombstone")
    assert daemon.search_ids("anchor") == []
    # the line is logged once the sync returns, a moment after its commit
    wait_for(lambda: "change:" in daemon.log() and "1 tombstoned" in daemon.log(),
             timeout=30, what="the change's log line")


def test_a_held_back_deletion_is_no_problem_once_the_notes_are_back(tmp_path):
    """A folder moved out of the vault would delete most of it: the daemon holds the
    deletion back and says so in status; moved back, the problem goes by itself."""
    vault = tmp_path / "v"
    (vault / "sub").mkdir(parents=True)
    (vault / "top.md").write_text("# top\n")
    for i in range(4):
        (vault / "sub" / f"n{i}.md").write_text(f"# n{i}\n\nword{i}\n")
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "sync", vault).returncode == 0
    d = Daemon(db, vault).start()
    try:
        def problems() -> str:
            return run_memory("--db", db, "--json", "status").stdout
        os.rename(vault / "sub", tmp_path / "away")
        wait_for(lambda: "allow-mass-delete" in problems(), what="the deletion held back")
        assert d.search_ids("word1") == ["v/sub/n1.md#n1"]  # nothing was deleted
        os.rename(tmp_path / "away", vault / "sub")
        wait_for(lambda: "allow-mass-delete" not in problems(), what="the problem gone")
        assert d.search_ids("word1") == ["v/sub/n1.md#n1"]
        assert d.stop() == 0
    finally:
        d.close()


def test_a_twin_name_written_under_the_daemon_is_named(tmp_path):
    """A file whose name is another's in the other Unicode form (NFD beside NFC), written
    while the daemon watches, is named as a problem at once, as a whole scan names it."""
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "caf\u00e9.md").write_text("# A\n\nnfc words\n")
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "sync", vault).returncode == 0
    d = Daemon(db, vault).start()
    try:
        (vault / "cafe\u0301.md").write_text("# B\n\nnfd words\n")
        wait_for(lambda: "same name after Unicode normalisation" in run_memory(
            "--db", db, "status").stdout, what="the twin named")
        assert d.search_ids("nfc") == ["v/caf\u00e9.md#A"]
        assert d.stop() == 0
    finally:
        d.close()


def test_a_file_system_mounted_on_the_notes_folder_is_watched(tmp_path):
    """A drive mounted on the notes' folder (or taken away) takes the folder's watches
    with it, and nothing says so: the daemon sees its root become another directory,
    watches afresh and rescans, so an edit there is seen at once, not at the periodic
    rescan (10 minutes)."""
    import shutil
    if os.geteuid() != 0:
        pytest.skip("mounting a folder on the notes' folder needs root")
    notes, db, drive = tmp_path / "notes", tmp_path / "m.db", tmp_path / "drive"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\napple\n")
    shutil.copytree(notes, drive)
    d = Daemon(db, notes, "--rescan-interval", "600", env={"MEMORY_EMBEDDER": "none"}).start()
    try:
        assert subprocess.run(["mount", "--bind", str(drive), str(notes)]).returncode == 0
        try:
            # at once (the mount watch), not at the next heartbeat's check (30 s)
            wait_for(lambda: "mounted or unmounted" in d.log(), timeout=20,
                     what="the daemon to see the folder mounted")
            time.sleep(1)  # its new watches are made by the observer's own threads
            (notes / "a.md").write_text("# A\n\napple banana\n")
            wait_for(lambda: d.search_ids("banana") == ["notes/a.md#A"], timeout=20,
                     what="the edit on the mounted folder")
        finally:
            subprocess.run(["umount", "-l", str(notes)])
    finally:
        d.close()
