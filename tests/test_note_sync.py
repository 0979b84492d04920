"""Notes through the folder sync: a section keeps its identity when others change, tags
filter before ranking, and a whole note can be read as it was at any time."""

import asyncio
import json
import re
import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from personal_memory import MemoryStore
from personal_memory.errors import InvalidArgument, NotFound
from personal_memory.notes.folders import Folder
from support import ids, keyword_ids, run_memory, word_hits


def sections(n: int, edit: dict | None = None) -> str:
    edit = edit or {}
    parts = ["---\ntags: [project]\n---\n\nIntro of the long note.\n"]
    for i in range(n):
        body = edit.get(i, f"Body of section {i} with word{i}.")
        parts.append(f"## Section {i}\n\n{body}\n")
    return "\n".join(parts)


def revision_count(store) -> int:
    return store.stats().counts.revisions


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    return root


def test_editing_one_section_of_twenty_appends_only_that_section(store, vault):
    note = vault / "long.md"
    note.write_text(sections(20))
    f = Folder.of(vault)
    first = store.sync([f])
    assert first.chunks_added == 21  # the intro and twenty sections
    before = revision_count(store)
    note.write_text(sections(20, {7: "Section seven rewritten\n\nwith a second paragraph."}))
    r = store.sync([f])
    assert (r.chunks_added, r.chunks_changed, r.chunks_tombstoned) == (0, 1, 0)
    assert revision_count(store) == before + 1  # that section only: not even the record
    hist = store.history("vault/long.md#Section 7", namespace="notes")
    assert len(hist) == 2 and "rewritten" in hist[1].content
    assert len(store.history("vault/long.md#Section 8", namespace="notes")) == 1
    assert len(store.history("vault/long.md#", namespace="notes")) == 1

    # Inserting a section: that section, and the record (the order changed).
    text = note.read_text().replace("## Section 3\n", "## Inserted\n\nnew words\n\n## Section 3\n")
    note.write_text(text)
    r = store.sync([f])
    assert (r.chunks_added, r.chunks_changed, r.chunks_tombstoned) == (1, 0, 0)
    assert revision_count(store) == before + 3
    assert len(store.history("vault/long.md#", namespace="notes")) == 2

    # Renaming a heading retires the old ID with a tombstone and starts a new one.
    note.write_text(text.replace("## Section 12\n", "## Renamed twelve\n"))
    r = store.sync([f])
    assert (r.chunks_added, r.chunks_changed, r.chunks_tombstoned) == (1, 0, 1)
    assert store.get("vault/long.md#Section 12", namespace="notes") is None
    assert store.history("vault/long.md#Section 12", namespace="notes")[-1].deleted
    assert store.get("vault/long.md#Renamed twelve", namespace="notes").content.endswith(
        "word12.")

    # Reading the note at each time gives back what the file held then.
    view = store.read("vault/long.md", namespace="notes")
    assert view.text == note.read_text() and view.tags == ["project"]
    assert [s.memory_id for s in view.sections][:5] == [
        "vault/long.md", "vault/long.md#Section 0", "vault/long.md#Section 1",
        "vault/long.md#Section 2", "vault/long.md#Inserted"]
    lines = note.read_text().split("\n")
    for s in view.sections:
        assert "\n".join(lines[s.line_start - 1:s.line_end]).rstrip("\n") == s.content


def test_history_of_a_note_path_that_is_no_memory_names_its_sections(store, vault):
    (vault / "trip.md").write_text("# Trip\n\nThe ferry leaves at 9:40.\n\n## Packing\n\nBoots.\n")
    (vault / "C# tips.md").write_text("# Tips\n\nUse LINQ.\n")
    store.sync([Folder.of(vault)])
    with pytest.raises(NotFound) as refused:
        store.history("vault/trip.md", namespace="notes")
    assert "'vault/trip.md#Trip', 'vault/trip.md#Trip#Packing'" in str(refused.value)
    with pytest.raises(NotFound) as sharp:  # a "#" in the file's name
        store.history("vault/C# tips.md", namespace="notes")
    assert "'vault/C# tips.md#Tips'" in str(sharp.value)
    with pytest.raises(NotFound) as earlier:  # nothing known after the cutoff is named
        store.history("vault/trip.md", namespace="notes", as_of="2001-01-01")
    assert "#Trip" not in str(earlier.value)
    assert [r.memory_id for r in store.history("vault/trip.md#Trip", namespace="notes")] == [
        "vault/trip.md#Trip"]


def test_history_says_a_revision_repeats_the_text_rather_than_repeating_it(store, vault):
    """A section whose span in the file changed (blank lines after it) is a revision of
    the same text: the history says so instead of printing the text twice."""
    from personal_memory import render
    note = vault / "r.md"
    note.write_text("# R\n\n## Toast\n\nBread.\n\n## Eggs\n\nEggs in sauce.\n\n## End\n\nx\n")
    store.sync([Folder.of(vault)])
    note.write_text("# R\n\n## Toast\n\nBread.\n\n## Eggs\n\nEggs in sauce.\n\n\n\n## End\n\nx\n")
    store.sync([Folder.of(vault)])
    note.write_text("# R\n\n## Toast\n\nBread.\n\n## Eggs\n\nEggs in a spicy sauce.\n")
    store.sync([Folder.of(vault)])
    revs = store.history("vault/r.md#R#Eggs", namespace="notes")
    assert [r.content for r in revs][:2] == ["## Eggs\n\nEggs in sauce."] * 2
    text = render.history(revs).split("\n")
    assert len(text) == 6 and text[1].endswith("Eggs in sauce. — R"), text
    assert text[3] == "    (the same text; its lines in the file changed)"
    assert "spicy" in text[5]


def test_read_at_a_cutoff_deleted_and_unknown(store, vault):
    note = vault / "n.md"
    note.write_text("# N\n\nfirst version\n")
    store.sync([Folder.of(vault)], known_at="2025-01-01")
    note.write_text("# N\n\nsecond version\n\n## More\n\nadded later\n")
    store.sync([Folder.of(vault)], known_at="2025-02-01")
    note.unlink()
    (vault / "other.md").write_text("keeps the folder from looking empty\n")
    store.sync([Folder.of(vault)], known_at="2025-03-01", allow_mass_delete=True)
    old = store.read("vault/n.md", namespace="notes", as_of="2025-01-15")
    assert old.text == "# N\n\nfirst version\n" and len(old.sections) == 1
    assert old.sections[0].known_at == "2025-01-01T00:00:00Z"
    mid = store.read("vault/n.md", namespace="notes", as_of="2025-02-15")
    assert mid.text.endswith("added later\n") and len(mid.sections) == 2
    gone = store.read("vault/n.md", namespace="notes")
    assert gone.deleted and gone.known_at == "2025-03-01T00:00:00Z" and gone.sections == []
    with pytest.raises(NotFound, match="'vault/n.md' is not known .* as of 2024-12-31"):
        store.read("vault/n.md", namespace="notes", as_of="2024-12-31")
    with pytest.raises(NotFound, match="did you mean 'vault/n.md'"):
        store.read("n.md", namespace="notes")
    with pytest.raises(NotFound, match="COLLECTION/path.md"):
        store.read("none.md", namespace="notes")
    # Search results name the note, so a client can read it whole next.
    (hit,) = store.search("second", namespace="notes", as_of="2025-02-15")
    assert hit.note == "vault/n.md" and hit.heading_path == ["N"] and hit.title == "N"


def test_tags_filter_before_ranking_without_leaks(store, vault):
    (vault / "a.md").write_text("---\ntags: [garden]\n---\ntomato watering schedule\n")
    (vault / "b.md").write_text("tomato seeds #garden/veg\n\n## Later\n\ntomato harvest\n")
    (vault / "c.md").write_text("tomato soup recipe\n")
    store.sync([Folder.of(vault)], known_at="2025-01-01")
    (vault / "c.md").write_text("tomato soup recipe #garden\n")
    (vault / "a.md").write_text("tomato watering schedule\n")  # the tag is removed
    store.sync([Folder.of(vault)], known_at="2025-02-01")
    then = store.search("tomato", namespace="notes", tags=["garden"], as_of="2025-01-15")
    assert sorted(ids(then)) == ["vault/a.md", "vault/b.md", "vault/b.md#Later"]
    now = store.search("tomato", namespace="notes", tags=["Garden"])
    assert sorted(ids(now)) == ["vault/b.md", "vault/b.md#Later", "vault/c.md"]
    assert ids(store.search("tomato", namespace="notes", tags=["garden/veg"])) == [
        "vault/b.md", "vault/b.md#Later"] or sorted(ids(store.search(
            "tomato", namespace="notes", tags=["garden/veg"]))) == ["vault/b.md",
                                                                    "vault/b.md#Later"]
    assert ids(store.search("tomato", namespace="notes", tags=["nothing"])) == []
    for as_of in ("2025-01-15", None):
        for tags in (["garden"], ["garden/veg", "other"], None):
            fast = store.search("tomato harvest", namespace="notes", tags=tags, as_of=as_of)
            ref = store.search_reference("tomato harvest", namespace="notes", tags=tags,
                                         as_of=as_of)
            assert [(r.memory_id, r.bm25, r.bm25_rank) for r in fast] == [
                (r.memory_id, r.bm25, r.bm25_rank) for r in ref]
    with pytest.raises(InvalidArgument, match="tags: must be a list"):
        store.search("tomato", namespace="notes", tags="garden")
    with pytest.raises(InvalidArgument, match="is not a tag name"):
        store.search("tomato", namespace="notes", tags=["#"])


def test_the_cli_names_each_problem_of_a_sync_once(tmp_path, vault):
    (vault / "b.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (vault / "c.md").write_bytes(b"nul \x00 byte")
    done = run_memory("--db", tmp_path / "m.db", "--embedder", "none", "sync", vault)
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert out.count("front matter is not valid YAML") == 1, out
    assert out.count("c.md") == 1, out


def test_links_and_front_matter_do_not_flood_the_index(store, vault):
    (vault / "a.md").write_text("---\npermalink: some/where\ntitle: Alpha note\n"
                                "aliases: [First letter]\n---\n"
                                "See [[Beta#Setup|the beta guide]] and "
                                "[docs](https://docs.example.com/permalink).\n")
    (vault / "b.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    r = store.sync([Folder.of(vault)])
    (warning,) = [w.to_dict() for w in r.warnings]  # the problem's words are libyaml's
    assert warning["path"] == "b.md" and re.fullmatch(
        r"front matter is not valid YAML \(line 2: .*'\]'.*\); imported as text",
        warning["reason"]), warning
    assert keyword_ids(store, "permalink") == []  # not in the YAML, not in a link's URL
    assert keyword_ids(store, "Setup") == []  # the alias is what a reader sees
    assert keyword_ids(store, "beta guide") == ["vault/a.md"]
    assert keyword_ids(store, "letter") == ["vault/a.md"]  # aliases are title text
    assert keyword_ids(store, "unclosed") == ["vault/b.md"]  # bad YAML: kept as text
    rec = store.get("vault/a.md", namespace="notes")
    assert rec.title == "Alpha note" and rec.content.startswith("See [[Beta#Setup|")
    assert store.get("vault/a.md#", namespace="notes").metadata["links"] == [
        "Beta#Setup", "https://docs.example.com/permalink"]


def test_status_lists_notes_whose_front_matter_was_read_as_text(tmp_path, vault):
    """The warning outlives the sync that logged it: status names the note until its
    front matter reads again, or the note is gone."""
    db = tmp_path / "m.db"
    (vault / "ok.md").write_text("---\ntags: [fine]\n---\nbody\n")
    (vault / "bad.md").write_text("---\ntags: [oops\n---\nbody\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    with MemoryStore.open(db, embedder="none") as store:
        (warning,) = store.status("notes").daemon.warnings
        assert (warning.collection, warning.path) == ("vault", "bad.md")
        assert warning.reason.startswith("front matter is not valid YAML")
    out = run_memory("--db", db, "status").stdout
    assert "warning       vault/bad.md: front matter is not valid YAML" in out, out
    (vault / "bad.md").write_text("---\ntags: [fixed]\n---\nbody\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    assert "warning" not in run_memory("--db", db, "status").stdout


def test_cli_read_tag_and_mcp_read(tmp_path, vault):
    db = tmp_path / "m.db"
    (vault / "plan.md").write_text("# Plan\n\nship the lighthouse #work\n\n## Risks\n\nfog\n")
    (vault / "home.md").write_text("lighthouse postcard\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    p = run_memory("--db", db, "search", "lighthouse", "--tag", "work", "--json")
    assert [r["memory_id"] for r in word_hits(p.stdout)] == ["vault/plan.md#Plan"]
    p = run_memory("--db", db, "read", "vault/plan.md")
    assert p.returncode == 0 and "lines 5-7  vault/plan.md#Plan#Risks" in p.stdout, p.stdout
    assert p.stdout.rstrip().endswith("fog")
    data = json.loads(run_memory("--db", db, "read", "vault/plan.md", "--json").stdout)
    assert data["title"] == "Plan" and data["tags"] == ["work"]
    p = run_memory("--db", db, "read", "vault/nope.md")
    assert p.returncode == 2 and "not known" in p.stderr and p.stderr.count("\n") == 1

    async def go():
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "personal_memory.mcp_server", "--db", str(db)],
                                       env={})
        async with Client(params) as c:
            read = await c.call_tool("memory_read", {"note": "vault/plan.md",
                                                        "outline": True})
            tagged = await c.call_tool("memory_search", {"query": "lighthouse",
                                                         "tags": ["work"]})
            missing = await c.call_tool("memory_read", {"note": "vault/nope.md"})
            return read, tagged, missing
    read, tagged, missing = asyncio.run(go())
    note = read.structured_content
    assert note["text"] == (vault / "plan.md").read_text()
    assert read.content[0].text.count((vault / "plan.md").read_text().split("\n")[2]) == 1
    assert [s["memory_id"] for s in note["sections"]] == ["vault/plan.md#Plan",
                                                          "vault/plan.md#Plan#Risks"]
    hit = tagged.structured_content["results"][0]
    assert hit["note"] == "vault/plan.md" and hit["heading_path"] == ["Plan"]
    assert missing.is_error and "not known" in missing.content[0].text
