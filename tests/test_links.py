"""Links as of any time: outgoing links and backlinks resolved among the notes visible at
each cutoff, across a rename and an edit; embeds read through with the target's text as
known then."""

import os

from hypothesis import given
from hypothesis import strategies as st

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from support import run_memory, vault_of


def kinds(links):
    return [(x.target, x.kind, x.note, x.section) for x in links]


def test_a_note_named_with_a_dot_is_linked_as_a_note(tmp_path):
    """[[Dr. Hoffmann]], [[23.09.2026]]: a note so named, not a file of type ". Hoffmann";
    a name with an extension and no such note is another file's, a dot in a folder's name
    changes nothing."""
    v = vault_of(tmp_path, name="v", files={
        "A.md": "See [[Dr. Hoffmann]], [[23.09.2026]], [[St. Martin#Laterne]], "
                "[[Plain]], [[scan.pdf]] and [x](Dr.%20Hoffmann.md).\n",
        "Dr. Hoffmann.md": "Telefon 040 123\n", "Daily/23.09.2026.md": "Arzt\n",
        "St. Martin.md": "# Laterne\n\nUmzug\n", "Plain.md": "plain\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(v)])
        out = s.links("v/A.md", namespace="notes")
        assert [(x.kind, x.note) for x in out.outgoing] == [
            ("note", "v/Dr. Hoffmann.md"), ("note", "v/Daily/23.09.2026.md"),
            ("section", "v/St. Martin.md"), ("note", "v/Plain.md"), ("attachment", None),
            ("note", "v/Dr. Hoffmann.md")]
        back = s.links("v/Daily/23.09.2026.md", namespace="notes").backlinks
        assert [x.source_note for x in back] == ["v/A.md"]
        # such a link to no note is to a note not written yet, not to a file
        (v / "B.md").write_text("[[Dr. Who]] [[24.12.2026]] [[v1.3]] [[scan.pdf]]\n")
        s.sync([Folder.of(v)])
        assert [x.kind for x in s.links("v/B.md", namespace="notes").outgoing] == [
            "dangling", "dangling", "dangling", "attachment"]


def test_links_and_backlinks_follow_time(tmp_path):
    v = tmp_path / "v"
    (v / "sub").mkdir(parents=True)
    (v / "A.md").write_text("# A\n\nSee [[B]] and [[B#Setup]].\nA block: ![[B#^blk]]\n"
                            "Also [c](sub/C.md), [[Missing]], ![[pic.png]] and "
                            "[site](https://example.com).\n")
    (v / "B.md").write_text("# B\n\n## Setup\n\nInstall it.\n\nThe old block text. ^blk\n")
    (v / "sub" / "C.md").write_text("---\naliases: [Sea]\n---\n# C\n\nthe sea\n")
    (v / "D.md").write_text("# D\n\nsee [[Sea]]\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(v)], known_at="2025-01-01")
        out = s.links("v/A.md", namespace="notes")
        assert kinds(out.outgoing) == [
            ("B", "note", "v/B.md", None),
            ("B#Setup", "section", "v/B.md", "v/B.md#B#Setup"),
            ("B#^blk", "block", "v/B.md", "v/B.md#B#Setup"),
            ("sub/C.md", "note", "v/sub/C.md", None),
            ("Missing", "dangling", None, None),
            ("pic.png", "attachment", None, None),
            ("https://example.com", "external", None, None)]
        assert [x.line for x in out.outgoing][:3] == [3, 3, 4]
        back = s.links("v/B.md", namespace="notes").backlinks
        assert [(x.source_note, x.line, x.embed) for x in back] == [
            ("v/A.md", 3, False), ("v/A.md", 3, False), ("v/A.md", 4, True)]
        assert [x.source_note for x in s.links("v/sub/C.md", namespace="notes").backlinks] == [
            "v/A.md", "v/D.md"]  # by path, and by alias

        # The target is renamed: [[B]] in A is dangling from then on, never before.
        os.rename(v / "B.md", v / "B2.md")
        s.sync([Folder.of(v)], known_at="2025-02-01")
        before = s.links("v/A.md", namespace="notes", as_of="2025-01-15")
        after = s.links("v/A.md", namespace="notes", as_of="2025-02-15")
        assert before.outgoing[0].kind == "note" and after.outgoing[0].kind == "dangling"
        old = s.links("v/B2.md", namespace="notes", as_of="2025-01-15")
        assert old.path_then == "v/B.md" and len(old.backlinks) == 3  # under its old name
        assert s.links("v/B2.md", namespace="notes").backlinks == []

        # A links to the new name, then the embed's target changes.
        (v / "A.md").write_text("# A\n\nBlock: ![[B2#^blk]]\n")
        s.sync([Folder.of(v)], known_at="2025-03-01")
        (v / "B2.md").write_text("# B\n\n## Setup\n\nInstall it.\n\nThe new block text. ^blk\n")
        s.sync([Folder.of(v)], known_at="2025-04-01")
        march = s.read("v/A.md", namespace="notes", as_of="2025-03-15")
        april = s.read("v/A.md", namespace="notes", as_of="2025-04-15")
        assert [e.text for e in march.embeds] == ["The old block text."]
        assert [e.text for e in april.embeds] == ["The new block text."]
        assert april.embeds[0].source == "v/B2.md#B#Setup"
        assert [x.source_note for x in s.links("v/B2.md", namespace="notes",
                                               as_of="2025-03-15").backlinks] == ["v/A.md"]
        found = s.search("new block text", namespace="notes", snippets=True)
        assert found[0].memory_id == "v/B2.md#B#Setup"
        assert found[0].embedded_in == ("v/A.md",)
    out = run_memory("--db", tmp_path / "m.db", "read", "v/A.md", "--as-of", "2025-03-15")
    assert "↳ [embedded from v/B2.md#B#Setup" in out.stdout and "The old block text." in out.stdout
    out = run_memory("--db", tmp_path / "m.db", "links", "v/B2.md")
    assert "embedded by v/A.md:3 (to B › Setup › ^blk)" in out.stdout  # a block, not a section
    out = run_memory("--db", tmp_path / "m.db", "links", "v/A.md")
    assert "line 3: embeds v/B2.md › B › Setup › ^blk" in out.stdout


def test_a_reader_sees_the_first_embed_written_by_another_connection(tmp_path):
    """A search remembers that no note embeds anything until the file changes: a reader
    that searched before the first embed existed sees it as soon as it is written."""
    v = tmp_path / "v"
    v.mkdir()
    (v / "B.md").write_text("# B\n\n## Setup\n\nInstall the pump first.\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as writer:
        writer.sync([Folder.of(v)], known_at="2025-01-01")
    with MemoryStore.open(db, read_only=True, embedder="none") as reader:
        found = reader.search("pump", namespace="notes", snippets=True)
        assert found[0].embedded_in == ()
        (v / "A.md").write_text("# A\n\n![[B#Setup]]\n")
        with MemoryStore.open(db, embedder="none") as writer:
            writer.sync([Folder.of(v)], known_at="2025-02-01")
        found = reader.search("pump", namespace="notes", snippets=True)
        assert found[0].embedded_in == ("v/A.md",)
        early = reader.search("pump", namespace="notes", snippets=True, as_of="2025-01-15")
        assert early[0].embedded_in == ()


def test_html_tags_are_no_words_and_what_they_hold_is(tmp_path):
    """A video's <div style="..."> is markup a reader never sees: its attribute words find
    nothing, the words between tags are found, and a placeholder in prose (<path>) and
    code stay as written."""
    from personal_memory.notes.links import reading_text
    assert reading_text('Press <kbd>Ctrl</kbd> in <span class="flair">Catalyst</span>') == \
        "Press  Ctrl  in  Catalyst "
    assert reading_text("obsidian open <path>, a < b > c, `<div>x</div>`") == \
        "obsidian open <path>, a < b > c, `<div>x</div>`"
    v = tmp_path / "v"
    v.mkdir()
    (v / "Video.md").write_text('# Video\n\n<div class="interface" style="position:relative;">'
                                '<iframe src="https://example.com/v" title="Demo"></iframe>'
                                '</div>\n\nA <b>guided</b> tour.\n')
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(v)])
        assert store.search("interface position", namespace="notes") == []
        assert [r.memory_id for r in store.search("guided tour", namespace="notes")] == \
            ["v/Video.md#Video"]


@given(st.lists(st.sampled_from(["<div ", "<b", ">", '"', "'", "\n", "x", "</span>", "<"]),
                max_size=400))
def test_reading_text_of_any_run_of_tag_pieces_ends(pieces):
    from personal_memory.notes.links import reading_text
    text = "".join(pieces)
    assert len(reading_text(text)) <= len(text)


def test_link_forms_obsidian_writes(tmp_path):
    """A table's escaped pipe, code in a link's text, and Markdown links by vault-root path
    or by the shortest name all resolve as Obsidian resolves them."""
    from personal_memory.notes.links import occurrences, reading_text
    table = "| name | why |\n| --- | --- |\n| [[Y\\|the why]] | x |\n"
    assert [o.target for o in occurrences(table)] == ["Y"]
    assert "| the why |" in reading_text(table)
    code = "Use [[Functions#hasTag|`hasTag`]] or [md `code`](F.md); not `[[Z]]`.\n"
    assert [o.target for o in occurrences(code)] == ["Functions#hasTag", "F.md"]
    v = tmp_path / "v"
    for folder in ("a", "b", "c"):
        (v / folder).mkdir(parents=True)
    (v / "a" / "Y.md").write_text("# Y\n\ntarget\n")
    (v / "b" / "W.md").write_text("# W\n\nanother\n")
    (v / "c" / "Src.md").write_text(
        "# Src\n\n| link | kind |\n| --- | --- |\n| [[Y\\|why]] | table |\n\n"
        "[by name](Y.md), [from the root](b/W.md), [relative](../a/Y.md), "
        "[not here](./Y.md), [code `W`](W.md)\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(v)], known_at="2025-01-01")
        out = s.links("v/c/Src.md", namespace="notes")
        assert [(x.target, x.kind, x.note) for x in out.outgoing] == [
            ("Y", "note", "v/a/Y.md"), ("Y.md", "note", "v/a/Y.md"),
            ("b/W.md", "note", "v/b/W.md"), ("../a/Y.md", "note", "v/a/Y.md"),
            ("./Y.md", "dangling", None), ("W.md", "note", "v/b/W.md")]
        back = s.links("v/a/Y.md", namespace="notes").backlinks
        assert len(back) == 3 and {x.source_note for x in back} == {"v/c/Src.md"}


def test_a_section_embed_shows_its_subsections(tmp_path):
    v = tmp_path / "v"
    v.mkdir()
    (v / "T.md").write_text("# T\n\n## Setup\n\nintro words\n\n### Pump\n\nprime the pump\n\n"
                            "#### Valve\n\nopen the valve\n\n## Other\n\nunrelated harbour\n")
    (v / "A.md").write_text("# A\n\n![[T#Setup]]\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(v)], known_at="2025-01-01")
        shown = s.read("v/A.md", namespace="notes").embeds[0].text
        assert "intro words" in shown and "prime the pump" in shown
        assert "open the valve" in shown and "harbour" not in shown
        for words in ("prime pump", "open valve", "intro words"):
            found = s.search(words, namespace="notes", snippets=True)
            assert found[0].embedded_in == ("v/A.md",), words
        other = s.search("harbour", namespace="notes", snippets=True)
        assert other[0].embedded_in == ()
        # the note:// resource reads embeds through as memory_read does
        view = s.read("v/A.md", namespace="notes")
    from personal_memory import render
    through = render.read_through(view).split("\n")
    assert through[:3] == ["# A", "", "![[T#Setup]]"]
    assert through[3].startswith("> [embedded from v/T.md") and "> prime the pump" in through
    numbered = render.numbered(1, view.text, view.embeds)
    assert [x.split("↳ ", 1)[1] for x in numbered.split("\n") if "↳" in x] == [
        x[2:] for x in through[3:] if x]


def test_reading_a_section_gives_its_subsections(tmp_path):
    v = tmp_path / "v"
    v.mkdir()
    (v / "T.md").write_text("# T\n\n## Setup\n\nintro words\n\n### Pump\n\nprime the pump\n\n"
                            "## Other\n\nunrelated harbour\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(v)], known_at="2025-01-01")
    out = run_memory("--db", tmp_path / "m.db", "read", "v/T.md", "--section", "Setup")
    assert out.returncode == 0, out.stderr
    assert "prime the pump" in out.stdout and "harbour" not in out.stdout
    out = run_memory("--db", tmp_path / "m.db", "read", "v/T.md", "--section", "Pump")
    assert "prime the pump" in out.stdout and "intro words" not in out.stdout


@given(st.lists(st.tuples(st.sampled_from(["[[T{}]]", "![[T{}]]", "[x](T{}.md)", "text",
                                           "```", ""]),
                          st.integers(0, 3)), max_size=40))
def test_link_lines_match_counting_from_the_start(rows):
    """The line of each link, counted once per piece, against counting every line before
    it from the start (the plain way), fences included."""
    from personal_memory.notes.links import occurrences
    rows = [(kind, 1 if kind == "```" else n) for kind, n in rows]  # a fence stands alone
    lines = [" ".join(kind.format(f"{i}x{k}") for k in range(n or 1))
             for i, (kind, n) in enumerate(rows)]
    text = "\n".join(lines)
    fenced, want = False, []
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and "T" in line:
            want += [(f"T{i}x{k}" + (".md" if "](" in line else ""), i)
                     for k in range(rows[i][1] or 1)]
    assert [(o.target, o.line) for o in occurrences(text)] == want


def test_markdown_links_as_obsidian_writes_them_resolve_everywhere(tmp_path):
    """URL-encoded names (what Obsidian writes with wikilinks off) and destinations in
    angle brackets with spaces (as its help writes them) are links and embeds in `links`,
    in backlinks and when the note is read: one resolution for all three."""
    v = tmp_path / "v"
    v.mkdir()
    (v / "Guide book.md").write_text("# Guide\n\nIntro.\n\n## Getting started\n\nOpen the vault.\n")
    (v / "Meeting notes.md").write_text("# Meeting\n\nIntro.\n\n## Agenda\n\nBudget review.\n")
    (v / "Index.md").write_text(
        "# Index\n\n![g](Guide%20book.md#Getting%20started)\n"
        "See [m](<Meeting notes.md>) and [a](<Meeting notes.md#Agenda>).\n"
        "![photo](<Team photo.png>) and ![agenda](<Meeting notes.md#Agenda>)\n"
        "[Read the changelog](<https://obsidian.md/changelog/>)\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(v)])
        out = s.links("v/Index.md", namespace="notes")
        assert kinds(out.outgoing) == [
            ("Guide%20book.md#Getting%20started", "section", "v/Guide book.md",
             "v/Guide book.md#Guide#Getting started"),
            ("Meeting notes.md", "note", "v/Meeting notes.md", None),
            ("Meeting notes.md#Agenda", "section", "v/Meeting notes.md",
             "v/Meeting notes.md#Meeting#Agenda"),
            ("Team photo.png", "attachment", None, None),
            ("Meeting notes.md#Agenda", "section", "v/Meeting notes.md",
             "v/Meeting notes.md#Meeting#Agenda"),
            ("https://obsidian.md/changelog/", "external", None, None)]
        back = s.links("v/Meeting notes.md", namespace="notes").backlinks
        assert [(b.source_note, b.target, b.line) for b in back] == [
            ("v/Index.md", "Meeting notes.md", 4), ("v/Index.md", "Meeting notes.md#Agenda", 4),
            ("v/Index.md", "Meeting notes.md#Agenda", 5)]
        embeds = s.read("v/Index.md", namespace="notes").embeds
        assert [(e.target, e.kind, e.source, e.text) for e in embeds] == [
            ("Guide%20book.md#Getting%20started", "section",
             "v/Guide book.md#Guide#Getting started", "## Getting started\n\nOpen the vault."),
            ("Team photo.png", "attachment", None, ""),
            ("Meeting notes.md#Agenda", "section", "v/Meeting notes.md#Meeting#Agenda",
             "## Agenda\n\nBudget review.")]
        assert [r.memory_id for r in s.search("changelog", namespace="notes")] == [
            "v/Index.md#Index"]
        for words, section in (("open vault", "v/Guide book.md#Guide#Getting started"),
                               ("budget review", "v/Meeting notes.md#Meeting#Agenda")):
            hit = [r for r in s.search(words, namespace="notes", snippets=True)
                   if r.memory_id == section]
            assert hit[0].embedded_in == ("v/Index.md",), words
    p = run_memory("--db", tmp_path / "m.db", "read", "v/Index.md",
                   env={"MEMORY_EMBEDDER": "none"})
    assert p.returncode == 0 and "Open the vault." in p.stdout and "Budget review." in p.stdout


def test_links_written_in_properties_are_links_of_the_note(tmp_path):
    """Obsidian counts a wikilink in a property (``owner: "[[Mei Chen]]"``) as a link:
    listed with its line in the front matter, and a backlink of its target, at the
    cutoffs it was written for."""
    v = vault_of(tmp_path, name="v", files={
        "Plan.md": '---\nowner: "[[Mei Chen]]"\nrelated:\n  - "[[Roadmap#Q3]]"\n'
                   'cover: "![[pic.png]]"\n---\n# Plan\n\nSee [[Roadmap]].\n',
        "Mei Chen.md": "# Mei Chen\n\nProduct.\n",
        "Roadmap.md": "# Roadmap\n\n## Q3\n\nShip.\n",
        "Bad.md": '---\nowner: "[[Mei Chen]]\n  bad: [\n---\nbody\n'})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(v)], known_at="2025-01-01")
        out = s.links("v/Plan.md", namespace="notes").outgoing
        assert kinds(out) == [("Mei Chen", "note", "v/Mei Chen.md", None),
                              ("Roadmap#Q3", "section", "v/Roadmap.md", "v/Roadmap.md#Roadmap#Q3"),
                              ("Roadmap", "note", "v/Roadmap.md", None)]
        assert [x.line for x in out] == [2, 4, 9]
        # A note whose front matter is read as text has those links in its first section,
        # counted once.
        back = s.links("v/Mei Chen.md", namespace="notes").backlinks
        assert [(x.source_note, x.line) for x in back] == [("v/Bad.md", 2), ("v/Plan.md", 2)]
        (v / "Plan.md").write_text("---\nowner: someone\n---\n# Plan\n\nSee [[Roadmap]].\n")
        s.sync([Folder.of(v)], known_at="2025-01-02")
        assert s.links("v/Mei Chen.md", namespace="notes").backlinks[1:] == []
        earlier = s.links("v/Mei Chen.md", namespace="notes", as_of="2025-01-01T12:00:00Z")
        assert [x.source_note for x in earlier.backlinks] == ["v/Bad.md", "v/Plan.md"]


def test_a_link_in_a_comment_or_a_key_of_the_properties_is_no_link(tmp_path):
    v = vault_of(tmp_path, name="v", files={
        "Plan.md": '---\n# owner: "[[Old]]"\n"[[Key]]": x\nowner: "[[New]]"\n'
                   "---\n# Plan\n\ntext\n",
        **{f"{name}.md": f"# {name}\n\nbody\n" for name in ("Old", "Key", "New")}})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(v)])
        assert [(x.target, x.line) for x in s.links("v/Plan.md", namespace="notes").outgoing
                ] == [("New", 4)]
        assert s.links("v/Old.md", namespace="notes").backlinks == []
        assert s.links("v/Key.md", namespace="notes").backlinks == []


def test_a_heading_with_a_hash_is_linked_read_and_filtered_as_written_or_as_linked(tmp_path):
    """"C# tips" is shown as written (links included); a link names it as Obsidian's do
    ([[code#C tips]]), and `read --section` and the section filter take either form."""
    from personal_memory import render
    v = vault_of(tmp_path, name="v", files={
        "code.md": "# C# tips\n\n## Issue #42\n\nUse LINQ.\n\n## Other\n\nmore\n",
        "A.md": "See [[code#C tips#Issue 42]] and [[code#Issue 42]].\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(v)])
        out = s.links("v/A.md", namespace="notes").outgoing
        assert [(x.kind, x.section, x.headings) for x in out] == [
            ("section", "v/code.md#C tips#Issue 42", ("C# tips", "Issue #42"))] * 2
        shown = render.links(s.links("v/A.md", namespace="notes"))
        assert "links to v/code.md › C# tips › Issue #42" in shown, shown
        assert "(to C# tips › Issue #42)" in render.links(s.links("v/code.md",
                                                                  namespace="notes"))
        view = s.read("v/code.md", namespace="notes")
        for name in ("Issue #42", "issue 42"):
            first, last, text = render.note_part(view, name)
            assert "## Issue #42\n\nUse LINQ." in text and "more" not in text, name
        for query in ('LINQ section:"Issue #42"', 'LINQ section:"C tips#Issue"'):
            assert [r.memory_id for r in s.search(query, namespace="notes")] == [
                "v/code.md#C tips#Issue 42"], query
