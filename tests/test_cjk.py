"""Chinese and Japanese are searched by words, not characters: runs of Han and kana are
indexed as overlapping bigrams, and a file indexed by the older rule is re-indexed from its
revisions once."""

import apsw

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from personal_memory.search.text import normalize_text
from support import keyword_ids


def test_bigrams():
    assert normalize_text("バックアップ") == " バッ ック クア アッ ップ "
    assert normalize_text("同期") == " 同期 "
    assert normalize_text("a 会 b") == "a  会  b"
    assert normalize_text("東京の会議", "nfkc+cjk-chars") == " 東  京  の  会  議 "


def test_a_katakana_word_and_an_exact_heading_rank_their_note_first(tmp_path):
    vault = tmp_path / "ja"
    vault.mkdir()
    (vault / "モバイルアプリ.md").write_text(
        "# モバイルアプリ\n\nスマートフォンでノートを開き、ファイルをクリックして、"
        "バナーとアイコンを確認します。プラグインのアップデートもあります。\n")
    (vault / "バックアップ.md").write_text(
        "# 同期はバックアップではない\n\n" + "バックアップを作成してください。" * 5 + "\n")
    (vault / "その他.md").write_text("# その他\n\nノートの整理について。\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        found = store.search("バックアップ", namespace="notes")
        assert found[0].note == "ja/バックアップ.md"
        heading = store.search("同期はバックアップではない", namespace="notes")
        assert heading[0].memory_id == "ja/バックアップ.md#同期はバックアップではない"
        assert found[0].bm25 > 2 * found[1].bm25  # the word, not a few of its characters


def test_a_file_indexed_by_the_older_rule_is_reindexed_once(tmp_path):
    vault = tmp_path / "zh"
    vault.mkdir()
    (vault / "备份.md").write_text("# 备份\n\n定期备份你的笔记。\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)])
        before = [r.to_dict() for r in store.export()]
    conn = apsw.Connection(str(db))  # what an older version recorded
    conn.execute("UPDATE meta SET value = 'nfkc+cjk-chars' WHERE key = 'text_version'")
    conn.close()
    with MemoryStore.open(db, embedder="none") as store:  # a writer re-indexes
        assert [r.to_dict() for r in store.export()] == before  # revisions untouched
        assert keyword_ids(store, "备份") == ["zh/备份.md#备份"]
        assert store.search("定期备份", namespace="notes")[0].memory_id == "zh/备份.md#备份"


def test_a_chinese_word_is_marked_where_the_snippet_shows_it(tmp_path):
    vault = tmp_path / "zh"
    vault.mkdir()
    (vault / "备份.md").write_text("# 说明\n\n打开设置。\n\n定期备份你的笔记，备份很重要。\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        found = store.search("备份", namespace="notes", snippets=True)
        assert "定期**备份**你的笔记，**备份**很重要。" in found[0].snippet.text


def test_a_katakana_word_is_marked_whole_though_its_last_pair_is_common(tmp_path):
    """テンプレート is searched as テン ンプ プレ レー ート; ート (of every ノート) holds no
    weight of its own, yet the mark covers the whole word, and a common pair is not
    marked where the word is not (ショート)."""
    vault = tmp_path / "ja"
    vault.mkdir()
    (vault / "テンプレート.md").write_text(
        "# 使い方\n\nテンプレートを挿入する前に、ショートカットを確認します。\n")
    for i in range(6):  # ート and ット in most notes: too common to mark by themselves
        (vault / f"n{i}.md").write_text(f"# ノート{i}\n\nノートのショートカット{i}。\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        found = store.search("テンプレート", namespace="notes", snippets=True)
        assert found[0].snippet.text == (
            "**テンプレート**を挿入する前に、ショートカットを確認します。"), found[0].snippet


def test_one_character_is_searched_as_the_pairs_that_hold_it(tmp_path):
    """The index holds Chinese and Japanese in pairs of characters: 税 alone is searched as
    the pairs that hold it (关税, 税率) among the rows the search sees, on both paths; the
    character is marked, not the pairs; a pair known only later does not answer at an
    earlier cutoff."""
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.remember("zh#关税", "进口商品需要缴纳关税，税率由海关决定。", namespace="n",
                       known_at="2025-01-01")
        store.remember("zh#天气", "今天天气很好。", namespace="n", known_at="2025-01-01")
        store.remember("zh#仓库", "仓库列表在左下角。", namespace="n", known_at="2025-03-01")
        for search in (store.search, store.search_reference):
            assert [r.memory_id for r in search("税", namespace="n")] == ["zh#关税"]
            assert [r.memory_id for r in search("库", namespace="n")] == ["zh#仓库"]
            early = search("库", namespace="n", as_of="2025-02-01")
            assert [r.memory_id for r in early] == [] and early.no_answer
        found = store.search("税", namespace="n", snippets=True)
        assert found[0].snippet.text == "进口商品需要缴纳关**税**，**税**率由海关决定。"
