"""Match small, return whole: a section is matched by its best piece (a paragraph, a list,
a group of table rows), each piece read with the section's title. Both search paths and
the independent ground truth agree on random histories of long sections; a known piece's
vector is carried to a revision that repeats it; an older file keeps working."""

import os
import sqlite3
import tempfile

from hypothesis import HealthCheck, example, given, settings, strategies as st

import ground_truth as gt
from ground_truth import ToyEmbedder
from personal_memory import MemoryStore
from personal_memory.embedding.models import passage_text
from personal_memory.embedding.pieces import MAX_PIECES, pieces
from personal_memory.times import format_time
from test_fast_search import same
from test_properties import DAY, T0, WORDS, revs_of

paragraph = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)
long_text = st.lists(paragraph, min_size=1, max_size=6).map("\n\n".join)


def test_a_short_section_is_one_piece_the_whole_passage():
    content = "## Wifi\n\nThe password is swordfish."
    assert pieces("Cabin \nWifi", content) == [
        (passage_text("Cabin \nWifi", content), 1, 3)]


def test_a_long_section_is_cut_at_blank_lines_and_keeps_code_and_tables_whole():
    lead = "Some words about publishing a site to the web for everyone to read. " * 3
    code = "```\nfirst line of a code block\n\nsecond line after a blank " + "x" * 80 + "\n```"
    table = "| a | b |\n| - | - |\n" + "".join(f"| row{i} | what this row of the table says |\n"
                                                for i in range(12))
    content = f"## Publish\n\n{lead}\n\n{code}\n\n{table.rstrip()}\n\n{lead}"
    got = pieces("Site \nPublish", content)
    lines = content.split("\n")
    assert all(p.text.startswith("Site \nPublish\n") for p in got)
    assert [(p.first_line, p.last_line) for p in got] == [(3, 3), (5, 9), (11, 20),
                                                           (21, 24), (26, 26)]
    assert "code block\n\nsecond line" in got[1].text  # the fence is one block
    assert got[2].text.count("| a | b |") == 1 and got[3].text.count("| a | b |") == 1
    for p in got:  # every piece's text comes from its lines (and the table's header)
        body = p.text.split("\n", 2)[2]
        assert lines[p.last_line - 1] in body and lines[p.first_line - 1] in body


def test_short_blocks_join_the_next_and_a_huge_section_has_bounded_pieces():
    content = "## H\n\nNote:\n\n" + "\n\n".join(f"paragraph {i} " + "word " * 30
                                                  for i in range(500))
    got = pieces("T", content)
    assert len(got) == MAX_PIECES
    assert got[0].first_line == 3 and "Note:" in got[0].text and "paragraph 0" in got[0].text
    assert got[-1].last_line == len(content.split("\n"))


@settings(max_examples=200, deadline=None)
@given(title=st.one_of(st.none(), st.text(max_size=20)), content=st.text(max_size=3000))
def test_pieces_of_any_text_are_ordered_spans_of_it(title, content):
    got = pieces(title, content)
    n = len(content.split("\n"))
    assert 1 <= len(got) <= MAX_PIECES
    spans = [(p.first_line, p.last_line) for p in got]
    assert all(1 <= a <= b <= n for a, b in spans)
    assert all(b1 < a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))


SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
title = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
events = st.lists(st.tuples(st.sampled_from(["m0", "m1", "m2", "m3"]), long_text,
                            st.integers(0, 30), title), min_size=1, max_size=12)


@SETTINGS
@given(events=events, queries=st.lists(st.tuples(paragraph, st.integers(0, 30),
                                                 st.integers(1, 10)), min_size=1,
                                       max_size=3),
       embed=st.sampled_from([0, 2, None]))
# a row holding only the query's number ("15" in a title) is unrelated to its words
@example(events=[("m0", "apple", 0, "apple"), ("m1", "cherry", 0, "15")],
         queries=[("apple 15", 0, 1)], embed=None)
def test_fast_path_reference_and_ground_truth_agree_on_long_sections(events, queries, embed):
    """Both paths and the ground truth: the same order, scores, ranks and best pieces, with
    none, some or all sections embedded, titles weighted above the text."""
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder=ToyEmbedder()) as store:
            # titles share words with the text and the queries: BM25's column weights count
            for mid, body, day, heading in sorted(events, key=lambda e: e[2]):
                store.remember(mid, body, title=heading, namespace="a",
                               known_at=format_time(T0 + day * DAY))
            store.embed_pending(max_rows=embed)
            embedded = {r.revision_id for r in store.export()} if embed is None else None
            for q, day, limit in queries:
                kw = dict(namespace="a", as_of=format_time(T0 + day * DAY),
                          valid_at=format_time(T0 + day * DAY), limit=limit)
                fast, ref = store.search(q, **kw), store.search_reference(q, **kw)
                same(fast, ref)
                assert [r.matched_lines for r in fast] == [r.matched_lines for r in ref]
                if embedded is None:
                    continue
                want = gt.expected(revs_of(store), q, "a", T0 + day * DAY, T0 + day * DAY,
                                   ToyEmbedder(), embedded)[:limit]
                assert [w[0] for w in want] == [r.memory_id for r in fast]
                for w, r in zip(want, fast):
                    assert abs(w[1] - r.score) <= 1e-9 and (w[4] is None) == (r.cosine is None)
                    if r.cosine is None:
                        continue
                    assert abs(w[4] - r.cosine) <= 1e-6
                    toy, parts = ToyEmbedder(), pieces(r.title, r.content)
                    sims = [float(toy.passages([p.text])[0].astype(float)
                                  @ toy.query(q).astype(float)) for p in parts]
                    best = [(p.first_line, p.last_line) for p, c in zip(parts, sims)
                            if c >= max(sims) - 1e-6]
                    assert r.matched_lines in best  # the piece named is the best one


class Counting(ToyEmbedder):
    def __init__(self):
        self.read: list[str] = []

    def passages(self, texts):
        self.read.extend(texts)
        return super().passages(texts)


def long_body(topic: str) -> str:
    return "\n\n".join(f"{topic} paragraph {i}: " + " ".join(WORDS[:10]) * 2 for i in range(4))


def test_a_repeated_or_edited_section_reuses_its_pieces_vectors(tmp_path):
    model = Counting()
    with MemoryStore.open(tmp_path / "m.db", embedder=model) as store:
        store.remember("a", long_body("alpha"), title="T", namespace="n")
        store.embed_pending()
        first = len(model.read)
        assert first == len(pieces("T", long_body("alpha"))) > 1
        store.remember("b", long_body("alpha"), title="T", namespace="n")  # a copy
        assert store.embed_pending().reused == 1 and len(model.read) == first
        edited = long_body("alpha") + "\n\n" + "A new closing paragraph with other words " * 4
        store.remember("a", edited, title="T", namespace="n")
        store.embed_pending()
        assert model.read[first:] == [pieces("T", edited)[-1].text]  # the new piece alone
        hit = store.search("a new closing paragraph with other words", namespace="n")[0]
        assert hit.memory_id == "a" and hit.matched_lines == (9, 9)
        assert store.health().vectors == {model.key: 3}  # revisions with vectors


class Later(Counting):
    """The same model read by pieces: a new key, the whole-section key as its earlier one."""

    @property
    def key(self) -> str:
        return "toy/1/pieces"

    @property
    def earlier_keys(self):
        return ("toy/1",)


def test_a_file_from_before_pieces_is_upgraded_and_reembedded_reusing_short_sections(tmp_path):
    path = tmp_path / "m.db"
    with MemoryStore.open(path, embedder=ToyEmbedder()) as store:
        store.remember("short", "a short note about kiwi", title="S", namespace="n")
        store.remember("long", long_body("beta"), title="L", namespace="n")
    # Make it the previous schema: whole-section vectors, one per revision.
    conn = sqlite3.connect(path)
    conn.executescript("""
        DROP TABLE vectors;
        CREATE TABLE vectors (seq INTEGER PRIMARY KEY AUTOINCREMENT,
            revision_id INTEGER NOT NULL REFERENCES revisions(id), embedder TEXT NOT NULL,
            vector BLOB NOT NULL, passage_hash TEXT, UNIQUE (embedder, revision_id)) STRICT;
        PRAGMA user_version = 8;""")
    from personal_memory.embedding.runner import passage_hash
    toy = ToyEmbedder()
    for rid, title, content in conn.execute("SELECT id, title, content FROM revisions"):
        text = passage_text(title, content)
        conn.execute("INSERT INTO vectors (revision_id, embedder, vector, passage_hash) "
                     "VALUES (?, 'toy/1', ?, ?)", (rid, toy.passages([text])[0].tobytes(),
                                                   passage_hash(text)))
    conn.commit()
    conn.close()
    model = Counting()
    with MemoryStore.open(path, embedder=model) as old:  # the same key: vectors kept
        assert old.health().schema_version == 9 and old.pending_vectors() == 0
        assert old.search("kiwi", namespace="n")[0].memory_id == "short"
    later = Later()
    with MemoryStore.open(path, embedder=later) as new:
        assert new.pending_vectors() == 2
        assert [r.memory_id for r in new.search("kiwi", namespace="n")] == ["short"]
        run = new.reembed()
        assert run.dropped == 2 and new.pending_vectors() == 0
        assert later.read == [p.text for p in pieces("L", long_body("beta"))]  # short reused
        assert new.search("beta paragraph 2", namespace="n")[0].matched_lines == (5, 5)


def test_a_stop_between_pieces_keeps_no_half_embedded_section(tmp_path):
    """The embedder asks before every passage; stopping inside a section stores none of
    its pieces (it has all of its vectors or none) and the next run finishes it."""
    model = Counting()
    with MemoryStore.open(tmp_path / "m.db", embedder=model) as store:
        store.remember("short", "a short note about kiwi", title="S", namespace="n")
        store.remember("long", long_body("gamma"), title="L", namespace="n")
        asked = []
        run = store.embed_pending(cancel=lambda: asked.append(1) or len(model.read) >= 2)
        assert run.interrupted and len(model.read) == 2  # the long one's first two pieces
        assert store.pending_vectors() == 2 and store.health().vectors == {}
        assert len(asked) == 4  # once for the batch, then before each passage it would read
        run = store.embed_pending()
        assert run.embedded == 2 and store.pending_vectors() == 0


@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=12), seed=st.integers(0, 2**16),
       asked=st.lists(st.lists(st.integers(0, 11), max_size=8), min_size=1, max_size=4))
def test_the_screens_exact_cosine_is_each_rows_best_piece_the_first_of_equals(sizes, seed,
                                                                              asked):
    """CosineScreen.exact, vectorised over rows, against a loop over each row's pieces in
    order (the reference rule), with repeated pieces making ties, asked in any order and
    again."""
    import numpy as np

    from personal_memory.search.contract import cosines
    from personal_memory.search.screening import CosineScreen
    rng = np.random.default_rng(seed)
    total = sum(sizes)
    matrix = rng.integers(-2, 3, size=(total, 4)).astype(np.float32)  # small: many ties
    q = rng.integers(-2, 3, size=4).astype(np.float32)
    order = rng.permutation(total)  # a row's pieces side by side in `order`
    ends = np.cumsum(sizes)
    firsts = ends - np.array(sizes)
    piece = np.zeros(total, dtype=np.int32)
    for a, b in zip(firsts, ends):
        piece[order[a:b]] = np.arange(b - a)
    screen = CosineScreen(np.arange(len(sizes)), np.zeros(len(sizes)), matrix, q,
                          pieces=(order, firsts, ends, piece))
    for idx in asked:
        idx = [i % len(sizes) for i in idx]
        got = screen.exact(np.array(idx, dtype=np.int64))
        for i, value in zip(idx, got.tolist()):
            mine = cosines(matrix[order[firsts[i]:ends[i]]].astype(np.float64), q)
            assert value == mine.max()
            assert screen.piece(i) == int(np.argmax(mine))
