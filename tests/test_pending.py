"""The daemon's debouncer (watch.pending) on real files, with its clock given."""

from personal_memory.notes.folders import Folder
from personal_memory.watch.pending import MAX_DELAY_FACTOR, WAIT_WINDOWS, PendingPaths


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


def test_a_note_gone_alone_waits_for_its_file_to_come_back(tmp_path):
    """An editor renames the note away and writes it anew 0.4 s later (a slow disk): the
    note was recorded as deleted, then restored. Gone, and alone in its folder's queue, it
    waits MISSING_SETTLE_SECONDS; written again meanwhile, it settles as one change."""
    folder, q = _queue(tmp_path)
    note = tmp_path / "a.md"
    q.mark(folder, "a.md", now=10.0)  # renamed to a.md~ (no note's name: not marked)
    assert q.take_settled(now=10.3) == {}
    assert q.next_deadline() == 11.5
    note.write_text("the text again\n")
    q.mark(folder, "a.md", now=10.4)
    assert q.take_settled(now=10.8) == {folder: {"a.md"}}  # there: taken as a change
    assert not q
    # still gone at the end of the wait: a deletion after all
    note.unlink()
    q.mark(folder, "a.md", now=20.0)
    assert q.take_settled(now=20.3) == {} and q.take_settled(now=21.5) == {folder: {"a.md"}}
    # a rescan meanwhile leaves it to its wait, as it leaves an emptied file
    q.mark(folder, "a.md", now=30.0)
    assert q.take_settled(now=30.3) == {}
    assert q.clear_but_empty() == {folder: {"a.md"}}


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
    (tmp_path / "other.md").write_text("text\n")
    q.mark(folder, "other.md", now=10.0)
    q.mark_together([(folder, "a.md"), (folder, "b.md")], now=10.0)
    q.mark_together([(folder, "b.md"), (folder, "c.md")], now=10.2)  # renamed again
    assert q.next_deadline() == 10.3
    # a.md waits for b and c; other.md, for the paths marked just after it
    assert q.take_settled(now=10.3) == {}
    assert q.next_deadline() == 10.5
    assert q.take_settled(now=10.5) == {folder: {"a.md", "b.md", "c.md", "other.md"}}
    q.mark(folder, "a.md", now=11.0)  # imported: no longer linked
    q.mark(folder, "c.md", now=11.35)  # (not within a window after a.md went)
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


class _Reference:
    """The debouncer's rule, from scratch at every call: a path waits from its first mark
    since it was last taken; two paths one event named together stay linked while both
    wait; linked paths settle as one, when the latest of them has been quiet for the
    window (or the earliest has waited ``MAX_DELAY_FACTOR`` windows). A settled group
    with a path that has not waited since its last mark waits, once, until every path of
    the folder first marked within a window after the group's last mark has settled, but
    no longer than ``WAIT_WINDOWS`` windows after that mark. Before that, a settled group
    whose folder holds at least ``burst`` paths first marked since its last mark, the
    latest of the folder's marks within a window of now, waits until a window after that
    latest mark (at most ``MAX_DELAY_FACTOR`` windows after its own last mark)."""

    def __init__(self, settle, burst):
        self.settle, self.marks, self.epoch, self.links = settle, {}, {}, []
        self.held, self.waited, self.burst = {}, set(), burst

    def mark(self, keys, now):
        for k in keys:
            first = self.marks[k][0] if k in self.marks else now
            self.marks[k] = (first, now)
            self.held.pop(k, None)
            self.waited.discard(k)
        if len(keys) > 1:
            self.links.append([(k, self.epoch.get(k, 0)) for k in keys])

    def groups(self):
        parent = {k: k for k in self.marks}

        def root(k):
            while parent[k] != k:
                k = parent[k]
            return k
        for link in self.links:
            live = [k for k, e in link if k in self.marks and self.epoch.get(k, 0) == e]
            if len(live) == len(link):
                for k in live[1:]:
                    parent[root(k)] = root(live[0])
        out = {}
        for k in self.marks:
            out.setdefault(root(k), []).append(k)
        return [(g, max([min(max(self.marks[k][1] for k in g) + self.settle,
                             min(self.marks[k][0] for k in g) + self.settle * MAX_DELAY_FACTOR)]
                        + [self.held[k] for k in g if k in self.held]))
                for g in out.values()]

    def take(self, now):
        groups = self.groups()
        settles = {k: d for g, d in groups for k in g}
        taken = []
        for g, d in groups:
            if d > now:
                continue
            last = max(self.marks[k][1] for k in g)
            latest = max(m[1] for m in self.marks.values())
            if (sum(1 for first, _ in self.marks.values() if first >= last) >= self.burst
                    and latest + self.settle > now):
                end = min(latest + self.settle, last + self.settle * MAX_DELAY_FACTOR)
                if end > now:
                    for k in g:
                        self.held[k] = max(self.held.get(k, 0.0), end)
                    continue
            until = min(max((settles[k] for k, (first, _) in self.marks.items()
                             if last <= first <= last + self.settle), default=0.0),
                        last + WAIT_WINDOWS * self.settle)
            if not self.waited.issuperset(g) and until > now:
                for k in g:
                    self.held[k] = max(self.held.get(k, 0.0), until)
                    self.waited.add(k)
                continue
            taken += g
        for k in taken:
            del self.marks[k]
            self.held.pop(k, None)
            self.waited.discard(k)
            self.epoch[k] = self.epoch.get(k, 0) + 1
        return set(taken)


def test_the_debouncer_equals_its_rule_from_scratch(tmp_path):
    from hypothesis import given, settings, strategies as st
    folder = Folder.of(tmp_path)
    names = [f"n{i}.md" for i in range(6)]
    for n in names:
        (tmp_path / n).write_text("text\n")  # not empty: no long settle here
    op = st.one_of(
        st.tuples(st.just("mark"), st.lists(st.sampled_from(names), min_size=1, max_size=2,
                                            unique=True), st.floats(0, 0.5)),
        st.tuples(st.just("take"), st.just([]), st.floats(0, 4)))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(op, max_size=40))
    def run(ops):
        q, ref, now = PendingPaths(0.3, burst_marks=3), _Reference(0.3, burst=3), 10.0
        for kind, keys, dt in ops:
            now += round(dt, 3)
            if kind == "mark":
                q.mark_together([(folder, k) for k in keys], now=now)
                ref.mark(keys, now)
            else:
                assert set(q.take_settled(now=now).get(folder, set())) == ref.take(now)
            want = min((d for _, d in ref.groups()), default=None)
            got = q.next_deadline()
            assert (got is None) == (want is None) and (want is None or abs(got - want) < 1e-9)
    run()


def test_a_deletion_waits_for_the_creation_just_after_it(tmp_path):
    """A rename that arrives as a deletion and, 50 ms later, a creation (git checkout,
    rsync, rm then cp): both are taken at once, so the sync records a move."""
    folder, q = _queue(tmp_path)
    (tmp_path / "new.md").write_text("text\n")
    q.mark(folder, "old.md", now=10.0)  # gone
    q.mark(folder, "new.md", now=10.05)
    assert q.take_settled(now=10.3) == {}  # the deletion waits for the creation
    assert abs(q.next_deadline() - 10.35) < 1e-9
    assert q.take_settled(now=10.36) == {folder: {"old.md", "new.md"}}
    # a deletion with nothing after it waits for its file to stay gone (MISSING_SETTLE);
    # a creation long after ends that wait, and each is taken alone
    q.mark(folder, "old.md", now=20.0)
    assert q.take_settled(now=20.3) == {}
    assert q.take_settled(now=21.5) == {folder: {"old.md"}}
    q.mark(folder, "old.md", now=30.0)
    assert q.take_settled(now=30.3) == {}
    q.mark(folder, "new.md", now=30.5)
    assert q.take_settled(now=30.5) == {folder: {"old.md"}}
    assert q.take_settled(now=30.8) == {folder: {"new.md"}}


def test_a_creation_waits_for_the_deletion_just_after_it(tmp_path):
    """git may write a renamed file before it deletes the old one: the creation waits
    (once) for the deletion, and both are taken at once, as a move."""
    folder, q = _queue(tmp_path)
    (tmp_path / "new.md").write_text("text\n")
    q.mark(folder, "new.md", now=10.0)
    q.mark(folder, "old.md", now=10.1)  # gone
    assert q.take_settled(now=10.3) == {}
    assert abs(q.next_deadline() - 10.4) < 1e-9
    assert q.take_settled(now=10.4) == {folder: {"old.md", "new.md"}}
    # nothing marked after it within a window: no wait
    q.mark(folder, "new.md", now=20.0)
    q.mark(folder, "old.md", now=20.4)
    assert q.take_settled(now=20.3) == {folder: {"new.md"}}


def test_a_deletion_waits_for_a_burst_to_end(tmp_path):
    """git deletes a renamed note, then writes thousands of others before its new file,
    half a second later: the deletion waits for the burst to end and goes with it."""
    folder, q = _queue(tmp_path)
    q.mark(folder, "a/old.md", now=10.0)  # gone
    taken = {}
    for i in range(300):  # 2 ms apart, 0.6 s in all
        now = 10.0 + (i + 1) * 0.002
        rel = "z/new.md" if i == 299 else f"m/n{i}.md"
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("text\n")
        q.mark(folder, rel, now=now)
        for path in q.take_settled(now=now).get(folder, ()):
            taken[path] = now
    for step in range(1, 40):
        for path in q.take_settled(now=10.6 + step * 0.05).get(folder, ()):
            taken.setdefault(path, 10.6 + step * 0.05)
    assert taken["a/old.md"] == taken["z/new.md"]  # one take: the sync sees the move
    assert taken["a/old.md"] <= 10.6 + 0.3 + 0.05  # a window after the burst's end
    # a trickle is no burst: a save beside a file written every 100 ms waits a window or two
    q.mark(folder, "note.md", now=20.0)
    for i in range(1, 20):
        q.mark(folder, "m/n1.md", now=20.0 + i * 0.1)
        if "note.md" in q.take_settled(now=20.0 + i * 0.1 + 0.05).get(folder, ()):
            break
    assert i <= 7


def test_the_window_maximum_equals_its_rule_from_scratch():
    from hypothesis import given, settings, strategies as st

    from personal_memory.watch.pending import window_max
    times = st.floats(0, 5, allow_nan=False)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(times, times)), st.lists(times), st.floats(0, 1))
    def run(marks, starts, width):
        marks, starts = sorted(marks), sorted(starts)
        want = [max((d for f, d in marks if s <= f <= s + width), default=0.0)
                for s in starts]
        assert window_max(marks, starts, width) == want
    run()


def test_a_burst_of_deletions_and_creations_is_taken_in_one_pass(tmp_path):
    """A checkout that deletes 5,000 notes and writes 5,000 within one window: each
    deletion asks what came after it, in one pass (not one scan of the queue each)."""
    folder, q = _queue(tmp_path)
    for i in range(5000):
        (tmp_path / f"new{i}.md").write_text("text\n")
    for i in range(5000):
        q.mark(folder, f"old{i}.md", now=10.0 + i * 1e-5)
    for i in range(5000):
        q.mark(folder, f"new{i}.md", now=10.1 + i * 1e-5)
    scans, linked = [], q._linked
    q._linked = lambda: scans.append(1) or linked()  # each reads the whole queue
    assert q.take_settled(now=10.35) == {}  # the deletions wait for the creations
    assert len(scans) <= 2  # not one per deletion
    taken = q.take_settled(now=10.5)[folder]
    assert len(taken) == 10_000 and not q
