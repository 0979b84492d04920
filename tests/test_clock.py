"""Time is validated once, for every writer: no future known_at, a store that holds one
does not freeze later imports, and backdating is explicit. Through real processes."""

import json

import apsw
import pytest

from personal_memory import MemoryStore
from support import run_memory, word_hits


def ok(*args, **kw):
    p = run_memory(*args, **kw)
    assert p.returncode == 0, p.stderr
    return p


def test_a_future_known_at_is_refused_on_every_path(tmp_path):
    db = tmp_path / "m.db"
    ok("--db", db, "init")
    for when in ("2999-01-01", "9999-12-31T23:59:59.999999Z"):
        p = run_memory("--db", db, "remember", "future", "x", "-n", "personal",
                       "--known-at", when)
        assert p.returncode == 2 and "in the future" in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("apple\n")
    p = run_memory("--db", db, "sync", vault, "--known-at", "2999-01-01")
    assert p.returncode == 2 and "in the future" in p.stderr
    ok("--db", db, "remember", "later", "fine", "-n", "personal")  # nothing was broken
    with MemoryStore.open(db, embedder="none") as s:
        assert s.stats().counts.revisions == 1


def test_a_stored_future_revision_keeps_transaction_time_forward_and_is_reported(tmp_path):
    db = tmp_path / "m.db"
    ok("--db", db, "remember", "seed", "seed text", "-n", "personal")
    # What an older version let through: a revision known in 2030.
    conn = apsw.Connection(str(db))
    conn.execute("INSERT INTO revisions (namespace, memory_id, known_at, valid_from, "
                 "content, content_hash) VALUES ('personal', 'future', 1893456000000000, "
                 "1893456000000000, 'from the future', 'x')")
    conn.close()
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "note.md").write_text("# Note\n\nfresh kiwi\n")
    ok("--db", db, "sync", vault)
    out = json.loads(ok("--db", db, "search", "kiwi", "--json").stdout)["results"]
    assert [r["memory_id"] for r in out] == ["v/note.md#Note"]  # "now" is the newest stamp
    assert out[0]["known_at"] > "2030"  # stamped after the future revision
    recent = json.loads(ok("--db", db, "changes", "--since", "24h", "--json").stdout)
    assert recent["counts"]["notes"] == 1
    p = run_memory("--db", db, "doctor")
    line = next(x for x in p.stdout.splitlines() if "clock" in x)
    assert line.startswith("[warn]") and "behind the newest" in line
    assert "the first stamped ahead of it: #2 personal/future" in line, line
    status = json.loads(ok("--db", db, "status", "--json").stdout)["clock"]
    assert status["behind_seconds"] > 3 * 365 * 86400 / 2
    assert status["newest_known_at"] > "2030" and status["memories_to_repair"] == 0


def test_a_backdated_sync_or_write_is_refused_and_changes_nothing(tmp_path):
    db = tmp_path / "m.db"
    n = tmp_path / "n"
    n.mkdir()
    for i in range(4):
        (n / f"n{i}.md").write_text(f"note{i} text\n")
    ok("--db", db, "sync", n)
    ok("--db", db, "remember", "r0", "kept", "-n", "p")
    (n / "n1.md").unlink()
    (n / "n2.md").write_text("new lime\n")
    for command in (("sync", n), ("remember", "r", "x", "-n", "p"),
                    ("forget", "r0", "-n", "p")):
        p = run_memory("--db", db, *command, "--known-at", "2025-01-02")
        assert p.returncode == 2 and "before the newest revision" in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert word_hits(ok("--db", db, "search", "note1", "--json").stdout)  # nothing changed
    assert word_hits(ok("--db", db, "search", "lime", "--json").stdout) == []
    p = ok("--db", db, "sync", n)  # a sync at now records both
    assert "1 removed" in p.stdout
    assert word_hits(ok("--db", db, "search", "note1", "--json").stdout) == []
    assert word_hits(ok("--db", db, "search", "lime", "--json").stdout)


def test_a_clock_far_in_the_future_writes_nothing_and_the_daemon_waits(tmp_path, monkeypatch,
                                                                       caplog):
    """A machine clock in 2200 (a wrong one): a write stamped then would put every later
    write after it, for good. Nothing is written; the daemon waits and retries."""
    import logging

    from personal_memory import times
    from personal_memory.errors import ClockImplausible
    from personal_memory.notes.folders import Folder
    from personal_memory.watch.daemon import Watcher
    from support import wait_for
    from test_watcher_seam import FakeObserver, running

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nan apple\n")
    real = times.now_micros
    wrong = [True]
    monkeypatch.setattr(times, "now_micros", lambda: 7_258_118_400 * 10**6 if wrong[0]
                        else real())  # 2200-01-01
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        for write in (lambda: store.remember("x", "a fact", namespace="n"),
                      lambda: store.remember("x", "a fact", namespace="n",
                                             known_at="2026-01-01"),
                      lambda: store.sync([Folder.of(vault)])):
            try:
                write()
                raise AssertionError("written with a clock in 2200")
            except ClockImplausible as exc:
                assert "2200-01-01" in str(exc) and "nothing was written" in str(exc)
        assert store.stats().counts.revisions == 0
        assert store.status().daemon.last_sync_started_at is None  # not even the run's row
        watcher = Watcher(store, [Folder.of(vault)], settle_ms=50, rescan_interval=0,
                          observer_factory=FakeObserver)
        # the watcher's store is its thread's (docs/api.md): this one reads beside it
        with caplog.at_level(logging.WARNING, logger="personal_memory.watch"), \
                running(watcher), MemoryStore.open(tmp_path / "m.db", embedder="none",
                                                   read_only=True) as reader:
            wait_for(lambda: "waiting for the system clock" in caplog.text,
                     what="the daemon to wait for the clock")
            # status says what it waits for, not "watching"
            wait_for(lambda: reader.status().daemon.daemon_state
                     == "waiting for the system clock to be set right", what="the state")
            wrong[0] = False  # set right: the retry imports
            wait_for(lambda: reader.search("apple", namespace="notes"), timeout=30,
                     what="the retry")
            wait_for(lambda: reader.status().daemon.daemon_state == "watching",
                     what="the state after the retry")
        assert all(r.known_at.startswith(("2026", "2027", "2028", "2029", "203"))
                   for r in store.export(namespace="notes"))
    doctor = run_memory("--db", tmp_path / "m.db", "doctor")
    assert "[fail] clock" not in doctor.stdout


def test_a_clock_decades_past_the_newest_revision_writes_nothing_until_confirmed(
        tmp_path, monkeypatch):
    """A clock set to 2099 (inside the plausible range) after revisions of 2026: a write
    stamped then would hide every later one until 2099. Nothing is written, with a
    message that says how to confirm a clock that is right; one explicit known_at does."""
    from personal_memory import times
    from personal_memory.errors import ClockImplausible
    from personal_memory.notes.folders import Folder

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nan apple\n")
    real = times.now_micros
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2026-01-01")
        monkeypatch.setattr(times, "now_micros", lambda: 4_070_908_800 * 10**6)  # 2099
        for write in (lambda: store.remember("x", "a later fact", namespace="n"),
                      lambda: store.sync([Folder.of(vault)])):
            with pytest.raises(ClockImplausible, match=r"2099-01-01.* 73 years after the "
                               r"newest revision .*nothing was written.*--known-at 2099"):
                write()
        assert store.stats().counts.revisions == 2  # the note's record and its section
        # a sync with nothing to write records no run at that time either
        assert not store.status().daemon.last_sync_started_at.startswith("2099")
        # a clock that is right (a store left alone for years) is confirmed once
        store.remember("x", "a later fact", namespace="n", known_at="2099-01-01")
        assert store.remember("x", "later still", namespace="n").known_at.startswith("2099")
    # nine years on is no leap: a store left alone that long writes as usual; nor is a
    # backtest's history written with known_at (no folder synced), however old
    monkeypatch.setattr(times, "now_micros", real)
    with MemoryStore.open(tmp_path / "n.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2026-01-01")
        monkeypatch.setattr(times, "now_micros", lambda: 2_051_222_400 * 10**6)  # 2035
        assert store.remember("x", "nine years on", namespace="n").known_at.startswith("2035")
    monkeypatch.setattr(times, "now_micros", real)
    with MemoryStore.open(tmp_path / "b.db", embedder="none") as store:
        store.remember("x", "old news", namespace="n", known_at="2010-03-01")
        assert store.remember("x", "live", namespace="n").known_at.startswith("20")


def test_a_clock_never_set_writes_nothing(tmp_path, monkeypatch):
    """A board without a battery-backed clock boots in 1970: a revision stamped then would
    be visible to every search at a cutoff before it was written."""
    from personal_memory import times
    from personal_memory.errors import ClockImplausible

    monkeypatch.setattr(times, "now_micros", lambda: 31_536_000 * 10**6)  # 1971-01-01
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        try:
            store.remember("x", "a fact", namespace="n")
            raise AssertionError("written with a clock in 1971")
        except ClockImplausible as exc:
            assert "1971-01-01" in str(exc) and "nothing was written" in str(exc)
        assert store.stats().counts.revisions == 0


def test_stamps_after_the_newest_cannot_step_past_the_plausible_range(tmp_path, monkeypatch):
    """The clock just before 2100 is accepted, but the microsecond steps after the newest
    revision must not carry the store past 2100 either."""
    from personal_memory import times
    from personal_memory.errors import ClockImplausible
    from personal_memory.limits import CLOCK_PLAUSIBLE_UNTIL_US

    monkeypatch.setattr(times, "now_micros", lambda: CLOCK_PLAUSIBLE_UNTIL_US - 1)
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        for i in range(2):
            store.remember(f"m{i}", f"fact {i}", namespace="n")
        try:
            store.remember("m2", "fact 2", namespace="n")
            raise AssertionError("stamped after 2100")
        except ClockImplausible as exc:
            assert "2100-01-01T00:00:00.000001Z" in str(exc)
        assert store.stats().counts.revisions == 2
        assert max(r.known_at for r in store.export(namespace="n")) \
            == "2100-01-01T00:00:00Z"
