"""Folders as hostile users leave them. The oracle is always the same: a fresh sync of the
folder's final state into a new database gives the live content of every memory; the
store under test must equal it (nothing lost, nothing extra)."""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from personal_memory import MemoryStore
from personal_memory.errors import MassDelete
from personal_memory.notes.folders import Folder
from personal_memory.store import SCHEMA_VERSION
from personal_memory.sync import scan
from support import (ROOT, keyword_ids, remember_all, run_memory, small_disk, user_env,
                     wait_for)


def live(store, namespace="notes") -> dict[str, str]:
    """memory ID -> content of every live memory, now."""
    out = {}
    for r in store.export(namespace=namespace):
        if r.deleted:
            out.pop(r.memory_id, None)
        else:
            out[r.memory_id] = r.content
    return out


def oracle(tmp_path, root, collection=None) -> dict[str, str]:
    with MemoryStore.open(tmp_path / f"oracle-{os.urandom(4).hex()}.db") as fresh:
        fresh.sync([Folder.of(root, collection)], allow_mass_delete=True)
        return live(fresh)


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "notes"
    r.mkdir()
    return r


def test_a_file_name_that_is_not_utf8_is_skipped_and_named(store, root, tmp_path):
    (root / "good.md").write_text("good gooseberry\n")
    bad = os.path.join(os.fsencode(root), b"bad-\xff-name.md")
    with open(bad, "wb") as fh:
        fh.write(b"bad name body\n")
    report = store.sync([Folder.of(root)])
    assert keyword_ids(store, "gooseberry") == ["notes/good.md"]
    assert [s.path for s in report.skipped] == ["bad-\\xff-name.md"]
    assert "not valid UTF-8" in report.skipped[0].reason
    p = run_memory("--db", tmp_path / "cli.db", "sync", root)
    assert p.returncode == 0 and "bad-\\xff-name.md" in p.stdout, p.stderr


def test_a_file_named_as_another_note_s_section_is_skipped_not_mixed_in(store, root):
    """``a.md#X.md`` would have the memory ID of the heading ``X.md`` of ``a.md``, and
    each would hide the other: it is named and skipped, by a whole scan and a path's sync
    alike, and a folder so named too."""
    (root / "a.md").write_text("# X.md\n\nalpha gooseberry\n")
    (root / "a.md#X.md").write_text("beta damson\n")
    (root / "C#.md").write_text("gamma sharp\n")  # no note before its '#'
    (root / "b.md#sub").mkdir()
    (root / "b.md#sub" / "c.md").write_text("delta damson\n")
    report = store.sync([Folder.of(root)])
    assert sorted(s.path for s in report.skipped) == ["a.md#X.md", "b.md#sub/c.md"]
    assert "reads as a section of a.md" in report.skipped[0].reason
    assert keyword_ids(store, "gooseberry") == ["notes/a.md#X.md"]
    assert keyword_ids(store, "damson") == [] and keyword_ids(store, "sharp") == ["notes/C#.md"]
    (root / "a.md#X.md").write_text("beta damson edited\n")
    again = store.sync_paths({Folder.of(root): {"a.md#X.md"}})
    assert [s.path for s in again.skipped] == ["a.md#X.md"]
    assert keyword_ids(store, "gooseberry") == ["notes/a.md#X.md"]


def test_a_name_beginning_with_a_hash_or_tilde_is_a_note(store, root):
    """Only editors' own temp names are skipped (``#x.md#``, ``~$x.md``): a note named
    "#ideas.md" or "~draft.md" is imported, found, read and kept by a path's sync."""
    (root / "#ideas.md").write_text("# Ideas\n\nsony headphones for my sister\n")
    (root / "~draft.md").write_text("draft gooseberry\n")
    (root / "#ideas.md#").write_text("emacs autosave damson\n")
    (root / "~$draft.md").write_text("office lock damson\n")
    report = store.sync([Folder.of(root)])
    assert report.files_scanned == 2 and report.skipped == []
    assert keyword_ids(store, "headphones") == ["notes/#ideas.md#Ideas"]
    assert keyword_ids(store, "gooseberry") == ["notes/~draft.md"]
    assert keyword_ids(store, "damson") == []
    (root / "#ideas.md").write_text("# Ideas\n\nsony headphones for my brother\n")
    store.sync_paths({Folder.of(root): {"#ideas.md"}})
    assert keyword_ids(store, "brother") == ["notes/#ideas.md#Ideas"]


def test_a_file_an_earlier_version_imported_as_a_section_s_id_leaves_it_alone(
        store, root, monkeypatch):
    """What an earlier version stored under both (the file's note and the section share
    a memory ID): renaming the file away tombstones its note, not the section a.md holds."""
    from personal_memory.notes import markdown
    (root / "a.md").write_text("# X.md\n\nalpha gooseberry\n")
    (root / "a.md#X.md").write_text("beta damson\n")
    with monkeypatch.context() as m:
        m.setattr(markdown, "shadowed_note", lambda relpath: None)  # as it was
        store.sync([Folder.of(root)])
    (root / "a.md").write_text("# X.md\n\nalpha gooseberry edited\n")
    store.sync([Folder.of(root)])
    assert keyword_ids(store, "gooseberry") == ["notes/a.md#X.md"]
    (root / "a.md#X.md").rename(root / "b.md")
    store.sync([Folder.of(root)])
    assert keyword_ids(store, "gooseberry") == ["notes/a.md#X.md"]
    assert keyword_ids(store, "damson") == ["notes/b.md"]


def test_a_symlinked_root_is_followed(store, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.md").write_text("linked lychee\n")
    (tmp_path / "notes").symlink_to(real)
    report = store.sync([Folder.of(tmp_path / "notes")])
    assert report.files_scanned == 1 and keyword_ids(store, "lychee") == ["notes/a.md"]
    assert store.sync([Folder.of(tmp_path / "notes")]).files_removed == 0


def test_symbolic_links_inside_the_folder_are_named_and_a_note_replaced_by_one_is_gone(
        store, root, tmp_path):
    """Links inside a notes folder are not followed: a linked note or folder is named as
    skipped, and a note whose file became a link is removed, not kept at its old text."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "Inbox.md").write_text("walruses and seals\n")
    (outside / "sub" / "deep.md").write_text("deep quince\n")
    (root / "Inbox.md").write_text("walruses and seals\n")
    (root / "Stays.md").write_text("stays here\n")
    (root / "Linked.md").symlink_to(outside / "Inbox.md")
    (root / "LinkedDir").symlink_to(outside / "sub")
    (root / "picture.png").symlink_to(outside / "Inbox.md")  # no note's name: not named
    folder = Folder.of(root)
    report = store.sync([folder])
    assert {(s.path, s.reason) for s in report.skipped} == {
        ("Linked.md", scan.LINKED_NOTE), ("LinkedDir", scan.LINKED_FOLDER)}
    assert keyword_ids(store, "walruses") == ["notes/Inbox.md"]
    assert keyword_ids(store, "quince") == []
    (root / "Inbox.md").unlink()
    (root / "Inbox.md").symlink_to(outside / "Inbox.md")
    report = store.sync_paths({folder: {"Inbox.md"}})  # as the daemon does
    assert [(s.path, s.reason) for s in report.skipped] == [("Inbox.md", scan.LINKED_NOTE)]
    assert report.files_removed == 1 and keyword_ids(store, "walruses") == []
    assert store.sync([folder]).files_removed == 0  # a whole scan agrees


def test_load_refuses_a_fifo_that_replaced_a_file_after_the_scan(store, root, monkeypatch):
    (root / "a.md").write_text("original apricot\n")
    folder = Folder.of(root)
    from personal_memory.sync import folder_sync as sync_mod
    original = sync_mod.scan

    def scan_then_swap(*args, **kwargs):
        found = original(*args, **kwargs)
        os.unlink(root / "a.md")
        os.mkfifo(root / "a.md")
        return found
    monkeypatch.setattr(sync_mod, "scan", scan_then_swap)
    done = {}
    t = threading.Thread(target=lambda: done.setdefault("r", store.sync([folder])))
    t.start()
    t.join(20)
    assert not t.is_alive(), "the sync blocked opening a FIFO"
    assert [s.reason for s in done["r"].skipped] == [
        "not a regular file (a FIFO, socket or device took its name)"]


def test_an_unlistable_folder_keeps_its_notes(store, root, monkeypatch):
    (root / "sub").mkdir()
    (root / "sub" / "kept.md").write_text("private persimmon\n")
    (root / "top.md").write_text("top tangerine\n")
    folder = Folder.of(root)
    store.sync([folder])
    real_scandir = os.scandir

    def deny(path="."):
        if os.fspath(path).endswith("/sub"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)
    monkeypatch.setattr(os, "scandir", deny)  # chmod 000 cannot stop root, who runs CI
    report = store.sync([folder])
    assert report.chunks_tombstoned == 0 and report.files_removed == 0
    assert keyword_ids(store, "persimmon") == ["notes/sub/kept.md"]
    assert [s.path for s in report.skipped] == ["sub"]
    assert "cannot list folder" in report.skipped[0].reason


def test_a_note_named_in_an_unlistable_folder_is_kept(store, root, monkeypatch):
    """The daemon syncs the paths it was told of: a note touched or edited in a folder
    that has just become unreadable cannot be seen there, and it is not gone either."""
    (root / "sub").mkdir()
    (root / "sub" / "kept.md").write_text("private persimmon\n")
    for i in range(3):  # so that one deletion would not be a mass delete
        (root / f"top{i}.md").write_text(f"top tangerine {i}\n")
    folder = Folder.of(root)
    store.sync([folder])
    real = {"scandir": os.scandir, "listdir": os.listdir, "lexists": os.path.lexists}

    def deny(name):
        def listing(path="."):
            if os.fspath(path).rstrip("/").endswith("/sub"):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real[name](path)
        return listing

    def unsearchable(path):  # lstat inside a folder without search permission fails
        return "/sub/" not in os.fspath(path) and real["lexists"](path)
    monkeypatch.setattr(os, "scandir", deny("scandir"))  # chmod 000 cannot stop root (CI)
    monkeypatch.setattr(os, "listdir", deny("listdir"))
    monkeypatch.setattr(os.path, "lexists", unsearchable)
    report = store.sync_paths({folder: {"sub/kept.md"}})
    assert report.chunks_tombstoned == 0 and report.files_removed == 0
    assert keyword_ids(store, "persimmon") == ["notes/sub/kept.md"]
    assert [s.path for s in report.skipped] == ["sub"]
    (root / "top0.md").unlink()  # a note really gone beside it still goes
    report = store.sync_paths({folder: {"top0.md", "sub/kept.md"}})
    assert report.files_removed == 1 and keyword_ids(store, "persimmon") == ["notes/sub/kept.md"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 folder anyway")
def test_an_unreadable_folder_keeps_its_notes_for_real(store, root):
    (root / "sub").mkdir()
    (root / "sub" / "kept.md").write_text("private persimmon\n")
    store.sync([Folder.of(root)])
    os.chmod(root / "sub", 0)
    try:
        report = store.sync([Folder.of(root)])
    finally:
        os.chmod(root / "sub", 0o755)
    assert report.chunks_tombstoned == 0
    assert keyword_ids(store, "persimmon") == ["notes/sub/kept.md"]


def test_nfd_names_from_events_and_twins(store, root, tmp_path):
    nfd = "cafe\u0301.md"
    (root / nfd).write_text("decomposed dumpling\n")
    for i in range(3):  # so that one deletion is not a mass delete
        (root / f"other{i}.md").write_text(f"other note {i}\n")
    folder = Folder.of(root)
    store.sync([folder])
    assert keyword_ids(store, "dumpling") == ["notes/café.md"]
    (root / nfd).unlink()  # the event names the NFD path
    store.sync_paths({folder: {nfd}})
    assert keyword_ids(store, "dumpling") == []
    # Twins: NFC and NFD spellings side by side. The NFC one wins, every time.
    (root / nfd).write_text("twin one nfd\n")
    (root / "café.md").write_text("twin two nfc\n")
    for _ in range(3):
        report = store.sync([folder])
        assert live(store)["notes/café.md"] == "twin two nfc"
        assert [s.path for s in report.skipped] == [nfd]
    assert live(store) == oracle(tmp_path, root)
    assert [p.path for p in store.status().daemon.problems] == ["café.md"]
    (root / "café.md").unlink()  # the twin gone, its problem goes with the path's sync
    store.sync_paths({folder: {"café.md"}})
    assert live(store)["notes/café.md"] == "twin one nfd"
    assert store.status().daemon.problems == []


def test_renaming_a_folder_with_most_notes_is_a_move(store, root, tmp_path):
    (root / "projects").mkdir()
    for i in range(8):
        (root / "projects" / f"p{i}.md").write_text(f"project plan{i}\n")
    (root / "inbox.md").write_text("inbox item\n")
    folder = Folder.of(root)
    store.sync([folder])
    os.rename(root / "projects", root / "projects-2025")
    report = store.sync([folder])
    assert report.files_moved == 8 and report.files_imported == 8
    assert report.files_removed == 0
    moved_at = {r.known_at for r in store.export() if "projects" in r.memory_id
                and r.known_at != store.history("notes/inbox.md", namespace="notes")[0].known_at}
    assert len(moved_at) == 1  # arrivals, departures and the records: one instant
    assert keyword_ids(store, "plan3") == ["notes/projects-2025/p3.md"]
    assert live(store) == oracle(tmp_path, root)


def test_a_true_mass_delete_waits_but_new_notes_are_imported(store, root):
    for i in range(6):
        (root / f"n{i}.md").write_text(f"note number{i}\n")
    folder = Folder.of(root)
    store.sync([folder])
    for i in range(5):
        (root / f"n{i}.md").unlink()
    (root / "fresh.md").write_text("fresh fig\n")
    with pytest.raises(MassDelete, match="--allow-mass-delete"):
        store.sync([folder])
    assert keyword_ids(store, "fig") == ["notes/fresh.md"]  # imported regardless
    assert keyword_ids(store, "number1") == ["notes/n1.md"]  # not deleted yet
    status = store.status()
    assert status.daemon.last_sync_status == "refused"
    assert any("--allow-mass-delete" in e.reason for e in status.daemon.last_sync_errors)
    store.sync([folder], allow_mass_delete=True)
    assert keyword_ids(store, "number1") == []


def test_a_sync_that_read_stale_state_leaves_no_chunk_behind(store, root, db_path, tmp_path,
                                                            monkeypatch):
    """A `memory sync` reads a note and the stat cache, pauses; meanwhile the daemon grows
    the note to three chunks. The sync then writes its one-chunk version, and later the
    note shrinks to one chunk again. No chunk may be left behind."""
    para = "word " * 300
    note = root / "n.md"
    note.write_text("small start\n")
    for i in range(3):
        (root / f"other{i}.md").write_text(f"other note {i}\n")
    folder = Folder.of(root)
    store.sync([folder])
    from personal_memory.sync import folder_sync as sync_mod
    original = sync_mod.load
    state = {"done": False}

    def other_writer_runs_first(*args, **kwargs):
        loaded = original(*args, **kwargs)
        if not state["done"]:
            state["done"] = True
            with MemoryStore.open(db_path) as daemon:
                note.write_text("\n\n".join(f"{para} part{i}" for i in range(3)))
                os.utime(note, ns=(1, 1))
                daemon.sync([folder])
                assert len([m for m in live(daemon) if m.startswith("notes/n.md#")]) == 3
        return loaded
    note.write_text("edited once\n")
    monkeypatch.setattr(sync_mod, "load", other_writer_runs_first)
    store.sync([folder])
    monkeypatch.undo()
    note.write_text("small again\n")
    os.utime(note, ns=(2, 2))
    store.sync([folder])
    assert live(store) == oracle(tmp_path, root)


def _sync_signalled(db_path, root, signum: int) -> subprocess.CompletedProcess:
    """A full sync in its own process that sends itself ``signum`` at its first file."""
    # SIGINT as a terminal's Ctrl-C finds it, whatever the test process left ignored or
    # blocked for its children (both are inherited across exec)
    code = ("import os, signal, sys\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])\n"
            "from personal_memory import MemoryStore\n"
            "from personal_memory.notes.folders import Folder\n"
            "s = MemoryStore.open(sys.argv[1])\n"
            f"s.sync([Folder.of(sys.argv[2])], progress=lambda d, t: os.kill(os.getpid(), "
            f"{int(signum)}), full=True)\n")
    return subprocess.run([sys.executable, "-c", code, db_path, root], capture_output=True)


def test_a_stop_waits_for_one_note_not_a_whole_batch(store, root):
    """A stop asked for in the middle of a batch (a first import of large notes) is heard
    before the next note is read or written: the batch rolls back whole and the next sync
    imports it."""
    for i in range(10):
        (root / f"n{i}.md").write_text(f"# N{i}\n\nnote number{i}\n")
    for stop_at in (4, 13):  # while the batch's notes are read; while they are written
        asked = []

        def cancel():
            asked.append(1)
            return len(asked) >= stop_at
        report = store.sync([Folder.of(root)], cancel=cancel)
        assert len(asked) == stop_at + (stop_at < 12) and report.files_imported == 0
    assert store.sync_runs(1)[0].status == "interrupted"
    assert keyword_ids(store, "number3") == []  # nothing of the batch was kept
    assert store.sync([Folder.of(root)]).files_imported == 10


def test_interrupted_and_killed_runs_are_recorded_as_interrupted(store, root, db_path):
    for i in range(1500):
        (root / f"n{i:04d}.md").write_text(f"note number{i}\n")
    checks = iter([False, True])
    store.sync([Folder.of(root)], cancel=lambda: next(checks, True))
    assert store.sync_runs(1)[0].status == "interrupted"
    # A sync killed with -9 leaves a "running" record; the next sync closes it.
    p = _sync_signalled(db_path, root, signal.SIGKILL)
    assert p.returncode == -signal.SIGKILL
    assert store.sync_runs(1)[0].status == "running"
    assert store.status().daemon.last_sync_status == "interrupted"  # its process is gone
    store.sync([Folder.of(root)])
    statuses = [r.status for r in store.sync_runs(3)]
    assert statuses[:2] == ["ok", "interrupted"]
    # A second Ctrl-C raises KeyboardInterrupt in the middle of a sync: interrupted too
    p = _sync_signalled(db_path, root, signal.SIGINT)
    assert p.returncode != 0 and b"KeyboardInterrupt" in p.stderr
    assert store.sync_runs(1)[0].status == "interrupted"


def test_a_huge_file_is_reported_with_its_real_size(store, root):
    with open(root / "huge.md", "wb") as fh:
        fh.truncate(50_000_000)
    report = store.sync([Folder.of(root)])
    assert report.skipped[0].reason.startswith("too large (50,000,000 bytes")


def test_cli_output_into_a_closed_pipe_exits_quietly(tmp_path):
    db = tmp_path / "m.db"
    remember_all(db, {f"m{i}": f"pipe test line {i} " * 20 for i in range(30)})
    env = user_env()
    for _ in range(5):
        p = subprocess.run(f"{sys.executable} -m personal_memory --db {db} search pipe "
                           "--limit 30 | head -c 1 >/dev/null; echo \"${PIPESTATUS[0]}\"",
                           shell=True, executable="/bin/bash", capture_output=True,
                           text=True, env=env, cwd=ROOT)
        assert p.stderr == "", p.stderr
        assert p.stdout.strip() in ("0", "141")


def test_a_note_that_turns_invalid_stays_stale_and_visible_until_fixed(store, root, tmp_path):
    (root / "a.md").write_text("good avocado\n")
    (root / "b.md").write_text("other banana\n")
    folder = Folder.of(root)
    store.sync([folder])
    (root / "a.md").write_bytes(b"good avocado\x00 now binary\n")
    store.sync([folder])
    (root / "b.md").write_text("other banana, edited\n")
    store.sync_paths({folder: {"b.md"}})  # an unrelated event sync keeps the problem
    (problem,) = store.status().daemon.problems
    assert (problem.collection, problem.path, problem.stale) == ("notes", "a.md", True)
    assert "NUL byte" in problem.reason
    assert keyword_ids(store, "avocado") == ["notes/a.md"]  # the last good text stays
    out = run_memory("--db", store.path, "status")
    assert "problem       notes/a.md: contains a NUL byte" in out.stdout
    assert "last good version stays searchable" in out.stdout
    first_seen = problem.since
    store.sync([folder])
    assert store.status().daemon.problems[0].since == first_seen
    (root / "a.md").write_text("fixed avocado\n")
    store.sync_paths({folder: {"a.md"}})
    assert store.status().daemon.problems == []


def test_a_collection_name_belongs_to_one_folder(store, tmp_path):
    from personal_memory.errors import CollectionTaken
    work, home = tmp_path / "work" / "notes", tmp_path / "home" / "notes"
    for folder, word in ((work, "wombat"), (home, "hamster")):
        folder.mkdir(parents=True)
        (folder / "n.md").write_text(f"{word}\n")
    store.sync([Folder.of(work)])
    with pytest.raises(CollectionTaken, match="--collection"):
        store.sync([Folder.of(home)])
    assert keyword_ids(store, "wombat") == ["notes/n.md"]  # nothing was tombstoned
    store.sync([Folder.of(home, "home-notes")])
    assert keyword_ids(store, "hamster") == ["home-notes/n.md"]
    moved = tmp_path / "moved-notes"
    work.rename(moved)  # the vault moved: it takes its collection along
    store.sync([Folder.of(moved, "notes")])
    assert keyword_ids(store, "wombat") == ["notes/n.md"]


def test_a_folder_is_one_collection_not_two(store, tmp_path):
    """The same folder (or one inside it) synced under a new collection name would hold a
    second copy of its notes, which a daemon watching the first would leave stale: it is
    refused, naming the collection it is, and nothing is written."""
    from personal_memory.errors import CollectionTaken
    vault = tmp_path / "vault"
    (vault / "Projects").mkdir(parents=True)
    (vault / "a.md").write_text("wombat\n")
    (vault / "Projects" / "p.md").write_text("hamster\n")
    (tmp_path / "vault2").mkdir()  # a name that starts alike is another folder
    (tmp_path / "vault2" / "b.md").write_text("okapi\n")
    store.sync([Folder.of(vault)])
    for again in (Folder.of(vault, "other"), Folder.of(vault / "Projects"),
                  Folder.of(tmp_path / "link-to-vault", "other")):
        if again.root.name == "link-to-vault":
            again.root.symlink_to(vault)
        with pytest.raises(CollectionTaken, match="collection 'vault'"):
            store.sync([again])
    assert keyword_ids(store, "hamster") == ["vault/Projects/p.md"]
    assert keyword_ids(store, "wombat") == ["vault/a.md"]
    store.sync([Folder.of(tmp_path / "vault2")])
    assert keyword_ids(store, "okapi") == ["vault2/b.md"]
    store.sync([Folder.of(vault)])  # the folder itself, as before
    assert store.status().daemon.files_indexed == 3


def test_config_gives_two_folders_of_one_name_distinct_collections(tmp_path):
    from personal_memory import config
    cfg = tmp_path / "config.toml"
    a, b = tmp_path / "work" / "notes", tmp_path / "home" / "notes"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    added = config.add_folders(cfg, [Folder.of(a), Folder.of(b)])
    assert [f.collection for f in added] == ["notes", "notes-2"]
    assert [f.collection for f in config.load(cfg).folders] == ["notes", "notes-2"]


def test_a_version_1_database_is_upgraded_without_changing_any_answer(tmp_path, root):
    import apsw
    db = tmp_path / "old.db"
    (root / "a.md").write_text("ancient aardvark\n")
    with MemoryStore.open(db) as s:
        s.sync([Folder.of(root)], known_at="2024-01-01")
        s.remember("x", "aardvark fact", namespace="notes", known_at="2024-02-01")
    conn = apsw.Connection(str(db))  # turn it into what version 1 wrote
    conn.execute("""
        DROP TABLE vectors; DROP TABLE problems; DROP TABLE purges; DROP TABLE moves;
        DROP TABLE doc_lengths; DROP TABLE clock_repairs;
        DROP INDEX revisions_note;
        DROP INDEX revisions_valid_from; DROP INDEX revisions_valid_to;
        DROP TRIGGER revisions_purge_keeps_identity; DROP TRIGGER revisions_no_update;
        ALTER TABLE revisions DROP COLUMN purged_at;
        ALTER TABLE revisions DROP COLUMN note; ALTER TABLE revisions DROP COLUMN metadata;
        ALTER TABLE revisions DROP COLUMN index_title;
        ALTER TABLE revisions DROP COLUMN index_content;
        ALTER TABLE files DROP COLUMN chunker;
        CREATE TRIGGER revisions_no_update BEFORE UPDATE ON revisions
        BEGIN SELECT RAISE(ABORT, 'revisions are append-only: UPDATE is not allowed'); END;
        PRAGMA user_version = 1;""")
    conn.close()
    with MemoryStore.open(db, read_only=True) as ro:
        before = [r.to_dict() for r in ro.search("aardvark", namespace="notes",
                                                 as_of="2024-03-01")]
        history = [r.to_dict() for r in ro.history("x", namespace="notes")]
        assert ro.status().daemon.problems == [] and ro.health().schema_version == 1
    with MemoryStore.open(db) as rw:
        assert rw.health().schema_version == SCHEMA_VERSION
        assert [r.to_dict() for r in rw.search("aardvark", namespace="notes",
                                               as_of="2024-03-01")] == before
        assert [r.to_dict() for r in rw.history("x", namespace="notes")] == history


def test_a_full_disk_keeps_the_import_and_the_daemon_waits_for_space(root, tmp_path):
    """A real full disk, model on: the sync's import stays and says how to finish; the
    daemon starts on the full disk, waits for space, then imports and embeds without help."""
    from daemon_harness import Daemon
    with small_disk(tmp_path / "small", "900k") as small:
        daemon = None
        try:
            for i in range(200):
                (root / f"n{i}.md").write_text(f"# Note {i}\n\nThe quick note number {i} talks "
                                               f"about item{i} and other things worth keeping.\n")
            db, e5 = small / "m.db", {"MEMORY_EMBEDDER": "e5"}
            p = run_memory("--db", db, "sync", root, env=e5, timeout=300)
            assert p.returncode == 1, p.stdout + p.stderr
            assert "the disk is full" in p.stdout and "'memory reembed'" in p.stdout
            assert "notes/n150.md" in run_memory("--db", db, "search", "item150").stdout
            with open(small / "filler", "wb") as fh:  # not a byte left
                try:
                    while True:
                        fh.write(b"\0" * 65536)
                except OSError:
                    pass
            daemon = Daemon(db, root, env=e5).start()
            (root / "late.md").write_text("a latecomer zebra\n")
            wait_for(lambda: "waiting for disk space" in daemon.log(), 60, what="a full disk")
            assert daemon.search_ids("zebra") == []
            (small / "filler").unlink()
            subprocess.run(["mount", "-o", "remount,size=8m", str(small)], check=True)

            said = []  # what a status that failed said (asked again: its reason is shown)

            def embedded():
                p = run_memory("--db", db, "--json", "status")
                if p.returncode != 0:
                    said.append(p.stderr)
                    return False
                return json.loads(p.stdout)["vectors"]["pending_vectors"] == 0
            try:
                wait_for(lambda: daemon.search_ids("zebra") == ["notes/late.md"], 90,
                         what="the import once there is space")
                wait_for(embedded, 120, what="every vector once there is space")
            except AssertionError as exc:
                raise AssertionError(f"{exc}; status said {said[-3:]}; the daemon's log:\n"
                                     f"{daemon.log()}") from None
            assert daemon.proc.poll() is None
        finally:
            if daemon:
                daemon.close()


def test_a_note_whose_name_a_folder_or_a_fifo_takes(tmp_path):
    """A folder made where a note was: the note is gone. A FIFO (or socket, or device)
    that takes a note's name, or comes with one: named as skipped, never opened, and a
    note it replaced keeps its last text (as an unreadable file does)."""
    from personal_memory import MemoryStore
    from personal_memory.notes.folders import Folder
    from support import vault_of
    vault = vault_of(tmp_path, {"plan.md": "# Plan\n\nthe zebra plan\n",
                                "pipe.md": "# Pipe\n\nthe okapi pipe\n", "o.md": "other\n",
                                "p.md": "p\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "plan.md").unlink()
        (vault / "plan.md").mkdir()
        (vault / "pipe.md").unlink()
        os.mkfifo(vault / "pipe.md")
        os.mkfifo(vault / "new.md")
        report = store.sync([Folder.of(vault)], known_at="2025-02-01")
        assert report.files_removed == 1
        assert sorted(s.path for s in report.skipped) == ["new.md", "pipe.md"]
        assert all("FIFO" in s.reason for s in report.skipped)
        assert [r.memory_id for r in store.search("zebra", namespace="notes")] == []
        assert [r.memory_id for r in store.search("okapi", namespace="notes")] == [
            "vault/pipe.md#Pipe"]
        problems = {p.path: p.stale for p in store.status().daemon.problems}
        assert problems == {"new.md": False, "pipe.md": True}
        os.mkfifo(vault / "later.md")  # made while the daemon runs: its one-path sync
        one = store.sync_paths({Folder.of(vault): {"later.md"}})
        assert [(s.path, "FIFO" in s.reason) for s in one.skipped] == [("later.md", True)]
        assert "later.md" in {p.path for p in store.status().daemon.problems}


@pytest.mark.parametrize("mtime_ns", [2**63 + 10**9, 2**64 + 5])
def test_a_file_time_beyond_what_sqlite_holds_syncs_and_later_edits_are_seen(
        store, root, tmp_path, mtime_ns):
    """A modification time after 2262 (touch -d 9999, as ext4 stores it) does not fit in
    64 bits of nanoseconds; it stopped the sync of every note, and the daemon with it."""
    (root / "far.md").write_text("# Far\n\nfrom the far future\n")
    (root / "near.md").write_text("# Near\n\nan ordinary note\n")
    try:
        os.utime(root / "far.md", ns=(mtime_ns, mtime_ns))
    except (OverflowError, OSError) as exc:
        pytest.skip(f"this file system cannot hold that time ({exc})")
    if os.stat(root / "far.md").st_mtime_ns < 2**63:
        pytest.skip("this file system stored an earlier time than asked")
    report = store.sync([Folder.of(root)])
    assert report.files_imported == 2 and not report.skipped
    assert live(store) == oracle(tmp_path, root)
    (root / "far.md").write_text("# Far\n\nfrom the far future, edited\n")
    os.utime(root / "far.md", ns=(mtime_ns + 10**9, mtime_ns + 10**9))
    store.sync([Folder.of(root)])
    assert any("edited" in text for text in live(store).values())


def test_stat_values_beyond_64_bits_are_kept_apart_not_clamped():
    """An inode of 2**63 or more (overlayfs with xino=on, NFS) and far times, as stored."""
    from personal_memory.notes.folders import FileStat
    # mode, inode, device, links, uid, gid, size, 3 times in s, 3 as floats, 3 in ns
    big = os.stat_result((0o100644, 2**63 + 3, 1, 1, 0, 0, 10, 0, 0, 0,
                          0, 0, 0, 0, 2**63 + 1, -2**64 + 7))
    other = os.stat_result((0o100644, 2**63 + 4, 1, 1, 0, 0, 10, 0, 0, 0,
                            0, 0, 0, 0, 2**63 + 2, -2**64 + 8))
    a, b = FileStat.of(big), FileStat.of(other)
    for value in (a.inode, a.mtime_ns, a.ctime_ns):
        assert -2**63 <= value < 2**63
    assert (a.inode, a.mtime_ns, a.ctime_ns) != (b.inode, b.mtime_ns, b.ctime_ns)
    assert a.inode != b.inode and a.mtime_ns != b.mtime_ns and a.ctime_ns != b.ctime_ns


def test_a_fault_on_one_file_skips_that_file_and_syncs_the_others(store, root, tmp_path,
                                                                   monkeypatch):
    """A fault of this program's own code on one file (as the overflow of a far file time
    was) names that file and leaves the rest of its batch to be imported."""
    for name in ("a.md", "bad.md", "c.md"):
        (root / name).write_text(f"# {name}\n\nthe text of {name}\n")
    real = store._db.put_file_state

    def put(namespace, collection, rel, state):
        if rel == "bad.md":
            raise OverflowError("int too big to convert")
        return real(namespace, collection, rel, state)
    monkeypatch.setattr(store._db, "put_file_state", put)
    report = store.sync([Folder.of(root)])
    assert report.files_imported == 2
    assert [(s.path, "OverflowError" in s.reason) for s in report.skipped] == [("bad.md", True)]
    held = live(store)
    assert not any("bad.md" in text for text in held.values())  # skipped whole
    assert sum("the text of" in text for text in held.values()) == 2
    monkeypatch.undo()
    store.sync([Folder.of(root)])
    assert live(store) == oracle(tmp_path, root)


def test_one_namespace_s_status_names_no_other_namespace_s_folders_or_files(tmp_path):
    """What an MCP token for one namespace reads of the daemon: its own folders and
    problems, none of another namespace's file names (a sync's run spans them all)."""
    from support import vault_of
    private = vault_of(tmp_path, {"diary.md": "# Diary\n\nsecret plans\n"}, "private")
    os.mkfifo(private / "bad.md")
    work = vault_of(tmp_path, {"todo.md": "# Todo\n\nship it\n"}, "work")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(private), Folder.of(work, namespace="work")])
        s.record_daemon(state="watching", started_at=0, roots=[str(private), str(work)])
        mine = s.status("work").daemon
        everything = s.status().daemon
    shown = json.dumps(mine.to_dict())
    assert str(private) not in shown and "bad" not in shown and "diary" not in shown
    assert mine.watched_folders == [str(work)] and mine.imported_folders == [str(work)]
    assert any("bad" in e.path for e in everything.last_sync_errors)
    assert str(private) in everything.watched_folders
