"""Snippets: the lines that matched, with no heading line (the heading path names it) and
not cut one line before the sentence or list item ends."""

import os

from hypothesis import given, settings, strategies as st

from personal_memory import MemoryStore, render
from personal_memory.notes.folders import Folder


def found(tmp_path, files: dict[str, str], query, limit=10):
    """The results with snippets of ``query`` over a vault of ``files`` (name: text)."""
    vault = tmp_path / "vault"
    vault.mkdir(exist_ok=True)
    for name, text in files.items():
        (vault / name).write_text(text)
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        return s.search(query, namespace="notes", snippets=True, limit=limit)


def search(tmp_path, text, query):
    return found(tmp_path, {"n.md": text}, query)[0].snippet


def test_the_heading_line_is_not_repeated(tmp_path):
    snip = search(tmp_path, "# Garden\n\n## Tomatoes\n\nWater the tomatoes at dawn.\n",
                  "water dawn")
    assert snip.text == "**Water** the tomatoes at **dawn**."
    assert (snip.line_start, snip.line_end) == (5, 5)


def test_words_the_headings_name_do_not_pick_the_line(tmp_path):
    # "graph" and "filters" are the note's title and the section's heading: the reader sees
    # them above the snippet, so every line is about them and the section's start is shown
    text = ("# Graph\n\n## Filters\n\nThis part decides which dots appear.\n\n"
            "- **Search files** narrows the dots to a search term.\n"
            "- **Tags** toggles tags.\n" + "- **Other** toggles other things.\n" * 6 +
            "\nLinks to hidden files never show in the graph filters either.\n")
    files = {"Graph.md": text}
    files.update({f"other{i}.md": f"# Other {i}\n\nA note about cats number {i}.\n"
                  for i in range(6)})
    snip = found(tmp_path, files, "graph filters")[0].snippet
    assert snip.text.startswith("This part decides") and "Search files" in snip.text
    assert snip.line_start == 5
    # a word the headings do not name still picks its line
    snip = found(tmp_path, files, "graph filters hidden")[0].snippet
    assert "**hidden**" in snip.text and snip.line_end == 16


def test_a_line_ending_in_a_colon_brings_the_line_it_announces(tmp_path):
    answer = "Ctrl+P on Windows and Linux, Cmd+P on macOS" + ", or from the ribbon" * 12 + "."
    text = (f"# Palette\n\nSome words before.\nTo open the command palette, press:\n"
            f"{answer}\n\nUnrelated closing line.\n")
    snip = search(tmp_path, text, "open command palette")
    assert snip.text.endswith(answer) and (snip.line_start, snip.line_end) == (3, 5)


def test_a_finished_sentence_is_not_extended_past_the_width(tmp_path):
    words = " ".join(f"word{i}" for i in range(50))
    text = f"# T\n\nThe zebra line ends here.\n{words} {words}.\n"
    snip = search(tmp_path, text, "zebra")
    assert snip.text == "The **zebra** line ends here." and snip.line_end == 3


def test_marks_only_on_words_with_weight_and_never_inside_the_notes_own_markup(tmp_path):
    # "the" and "to" are in every note: they carry no weight
    files = {f"filler{i}.md": f"# Filler {i}\n\nGo to the shop number {i}.\n"
             for i in range(8)}
    files["palette.md"] = (
        "# Palette\n\nTo open the **Command palette**, press `Ctrl+P` or use "
        "[[Command palette|the palette]]; the command palette lists every command.\n")
    text = found(tmp_path, files, "open the command palette")[0].snippet.text
    # the note's own bold is dropped, so that every mark is a word of the query
    assert text == ("To **open** the **Command** **palette**, press `Ctrl+P` or use "
                    "[[Command palette|the palette]]; the **command** **palette** lists "
                    "every **command**.")


def test_the_notes_own_bold_never_reads_as_a_found_word(tmp_path):
    files = {f"filler{i}.md": f"# Filler {i}\n\nGo to the shop number {i}.\n"
             for i in range(8)}
    files["promo.md"] = ("# Promotion\n\nThe promotion goes to the **May cycle**, not "
                         "March; `a**b**` and **see [[Plan]]** stay as written.\n")
    text = found(tmp_path, files, "promotion plan")[0].snippet.text
    assert text == ("The **promotion** goes to the May cycle, not March; `a**b**` and "
                    "**see [[Plan]]** stay as written.")


def test_a_notes_stray_or_coded_stars_stay_as_written_and_the_page_marks_only_words(
        tmp_path):
    """Only plain pairs of the note's own ** are dropped: not in code, not 2**10 or a
    glob, not nested or unclosed; and the page highlights the query's words alone."""
    from personal_memory.web.text import marked
    files = {f"filler{i}.md": f"# Filler {i}\n\nGo to the shop number {i}.\n"
             for i in range(8)}
    files["glob.md"] = "# Glob\n\nThe pattern src/**/*.py finds every wombat module.\n"
    files["power.md"] = "# Power\n\nCompute 2**10 then multiply by the wombat factor.\n"
    files["nest.md"] = "# Nest\n\n**nested **bold** wombat**\n"
    files["code.md"] = ("# Code\n\n```python\ndef __init__(self):  # wombat\n"
                        "    self.x = \"**raw**\"\n```\n")
    for name, shown in (("glob.md", "src/**/*.py finds every <mark>wombat</mark> module."),
                        ("power.md", "2**10 then multiply by the <mark>wombat</mark>")):
        one = {name: files[name], **{k: v for k, v in files.items() if k.startswith("f")}}
        (tmp_path / name).mkdir()
        text = found(tmp_path / name, one, "wombat")[0].snippet.text
        assert shown in str(marked(text)), (name, text)
    (tmp_path / "nest").mkdir()  # nested: kept as written (a word in emphasis is not marked)
    one = {"nest.md": files["nest.md"], **{k: v for k, v in files.items() if k.startswith("f")}}
    assert found(tmp_path / "nest", one, "wombat")[0].snippet.text == "**nested **bold** wombat**"
    one = {"code.md": files["code.md"], **{k: v for k, v in files.items() if k.startswith("f")}}
    (tmp_path / "code").mkdir()
    text = found(tmp_path / "code", one, "wombat")[0].snippet.text
    assert "def __init__(self):" in text and '"**raw**"' in text, text


def test_code_in_a_fence_is_quoted_as_written_never_marked(tmp_path):
    """A mark inside code changes it: "/**notes**/" is not the path to copy."""
    text = ("# Proxy\n\nServe the notes under a path:\n\n```json\n"
            '{"source": "/notes/", "destination": "https://example.com/notes"}\n'
            "```\n\nThe notes load from there.\n")
    snip = search(tmp_path, text, "notes path")
    assert '{"source": "/notes/", "destination": "https://example.com/notes"}' in snip.text
    assert "Serve the **notes** under a **path**:" in snip.text
    assert "The **notes** load from there." in snip.text


def test_an_announcing_line_brings_the_step_after_a_blank_line(tmp_path):
    """The command palette's shortcut is on the line after "To run a command ...:"."""
    intro = "The palette lets you run any command from the keyboard. " * 4
    text = (f"# Palette\n\n{intro}\n\nTo run a command from the palette:\n\n"
            "1. Press `Ctrl+P` to open the palette. You can also open it from the ribbon, "
            "which is on the left of the window, with the palette's icon in it.\n"
            "2. Type the command's name.\n")
    snip = search(tmp_path, text, "keyboard shortcut palette")
    shown = snip.text.replace("**", "")
    assert shown.endswith("To run a command from the palette:\n1. Press `Ctrl+P` to open "
                          "the palette. …")  # the long line's first sentence, and more
    assert (snip.line_start, snip.line_end) == (3, 7)


def test_a_block_id_line_is_not_shown(tmp_path):
    text = "# Refunds\n\nFull refunds within 7 days of purchase.\n^refund-window\n\nMore.\n"
    snip = search(tmp_path, text, "refund window")
    assert "^refund-window" not in snip.text
    assert snip.text.replace("**", "") == "Full refunds within 7 days of purchase.\nMore."


def test_a_snippet_shows_what_its_lines_embed(tmp_path):
    results = found(tmp_path, {
        "Security.md": "# Security\n\n## Hosting\n\nServers are hosted in these places:\n\n"
                       "> Asia: Singapore\n> Europe: Frankfurt\n^regions\n",
        "Regions.md": "# Regions\n\n## Available regions\n\nThe following regions are "
                      "available:\n\n![[Security#^regions]]\n"}, "available regions")
    top = results[0]
    assert top.note == "vault/Regions.md" and "![[Security#^regions]]" in top.snippet.text
    assert [e.text for e in top.embeds] == ["> Asia: Singapore\n> Europe: Frankfurt"]
    assert "   > > Europe: Frankfurt" in render.hits(results, None, scores=False)


def test_an_embed_in_a_snippet_is_read_as_of_the_cutoff(tmp_path):
    """Nothing learnt after the cutoff reaches a result through what its lines embed."""
    vault = tmp_path / "vault"
    vault.mkdir()
    security = vault / "Security.md"
    security.write_text("# Security\n\nServers are hosted in:\n\n> Asia: Singapore\n^regions\n")
    (vault / "Regions.md").write_text(
        "# Regions\n\nThe following regions are available:\n\n![[Security#^regions]]\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        security.write_text("# Security\n\nServers are hosted in:\n\n> Asia: Singapore\n"
                            "> Europe: Frankfurt\n^regions\n")
        s.sync([Folder.of(vault)], known_at="2025-02-01")
        then = s.search("available regions", namespace="notes", snippets=True,
                        as_of="2025-01-15")
        now = s.search("available regions", namespace="notes", snippets=True)
    assert [e.text for e in then[0].embeds] == ["> Asia: Singapore"]
    assert [e.text for e in now[0].embeds] == ["> Asia: Singapore\n> Europe: Frankfurt"]
    assert then[0].embeds[0].known_at == "2025-01-01T00:00:00Z"


def test_a_list_of_embeds_reads_through_the_first_few(tmp_path):
    files = {f"part{i}.md": f"Part {i} says hello.\n" for i in range(5)}
    files["index.md"] = ("# Index\n\nThe parts, embedded:\n"
                         + "".join(f"![[part{i}]]\n" for i in range(5)))
    top = found(tmp_path, files, "parts embedded")[0]
    assert top.note == "vault/index.md" and top.snippet.text.count("![[part") == 5
    assert [e.text for e in top.embeds] == [f"Part {i} says hello." for i in range(3)]


# Every CommonMark form (and Obsidian's own) in which "zeppelin" is not prose, each beside
# a prose "zeppelin" that is marked: (the note's body, the snippet).
FORMS = {
    "link destination": ("See the [zeppelin plan](https://example.com/zeppelin-plan) today.",
                         "See the [**zeppelin** plan](https://example.com/zeppelin-plan) today."),
    "link title": ('Read [the plan](https://example.com/p "the zeppelin plan") on the zeppelin.',
                   'Read [the plan](https://example.com/p "the zeppelin plan") on the **zeppelin**.'),
    "autolink": ("Go to <https://example.com/zeppelin> for the zeppelin.",
                 "Go to <https://example.com/zeppelin> for the **zeppelin**."),
    "email autolink": ("Write to <zeppelin@example.com> about the zeppelin.",
                       "Write to <zeppelin@example.com> about the **zeppelin**."),
    "raw HTML inline": ('A <span title="zeppelin">big zeppelin</span> here.',
                        'A <span title="zeppelin">big **zeppelin**</span> here.'),
    "raw HTML block": ('<div class="zeppelin">\nzeppelin in a block\n</div>\n\nThe zeppelin flies.',
                       '<div class="zeppelin">\nzeppelin in a block\n</div>\nThe **zeppelin** flies.'),
    "image": ("![a zeppelin](img/zeppelin.png) shows the zeppelin.",
              "![a zeppelin](img/zeppelin.png) shows the **zeppelin**."),
    "code span": ("Run `zeppelin --fly` to fly the zeppelin.",
                  "Run `zeppelin --fly` to fly the **zeppelin**."),
    "code span of two backticks": ("Run ``zeppelin `x` here`` to fly the zeppelin.",
                                   "Run ``zeppelin `x` here`` to fly the **zeppelin**."),
    "indented code": ("The zeppelin command:\n\n    zeppelin --fly",
                      "The **zeppelin** command:\n    zeppelin --fly"),
    "fenced code": ("The zeppelin command:\n\n```\nzeppelin --fly\n```",
                    "The **zeppelin** command:\n```\nzeppelin --fly\n```"),
    "fence in a block quote": ("> The zeppelin command:\n>\n> ```\n> zeppelin --fly\n> ```",
                               "> The **zeppelin** command:\n>\n> ```\n> zeppelin --fly\n> ```"),
    "fence in a list item": ("- The zeppelin command:\n\n  ```\n  zeppelin --fly\n  ```",
                             "- The **zeppelin** command:\n  ```\n  zeppelin --fly\n  ```"),
    "emphasis with *": ("The *zeppelin* flies; the zeppelin lands.",
                        "The *zeppelin* flies; the **zeppelin** lands."),
    "emphasis with _": ("The _zeppelin_ flies; the zeppelin lands.",
                        "The _zeppelin_ flies; the **zeppelin** lands."),
    "a word inside emphasis": ("The *big zeppelin plan* flies; the zeppelin lands.",
                               "The *big zeppelin plan* flies; the **zeppelin** lands."),
    "strong": ("The **zeppelin** flies; the zeppelin lands.",
               "The **zeppelin** flies; the **zeppelin** lands."),
    "reference definition": ('See [the zeppelin plan][p] now.\n\n[p]: https://example.com/zeppelin "zeppelin"',
                             'See [the **zeppelin** plan][p] now.\n[p]: https://example.com/zeppelin "zeppelin"'),
    "shortcut reference": ("See [zeppelin] now, the zeppelin.\n\n[zeppelin]: https://example.com/z",
                           "See [zeppelin] now, the **zeppelin**.\n[zeppelin]: https://example.com/z"),
    "wikilink target and display text": (
        "Read [[Zeppelin plan|the zeppelin]] and [[Zeppelin]] on the zeppelin.",
        "Read [[Zeppelin plan|the zeppelin]] and [[Zeppelin]] on the **zeppelin**."),
    "embed": ("![[zeppelin.png|300]] shows the zeppelin.",
              "![[zeppelin.png|300]] shows the **zeppelin**."),
    "tag": ("Tagged #zeppelin for the zeppelin.", "Tagged #zeppelin for the **zeppelin**."),
    "math": ("The lift $zeppelin_x$ of the zeppelin.", "The lift $zeppelin_x$ of the **zeppelin**."),
    "callout type": ("> [!zeppelin] The zeppelin\n> flies.",
                     "> [!zeppelin] The **zeppelin**\n> flies."),
    "footnote label": ("The zeppelin[^zeppelin] flies.\n\n[^zeppelin]: A zeppelin.",
                       "The **zeppelin**[^zeppelin] flies.\n[^zeppelin]: A **zeppelin**."),
    "HTML comment": ("The zeppelin <!-- zeppelin --> flies.",
                     "The **zeppelin** <!-- zeppelin --> flies."),
    "link destination in angle brackets": ("[a zeppelin](<my zeppelin.md>) flies.",
                                           "[a **zeppelin**](<my zeppelin.md>) flies."),
    "ordered list": ("1. zeppelin one\n2. the second zeppelin",
                     "1. **zeppelin** one\n2. the second **zeppelin**"),
    "table": ("| ship | kind |\n| --- | --- |\n| zeppelin | [x](http://e.com/zeppelin) |",
              "| ship | kind |\n| --- | --- |\n| **zeppelin** | [x](http://e.com/zeppelin) |"),
}


def test_marks_go_on_prose_words_only_in_every_markdown_form(tmp_path):
    files = {f"f{i}.md": f"# Z\n\n{body}\n" for i, (body, _) in enumerate(FORMS.values())}
    results = {r.note: r.snippet.text for r in found(tmp_path, files, "zeppelin", 100)}
    got = {form: results[f"vault/f{i}.md"] for i, form in enumerate(FORMS)}
    assert got == {form: want for form, (_, want) in FORMS.items()}


def test_a_link_address_is_quoted_unmarked_by_the_cli_and_the_mcp_server(tmp_path):
    import asyncio
    import json
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from support import run_memory
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "plan.md").write_text("# Plan\n\nThe [zeppelin plan](https://example.com/"
                                   "zeppelin-plan) and `zeppelin --fly`.\n")
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "sync", vault).returncode == 0
    want = "The [**zeppelin** plan](https://example.com/zeppelin-plan) and `zeppelin --fly`."
    p = run_memory("--db", db, "search", "zeppelin")
    assert want in p.stdout, p.stdout
    assert json.loads(run_memory("--db", db, "search", "zeppelin", "--json").stdout
                      )["results"][0]["snippet"]["text"] == want

    async def go():
        params = StdioServerParameters(command=sys.executable, env={
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "MEMORY_EMBEDDER": "none"},
            args=["-m", "personal_memory.mcp_server", "--db", str(db)])
        async with Client(params) as c:
            return await c.call_tool("memory_search", {"query": "zeppelin"})
    answer = asyncio.run(go())
    assert want in answer.content[0].text


PIECES = ["word", "word", " ", "\n", "\n\n", "`", "``", "*", "_", "**", "[", "]", "(", ")",
          "<", ">", "> ", "- ", "1. ", "    ", "```", "~~~", "http://x/word", "#", "|",
          "$", "%%", "!", "[[", "]]", '"', "\\", "&amp;", "<b>", "</b>", "---", ":"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60))
def test_a_mark_never_changes_what_the_markdown_says(pieces):
    """Hostile Markdown: the marks chosen render as the text did, apart from their bold,
    and none lands in code, a link's address or HTML."""
    import re

    from markdown_it import MarkdownIt

    from personal_memory.notes.prose import mark, prose

    def _joined(spans):  # touching spans share one mark
        return [sp for i, sp in enumerate(spans) if i == 0 or spans[i - 1][1] != sp[0]]
    text = "".join(pieces)
    spans = [m.span() for m in re.finditer(r"word", text)]
    keep = prose(text, spans)
    chosen = [sp for sp, k in zip(spans, keep) if k]
    md = MarkdownIt("commonmark").enable("table")

    def bare(html):
        return html.replace("<strong>", "").replace("</strong>", "")
    before, after = md.render(text), md.render(mark(text, chosen))
    assert bare(after) == bare(before)
    assert after.count("<strong>") == before.count("<strong>") + len(_joined(chosen))
    for tok in md.parse(mark(text, chosen)):
        assert tok.type == "inline" or "**word**" not in tok.content, tok
        for child in tok.children or []:
            assert "**word**" not in child.content or child.type == "text", child
            assert "**word**" not in str(child.attrs)


class _Meadow:
    """A model that finds only the text about the meadow close to any question."""
    name, version, dimensions, key = "meadow", "1", 2, "meadow/1"

    @staticmethod
    def no_answer_below(rows: int) -> float:
        return -1.0

    def passages(self, texts):
        import numpy as np
        return np.array([[1.0, 0.0] if "meadow" in t else [0.0, 1.0] for t in texts],
                        dtype=np.float32)

    def query(self, text):
        import numpy as np
        return np.array([1.0, 0.0], dtype=np.float32)


def test_the_snippet_shows_the_piece_that_matched_best_in_meaning(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    badger = "The badger walk starts at the gate " + "and goes on past the old stones " * 5
    meadow = "Later the path opens into a wide meadow " + "with flowers and tall grass " * 6
    (vault / "walk.md").write_text(f"# Walk\n\n{badger}\n\n{meadow}\n")
    with MemoryStore.open(tmp_path / "m.db", embedder=_Meadow()) as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        s.embed_pending()
        (hit,) = s.search("badger", namespace="notes", snippets=True)
    assert hit.matched_lines == (5, 5)  # the meadow's paragraph, in the section's lines
    assert (hit.snippet.line_start, hit.snippet.line_end) == (5, 5)
    assert hit.snippet.text.startswith("Later the path opens into a wide meadow")


def test_the_first_result_also_shows_the_lines_that_match_by_words(tmp_path):
    """Matched in meaning by its meadow paragraph, the section's table row holds more of
    the query's words: the first result shows that row too, first in ``more``, with its
    lines; when the paragraph holds as many, nothing is added."""
    vault = tmp_path / "vault"
    vault.mkdir()
    meadow = "Later the path opens into a wide meadow " + "with flowers and tall grass " * 30
    rows = "".join(f"| stage {i} | {i + 3} km |\n" for i in range(1, 6))
    table = "| walk | length |\n|---|---|\n" + rows + "| badger loop | 12 km |\n"
    (vault / "walk.md").write_text(f"# Walk\n\n{meadow} badger\n\n{table}")
    with MemoryStore.open(tmp_path / "m.db", embedder=_Meadow()) as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        s.embed_pending()
        (hit,) = s.search("badger loop length", namespace="notes", snippets=True)
        assert (hit.snippet.line_start, hit.snippet.line_end) == (3, 3)
        (words,) = hit.more
        assert words.memory_id == hit.memory_id
        assert "| **badger** **loop** | 12 km |" in words.snippet.text.split("\n")
        assert words.snippet.line_end == 12
        (hit,) = s.search("badger", namespace="notes", snippets=True)
        assert hit.snippet.line_start == 3 and hit.more == ()


def test_a_question_marks_its_content_words_not_its_stop_words_in_the_cli_and_mcp(tmp_path):
    """A question's function words ("what", "is", "the", "to") are rare in this vault, so
    they would carry weight by idf alone: they are still never marked, and the line that
    holds most of them does not pull the snippet away from the one that answers."""
    import asyncio
    import json
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from support import run_memory
    vault = tmp_path / "vault"
    vault.mkdir()
    for i, fruit in enumerate(["Bananas", "Mangoes", "Lemons", "Figs", "Plums", "Pears"]):
        (vault / f"fruit{i}.md").write_text(f"# {fruit}\n\n{fruit} grow well in warm soil.\n")
    filler = " ".join(["Lorem ipsum dolor sit amet, consectetur adipiscing elit."] * 5)
    (vault / "palette.md").write_text(
        "# Palette\n\nWhat is it? It is the one to go to, and what the rest point to.\n"
        f"{filler}\n{filler}\nCtrl+P opens the palette.\n")
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "sync", vault).returncode == 0
    query = "what is the shortcut to open the command palette?"
    want = "Ctrl+P **opens** the **palette**."
    got = json.loads(run_memory("--db", db, "search", query, "--json").stdout)["results"][0]
    assert got["snippet"]["text"] == want, got["snippet"]
    assert got["snippet"]["line_start"] == got["snippet"]["line_end"] == 6
    p = run_memory("--db", db, "search", query)
    assert want in p.stdout and "**the**" not in p.stdout, p.stdout

    async def go():
        params = StdioServerParameters(command=sys.executable, env={
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "MEMORY_EMBEDDER": "none"},
            args=["-m", "personal_memory", "--db", str(db), "serve"])
        async with Client(params) as c:
            return await c.call_tool("memory_search", {"query": query})
    answer = asyncio.run(go())
    assert want in answer.content[0].text
    assert not any(f"**{w}**" in answer.content[0].text.casefold()
                   for w in ("what", "is", "the", "to")), answer.content[0].text


def test_a_long_line_is_cut_between_words_never_inside_one(tmp_path):
    """A line longer than the snippet's width is shown as a window around its match; the
    window starts and ends between words, so "11–25 April" never shows as "…5 April"."""
    words = " ".join(f"w{i:03d}xyz" for i in range(60))
    for pad in range(0, 40, 3):  # the cut falls at every place within the words
        line = "x" * pad + " " + words + " Trip 11–25 April 2026 skiing in Austria " + words
        (tmp_path / str(pad)).mkdir()
        snip = search(tmp_path / str(pad), f"# Trips\n\n{line}\n", "skiing")
        shown = snip.text.removeprefix("…").removesuffix("…")
        assert "**skiing**" in snip.text
        first, last = shown.split()[0], shown.split()[-1]
        assert first in line.split() and last in line.split(), (pad, first, last)


def test_a_line_cut_after_a_sentence_says_that_more_follows(tmp_path):
    text = ("# Contacts\n\nThe accountant booked every year for the tax return is\n"
            "Joanna Hale of Hale and Co. in Bristol, who has done it since 2019 and knows "
            "the rental flat. " + "Fee 350 pounds a year, paid in January by invoice. " * 6
            + "\n")
    snip = search(tmp_path, text, "accountant booked")
    assert "Hale" in snip.text and snip.text.endswith(" …"), snip.text


def test_a_long_note_names_a_few_of_its_other_places_and_counts_the_rest(tmp_path):
    sections = "".join(f"## Part {i}\n\nThe lighthouse keeper wrote entry {i}.\n\n"
                       for i in range(20))
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "log.md").write_text(f"# Log\n\n{sections}")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)])
        found = s.search("lighthouse keeper", namespace="notes", snippets=True,
                         group="note")
    (first,) = found
    assert len(first.also) > render.ALSO_SHOWN  # every place, in the record
    text = render.hits(found, "lighthouse keeper")
    named = text.split("(also lines ")[1].split(")")[0]
    assert named.endswith(f" and {len(first.also) - render.ALSO_SHOWN} more")
    assert named.count(",") == render.ALSO_SHOWN - 1
    assert "\n   line " in text  # a 'more' section of one line says line, not lines


def test_a_line_counts_a_query_word_once_whatever_its_form(tmp_path):
    """"meeting" and "meetings" are one word of the query: the line that holds it twice
    is not taken over the one that holds it and "carousel"."""
    walk = ("- Long walk at lunch in the park by the river, sunny and cold all day, then "
            "groceries on the way home: bread, apples, rice, milk, coffee and some tea\n")
    text = ("# 2026-03-10\n\n- Meeting overload today: 5 meetings, no focus time\n"
            + walk * 3 + "- Design review: the meeting dropped the carousel\n")
    others = {f"other{i}.md": f"# Other {i}\n\nA note about gardening, number {i}.\n"
              for i in range(6)}
    (hit,) = [r for r in found(tmp_path, {"day.md": text, **others},
                                "which meeting decided on the carousel")
              if r.note.endswith("day.md")]
    assert "**carousel**" in hit.snippet.text, hit.snippet.text


def test_table_rows_from_the_top_come_with_their_header_never_a_bare_delimiter(tmp_path):
    rows = "".join(f"| {i} | engine{i} | {i / 10:.2f} |\n" for i in range(1, 9))
    table = "| # | Engine | Recall |\n|---|:--|--:|\n" + rows
    snip = search(tmp_path, "# Runs\n\n" + table, "engine1")
    assert snip.text.split("\n")[:3] == ["| # | Engine | Recall |", "|---|:--|--:|",
                                         "| 1 | **engine1** | 0.10 |"]
    assert (snip.line_start, snip.line_end) == (3, 3 + len(snip.text.split("\n")) - 1)
    # a header too long to fit: the rows alone, not the delimiter row above them
    wide = "| " + " | ".join(f"column number {i}" for i in range(14)) + " |\n"
    wide += "|" + "---|" * 14 + "\n" + rows
    (tmp_path / "w").mkdir()
    snip = search(tmp_path / "w", "# Runs\n\n" + wide, "engine1")
    assert snip.text.startswith("| 1 | **engine1** |") and snip.line_start == 5


WORDS = ("inflation fed bond yield oil gold copper hedge europe bank momentum report "
         "the and of a").split()


@settings(max_examples=15, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=3, max_size=12), min_size=4,
                max_size=24), st.lists(st.sampled_from(WORDS), min_size=2, max_size=4),
       st.integers(1, 23))
def test_a_snippet_at_a_cutoff_is_what_a_store_of_that_time_shows(tmp_path_factory, texts,
                                                                  query, cut):
    """The words marked and the lines shown are chosen by what the cutoff sees: a word
    made common later must not lose its mark in an earlier answer."""
    tmp = tmp_path_factory.mktemp("cut")
    times = [f"2024-01-{1 + i:02d}T00:00:00Z" for i in range(len(texts))]
    cutoff = times[min(cut, len(texts) - 1) - 1].replace("T00", "T12")
    with MemoryStore.open(tmp / "all.db", embedder="none") as whole, \
            MemoryStore.open(tmp / "then.db", embedder="none") as then:
        for i, (words, at) in enumerate(zip(texts, times)):
            for store in (whole,) + ((then,) if at < cutoff else ()):
                store.remember(f"m{i % 7}", " ".join(words) + "\n\nand " + " ".join(
                    reversed(words)), namespace="n", known_at=at)
        q = " ".join(query)
        got, want = (s.search(q, namespace="n", as_of=cutoff, snippets=True, limit=10)
                     for s in (whole, then))
    shown = [(r.memory_id, r.snippet, r.more, r.also) for r in got]
    assert shown == [(r.memory_id, r.snippet, r.more, r.also) for r in want]
