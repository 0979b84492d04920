"""A note the best results link to gains a share of their scores (search/ranking.py:
linked), from the links known at the cutoff: the fast path, the reference path and the
brute-force model agree on random linked vaults, and a search at a cutoff ranks as if the
links written later did not exist."""

import os
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

import ground_truth as gt
from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from personal_memory.search.graph import LinkGraph
from support import vault_of
from test_fast_search import same
from test_syntax import synced

WORDS = ["alpha", "beta", "gamma", "delta"]
body = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)
OWN = "[here](%23Part)"  # a link within the note, whichever note it is in
written = st.tuples(st.integers(0, 7), st.sampled_from(["[[{}]]", "[[{}|see]]", "![[{}]]",
                                                        "[[{}#Part]]", "[x]({}.md)", OWN]))
note = st.tuples(body, st.lists(written, max_size=4), st.booleans())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notes=st.lists(note, min_size=2, max_size=8),
       queries=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
                        min_size=1, max_size=3))
def test_links_lift_notes_alike_on_every_path(notes, queries):
    files, links = {}, {}
    for n, (words, targets, second) in enumerate(notes):
        shown = " ".join(form.format(f"n{t}") for t, form in targets)
        files[f"n{n}.md"] = f"# Top\n\n{' '.join(words)} {shown}\n" + (
            f"\n## Part\n\n{words[0]}\n" if second else "")
        # what the writer linked: notes that exist, each once, never the note itself
        links[f"v/n{n}.md"] = {f"v/n{t}.md" for t, form in targets
                                   if t < len(notes) and t != n and form != OWN}
    with tempfile.TemporaryDirectory() as tmp, synced(tmp, files) as (store, revs, now):
        for words in queries:
            text = " ".join(words)
            want = gt.expected(revs, text, "notes", now, now, links=links)[:50]
            fast = store.search(text, namespace="notes", limit=50)
            ref = store.search_reference(text, namespace="notes", limit=50)
            same(fast, ref)
            assert all(abs(a.linked - b.linked) <= 1e-9 for a, b in zip(fast, ref)), text
            assert [r.memory_id for r in fast] == [w[0] for w in want], text
            assert all(abs(r.score - w[1]) <= 1e-9 for r, w in zip(fast, want)), text
        store.close()
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder=gt.ToyEmbedder()) as model:
            model.embed_pending()
            for words in queries:
                text = " ".join(words)
                same(model.search(text, namespace="notes", limit=50),
                     model.search_reference(text, namespace="notes", limit=50))


def test_a_linked_note_rises_from_the_link_on_and_not_before(tmp_path):
    vault = vault_of(tmp_path, {"Hub.md": "Kettle descaling with citric acid every month.\n",
                                "Other.md": "Kettle.\n", "Target.md": "Kettle.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        before = max(r.known_at for r in store.export())  # the first sync's last write
        order = [r.note for r in store.search("kettle descaling", namespace="notes")]
        assert order == ["vault/Hub.md", "vault/Other.md", "vault/Target.md"]  # a tie: by ID
        (vault / "Hub.md").write_text("Kettle descaling with citric acid every month. "
                                      "See [[Target]].\n")
        store.sync([Folder.of(vault)])
        for search in (store.search, store.search_reference):
            found = search("kettle descaling", namespace="notes")
            assert [r.note for r in found] == ["vault/Hub.md", "vault/Target.md",
                                               "vault/Other.md"]
            # the lift is a tenth of the linking note's score: Target has one linking note
            assert abs(found[1].score - found[2].score - 0.1 * found[0].score) <= 1e-9
            assert abs(found[1].linked - 0.1 * found[0].score) <= 1e-9  # and says so
            assert found[0].linked == found[2].linked == 0.0
            then = search("kettle descaling", namespace="notes", as_of=before)
            assert [r.note for r in then] == order


def test_the_graph_counts_each_linking_note_once_and_resolves_as_obsidian():
    graph = LinkGraph.of([
        ("notes/a.md", {"links": ["b", "b#Part", "B.md", "sub/c", "#Own", "a", "missing",
                                  "https://x.org"]}),
        ("notes/b.md", {"links": ["Nick", "c%20d.md"]}),
        ("notes/sub/c.md", {"aliases": ["Nick"]}),
        ("notes/c d.md", {}),
        ("other/b.md", {"links": ["b"]}),
    ])
    assert graph.targets("notes/a.md") == {"notes/b.md", "notes/sub/c.md"}
    assert graph.targets("notes/b.md") == {"notes/sub/c.md", "notes/c d.md"}
    assert graph.targets("other/b.md") == set()  # itself: its own collection's b
    assert graph.degree["notes/sub/c.md"] == 2 and graph.degree["notes/b.md"] == 1
    # a Markdown link is relative to its note first ([index](index.md) in proj/plan.md)
    md = LinkGraph.of([("v/index.md", {}), ("v/proj/index.md", {}),
                       ("v/proj/plan.md", {"links": ["index.md", "..%2Findex.md"]}),
                       ("v/proj/wiki.md", {"links": ["index"]})])
    assert md.targets("v/proj/plan.md") == {"v/proj/index.md", "v/index.md"}
    assert md.targets("v/proj/wiki.md") == {"v/index.md"}  # a wikilink: the vault's path
    # a Markdown link that decodes to "#Setup" is each note's own, not the first's
    own = LinkGraph.of([("v/a.md", {"links": ["%23Setup"]}), ("v/b.md", {"links": ["%23Setup"]})])
    assert own.out == {} and not own.degree


part = st.sampled_from(["a", "b", "A", "c d", ""])


@settings(max_examples=200, deadline=None)
@given(paths=st.lists(st.lists(part, min_size=1, max_size=4).map("/".join), max_size=8),
       key=st.lists(part, min_size=2, max_size=3).map("/".join))
def test_a_partial_path_finds_what_a_scan_of_every_path_finds(paths, key):
    """A link naming the end of a note's path ([[b/c]] for a/b/c.md) is one lookup; it
    finds the notes a scan of every path finds."""
    from personal_memory.notes.resolve import NoteIndex
    index = NoteIndex("v", {f"v/{p}.md": [] for p in paths})
    key = key.casefold()
    scan = sorted(n for rel, n in index.paths.items() if rel.endswith("/" + key))
    assert sorted(index.tails(key)) == scan


name = st.sampled_from(["a", "b", "B", "c d", "x.y"])
path = st.lists(name, min_size=1, max_size=3).map("/".join)
notes_of = st.dictionaries(path.map(lambda p: f"v/{p}.md"),
                           st.lists(st.sampled_from(["Nick", "b", "x.y"]), max_size=1)
                           .map(tuple), max_size=6)
target = st.one_of(path, path.map(lambda p: p + ".md"), path.map(lambda p: "../" + p + ".md"),
                   path.map(lambda p: "./" + p.replace(" ", "%20") + ".md"),
                   st.sampled_from(["Nick", "a/..", "a/", "..", "b#Part", "%62.md"]))


@settings(max_examples=300, deadline=None)
@given(first=notes_of, second=notes_of, links=st.lists(target, max_size=6))
def test_a_resolver_carried_to_other_notes_resolves_as_a_new_one(first, second, links):
    """The fast path keeps what it resolved when notes are added, removed or re-aliased
    (Resolver.after): every link then resolves as a resolver made for the new notes alone
    resolves it."""
    from personal_memory.search.graph import Resolver
    sources = sorted(set(first) | set(second))
    old = Resolver(first)
    for note in sources:
        old.targets(note, links)
    carried, fresh = old.after(second), Resolver(second)
    for note in sources:
        assert carried.targets(note, links) == fresh.targets(note, links), note


embed = st.tuples(st.integers(0, 5), st.sampled_from(
    ["![[{}]]", "![[{}#Part]]", "![[sub/{}]]", "![x]({}.md)", "![x](../{}.md)", "![[Nick]]",
     "![[{}.png]]"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(embeds=st.lists(st.lists(embed, max_size=3), min_size=2, max_size=6),
       aliased=st.integers(0, 5))
def test_the_notes_that_embed_a_result_are_those_a_reading_of_every_embed_finds(
        embeds, aliased):
    """A search's ``embedded_in`` reads only the embeds that hold a result's name, from the
    notes as the search held them: the same as when every embed of every note is read
    from the database and resolved."""
    from personal_memory import memory
    from personal_memory.timeline import links as timeline_links
    files = {}
    for n, written in enumerate(embeds):
        head = "---\naliases: [Nick]\n---\n" if n == aliased else ""
        shown = " ".join(form.format(f"n{t}") for t, form in written)
        where = "sub/" if n % 2 else ""
        files[f"{where}n{n}.md"] = f"{head}# Top\n\nalpha {shown}\n\n## Part\n\nalpha beta\n"
    with tempfile.TemporaryDirectory() as tmp:
        vault = os.path.join(tmp, "v")
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(vault, name)), exist_ok=True)
            with open(os.path.join(vault, name), "w") as fh:
                fh.write(text)
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder="none") as store:
            store.sync([Folder.of(vault)])
            for query in ("alpha", "beta"):
                found = [r.embedded_in for r in store.search(query, namespace="notes",
                                                             snippets=True, limit=50)]
                every, held = timeline_links.names_in, memory.search_embeds
                try:
                    timeline_links.names_in = lambda raw: None  # every embed resolved
                    memory.search_embeds = lambda *args: held(*args[:5])  # read again
                    want = [r.embedded_in for r in store.search(
                        query, namespace="notes", snippets=True, limit=50)]
                finally:
                    timeline_links.names_in, memory.search_embeds = every, held
                assert found == want, query


step = st.tuples(st.sampled_from(["add", "rename", "delete", "relink", "alias"]),
                 st.integers(0, 5), st.integers(0, 5))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=8))
def test_one_store_searched_as_notes_come_go_and_move_ranks_as_the_reference(steps):
    """The fast path keeps what it resolved from search to search (graphs, targets); after
    every change it answers as the reference path, which resolves every link anew."""
    with tempfile.TemporaryDirectory() as tmp:
        vault = os.path.join(tmp, "v")
        os.makedirs(os.path.join(vault, "sub"))

        def write(name, links, alias=None):
            head = f"---\naliases: [{alias}]\n---\n" if alias else ""
            with open(os.path.join(vault, name), "w") as fh:
                fh.write(f"{head}# T\n\nalpha beta {' '.join(links)}\n")
        for n in range(4):
            write(f"n{n}.md", [f"[[n{(n + 1) % 4}]]", f"[x](sub/m{n}.md)"])
        with MemoryStore.open(os.path.join(tmp, "m.db"), embedder="none") as store:
            store.sync([Folder.of(vault)])
            for op, i, j in steps:
                names = sorted(os.path.relpath(os.path.join(d, f), vault)
                               for d, _, fs in os.walk(vault) for f in fs)
                pick = names[i % len(names)] if names else None
                if op == "add" or pick is None:  # [[m{i}]]: its own name, until another
                    write(f"sub/m{i}.md" if j % 2 else f"m{i}.md",
                          [f"[[n{j}]]", "[[Nick]]", f"[[m{i}]]"])
                elif op == "rename":
                    os.replace(os.path.join(vault, pick), os.path.join(vault, f"n{j}.md"))
                elif op == "delete" and len(names) > 1:  # an emptied folder is refused
                    os.remove(os.path.join(vault, pick))
                elif op == "relink":
                    write(pick, [f"[[m{j}]]", f"![[n{i}]]", f"[y](../n{j}.md)"])
                elif op == "alias":
                    write(pick, [f"[[n{j}]]"], alias="Nick")
                store.sync([Folder.of(vault)])
                for query in ("alpha", "beta"):
                    same(store.search(query, namespace="notes", limit=50),
                         store.search_reference(query, namespace="notes", limit=50))


def test_a_link_to_its_own_name_follows_a_note_of_that_name_written_later(tmp_path):
    """[[Plan]] in sub/Plan.md is the note itself until a Plan.md is written at the vault's
    root, then it is that one's: the fast path, which resolved it before, must see it."""
    vault = vault_of(tmp_path, {"sub/Plan.md": "# Kettle\n\nKettle descaling. [[Plan]]\n",
                                "Other.md": "# Other\n\nKettle.\n"}, name="v")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        store.search("kettle descaling", namespace="notes")  # resolved once, as itself
        (vault / "Plan.md").write_text("# Plan\n\nKettle.\n")
        store.sync([Folder.of(vault)])
        fast = store.search("kettle descaling", namespace="notes")
        same(fast, store.search_reference("kettle descaling", namespace="notes"))
        assert [r.note for r in fast][:2] == ["v/sub/Plan.md", "v/Plan.md"]  # lifted
