"""Words of scripts written with combining marks are words: Hindi and Bengali vowel signs
and viramas stay inside their word, and Thai, Lao, Khmer and Myanmar, written without
spaces, are read by pairs of characters (each with its marks), as Chinese is."""

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from personal_memory.search.text import normalize_text
from personal_memory.store import connection
from support import keyword_ids


def test_thai_and_khmer_runs_are_read_by_pairs_of_characters_with_their_marks():
    assert normalize_text("การตั้งค่า") == " กา าร รตั้ ตั้ง งค่ ค่า "
    assert normalize_text("ស្វាគមន៍") == " ស្វា វាគ គម មន៍ "
    assert normalize_text("ก") == " ก "
    # The rule before this one left them whole (its files are re-indexed).
    assert normalize_text("การตั้งค่า", "nfkc+no-format+cjk-bigrams") == "การตั้งค่า"


def test_a_query_word_is_what_the_index_reads_as_one_term_marks_and_digits_included(
        tmp_path):
    """The made-up-word rule reads a query's words as the index does (term_spans):
    vowel signs and viramas stay inside a Hindi word, digits inside a word of letters."""
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        spans = store._db.term_spans("नोट्स को सिंक करें, café juxzac318 2024")  # noqa: SLF001
    assert spans == [("नोट्स", "नोट्स"), ("को", "को"), ("सिंक", "सिंक"), ("करें", "करें"),
                     ("café", "cafe"), ("juxzac318", "juxzac318"), ("2024", "2024")]


def _vault(tmp_path, notes: dict[str, str]):
    vault = tmp_path / "v"
    vault.mkdir()
    for name, text in notes.items():
        (vault / name).write_text(text, encoding="utf-8")
    return vault


def test_a_hindi_word_finds_the_note_that_holds_it_not_notes_sharing_its_letters(tmp_path):
    vault = _vault(tmp_path, {
        "sync.md": "# सिंक\n\nअपने नोट्स को सिंक करें।\n",
        "other.md": "# संकेत\n\nकुछ संकेत और नक्शा।\n",  # the same consonants, other words
    })
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        assert keyword_ids(store, "सिंक") == ["v/sync.md#सिंक"]
        assert keyword_ids(store, "नोट्स") == ["v/sync.md#सिंक"]


def test_a_thai_word_inside_a_run_is_found_and_a_run_sharing_a_fragment_is_not(tmp_path):
    vault = _vault(tmp_path, {
        "settings.md": "# หน้าแรก\n\nปรับการตั้งค่าของคุณได้ที่นี่\n",  # "adjust your settings here"
        "market.md": "# ตลาด\n\nเราทั้งคู่ไปตลาด\n",  # "we both go to the market"
    })
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        assert keyword_ids(store, "การตั้งค่า") == ["v/settings.md#หน้าแรก"]
        assert keyword_ids(store, "ตลาด")[0] == "v/market.md#ตลาด"


def test_an_emoji_presentation_mark_does_not_glue_itself_to_the_next_word(tmp_path):
    vault = _vault(tmp_path, {"w.md": "# Notes\n\n⚠️Warning: back up first.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        assert keyword_ids(store, "warning") == ["v/w.md#Notes"]


def test_a_file_indexed_before_marks_were_part_of_words_is_reindexed_once(tmp_path,
                                                                          monkeypatch):
    vault = _vault(tmp_path, {"sync.md": "# सिंक\n\nअपने नोट्स को सिंक करें।\n",
                              "other.md": "# संकेत\n\nकुछ संकेत और नक्शा।\n"})
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)])
        before = [r.to_dict() for r in store.export()]
    with monkeypatch.context() as m:  # the previous version's rules re-index it their way
        m.setattr(connection, "TOKENIZER", "porter unicode61 remove_diacritics 2")
        m.setattr(connection, "TEXT_VERSION", "nfkc+no-format+cjk-bigrams")
        MemoryStore.open(db, embedder="none").close()
    with MemoryStore.open(db, embedder="none", read_only=True) as reader:
        # a reader of that index cuts the query as it was cut: letters between the marks
        assert keyword_ids(reader, "सिंक") == ["v/other.md#संकेत", "v/sync.md#सिंक"]
    with MemoryStore.open(db, embedder="none") as store:  # a writer re-indexes
        assert [r.to_dict() for r in store.export()] == before  # revisions untouched
        assert keyword_ids(store, "सिंक") == ["v/sync.md#सिंक"]


def test_a_thai_word_is_marked_inside_its_run(tmp_path):
    vault = _vault(tmp_path, {"settings.md": "# หน้าแรก\n\nเปิดแอป\n\nปรับการตั้งค่าของคุณได้ที่นี่\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        found = store.search("การตั้งค่า", namespace="notes", snippets=True)
        assert found[0].snippet.text.endswith("ปรับ**การตั้งค่า**ของคุณได้ที่นี่")


def test_arabic_and_hebrew_vowel_points_are_optional(tmp_path):
    vault = _vault(tmp_path, {"ar.md": "# ملاحظة\n\nكتب مُحَمَّد الرسالة\n",
                              "he.md": "# הערה\n\nשָׁלוֹם לכולם\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        assert keyword_ids(store, "محمد") == ["v/ar.md#ملاحظة"]
        assert keyword_ids(store, "مـحـمد") == ["v/ar.md#ملاحظة"]  # stretched by a tatweel
        assert keyword_ids(store, "שלום") == ["v/he.md#הערה"]


def test_words_are_marked_where_they_stand_in_a_long_line_of_another_script(tmp_path):
    """The marks' places are counted once along the line (a note of one long line used to
    take minutes to show: every word's place was decoded from the line's start)."""
    from personal_memory.search.snippets import _matches
    line = "नोट्स को सिंक करें। " * 3000 + "café सिंक"
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        db = store._db
        spans = _matches(db, line, set(db.tokens("सिंक café")))
    want = []
    at = line.find("सिंक")
    while at >= 0:
        want.append((at, at + len("सिंक")))
        at = line.find("सिंक", at + 1)
    want.insert(-1, (line.index("café"), line.index("café") + 4))
    assert spans == want


def test_a_korean_word_is_found_with_the_particles_written_onto_it(tmp_path):
    """노트를 and 노트에서 ("the note", "in the note") hold the word 노트: Hangul is read
    by pairs of syllables, beside each word as written (which ranks its exact form)."""
    assert normalize_text("노트를 보기") == " 노트를  노트 트를   보기 "
    vault = _vault(tmp_path, {"start.md": "# 시작\n\n새 노트를 만들고 노트에서 링크를 추가하세요.\n",
                              "other.md": "# 기타\n\n다른 내용입니다.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        assert keyword_ids(store, "노트") == ["v/start.md#시작"]
        found = store.search("노트", namespace="notes", snippets=True)
        assert "새 **노트**를 만들고 **노트**에서" in found[0].snippet.text


def test_a_vowelled_arabic_word_is_marked_for_the_word_asked_without_points(tmp_path):
    vault = _vault(tmp_path, {"ar.md": "# ملاحظة\n\nكتب مُحَمَّد الرسالة\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        found = store.search("محمد", namespace="notes", snippets=True)
        assert found[0].snippet.text == "كتب **مُحَمَّد** الرسالة"


def test_letters_typed_as_another_find_the_word_and_are_marked_as_written(tmp_path,
                                                                        monkeypatch):
    """ł, ı, đ, ø typed as their plain letter, ё as е, the forms of Arabic alef as ا, a
    Hindi word without its nukta: each finds the note, and the snippet marks the word as
    the note writes it. A file indexed by the previous rule is read its way until a
    writer re-indexes it."""
    vault = _vault(tmp_path, {
        "pl.md": "# Remont łazienki\n\nHydraulik przyjdzie we wtorek.\n",
        "ru.md": "# Салат\n\nСвёкла с уксусом.\n",
        "tr.md": "# Kedi\n\nKedinin aşı günü yarın.\n",
        "ar.md": "# سكن\n\nالإيجار الشهري ألف.\n",
        "hi.md": "# यात्रा\n\nफ़्लाइट सुबह है।\n",
        "da.md": "# Have\n\nVi søger en gartner.\n"})
    db = tmp_path / "m.db"
    with monkeypatch.context() as m:  # indexed by the rule before this one
        m.setattr(connection, "TEXT_VERSION",
                  "nfkc+no-format+no-points+cjk-hangul-sea-bigrams")
        with MemoryStore.open(db, embedder="none") as store:
            store.sync([Folder.of(vault)])
    with MemoryStore.open(db, embedder="none", read_only=True) as reader:
        assert keyword_ids(reader, "łazienki") == ["v/pl.md#Remont łazienki"]
        assert keyword_ids(reader, "lazienki") == []
    cases = [("lazienki", "v/pl.md#Remont łazienki", None),
             ("свекла", "v/ru.md#Салат", "**Свёкла**"),
             ("asi", "v/tr.md#Kedi", "**aşı**"),
             ("الايجار", "v/ar.md#سكن", "**الإيجار**"),
             ("फ्लाइट", "v/hi.md#यात्रा", "**फ़्लाइट**"),
             ("soger", "v/da.md#Have", "**søger**")]
    with MemoryStore.open(db, embedder="none") as store:  # a writer re-indexes
        for query, first, marked in cases:
            found = store.search(query, namespace="notes", snippets=True)
            assert [r.memory_id for r in found] == [first], query
            if marked:
                assert marked in found[0].snippet.text, (query, found[0].snippet.text)
            ref = store.search_reference(query, namespace="notes")
            assert [r.memory_id for r in ref] == [first]
        # as written, each word still finds its note
        assert keyword_ids(store, "łazienki") == ["v/pl.md#Remont łazienki"]
        assert keyword_ids(store, "свёкла") == ["v/ru.md#Салат"]
