import pytest

from personal_memory import markdown as md


def test_decode_normalises_and_rejects():
    assert md.decode(b"\xef\xbb\xbfa\r\nb\rc") == "a\nb\nc"
    with pytest.raises(md.BadNote, match="NUL byte at offset 1"):
        md.decode(b"a\x00b")
    with pytest.raises(md.BadNote, match="invalid UTF-8 at byte 3"):
        md.decode(b"caf\xe9")
    with pytest.raises(md.BadNote, match="too large"):
        md.decode(b"a" * (md.MAX_FILE_BYTES + 1))


def test_title_is_first_heading_outside_fences():
    text = "```\n# not this\n```\n\nintro\n\n## Real title ##\n\n# later"
    assert md.title_of(text, "x.md") == "Real title"
    assert md.title_of("~~~~\n# no\n~~~~\nbody", "dir/My Note.md") == "My Note"
    assert md.title_of("#nospace is not a heading", "a.md") == "a"
    assert md.title_of("# " + "x" * 300, "a.md") == "x" * 200


def test_chunks_split_at_blank_lines_with_line_spans():
    text = "para one\nline two\n\n\n\npara two\n\npara three"
    assert md.chunk(text) == [md.Chunk(1, "para one\nline two\n\npara two\n\npara three", 1, 8)]
    paras = ["p%d " % i + "w" * 900 for i in range(3)]
    chunks = md.chunk("\n\n".join(paras))
    assert [c.text for c in chunks] == paras
    assert [(c.line_start, c.line_end) for c in chunks] == [(1, 1), (3, 3), (5, 5)]


def test_long_paragraph_is_cut_at_last_whitespace():
    words = " ".join(f"word{i:04d}" for i in range(500))  # about 4,500 characters
    chunks = md.chunk(words)
    assert all(len(c.text) <= md.MAX_CHUNK_CHARS for c in chunks)
    assert " ".join(c.text for c in chunks) == words  # only the cut whitespace is lost
    assert all(not c.text.startswith(" ") and not c.text.endswith(" ") for c in chunks)
    hard = md.chunk("x" * 4000)
    assert [len(c.text) for c in hard] == [1800, 1800, 400]


def test_multiline_cut_keeps_line_numbers():
    lines = [f"line {i:03d} " + "z" * 80 for i in range(60)]  # one paragraph, 60 lines
    chunks = md.chunk("\n".join(lines))
    assert chunks[0].line_start == 1 and chunks[-1].line_end == 60
    for c in chunks:
        first = int(c.text.split()[1])
        assert c.line_start == first + 1


def test_empty_and_whitespace_only():
    assert md.chunk("") == [] and md.chunk("\n \n\t\n") == []


@pytest.mark.parametrize("name, ok", [
    ("note.md", True), ("Note.MD", True), ("a.markdown", True), (".hidden.md", False),
    ("note.md~", False), ("note.md.swp", False), (".note.md.swp", False), ("#note.md#", False),
    (".#note.md", False), ("4913", False), ("note.md.tmp", False), ("note.txt", False),
    ("note.md___jb_tmp___", False),
])
def test_note_names(name, ok):
    assert md.is_note_name(name) is ok


def test_paths_are_nfc():
    nfd = "Cafe\u0301/re\u0301sume\u0301.md"
    assert md.normalise_path(nfd) == "Café/résumé.md"
    assert md.chunk_id("notes", md.normalise_path(nfd), 2) == "notes/Café/résumé.md#2"
