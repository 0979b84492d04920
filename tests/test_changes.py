"""What changed between two times: exact on both sides, checked against independent
references, through the API, the CLI and the MCP server."""

import asyncio
import json
import os
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import ground_truth as gt
from personal_memory import MemoryStore
from personal_memory.timeline.diffs import word_diff
from personal_memory.errors import InvalidArgument, InvalidTime
from personal_memory.notes.folders import Folder
from personal_memory.records import NoteCounts
from personal_memory.times import format_time, parse_moment, parse_time
from support import run_memory, vault_of
from test_properties import DAY, T0, apply, event, revs_of, text


def all_sections(changes):
    return {s.memory_id: s for n in changes.notes for s in n.sections}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(event, min_size=1, max_size=30), a=st.integers(-2, 62),
       b=st.integers(0, 64), ns=st.sampled_from(["a", "b"]), query=text)
def test_changes_equal_a_brute_force_diff_and_two_reference_searches(events, a, b, ns, query):
    since, until = sorted((T0 + a * DAY, T0 + b * DAY + 1))
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(os.path.join(tmp, "m.db"), vector_backend="python") as store:
            apply(store, sorted(events, key=lambda e: e[4]))
            revs = revs_of(store)
            got = store.changes(namespace=ns, since=format_time(since),
                                until=format_time(until), limit=1000)
            # Brute force: every visible row on each side, each side at its own cutoff.
            old = {r.memory_id: r for r in gt.visible(revs, ns, since, since)}
            new = {r.memory_id: r for r in gt.visible(revs, ns, until, until)}
            want = {}
            for m in old.keys() | new.keys():
                o, n = old.get(m), new.get(m)
                if o is None:
                    want[m] = ("added", None, n.id)
                elif n is None:
                    want[m] = ("retracted", o.id, None)
                elif (o.content, o.title) != (n.content, n.title):
                    want[m] = ("revised", o.id, n.id)
            sections = all_sections(got)
            assert {m: (s.change, s.before and s.before.revision_id,
                        s.after and s.after.revision_id) for m, s in sections.items()} == want
            for s in sections.values():
                if s.change == "revised":
                    assert s.diff == word_diff(s.before.content, s.after.content)
            assert got.counts.memories == len(want) == len(got.notes)  # lone memories
            assert got.counts.notes == 0  # none of them is a note
            # With a query: each side is exactly the reference search at that time.
            ranked = store.changes(namespace=ns, since=format_time(since),
                                   until=format_time(until), query=query, limit=50)
            before = store.search_reference(query, namespace=ns, as_of=format_time(since),
                                            limit=50)
            after = store.search_reference(query, namespace=ns, as_of=format_time(until),
                                           limit=50)
            rb = {r.memory_id: i for i, r in enumerate(before, 1)}
            ra = {r.memory_id: i for i, r in enumerate(after, 1)}
            assert set(ranked.unchanged) | {r.memory_id for r in ranked.results} == \
                rb.keys() | ra.keys()
            for r in ranked.results:
                assert (r.rank_before, r.rank_after) == (rb.get(r.memory_id),
                                                         ra.get(r.memory_id))
            for m in ranked.unchanged:
                assert rb[m] == ra[m]
            impacts = [r.impact for r in ranked.results]
            assert impacts == sorted(impacts, reverse=True)


def test_notes_changed_in_a_week(tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "plan.md").write_text("# Plan\n\nmeet on tuesdays in the blue room\n\n"
                                   "## Risks\n\nfog at sea\n")
    (vault / "old.md").write_text("an old note\n")
    (vault / "keep.md").write_text("never changes\n")
    with MemoryStore.open(tmp_path / "m.db") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "plan.md").write_text("# Plan\n\nmeet on thursdays in the garden room\n\n"
                                       "## Budget\n\nten coins\n")
        (vault / "old.md").unlink()
        (vault / "new.md").write_text("---\ntags: [idea]\n---\na new idea\n")
        store.sync([Folder.of(vault)], known_at="2025-01-05", allow_mass_delete=True)
        (vault / "plan.md").write_text("# Plan\n\nmeet on fridays in the garden room\n\n"
                                       "## Budget\n\nten coins\n")
        store.sync([Folder.of(vault)], known_at="2025-01-09")

        week = store.changes(namespace="notes", since="2025-01-02", until="2025-01-08")
        # a day as a start is its first moment, as an end its last
        assert week.since == "2025-01-02T00:00:00Z" and week.until == "2025-01-08T23:59:59.999999Z"
        assert week.counts == NoteCounts(notes=3, memories=0, notes_added=1, notes_deleted=1,
                                          notes_moved=0, added=2, revised=1, retracted=2)
        by_note = {n.note: n for n in week.notes}
        assert by_note["v/old.md"].change == "deleted" and by_note["v/new.md"].change == "added"
        plan = by_note["v/plan.md"]
        assert plan.change == "revised" and plan.title == "Plan"
        assert [(s.change, s.memory_id) for s in plan.sections] == [
            ("revised", "v/plan.md#Plan"), ("added", "v/plan.md#Plan#Budget"),
            ("retracted", "v/plan.md#Plan#Risks")]
        assert plan.sections[0].diff == ("# Plan meet on [-tuesdays-] {+thursdays+} in the "
                                         "[-blue-] {+garden+} room")
        # Nothing learned after `until` appears; the later edit is its own change.
        assert "fridays" not in json.dumps(week.to_dict())
        later = store.changes(namespace="notes", since="2025-01-08", until="2025-01-10")
        assert [(n.note, n.change) for n in later.notes] == [("v/plan.md", "revised")]
        assert later.notes[0].sections[0].diff.endswith("[-thursdays-] {+fridays+} in the "
                                                        "garden room")
        assert later.notes[0].sections[0].before.content.endswith("thursdays in the garden room")
        # A tag change alone changes the note (its record), listed without sections.
        (vault / "new.md").write_text("---\ntags: [idea, work]\n---\na new idea\n")
        store.sync([Folder.of(vault)], known_at="2025-01-12")
        tagged = store.changes(namespace="notes", since="2025-01-10", until="2025-01-13")
        assert [(n.note, n.change, n.sections) for n in tagged.notes] == [
            ("v/new.md", "revised", [])]
        # Limit: the newest notes, counts of all. (old.md came and went inside the span:
        # invisible at both ends, so not a change.)
        two = store.changes(namespace="notes", since="2024-12-01", until="2025-01-13",
                            limit=2)
        assert len(two.notes) == 2 and two.counts.notes == 3
        with pytest.raises(InvalidArgument, match="since: .* is not before until"):
            store.changes(namespace="notes", since="2025-01-08", until="2025-01-02")


def test_sections_come_in_document_order(tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "n.md").write_text("intro one\n\n# B\n\nbee one\n\n# A\n\nay one\n")
    with MemoryStore.open(tmp_path / "m.db") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "n.md").write_text("intro two\n\n# B\n\nbee two\n\n# A\n\nay two\n")
        store.sync([Folder.of(vault)], known_at="2025-01-02")
        (note,) = store.changes(namespace="notes", since="2025-01-01", until="2025-01-03").notes
        assert [s.memory_id for s in note.sections] == ["v/n.md", "v/n.md#B", "v/n.md#A"]


def test_relative_times_resolve_once_against_the_clock():
    now = parse_time("2025-03-10T12:00:00Z")
    assert format_time(parse_moment("24h", "since", now)) == "2025-03-09T12:00:00Z"
    assert format_time(parse_moment(" 7d", "since", now)) == "2025-03-03T12:00:00Z"
    assert format_time(parse_moment("2W", "since", now)) == "2025-02-24T12:00:00Z"
    assert parse_moment("now", "until", now) == now
    assert parse_moment("2025-01-01", "since", now) == parse_time("2025-01-01")
    with pytest.raises(InvalidTime, match="since: 'yesterday' .* such as 15m, 24h, 7d or 2w"):
        parse_moment("yesterday", "since", now)
    with pytest.raises(InvalidTime, match="until: '3x'"):
        parse_moment("3x", "until", now)


def test_cli_and_mcp(tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    db = tmp_path / "m.db"
    (vault / "a.md").write_text("# A\n\nthe launch is in march\n")
    assert run_memory("--db", db, "sync", vault, "--known-at", "2025-01-01").returncode == 0
    (vault / "a.md").write_text("# A\n\nthe launch is in may\n")
    assert run_memory("--db", db, "sync", vault, "--known-at", "2025-02-01").returncode == 0
    p = run_memory("--db", db, "changes", "--since", "2025-01-15")
    assert p.returncode == 0, p.stderr
    assert "v/a.md — A (revised, last change 2025-02-01 00:00:00 UTC)" in p.stdout
    assert "[-march-] {+may+}" in p.stdout
    p = run_memory("--db", db, "changes", "--since", "2025-01-15", "--until", "2025-01-20")
    assert p.stdout.startswith("Nothing changed from 2025-01-15 00:00:00 UTC")
    # A span is printed as exactly as it was asked, at both ends.
    p = run_memory("--db", db, "changes", "--since", "2025-01-15T00:00:00.25Z", "--until",
                   "2025-01-20T00:00:00.5Z")
    assert p.stdout.startswith("Nothing changed from 2025-01-15 00:00:00.25 UTC to "
                               "2025-01-20 00:00:00.5 UTC"), p.stdout
    from personal_memory import render  # what MCP memory_changes says: exact too
    with MemoryStore.open(db, read_only=True, embedder="none") as s:
        found = s.changes(namespace="notes", since="2025-01-15T00:00:00.25Z")
    assert render.changes(found).startswith("1 note changed from 2025-01-15 00:00:00.25 UTC to ")
    data = json.loads(run_memory("--db", db, "changes", "--since", "2025-01-15", "launch",
                                 "date", "--json").stdout)
    assert data["query"] == "launch date" and data["results"][0]["change"] == "changed"
    p = run_memory("--db", db, "changes", "--since", "soon")
    assert p.returncode == 2 and "24h, 7d or 2w" in p.stderr
    # a value that starts with '-' is the option's: the time's own error, not argparse's
    p = run_memory("--db", db, "changes", "--since", "-5m")
    assert p.returncode == 2 and "since: '-5m' is not a date" in p.stderr, p.stderr
    p = run_memory("--db", db, "search", "launch", "--as-of", "-1d")
    assert p.returncode == 2 and "--as-of: '-1d' is not a date" in p.stderr, p.stderr
    p = run_memory("--db", db, "changes", "--since", "400w", "--json")
    from personal_memory.times import now_micros
    since = parse_time(json.loads(p.stdout)["since"])  # echoed as an absolute time
    assert abs(now_micros() - 400 * 7 * DAY - since) < 60 * 1_000_000

    async def go():
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "personal_memory.mcp_server", "--db", str(db)],
                                       env={k: v for k, v in os.environ.items()
                                            if k == "PYTHONPATH"})
        async with Client(params) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            plain = await c.call_tool("memory_changes", {"since": "2025-01-15"})
            asked = await c.call_tool("memory_changes", {"since": "2025-01-15",
                                                         "until": "2025-02-02",
                                                         "query": "launch"})
            bad = await c.call_tool("memory_changes", {"since": "later"})
            return tools, plain, asked, bad
    tools, plain, asked, bad = asyncio.run(go())
    assert tools["memory_changes"].annotations.read_only_hint is True
    notes = plain.structured_content["notes"]
    assert notes[0]["excerpt"] == "… the launch is in [-march-] {+may+}"
    assert asked.structured_content["results"][0]["rank_after"] == 1
    assert bad.is_error and "7d" in bad.content[0].text


def _edited(vault, name: str, before: str, after: str, db):
    """The changes of one note written, synced on 2025-01-01, rewritten and synced on
    2025-01-05."""
    vault.mkdir()
    (vault / name).write_text(before)
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / name).write_text(after)
        store.sync([Folder.of(vault)], known_at="2025-01-05")
        return store.changes(namespace="notes", since="2025-01-02")


def test_a_renamed_heading_is_one_revision_with_its_diff(tmp_path):
    body = "Water the tomatoes at dawn and feed them once a week in summer.\n"
    found = _edited(tmp_path / "vault", "g.md",
                    f"# Garden\n\n## Tomatos\n\n{body}\n## Beans\n\nPoles.\n",
                    f"# Garden\n\n## Tomatoes\n\n{body.replace('week', 'fortnight')}"
                    "\n## Peas\n\nSomething else entirely, nothing alike.\n",
                    tmp_path / "m.db")
    (note,) = found.notes
    by = {s.change: s for s in note.sections if s.why == "heading renamed"}
    renamed = by["revised"]
    assert renamed.memory_id == "vault/g.md#Garden#Tomatoes"
    assert renamed.moved_from == "vault/g.md#Garden#Tomatos"
    assert "[-Tomatos-]" in renamed.diff and "{+fortnight+}" in renamed.diff
    # a section replaced by an unlike one stays an addition and a removal
    kinds = sorted((s.change, s.why) for s in note.sections if s.why != "heading renamed")
    assert kinds == [("added", None), ("retracted", "removed")]
    assert found.counts.revised == 1 and found.counts.added == 1


def test_unlike_checklists_are_not_a_renamed_heading(tmp_path):
    """Markup is not words: two checklists (or tables) with no word in common are one
    section removed and one added, however alike their list markers and pipes."""
    vault = tmp_path / "v"
    vault.mkdir()
    db = tmp_path / "m.db"
    (vault / "lists.md").write_text(
        "# Lists\n\n## Groceries\n\n- [ ] milk\n- [ ] eggs\n- [x] bread\n\n"
        "| item | qty |\n| --- | --- |\n| **apples** | 3 |\n")
    assert run_memory("--db", db, "sync", vault, "--known-at", "2025-01-01").returncode == 0
    (vault / "lists.md").write_text(
        "# Lists\n\n## Work\n\n- [ ] report\n- [ ] email\n- [x] invoice\n\n"
        "| task | due |\n| --- | --- |\n| *payroll* | 5 |\n")
    assert run_memory("--db", db, "sync", vault, "--known-at", "2025-01-05").returncode == 0
    data = json.loads(run_memory("--db", db, "changes", "--since", "2025-01-02",
                                 "--json").stdout)
    (note,) = data["notes"]
    assert sorted((s["change"], s["why"]) for s in note["sections"]) == [
        ("added", None), ("retracted", "removed")]
    assert (data["counts"]["added"], data["counts"]["revised"],
            data["counts"]["retracted"]) == (1, 0, 1)
    p = run_memory("--db", db, "changes", "--since", "2025-01-02")
    assert "sections 1 added, 0 revised, 1 retracted" in p.stdout, p.stdout
    assert "heading renamed" not in p.stdout


def test_a_renamed_checklist_is_still_paired_by_its_words(tmp_path):
    items = "- [ ] milk\n- [ ] eggs\n- [ ] bread\n- [ ] butter\n- [ ] apples\n"
    ticked = items.replace("[ ] eggs", "[x] eggs")
    found = _edited(tmp_path / "v", "l.md", f"# Lists\n\n## Groceries\n\n{items}",
                    f"# Lists\n\n## Shopping\n\n{ticked}", tmp_path / "m.db")
    (sec,) = found.notes[0].sections
    assert (sec.change, sec.why, sec.moved_from) == ("revised", "heading renamed",
                                                     "v/l.md#Lists#Groceries")


def test_a_note_added_then_moved_inside_the_span_is_new(tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    db = tmp_path / "m.db"
    (vault / "old.md").write_text("# Old\n\nwas here before the span\n")
    assert run_memory("--db", db, "sync", vault, "--known-at", "2025-01-01").returncode == 0
    for i in range(5):
        (vault / f"n{i}.md").write_text(f"# N{i}\n\nnew note {i}\n")
    assert run_memory("--db", db, "sync", vault, "--known-at", "2025-01-03").returncode == 0
    (vault / "sub").mkdir()
    (vault / "n0.md").rename(vault / "sub" / "n0.md")
    (vault / "old.md").rename(vault / "sub" / "old.md")
    assert run_memory("--db", db, "sync", vault, "--known-at", "2025-01-04").returncode == 0
    data = json.loads(run_memory("--db", db, "changes", "--since", "2025-01-02",
                                 "--json").stdout)
    by = {n["note"]: n for n in data["notes"]}
    assert (by["v/sub/n0.md"]["change"], by["v/sub/n0.md"]["moved_from"]) == ("added", None)
    assert [s["change"] for s in by["v/sub/n0.md"]["sections"]] == ["added"]
    # a note that was there before the span did move
    assert (by["v/sub/old.md"]["change"], by["v/sub/old.md"]["moved_from"]) == (
        "moved", "v/old.md")
    assert (data["counts"]["notes_added"], data["counts"]["notes_moved"]) == (5, 1)
    p = run_memory("--db", db, "changes", "--since", "2025-01-02")
    assert "(5 new, 0 deleted, 1 moved)" in p.stdout, p.stdout
    assert "moved from v/n0.md" not in p.stdout


def test_a_renamed_file_s_new_title_is_the_note_s_change_not_each_section_s(tmp_path):
    """A note titled by its file name carries that title in every section: renamed, the
    note says its title changed once; sections whose text did not change are not
    'revised'. A section edited as well still is."""
    vault = tmp_path / "v"
    vault.mkdir()
    db = tmp_path / "m.db"
    (vault / "Ribbon.md").write_text("Intro.\n\n## Pin\n\nPin it.\n\n## Hide\n\nHide it.\n")
    assert run_memory("--db", db, "sync", vault, "--known-at", "2025-01-01").returncode == 0
    (vault / "Ribbon.md").rename(vault / "Ribbon bar.md")
    (vault / "Ribbon bar.md").write_text("Intro.\n\n## Pin\n\nPin it.\n\n## Hide\n\n"
                                         "Hide it now.\n")
    assert run_memory("--db", db, "sync", vault, "--known-at", "2025-01-03").returncode == 0
    data = json.loads(run_memory("--db", db, "changes", "--since", "2025-01-02",
                                 "--json").stdout)
    note, = data["notes"]
    assert (note["change"], note["moved_from"]) == ("moved", "v/Ribbon.md")
    assert [(s["memory_id"], s["change"]) for s in note["sections"]] == [
        ("v/Ribbon bar.md#Hide", "revised")]
    p = run_memory("--db", db, "changes", "--since", "2025-01-02")
    assert "title: 'Ribbon' -> 'Ribbon bar'" in p.stdout and "1 revised" in p.stdout


def test_a_query_s_results_follow_a_moved_note(tmp_path):
    vault = vault_of(tmp_path, name="v", files={
        "Reading/DiskANN.md": "# DiskANN\n\nvamana graph pruning\n\n## Costs\n\n"
                              "vamana on one node\n",
        "other.md": "unrelated\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        os.rename(vault / "Reading" / "DiskANN.md", vault / "Reading" / "DiskANN paper.md")
        store.sync([Folder.of(vault)], known_at="2025-01-03")
        os.rename(vault / "Reading", vault / "Papers")  # moved twice in the span
        store.sync([Folder.of(vault)], known_at="2025-01-05")
        found = store.changes(namespace="notes", since="2025-01-02", until="2025-01-06",
                              query="vamana pruning")
        # the same two results, under the note's new path: moved, not new and retracted
        assert [(r.change, r.memory_id, r.moved_from) for r in found.results] == [
            ("moved", "v/Papers/DiskANN paper.md#DiskANN", "v/Reading/DiskANN.md#DiskANN"),
            ("moved", "v/Papers/DiskANN paper.md#DiskANN#Costs",
             "v/Reading/DiskANN.md#DiskANN#Costs")]
        assert found.counts.moved == 2 and found.counts.new == found.counts.gone == 0
    out = run_memory("--db", tmp_path / "m.db", "changes", "--since", "2025-01-02",
                     "--until", "2025-01-06", "vamana pruning").stdout
    assert "moved from v/Reading/DiskANN.md#DiskANN" in out and "retracted" not in out


def test_a_note_moved_onto_the_path_of_one_deleted_keeps_both_results(tmp_path):
    vault = vault_of(tmp_path, name="v", files={"a.md": "# Old\n\nthe old lantern\n",
                                                "b.md": "# Old\n\na newer lantern story\n",
                                                "other.md": "unrelated\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "a.md").unlink()
        store.sync([Folder.of(vault)], known_at="2025-01-03")
        os.rename(vault / "b.md", vault / "a.md")  # onto the path a.md's note left
        store.sync([Folder.of(vault)], known_at="2025-01-05")
        found = store.changes(namespace="notes", since="2025-01-02", until="2025-01-06",
                              query="lantern")
        # b.md's section is a.md#Old now, moved; the section a.md held at the start had
        # the same ID, and is gone (its note was deleted), not taken for the moved one
        got = sorted((r.memory_id, r.change, r.moved_from, r.why, r.rank_before, r.rank_after)
                     for r in found.results)
        then = list(store.search("lantern", namespace="notes", as_of="2025-01-02"))
        old_rank = next(i for i, r in enumerate(then, 1) if "old lantern" in r.content)
        moved_rank = next(i for i, r in enumerate(then, 1) if "newer lantern" in r.content)
        assert got == sorted([
            ("v/a.md#Old", "gone", None, "retracted", old_rank, None),
            ("v/a.md#Old", "up" if moved_rank > 1 else "moved", "v/b.md#Old", None,
             moved_rank, 1)]), got


def test_a_note_moved_away_and_back_is_unchanged(tmp_path):
    vault = vault_of(tmp_path, name="v", files={"a.md": "# Plan\n\nthe lantern plan\n",
                                                "other.md": "unrelated lantern note\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        os.rename(vault / "a.md", vault / "b.md")
        store.sync([Folder.of(vault)], known_at="2025-01-03")
        os.rename(vault / "b.md", vault / "a.md")
        store.sync([Folder.of(vault)], known_at="2025-01-05")
        found = store.changes(namespace="notes", since="2025-01-02", until="2025-01-06",
                              query="lantern plan")
        assert found.results == [] and "v/a.md#Plan" in found.unchanged


def test_a_change_inside_bold_shows_the_bold_run_whole():
    assert word_diff("Termin am **12. Januar** um 9", "Termin am **13. Januar** um 9") == \
        "Termin am [-**12. Januar**-] {+**13. Januar**+} um 9"
    assert word_diff("a ~~old plan~~ b", "a ~~new plan~~ b") == \
        "a [-~~old plan~~-] {+~~new plan~~+} b"
    assert word_diff("x **unclosed y z", "x **unclosed y w") == "x **unclosed y [-z-] {+w+}"


def test_a_change_in_a_megabyte_of_one_repeated_word_is_diffed_at_once():
    """One long line of one word repeated (a part never cut, up to the note's size limit):
    difflib alone matches it in time quadratic in its length, hours at this size."""
    import subprocess
    code = ("from personal_memory.timeline.diffs import word_diff\n"
            "n = 500_000\n"
            "print(word_diff('a ' * n + 'b ' + 'a ' * n, 'a ' * n + 'c ' + 'a ' * n))\n"
            "print(word_diff('a b ' * n, 'b a ' * n)[:20])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.stdout.split("\n")[:2] == ["… a a a a [-b-] {+c+} a a a a …",
                                        "[-a b a b a b a b a "], p.stderr[-2000:]


def test_a_renamed_heading_over_a_long_line_of_one_word_pairs_at_once(tmp_path):
    """Its body is one line of 300,000 words (a part never cut): the rename is found from
    its first 1,000, where every word matched would take hours."""
    import subprocess
    code = ("import sys\nfrom pathlib import Path\n"
            "from personal_memory import MemoryStore\n"
            "from personal_memory.notes.folders import Folder\n"
            "t = Path(sys.argv[1])\n(t / 'vault').mkdir()\n"
            "line = 'tick ' * 300_000\n"
            "with MemoryStore.open(t / 'm.db', embedder='none') as store:\n"
            "    for day, head in (('2025-01-01', 'A'), ('2025-01-05', 'B')):\n"
            "        (t / 'vault' / 'g.md').write_text(f'# {head}\\n\\n{line}\\n')\n"
            "        store.sync([Folder.of(t / 'vault')], known_at=day)\n"
            "    found = store.changes(namespace='notes', since='2025-01-02')\n"
            "print([s.why for s in found.notes[0].sections])\n")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                       text=True, timeout=180)
    assert p.stdout.strip() == "['heading renamed']", p.stderr[-2000:]


def test_the_parts_of_a_long_section_are_one_change_of_it(tmp_path):
    """A section this package cut into parts, added at once, is one added section (its
    parts counted), in the counts and the listing; a heading the user wrote "(part 2)"
    stays a section of its own."""
    from personal_memory import render
    vault = tmp_path / "v"
    vault.mkdir()
    body = "\n\n".join(f"Paragraph {i} " + "words of a long lecture " * 40 for i in range(60))
    (vault / "big.md").write_text(f"# Big\n\n## Part 0\n\n{body}\n\n## Lecture (part 2)\n\nshort\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-10")
        found = store.changes(namespace="notes", since="2025-01-01", until="2025-01-11")
    (note,) = found.notes
    cut = [s for s in note.sections if s.heading_path and s.heading_path[-1] == "Part 0"]
    assert len(cut) == 1 and cut[0].parts > 2 and cut[0].memory_id.endswith("#Part 0")
    assert [s.parts for s in note.sections if "Lecture" in str(s.heading_path)] == [1]
    assert found.counts.added == len(note.sections)
    text = render.changes(found)
    assert text.count("Part 0") == 1 and f"Big › Part 0 ({cut[0].parts} parts)" in text
