"""A note is found by its file name's words even when its first heading titles it otherwise:
the keyword index holds the name with the title (the model reads the title as it is)."""

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from personal_memory.search.text import TEXT_VERSION
from personal_memory.store import connection
from support import keyword_ids
from test_purge import every_byte

PREVIOUS_TEXT_VERSION = "nfkc+no-format+no-points+letter-folds+cjk-hangul-sea-bigrams"


def vault_with_a_renamed_title(tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "zephyrine-plan.md").write_text(
        "# Roadmap for the third quarter\n\nIntro line.\n\n## Hiring\n\nTwo people.\n")
    (vault / "groceries.md").write_text("# Groceries\n\nMilk and eggs for the plan.\n")
    return vault


def test_a_note_is_found_by_its_file_name_and_shown_from_its_top(tmp_path):
    vault = vault_with_a_renamed_title(tmp_path)
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        assert keyword_ids(store, "zephyrine") == [
            "v/zephyrine-plan.md#Roadmap for the third quarter",
            "v/zephyrine-plan.md#Roadmap for the third quarter#Hiring"]
        found = store.search("zephyrine", namespace="notes", snippets=True, group="note")
        assert found[0].memory_id == "v/zephyrine-plan.md#Roadmap for the third quarter"
        assert found[0].snippet.line_start == 3  # the top section's first line
        # The name's words count once: a word the title already holds is not added again.
        groceries = store.search("groceries", namespace="notes")
        assert groceries[0].note == "v/groceries.md"
        assert store._db.index_texts([groceries[0].revision_id])[  # noqa: SLF001
            groceries[0].revision_id][0] == "Groceries \nGroceries"  # title, heading


def test_the_name_follows_a_move(tmp_path):
    vault = vault_with_a_renamed_title(tmp_path)
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "zephyrine-plan.md").rename(vault / "quillon.md")
        store.sync([Folder.of(vault)], known_at="2025-01-02")
        assert {r.note for r in store.search("quillon", namespace="notes")
                if r.bm25 is not None} == {"v/quillon.md"}
        assert keyword_ids(store, "zephyrine") == []
        # At a cutoff before the move, the note was known by its old name.
        before = store.search("zephyrine", namespace="notes", as_of="2025-01-01T12:00:00Z")
        assert before[0].note == "v/zephyrine-plan.md"


def test_a_file_indexed_without_names_is_reindexed_by_its_first_writer(tmp_path, monkeypatch):
    vault = vault_with_a_renamed_title(tmp_path)
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)])
        before = [r.to_dict() for r in store.export()]
    with monkeypatch.context() as m:  # the previous version's rule re-indexes it its way
        m.setattr(connection, "TEXT_VERSION", PREVIOUS_TEXT_VERSION)
        MemoryStore.open(db, embedder="none").close()
    with MemoryStore.open(db, embedder="none", read_only=True) as reader:
        assert keyword_ids(reader, "zephyrine") == []  # read its way, without the names
        assert len(keyword_ids(reader, "roadmap")) == 2
    with MemoryStore.open(db, embedder="none") as store:  # a writer re-indexes
        assert [r.to_dict() for r in store.export()] == before  # revisions untouched
        assert store._db.meta("text_version") == TEXT_VERSION  # noqa: SLF001
        assert len(keyword_ids(store, "zephyrine")) == 2
        assert keyword_ids(store, "milk") == ["v/groceries.md#Groceries"]


def test_a_purged_note_leaves_no_word_of_its_name_in_the_index(tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "qorvath ledger.md").write_text("# Accounts\n\nthe numbers\n")
    (vault / "other.md").write_text("# Other\n\nunrelated\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)])
        assert store._db.term_documents(["qorvath"])[1] == {"qorvath": 1}  # noqa: SLF001
        (vault / "qorvath ledger.md").unlink()
        store.sync([Folder.of(vault)])
        report = store.purge(namespace="notes", note="v/qorvath ledger.md")
        assert report.occurrences == 0
        assert store._db.term_documents(["qorvath"])[1] == {"qorvath": 0}  # noqa: SLF001
        assert keyword_ids(store, "other") == ["v/other.md#Other"]
    assert b"qorvath" not in every_byte(db.parent)
