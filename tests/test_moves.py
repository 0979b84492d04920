"""A move is one event: a renamed file or folder is at its old path or its new one at every
cutoff, never both and never neither, and reading, history and changes follow it."""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from daemon_harness import Daemon
from personal_memory import MemoryStore, render
from personal_memory.notes.folders import Folder
from support import run_memory, vault_of, wait_for


def test_a_renamed_note_is_read_under_its_old_path_before_the_move(tmp_path):
    vault = tmp_path / "vault"
    (vault / "Teams").mkdir(parents=True)
    note = vault / "Teams" / "Commercial license.md"
    note.write_text("# License\n\nThe commercial license costs 50 a year.\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        note.write_text("# License\n\nThe commercial license costs 60 a year.\n")
        store.sync([Folder.of(vault)], known_at="2025-02-01")
        os.rename(vault / "Teams", vault / "Team docs")
        report = store.sync([Folder.of(vault)], known_at="2025-03-01")
        assert report.files_moved == 1 and report.files_removed == 0
        new = "vault/Team docs/Commercial license.md"
        then = store.read(new, namespace="notes", as_of="2025-01-15")
        assert then.path_then == "vault/Teams/Commercial license.md"
        assert "costs 50" in then.text and then.sections[0].memory_id.startswith("vault/Teams/")
        assert [(m.old_note, m.new_note) for m in then.moves] == [
            ("vault/Teams/Commercial license.md", new)]
        now = store.read(new, namespace="notes")
        assert now.path_then is None and "costs 60" in now.text
        history = store.history(f"{new}#License", namespace="notes")
        assert [h.memory_id.split("/")[1] for h in history] == [
            "Teams", "Teams", "Teams", "Team docs"]
        assert "costs 50" in history[0].content and history[2].deleted
        week = store.changes(namespace="notes", since="2025-02-15", until="2025-03-02")
        (moved,) = week.notes
        assert moved.change == "moved" and moved.moved_from == "vault/Teams/Commercial license.md"
        assert moved.sections == []  # the same text at the new path: nothing else changed
    out = run_memory("--db", db, "read", new, "--as-of", "2025-01-15").stdout
    assert "(then vault/Teams/Commercial license.md)" in out and "costs 50" in out
    # The old path, read after the move, says where the note went.
    old = "vault/Teams/Commercial license.md"
    with MemoryStore.open(db, embedder="none") as store:
        gone = store.read(old, namespace="notes")
        assert gone.deleted
        assert (gone.moved_to.old_note, gone.moved_to.new_note) == (old, new)
        assert gone.moved_to.known_at.startswith("2025-03-01")
        assert store.read(old, namespace="notes", as_of="2025-02-15").moved_to is None
    out = run_memory("--db", db, "read", old).stdout
    assert f"moved to {new} at 2025-03-01" in out and "deleted" not in out
    assert '"new_note": "vault/Team docs/Commercial license.md"' in run_memory(
        "--db", db, "--json", "read", old).stdout
    out = run_memory("--db", db, "changes", "--since", "2025-02-15", "--until",
                     "2025-03-02").stdout
    assert "moved from vault/Teams/Commercial license.md" in out


def test_a_path_read_at_a_cutoff_shows_what_it_held_then_not_a_note_moved_there_later(
        tmp_path):
    """DiskANN.md is deleted, then another note is renamed to DiskANN.md: read at a cutoff
    before, the path shows the DiskANN note, then its deletion; only now the other note.
    A note read by the path it had at the cutoff lists no move known after it."""
    vault = vault_of(tmp_path, {
        "DiskANN.md": "# DiskANN\n\nVamana graphs on SSD. See [[Tail]].\n",
        "Tail.md": "# The Tail at Scale\n\nHedged requests.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "DiskANN.md").unlink()
        store.sync([Folder.of(vault)], known_at="2025-02-01")
        os.rename(vault / "Tail.md", vault / "DiskANN.md")
        assert store.sync([Folder.of(vault)], known_at="2025-03-01").files_moved == 1
        path = "vault/DiskANN.md"
        then = store.read(path, namespace="notes", as_of="2025-01-15")
        assert then.title == "DiskANN" and "Vamana" in then.text and then.path_then is None
        assert then.moves == []
        gone = store.read(path, namespace="notes", as_of="2025-02-15")
        assert gone.deleted and gone.moved_to is None and gone.moves == []
        now = store.read(path, namespace="notes")
        assert now.title == "The Tail at Scale" and [m.old_note for m in now.moves] == [
            "vault/Tail.md"]
        tail = store.read("vault/Tail.md", namespace="notes", as_of="2025-02-15")
        assert "Hedged" in tail.text and tail.moves == []
        # its links then, as read shows it: the DiskANN note's, then none (deleted)
        links = store.links(path, namespace="notes", as_of="2025-01-15")
        assert [x.note for x in links.outgoing] == ["vault/Tail.md"] and not links.deleted
        links = store.links(path, namespace="notes", as_of="2025-02-15")
        assert links.deleted and links.outgoing == links.backlinks == []
        assert render.links(links) == ("vault/DiskANN.md as of the end of 2025-02-15 (UTC): "
                                       "deleted by then; no links.")
        # the section's history by its ID now, at a cutoff before the rename
        early = store.history("vault/DiskANN.md#The Tail at Scale", namespace="notes",
                              as_of="2025-02-15")
        assert [(h.memory_id, h.deleted) for h in early] == [
            ("vault/Tail.md#The Tail at Scale", False)]


def test_a_move_with_an_edit_is_one_instant_with_a_revision(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nfirst text here\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        os.rename(vault / "a.md", vault / "b.md")
        with open(vault / "b.md", "a") as fh:  # same inode, other size: edited and moved
            fh.write("\nmore text\n")
        os.utime(vault / "b.md", ns=(10**18, 10**18))
        report = store.sync([Folder.of(vault)], known_at="2025-02-01")
        assert report.files_moved == 1
        week = store.changes(namespace="notes", since="2025-01-15", until="2025-02-02")
        (moved,) = week.notes
        assert moved.change == "moved" and [s.change for s in moved.sections] == ["revised"]
        assert moved.sections[0].moved_from == "vault/a.md#A"
        assert "{+more text+}" in moved.sections[0].diff


def test_a_copy_and_delete_with_the_same_content_is_a_move(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nsame bytes\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "c.md").write_bytes((vault / "a.md").read_bytes())  # a new inode
        (vault / "a.md").unlink()
        report = store.sync([Folder.of(vault)], known_at="2025-02-01")
        assert report.files_moved == 1 and report.files_removed == 0
        assert store.read("vault/c.md", namespace="notes",
                          as_of="2025-01-15").path_then == "vault/a.md"


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")),
                    reason="the daemon needs inotify or FSEvents")
def test_a_folder_of_200_notes_moved_under_the_daemon_is_never_twice_nor_missing(tmp_path):
    vault = tmp_path / "vault"
    teams = vault / "Teams"
    teams.mkdir(parents=True)
    for i in range(200):
        (teams / f"n{i:03d}.md").write_text(f"# Note {i}\n\nmarker{i} of the team folder\n")
    d = Daemon(tmp_path / "m.db", vault)
    try:
        d.start()
        os.rename(teams, vault / "Team docs")
        with d.store() as s:
            def all_moved():
                return all(s.get(f"vault/Team docs/n{i:03d}.md#", namespace="notes")
                           for i in (0, 99, 199))
            wait_for(all_moved, timeout=60, what="the move")
        d.cookie()
        with d.store() as s:
            times = sorted({r.known_at for r in s.export(namespace="notes")})
            for t in times:
                for i in range(200):
                    old = s.get(f"vault/Teams/n{i:03d}.md#", namespace="notes", as_of=t)
                    new = s.get(f"vault/Team docs/n{i:03d}.md#", namespace="notes", as_of=t)
                    assert (old is None) != (new is None), (t, i, old, new)
    finally:
        d.close()


def test_history_says_where_a_moved_section_went(tmp_path):
    vault = vault_of(tmp_path, {"a.md": "# Plan\n\nfirst plan\n\n# Notes\n\nloose notes\n",
                                "other.md": "another note\n"})
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        os.rename(vault / "a.md", vault / "b.md")
        store.sync([Folder.of(vault)], known_at="2025-02-01")
        old = store.history("vault/a.md#Plan", namespace="notes")
        assert [(h.deleted, h.moved_to) for h in old] == [(False, None), (True, "vault/b.md#Plan")]
        assert "moved to vault/b.md#Plan (hides #" in render.revision(old[-1])
        new = store.history("vault/b.md#Plan", namespace="notes")  # follows it back
        assert [h.moved_to for h in new] == [None, "vault/b.md#Plan", None]
        # a move with a heading renamed before one sync: the section it became
        (vault / "b.md").write_text("# Plan B\n\nfirst plan\n\n# Notes\n\nloose notes\n")
        os.rename(vault / "b.md", vault / "c.md")
        store.sync([Folder.of(vault)], known_at="2025-03-01")
        (*_, gone) = store.history("vault/b.md#Plan", namespace="notes")
        assert gone.deleted and gone.moved_to == "vault/c.md#Plan B"
        back = store.history("vault/c.md#Plan B", namespace="notes")  # and back through both
        assert [h.memory_id for h in back] == ["vault/a.md#Plan", "vault/a.md#Plan",
                                               "vault/b.md#Plan", "vault/b.md#Plan",
                                               "vault/c.md#Plan B"]
        # a plain deletion is no move, at any cutoff
        (vault / "c.md").unlink()
        store.sync([Folder.of(vault)], known_at="2025-04-01")
        (*_, deleted) = store.history("vault/c.md#Notes", namespace="notes")
        assert deleted.deleted and deleted.moved_to is None
        assert store.history("vault/a.md#Plan", namespace="notes",
                             as_of="2025-01-15")[-1].moved_to is None
    out = run_memory("--db", db, "history", "vault/a.md#Plan").stdout
    assert "moved to vault/b.md#Plan" in out


def test_a_note_renamed_back_and_forth_lists_each_revision_once(tmp_path):
    """A to B and back, three times: ID A is the memory's twice or more, and each of its
    revisions is listed once, in time order, at any cutoff; B's follow the same way."""
    vault = vault_of(tmp_path, {"A.md": "intro line\n\n# Sec\n\nbody\n"})
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        day = 2
        for _ in range(3):
            for old, new in (("A.md", "B.md"), ("B.md", "A.md")):
                os.rename(vault / old, vault / new)
                store.sync([Folder.of(vault)], known_at=f"2025-01-{day:02d}")
                day += 1
        every = {r.revision_id for r in store.export(namespace="notes")
                 if r.memory_id in ("vault/A.md#Sec", "vault/B.md#Sec")}
        for cutoff in (None, "2025-01-01", "2025-01-03", "2025-01-05T12:00:00Z"):
            listed = store.history("vault/A.md#Sec", namespace="notes", as_of=cutoff)
            ids = [h.revision_id for h in listed]
            assert len(ids) == len(set(ids)), (cutoff, ids)
            assert [h.known_at for h in listed] == sorted(h.known_at for h in listed)
            if cutoff is None:
                assert set(ids) == every
        assert len(store.history("vault/A.md#Sec", namespace="notes")) == 13


def test_a_section_s_history_follows_its_heading_across_renames(tmp_path):
    """Shakshuka, then "Shakshuka (spicy)" with an edit, then "(hot)", then back: each ID's
    history holds the revisions of the IDs before it, each once, in time order; a rename's
    tombstone names the ID the section took; no cutoff sees a later one."""
    body = "Eggs in tomato sauce with cumin and peppers, baked slowly."
    vault = vault_of(tmp_path, {"r.md": f"# R\n\n## Shakshuka\n\n{body}\n\n## Toast\n\nBread.\n"})
    note = vault / "r.md"
    steps = [("Shakshuka (spicy)", body), ("Shakshuka (spicy)", body + " Chili too."),
             ("Shakshuka (hot)", body + " Chili too."), ("Shakshuka", body + " Chili too.")]
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        for day, (heading, text) in enumerate(steps, 2):
            note.write_text(f"# R\n\n## {heading}\n\n{text}\n\n## Toast\n\nBread.\n")
            store.sync([Folder.of(vault)], known_at=f"2025-01-0{day}")
        ids = {h: f"vault/r.md#R#{h}" for h in ("Shakshuka", "Shakshuka (spicy)",
                                                "Shakshuka (hot)")}
        whole = store.history(ids["Shakshuka"], namespace="notes")
        assert [(h.memory_id[13:], h.deleted, h.moved_to and h.moved_to[13:])
                for h in whole] == [
            ("Shakshuka", False, None), ("Shakshuka", True, "Shakshuka (spicy)"),
            ("Shakshuka (spicy)", False, None), ("Shakshuka (spicy)", False, None),
            ("Shakshuka (spicy)", True, "Shakshuka (hot)"), ("Shakshuka (hot)", False, None),
            ("Shakshuka (hot)", True, "Shakshuka"), ("Shakshuka", False, None)]
        assert len({h.revision_id for h in whole}) == 8
        assert [h.known_at[:10] for h in whole] == sorted(h.known_at[:10] for h in whole)
        hot = store.history(ids["Shakshuka (hot)"], namespace="notes")
        assert [h.revision_id for h in hot] == [h.revision_id for h in whole][:7]
        # at a cutoff before its name existed: the section's past under the names it had,
        # as a note's later move is followed back
        then = store.history(ids["Shakshuka (hot)"], namespace="notes", as_of="2025-01-02")
        assert [h.revision_id for h in then] == [h.revision_id for h in whole][:3]
        for cutoff in ("2025-01-01", "2025-01-02", "2025-01-03"):
            seen = store.history(ids["Shakshuka (spicy)"], namespace="notes", as_of=cutoff) \
                if cutoff != "2025-01-01" else store.history(ids["Shakshuka"],
                                                             namespace="notes", as_of=cutoff)
            assert all(h.known_at[:10] <= cutoff for h in seen), cutoff
        # a deleted section is no rename
        note.write_text("# R\n\n## Toast\n\nBread.\n")
        store.sync([Folder.of(vault)], known_at="2025-01-09")
        (*_, gone) = store.history(ids["Shakshuka"], namespace="notes")
        assert gone.deleted and gone.moved_to is None
    out = run_memory("--db", tmp_path / "m.db", "history", ids["Shakshuka (hot)"]).stdout
    assert "moved to vault/r.md#R#Shakshuka (spicy) (hides #" in out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(["Soup", "Soup (hot)", "Stew", None]),
                                st.sampled_from(["onion carrot leek", "onion carrot leek salt",
                                                 "bread butter"])), min_size=1, max_size=7),
       cut=st.integers(0, 8))
@example(steps=[(None, "onion carrot leek"), ("Soup (hot)", "onion carrot leek"),  # removed,
                ("Soup", "onion carrot leek"), ("Soup (hot)", "onion carrot leek")],  # back
         cut=0)
def test_a_section_s_history_across_random_renames_is_whole_once_and_in_time(steps, cut):
    """Whatever the renames, edits and deletions: an ID's history holds each of its own
    revisions known by the cutoff, nothing known after it, each revision once, in time."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        vault = vault_of(Path(tmp), {"r.md": "# R\n\n## Soup\n\nonion carrot leek\n"})
        cutoff = f"2025-01-{cut + 1:02d}T12:00:00Z"
        with MemoryStore.open(Path(tmp) / "m.db", embedder="none") as store:
            store.sync([Folder.of(vault)], known_at="2025-01-01")
            for day, (heading, body) in enumerate(steps, 2):
                (vault / "r.md").write_text("# R\n\n" + (f"## {heading}\n\n{body}\n"
                                                          if heading else "intro\n"))
                store.sync([Folder.of(vault)], known_at=f"2025-01-{day:02d}")
            every = [r for r in store.export(namespace="notes") if "#R#" in r.memory_id]
            for mid in {r.memory_id for r in every}:
                for as_of in (None, cutoff):
                    own = {r.revision_id for r in every if r.memory_id == mid
                           and (as_of is None or r.known_at <= as_of)}
                    if not own:
                        continue
                    listed = store.history(mid, namespace="notes", as_of=as_of)
                    ids = [h.revision_id for h in listed]
                    assert len(ids) == len(set(ids)) and own <= set(ids), (mid, as_of)
                    assert all(as_of is None or h.known_at <= as_of for h in listed)
                    assert [h.known_at for h in listed] == sorted(h.known_at for h in listed)


def test_a_new_note_in_a_deleted_note_s_inode_is_no_move(tmp_path):
    """File systems give a freed inode again at once: a note deleted and another written
    just after, of the same size, may get its inode. It is a deletion and a new note
    unless it also kept the old one's time, or most of its text."""
    from personal_memory.notes.folders import FileState
    from personal_memory.sync.folder_sync import _moves_by_inode
    from personal_memory.sync.scan import Found
    old = FileState(30, 100, 100, 5, "h", 1, 0)
    renamed = Found("b.md", FileState(30, 100, 200, 5, "h", 1, 0).stat, "b.md")
    written = Found("b.md", FileState(30, 300, 300, 5, "x", 1, 0).stat, "b.md")
    assert _moves_by_inode(["b.md"], {"b.md": renamed}, ["a.md"], {"a.md": old}) == (
        {"b.md": "a.md"}, {})
    # the same inode and size but a new time: only a candidate, judged by its text
    assert _moves_by_inode(["b.md"], {"b.md": written}, ["a.md"], {"a.md": old}) == (
        {}, {"b.md": "a.md"})
    # (a second note, so that one deletion is no mass delete when the inode is not given
    # again: whether it is depends on the file system)
    vault = vault_of(tmp_path, {"apple.md": "# Apple\n\napples are red\n",
                                "other.md": "# Other\n\nkept\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "apple.md").unlink()
        (vault / "melon.md").write_text("# Melon\n\nmelons are big\n")  # same size
        report = store.sync([Folder.of(vault)], known_at="2025-02-01")
        assert (report.files_moved, report.files_removed) == (0, 1)
        assert store.read("vault/melon.md", namespace="notes").moves == []
        week = store.changes(namespace="notes", since="2025-01-15", until="2025-02-02")
        assert sorted(n.change for n in week.notes) == ["added", "deleted"]
