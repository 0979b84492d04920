import pytest

from personal_memory.notes.model import markdown as md
from personal_memory.notes import model as notes


def test_decode_normalises_and_rejects():
    assert md.decode(b"\xef\xbb\xbfa\r\nb\rc") == "a\nb\nc"
    with pytest.raises(md.BadNote, match="NUL byte at offset 1"):
        md.decode(b"a\x00b")
    with pytest.raises(md.BadNote, match=r"invalid UTF-8 at byte 3 \(saved as Windows-1252"):
        md.decode(b"caf\xe9")
    with pytest.raises(md.BadNote, match=r"invalid UTF-8 at byte 1$"):
        md.decode(b"a\x81\x8d")  # bytes Windows-1252 does not use: no guess
    with pytest.raises(md.BadNote, match="too large"):
        md.decode(b"a" * (md.MAX_FILE_BYTES + 1))


def test_a_utf16_note_with_its_byte_order_mark_is_read():
    # Windows editors save "Unicode" as UTF-16 with a byte order mark
    text = "# Café\r\nNotes in UTF-16 — 東京\r\n"
    assert md.decode(text.encode("utf-16")) == "# Café\nNotes in UTF-16 — 東京\n"
    assert md.decode(b"\xfe\xff" + text.encode("utf-16-be")) == md.decode(text.encode("utf-16"))
    with pytest.raises(md.BadNote, match="invalid UTF-16 at byte"):
        md.decode(b"\xff\xfe" + "ok".encode("utf-16-le") + b"\x00\xd8")  # a lone surrogate
    for encoding in ("utf-16-le", "utf-16-be"):  # without its mark: the error says so
        with pytest.raises(md.BadNote, match=r"NUL byte at offset [01] \(saved as UTF-16 "
                                             "without its byte order mark"):
            md.decode("# Café\nNotes\n".encode(encoding))
    with pytest.raises(md.BadNote, match=r"NUL byte at offset 8 \(binary file\?\)$"):
        md.decode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(md.BadNote, match="NUL character"):
        md.decode("a\x00b".encode("utf-16"))


@pytest.mark.parametrize("name, ok", [
    ("note.md", True), ("Note.MD", True), ("a.markdown", True), (".hidden.md", False),
    ("note.md~", False), ("note.md.swp", False), (".note.md.swp", False), ("#note.md#", False),
    (".#note.md", False), ("4913", False), ("note.md.tmp", False), ("note.txt", False),
    ("note.md___jb_tmp___", False), ("~$note.md", False),
    # a name that only begins with "#" or "~" is a note's (no editor writes one ending in .md)
    ("#ideas.md", True), ("~draft.md", True), ("#2 plan.md", True),
])
def test_note_names(name, ok):
    assert md.is_note_name(name) is ok


def test_paths_are_nfc():
    nfd = "Cafe\u0301/re\u0301sume\u0301.md"
    assert md.normalise_path(nfd) == "Café/résumé.md"
    assert notes.note_id("notes", md.normalise_path(nfd)) == "notes/Café/résumé.md"
