"""A note is found by its file name's words even when its first heading titles it otherwise,
and by the words of its properties (author, owner, description): the keyword index holds the
name with the title and the properties with the note's first section (the model reads the
title and text as they are)."""

from personal_memory import MemoryStore, render
from personal_memory.notes import front_matter, model
from personal_memory.notes.folders import Folder
from personal_memory.search.text import TEXT_VERSION
from personal_memory.store import connection
from support import keyword_ids, vault_of
from test_purge import every_byte

PREVIOUS_TEXT_VERSION = "nfkc+no-format+no-points+letter-folds+cjk-hangul-sea-bigrams"


def indexed_rows(store, word: str) -> int:
    """Rows of the full-text index holding ``word``, purged or not."""
    return len(list(store._db.conn.execute(  # noqa: SLF001
        "SELECT rowid FROM revisions_fts WHERE revisions_fts MATCH ?", (word,))))


def revised(store, vault, day: str, files: dict[str, str]) -> None:
    """Write ``files`` (name: text) into the folder, then sync it as known on ``day``."""
    for name, text in files.items():
        (vault / name).write_text(text)
    store.sync([Folder.of(vault)], known_at=day)


def vault_with_a_renamed_title(tmp_path):
    return vault_of(tmp_path, name="v", files={
        "zephyrine-plan.md":
            "# Roadmap for the third quarter\n\nIntro line.\n\n## Hiring\n\nTwo people.\n",
        "groceries.md": "# Groceries\n\nMilk and eggs for the plan.\n"})


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
    vault = vault_of(tmp_path, name="v", files={"qorvath ledger.md": "# Accounts\n\nthe numbers\n",
                                                "other.md": "# Other\n\nunrelated\n"})
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)])
        assert indexed_rows(store, "qorvath") == 1
        (vault / "qorvath ledger.md").unlink()
        store.sync([Folder.of(vault)])
        report = store.purge(namespace="notes", note="v/qorvath ledger.md")
        assert report.occurrences == 0
        assert indexed_rows(store, "qorvath") == 0
        assert keyword_ids(store, "other") == ["v/other.md#Other"]
    assert b"qorvath" not in every_byte(db.parent)


PAPER = """---
aliases: [codebook primer]
authors: Hervé Jégou, Matthijs Douze
venue: IEEE TPAMI
owner: "[[Mei Chen]]"
reviewers: [[Aiko Tanaka]]
tags: [reading]
cssclasses: [wide-page]
draft: true
---
# Product quantization

## Idea

Split vectors into sub-vectors.
"""


def test_a_note_is_found_by_the_words_of_its_properties(tmp_path):
    vault = vault_of(tmp_path, name="v", files={"pq.md": PAPER,
                                                "other.md": "# Other\n\nunrelated words\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        top = "v/pq.md#Product quantization#Idea"  # the first section: a bare heading joins it
        for query in ("Douze", "jegou", "TPAMI", "Mei Chen", "Tanaka"):
            assert keyword_ids(store, query) == [top], query
        # Keys are not the note's words; styling and yes/no values say nothing.
        for query in ("venue", "authors", "wide-page", "draft", "true"):
            assert keyword_ids(store, query) == [], query
        found = store.search("Douze", namespace="notes", snippets=True, group="note")
        assert found[0].memory_id == top
        # Shown by the property lines that hold the words (no fence), not by its text.
        snippet = found[0].snippet
        assert "authors: Hervé Jégou, Matthijs **Douze**" in snippet.text
        assert "---" not in snippet.text and snippet.line_start == 2
        # Found by an alias, which every section carries: shown by its text as before.
        by_alias = store.search("primer", namespace="notes", snippets=True, group="note")
        assert by_alias[0].snippet.text == "Split vectors into sub-vectors."
        # The text is the note's own: the properties are indexed, not stored in it.
        assert store.read("v/pq.md", namespace="notes").text == PAPER


def test_a_property_that_repeats_the_title_does_not_take_the_snippet(tmp_path):
    """A daily note's date property repeats its file name: asked about that day, its own
    lines are shown; a property word its title does not name still shows the property."""
    vault = vault_of(tmp_path, name="v", files={"2025-10-12 Sunday.md":
                                                "---\ndate: 2025-10-12\nmood: rainy\n---\n"
                                                "- Made a tarte aux pralines with Léa.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        for query, shown in (("what happened on 2025-10-12", "- Made a tarte aux pralines"),
                             ("rainy 2025-10-12", "mood: **rainy**")):
            found = store.search(query, namespace="notes", snippets=True, group="note")
            text = found[0].snippet.text
            assert shown in text and "**2025**" not in text, (query, text)


def test_a_property_is_found_at_the_cutoffs_it_was_written_for(tmp_path):
    vault = vault_of(tmp_path, name="v", files={
        "plan.md": "---\nowner: quillon\n---\n# Plan\n\nShip it.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        revised(store, vault, "2025-01-02", {
            "plan.md": "---\nowner: vantrell\n---\n# Plan\n\nShip it.\n"})
        assert keyword_ids(store, "quillon") == []
        assert keyword_ids(store, "vantrell") == ["v/plan.md#Plan"]
        before = store.search("quillon", namespace="notes", as_of="2025-01-01T12:00:00Z",
                              snippets=True)
        assert [r.memory_id for r in before if r.bm25 is not None] == ["v/plan.md#Plan"]
        assert before[0].snippet.text == "owner: **quillon**"  # the property as it was then
        # History tells the two revisions of the section apart (the same text).
        assert [render.revision(r).split("\n")[-1] for r in store.history(
            "v/plan.md#Plan", namespace="notes")] == [
            "    property values: quillon", "    property values: vantrell"]
        # What changed says which property, not only that the note was revised.
        (changed,) = store.changes(since="2025-01-01T12:00:00Z", namespace="notes").notes
        assert changed.sections == [] and changed.record_changes == {
            "properties": [{"owner": "quillon"}, {"owner": "vantrell"}]}
        assert render.record_changes(changed.record_changes) == [  # CLI and MCP lines
            "owner: 'quillon' -> 'vantrell'"]
        assert not [r for r in store.search("vantrell", namespace="notes",
                                            as_of="2025-01-01T12:00:00Z") if r.bm25]


def test_no_property_value_is_lost_to_its_key_s_case_or_its_yaml_tag(tmp_path):
    vault = vault_of(tmp_path, name="v", files={
        "case.md": "---\nOwner: Ulvenhart\nowner: Brisquel\n---\n# Case\n\nbody\n",
        "sets.md": "---\nteam: !!set {Quorrin, Jessamyn}\n"
                   "steps: !!omap [{first: Velloran}, {second: Tamsk}]\n"
                   "blob: !!binary aGVsbG8=\n---\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        for query in ("Ulvenhart", "Brisquel"):
            assert keyword_ids(store, query) == ["v/case.md#Case"], query
        # A note of such properties alone has its section; keys (first, second) are no words.
        for query in ("Quorrin", "Jessamyn", "Velloran", "Tamsk"):
            assert keyword_ids(store, query) == ["v/sets.md"], query
        assert keyword_ids(store, "second") == []
        changes = front_matter.property_values(
            store.read("v/case.md", namespace="notes").text, every=True)
        assert changes == {"Owner": "Ulvenhart", "owner": "Brisquel"}


def test_a_property_snippet_marks_values_not_keys_and_reads_escapes(tmp_path):
    vault = vault_of(tmp_path, name="v", files={
        "p.md": '---\nstatus: drafting\nsummary: "caf\\u00e9 vorpalqq"\n---\n# P\n\nbody.\n',
        **{f"other{i}.md": f"# Other {i}\n\nunrelated words\n" for i in range(4)}})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        found = store.search("status drafting", namespace="notes", snippets=True)
        assert "status: **drafting**" in found[0].snippet.text  # the key is no word of it
        # A value written escaped is found as YAML reads it, and shown by its line.
        found = store.search("café", namespace="notes", snippets=True)
        assert found[0].memory_id == "v/p.md#P"
        assert found[0].snippet.text.endswith('summary: **"caf\\u00e9 vorpalqq"**')
        assert found[0].snippet.line_end == 3


def test_notes_imported_before_properties_were_indexed_are_read_again(tmp_path, monkeypatch):
    vault = vault_of(tmp_path, name="v", files={"pq.md": PAPER,
                                                "plain.md": "# Plain\n\nno properties here\n"})
    db = tmp_path / "m.db"
    with monkeypatch.context() as m:  # as the previous note model imported them
        m.setattr(model, "CHUNKER_VERSION", 4)
        m.setattr(front_matter, "_properties", lambda data: "")
        with MemoryStore.open(db, embedder="none") as store:
            store.sync([Folder.of(vault)], known_at="2025-01-01")
            assert keyword_ids(store, "Douze") == []
    with MemoryStore.open(db, embedder="none") as store:
        report = store.sync([Folder.of(vault)], known_at="2025-01-02")
        assert keyword_ids(store, "Douze") == ["v/pq.md#Product quantization#Idea"]
        # Only the first section of the note with properties got a revision, its text as
        # it was; a span over the upgrade shows no note changed.
        assert (report.chunks_changed, report.chunks_added) == (1, 0)
        assert len(store.history("v/plain.md#Plain", namespace="notes")) == 1
        span = store.changes(since="2025-01-01T12:00:00Z", namespace="notes")
        assert span.notes == [], span.counts


def test_a_secret_in_a_property_is_purged_from_the_index_too(tmp_path):
    token = "zorblaxkey"
    vault = vault_of(tmp_path, name="v", files={
        "keys.md": f"---\napi_key: {token}\n---\n# Keys\n\nuse with care\n"})
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        assert keyword_ids(store, token) == ["v/keys.md#Keys"] and indexed_rows(store, token) == 1
        revised(store, vault, "2025-01-02", {
            "keys.md": "---\napi_key: redacted\n---\n# Keys\n\nuse with care\n"})
        report = store.purge(namespace="notes", matching=token, reason="leak")
        assert report.occurrences == 0, report.advice
        assert indexed_rows(store, token) == 0  # a contentless index forgets only what it is told
        assert keyword_ids(store, "redacted") == ["v/keys.md#Keys"]
    assert token.encode() not in every_byte(db.parent)


def test_a_note_of_properties_alone_is_found_by_them_and_its_name(tmp_path):
    vault = vault_of(tmp_path, name="v", files={
        "Zorbin Quell.md": "---\nrole: glassblower\ntags: [person]\n---\n",
        "other.md": "# Other\n\nunrelated\n"})
    contact = vault / "Zorbin Quell.md"
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        for query in ("glassblower", "Zorbin"):
            (found,) = [r for r in store.search(query, namespace="notes", snippets=True)
                        if r.bm25 is not None]
            assert found.memory_id == "v/Zorbin Quell.md"  # the note's own ID
            assert found.snippet.text.startswith("role: ") and found.snippet.line_start == 2
        view = store.read("v/Zorbin Quell.md", namespace="notes")
        assert view.text == contact.read_text()
        assert render.note_part(view, "v/Zorbin Quell.md")[2] == ""  # not the closing fence
        # Text written below it later is that same section's next revision.
        revised(store, vault, "2025-01-02", {
            contact.name: "---\nrole: glassblower\ntags: [person]\n---\nMet at the fair.\n"})
        assert [r.content for r in store.history("v/Zorbin Quell.md", namespace="notes")
                ] == ["", "Met at the fair."]  # oldest first
        # Without the other properties and the text, the section is empty again, and the
        # note is still found by its name and its tag.
        revised(store, vault, "2025-01-03", {contact.name: "---\ntags: [person]\n---\n"})
        assert keyword_ids(store, "Zorbin") == ["v/Zorbin Quell.md"]
        assert keyword_ids(store, "glassblower") == []
        assert [r.memory_id for r in store.search("Zorbin", namespace="notes", tags=["person"])
                ] == ["v/Zorbin Quell.md"]
        assert [s.content for s in store.read("v/Zorbin Quell.md", namespace="notes").sections
                ] == [""]


def test_an_empty_note_or_one_of_aliases_alone_is_found_by_its_name(tmp_path):
    """A note made by following a link (an empty file), or a person's note holding only
    aliases and tags, is found by its name and its aliases, as an empty section."""
    vault = vault_of(tmp_path, name="v", files={
        "Quillon Brask.md": "",
        "Marta Velk.md": "---\naliases: [Mavelka]\ntags: [person]\n---\n",
        "Blank lines.md": "\n\n  \n",
        "other.md": "# Other\n\nunrelated\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        assert keyword_ids(store, "Quillon") == ["v/Quillon Brask.md"]
        assert keyword_ids(store, "Mavelka") == ["v/Marta Velk.md"]
        assert keyword_ids(store, "Marta") == ["v/Marta Velk.md"]
        assert keyword_ids(store, "blank lines") == ["v/Blank lines.md"]
        (found,) = store.search("Quillon", namespace="notes", snippets=True)
        assert found.content == "" and found.snippet.line_start == 1
        assert "   (empty)" in render.hits(store.search("Quillon", namespace="notes",
                                                        snippets=True), "Quillon")
        # Text written later is that same section's next revision.
        revised(store, vault, "2025-01-02", {"Quillon Brask.md": "Owes me a book.\n"})
        assert [r.content for r in store.history("v/Quillon Brask.md", namespace="notes")
                ] == ["", "Owes me a book."]


def test_a_secret_written_escaped_or_folded_in_a_property_is_purged_whole(tmp_path):
    """YAML may write a value escaped or over several lines: the purge finds the record
    by the value as read, so neither its front matter nor what changes reads of it keeps
    the secret."""
    vault = vault_of(tmp_path, name="v", files={
        "keys.md": '---\nk: "ZORB\\x41LAX"\n---\n# Keys\n\ncare\n',
        "folded.md": "---\nf: >-\n  QUIXA\n  QUIXB\n---\n# Folded\n\ncare\n"})
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        assert keyword_ids(store, "zorbalax") == ["v/keys.md#Keys"]
        revised(store, vault, "2025-01-02", {"keys.md": "---\nk: x\n---\n# Keys\n\ncare\n",
                                             "folded.md": "---\nf: y\n---\n# Folded\n\ncare\n"})
        for secret in ("ZORBALAX", "QUIXA QUIXB"):  # the section and the record, each
            report = store.purge(namespace="notes", matching=secret, reason="leak")
            assert report.occurrences == 0 and len(report.revision_ids) == 2, secret
        shown = store.changes(since="2024-12-31", namespace="notes")
        assert "ZORB" not in str(shown.to_dict()) and "QUIX" not in str(shown.to_dict())
        for name in ("keys", "folded"):
            old = store.read(f"v/{name}.md", namespace="notes", as_of="2025-01-01T12:00:00Z")
            assert "ZORB" not in old.text and "QUIX" not in old.text
    assert b"ZORB" not in every_byte(db.parent) and b"QUIX" not in every_byte(db.parent)


def test_what_changed_in_properties_includes_yes_no_and_ignores_a_broken_block(tmp_path):
    vault = vault_of(tmp_path, name="v", files={
        "task.md": "---\ndone: false\nowner: Ann\n---\n# Task\n\nShip.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        revised(store, vault, "2025-01-02", {
            "task.md": "---\ndone: true\nowner: Ann\n---\n# Task\n\nShip.\n"})
        revised(store, vault, "2025-01-03", {  # broken
            "task.md": "---\ndone: true\nowner: [Ann\n---\n# Task\n\nShip.\n"})

        def record_changes(since, until):
            (n,) = store.changes(since=since, until=until, namespace="notes").notes
            return n.record_changes
        assert record_changes("2025-01-01T12:00:00Z", "2025-01-02T12:00:00Z") == {
            "properties": [{"done": "false"}, {"done": "true"}]}
        # A block that no longer reads says nothing of its properties (not "removed").
        assert "properties" not in record_changes("2025-01-02T12:00:00Z", "2025-01-03T12:00:00Z")
        revised(store, vault, "2025-01-04", {
            "task.md": "---\ndone: true\nowner:\nrank: 2\n---\n# Task\n\nShip.\n"})
        revised(store, vault, "2025-01-05", {
            "task.md": "---\ndone: true\nowner: Bo\n---\n# Task\n\nShip.\n"})
        # An empty value and a removed property read as such, not as Python's '' and None.
        assert render.record_changes(record_changes(
            "2025-01-04T12:00:00Z", "2025-01-05T12:00:00Z")) == [
            "owner: (empty) -> 'Bo'", "rank: '2' -> (not set)"]


def test_a_note_found_by_its_name_is_listed_with_the_score_it_ranks_by(tmp_path):
    vault = vault_of(tmp_path, name="v", files={
        "Quillmark.md": "# Quillmark\n\n## Setup\n\nInstall it first.\n\n## Usage\n\nRun it.\n",
        "other.md": "# Other\n\nA quillmark appears here once among many other words of "
                    "a longer paragraph about something else entirely.\n",
        **{f"filler{i}.md": f"# Filler {i}\n\nplain words\n" for i in range(3)}})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        by_note = store.search("quillmark", namespace="notes", snippets=True, group="note")
        by_section = store.search("quillmark", namespace="notes", group="section")
    assert [r.note for r in by_note] == ["v/Quillmark.md", "v/other.md"]
    # Shown from its top, with the score of the section that ranked the note first.
    assert by_note[0].memory_id == "v/Quillmark.md#Quillmark#Setup"  # (a bare heading joins)
    ranked = [r for r in by_section if r.note == "v/Quillmark.md"]
    assert ranked[0].memory_id == "v/Quillmark.md#Quillmark#Usage"  # the shortest wins
    best = ranked[0].score
    assert ranked[1].score < best
    assert by_note[0].score == best >= by_note[1].score
