"""The daemon loop with its file observer replaced (the seam), for what a real process
cannot be made to do on demand: an inotify queue overflow and a dying observer."""

import logging
import os
import subprocess
import threading
import time
from contextlib import contextmanager

import pytest

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from personal_memory.watch.daemon import Watcher
from personal_memory.watch.mounts import MountWatch, mount_of, mounts
from support import keyword_ids as ids, wait_for


class FakeObserver:
    """Accepts schedules, delivers nothing; can be made to die."""
    instances = []

    def __init__(self):
        self.alive = False
        self.emitters = ()
        self.handlers = []
        FakeObserver.instances.append(self)

    def schedule(self, handler, path, recursive=False, event_filter=None):
        if recursive:
            self.handlers.append(handler)

    def start(self):
        self.alive = True

    def stop(self):
        self.alive = False

    def join(self, timeout=None):
        pass

    def is_alive(self):
        return self.alive


@contextmanager
def running(watcher):
    """The watcher's loop on a thread (the store then belongs to it), stopped on exit."""
    thread = threading.Thread(target=watcher.run)
    thread.start()
    try:
        yield thread
    finally:
        watcher.stop()
        thread.join(10)
        assert not thread.is_alive()


def start(tmp_path, settle_ms=50):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("first apple\n")
    store = MemoryStore.open(tmp_path / "m.db")
    FakeObserver.instances.clear()
    watcher = Watcher(store, [Folder.of(root)], settle_ms=settle_ms, rescan_interval=0,
                      observer_factory=FakeObserver)
    thread = threading.Thread(target=watcher.run)  # the store now belongs to this thread
    thread.start()
    with MemoryStore.open(tmp_path / "m.db", read_only=True) as reader:
        wait_for(lambda: reader.status().daemon.daemon_state == "watching")
    return root, store, watcher, thread


def stop(watcher, thread, store):
    watcher.stop()
    thread.join(10)
    store.close()


def test_inotify_overflow_warning_triggers_a_full_rescan(tmp_path):
    root, store, watcher, thread = start(tmp_path)
    try:
        (root / "b.md").write_text("unseen banana\n")  # the fake observer reports nothing
        (root / "c.md").write_text("seen coconut\n")
        watcher.mark(str(root / "c.md"))  # one event, for c.md only
        reader = MemoryStore.open(tmp_path / "m.db", read_only=True)
        # The barrier: the event's sync has run, and it looked at c.md alone.
        wait_for(lambda: ids(reader, "coconut") == ["notes/c.md"], what="event sync")
        assert ids(reader, "banana") == []
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost")
        wait_for(lambda: ids(reader, "banana") == ["notes/b.md"], what="rescan")
        reader.close()
    finally:
        stop(watcher, thread, store)


def test_a_dead_observer_is_replaced_and_the_tree_rescanned(tmp_path):
    root, store, watcher, thread = start(tmp_path)
    try:
        (root / "c.md").write_text("missed cherry\n")
        FakeObserver.instances[-1].alive = False  # its thread died
        watcher._wake.set()
        wait_for(lambda: len(FakeObserver.instances) >= 2, what="observer restarted")
        reader = MemoryStore.open(tmp_path / "m.db", read_only=True)
        wait_for(lambda: ids(reader, "cherry") == ["notes/c.md"], what="rescan")
        reader.close()
    finally:
        stop(watcher, thread, store)
    assert not thread.is_alive()


def test_a_folder_deleted_or_moved_away_rebuilds_the_watches_and_rescans(tmp_path):
    from watchdog.events import DirDeletedEvent, FileDeletedEvent
    root, store, watcher, thread = start(tmp_path)
    try:
        (root / "c.md").write_text("missed cherry\n")
        handler = FakeObserver.instances[-1].handlers[0]
        handler.on_any_event(FileDeletedEvent(str(root / "gone.md")))
        reader = MemoryStore.open(tmp_path / "m.db", read_only=True)
        wait_for(lambda: not watcher.pending, what="the file event settled")
        handler.on_any_event(DirDeletedEvent(str(root / ".git" / "objects" / "ab")))
        watcher._wake.set()
        wait_for(lambda: not watcher.pending, what="the hidden folder's event settled")
        # A file's event, or a folder the notes are not read from, keeps the watches.
        assert len(FakeObserver.instances) == 1
        assert ids(reader, "cherry") == []
        handler.on_any_event(DirDeletedEvent(str(root / "old")))
        wait_for(lambda: len(FakeObserver.instances) == 2, what="watches made afresh")
        wait_for(lambda: ids(reader, "cherry") == ["notes/c.md"], what="rescan")
        reader.close()
    finally:
        stop(watcher, thread, store)


def test_the_rescan_after_a_folder_deletion_waits_for_the_burst_to_end(tmp_path):
    """git empties and removes a folder early in a checkout and writes on for a while: the
    rescan that follows the folder's deletion waits until marks have stopped for a settle
    window (at most ten), so it does not read the checkout half done."""
    from watchdog.events import DirDeletedEvent, FileModifiedEvent
    root, store, watcher, thread = start(tmp_path, settle_ms=250)
    try:
        (root / "c.md").write_text("missed cherry\n")  # only the rescan reads it
        handler = FakeObserver.instances[-1].handlers[0]
        rescans = []
        seen = logging.Handler()
        seen.emit = lambda record: rescans.append(time.monotonic()) if record.getMessage(
            ).startswith("folder moved:") else None
        watch_log = logging.getLogger("personal_memory.watch")
        level = watch_log.level
        watch_log.setLevel(logging.INFO)
        watch_log.addHandler(seen)
        try:
            handler.on_any_event(DirDeletedEvent(str(root / "old")))
            burst = time.monotonic()
            while time.monotonic() - burst < 1.0:  # four windows of marks 20 ms apart
                handler.on_any_event(FileModifiedEvent(str(root / "busy.md")))
                time.sleep(0.02)
            ended = time.monotonic()
            assert len(FakeObserver.instances) == 2  # the watches were made afresh at once
            reader = MemoryStore.open(tmp_path / "m.db", read_only=True)
            wait_for(lambda: ids(reader, "cherry") == ["notes/c.md"], what="rescan after it")
            reader.close()
        finally:
            watch_log.removeHandler(seen)
            watch_log.setLevel(level)
        assert len(rescans) == 1 and rescans[0] >= ended, "rescanned during the burst"
    finally:
        stop(watcher, thread, store)


def test_too_few_inotify_watches_are_reported(tmp_path, monkeypatch, caplog):
    import sys
    import pytest
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify watch limits exist on Linux only")
    import personal_memory.watch.daemon as watch_mod
    limit = tmp_path / "max_user_watches"
    limit.write_text("3\n")
    monkeypatch.setattr(watch_mod, "INOTIFY_WATCHES", limit)
    root = tmp_path / "notes"
    for i in range(5):
        (root / f"d{i}").mkdir(parents=True)
    with MemoryStore.open(tmp_path / "m.db") as store:
        watcher = Watcher(store, [Folder.of(root)], rescan_interval=600,
                          observer_factory=FakeObserver)
        with caplog.at_level(logging.WARNING, logger="personal_memory.watch"):
            watcher._check_watch_limit()
    assert "max_user_watches is 3" in caplog.text and "sysctl" in caplog.text
    assert watcher.rescan_interval == 60.0  # falls back to frequent rescans


class FullObserver(FakeObserver):
    """inotify out of watches: every recursive schedule fails with ENOSPC."""

    def schedule(self, handler, path, recursive=False, event_filter=None):
        if recursive:
            import errno
            raise OSError(errno.ENOSPC, "No space left on device")


def test_running_out_of_inotify_watches_falls_back_to_rescans(tmp_path, caplog):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("first apple\n")
    with MemoryStore.open(tmp_path / "m.db") as store:
        watcher = Watcher(store, [Folder.of(root)], settle_ms=50, rescan_interval=600,
                          observer_factory=FullObserver)
        with caplog.at_level(logging.ERROR, logger="personal_memory.watch"), \
                running(watcher), MemoryStore.open(tmp_path / "m.db", read_only=True) as reader:
            wait_for(lambda: reader.status().daemon.daemon_state == "watching")
            assert ids(reader, "apple") == ["notes/a.md"]  # the startup sync ran
    assert "inotify watch limit" in caplog.text and "sysctl" in caplog.text
    assert watcher.rescan_interval == 60.0


def test_relevant_events_exclude_the_database_and_other_files(tmp_path):
    with MemoryStore.open(tmp_path / "notes" / "m.db") as store:
        w = Watcher(store, [Folder.of(tmp_path / "notes")], observer_factory=FakeObserver)
        base = str(tmp_path / "notes")
        assert not w.relevant(base + "/m.db", False)
        assert not w.relevant(base + "/m.db-wal", False)
        assert not w.relevant(base + "/m.db.lock", False)
        assert not w.relevant(base + "/picture.png", False)
        assert not w.relevant(base + "/.note.md.swp", False)
        assert w.relevant(base + "/note.md", False)
        assert w.relevant(base + "/sub", True)
        # a link to a folder, reported as a file: its scan names it as not followed
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "notes" / "linked").symlink_to(tmp_path / "elsewhere")
        (tmp_path / "notes" / "dangling").symlink_to(tmp_path / "gone")
        assert w.relevant(base + "/linked", False)
        assert not w.relevant(base + "/dangling", False)


def test_the_os_is_asked_for_changes_only_never_for_opens_and_reads(tmp_path):
    """A program reading a file beside the notes folder (or its hidden settings)
    thousands of times a second sent every open and close to Python, to be thrown away:
    hundreds of MB and an overflow rescan after another. inotify's mask for both watches
    leaves them out; a note's edit, creation, move and deletion are still asked for."""
    import sys
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify and its event mask are Linux's (macOS watches through FSEvents, "
                    "which asks for no kinds of events)")
    from watchdog.observers.inotify_c import InotifyConstants as c
    from personal_memory.watch.observer import (EventFilter, ObserverLifecycle,
                                                watchdog_observer)
    (tmp_path / "notes").mkdir()
    life = ObserverLifecycle([Folder.of(tmp_path / "notes")], EventFilter(str(tmp_path / "m.db")),
                             lambda *p: None, lambda: None, watchdog_observer)
    life.start(set())
    try:
        masks = {e.watch.path: e.get_event_mask_from_filter() for e in life._observer.emitters}
    finally:
        life.stop()
    assert set(masks) == {str(tmp_path), str(tmp_path / "notes")}
    for path, mask in masks.items():
        assert not mask & (c.IN_OPEN | c.IN_CLOSE_NOWRITE | c.IN_ACCESS), path
        assert mask & c.IN_MOVE and mask & c.IN_CREATE and mask & c.IN_DELETE
    notes = masks[str(tmp_path / "notes")]
    assert notes & c.IN_MODIFY and notes & c.IN_CLOSE_WRITE and notes & c.IN_ATTRIB
    assert not masks[str(tmp_path)] & (c.IN_MODIFY | c.IN_ATTRIB | c.IN_CLOSE_WRITE)


def test_a_full_disk_is_retried_after_a_back_off(tmp_path, monkeypatch, caplog):
    from personal_memory.errors import DiskFull
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("first apple\n")
    store = MemoryStore.open(tmp_path / "m.db")
    real_sync = store.sync
    calls = []

    def flaky(*args, **kwargs):
        calls.append(kwargs.get("kind"))
        if len(calls) == 1:
            raise DiskFull("database m.db: disk full; nothing was written")
        return real_sync(*args, **kwargs)
    real_sync_paths = store.sync_paths

    def full_until_the_retry(*args, **kwargs):
        calls.append(kwargs.get("kind"))
        if len(calls) < 3:
            raise DiskFull("database m.db: disk full; nothing was written")
        return real_sync_paths(*args, **kwargs)
    monkeypatch.setattr(store, "sync", flaky)
    monkeypatch.setattr(store, "sync_paths", full_until_the_retry)
    watcher = Watcher(store, [Folder.of(root)], settle_ms=50, rescan_interval=0,
                      observer_factory=FakeObserver)
    with caplog.at_level(logging.WARNING, logger="personal_memory.watch"), running(watcher), \
            MemoryStore.open(tmp_path / "m.db", read_only=True) as reader:
        wait_for(lambda: calls, what="the startup sync")
        for i in range(5):  # edits during the back-off wait for the retry, not fail one by one
            (root / f"e{i}.md").write_text(f"edited elderberry {i}\n")
            watcher.mark(str(root / f"e{i}.md"))
        wait_for(lambda: ids(reader, "apple") == ["notes/a.md"], timeout=30,
                 what="retry after the disk was full")
        assert len(ids(reader, "elderberry")) == 5
    store.close()
    assert calls[:2] == ["startup", "retry-after-a-full-disk"]
    assert "waiting for disk space" in caplog.text and "retrying in 2 s" in caplog.text
    assert caplog.text.count("disk full") == 1


def test_an_unreadable_watch_limit_is_reported(tmp_path, monkeypatch, caplog):
    import sys
    import pytest
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify watch limits exist on Linux only")
    import personal_memory.watch.daemon as watch_mod
    monkeypatch.setattr(watch_mod, "INOTIFY_WATCHES", tmp_path / "hidden" / "max_user_watches")
    with MemoryStore.open(tmp_path / "m.db") as store:
        watcher = Watcher(store, [Folder.of(tmp_path)], observer_factory=FakeObserver)
        with caplog.at_level(logging.WARNING, logger="personal_memory.watch"):
            watcher._check_watch_limit()
    assert "watch limit is not checked" in caplog.text and "No such file" in caplog.text


def test_the_daemon_lock_is_taken_on_a_full_disk(tmp_path, monkeypatch):
    """The pid in the lock file only names the holder to a second daemon: a disk too full
    to write it must not keep the daemon from starting (it then waits for space)."""
    import errno
    import os
    import pytest
    from personal_memory.errors import LockedError
    from personal_memory.watch.lock import DaemonLock

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "pwrite", full)
    with DaemonLock(tmp_path / "m.db"):
        with pytest.raises(LockedError, match="another 'memory watch' already uses"):
            DaemonLock(tmp_path / "m.db").acquire()


def test_an_embedding_fault_is_logged_and_the_worker_tries_again(tmp_path, monkeypatch,
                                                                 caplog):
    """A fault the worker does not expect (an I/O error, the model's) is said with its
    traceback, and the worker goes on: new notes still get their vectors."""
    from ground_truth import ToyEmbedder
    from personal_memory.watch import embedding
    monkeypatch.setattr(embedding, "RETRY_SECONDS", 0.2)
    real, calls = MemoryStore.embed_pending, []

    def faulty(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OSError(22, "Invalid argument")
        return real(self, *args, **kwargs)
    monkeypatch.setattr(MemoryStore, "embed_pending", faulty)
    with MemoryStore.open(tmp_path / "m.db", embedder=ToyEmbedder()) as store:
        store.remember("x", "a fact to embed", namespace="n")
        worker = embedding.EmbeddingWorker(store, busy=lambda: False)
        with caplog.at_level(logging.ERROR, logger="personal_memory.watch"):
            worker.start()
            worker.nudge()
            wait_for(lambda: store.pending_vectors() == 0, timeout=30,
                     what="the vector after the fault")
            worker.stop()
    assert "embedding stopped: [Errno 22] Invalid argument; retrying" in caplog.text
    assert "Traceback" in caplog.text and len(calls) >= 2


def test_the_mount_watch_is_told_of_a_mount_and_an_unmount(tmp_path):
    """A file system mounted anywhere changes the mount table: the watch says so at once,
    and not before, and says nothing once stopped."""
    if os.geteuid() != 0:
        pytest.skip("mounting a folder needs root")
    seen = threading.Event()
    watch = MountWatch(seen.set)
    watch.start()
    try:
        (tmp_path / "src").mkdir()
        (tmp_path / "dst").mkdir()
        before = mount_of(tmp_path / "dst", mounts())
        assert not seen.wait(1.5)  # started: no change yet
        assert subprocess.run(["mount", "--bind", str(tmp_path / "src"),
                               str(tmp_path / "dst")]).returncode == 0
        try:
            wait_for(seen.is_set, timeout=10, what="the mount to be told")
            assert mount_of(tmp_path / "dst", mounts()) != before
            seen.clear()
        finally:
            subprocess.run(["umount", "-l", str(tmp_path / "dst")])
        wait_for(seen.is_set, timeout=10, what="the unmount to be told")
        assert mount_of(tmp_path / "dst", mounts()) == before
    finally:
        watch.stop()
    seen.clear()
    subprocess.run(["mount", "--bind", str(tmp_path / "src"), str(tmp_path / "dst")])
    subprocess.run(["umount", "-l", str(tmp_path / "dst")])
    assert not seen.wait(1.5)
