"""A machine's clock that ran a day fast and was then corrected. Transaction time only
moves forward, so what is written after the correction wins; a database an earlier version
left with writes stamped before the fast clock's revisions is repaired by one audited
append. The clock is faked inside this process, as faketime would (no flag in the product)."""

import json
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from personal_memory import MemoryStore, times
from personal_memory.arguments import optional_time
from personal_memory.errors import BackdatedWrite, InvalidTime, NotFound
from personal_memory.limits import CLOCK_TOLERANCE_US
from personal_memory.notes.folders import Folder
from personal_memory.timeline import writes
from support import run_memory

DAY = 86_400_000_000
NS = "notes"
PLAN = "v/plan.md"
DRAFT = "v/draft.md"


@pytest.fixture
def clock(monkeypatch):
    """Every module's ``now_micros`` runs ``offset`` microseconds ahead of the real one."""
    real = times.now_micros
    state = {"offset": 0, "real": real}
    fake = lambda: real() + state["offset"]  # noqa: E731
    for name, mod in list(sys.modules.items()):
        if name.startswith("personal_memory") and getattr(mod, "now_micros", None) is real:
            monkeypatch.setattr(mod, "now_micros", fake)
    return state


def earlier_version(monkeypatch):
    """The clock of earlier versions: revisions stamped beyond the tolerance did not count
    (new writes were stamped now, before them), and an asserted time was trusted."""
    def next_known_at(db):
        now = times.now_micros()
        last = db.max_known_at(at_most=now + CLOCK_TOLERANCE_US)
        return now if last is None or now > last else last + 1
    monkeypatch.setattr(writes, "next_known_at", next_known_at)
    monkeypatch.setattr(writes, "known_at_arg",
                        lambda db, value, field="known_at": optional_time(value, field))


def write(vault, plan: str | None, draft: str | None):
    for name, text in (("plan.md", plan), ("draft.md", draft)):
        if text is None:
            (vault / name).unlink(missing_ok=True)
        else:
            (vault / name).write_text(text)


def plan(heading, words):
    return f"# {heading}\n\n{words}\n\n# Keep\n\nkeep kiwi, see [[draft]]\n"


DRAFT_V1 = "# Draft\n\ndraft dragonfruit\n\nSee [[plan]].\n"
DRAFT_V2 = "# Draft\n\ndraft dragonfruit edited\n\nSee [[plan]].\n"


def history_then_correction(tmp_path, clock, monkeypatch=None):
    """Day 0 a sync; the clock runs a day fast: Alpha renamed Beta, the draft edited; the
    clock is corrected (with ``monkeypatch``: by an earlier version): Beta renamed Gamma,
    the draft deleted. Returns the store, the vault and the time of the first sync."""
    vault = tmp_path / "v"
    vault.mkdir()
    store = MemoryStore.open(tmp_path / "m.db", embedder="none")
    write(vault, plan("Alpha", "alpha apple"), DRAFT_V1)
    store.sync([Folder.of(vault)])
    first = times.parse_time(store.read(PLAN, namespace=NS).known_at)
    clock["offset"] = DAY
    write(vault, plan("Beta", "beta banana"), DRAFT_V2)
    store.sync([Folder.of(vault)])
    clock["offset"] = 0
    if monkeypatch is not None:
        earlier_version(monkeypatch)
    write(vault, plan("Gamma", "gamma grape"), None)
    store.sync([Folder.of(vault)])
    return store, vault, first


def found(store, word, at):
    return sorted(r.memory_id for r in store.search(word, namespace=NS, as_of=at, limit=20))


def sections(store, note, at):
    view = store.read(note, namespace=NS, as_of=at)
    return None if view.deleted else sorted(s.memory_id for s in view.sections)


def assert_agree(store, at, words=("alpha", "beta", "gamma", "dragonfruit", "kiwi")):
    """At cutoff ``at``: search, read, get, history and links tell one story."""
    visible = {}
    for note in (PLAN, DRAFT):
        try:
            view = store.read(note, namespace=NS, as_of=at)
        except NotFound:  # not written yet
            visible[note] = set()
            continue
        visible[note] = set() if view.deleted else {s.memory_id for s in view.sections}
    for word in words:
        for mid in found(store, word, at):
            note = mid.split("#")[0]
            assert mid in visible[note], f"search finds {mid} at {at}; read does not have it"
            history = store.history(mid, namespace=NS, as_of=at)
            assert history and not history[-1].deleted
            assert store.get(mid, namespace=NS, as_of=at) is not None
    for note, mids in visible.items():
        for mid in mids:
            assert store.get(mid, namespace=NS, as_of=at) is not None, mid
    # A link resolves to a note that read shows, and backlinks come from shown notes.
    if visible[PLAN]:
        links = store.links(PLAN, namespace=NS, as_of=at)
        for link in links.outgoing:
            if link.note == DRAFT:
                assert visible[DRAFT]
            elif link.target == "draft":
                assert link.kind == "dangling" and not visible[DRAFT]
        assert all(b.source_note != DRAFT or visible[DRAFT] for b in links.backlinks)
    return visible


def test_an_earlier_version_left_ghosts_that_one_repair_removes(tmp_path, clock, monkeypatch):
    store, vault, first = history_then_correction(tmp_path, clock, monkeypatch)
    later = times.format_time(clock["real"]() + 2 * DAY)  # once the fast clock's time came
    # What a user saw then: the rename refused, search and read disagreeing.
    assert found(store, "gamma", later) == []
    assert found(store, "dragonfruit", later) == [f"{DRAFT}#Draft"]
    assert store.read(DRAFT, namespace=NS, as_of=later).deleted
    before = times.format_time(first - 1)  # the draft is added, then deleted: "revised"
    kinds = {c.note: c.change for c in store.changes(namespace=NS, since=before,
                                                      until=later).notes}
    assert kinds[DRAFT] == "revised"
    since = times.format_time(first)
    monkeypatch.undo()  # this version from here on (the clock is real again too)
    status = store.status()
    assert status.clock.memories_to_repair >= 1 and DRAFT in status.clock.notes_to_repair
    assert status.clock.behind_seconds > DAY / 1e6 - 60

    repair = store.repair_clock()
    assert repair.repair_id == 1 and repair.revision_ids and DRAFT in repair.notes
    assert repair.stamp == repair.newest_before  # appended at stored stamps, none later
    assert store.status().clock.memories_to_repair == 0
    assert store.repair_clock().repair_id is None  # nothing left to do, nothing appended
    # Every stored stamp, and just before and after each: one story. Each write counts
    # from the newest stamp written up to it, as this version's clock would have stamped
    # it: the fast clock's edit and the deletion after it count from the fast stamp, so
    # until then the draft is its first version.
    stamps = sorted({times.parse_time(r.known_at) for r in store.export()})
    for t in sorted({s + d for s in stamps for d in (-1, 0, 1)}):
        assert_agree(store, times.format_time(t))
    real_now = times.format_time(times.now_micros())
    assert store.read(DRAFT, namespace=NS, as_of=real_now).text.strip() == DRAFT_V1.strip()
    assert found(store, "dragonfruit", real_now) == [f"{DRAFT}#Draft"]
    visible = assert_agree(store, later)
    assert visible[DRAFT] == set() and found(store, "dragonfruit", later) == []
    kinds = {c.note: c.change for c in store.changes(namespace=NS, since=since,
                                                      until=later).notes}
    assert kinds[DRAFT] == "deleted"
    # The refused rename is in the folder still: the next sync records it, after the repair.
    store.sync([Folder.of(vault)])
    visible = assert_agree(store, None)
    assert visible == {PLAN: {f"{PLAN}#Gamma", f"{PLAN}#Keep"}, DRAFT: set()}
    report = store.sync([Folder.of(vault)], full=True)
    assert (report.chunks_added, report.chunks_changed, report.chunks_tombstoned) == (0, 0, 0)
    assert assert_agree(store, None) == visible
    # Answers before the first write of the fast clock are as they were.
    assert found(store, "dragonfruit", times.format_time(first)) == [f"{DRAFT}#Draft"]
    assert sorted(store.read(PLAN, namespace=NS, as_of=times.format_time(first)).text.split()) \
        == sorted(plan("Alpha", "alpha apple").split())
    store.close()


def test_writes_after_the_correction_win_at_every_later_cutoff(tmp_path, clock):
    store, vault, first = history_then_correction(tmp_path, clock)
    fast = store.status().clock
    assert fast.behind_seconds > DAY / 1e6 - 60 and fast.memories_to_repair == 0
    real_now = clock["real"]()
    for at in (real_now, real_now + DAY + 60_000_000, real_now + 2 * DAY, None):
        cutoff = times.format_time(at)
        if at is None or at > times.parse_time(fast.newest_known_at):
            visible = assert_agree(store, cutoff)
            assert visible == {PLAN: {f"{PLAN}#Gamma", f"{PLAN}#Keep"}, DRAFT: set()}
        else:
            assert_agree(store, cutoff)
    # Default reads see the writes made after the correction: "now" is the newest stamp,
    # typed or not ("now", and a span back such as 7d, count from the newest stamp)
    assert found(store, "grape", None) == found(store, "grape", "now") == [f"{PLAN}#Gamma"]
    assert sections(store, PLAN, "now") == sections(store, PLAN, None)
    history = [r.revision_id for r in store.history(f"{PLAN}#Gamma", namespace=NS)]
    assert [r.revision_id for r in store.history(f"{PLAN}#Gamma", namespace=NS,
                                                 as_of="now")] == history != []
    assert found(store, "dragonfruit", None) == []
    kinds = {c.note: c.change for c in store.changes(
        namespace=NS, since=times.format_time(first)).notes}
    assert kinds == {PLAN: "revised", DRAFT: "deleted"}
    # A further rename and a revived draft are honoured too; a full sync changes nothing.
    write(vault, plan("Delta", "delta date"), DRAFT_V1)
    store.sync([Folder.of(vault)])
    assert sections(store, PLAN, None) == [f"{PLAN}#Delta", f"{PLAN}#Keep"]
    assert found(store, "dragonfruit", None) == [f"{DRAFT}#Draft"]
    report = store.sync([Folder.of(vault)], full=True)
    assert (report.chunks_added, report.chunks_changed, report.chunks_tombstoned) == (0, 0, 0)
    assert_agree(store, None, words=("delta", "gamma", "dragonfruit", "kiwi"))
    store.close()


def test_purging_a_fast_clock_text_never_hides_the_current_one(tmp_path, clock, monkeypatch):
    vault = tmp_path / "v"
    vault.mkdir()
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        clock["offset"] = DAY
        write(vault, plan("Pin", "old pin quetzal"), None)
        store.sync([Folder.of(vault)])
        clock["offset"] = 0
        earlier_version(monkeypatch)
        write(vault, plan("Pin", "new pin walrus"), None)
        store.sync([Folder.of(vault)])
        monkeypatch.undo()
        store.purge(namespace=NS, matching="quetzal")
        assert found(store, "walrus", None) == []  # the stub, stamped later, hid it
        assert "walrus" not in store.read(PLAN, namespace=NS).text
        store.repair_clock()
        assert found(store, "walrus", None) == [f"{PLAN}#Pin"]
        assert "walrus" in store.read(PLAN, namespace=NS).text
        # This version: the edit after a fast clock is stamped after it; purge keeps it.
        clock["offset"] = 2 * DAY
        write(vault, plan("Pin", "older pin narwhal"), None)
        store.sync([Folder.of(vault)])
        clock["offset"] = 0
        write(vault, plan("Pin", "newest pin okapi"), None)
        store.sync([Folder.of(vault)])
        store.purge(namespace=NS, matching="narwhal")
        assert found(store, "okapi", None) == [f"{PLAN}#Pin"]
        assert "okapi" in store.read(PLAN, namespace=NS).text
        assert store.status().clock.memories_to_repair == 0


def test_an_asserted_known_at_keeps_transaction_time_forward(tmp_path):
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.remember("a", "first", namespace="n", known_at="2025-01-01")
        store.remember("b", "same instant", namespace="n", known_at="2025-01-01")
        with pytest.raises(BackdatedWrite, match="before the newest revision"):
            store.remember("c", "earlier", namespace="n", known_at="2024-12-31")
        with pytest.raises(BackdatedWrite):
            store.forget("a", namespace="n", known_at="2024-06-01")
        with pytest.raises(InvalidTime, match="in the future"):
            store.remember("c", "later", namespace="n", known_at="2999-01-01")
        later = store.remember("a", "second", namespace="n")
        assert later.current and later.known_at > "2025-01-02"
        # A fact true earlier is recorded now, with its valid time.
        back = store.remember("c", "true since 2024", namespace="n", valid_from="2024-01-01")
        assert back.known_at >= later.known_at and back.valid_from.startswith("2024-01-01")
        assert store.stats().counts.revisions == 4


def test_doctor_status_and_the_repair_command_through_real_processes(tmp_path, clock,
                                                                     monkeypatch):
    store, vault, _ = history_then_correction(tmp_path, clock, monkeypatch)
    store.close()
    db = tmp_path / "m.db"
    p = run_memory("--db", db, "doctor")
    assert p.returncode == 1 and "repair-clock" in p.stdout and DRAFT in p.stdout
    p = run_memory("--db", db, "status")
    assert p.returncode == 0 and "behind the newest revision" in p.stdout
    assert "repair-clock" in p.stdout
    p = run_memory("--db", db, "status", "--json")
    clock_json = json.loads(p.stdout)["clock"]
    assert clock_json["memories_to_repair"] >= 1 and clock_json["behind_seconds"] > 80_000
    p = run_memory("--db", db, "repair-clock")
    assert p.returncode == 0 and "Clock repair #1 by " in p.stdout and DRAFT in p.stdout
    p = run_memory("--db", db, "repair-clock")
    assert p.returncode == 0 and p.stdout.startswith("Nothing to repair")
    p = run_memory("--db", db, "doctor")
    clock_line = next(line for line in p.stdout.splitlines() if "clock" in line)
    assert clock_line.startswith("[warn]") and "behind the newest revision" in clock_line
    ahead = [r for r in store_revisions(db)  # (id, known_at)
             if r[1] > times.now_micros() + CLOCK_TOLERANCE_US]
    first = min(ahead, key=lambda r: (r[1], r[0]))  # the cause, named
    assert f"; the first stamped ahead of it: #{first[0]} " in clock_line, clock_line
    p = run_memory("--db", db, "sync", vault, "--known-at", "2025-01-01")
    assert p.returncode == 2 and "before the newest revision" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def store_revisions(db):
    import apsw
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute("SELECT id, known_at FROM revisions"))
    finally:
        conn.close()


HEADINGS = ["Plan", "Risks", "Links"]
WORDS = ["apple", "banana", "cherry", "delta", "echo", "fig"]
step = st.tuples(
    st.sampled_from([0, 0, 1, 2]),                              # the clock: days fast
    st.integers(0, 2),                                          # which note
    st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(HEADINGS),
                                            st.lists(st.sampled_from(WORDS), min_size=1,
                                                     max_size=4).map(" ".join)),
                                  min_size=1, max_size=3)),    # None: deleted
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=8), word=st.sampled_from(WORDS),
       repair_first=st.integers(0, 8))
# A deletion the earlier version silently dropped (only a full sync can see it), and a
# note whose sections came from two clocks.
@example(steps=[(0, 0, [("Plan", "apple")]), (0, 0, None), (1, 0, [("Plan", "apple")]),
                (0, 0, None)], word="apple", repair_first=8)
@example(steps=[(1, 0, [("Plan", "apple")]), (0, 0, [("Plan", "apple"), ("Plan", "apple")]),
                (1, 0, None)], word="apple", repair_first=8)
@example(steps=[(1, 0, [("Plan", "apple")]), (0, 0, [("Plan", "apple apple")])], word="apple",
         repair_first=8)
# A note deleted and its text written under another name: changes calls it moved.
@example(steps=[(1, 1, [("Plan", "apple")]), (0, 1, None), (0, 0, [("Plan", "apple")])],
         word="apple", repair_first=0)
def test_after_a_repair_every_reader_agrees_and_matches_the_folder(steps, word, repair_first):
    """Random edits through a clock that runs ahead and back, written as an earlier version
    did; after the repair and a full sync, at every cutoff: read, get, history and search
    agree, the fast path equals the reference, and each note is its file."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        vault = Path(tmp) / "v"
        vault.mkdir()
        (vault / "anchor.md").write_text("anchor\n")  # the folder never looks emptied
        real = times.now_micros
        offset = {"days": 0}
        fake = lambda: real() + offset["days"] * DAY  # noqa: E731
        for name, mod in list(sys.modules.items()):
            if name.startswith("personal_memory") and getattr(mod, "now_micros", None) is real:
                mp.setattr(mod, "now_micros", fake)
        earlier_version(mp)
        with MemoryStore.open(Path(tmp) / "m.db", embedder="none") as store:
            for i, (days, which, body) in enumerate(steps):
                if i == repair_first:  # a repair, then more writes by the earlier version
                    store.repair_clock()
                offset["days"] = days
                path = vault / f"n{which}.md"
                if body is None:
                    path.unlink(missing_ok=True)
                else:
                    path.write_text("".join(f"## {h}\n\n{w}\n\n" for h, w in body))
                store.sync([Folder.of(vault)], allow_mass_delete=True)
            mp.undo()
            repair = store.repair_clock()
            assert store.status().clock.memories_to_repair == 0
            store.sync([Folder.of(vault)], full=True, allow_mass_delete=True)
            assert store.status().clock.memories_to_repair == 0
            # At every stored stamp, and just before and after each, every reader agrees
            # and the fast path equals the reference.
            stamps = sorted({times.parse_time(r.known_at) for r in store.export()})
            cutoffs = sorted({s + d for s in stamps for d in (-1, 0, 1)})
            previous = None
            for at in [times.format_time(t) for t in cutoffs] + [None]:
                shown, exists = {}, {}
                for which in range(3):
                    note = f"v/n{which}.md"
                    try:
                        view = store.read(note, namespace=NS, as_of=at)
                    except NotFound:
                        continue
                    exists[note] = not view.deleted
                    shown[note] = set() if view.deleted else {s.memory_id
                                                              for s in view.sections}
                    for mid in shown[note]:
                        assert store.get(mid, namespace=NS, as_of=at) is not None
                kw = dict(namespace=NS, as_of=at, limit=50)
                fast, ref = store.search(word, **kw), store.search_reference(word, **kw)
                assert [r.revision_id for r in fast] == [r.revision_id for r in ref]
                for r in fast:
                    note = r.memory_id.split("#")[0]
                    if note != "v/anchor.md":
                        assert r.memory_id in shown.get(note, set()), (at, r.memory_id)
                        history = store.history(r.memory_id, namespace=NS, as_of=at)
                        assert history and not history[-1].deleted
                # What changes says happened since the previous cutoff is what read shows.
                if previous is not None and at is not None:
                    before, since = previous
                    for c in store.changes(namespace=NS, since=since, until=at).notes:
                        if c.note == "v/anchor.md":
                            continue
                        was, now = before.get(c.note, False), exists.get(c.note, False)
                        if c.change == "moved":  # read follows a note to its earlier path
                            assert was and now and before.get(c.moved_from), (at, c)
                            continue
                        expected = {(False, True): "added", (True, False): "deleted"}.get(
                            (was, now), "revised")
                        assert c.change == expected, (at, c)
                previous = (exists, at)
            for which in range(3):
                path, note = vault / f"n{which}.md", f"v/n{which}.md"
                if path.exists():
                    assert store.read(note, namespace=NS).text.strip() == \
                        path.read_text().strip()
                elif shown.get(note):
                    raise AssertionError(f"{note} is deleted but read shows {shown[note]}")


def test_memory_status_tells_an_assistant_about_the_clock(tmp_path, clock, monkeypatch):
    from test_mcp_server import build_server, call, config
    store, _, _ = history_then_correction(tmp_path, clock, monkeypatch)
    store.close()
    monkeypatch.undo()
    status = call(build_server(config(db=str(tmp_path / "m.db"))), "memory_status")
    c = status.structured_content["status"]["clock"]
    assert c["behind_seconds"] > DAY / 1e6 - 60 and c["memories_to_repair"] >= 1
    assert DRAFT in c["notes_to_repair"] and c["last_repair"] is None


def test_doctor_names_the_newest_revision_ahead_of_the_clock(tmp_path, monkeypatch):
    """Revisions stamped by a clock that ran ahead, the first at a whole second: the
    doctor's warning names the first stamped ahead, the cause (those after it were stamped
    after it), not one the text order of times picked (a whole second sorted after its
    microseconds)."""
    ahead = {"at": times.parse_time("2030-12-31T23:59:00Z")}
    real = times.now_micros
    fake = lambda: ahead["at"] or real()  # noqa: E731
    for name, mod in list(sys.modules.items()):
        if name.startswith("personal_memory") and getattr(mod, "now_micros", None) is real:
            monkeypatch.setattr(mod, "now_micros", fake)
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        first = store.remember("clk", "a", namespace="n")  # 2030-12-31T23:59:00Z
        ahead["at"] = None  # the clock set right: the next two are stamped after it
        store.remember("clk", "b", namespace="n")
        store.remember("clk", "c", namespace="n")
    p = run_memory("--db", db, "doctor")
    clock_line = next(line for line in p.stdout.splitlines() if "clock" in line)
    assert "(2030-12-31T23:59:00.000002Z; the first stamped ahead of it: " \
        f"#{first.revision_id} n/clk)" in clock_line, clock_line
