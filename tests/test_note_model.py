"""The note model on tricky Markdown: sections, identities, front matter, titles, links and
tags, and the property that a note's pieces give back its text."""

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from personal_memory.notes import links, markdown as md
from personal_memory.notes.model import parse_note, reassemble


def note(text, path="Note.md"):
    return parse_note(text, "vault", path)


def section_ids(text, path="Note.md"):
    return [s.memory_id for s in note(text, path).sections]


def rebuilt(n) -> str:
    return reassemble(md.Piece(n.front_matter, 0, n.head_lines),
                      [md.Piece(s.text, s.context, s.lines) for s in n.sections])


def test_sections_follow_headings_with_obsidian_style_ids():
    text = ("intro line\n\n# Embed files\n\nabout embeds\n\n## Embed a PDF in a note\n\n"
            "pdf text\n\n### Page\n\npage text\n\n## Embed an image\n\nimage text\n")
    n = note(text, "Embed files.md")
    assert [s.memory_id for s in n.sections] == [
        "vault/Embed files.md",
        "vault/Embed files.md#Embed files",
        "vault/Embed files.md#Embed files#Embed a PDF in a note",
        "vault/Embed files.md#Embed files#Embed a PDF in a note#Page",
        "vault/Embed files.md#Embed files#Embed an image"]
    assert n.sections[3].heading_path == ("Embed files", "Embed a PDF in a note", "Page")
    assert n.sections[3].text == "### Page\n\npage text"
    assert [(s.line_start, s.line_end) for s in n.sections] == [
        (1, 2), (3, 6), (7, 10), (11, 14), (15, 17)]
    assert n.title == "Embed files"  # the file name: the first line is not a heading
    assert rebuilt(n) == text


def test_front_matter_only():
    n = note("---\ntitle: Just metadata\ntags: [a]\n---\n")
    assert n.title == "Just metadata" and n.tags == ("a",)
    # one empty section, so that the note is found by its name
    assert [(s.memory_id, s.text, s.lines) for s in n.sections] == [("vault/Note.md", "", 0)]
    assert rebuilt(n) == "---\ntitle: Just metadata\ntags: [a]\n---\n"
    # With other properties, one empty section holds them (at the block's last line).
    n = note("---\nauthor: Ann\n---\n", "Contact.md")
    (s,) = n.sections
    assert (s.memory_id, s.text, s.lines, s.properties) == ("vault/Contact.md", "", 0, "Ann")
    assert (s.line_start, s.line_end) == (3, 3)
    assert rebuilt(n) == "---\nauthor: Ann\n---\n"


def test_front_matter_with_dashes_inside_a_value():
    text = '---\ntitle: "before --- after"\nsummary: |\n  a --- b\naliases: [One, Two]\n---\n\nBody\n'
    n = note(text)
    assert n.title == "before --- after" and n.aliases == ("One", "Two")
    assert [s.text for s in n.sections] == ["Body"]
    assert "summary" not in n.sections[0].index_text  # the YAML is not body text
    assert rebuilt(n) == text


def test_malformed_front_matter_is_kept_as_text_and_named():
    text = "---\ntitle: [unclosed\n---\nbody words\n"
    n = note(text)
    assert n.front_matter_error.startswith("front matter is not valid YAML (line 2")
    assert n.front_matter == "" and n.sections[0].text.startswith("---\ntitle: [unclosed")
    assert rebuilt(n) == text
    # a typo in the block does not rename the note: its heading after the block still does
    typo = note("---\ntags: [oops\n---\n# Reading list\n\n- Dune\n")
    assert typo.front_matter_error and typo.title == "Reading list"


def test_a_template_is_titled_by_its_file_name_not_its_placeholder():
    """"# {{date:ddd D MMMM}}" (core Templates) or "<% tp.file.title %>" (Templater) is
    filled in by a note made from the template; the template itself is "Daily template"."""
    for text in ("---\ndate: {{date:YYYY-MM-DD}}\n---\n# {{date:ddd D MMMM YYYY}}\n\n## Work\n",
                 "# Weekly review — {{date:GGGG-[W]WW}}\n", "# <% tp.file.title %>\n"):
        assert parse_note(text, "v", "Templates/Daily template.md").title == "Daily template"
    assert parse_note("# Budget {2026}\n", "v", "b.md").title == "Budget {2026}"


def test_a_key_written_twice_is_named_and_the_block_kept_as_text():
    """YAML's keys are unique (Obsidian refuses such a block too): the last value is not
    taken silently. A merge (<<) and keys differing in case or type are not repeats."""
    text = "---\ntags: [a]\ntitle: T\ntags: [b]\n---\nbody words\n"
    n = note(text)
    assert n.front_matter_error == ("front matter is not valid YAML (line 4: the key "
                                    "'tags' is written twice)")
    assert n.tags == () and "tags: [b]" in n.sections[0].text and rebuilt(n) == text
    nested = note("---\nm:\n  k: 1\n  k: 2\n---\nx\n")
    assert "(line 4: the key 'k' is written twice)" in nested.front_matter_error
    fine = note("---\nbase: &b {k: 1}\nm:\n  <<: *b\n  k: 2\nTags: x\ntags: y\n"
                "1: one\n'1': two\n---\nx\n")
    assert fine.front_matter_error is None and fine.tags == ("y",)


def test_front_matter_is_never_executed():
    n = note("---\ntitle: !!python/object/apply:os.system ['echo pwned']\n---\nbody\n")
    assert n.front_matter_error and "pwned" not in n.title


def test_front_matter_a_calendar_cannot_hold_stays_text_and_the_rest_is_read():
    """YAML reads 2024-02-30 as a date and fails; one such value must not void the block
    (or stop a sync: it raised ValueError once)."""
    n = note("---\ntitle: Kept\ncreated: 0000-00-00\ndate: 2024-02-30\n"
             "updated: !!timestamp never\ntags: [a]\n---\nbody\n")
    assert n.front_matter_error is None and n.title == "Kept" and n.tags == ("a",)
    assert n.dates == {"created": "0000-00-00", "date": "2024-02-30", "updated": "never"}
    assert note("---\ndate: 2024-01-05 10:00:00\n---\nx\n").dates == {
        "date": "2024-01-05T10:00:00"}


def test_front_matter_nested_beyond_reason_is_named_not_raised():
    text = "---\na: " + "[" * 5000 + "]" * 5000 + "\n---\nbody words\n"
    n = note(text)
    assert n.front_matter_error.startswith("front matter is")
    assert rebuilt(n) == text


def test_headings_inside_fenced_code_are_not_sections():
    text = "# Real\n\n```bash\n# not a heading\necho hi\n```\n\n~~~\n## nor this\n~~~\n"
    assert section_ids(text) == ["vault/Note.md#Real"]


def test_setext_headings():
    text = "Title\n=====\n\nintro\n\nSub\n---\n\nbody\n"
    n = note(text)
    assert [s.memory_id for s in n.sections] == ["vault/Note.md#Title", "vault/Note.md#Title#Sub"]
    assert n.title == "Title"  # a level-1 heading on the first line
    assert rebuilt(n) == text


def test_a_large_table_is_split_by_rows_with_its_header_repeated():
    header = "| name | value | note |\n|---|---|---|"
    rows = [f"| row{i:03d} | {i * 7} | " + "x" * 60 + " |" for i in range(140)]  # ~10 KB
    text = "# Data\n\n" + header + "\n" + "\n".join(rows) + "\n"
    assert len(text) > 10_000
    n = note(text)
    parts = n.sections
    assert len(parts) > 5
    assert parts[0].memory_id == "vault/Note.md#Data"
    assert parts[1].memory_id == "vault/Note.md#Data (part 2)"
    for p in parts:
        assert len(p.text) <= md.MAX_CHUNK_CHARS
        lines = p.text.split("\n")
        assert all(x.startswith("| ") and x.endswith(" |") or x in ("# Data", "")
                   or x.startswith("|---") for x in lines)  # never a cut row
    for p in parts[1:]:
        assert p.text.startswith(header + "\n") and p.context == 2
    assert rebuilt(n) == text
    seen = [r for p in parts for r in p.text.split("\n") if r.startswith("| row")]
    assert seen == rows  # every row once, in order


def test_a_long_fenced_block_is_never_cut():
    code = "```\n" + "\n".join(f"line {i} " + "y" * 50 for i in range(80)) + "\n```"
    text = "# Code\n\nbefore\n\n" + code + "\n\nafter\n"
    n = note(text)
    assert any(p.text.endswith(code) or code in p.text for p in n.sections)
    assert all(p.text.count("```") % 2 == 0 for p in n.sections)
    assert rebuilt(n) == text


def test_nested_lists_split_at_top_level_items():
    items = [f"- item {i} " + "z" * 200 + f"\n  - nested {i}\n    - deeper {i}" for i in range(20)]
    text = "## List\n\n" + "\n".join(items) + "\n"
    n = note(text)
    assert len(n.sections) > 1
    for p in n.sections:
        body = p.text.split("\n")
        start = 2 if body[0] == "## List" else 0
        assert body[start].startswith("- item")  # every part starts at a top-level item
    assert rebuilt(n) == text


def test_callouts_stay_with_their_section():
    text = "## Tip\n\n> [!note] Remember\n> Callout body with #tagged words\n\nafter\n"
    n = note(text)
    assert [s.memory_id for s in n.sections] == ["vault/Note.md#Tip"]
    assert n.sections[0].tags == ("tagged",)


def test_crlf_and_bom_notes_parse_like_lf():
    raw = "\ufeff# A\r\n\r\ntext\r\n## B\r\nmore\r\n".encode()
    text = md.decode(raw)
    assert section_ids(text) == ["vault/Note.md#A", "vault/Note.md#A#B"]
    assert rebuilt(note(text)) == text


def test_repeated_headings_get_a_stable_suffix():
    text = "## Notes\none\n## Notes\ntwo\n### Sub\nx\n## Notes\nthree\n"
    assert section_ids(text) == ["vault/Note.md#Notes", "vault/Note.md#Notes (2)",
                                 "vault/Note.md#Notes#Sub", "vault/Note.md#Notes (3)"]


def test_a_bare_heading_joins_the_next_section_and_no_part_ends_on_a_heading():
    text = "# Title\n## Setup\n\nsteps\n## Last\n"
    n = note(text)
    assert [s.memory_id for s in n.sections] == ["vault/Note.md#Title#Setup"]
    assert n.sections[0].text == "# Title\n## Setup\n\nsteps\n## Last"
    assert n.title == "Title"
    long = "## Big\n\n" + "\n\n".join("para " + "w" * 700 for _ in range(6)) + "\n"
    parts = note(long).sections
    assert len(parts) > 1 and parts[0].text.startswith("## Big\n\npara ")
    for p in parts:
        assert not p.text.rstrip().split("\n")[-1].startswith("#")


def test_a_long_paragraph_is_cut_between_lines_and_no_part_is_blank():
    para = "\n".join("words " * 60 for _ in range(12))  # one paragraph of ~4,300 characters
    text = "# Release\n\n" + para + "\n\n\n\n"
    n = note(text)
    assert len(n.sections) == 3
    assert all(s.text.strip() and len(s.text) <= md.MAX_CHUNK_CHARS for s in n.sections)
    assert rebuilt(n) == text


def test_titles_follow_obsidian():
    assert note("---\ntitle: From YAML\n---\n# Heading\n").title == "From YAML"
    assert note("\n\n# First line heading\n\nbody").title == "First line heading"
    assert note("body first\n\n# Later heading\n", "dir/My Note.md").title == "My Note"
    assert note("## Level two first\n", "x.md").title == "x"


def test_a_heading_is_shown_as_written_and_named_in_ids_as_links_name_it():
    """#, ^, | and brackets separate a heading link's parts, so a memory ID (and a link)
    drops them; the title and heading path keep what was written, a wikilink by its
    text and without a block ID."""
    text = ("# C# tips\n\n## Q&A | [[Other|links]] ^abc\n\nUse LINQ.\n\n"
            "### Issue #42 [draft]\n\nbody\n")
    n = note(text, "code.md")
    assert n.title == "C# tips"
    assert [s.memory_id for s in n.sections] == [
        "vault/code.md#C tips#Q&A Other links abc",
        "vault/code.md#C tips#Q&A Other links abc#Issue 42 draft"]
    assert [s.heading_path for s in n.sections] == [
        ("C# tips", "Q&A | links"), ("C# tips", "Q&A | links", "Issue #42 [draft]")]
    assert rebuilt(n) == text


def test_links_read_as_words_and_are_kept_as_metadata():
    text = ("See [[Internal links#Heading|the guide]], [[Other note]], "
            "[[Folder/Deep note#Part]] and ![[diagram.png|300]] ![[lucide-cog.svg#icon]] "
            ":LiCog: [site](https://example.org/long/path?q=1) <https://bare.example>\n"
            "`[[not a link]]` and ```#not-a-tag```\n")
    (s,) = note(text).sections
    words = s.index_text
    assert "the guide" in words and "Internal" not in words
    assert "Other note" in words and "Deep note Part" in words and "diagram" in words
    for noise in ("lucide", "LiCog", "https", "example.org", "[[", "]]", "300"):
        assert noise not in words.replace("`[[not a link]]`", "")
    assert s.links == ("Internal links#Heading", "Other note", "Folder/Deep note#Part",
                       "diagram.png", "https://example.org/long/path?q=1",
                       "https://bare.example")


def test_other_scripts_empty_headings_and_block_ids():
    text = ("---\ntitle: 会議メモ\ntags: 日本語, projet/été\n---\n# 東京の会議\n\n内容です #タグ\n\n"
            "## مرحبا بالعالم\n\nنص عربي ^block-1a\n\n## ###\n\nno heading text\n")
    n = note(text, "メモ.md")
    assert n.title == "会議メモ" and n.tags == ("日本語", "projet/été", "タグ")
    assert [s.memory_id for s in n.sections] == [
        "vault/メモ.md#東京の会議", "vault/メモ.md#東京の会議#مرحبا بالعالم",
        "vault/メモ.md#東京の会議#(untitled)"]
    assert n.sections[1].index_text.rstrip().endswith("نص عربي")
    assert "block" not in n.sections[1].index_text
    assert rebuilt(n) == text


def test_embeds_of_blocks_pages_and_sized_images_read_as_names_only():
    (s,) = note("![[Internal links#^b15695]] ![[Engelbart.jpg#outline|100]] "
                "![[Document.pdf#page=3]] ![[Web pages#Embed a video]] "
                "![250](https://example.org/a.jpg) ![a cat](cat.png)\n").sections
    assert s.index_text.split() == ["Internal", "links", "Engelbart", "Document", "Web",
                                    "pages", "Embed", "a", "video", "a", "cat"]


def test_tags_from_front_matter_and_text_but_not_code_or_headings():
    text = ("---\ntags: [Project, area/home]\n---\n# Heading #nottag\n\n"
            "Body #Inline and #nested/tag, not#this, not #123, `#code`\n\n"
            "```\n#fenced\n```\n")
    n = note(text)
    assert n.tags == ("project", "area/home", "inline", "nested/tag")
    assert links.inline_tags("#a #b #a") == ["a", "b"]


# -- the property: pieces give back the note --------------------------------------------

LINE = st.one_of(
    st.just(""), st.just("   "),
    st.sampled_from(["# H1", "## H2", "### H3", "## H2", "Title", "=====", "---",
                     "```", "~~~", "| a | b |", "|---|---|", "| 1 | 2 |", "- item",
                     "  - nested", "> quote", "> [!note] c", "1. one", "    code",
                     "***", "#tag words", "text with [[Link|alias]]"]),
    st.text(alphabet=string.ascii_letters + " #*-|>`[]!:", min_size=1, max_size=60),
    st.builds(lambda n: "long " + "w" * n, st.integers(100, 900)),
    st.builds(lambda n: "\n".join(["wrapped paragraph line " * 8] * n), st.integers(5, 20)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=60), st.sampled_from([None, "title: t", "author: Ann"]))
def test_reassembling_the_pieces_gives_back_the_text(lines, front):
    text = "\n".join(lines)
    if front:
        text = f"---\n{front}\n---\n" + text
    n = note(text)
    expected = "\n".join("" if not x.strip() else x for x in text.split("\n"))
    got = rebuilt(n)
    # The documented change: whitespace-only lines at the end of a part come back empty.
    assert "\n".join("" if not x.strip() else x for x in got.split("\n")) == expected
    assert len(got.split("\n")) == len(text.split("\n"))
    # Every line is in exactly one piece: the head, then the parts, back to back.
    spans = [(1, n.head_lines)] if n.head_lines else []
    spans += [(s.line_start, s.line_start + s.lines - 1) for s in n.sections]
    covered = [i for a, b in spans for i in range(a, b + 1)]
    assert covered == list(range(1, len(text.split("\n")) + 1))
    # As an editor counts them: no line after a final newline.
    real = len(text.split("\n")) - text.endswith("\n")
    assert all(s.line_end <= max(real, s.line_start) for s in n.sections)
    ids = [s.memory_id for s in n.sections]
    assert len(ids) == len(set(ids))
    for s in n.sections:  # text, or the one empty section of a note with none
        assert s.text.strip() or (n.sections == (s,) and s.lines == 0)


def test_a_note_s_links_keep_the_order_the_store_has_them_in():
    """The note record lists wikilinks before Markdown links, each in order, and autolinks
    after them: a note without an autolink keeps the very list an earlier note model
    stored (a new order gave 53 unchanged help notes a revision on upgrade), while
    ``occurrences`` (the lines of `memory links`) is in the order written."""
    from personal_memory.notes import links
    text = "<https://c.example> [a](x.md) then [[B]] and [c](<https://d.example>)\n"
    (s,) = note(text).sections
    assert s.links == ("B", "x.md", "https://d.example", "https://c.example")
    assert [o.target for o in links.occurrences(text)] == [
        "https://c.example", "x.md", "B", "https://d.example"]
