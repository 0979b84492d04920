"""Snippets: the lines that matched, with no heading line (the heading path names it) and
not cut one line before the sentence or list item ends."""

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder


def search(tmp_path, text, query):
    vault = tmp_path / "vault"
    vault.mkdir(exist_ok=True)
    (vault / "n.md").write_text(text)
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        found = s.search(query, namespace="notes", snippets=True)
    return found[0].snippet


def test_the_heading_line_is_not_repeated(tmp_path):
    snip = search(tmp_path, "# Garden\n\n## Tomatoes\n\nWater the tomatoes at dawn.\n",
                  "water dawn")
    assert snip.text == "**Water** the tomatoes at **dawn**."
    assert (snip.line_start, snip.line_end) == (5, 5)


def test_a_line_ending_in_a_colon_brings_the_line_it_announces(tmp_path):
    answer = "Ctrl+P on Windows and Linux, Cmd+P on macOS" + ", or from the ribbon" * 8 + "."
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
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(8):  # "the" and "to" are in every note: they carry no weight
        (vault / f"filler{i}.md").write_text(f"# Filler {i}\n\nGo to the shop number {i}.\n")
    (vault / "palette.md").write_text(
        "# Palette\n\nTo open the **Command palette**, press `Ctrl+P` or use "
        "[[Command palette|the palette]]; the command palette lists every command.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        text = s.search("open the command palette", namespace="notes",
                        snippets=True)[0].snippet.text
    assert text == ("To **open** the **Command palette**, press `Ctrl+P` or use "
                    "[[Command palette|the palette]]; the **command** **palette** lists "
                    "every **command**.")
