"""Search answers grouped after ranking: one result per note (CLI and MCP by default), or
per section; the limit counts groups, found however deep the ranking must be read; what
was left out is counted against the limit asked; snippets come from the piece that
matched best."""

import json
import re

import numpy as np
import pytest
from ground_truth import ToyEmbedder

from personal_memory import MemoryStore
from personal_memory.errors import InvalidArgument
from personal_memory.notes.folders import Folder
from personal_memory.search.snippets import best_line
from support import run_memory, vault_of


@pytest.fixture
def crowded(tmp_path):
    """One note whose twelve short sections outrank every other note's one mention."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "big.md").write_text("# Big\n\n" + "\n\n".join(
        f"## Lighthouse {k}\n\nLighthouse lighthouse lighthouse {k}." for k in range(12))
        + "\n")
    for i in range(6):
        (vault / f"other{i}.md").write_text(
            f"# Other {i}\n\nA long page of harbour notes, boats, nets and ropes, where the "
            f"lighthouse is named once, with many more words about the sea {i}.\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
    return db


def test_five_results_are_five_notes_however_deep_they_rank(crowded):
    with MemoryStore.open(crowded, read_only=True, embedder="none") as s:
        rows = s.search("lighthouse", namespace="notes", limit=10)
        assert {r.note for r in rows} == {"vault/big.md"}  # twice the limit: one note
        notes = s.search("lighthouse", namespace="notes", limit=5, group="note",
                         snippets=True)
        assert len(notes) == 5 and len({r.note for r in notes}) == 5
        assert notes[0].note == "vault/big.md"
        # every other section of it: the next two shown, the others by their lines
        assert len(notes[0].more) == 2 and len(notes[0].also) == 9
        assert {m.snippet.line_start for m in notes[0].more}.isdisjoint(
            a for a, _ in notes[0].also)
        assert all(m.heading_path[-1].startswith("Lighthouse") for m in notes[0].more)
        assert all(not r.also and not r.more for r in notes[1:])
        # More notes than match: all that match, and the search stops at the end.
        assert len(s.search("lighthouse", namespace="notes", limit=50, group="note")) == 7
        # By section: the limit counts sections.
        assert len(s.search("lighthouse", namespace="notes", limit=5, group="section")) == 5


def test_a_query_naming_one_note_answers_with_its_sections(crowded):
    with MemoryStore.open(crowded, read_only=True, embedder="none") as s:
        for query in ("lighthouse file:big", "lighthouse path:vault/big.md"):
            rows = s.search(query, namespace="notes", limit=5, group="note")
            assert len(rows) == 5 and {r.note for r in rows} == {"vault/big.md"}, query
        # A filter that keeps several notes still answers by note.
        rows = s.search("lighthouse file:other", namespace="notes", limit=5, group="note")
        assert len({r.note for r in rows}) == 5


def test_a_note_named_by_its_filters_answers_whatever_the_words(tmp_path):
    """'file:big what happened': the user named the note (or a few), so its sections are
    the answer however far they are in meaning, none left out; filters that keep many
    notes, or a search without a model (nothing ranks a row holding no word), still say
    no answer."""
    class Distant(ToyEmbedder):
        @staticmethod
        def no_answer_below(rows: int) -> float:
            return 1.01  # every row is too far in meaning

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "big.md").write_text("".join(f"## Part {k}\n\nLighthouse {k}.\n\n"
                                          for k in range(12)))
    for i in range(6):
        (vault / f"other{i}.md").write_text(f"# Other {i}\n\nHarbour nets {i}.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=Distant()) as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        s.embed_pending()
        for search in (s.search, s.search_reference):
            for query in ("file:big zzqx", "path:vault/big.md zzqx", 'section:"Part 3" zzqx',
                          "file:big lighthouse"):
                found = search(query, namespace="notes", limit=20)
                assert found.no_answer is None and found.left_out == 0, query
                assert {r.note for r in found} == {"vault/big.md"}, query
                assert len(found) == (1 if "Part" in query else 12), query
            found = search("file:other1 file:other2 zzqx", namespace="notes", limit=20)
            assert {r.note for r in found} == {"vault/other1.md", "vault/other2.md"}  # a few
            found = search("file:other zzqx", namespace="notes", limit=20)  # 6: too many
            assert not found and "below 1.01" in found.no_answer
            found = search("lighthouse", namespace="notes", limit=20)
            assert found.left_out == 6 and len(found) == 12  # the bar leaves out the rest
    with MemoryStore.open(tmp_path / "m.db", read_only=True, embedder="none") as s:
        assert "contains a word" in s.search("file:big zzqx", namespace="notes").no_answer


def test_the_api_ranks_sections_unless_asked_and_refuses_an_unknown_group(crowded):
    with MemoryStore.open(crowded, read_only=True, embedder="none") as s:
        assert len(s.search("lighthouse", namespace="notes", limit=3)) == 3
        with pytest.raises(InvalidArgument, match="group: 'notes' is not one of"):
            s.search("lighthouse", namespace="notes", group="notes")


def test_the_cli_answers_by_note_and_by_section_on_request(crowded):
    p = run_memory("--db", crowded, "search", "lighthouse", "--limit", "3")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("3 results") and p.stdout.count("vault/big.md") == 1
    assert "(also line" in p.stdout and re.search(r"\n   lines? \d", p.stdout)  # two shown
    by_note = json.loads(run_memory("--db", crowded, "--json", "search", "lighthouse",
                                    "--limit", "3").stdout)["results"]
    assert len({r["note"] for r in by_note}) == 3 and len(by_note[0]["also"]) == 9
    assert len(by_note[0]["more"]) == 2
    by_section = json.loads(run_memory("--db", crowded, "--json", "search", "lighthouse",
                                       "--limit", "3", "--sections").stdout)["results"]
    assert [r["note"] for r in by_section] == ["vault/big.md"] * 3


def test_left_out_counts_against_the_limit_asked(tmp_path):
    """Rows that share no word with the query and are less similar than the bar fill no
    place; the count is of the places they would have taken, grouped or not."""
    with MemoryStore.open(tmp_path / "m.db", embedder=ToyEmbedder()) as s:
        s.remember("hit", "quokkabeacon blinks", namespace="n")
        for i in range(30):
            s.remember(f"noise{i}", f"cabbage{i} turnip{i} parsnip{i}", namespace="n")
        s.embed_pending()
        rows = s.search("quokkabeacon", namespace="n", limit=10)
        grouped = s.search("quokkabeacon", namespace="n", limit=10, group="note")
    assert [r.memory_id for r in rows] == [r.memory_id for r in grouped] == ["hit"]
    assert 0 < rows.left_out <= 9
    assert grouped.left_out == rows.left_out  # not against the deeper window (19)


def test_left_out_by_note_counts_notes_not_the_sections_of_a_note_shown(tmp_path):
    """By note, a place is a note: the unrelated sections of the note shown fill none, and
    a tag that only one note has leaves no place to fill."""
    beacon = "---\ntags: [work]\n---\n# Beacon\n\nThe quokkabeacon blinks.\n\n" + "".join(
        f"## Part {k}\n\ncabbage{k} turnip{k}\n\n" for k in range(6))
    vault = vault_of(tmp_path, {"beacon.md": beacon, **{
        f"other{i}.md": f"# Other {i}\n\nparsnip{i} leek{i}\n" for i in range(3)}})
    with MemoryStore.open(tmp_path / "m.db", embedder=ToyEmbedder()) as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        s.embed_pending()
        for search in (s.search, s.search_reference):
            rows = search("quokkabeacon", namespace="notes", limit=10)
            assert [r.note for r in rows] == ["vault/beacon.md"] and rows.left_out == 9
            assert search("quokkabeacon tag:work", namespace="notes", limit=10).left_out == 6
        by_note = s.search("quokkabeacon", namespace="notes", limit=10, group="note")
        assert [r.note for r in by_note] == ["vault/beacon.md"]
        assert by_note.left_out == 3  # the three other notes
        tagged = s.search("quokkabeacon tag:work", namespace="notes", limit=10, group="note")
        assert [r.note for r in tagged] == ["vault/beacon.md"] and tagged.left_out == 0


def test_more_shows_only_sections_whose_own_text_holds_a_query_word(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "cabin.md").write_text(
        "# The cabin\n\nThe wifi password at the cabin is pinecone-42.\n\n"
        "## Getting there\n\nTake the coastal rail to Elm Point, then the ferry at 9:40.\n\n"
        "## Firewood\n\nThe wifi router sits in the shed beside the firewood.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)])
        # Every section holds the note's title ("cabin"): "Getting there" matched by it
        # alone, and says nothing about the wifi; "Firewood" holds "wifi" itself.
        (first,) = s.search("what is the wifi password at the cabin?", namespace="notes",
                            limit=5, group="note", snippets=True)
        assert first.heading_path == ["The cabin"]
        assert [m.heading_path[-1] for m in first.more] == ["Firewood"]
        (ferry,) = s.search("cabin ferry", namespace="notes", limit=5, group="note",
                            snippets=True)
        shown = [ferry.heading_path[-1]] + [m.heading_path[-1] for m in ferry.more]
        assert "Getting there" in shown


def test_a_note_found_by_its_name_alone_is_shown_from_its_top(tmp_path):
    """An alias (or the title) is every section's title text: the shortest section won
    on it, and showed lines that have nothing to do with the note's name."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Home.md").write_text(
        "---\naliases: [lobbyzebra, Start page]\n---\n# Home\n\n"
        "Welcome to my notes. This is the start of everything.\n\n"
        "## Work\n\n- [[Projects]] and the quarterly plan\n- [[Meetings]] from standups\n\n"
        "## Personal\n\n[[Homelab]] · [[Talk]]\n")
    (vault / "other.md").write_text("# Other\n\nnothing here\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)])
        rows = s.search("lobbyzebra", namespace="notes", limit=5)
        assert rows[0].heading_path == ["Home", "Personal"]  # by section: the shortest
        (home,) = s.search("lobbyzebra", namespace="notes", limit=5, group="note",
                           snippets=True)
        assert home.heading_path == ["Home"] and home.snippet.line_start == 6
        # a section whose own text holds a word of the query comes before the top
        (page,) = s.search("start page", namespace="notes", limit=5, group="note",
                           snippets=True)
        assert page.heading_path == ["Home"] and "**start**" in page.snippet.text
        (plan,) = s.search("lobbyzebra quarterly", namespace="notes", limit=5,
                           group="note", snippets=True)
        assert plan.heading_path == ["Home", "Work"]


def test_a_question_beyond_the_name_is_shown_by_the_section_nearest_it_in_meaning(tmp_path):
    """Found by its alias alone, no section's own text holding a word of the question (the
    text is in another language): the question asks more than the name, so the section
    nearest it in meaning is shown, not the note's top; the name alone still opens at the
    top."""
    class Near(ToyEmbedder):
        def _vector(self, text):
            v = np.zeros(self.dimensions, dtype=np.float32)
            v[0 if "уксус" in text or "vinegar" in text else 1] = 1.0
            return v
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "borscht.md").write_text(
        "---\naliases: [borscht]\n---\n# Борщ\n\nБабушкин рецепт.\n\n## Ингредиенты\n\n- свёкла\n"
        "- уксус, чтобы свёкла не потеряла цвет\n\n## Приготовление\n\nВарить час.\n")
    (vault / "other.md").write_text("# Other\n\nnothing here\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=Near()) as s:
        s.sync([Folder.of(vault)])
        s.embed_pending()
        why = s.search("why is vinegar in the borscht", namespace="notes", limit=5,
                       group="note", snippets=True)[0]
        assert why.heading_path == ["Борщ", "Ингредиенты"], why.heading_path
        name = s.search("borscht", namespace="notes", limit=5, group="note",
                        snippets=True)[0]
        assert name.heading_path == ["Борщ"]


def test_a_bare_parent_heading_joined_to_a_section_does_not_make_it_worth_showing(tmp_path):
    """A heading with no text of its own ("# The cabin" right before "## Getting there")
    is joined to the next section; its words are the heading path's, not that section's."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "cabin.md").write_text(
        "# The cabin\n\n"
        "## Getting there\n\nTake the coastal rail to Elm Point, then the ferry.\n\n"
        "## Wifi\n\nThe wifi password is pinecone-42.\n\n"
        "## Firewood\n\nThe wifi router sits in the shed beside the firewood.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)])
        (first,) = s.search("what is the wifi password at the cabin?", namespace="notes",
                            limit=5, group="note", snippets=True)
        assert first.heading_path == ["The cabin", "Wifi"]
        assert [m.heading_path[-1] for m in first.more] == ["Firewood"]
        assert (5, 5) in first.also  # "Getting there" is still named
        (wifi,) = s.search("wifi", namespace="notes", limit=5, group="note", snippets=True)
        assert [m.heading_path[-1] for m in wifi.more] == ["Firewood"]


def test_the_snippet_is_taken_from_the_piece_that_matched():
    lines = ["Intro line with the word.", "", "Second paragraph.", "Its second line."]
    scores = [(1, 1), (0, 0), (0, 0), (0, 0)]
    assert best_line(lines, scores) == 0
    assert best_line(lines, scores, (2, 3)) == 2  # no query word there: its first line
    assert best_line(lines, [(1, 1), (0, 0), (0, 0), (2, 2)], (2, 3)) == 3
    assert best_line(lines, scores, (5, 9)) == 0  # a span the text does not have
    assert best_line([], [], None) == 0


def test_a_question_with_one_answer_gets_it_alone_in_the_cli_and_over_mcp(tmp_path):
    """With the model: the other notes share only function words ("where", "does", "the")
    with the question, so they are no match, and both edges count them the same way."""
    import asyncio
    import os
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    vault = tmp_path / "vault"
    vault.mkdir()
    notes = {"cat.md": "# Cat\n\nMy cat likes to sleep in the warm sun by the window.\n",
             "shop.md": "# Shopping\n\nBuy oat milk, bread and apples at the market.\n",
             "team.md": "# Team\n\nThe team meets on Tuesdays to review the roadmap.\n",
             "beacon.md": "# Beacon\n\nThe quokkabeacon blinks twice at dusk.\n"}
    for name, text in notes.items():
        (vault / name).write_text(text)
    db = tmp_path / "m.db"
    e5 = {"MEMORY_EMBEDDER": "e5"}
    assert run_memory("--db", db, "sync", vault, env=e5, timeout=300).returncode == 0
    question = "where does the quokkabeacon blink"
    p = run_memory("--db", db, "search", question, "--limit", "10", env=e5, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("1 result") and "vault/beacon.md" in p.stdout
    assert "No more results: nothing else holds a word of the query" in p.stdout

    async def ask():
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "personal_memory", "--db", str(db), "serve"],
            env={"MEMORY_EMBEDDER": "e5", "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
        async with Client(server) as c:
            return await c.call_tool("memory_search", {"query": question, "limit": 10})
    answer = asyncio.run(ask())
    out = answer.structured_content
    assert out["count"] == 1 and out["results"][0]["note"] == "vault/beacon.md"
    assert out["left_out"] == 3 and "(No more results: nothing else" in answer.content[0].text


@pytest.mark.parametrize("seed", range(3))
def test_grouping_equals_grouping_the_whole_ranked_list(tmp_path, seed):
    """The windowed search gives what grouping every ranked row would give, on random
    vaults: the same notes (or sections) in the same order, with the same best rows."""
    import random

    from personal_memory.search import grouping, syntax
    rng = random.Random(seed)
    words = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron"]
    vault = tmp_path / "vault"
    vault.mkdir()
    for n in range(rng.randint(5, 25)):
        sections = [f"## S{k}\n\n" + " ".join(rng.choices(words, k=rng.randint(1, 12)))
                    for k in range(rng.randint(1, 15))]
        (vault / f"n{n}.md").write_text(f"# N{n}\n\n" + "\n\n".join(sections) + "\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        for _ in range(6):
            query = " ".join(rng.sample(words, rng.randint(1, 3)))
            if rng.random() < 0.3:
                query += f" file:n{rng.randint(0, 4)}.md"
            limit = rng.randint(1, 8)
            every = s.search(query, namespace="notes", limit=1000)
            for group in ("note", "section"):
                got = s.search(query, namespace="notes", limit=limit, group=group)
                key = grouping.key_for(group, syntax.parse(query), list(every))
                want = [g[0] for g in grouping.groups(list(every), limit, key)]
                assert [r.memory_id for r in got] == [r.memory_id for r in want], (
                    query, limit, group)


def test_a_note_matching_in_every_section_gets_a_bounded_number_of_snippets(tmp_path,
                                                                           monkeypatch):
    """A note of 400 sections that all match is one result; only its first rows are given
    snippets (the one shown, ``more`` and ``also``), not each of the hundreds read."""
    from personal_memory.search import grouping, snippets
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "log.md").write_text("# Log\n\n" + "\n\n".join(
        f"## Day {k}\n\nThe kumquat tree, day {k}." for k in range(400)) + "\n")
    (vault / "other.md").write_text("# Other\n\nA kumquat once.\n")
    built = []
    real = snippets._ScoredLines.snippet

    def counted(self, *args, **kwargs):
        built.append(1)
        return real(self, *args, **kwargs)
    monkeypatch.setattr(snippets._ScoredLines, "snippet", counted)
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)])
        found = s.search("kumquat", namespace="notes", limit=5, group="note", snippets=True)
    assert sorted(r.note for r in found) == ["vault/log.md", "vault/other.md"]
    assert len(built) <= 2 * grouping.GROUP_ROWS
    log = next(r for r in found if r.note == "vault/log.md")
    assert 0 < len(log.also) < grouping.GROUP_ROWS
