"""Characters a reader does not see: a soft hyphen, a zero-width space or joiner, a word
joiner or a bidi control inside a word leaves it findable by the word as read, and a bidi
control in a file name is shown escaped where a name is cited (never reordering the line),
while structured content keeps the real name."""

import asyncio
import json
import subprocess
import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from support import run_memory, user_env, word_hits

HIDDEN = {"soft hyphen": "\u00ad", "zero-width space": "\u200b", "ZWJ": "\u200d",
          "ZWNJ": "\u200c", "word joiner": "\u2060", "RLO": "\u202e", "LRI": "\u2066",
          "PDI": "\u2069"}


@pytest.mark.parametrize("what", sorted(HIDDEN))
def test_a_word_with_an_invisible_character_is_found_by_the_word(tmp_path, what):
    ch = HIDDEN[what]
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    (vault / "a.md").write_text(f"# Note\n\nthe pass{ch}word is long\n")
    (vault / f"Ze{ch}bra crossing.md").write_text("stripes on the road\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    hits = word_hits(run_memory("--db", db, "search", "password", "--json").stdout)
    assert [h["memory_id"] for h in hits] == ["vault/a.md#Note"]
    hits = word_hits(run_memory("--db", db, "search", "zebra", "--json").stdout)
    assert [h["note"] for h in hits] == [f"vault/Ze{ch}bra crossing.md"]
    # a query typed with the character reads the same
    hits = word_hits(run_memory("--db", db, "search", f"pass{ch}word", "--json").stdout)
    assert [h["memory_id"] for h in hits] == ["vault/a.md#Note"]


OLD_INDEX = """
import sys
import personal_memory.search.text as text, personal_memory.store.connection as conn
conn.TEXT_VERSION = text.TEXT_VERSION = "nfkc+cjk-bigrams"  # the rule before this one
from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
with MemoryStore.open(sys.argv[1], embedder="none") as s:
    s.sync([Folder.of(sys.argv[2])])
"""


def found_once_a_writer_re_indexes(tmp_path, text: str, word: str,
                                   rule: str = "nfkc+cjk-bigrams") -> None:
    """A note indexed by an earlier ``rule`` is not found by ``word``; after a writer's
    sync (which re-indexes the file by this rule), it is."""
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    (vault / "a.md").write_text(f"# Note\n\n{text}\n")
    old_index = OLD_INDEX.replace('"nfkc+cjk-bigrams"', repr(rule))
    done = subprocess.run([sys.executable, "-c", old_index, str(db), str(vault)],
                          env=user_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert word_hits(run_memory("--db", db, "search", word, "--json").stdout) == []
    assert run_memory("--db", db, "sync", vault).returncode == 0  # a writer re-indexes
    hits = word_hits(run_memory("--db", db, "search", word, "--json").stdout)
    assert [h["memory_id"] for h in hits] == ["vault/a.md#Note"]


def test_a_file_indexed_by_the_previous_rule_is_re_indexed(tmp_path):
    # (parts of three letters: two held words of four or more would be read as one)
    found_once_a_writer_re_indexes(tmp_path, "the sea\u00adside is long", "seaside")


def test_a_bidi_control_in_a_file_name_is_shown_escaped(tmp_path):
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    real = "invoice \u202etxt.exe \u2066x\u2069.md"
    (vault / real).write_text("quokka facts\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    shown = "vault/invoice \\u202etxt.exe \\u2066x\\u2069.md"
    cli = run_memory("--db", db, "search", "quokka")
    assert cli.returncode == 0 and shown in cli.stdout, cli.stdout
    assert not any(c in cli.stdout for c in "\u202e\u2066\u2069")
    changes = run_memory("--db", db, "changes", "--since", "2000-01-01")
    assert shown in changes.stdout and "\u202e" not in changes.stdout
    assert json.loads(run_memory("--db", db, "search", "quokka", "--json").stdout)["results"][0][
        "note"] == f"vault/{real}"
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "personal_memory", "--db", str(db), "serve"],
                                   env=user_env())

    async def go():
        async with Client(params, mode="legacy") as c:
            return await c.call_tool("memory_search", {"query": "quokka"})
    found = asyncio.run(go())
    text = found.content[0].text
    assert shown in text and not any(c in text for c in "\u202e\u2066\u2069"), text
    assert found.structured_content["results"][0]["note"] == f"vault/{real}"


def test_a_name_cited_escaped_can_be_pasted_back(tmp_path):
    """A line break or a bidi control in a file name is printed escaped; read, links and
    history take the name as printed too (the name as given is tried first)."""
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    (vault / "new\nline \u202e.md").write_text("# Odd\n\nquokka facts\n")
    (vault / "back\\nslash.md").write_text("a backslash and an n\n")  # a real "\\n"
    assert run_memory("--db", db, "sync", vault).returncode == 0
    cited = "vault/new\\nline \\u202e.md"
    assert cited in run_memory("--db", db, "search", "quokka").stdout
    read = run_memory("--db", db, "read", cited)
    assert read.returncode == 0 and "quokka facts" in read.stdout, read.stderr
    assert run_memory("--db", db, "links", cited).returncode == 0
    history = run_memory("--db", db, "history", cited + "#Odd")
    assert history.stdout.startswith("#") and "source " + cited in history.stdout, history.stdout
    literal = run_memory("--db", db, "read", "vault/back\\nslash.md")
    assert literal.returncode == 0 and "a backslash" in literal.stdout, literal.stderr
    # an assistant passes back the name as the MCP text cited it
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "personal_memory", "--db", str(db), "serve"],
                                   env=user_env())

    async def go():
        async with Client(params, mode="legacy") as c:
            return [await c.call_tool("memory_read", {"note": cited}),
                    await c.call_tool("memory_links", {"note": cited}),
                    await c.call_tool("memory_history", {"memory_id": cited + "#Odd"}),
                    await c.call_tool("memory_read", {"note": "vault/back\\nslash.md"})]
    read, links, history, literal = asyncio.run(go())
    assert not read.is_error and "quokka facts" in read.content[0].text, read.content
    assert not links.is_error and not history.is_error, (links.content, history.content)
    assert history.structured_content["revisions"], history.structured_content
    assert not literal.is_error and "a backslash" in literal.content[0].text


def test_a_name_and_its_cited_form_read_back_one_to_one():
    """No two names are cited alike: a real line break is ``\\n``, a backslash written
    before an n is doubled; each cited name reads back as the name, on one line."""
    from hypothesis import given, settings, strategies as st
    from personal_memory.render import name, unname
    parts = st.sampled_from(["\\", "n", "x", "0", "a", "u", "2", "e", "\n", "\t", "\r",
                             "\u202e", "\x85", "b"])

    @settings(max_examples=500, deadline=None)
    @given(st.lists(parts, max_size=12).map("".join))
    def check(text):
        cited = name(text)
        assert unname(cited) == text, (text, cited)
        assert not any(c in cited for c in "\n\r\t\u202e\x85"), cited
    check()
    assert name("a\nb.md") == "a\\nb.md" and name("a\\nb.md") == "a\\\\nb.md"


def test_two_names_that_differ_by_an_escape_are_read_apart(tmp_path):
    """A real line break and a written backslash-n in two file names: each is read by
    the name the search cites."""
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    (vault / "same\nname.md").write_text("zebra with a line break\n")
    (vault / "same\\nname.md").write_text("zebra with a backslash\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    out = run_memory("--db", db, "search", "zebra").stdout
    for cited, text in (("vault/same\\nname.md", "line break"),
                        ("vault/same\\\\nname.md", "backslash")):
        assert cited in out, out
        read = run_memory("--db", db, "read", cited)
        assert read.returncode == 0 and f"zebra with a {text}" in read.stdout, read.stderr


def test_folding_finds_each_occurrence_as_written():
    """find_folded returns, for every place fold(needle) occurs in fold(text), the span
    of text as written that folds to it; linear in the text (format runs included)."""
    from hypothesis import given, settings, strategies as st
    from personal_memory.search.text import find_folded, fold
    letters = st.sampled_from(list("aAäÄａﬁßsS\u0308\u00ad\u200b\u202e ") + ["u\u0308", "ü"])
    texts = st.lists(letters, max_size=40).map("".join)

    @settings(max_examples=400, deadline=None)
    @given(texts, texts)
    def check(text, needle):
        wanted = fold(needle)
        found = find_folded(text, needle)
        if not wanted:
            assert found == []
            return
        folded = fold(text)
        count = sum(folded.startswith(wanted, i) for i in range(len(folded)))
        assert len(found) == count
        for form in found:
            assert form in text and wanted in fold(form)
    check()
    long = "ä" + "\u200b" * 200_000 + "ä"
    assert find_folded(long, "a") == ["ä", "ä"]
    assert find_folded("Mu\u0308ller MU\u0308", "mü") == ["Mu\u0308", "MU\u0308"]


def test_a_persian_word_s_parts_count_from_the_rule_that_reads_it(tmp_path):
    """A Persian word written with a ZWNJ is indexed by its parts too (فایل‌ها is found by فایل) from this
    rule on; a file indexed by the rule before is read its way until a writer re-indexes
    it."""
    from personal_memory.search import text
    before = "nfkc+no-format+no-points+letter-folds+cjk-hangul-sea-bigrams+names+properties"
    assert text.normalize_text("فایل\u200cها", before) == "فایلها"
    assert text.normalize_text("فایل\u200cها") == "فايل ها فايلها"  # its parts, and whole
    assert text.normalize_text("فایل\u200cها", query=True) == "فايلها"  # asked for whole
    assert text.normalize_text("फ़्लाइट\u200cx") == "फ्लाइटx"  # elsewhere it only shapes letters
    found_once_a_writer_re_indexes(tmp_path, "این فایل\u200cها را", "فایل", before)


def test_a_query_is_quoted_with_its_joiners_and_its_controls_escaped():
    from personal_memory import render
    assert render.quoted("فایل\u200cها") == "'فایل\u200cها'"  # as a Persian reader writes it
    assert render.quoted("a\u202eb\nc") == "'a\\u202eb\\nc'"  # never reorders the line
