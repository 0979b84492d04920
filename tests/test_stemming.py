"""The keyword arm stems (FTS5's Porter over unicode61), and a file indexed before that is
re-indexed once, without touching a revision."""

import apsw

from personal_memory import MemoryStore
from support import ids, vault_of


def test_a_word_finds_its_other_forms(store):
    store.remember("role", "I prefer equity research.", namespace="n")
    store.remember("trip", "We are travelling to Lisbon.", namespace="n")
    assert [r.memory_id for r in store.search("prefers", namespace="n")
            if r.bm25 is not None] == ["role"]
    assert [r.memory_id for r in store.search("travel", namespace="n")
            if r.bm25 is not None] == ["trip"]
    assert ids(store.search("preferring", namespace="n", limit=1)) == ["role"]


def test_a_verb_finds_the_noun_porter_stems_apart(tmp_path):
    """decide and decision, include and inclusion: each finds the other, on both paths,
    and the snippet marks the form the note uses."""
    from personal_memory.notes.folders import Folder
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Review.md").write_text("# Review\n\nDecision: use an outbox table.\n"
                                     "\nAttendees: Ana, Rui.\n")
    (vault / "Plan.md").write_text("# Plan\n\nNothing yet about inclusion.\n")
    for i in range(4):
        (vault / f"f{i}.md").write_text(f"# F{i}\n\nAn outbox of letters {i}.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        for search in (store.search, store.search_reference):
            found = search("what did we decide about the outbox", namespace="notes")
            assert found[0].note == "v/Review.md", [r.note for r in found]
            assert [r.note for r in search("decide", namespace="notes")] == ["v/Review.md"]
            assert [r.note for r in search("include", namespace="notes")] == ["v/Plan.md"]
            assert search("include", namespace="notes").missing == []
        found = store.search("what did we decide about the outbox", namespace="notes",
                             snippets=True)
        assert found[0].snippet.text.startswith("**Decision**: use an")
        assert [(r.memory_id, r.score) for r in store.search("decide outbox", namespace="notes")] \
            == [(r.memory_id, r.score) for r in store.search_reference("decide outbox",
                                                                       namespace="notes")]


def test_a_verb_finds_its_irregular_past(tmp_path):
    """A question asks "what did I buy", a journal says "bought": the verb finds its past,
    on both paths, and the snippet marks the note's form; a form that is as often another
    word ("saw", "left") is no form of its verb, and a past is not searched as its verb
    ("the icon is gone" is no question about going)."""
    from personal_memory.notes.folders import Folder
    vault = vault_of(tmp_path, {
        "Saturday.md": "# Saturday\n\nBought a used amp, 260 €.\n\nWent to the lake.\n",
        "Tools.md": "# Tools\n\nThe saw is in the shed, left of the door.\n",
        "Hike.md": "# Hike\n\nWe go hiking on Sundays.\n",
        **{f"f{i}.md": f"# F{i}\n\nAn amp of letters {i}.\n" for i in range(4)}}, "v")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        for search in (store.search, store.search_reference):
            assert [r.note for r in search("what did I buy", namespace="notes")] == [
                "v/Saturday.md"]
            assert {r.note for r in search("where did we go", namespace="notes")} == {
                "v/Saturday.md", "v/Hike.md"}
            assert not search("what did I see", namespace="notes")
            assert not search("when did I leave", namespace="notes")
            assert [r.note for r in search("the lake is gone", namespace="notes")] == [
                "v/Saturday.md"]  # by "lake": "gone" is not "go"
        found = store.search("what did I buy", namespace="notes", snippets=True)
        assert found[0].snippet.text.startswith("**Bought** a used amp"), found[0].snippet
        assert [(r.memory_id, r.score) for r in store.search("buy amp", namespace="notes")] \
            == [(r.memory_id, r.score) for r in store.search_reference("buy amp",
                                                                       namespace="notes")]


def make_legacy(path):
    """What an older version wrote: an unstemmed index and no tokenizer in meta."""
    conn = apsw.Connection(str(path))
    conn.execute("DROP TABLE revisions_fts; DELETE FROM meta WHERE key = 'tokenizer';"
                 "CREATE VIRTUAL TABLE revisions_fts USING fts5(title, content, content='', "
                 "tokenize='unicode61 remove_diacritics 2');")
    rows = list(conn.execute("SELECT id, coalesce(title, ''), content FROM revisions "
                             "WHERE deleted = 0"))
    conn.executemany("INSERT INTO revisions_fts (rowid, title, content) VALUES (?,?,?)", rows)
    conn.close()


def test_an_unstemmed_file_is_reindexed_once_and_readers_follow(tmp_path):
    db = tmp_path / "old.db"
    with MemoryStore.open(db) as s:
        s.remember("role", "I prefer equity research.", namespace="n", known_at="2025-01-01")
        s.remember("gone", "preferences changed", namespace="n", known_at="2025-01-02")
        s.forget("gone", namespace="n", known_at="2025-01-03")
    make_legacy(db)
    with MemoryStore.open(db, read_only=True, vector_backend="python") as reader:
        # Before any write open, a reader queries the old index with the old tokenizer.
        assert not [r for r in reader.search("prefers", namespace="n") if r.bm25 is not None]
        history = [r.to_dict() for r in reader.export()]
        with MemoryStore.open(db) as writer:  # re-indexes
            assert writer.health().revisions == 3
        # The long-running reader notices and takes up the new tokenizer.
        hits = [r for r in reader.search("prefers", namespace="n") if r.bm25 is not None]
        assert [r.memory_id for r in hits] == ["role"]
        assert [r.to_dict() for r in reader.search("prefers", namespace="n")] == [
            r.to_dict() for r in reader.search_reference("prefers", namespace="n")]
        assert [r.to_dict() for r in reader.export()] == history  # revisions untouched
        at_old_cutoff = reader.search("preferences", namespace="n", as_of="2025-01-02")
        assert ids(at_old_cutoff)[0] == "gone"  # the forgotten text is still indexed
