import pytest
from support import ids

NS = "u"


@pytest.mark.parametrize("stored, query", [
    ("Quarterly ﬁnance review", "finance"),          # ligature (NFKC)
    ("Quarterly finance review", "ﬁnance"),
    ("ＡＢＣ holdings", "abc"),                       # fullwidth (NFKC)
    ("Meeting at the café", "cafe\u0301"),            # decomposed accent in the query
    ("Meeting at the cafe\u0301", "café"),            # decomposed accent in the text
    ("Die Straße ist lang", "straße"),
    ("FINANCE REVIEW", "finance"),                    # case
    ("Ελληνικά γράμματα", "ΕΛΛΗΝΙΚΆ"),
    ("Привет мир", "привет"),
    ("明日の会議は10時からです", "会議"),              # Japanese: no spaces between words
    ("我们下周去北京开会", "北京"),                    # Chinese
    ("東京タワーに行きました", "タワー"),
    ("我们的备份笔记", "備份"),                       # traditional Chinese finds simplified
    ("插件：關係圖譜", "关系图谱"),                    # and simplified traditional
    ("Οι ημερήσιες σημειώσεις", "ημερησιες"),        # Greek without its tonos
    ("Οι ημερήσιες σημειώσεις", "ΗΜΕΡΗΣΙΕΣ"),         # capitals are written without it
    ("ἄνθρωπος", "ανθρωπος"),                         # polytonic
    ("یادداشت کلید", "يادداشت"),                     # Persian yeh typed as Arabic yeh
    ("يادداشت كليد", "کلید"),                         # and Arabic kaf as Persian keheh
    ("این فایل\u200cها را", "فایل"),            # a Persian word with a ZWNJ: by its parts
    ("پشتیبان\u200cگیری روزانه", "پشتیبان گیری"),
    ("پشتیبان\u200cگیری روزانه", "پشتیبانگیری"),         # and whole, as also typed
])
def test_unicode_forms_match(store, stored, query):
    store.remember("doc", stored, namespace=NS)
    store.remember("other", "unrelated words", namespace=NS)
    results = store.search(query, namespace=NS)
    assert ids(results) == ["doc"]
    assert results[0].bm25 is not None
    assert results[0].content == stored  # stored text is kept as written


def test_query_without_words_finds_nothing(store):
    store.remember("doc", "text", namespace=NS)
    assert store.search("!!! ???", namespace=NS) == []


def test_ties_share_ranks_and_order_by_memory_id(store):
    # Each between rows that hold no word of the query and are not close to it in meaning,
    # so no neighbour lends it context (search/ranking.py: with_context).
    for mid in ("c", "a", "b"):
        store.remember(mid, "identical words here", namespace=NS)
        store.remember(f"{mid}-after", "unrelated pebble", namespace=NS)
    store.remember("d", "identical but longer words here and more besides", namespace=NS)
    store.embed_pending()
    results = store.search("identical", namespace=NS)
    assert ids(results)[:3] == ["a", "b", "c"]
    assert {r.bm25_rank for r in results[:3]} == {1}
    assert {r.cosine_rank for r in results[:3]} == {1}
    assert results[3].bm25_rank == 4
    assert results[0].score == results[1].score == results[2].score > results[3].score


def test_more_matched_terms_rank_higher(store):
    store.remember("one", "garden notes about roses", namespace=NS)
    store.remember("two", "garden notes about roses and tulips", namespace=NS)
    store.remember("three", "kitchen notes", namespace=NS)
    results = store.search("roses tulips", namespace=NS)
    assert ids(results)[:2] == ["two", "one"]


def test_a_persian_word_ranks_above_its_parts(store):
    store.remember("whole", "پشتیبان\u200cگیری روزانه از یادداشت", namespace=NS)
    store.remember("part", "گیری پشتیبان", namespace=NS)  # its parts, shorter
    store.remember("other", "unrelated words", namespace=NS)
    assert ids(store.search("پشتیبان\u200cگیری", namespace=NS))[0] == "whole"
    assert sorted(ids(store.search("پشتیبان", namespace=NS))) == ["part", "whole"]


def test_a_name_typed_decomposed_finds_the_note_stored_composed(tmp_path):
    """macOS writes and pastes names decomposed (NFD); the store keeps paths composed
    (NFC): reading, history and the path filters take either."""
    from personal_memory import MemoryStore
    from personal_memory.notes.folders import Folder
    from support import vault_of
    vault = vault_of(tmp_path, {"Cr\u00e8me.md": "# Cr\u00e8me\n\nvanilla custard\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        typed = "vault/Cre\u0300me.md"
        assert "custard" in store.read(typed, namespace="notes").text
        (rev,) = store.history(typed + "#Cr\u00e8me", namespace="notes")
        assert rev.memory_id == "vault/Cr\u00e8me.md#Cr\u00e8me"
        for query in ("custard path:Cre\u0300me", "custard file:cre\u0300me"):
            assert [r.note for r in store.search(query, namespace="notes")] == [
                "vault/Cr\u00e8me.md"], query
