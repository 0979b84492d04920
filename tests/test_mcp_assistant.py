"""What an assistant gets, through a real stdio client and `memory serve`: compact answers
with places to cite, a note once with line numbers, changes a page at a time, notes as
resources, prompts, change announcements, and errors in one line. Sizes are upper bounds
on this fixed fixture."""

import asyncio
import json
import os
import re
import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder

TOPICS = ["backup", "sync", "plugins", "themes", "graph", "canvas", "publish", "search",
          "links", "tags", "files", "vault"]


@pytest.fixture(scope="module")
def vault_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("assistant")
    vault = tmp / "vault"
    vault.mkdir()
    for i, topic in enumerate(TOPICS):
        body = "\n\n".join(f"## {topic.title()} part {k}\n\n" + " ".join(
            f"The {topic} feature keeps step {k}.{j} of the guide for your notes."
            for j in range(6)) for k in range(8))
        (vault / f"{topic}.md").write_text(f"---\ntags: [help, {topic}]\n---\n# {topic.title()}"
                                           f"\n\nAbout {topic}.\n\n{body}\n")
    big = "\n\n".join(f"## Chapter {k}\n\n" + ("A long chapter line about the archive. "
                                                 * 40) for k in range(12))
    (vault / "archive.md").write_text(f"# Archive\n\n{big}\n")
    db = tmp / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        for topic in TOPICS[:10]:  # ten notes revised, one section each
            path = vault / f"{topic}.md"
            path.write_text(path.read_text().replace("step 3.2 of the guide",
                                                     "step 3.2 of the new guide"))
        (vault / "themes.md").write_text((vault / "themes.md").read_text().replace(
            "tags: [help, themes]", "tags: [help, themes, looks]"))
        s.sync([Folder.of(vault)], known_at="2025-02-01")
    return vault, db


def stdio(db, embedder="none"):
    # The server runs the package under test (PYTHONPATH), not the one installed.
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "personal_memory", "--db", str(db), "serve"],
                                 env={"MEMORY_EMBEDDER": embedder,
                                      "PYTHONPATH": os.environ.get("PYTHONPATH", "")})


def text_size(result) -> int:
    return sum(len(c.text.encode()) for c in result.content if hasattr(c, "text"))


def session(db, work, mode="legacy", embedder="none"):
    async def go():
        async with Client(stdio(db, embedder), mode=mode) as c:
            return await work(c)
    return asyncio.run(go())


def test_search_is_compact_and_cites_lines(vault_db):
    vault, db = vault_db

    async def work(c):
        compact = await c.call_tool("memory_search", {"query": "backup guide", "limit": 5})
        full = await c.call_tool("memory_search", {"query": "backup guide", "limit": 5,
                                                   "detail": "full"})
        tools = await c.list_tools()
        return compact, full, tools
    compact, full, tools = session(db, work)
    hits = compact.structured_content["results"]
    assert len(hits) == 5 and hits[0]["note"] == "vault/backup.md"
    lines = (vault / "backup.md").read_text().split("\n")
    first = hits[0]
    for n in range(first["line_start"], first["line_end"] + 1):  # the lines are the file's
        cited = lines[n - 1]
        assert not cited.strip() or cited.split()[0] in first["snippet"].replace("**", "")
    assert "**backup**" in first["snippet"] and len(first["snippet"]) <= 400
    assert f"vault/backup.md:{first['line_start']}" in compact.content[0].text
    # a hit's memory_id is left out when it is the note and its headings joined by '#'
    assert [h.get("memory_id") or h["note"] + "".join("#" + x for x in h["heading_path"])
            for h in hits] == [r["memory_id"] for r in full.structured_content["full"]]
    assert any("memory_id" not in h for h in hits)
    # and its title when the file's name says it
    assert [h.get("title") or h["note"].rsplit("/", 1)[-1][:-3] for h in hits] == [
        r["title"] for r in full.structured_content["full"]]
    assert text_size(compact) * 3 <= text_size(full)
    assert text_size(compact) < 3000  # snippets of up to about 400 characters
    listed = sum(len(json.dumps(t.model_dump(mode="json"))) for t in tools.tools)
    assert listed < 20000  # six tools; the previous version listed five in 22.9 KB
    described = {t.name: t.description for t in tools.tools}
    assert all(not line.startswith(" ") for d in described.values() for line in d.split("\n"))


def test_read_gives_the_note_once_with_line_numbers_a_section_or_lines(vault_db):
    vault, db = vault_db
    note = (vault / "archive.md").read_text()

    async def work(c):
        whole = await c.call_tool("memory_read", {"note": "vault/archive.md"})
        part = await c.call_tool("memory_read", {"note": "vault/archive.md",
                                                 "section": "Chapter 3"})
        some = await c.call_tool("memory_read", {"note": "vault/archive.md", "lines": "1-3"})
        bad = await c.call_tool("memory_read", {"note": "vault/archive.md", "lines": "9-x"})
        mapped = await c.call_tool("memory_read", {"note": "vault/archive.md",
                                                   "section": "Chapter 3", "outline": True})
        return whole, part, some, bad, mapped
    whole, part, some, bad, mapped = session(db, work)
    # the section map only when asked: the headings are in the text, and a part says
    # where it stands
    assert "sections:" not in part.content[0].text and "sections" not in part.structured_content
    total = len(note.split("\n")) - 1
    assert f"of {total}" in part.content[0].text.split("\n")[0]
    assert "sections: " in mapped.content[0].text
    assert len(mapped.structured_content["sections"]) == 12
    out = whole.structured_content
    assert out["text"] == note and out["line_start"] == 1
    text = whole.content[0].text
    assert text.count("A long chapter line about the archive.") == note.count(
        "A long chapter line about the archive.")  # the note once
    assert text_size(whole) < len(note.encode()) * 1.15 + 800
    assert "  1  # Archive" in text or " 1  # Archive" in text
    chapter = part.structured_content
    assert chapter["text"].startswith("## Chapter 3") and "## Chapter 4" not in chapter["text"]
    assert note.split("\n")[chapter["line_start"] - 1] == "## Chapter 3"
    assert some.structured_content["text"] == "\n".join(note.split("\n")[:3])
    assert bad.is_error and "lines:" in bad.content[0].text


def test_changes_are_compact_and_come_a_page_at_a_time(vault_db):
    vault, db = vault_db

    async def work(c):
        first = await c.call_tool("memory_changes", {"since": "2025-01-15",
                                                     "until": "2025-02-02", "limit": 4})
        pages = [first]
        while pages[-1].structured_content["next_cursor"]:
            pages.append(await c.call_tool("memory_changes", {
                "cursor": pages[-1].structured_content["next_cursor"], "limit": 4}))
        ten = await c.call_tool("memory_changes", {"since": "2025-01-15",
                                                   "until": "2025-02-02", "limit": 10})
        return pages, ten
    pages, ten = session(db, work)
    assert [p.structured_content["more"] for p in pages] == [6, 2, 0]
    seen = [n["note"] for p in pages for n in p.structured_content["notes"]]
    assert len(seen) == len(set(seen)) == 10
    assert text_size(ten) < 10_000
    notes = {n["note"]: n for n in ten.structured_content["notes"]}
    assert "of the {+new+} guide" in notes["vault/backup.md"]["excerpt"]
    assert notes["vault/themes.md"]["record_changes"]["tags"] == [
        ["help", "themes"], ["help", "themes", "looks"]]


def test_no_words_means_no_answer_and_errors_are_one_line(vault_db):
    vault, db = vault_db

    async def work(c):
        out = [await c.call_tool("memory_search", {"query": q}) for q in ("...", "?!.,", "🔥🚀")]
        out.append(await c.call_tool("memory_search", {"query": "backup", "limit": 1000}))
        out.append(await c.call_tool("memory_search", {"query": "backup",
                                                       "valid_at": "2000-01-01"}))
        return out
    *symbols, too_many, too_early = session(db, work)
    for r in symbols:
        assert r.structured_content["count"] == 0
        assert "no letters or digits" in r.structured_content["hint"]
    message = too_many.content[0].text
    assert too_many.is_error and "limit" in message and "50" in message
    assert "\n" not in message and "pydantic" not in message and "http" not in message
    assert "none known by the cutoff was valid" in too_early.structured_content["hint"]


def test_an_argument_a_tool_does_not_take_is_refused_in_one_line(vault_db):
    """A misnamed cutoff must not answer with today's notes."""
    vault, db = vault_db

    async def work(c):
        return (await c.call_tool("memory_search", {"query": "backup", "cutoff": "2025-01-15"}),
                await c.call_tool("memory_search", {"query": "backup", "as_of": "2025-01-15"}),
                await c.call_tool("memory_status", {"x": 1}))
    misnamed, named, none = session(db, work)
    message = misnamed.content[0].text
    assert misnamed.is_error and "'cutoff'" in message and "as_of" in message
    assert "\n" not in message
    assert none.is_error and none.content[0].text.endswith("takes no argument 'x'; it takes "
                                                           "none"), none.content[0].text
    assert not named.is_error and named.structured_content["count"] > 0


def test_notes_are_resources_and_prompts_are_offered(vault_db):
    vault, db = vault_db

    async def work(c):
        templates = await c.list_resource_templates()
        listed = await c.list_resources()
        now = await c.read_resource("note://vault/backup.md")
        then = await c.read_resource("note://vault/backup.md?as_of=2025-01-15")
        recent = await c.read_resource("note://recent")
        prompts = await c.list_prompts()
        catch_up = await c.get_prompt("catch_up", {"since": "2w"})
        known = await c.get_prompt("known_on", {"topic": "backup", "date": "2025-01-15"})
        history = await c.get_prompt("note_history", {"note": "vault/backup.md"})
        try:
            await c.get_prompt("known_on", {"topic": "backup", "date": "yesterday"})
            bad_date = None
        except Exception as exc:  # the SDK raises the prompt's error
            bad_date = exc
        folder = await c.read_resource("folder://vault")
        try:
            await c.read_resource("folder://vault/?as_of=2024-12-31")
            then_folder = None
        except Exception as exc:  # the SDK raises the resource's error
            then_folder = str(exc)
        return (templates, listed, now, then, recent, prompts, catch_up, known, history,
                folder, then_folder, bad_date)
    (templates, listed, now, then, recent, prompts, catch_up, known, history, folder,
     then_folder, bad_date) = session(db, work)
    assert bad_date is not None and bad_date.error.code == -32602, bad_date  # invalid params
    assert bad_date.error.message.startswith("date: 'yesterday' is not a date"), bad_date
    assert [t.uri_template for t in templates.resource_templates] == [
        "note://{collection}/{+path}{?as_of}", "folder://{+folder}{?as_of}"]
    lines = folder.contents[0].text.split("\n")
    assert lines[0] == "vault/ (everything known): 13 notes"
    assert lines[1].startswith("vault/archive.md — Archive (changed 2025-01-01")
    assert len(lines) == 14
    assert "holds no notes in namespace 'notes' as of 2024-12-31" in then_folder
    assert "note://recent" in [str(r.uri) for r in listed.resources]
    assert "new guide" in now.contents[0].text and "new guide" not in then.contents[0].text
    assert "note://vault/backup.md" in recent.contents[0].text
    assert {p.name for p in prompts.prompts} == {"catch_up", "known_on", "note_history"}
    assert "memory_changes" in catch_up.messages[0].content.text
    assert "2025-01-15" in known.messages[0].content.text
    assert "vault/backup.md" in history.messages[0].content.text


def test_a_prompt_asked_wrongly_is_one_line_to_the_client_and_no_traceback(vault_db,
                                                                           tmp_path):
    """An unknown prompt or a missing argument is the client's mistake: invalid params
    in one line, and the server's log (a client shows it) holds no traceback."""
    from mcp.client.stdio import stdio_client
    from mcp.client.session import ClientSession
    vault, db = vault_db
    log = tmp_path / "serve.err"

    async def go():
        with open(log, "w") as err:
            async with stdio_client(stdio(db), errlog=err) as (r, w):
                async with ClientSession(r, w) as c:
                    await c.initialize()
                    out = []
                    for name, args in (("nope", {}), ("known_on", {"topic": "x"})):
                        try:
                            await c.get_prompt(name, args)
                            out.append(None)
                        except Exception as exc:  # the SDK raises the server's error
                            out.append(exc)
                    out.append(await c.get_prompt("catch_up", {}))
                    return out
    unknown, missing, fine = asyncio.run(go())
    assert unknown.error.code == missing.error.code == -32602
    assert unknown.error.message == "Unknown prompt: nope"
    assert "date" in missing.error.message and "\n" not in missing.error.message
    assert "memory_changes" in fine.messages[0].content.text
    assert "Traceback" not in log.read_text(), log.read_text()


def test_a_listening_client_hears_which_note_the_daemon_indexed(vault_db, tmp_path):
    vault, db = vault_db
    copy = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.backup(str(copy))

    async def work(c):
        uri = "note://vault/search.md"
        async with c.listen(resource_subscriptions=[uri]) as sub:
            with MemoryStore.open(copy, embedder="none") as writer:
                path = vault / "search.md"
                path.write_text(path.read_text() + "\nA new line.\n")
                writer.sync_paths({Folder.of(vault): {"search.md"}})
            with anyio_timeout(20):
                async for event in sub:
                    return event
    event = session(copy, work, mode="auto")
    assert getattr(event, "uri", None) == "note://vault/search.md"


def anyio_timeout(seconds):
    import anyio
    return anyio.fail_after(seconds)


def test_compact_schemas_accept_and_refuse_what_the_originals_do():
    import jsonschema
    from personal_memory.mcp_server.models import ReadOutput, SearchOutput, compact_schema
    for model in (SearchOutput, ReadOutput):
        original = model.model_json_schema()
        compact = compact_schema(original)
        assert len(json.dumps(compact)) < len(json.dumps(original))
        assert '"title": "' not in json.dumps(compact) and "anyOf" not in json.dumps(compact)
    arguments = {"type": "object", "properties": {
        "since": {"anyOf": [{"maxLength": 4, "type": "string"}, {"type": "null"}],
                  "default": None, "title": "Since"},
        "tags": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}]},
        "title": {"type": "string", "title": "Title"}}}  # a property called title stays
    compact = compact_schema(arguments)
    assert "title" in compact["properties"]
    for value in ({"since": None}, {"since": "abcd"}, {"since": "abcde"}, {"since": 3},
                  {"tags": ["a"]}, {"tags": [1]}, {"tags": None}, {"tags": "a"},
                  {"title": 1}, {"title": "x"}):
        valid = [jsonschema.Draft202012Validator(s).is_valid(value)
                 for s in (arguments, compact)]
        assert valid[0] == valid[1], value


def _ids(hits):
    return [h.get("memory_id") or h["note"] + "".join("#" + x for x in h["heading_path"])
            for h in hits]


def test_the_parts_of_a_long_section_come_back_as_one_result(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    paragraphs = "\n\n".join(f"Paragraph {i} about the lighthouse keeper and the fog horn "
                             + "with other words " * 12 for i in range(12))
    (vault / "coast.md").write_text(f"# Coast\n\n## Lighthouse\n\n{paragraphs}\n\n"
                                    "## Harbour\n\nBoats and a lighthouse view.\n")
    (vault / "inland.md").write_text("# Inland\n\nNo lighthouse keeper lives here.\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        rows = s.search("lighthouse keeper", namespace="notes", limit=10)
    parts = [r for r in rows if "#Lighthouse" in r.memory_id]
    assert len(parts) >= 2  # the section is stored in parts, each marked as cut
    assert {(r.metadata or {}).get("part_of") for r in parts if "(part" in r.memory_id} == {
        "vault/coast.md#Coast#Lighthouse"}

    async def work(c):
        per_section = await c.call_tool("memory_search", {"query": "lighthouse keeper",
                                                          "limit": 3, "per": "section"})
        per_note = await c.call_tool("memory_search", {"query": "lighthouse keeper",
                                                       "limit": 3})
        return per_section, per_note
    per_section, per_note = session(db, work)
    hits = per_section.structured_content["results"]
    ids = _ids(hits)
    assert ids[0] == "vault/coast.md#Coast#Lighthouse" or ids[0].startswith(
        "vault/coast.md#Coast#Lighthouse (part")
    assert len([i for i in ids if "Lighthouse" in i]) == 1  # one result for the section
    # where its other parts matched: the first result shows two, and names the others
    assert len(hits[0].get("more", [])) >= 1

    def elsewhere(hit) -> int:
        return len(hit.get("also", [])) + len(hit.get("more", []))
    assert any("Harbour" in i for i in ids)  # the slots left go to other sections
    # By note (the default): coast.md once, naming where its other sections matched.
    notes = per_note.structured_content["results"]
    assert [h["note"] for h in notes] == ["vault/coast.md", "vault/inland.md"]
    assert elsewhere(notes[0]) > elsewhere(hits[0])  # the parts and the Harbour
    assert re.search(r"\n   lines? \d", per_note.content[0].text)  # another section, shown


def test_a_folder_filter_that_names_no_folder_is_said(vault_db):
    vault, db = vault_db

    async def work(c):
        return (await c.call_tool("memory_search", {"query": "folder:vaul backup"}),
                await c.call_tool("memory_search", {"query": "folder:vault backup"}))
    missing, found = session(db, work)
    warning = "folder:vaul names no folder known in namespace 'notes'"
    assert missing.structured_content["warnings"] == [warning]
    assert warning in missing.content[0].text
    assert found.structured_content["count"] > 0 and "warnings" not in found.structured_content


PAGE_BYTES = 12_000  # one page of ten changed notes, text and structured content


@pytest.fixture(scope="module")
def edited_db(tmp_path_factory):
    """Ten notes of prose, each edited as people edit: sentences reworded in three
    sections, a paragraph added, a section removed and one written, tags changed."""
    import random
    rng = random.Random(7)
    words = ("the team plan review budget draft launch reader garden meeting notes design "
             "question answer schedule travel morning library archive window river music "
             "kitchen project client invoice release testing feedback summary weekly").split()

    def sentence():
        return " ".join(rng.choice(words) for _ in range(rng.randint(9, 18))).capitalize() + "."

    def paragraph():
        return " ".join(sentence() for _ in range(rng.randint(3, 5)))
    tmp = tmp_path_factory.mktemp("edited")
    vault = tmp / "vault"
    vault.mkdir()
    for i in range(10):
        sections = "\n\n".join(f"## Part {k} of topic {i}\n\n{paragraph()}\n\n{paragraph()}"
                               for k in range(8))
        (vault / f"topic {i}.md").write_text(f"---\ntags: [work]\n---\n# Topic {i}\n\n"
                                             f"{paragraph()}\n\n{sections}\n")
    db = tmp / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        for i in range(10):
            path = vault / f"topic {i}.md"
            parts = path.read_text().split("\n## ")
            for k in (2, 4, 6):
                head, body = parts[k].split("\n\n", 1)
                body = body.replace(" the ", " our ", 2).replace(" plan ", " roadmap ", 1)
                parts[k] = f"{head}\n\n{body}"
            parts[3] += f"\n\n{paragraph()}\n"
            del parts[7]
            parts.append(f"New section of topic {i}\n\n{paragraph()}\n")
            text = "\n## ".join(parts)
            if i % 3 == 0:
                text = text.replace("tags: [work]", "tags: [work, review]")
            path.write_text(text)
        s.sync([Folder.of(vault)], known_at="2025-02-01")
    return db


def raw_size(result) -> int:
    """The result as the SDK puts it on the wire: text content and structured content."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def test_a_page_of_changes_stays_small_and_says_what_to_read(edited_db):
    async def work(c):
        page = await c.call_tool("memory_changes", {"since": "2025-01-15",
                                                    "until": "2025-02-02", "limit": 10})
        one = await c.call_tool("memory_changes", {"since": "2025-01-15",
                                                   "until": "2025-02-02",
                                                   "note": "vault/topic 3.md"})
        return page, one
    page, one = session(edited_db, work)
    assert raw_size(page) < PAGE_BYTES, raw_size(page)
    notes = {n["note"]: n for n in page.structured_content["notes"]}
    assert sorted(notes) == sorted(f"vault/topic {i}.md" for i in range(10))
    three = notes["vault/topic 3.md"]
    assert three["counts"] == {"added": 1, "revised": 4, "retracted": 1}
    assert three["record_changes"]["tags"] == [["work"], ["work", "review"]]
    assert "{+" in three["excerpt"] or "[-" in three["excerpt"]
    assert len(three["excerpt"]) <= 200
    assert "vault/topic 3.md" in page.content[0].text and "note=" in page.content[0].text
    # The note's own call has every section's diff.
    detail = one.structured_content["notes"]
    assert [n["note"] for n in detail] == ["vault/topic 3.md"]
    diffs = [s["diff"] for s in detail[0]["sections"] if s["change"] == "revised"]
    assert len(diffs) == 4 and any("{+our+}" in d or "{+roadmap+}" in d for d in diffs)


def test_a_users_own_part_headings_are_sections_of_their_own(tmp_path):
    """Headings written "Lecture (part 1)" and "Lecture (part 2)" are two sections: both
    come back per section, and the note's answer names the second's lines."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "course.md").write_text("# Lecture (part 1)\n\nThe glacier lecture begins.\n"
                                     "\n# Lecture (part 2)\n\nThe glacier lecture ends.\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        rows = s.search("glacier lecture", namespace="notes", limit=10, group="section")
        assert [r.memory_id for r in rows] == ["vault/course.md#Lecture (part 1)",
                                               "vault/course.md#Lecture (part 2)"]
        assert all("part_of" not in (r.metadata or {}) for r in rows)

    async def work(c):
        return (await c.call_tool("memory_search", {"query": "glacier lecture",
                                                    "per": "section"}),
                await c.call_tool("memory_search", {"query": "glacier lecture"}))
    per_section, per_note = session(db, work)
    assert sorted(h["heading_path"][-1] for h in per_section.structured_content["results"]
                  ) == ["Lecture (part 1)", "Lecture (part 2)"]
    (note,) = per_note.structured_content["results"]
    other = {"Lecture (part 1)": "7", "Lecture (part 2)": "3"}[note["heading_path"][-1]]
    (more,) = note["more"]  # the other part is shown with the first result
    assert str(more["line_start"]) == other and "also" not in note


def test_which_section_a_row_belongs_to():
    from personal_memory.records import RevisionRecord, SearchResult
    from personal_memory.search.grouping import note_key, section_key

    def row(memory_id, note, metadata=None):
        rev = RevisionRecord(revision_id=1, namespace="n", memory_id=memory_id,
                             known_at="2025-01-01T00:00:00Z",
                             valid_from="2025-01-01T00:00:00Z", valid_to=None,
                             deleted=False, hides_revision=None, title=None, content="x",
                             source=None, provenance=None, content_hash="",
                             note=note, metadata=metadata)
        return SearchResult(revision=rev, score=1.0, bm25=None, bm25_rank=None,
                            cosine=None, cosine_rank=None)
    cut = row("v/n.md#A#B (part 3)", "v/n.md", {"part": 3, "part_of": "v/n.md#A#B"})
    assert section_key(cut) == "v/n.md#A#B"
    assert section_key(row("v/n.md#A#B (part 3)", "v/n.md")) == "v/n.md#A#B (part 3)"
    assert section_key(row("fact (part 2)", None, {"part_of": "fact"})) == "fact (part 2)"
    assert note_key(cut) == "v/n.md" and note_key(row("a", None)) != note_key(row("b", None))


def test_reading_a_path_a_note_moved_away_from_says_where_it_went(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "plan.md").write_text("# Plan\n\nShip in March.\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "done").mkdir()
        os.rename(vault / "plan.md", vault / "done" / "plan.md")
        s.sync([Folder.of(vault)], known_at="2025-02-01")

    async def work(c):
        return await c.call_tool("memory_read", {"note": "vault/plan.md"})
    gone = session(db, work)
    assert gone.structured_content["deleted"] is True
    assert gone.structured_content["moved_to"] == "vault/done/plan.md"
    assert "moved to vault/done/plan.md" in gone.content[0].text
