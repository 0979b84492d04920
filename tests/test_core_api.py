"""The public API's less visible parts: batches, warm-up, a shared search index across
threads, cancelled syncs, status, and SQLite's errors turned into named ones."""

import os
import threading

import apsw
import pytest

from personal_memory import MemoryStore
from personal_memory.errors import (DatabaseBusy, DiskFull, InvalidArgument, NotFound,
                                    ReadOnlyError)
from personal_memory.notes.folders import Folder
from support import ids, keyword_ids, vault_of

NS = "notes"


def test_batch_is_all_or_nothing(store):
    with store.batch():
        store.remember("a", "apple", namespace=NS, known_at="2025-01-01")
        store.remember("b", "banana", namespace=NS, known_at="2025-01-02")
    assert store.stats().counts.revisions == 2
    with pytest.raises(InvalidArgument):
        with store.batch():
            store.remember("c", "cherry", namespace=NS, known_at="2025-01-03")
            store.remember("d", "", namespace=NS)  # invalid: the whole batch is undone
    assert store.stats().counts.revisions == 2 and store.get("c", namespace=NS) is None


def test_a_search_inside_a_batch_that_rolls_back_leaves_no_trace(store):
    """A search in a batch sees the batch's writes; the index then held rows the rollback
    took back (a KeyError, then another memory under a reused revision id)."""
    store.remember("a", "alpha one", namespace=NS, known_at="2024-01-01")
    assert keyword_ids(store, "alpha") == ["a"]
    with pytest.raises(RuntimeError):
        with store.batch():
            store.remember("b", "beta secret", namespace=NS, known_at="2024-01-02")
            assert [r.memory_id for r in store.search("beta", namespace=NS)] == ["b"]
            raise RuntimeError("abort")
    assert store.search("beta", namespace=NS) == []
    store.remember("c", "gamma public", namespace=NS, known_at="2024-01-03")
    for query in ("beta", "gamma", "alpha"):
        assert [r.memory_id for r in store.search(query, namespace=NS)] == \
            [r.memory_id for r in store.search_reference(query, namespace=NS)]
    assert keyword_ids(store, "gamma") == ["c"]


def test_a_failed_part_of_a_batch_is_undone_whole_and_the_rest_kept(store):
    """A batch inside a batch (or a write that fails inside one) is a savepoint: caught,
    its writes are undone; the outer batch's other writes commit."""
    with store.batch():
        store.remember("e", "epsilon", namespace=NS, known_at="2024-01-05")
        with pytest.raises(ValueError):
            with store.batch():
                store.remember("f", "phi", namespace=NS, known_at="2024-01-06")
                raise ValueError("abort the inner part")
        store.remember("g", "gamma", namespace=NS, known_at="2024-01-07")
    assert store.get("f", namespace=NS) is None
    assert store.get("e", namespace=NS) and store.get("g", namespace=NS)


def test_a_fact_announced_for_later_can_be_retracted_before_it_holds(store):
    """Known in January to hold from March, retracted in February: forget hides it over
    its span (by default from its known_at on) wherever it would be visible then; the
    refusal is for a span where it never is."""
    from personal_memory.errors import AlreadyHidden
    store.remember("acme/div", "Acme pays a special dividend", namespace=NS,
                   known_at="2024-01-10", valid_from="2024-03-01")
    assert store.forget("acme/div", namespace=NS, known_at="2024-02-01").created
    assert store.search("dividend", namespace=NS, valid_at="2024-04-01") == []
    before = store.search("dividend", namespace=NS, as_of="2024-01-20", valid_at="2024-04-01")
    assert [r.memory_id for r in before] == ["acme/div"]  # what was known then stands
    store.remember("b", "bounded thing", namespace=NS, known_at="2024-02-02",
                   valid_from="2024-06-06")
    store.forget("b", namespace=NS, known_at="2024-02-03", valid_from="2024-05-30",
                 valid_to="2024-06-20")
    assert store.search("bounded", namespace=NS, valid_at="2024-06-10") == []
    assert [r.memory_id for r in store.search("bounded", namespace=NS,
                                              valid_at="2024-06-25")] == ["b"]
    with pytest.raises(AlreadyHidden, match="not visible at any time from 2024-01-01"):
        store.forget("b", namespace=NS, known_at="2024-02-04", valid_from="2024-01-01",
                     valid_to="2024-02-01")


def test_a_closed_store_says_so(db_path):
    from personal_memory.errors import StoreClosed
    s = MemoryStore.open(db_path, embedder="none")
    s.remember("a", "apple", namespace=NS, known_at="2025-01-01")
    s.close()
    for use in (lambda: s.search("apple", namespace=NS), lambda: s.get("a", namespace=NS),
                lambda: s.remember("b", "banana", namespace=NS)):
        with pytest.raises(StoreClosed, match="is closed; open it again"):
            use()


def test_warm_builds_the_index_that_search_then_uses(store, db_path):
    for i in range(30):
        store.remember(f"m{i}", f"common word{i}", namespace=NS, known_at="2025-01-01")
    with MemoryStore.open(db_path, read_only=True) as reader:
        reader.warm()
        store.remember("late", "common latecomer", namespace=NS, known_at="2025-02-01")
        # Appended after the warm-up: the warmed index reads it on the next search.
        assert "late" in ids(reader.search("latecomer", namespace=NS))
        assert ids(reader.search("common", namespace=NS, limit=100)) == ids(
            reader.search_reference("common", namespace=NS, limit=100))


def test_one_search_index_shared_by_threads(store, db_path):
    for i in range(200):
        store.remember(f"m{i:03d}", f"shared text {i % 7} item{i}", namespace=NS,
                       known_at="2025-01-01")
    first = MemoryStore.open(db_path, read_only=True)
    expected = ids(first.search_reference("shared text 3", namespace=NS, limit=20))
    results, errors = [], []

    def work():
        try:
            with MemoryStore.open(db_path, read_only=True) as mine:
                mine.share_search_index(first)
                for _ in range(5):
                    results.append(ids(mine.search("shared text 3", namespace=NS, limit=20)))
        except Exception as exc:  # reported below; a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    first.close()
    assert errors == [] and len(results) == 30
    assert all(r == expected for r in results)


def test_a_cancelled_sync_stops_between_batches_and_resumes(store, tmp_path):
    root = tmp_path / "v"
    root.mkdir()
    for i in range(1500):
        (root / f"n{i:04d}.md").write_text(f"note number{i}\n")
    done = []  # a stop asked once the first batch is written, before the second
    report = store.sync([Folder.of(root)], progress=lambda d, t: done.append(d),
                        cancel=lambda: bool(done))
    assert report.files_imported == 1000 and report.transactions == 1
    assert store.status().daemon.files_indexed == 1000
    rest = store.sync([Folder.of(root)])
    assert rest.files_imported == 500 and store.status().daemon.files_indexed == 1500


def test_status_names_the_files_the_last_sync_skipped(store, tmp_path):
    root = tmp_path / "v"
    root.mkdir()
    (root / "good.md").write_text("fine\n")
    (root / "bad.md").write_bytes(b"caf\xe9 not utf-8")  # Latin-1
    store.sync([Folder.of(root)])
    status = store.status(NS)
    assert status.daemon.files_indexed == 1
    assert [e.path for e in status.daemon.last_sync_errors] == ["bad.md"]
    assert "UTF-8" in status.daemon.last_sync_errors[0].reason
    assert keyword_ids(store, "fine") == ["v/good.md"]


def test_a_store_built_from_a_path_points_to_open(db_path):
    with pytest.raises(TypeError, match=r"MemoryStore\.open\(path\)"):
        MemoryStore(db_path)
    with pytest.raises(TypeError, match="open a store by its path"):
        MemoryStore(str(db_path))
    assert not os.path.exists(db_path)  # nothing created


def test_busy_database_is_a_named_error(db_path):
    with MemoryStore.open(db_path) as s:
        s.remember("a", "alpha", namespace=NS)
    blocker = apsw.Connection(db_path)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with MemoryStore.open(db_path) as s:
            s._db.conn.set_busy_timeout(50)  # noqa: SLF001 - a test may shorten the wait
            with pytest.raises(DatabaseBusy, match="busy"):
                s.remember("b", "beta", namespace=NS)
            assert s.get("b", namespace=NS) is None
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_full_disk_is_a_named_error_and_writes_nothing(db_path):
    with MemoryStore.open(db_path) as s:
        s.remember("a", "alpha", namespace=NS)
        pages = s._db.scalar("PRAGMA page_count")  # noqa: SLF001
        s._db.execute(f"PRAGMA max_page_count={pages}")  # noqa: SLF001 - a full disk
        with pytest.raises(DiskFull, match="disk full"):
            with s.batch():
                for i in range(200):
                    s.remember(f"big{i}", "word " * 2000, namespace=NS)
        assert s.stats().counts.revisions == 1 and s.get("a", namespace=NS) is not None
        s.remember("small", "still works", namespace=NS)  # no dangling transaction


def test_read_only_store_refuses_writes_with_a_named_error(store, db_path):
    store.remember("a", "alpha", namespace=NS)
    with MemoryStore.open(db_path, read_only=True) as ro:
        with pytest.raises(ReadOnlyError):
            ro.forget("a", namespace=NS)


def test_backup_and_export_never_overwrite_and_are_private(store, tmp_path):
    store.remember("a", "alpha", namespace=NS)
    dest = tmp_path / "copy.db"
    store.backup(str(dest))
    assert oct(os.stat(dest).st_mode & 0o777) == "0o600"
    with pytest.raises(InvalidArgument, match="never overwrites"):
        store.backup(str(dest))
    with MemoryStore.open(dest, read_only=True) as copy:
        assert ids(copy.search("alpha", namespace=NS)) == ["a"]
    out = tmp_path / "export.json"
    old = os.umask(0o022)  # as most users have it: the export is private all the same
    try:
        assert store.export_to(str(out)) == 1
    finally:
        os.umask(old)
    assert oct(os.stat(out).st_mode & 0o777) == "0o600"
    with pytest.raises(InvalidArgument, match="never overwrites"):
        store.export_to(str(out))
    with pytest.raises(NotFound, match="cannot write"):
        store.export_to(str(tmp_path / "no" / "dir" / "x.json"))


def test_search_reports_the_cutoff_it_resolved(store):
    store.remember("a", "alpha", namespace=NS, known_at="2025-01-01")
    results = store.search("alpha", namespace=NS, as_of="2025-02-01T01:00:00+01:00")
    assert results.as_of == "2025-02-01T00:00:00Z" and results.valid_at == results.as_of
    everything = store.search("alpha", namespace=NS)
    assert everything.as_of is None and everything.valid_at.endswith("Z")


def test_a_cutoff_may_be_a_span_back_from_now(store):
    """"7d" is what the CLI, MCP and the page take for "a week ago", as memory changes does."""
    from personal_memory.errors import InvalidTime
    from personal_memory.times import now_micros, parse_time
    store.remember("a", "alpha", namespace=NS, known_at="2025-01-01")
    week = store.search("alpha", namespace=NS, as_of="7d")
    assert abs(parse_time(week.as_of) - (now_micros() - 7 * 86_400_000_000)) < 60_000_000
    assert [r.memory_id for r in week] == ["a"]
    assert list(store.search("alpha", namespace=NS, as_of="1000w")) == []
    assert store.search("alpha", namespace=NS, as_of="now").as_of is not None
    with pytest.raises(InvalidTime, match="span back from now"):
        store.search("alpha", namespace=NS, as_of="a week ago")
    with pytest.raises(InvalidTime):  # digits of another script are no span
        store.search("alpha", namespace=NS, as_of="\uff17d")


def test_history_of_an_id_that_is_none_names_the_sections_of_its_note(tmp_path):
    """A note's path, or a heading typed with its '#' ("C# und F#", which a section's ID
    leaves out): the error names the note's sections, the closest first."""
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Prog.md").write_text("# Prog\n\n## C# und F#\n\nSprachen.\n\n## Python\n\nAuch.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        with pytest.raises(NotFound) as typed:
            store.history("v/Prog.md#Prog#C# und F#", namespace=NS)
        assert ("its note 'v/Prog.md' has no such section; it has 'v/Prog.md#Prog#C und F'"
                in str(typed.value))
        with pytest.raises(NotFound) as note:
            store.history("v/Prog.md", namespace=NS)
        assert "it is a note, and its memories are its sections" in str(note.value)
        with pytest.raises(NotFound) as nothing:
            store.history("v/None.md#Prog", namespace=NS)
        assert str(nothing.value).endswith("has no revisions in namespace 'notes'")
        # a path typed without its collection: the notes it may mean
        with pytest.raises(NotFound) as short:
            store.read("Prog.md", namespace=NS)
        assert str(short.value).endswith("; did you mean 'v/Prog.md'?")
        with pytest.raises(NotFound) as short:
            store.history("Prog.md#Prog#Python", namespace=NS)
        assert "did you mean 'v/Prog.md'?" in str(short.value)
        with pytest.raises(NotFound) as short:  # not a note known then
            store.history("Prog.md#Prog#Python", namespace=NS, as_of="2000-01-01")
        assert "did you mean" not in str(short.value)
        (vault / "Über.md").write_text("# Über\n\nText.\n")
        store.sync([Folder.of(vault)])
        with pytest.raises(NotFound) as short:  # typed decomposed (macOS)
            store.history("U\u0308ber.md#Über", namespace=NS)
        assert "did you mean 'v/Über.md'?" in str(short.value)
        with pytest.raises(NotFound) as short:
            store.timeline("og.md", namespace=NS)  # the end of a name is no path
        assert "did you mean" not in str(short.value)
        # a path on disk, a case slip, a name without .md, a title, a typo
        for given in (str(vault / "Prog.md"), "v/prog.md", "Prog", "prog", "Progg.md"):
            with pytest.raises(NotFound) as meant:
                store.read(given, namespace=NS)
            assert str(meant.value).endswith("; did you mean 'v/Prog.md'?"), given
        with pytest.raises(NotFound) as meant:
            store.links("/elsewhere/v/über.md", namespace=NS)
        assert "did you mean 'v/Über.md'?" in str(meant.value)
        for given in ("Pr", "Other.md", "v/"):
            with pytest.raises(NotFound) as meant:
                store.read(given, namespace=NS)
            assert "did you mean" not in str(meant.value), given


def test_listings_say_when_a_note_last_changed_as_reading_it_does(tmp_path):
    """A folder's and a tag's listing give each note the time it last changed by the
    cutoff, its sections included (as ``read(...).changed_at``), not only its record's."""
    vault = vault_of(tmp_path, {"Plan.md": "---\ntags: [work]\n---\n# Plan\n\nIn March.\n"})
    plan = vault / "Plan.md"
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-10")
        plan.write_text("---\ntags: [work]\n---\n# Plan\n\nIn May.\n")
        store.sync([Folder.of(vault)], known_at="2025-02-20T10:00:00.5Z")
        for as_of in (None, "2025-01-31"):
            read = store.read("vault/Plan.md", namespace="notes", as_of=as_of).changed_at
            (folder,) = store.folder("vault", namespace="notes", as_of=as_of).notes
            (tagged,) = store.tagged(["work"], namespace="notes", as_of=as_of).notes
            assert folder.known_at == tagged.known_at == read
        assert read.startswith("2025-01-10")
        (now,) = store.folder("vault", namespace="notes").notes
        assert now.known_at.startswith("2025-02-20T10:00:00.5")
        with pytest.raises(InvalidArgument, match="tags"):
            store.tagged([], namespace="notes")


def test_a_note_read_before_it_was_known_says_when_it_was_first(tmp_path):
    vault = vault_of(tmp_path, {"Plan.md": "# Plan\n\nIn March.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-10")
        with pytest.raises(NotFound, match=r"as of 2024-12-31T23:59:59.999999Z; it is first "
                                           r"known at 2025-01-10T00:00:00Z$"):
            store.read("vault/Plan.md", namespace="notes", as_of="2024-12-31")
        with pytest.raises(NotFound, match=r"give COLLECTION/path.md"):
            store.read("vault/Other.md", namespace="notes", as_of="2024-12-31")


def test_a_synced_note_is_written_by_its_file_alone(tmp_path):
    """remember or forget through the API (an assistant's write tool) on a note's section,
    or on any ID under a folder synced into the namespace, is refused in one line: the
    sync writes those from the files, and a write would stand in for the file's text."""
    vault = vault_of(tmp_path, {"Plan.md": "# Plan\n\n## Risks\n\nNo rollback yet.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-10")
        before = store.stats().counts.revisions
        for write in (lambda m: store.remember(m, "made up", namespace="notes"),
                      lambda m: store.forget(m, namespace="notes")):
            for memory_id in ("vault/Plan.md#Plan#Risks", "vault/Other.md"):
                with pytest.raises(InvalidArgument, match="edit the file instead"):
                    write(memory_id)
        assert store.stats().counts.revisions == before
        assert "rollback" in store.read("vault/Plan.md", namespace="notes").text
        # elsewhere in the namespace, and the same IDs in another namespace, are free
        assert store.remember("ideas/rollback", "a plan", namespace="notes").created
        assert store.remember("vault/Plan.md#Plan#Risks", "x", namespace="other").created
