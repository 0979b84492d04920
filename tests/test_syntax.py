"""The search syntax: parsed in one place, one-line errors, and every form checked on
random vaults against a brute-force reference (the filters applied to the visible rows
before ranking), on both search paths."""

import os
import re
import tempfile
from contextlib import contextmanager

import apsw
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ground_truth as gt
from personal_memory import MemoryStore
from personal_memory.errors import InvalidArgument
from personal_memory.notes.folders import Folder
from personal_memory.search import syntax
from personal_memory.times import parse_time


def test_parse():
    q = syntax.parse('budget "exact phrase" -draft -"old plan" path:"Team docs" folder:a/b '
                     'file:notes section:Setup tag:#Work 10:30')
    assert q.words == "budget exact phrase 10:30"
    assert (q.phrases, q.excluded) == (("exact phrase",), ("draft", "old plan"))
    assert (q.paths, q.folders, q.files, q.sections, q.tags) == (
        ("Team docs",), ("a/b",), ("notes",), ("Setup",), ("work",))
    assert syntax.parse("plain words").filters_rows is False


@pytest.mark.parametrize("text, fragment", [
    ('"unclosed phrase', "not closed"),
    ("budget path:", "has no value"),
    ('budget path:""', "has no value"),
    ("budget -path:x", "cannot be excluded"),
    ("tag:work -draft", "give words"),
    ('budget ""', "empty phrase"),
])
def test_malformed_queries_are_one_line_errors(tmp_path, text, fragment):
    with pytest.raises(InvalidArgument, match=fragment):
        syntax.parse(text)
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        with pytest.raises(InvalidArgument) as err:
            s.search(text, namespace="notes")
        assert "\n" not in str(err.value)


WORDS = ["alpha", "beta", "gamma", "delta", "echo"]
FOLDERS = ["", "team", "team/docs", "home"]
NAMES = ["plan", "notes", "budget", "alpha list"]
phrase = st.lists(st.sampled_from(WORDS), min_size=2, max_size=2).map(" ".join)
note = st.tuples(st.sampled_from(FOLDERS), st.sampled_from(NAMES),
                 st.sampled_from(["Setup", "Usage", "Plan"]),
                 st.lists(st.sampled_from(WORDS), min_size=2, max_size=10).map(" ".join))
query = st.tuples(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
    st.lists(phrase, max_size=1), st.lists(st.sampled_from(WORDS + ["alpha beta"]), max_size=1),
    st.lists(st.sampled_from(["team", "docs", "plan", "home/"]), max_size=1),
    st.lists(st.sampled_from(["team", "team/docs", "home"]), max_size=1),
    st.lists(st.sampled_from(["plan", "list"]), max_size=1),
    st.lists(st.sampled_from(["setup", "usage"]), max_size=1))


def render(words, phrases, excluded, paths, folders, files, sections) -> str:
    q = lambda v: f'"{v}"' if " " in v else v  # noqa: E731
    parts = [words] + [f'"{p}"' for p in phrases] + [f"-{q(x)}" for x in excluded]
    parts += [f"path:{q(p)}" for p in paths] + [f"folder:{q(f)}" for f in folders]
    parts += [f"file:{q(f)}" for f in files] + [f"section:{q(s)}" for s in sections]
    return " ".join(parts)


def indexed_revs(db: str) -> tuple[list, dict]:
    """The store's revisions with the text they are indexed by, and each one's note."""
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    rows = list(conn.execute(
        "SELECT id, namespace, memory_id, known_at, valid_from, valid_to, deleted, "
        "coalesce(index_title, title), coalesce(index_content, content), note FROM revisions "
        "WHERE NOT (note IS NOT NULL AND memory_id = note || '#')"))
    conn.close()
    revs = [gt.Rev(i, ns, m, k, vf, vt, bool(d), with_file_name(t, n), c, note=n)
            for i, ns, m, k, vf, vt, d, t, c, n in rows]
    return revs, {r[0]: r[9] for r in rows}


def with_file_name(title: str, note: str) -> str:
    """The title text as the keyword index holds it: the note's file name after it when
    the name holds a word it lacks (every name here ends in a number no title holds)."""
    name = note.rsplit("/", 1)[-1].removesuffix(".md")
    words = lambda text: set(re.findall(r"[a-z0-9]+", text.lower()))  # noqa: E731
    return title if words(name) <= words(title) else f"{title} \n{name}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notes=st.lists(note, min_size=1, max_size=8), queries=st.lists(query, min_size=1,
                                                                      max_size=4))
def test_every_form_equals_a_brute_force_reference(notes, queries):
    with tempfile.TemporaryDirectory() as tmp:
        vault = os.path.join(tmp, "v")
        for n, (folder, name, heading, body) in enumerate(notes):
            where = os.path.join(vault, folder)
            os.makedirs(where, exist_ok=True)
            with open(os.path.join(where, f"{name} {n}.md"), "w") as fh:
                fh.write(f"# {heading}\n\n{body}\n")
        db = os.path.join(tmp, "m.db")
        with MemoryStore.open(db, embedder="none") as store:
            store.sync([Folder.of(vault)])
            revs, note_of = indexed_revs(db)
            now = parse_time(store.export().__next__().known_at) + 1
            for parts in queries:
                text = render(*parts)
                parsed = syntax.parse(text)

                def keep(r, parsed=parsed):
                    n = note_of[r.id]
                    return (syntax.note_matches(parsed, n)
                            and syntax.section_matches(parsed, r.memory_id, n)
                            and all(gt.holds_phrase(r, p) for p in parsed.phrases)
                            and not any(gt.holds_phrase(r, x) for x in parsed.excluded))
                want = [w[0] for w in gt.expected(revs, parsed.words, "notes", now, now,
                                                  keep=keep)][:50]
                fast = store.search(text, namespace="notes", limit=50)
                ref = store.search_reference(text, namespace="notes", limit=50)
                assert [r.memory_id for r in fast] == [r.memory_id for r in ref] == want, text


DAYS = ["2026-03-14", "2026-02-14", "2025-03-14", "2026_03_15", "20260316", "2026-13-01",
        "2026-W11", "2026-W12", "2026-03", "2026_02", "2026-Q1", "2025-W53", "14.03.2026",
        "03-14-2026", "15_03_2026", "03-04-2026"]
daily = st.tuples(st.sampled_from(DAYS + ["plan", "ideas"]),
                  st.sampled_from(["", " Sunday", " call"]),
                  st.lists(st.sampled_from(WORDS[:6]), min_size=1, max_size=6).map(" ".join))
dated_query = st.tuples(st.lists(st.sampled_from(WORDS[:6] + ["did", "I"]), max_size=3),
                        st.sampled_from(["", "on 14 March", "on March 14 2026", "in March 2026",
                                         "on 2026-03-15", "on the 16th of March", "in 2026",
                                         "yesterday", "last week", "in week 11",
                                         "2026-W12", "in March", "Q1 2026",
                                         "the week of March 9 2026", "for February",
                                         "on 14/03", "on 3/4/2026"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notes=st.lists(daily, min_size=1, max_size=8), queries=st.lists(dated_query,
                                                                       min_size=1, max_size=4))
def test_a_day_named_favours_the_notes_named_by_it_on_every_path(notes, queries):
    """Daily and periodic notes and the periods named in queries: the fast path, the reference path and the
    brute-force model agree (keyword-only), and so do both paths with a model."""
    with tempfile.TemporaryDirectory() as tmp:
        vault = os.path.join(tmp, "v")
        os.makedirs(vault)
        for n, (day, suffix, body) in enumerate(notes):
            with open(os.path.join(vault, f"{day}{suffix} {n}.md"), "w") as fh:
                fh.write(f"- {body}\n")
        db = os.path.join(tmp, "m.db")
        with MemoryStore.open(db, embedder="none") as store:
            store.sync([Folder.of(vault)])
            revs, _ = indexed_revs(db)
            now = parse_time(store.export().__next__().known_at) + 1
            for words, date in queries:
                text = " ".join([*words, date]).strip() or "did"
                want = gt.expected(revs, text, "notes", now, now)[:50]
                fast = store.search(text, namespace="notes", limit=50)
                ref = store.search_reference(text, namespace="notes", limit=50)
                assert [r.memory_id for r in fast] == [r.memory_id for r in ref] == \
                    [w[0] for w in want], text
                assert all(abs(r.score - w[1]) <= 1e-9 for r, w in zip(fast, want)), text
                assert [r.dated for r in fast] == [r.dated for r in ref], text
        with MemoryStore.open(db, embedder=gt.ToyEmbedder()) as store:
            store.embed_pending()
            for words, date in queries:
                text = " ".join([*words, date]).strip() or "did"
                fast = store.search(text, namespace="notes", limit=50)
                ref = store.search_reference(text, namespace="notes", limit=50)
                assert [r.memory_id for r in fast] == [r.memory_id for r in ref], text
                assert all(abs(a.score - b.score) <= 1e-9 for a, b in zip(fast, ref)), text
                assert fast.no_answer == ref.no_answer, text


NOTES = ["notes/Obsidian/About Obsidian.md", "notes/Obsidian Sync/Set up Obsidian Sync.md",
         "notes/Obsidian Sync/Sync limitations.md", "notes/Projects/2025/plan.md"]


@pytest.mark.parametrize("text, expected", [
    ('set up folder:"Obsidian Sync"', []),
    ("plan folder:Projects/2025", []),
    ("plan folder:projects", []),
    ("folder:Obsidian Sync set up", ['folder:Obsidian searched the folder "Obsidian"; '
                                     'for the folder "Obsidian Sync", quote it: '
                                     'folder:"Obsidian Sync"']),
    ("plan folder:Archive", ["folder:Archive names no folder known here"]),
    ("folder:Obsid plan", ["folder:Obsid names no folder known here"]),
])
def test_a_folder_filter_that_names_no_folder_says_so(text, expected):
    q = syntax.parse(text)
    assert syntax.folder_warnings(text, q.folders, NOTES, "here") == expected


def test_a_folder_with_spaces_unquoted_names_no_folder(tmp_path):
    vault = tmp_path / "vault"
    (vault / "Obsidian Sync").mkdir(parents=True)
    (vault / "Obsidian Sync" / "limits.md").write_text("# Limits\n\nSync keeps versions.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        found = store.search("folder:Obsidian Sync versions", namespace="notes")
        assert list(found) == []
        assert found.warnings == [
            'folder:Obsidian names no folder known in namespace \'notes\'; the folder '
            '"Obsidian Sync" has a space: quote it, folder:"Obsidian Sync"']
        found = store.search('folder:"Obsidian Sync" versions', namespace="notes")
        assert len(found) == 1 and found.warnings == []
        found = store.search("folder:Sync versions", namespace="notes", as_of="2020-01-01")
        assert found.warnings == ["folder:Sync names no folder known as of "
                                  "2020-01-01T23:59:59.999999Z in namespace 'notes'"]


@contextmanager
def synced(tmp: str, files: dict[str, str]):
    """A store of ``files`` (path: text) synced in ``tmp``, its indexed revisions, and a
    moment after its sync."""
    vault = os.path.join(tmp, "v")
    os.makedirs(vault)
    for name, text in files.items():
        with open(os.path.join(vault, name), "w") as fh:
            fh.write(text)
    db = os.path.join(tmp, "m.db")
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)])
        yield store, indexed_revs(db)[0], parse_time(store.export().__next__().known_at) + 1


LANGUAGE_WORDS = ["die", "hat", "van", "son", "wo", "ist", "wann", "where", "is", "my", "the",
                  "rechnung", "hut", "school", "de", "los", "pour", "het", "mijn", "dir"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notes=st.lists(st.lists(st.sampled_from(LANGUAGE_WORDS), min_size=1, max_size=8),
                      min_size=1, max_size=6),
       queries=st.lists(st.lists(st.sampled_from(LANGUAGE_WORDS), min_size=1, max_size=5),
                        min_size=1, max_size=4))
def test_function_words_of_the_querys_language_on_every_path(notes, queries):
    """"van" and "son" are function words in a Dutch or Spanish question, words in an
    English one: the fast path, the reference path and the brute-force model agree."""
    files = {f"n{n}.md": " ".join(words) + "\n" for n, words in enumerate(notes)}
    with tempfile.TemporaryDirectory() as tmp, synced(tmp, files) as (store, revs, now):
        for words in queries:
            text = " ".join(words)
            want = gt.expected(revs, text, "notes", now, now)[:50]
            fast = store.search(text, namespace="notes", limit=50)
            ref = store.search_reference(text, namespace="notes", limit=50)
            assert [r.memory_id for r in fast] == [r.memory_id for r in ref] == \
                [w[0] for w in want], text


def test_a_word_is_a_function_word_in_its_own_language_only():
    from personal_memory.search.contract import keyword_terms
    with tempfile.TemporaryDirectory() as tmp, \
            MemoryStore.open(os.path.join(tmp, "m.db"), embedder="none") as store:
        def terms(q):
            return keyword_terms(store._db, q)  # noqa: SLF001
        assert terms("¿Cuáles son los horarios?") == ["horario"]
        assert terms("nous partons pour la maison") == ["parton", "maison"]
        assert "son" in terms("Le son de la guitare")  # as Spanish as French: no rule
        assert "pour" in terms("how long to pour concrete")
        assert terms("what is my son's school") == ["son", "school"]
        assert terms("de auto van mijn vader") == ["auto", "vader"]
        assert terms("van in the garage") == ["van", "garag"]  # "in": English and Dutch
        # German keeps its "die", "hat" and "habe" for the words they match (measured)
        assert "hat" in terms("Welche Telefonnummer hat mein Hausarzt?")
