"""Notes written to hurt the parsers (YAML, links, Markdown, tags): each is read in time
linear in its size and in bounded memory, a bad front matter is that note's named problem,
and a sync imports every other note. Syncs run as `memory sync` processes."""

import json
import resource
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from personal_memory import MemoryStore
from personal_memory.limits import (FRONT_MATTER_MAX_DIGITS, MAX_CONTENT_CHARS, MAX_PROPERTY_CHARS,
                                    MAX_PROPERTY_VALUE_CHARS)
from personal_memory.notes import front_matter, model
from personal_memory.notes.folders import Folder
from support import MEMORY, run_memory, user_env, wait_for, word_hits

# Nine lists of nine aliases, six deep: 9**7 values from a few hundred bytes.
ALIAS_BOMB = "\n".join(
    ["---", "a: &L0 [x,x,x,x,x,x,x,x,x]"]
    + [f"b{i}: &L{i} [" + ",".join([f"*L{i - 1}"] * 9) + "]" for i in range(1, 7)]
    + ["tags: !!omap [x: *L6]", "---", "bomb body bilberry", ""])


def folder_with(root, hostile: dict[str, str]):
    root.mkdir()
    for i in range(3):
        (root / f"fine{i}.md").write_text(f"# Fine {i}\n\nan ordinary note about walruses\n")
    for name, text in hostile.items():
        (root / name).write_text(text)
    return root


def synced(tmp_path, root, *, limit_mb: int | None = None, timeout=120):
    """`memory sync` of the folder into a fresh database, keyword-only; with ``limit_mb``
    its address space is limited to that."""
    import subprocess

    def limit():
        size = limit_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    db = tmp_path / "m.db"
    p = subprocess.run(MEMORY + ["--db", str(db), "sync", str(root)], capture_output=True,
                       text=True, env=user_env({"MEMORY_EMBEDDER": "none"}), timeout=timeout,
                       preexec_fn=limit if limit_mb else None)
    return db, p


def found(db, word) -> list[str]:
    p = run_memory("--db", db, "search", word, "--json", env={"MEMORY_EMBEDDER": "none"})
    assert p.returncode == 0, p.stderr
    return sorted(r["memory_id"] for r in word_hits(p.stdout))


def notes_with(db, word) -> list[str]:
    return sorted({memory_id.split("#")[0] for memory_id in found(db, word)})


def test_a_number_too_long_for_python_is_that_notes_problem_and_all_notes_import(tmp_path):
    big = "---\ntitle: Big\nserial: " + "7" * 5000 + "\n---\nbody of the big blueberry\n"
    root = folder_with(tmp_path / "v", {"big.md": big})
    db, p = synced(tmp_path, root)
    assert p.returncode == 0, p.stderr
    assert "4 imported" in p.stdout and "Traceback" not in p.stderr
    assert (f"big.md: front matter holds a number 5,000 characters long (the limit is "
            f"{FRONT_MATTER_MAX_DIGITS:,}); imported as text") in p.stdout
    assert found(db, "walruses") == [f"v/fine{i}.md#Fine {i}" for i in range(3)]
    assert notes_with(db, "blueberry") == ["v/big.md"]


def test_an_alias_bomb_is_refused_in_bounded_memory_and_all_notes_import(tmp_path):
    """The bomb once took 470 MB and stored junk tags (the expanded lists as text); a
    300 MB address space is now enough for the whole sync."""
    assert len(ALIAS_BOMB) < 400
    root = folder_with(tmp_path / "v", {"bomb.md": ALIAS_BOMB})
    db, p = synced(tmp_path, root, limit_mb=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "4 imported" in p.stdout
    assert "bomb.md: front matter expands to more than 100,000 values" in p.stdout
    assert found(db, "walruses") == [f"v/fine{i}.md#Fine {i}" for i in range(3)]
    assert notes_with(db, "bilberry") == ["v/bomb.md"]
    note = json.loads(run_memory("--db", db, "read", "v/bomb.md", "--json").stdout)
    assert note["tags"] == [] and note["title"] == "bomb"  # nothing read from the bomb
    assert "*L6" in note["text"]  # kept as text


@pytest.mark.parametrize("text, problem", [
    (ALIAS_BOMB.split("---\n")[1], "expands to more than 100,000 values"),
    ("a: &s " + "x" * 300_000 + "\nb: [" + ", ".join(["*s"] * 10) + "]\n",
     "expands to more than 2,097,152 characters"),
    ("a: " + "[" * 150 + "]" * 150 + "\n", "is nested too deeply to read (more than 100"),
    ("n: " + "9" * 5000 + "\n", "holds a number 5,000 characters long"),
    ("n: 0x" + "f" * 5000 + "\n", "holds a number 5,002 characters long"),
    ("n: 1" + ":59" * 2000 + "\n", "holds a number 6,001 characters long"),
    ("n: !!int x\n", "holds a value its tag cannot have"),
    ("n: !!float x\n", "holds a value its tag cannot have"),
    ("n: !!bool x\n", "holds a value its tag cannot have"),
])
def test_front_matter_beyond_the_limits_is_a_named_problem(text, problem):
    meta = front_matter.parse(text)
    assert meta.error.startswith("front matter ") and problem in meta.error, meta.error


def test_the_limit_names_yaml_aliases_only_when_the_block_repeats_one():
    bomb = front_matter.parse(ALIAS_BOMB.split("---\n")[1]).error
    plain = front_matter.parse("a: [" + ", ".join(["x"] * 100_001) + "]\n").error
    assert "expands to more than 100,000 values" in plain and "alias" not in plain
    assert "YAML aliases, *name, counted each time they repeat" in bomb


def test_front_matter_within_the_limits_reads_and_tags_are_only_scalars():
    text = ("title: T\nbase: &b [one, two]\nagain: [*b, *b]\nserial: " + "7" * 900
            + "\ntags: [a, [b], {c: d}, !!omap [x: y], e, 3]\nself: &r [*r]\n")
    meta = front_matter.parse(text)
    assert meta.error is None and meta.title == "T" and meta.tags == ("a", "e", "3")
    # Other properties are words: a list an alias repeats is read once, one that holds
    # itself once; the whole is cut at its limit however many values the block has.
    assert meta.properties == "one, two\none, two\n" + "7" * 900
    many = front_matter.parse("a: [" + ", ".join(["word"] * 50_000) + "]\nafter: zyx\n")
    assert many.error is None and many.properties.endswith("\nzyx")  # not hidden by a
    assert len(many.properties) == MAX_PROPERTY_VALUE_CHARS + 4  # long value before it
    more = front_matter.parse("".join(f"k{i}: {'w' * 50}\n" for i in range(1000)))
    assert len(more.properties) == MAX_PROPERTY_CHARS


# Fragments that once made a scanner backtrack: each repeated to fill a note.
REPEATED = ["[a](", "![a](", "[a](<b ", "[a](b \"", "[a](b(", "[[", "![[", "[[a|", "[ [a] ",
            "`", "`` `", "<", "<http:", "#", " #a", " ^a", ":a", "|", "[a]: ", "[a]",
            "# [a](", "# ![", "# _a", "> ", "- ", "1. ", "    ", "*a", "&#", "\\", " ", "a\n",
            "|a|\n", "- \n", "# h\n", "# h\nx\n"]


def test_every_scanner_is_linear_on_repeated_openers(tmp_path):
    """Each fragment repeated to half a megabyte, parsed in one process: quadratic
    scanning takes hours on these (the `[a](` one took 49 s at 64 KB), linear about a
    minute in all. The timeout is generous on purpose; benchmarks/hostile_notes.py
    measures the times at two sizes."""
    import subprocess
    code = ("import sys\nfrom personal_memory.notes import model\n"
            "for frag in sys.argv[1:]:\n"
            "    start = '' if frag[0] == '#' else 'x '  # one long heading, or none\n"
            "    model.parse_note(start + frag * (512 * 1024 // len(frag)), 'v', 'a.md')\n"
            "print('done')\n")
    p = subprocess.run([sys.executable, "-c", code, *REPEATED], capture_output=True,
                       text=True, env=user_env(), timeout=300)
    assert p.returncode == 0 and p.stdout == "done\n", p.stderr[-2000:]


def test_a_hostile_note_at_the_size_limit_imports_with_the_others(tmp_path):
    size = MAX_CONTENT_CHARS - 100  # the largest note imported whole
    body = "[a](" * (size // 4)
    root = folder_with(tmp_path / "v", {"links.md": "# Hostile huckleberry\n\n" + body,
                                        "ticks.md": "cranberry " + "`" * size})
    db, p = synced(tmp_path, root, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "5 imported" in p.stdout
    assert found(db, "walruses") == [f"v/fine{i}.md#Fine {i}" for i in range(3)]
    assert found(db, "huckleberry")[0] == "v/links.md#Hostile huckleberry"
    assert notes_with(db, "cranberry") == ["v/ticks.md"]


ADVERSARIAL = st.sampled_from(
    REPEATED + ["[", "]", "(", ")", "![", "]]", "[[", "\n", "\n\n", "---\n", "```\n", "~~~",
                "  - ", ">", "\t", "\x0b", "\x0c", "\x1f", "\x7f", "\u200b", "\u202e",
                "\ufeff", "é", "\U0001f600", "\ud7ff", "#tag", "^block", "|---|\n",
                "> [!note]\n", "- [ ] ", "&a ", "*a ", "!!omap ", "!!python/object ", "? ",
                ": ", "<<: ", "9" * 5000, "%YAML 1.1\n", "{", "}"])
# Nesting: quotes in quotes, lists in lists, brackets, YAML flow collections and aliases.
DEEP = st.builds(lambda fragment, n: fragment * n,
                 st.sampled_from(["> ", "- ", "  - ", "[", "![", "[[", "`", "*", "_", "{a: ",
                                  "[*a, ", "- &a ", "(", "<"]),
                 st.integers(1, 300))
NOTE_TEXT = st.lists(st.one_of(ADVERSARIAL, DEEP, st.text(max_size=20).map(
    lambda s: s.replace("\x00", ""))), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(front=st.none() | NOTE_TEXT, body=NOTE_TEXT)
def test_parsing_any_note_gives_a_model_or_a_named_front_matter_problem(front, body):
    text = body if front is None else f"---\n{front}\n---\n{body}"
    text = text.replace("\r", "\n")  # as decoded: line endings are normalised
    note = model.parse_note(text, "v", "n.md")
    assert note.front_matter_error is None or note.front_matter_error.startswith(
        "front matter ")
    assert all(isinstance(t, str) and t for t in note.tags)
    # what changes reads of the block (its properties) reads it or says nothing
    assert all(isinstance(v, str) for v in front_matter.property_values(
        note.front_matter).values())


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(front=st.none() | NOTE_TEXT, body=NOTE_TEXT)
def test_a_sync_with_one_hostile_note_imports_every_other_note(tmp_path_factory, front, body):
    root = tmp_path_factory.mktemp("v")
    for i in range(2):
        (root / f"fine{i}.md").write_text(f"ordinary narwhal note {i}\n")
    text = body if front is None else f"---\n{front}\n---\n{body}"
    (root / "hostile.md").write_text(text, encoding="utf-8")
    with MemoryStore.open(tmp_path_factory.mktemp("db") / "m.db", embedder="none") as store:
        report = store.sync([Folder.of(root)])
        names = sorted(r.memory_id for r in store.search("narwhal", namespace="notes",
                                                          limit=10) if r.bm25 is not None)
    assert names == [f"{root.name}/fine0.md", f"{root.name}/fine1.md"]
    assert report.files_scanned == 3
    assert [s.path for s in report.skipped] in ([], ["hostile.md"])


def test_the_daemon_keeps_watching_past_hostile_notes(tmp_path):
    """Once, a 5,000-digit number stopped `memory watch` (exit 1, and systemd restarted it
    into the same crash); now each hostile note is imported and what is saved after it
    is searchable."""
    from daemon_harness import Daemon
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "first.md").write_text("# First\n\nan early gooseberry\n")
    d = Daemon(tmp_path / "m.db", notes).start()
    try:
        (notes / "big.md").write_text("---\nn: " + "7" * 5000 + "\n---\nbig blueberry\n")
        (notes / "bomb.md").write_text(ALIAS_BOMB)
        (notes / "links.md").write_text("elderberry " + "[a](" * 100_000)
        (notes / "later.md").write_text("# Later\n\na later mulberry\n")
        wait_for(lambda: d.search_ids("mulberry") == ["notes/later.md#Later"], timeout=60,
                 what="the note saved after the hostile ones")
        for word, note in (("blueberry", "big.md"), ("bilberry", "bomb.md"),
                           ("elderberry", "links.md")):
            assert [i.split("#")[0] for i in d.search_ids(word)] == [f"notes/{note}"], word
        assert d.proc.poll() is None and "Traceback" not in d.log()
        assert "big.md: front matter holds a number 5,000 characters long" in d.log()
    finally:
        d.close()


def test_a_parser_failure_skips_only_its_note_and_names_it(tmp_path, monkeypatch, caplog):
    """Should a parser bug the fuzz never met raise on one note, that note is skipped and
    named (its traceback logged), and the sync imports every other note."""
    from personal_memory.notes import model
    real = model.parse_note

    def failing(text, collection, rel):
        if rel == "odd.md":
            raise IndexError("list index out of range")
        return real(text, collection, rel)

    monkeypatch.setattr(model, "parse_note", failing)
    root = tmp_path / "v"
    root.mkdir()
    for name in ("a.md", "odd.md", "z.md"):
        (root / name).write_text(f"a walrus in {name}\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        report = store.sync([Folder.of(root)])
        found = sorted(r.memory_id for r in store.search("walrus", namespace="notes",
                                                         limit=10) if r.bm25 is not None)
        problems = [(p.path, p.reason) for p in store.status().daemon.problems]
    assert found == ["v/a.md", "v/z.md"]
    assert [s.path for s in report.skipped] == ["odd.md"]
    assert "could not be parsed (IndexError" in report.skipped[0].reason
    assert problems and problems[0][0] == "odd.md"
    assert "the note parser failed on v/odd.md" in caplog.text


def test_headings_past_the_limit_are_text_of_the_section_before(tmp_path):
    """A note of very many headings makes at most MAX_HEADINGS sections (and the parts of
    their text): the rest is searchable text, and the sync names the note."""
    from personal_memory.limits import MAX_HEADINGS
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "many.md").write_text("".join(f"## h{i}\nword{i} kumquat\n"
                                           for i in range(MAX_HEADINGS + 300)))
    (vault / "fine.md").write_text("# Fine\n\nan ordinary walrus\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        report = s.sync([Folder.of(vault)])
        assert [w.path for w in report.warnings] == ["many.md"]
        assert f"first {MAX_HEADINGS:,}" in report.warnings[0].reason
        note = s.read("v/many.md", namespace="notes")
        assert MAX_HEADINGS <= len(note.sections) < MAX_HEADINGS + 10
        late = s.search(f"word{MAX_HEADINGS + 250}", namespace="notes", group=None)
        assert late and list(late[0].heading_path) == [f"h{MAX_HEADINGS - 1}"]
        assert [r.memory_id for r in s.search("walrus", namespace="notes")] == ["v/fine.md#Fine"]
        # status names the note as long as it holds that many (not only the sync's report)
        assert [(w.path, w.reason) for w in s.status("notes").daemon.warnings] \
            == [("many.md", report.warnings[0].reason)]
        (vault / "many.md").write_text("## h\nfew now\n")
        s.sync([Folder.of(vault)])
        assert s.status("notes").daemon.warnings == []
