"""The daemon's debouncer (watch.pending) on real files, with its clock given."""

from personal_memory.notes.folders import Folder
from personal_memory.watch.pending import MAX_DELAY_FACTOR, PendingPaths


def _queue(tmp_path):
    folder = Folder.of(tmp_path)
    return folder, PendingPaths(0.3, empty_settle_seconds=5.0)


def test_a_path_settles_after_the_quiet_window(tmp_path):
    folder, q = _queue(tmp_path)
    (tmp_path / "a.md").write_text("text\n")
    q.mark(folder, "a.md", now=10.0)
    assert q.next_deadline() == 10.3
    assert q.take_settled(now=10.2) == {}
    assert q.take_settled(now=10.3) == {folder: {"a.md"}}
    assert not q and q.next_deadline() is None


def test_a_path_that_keeps_changing_is_still_taken(tmp_path):
    folder, q = _queue(tmp_path)
    (tmp_path / "a.md").write_text("text\n")
    for i in range(40):
        q.mark(folder, "a.md", now=10.0 + i * 0.1)
    assert q.take_settled(now=10.0 + 0.3 * MAX_DELAY_FACTOR) == {folder: {"a.md"}}


def test_an_emptied_file_waits_the_long_settle(tmp_path):
    folder, q = _queue(tmp_path)
    note = tmp_path / "a.md"
    note.write_text("")  # truncated by an editor that writes the text a moment later
    q.mark(folder, "a.md", now=10.0)
    assert q.take_settled(now=10.3) == {}
    assert q and q.next_deadline() == 15.0
    note.write_text("the text\n")
    q.mark(folder, "a.md", now=11.0)  # the write: it settles as usual, with its text
    assert q.next_deadline() == 11.3
    assert q.take_settled(now=11.3) == {folder: {"a.md"}}


def _emptied_and_written(tmp_path):
    """a.md emptied and b.md written at 10.0: b.md settles at 10.3, a.md waits."""
    folder, q = _queue(tmp_path)
    (tmp_path / "a.md").write_text("")
    (tmp_path / "b.md").write_text("b\n")
    q.mark(folder, "a.md", now=10.0)
    q.mark(folder, "b.md", now=10.0)
    assert q.take_settled(now=10.3) == {folder: {"b.md"}}  # the other path is not held up
    return folder, q


def test_a_file_that_stays_empty_is_taken_after_the_long_settle(tmp_path):
    folder, q = _emptied_and_written(tmp_path)
    assert q.take_settled(now=14.9) == {}
    assert q.take_settled(now=15.0) == {folder: {"a.md"}}  # still empty: emptied for real
    assert not q


def test_deleted_files_and_folders_do_not_wait(tmp_path):
    folder, q = _queue(tmp_path)
    (tmp_path / "sub").mkdir()
    for rel in ("gone.md", "sub", ""):
        q.mark(folder, rel, now=10.0)
    assert q.take_settled(now=10.3) == {folder: {"gone.md", "sub", ""}}


def test_a_rescan_takes_every_waiting_path_but_the_emptied_ones(tmp_path):
    folder, q = _emptied_and_written(tmp_path)  # a.md now waits the long settle
    q.mark(folder, "b.md", now=11.0)
    assert q.clear_but_empty() == {folder: {"a.md"}}  # the rescan reads b.md, leaves a.md
    assert q.take_settled(now=14.9) == {}
    assert q.take_settled(now=15.0) == {folder: {"a.md"}}  # still its own long settle
    assert not q


def test_the_two_sides_of_a_move_settle_together(tmp_path):
    folder, q = _queue(tmp_path)
    (tmp_path / "b.md").write_text("text\n")
    for i in range(10):  # a.md kept changing, then was renamed to b.md
        q.mark(folder, "a.md", now=10.0 + i * 0.3)
    q.mark_together([(folder, "a.md"), (folder, "b.md")], now=12.8)
    # a.md is due by its first mark; b.md, named by the same event, goes with it, so the
    # import sees the move whole (not a deletion now and a new note later).
    assert q.take_settled(now=13.0) == {folder: {"a.md", "b.md"}}
    assert not q


def test_a_chain_of_moves_settles_once_its_last_move_has(tmp_path):
    folder, q = _queue(tmp_path)
    (tmp_path / "c.md").write_text("text\n")
    q.mark(folder, "other.md", now=10.0)
    q.mark_together([(folder, "a.md"), (folder, "b.md")], now=10.0)
    q.mark_together([(folder, "b.md"), (folder, "c.md")], now=10.2)  # renamed again
    assert q.next_deadline() == 10.3
    assert q.take_settled(now=10.3) == {folder: {"other.md"}}  # a.md waits for b and c
    assert q.next_deadline() == 10.5
    assert q.take_settled(now=10.5) == {folder: {"a.md", "b.md", "c.md"}}
    q.mark(folder, "a.md", now=11.0)  # imported: no longer linked
    q.mark(folder, "c.md", now=11.2)
    assert q.take_settled(now=11.3) == {folder: {"a.md"}}


def test_the_daemon_marks_one_events_paths_together(tmp_path):
    """A move's two paths reach the queue in one call, as one event."""
    from watchdog.events import FileMovedEvent
    from personal_memory import MemoryStore
    from personal_memory.watch.daemon import Watcher
    from test_watcher_seam import FakeObserver

    root = tmp_path / "notes"
    root.mkdir()
    store = MemoryStore.open(tmp_path / "m.db")
    try:
        watcher = Watcher(store, [Folder.of(root)], settle_ms=50, rescan_interval=0,
                          observer_factory=FakeObserver)
        seen = []
        watcher.pending.mark_together = lambda keys, now=None: seen.append(
            [rel for _, rel in keys])
        watcher.observer.start(set())
        handler = FakeObserver.instances[-1].handlers[-1]
        handler.on_any_event(FileMovedEvent(str(root / "a.md"), str(root / "b.md")))
        assert seen == [["a.md", "b.md"]]
        watcher.observer.stop()
    finally:
        store.close()
