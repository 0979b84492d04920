"""The MCP server through the SDK: in memory (both handshakes) and as a real process."""

import hashlib
import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from personal_memory.mcp_server.server import build_server
from personal_memory.mcp_server.tools import MemoryTools
from personal_memory.settings import resolve
from personal_memory.errors import ConfigError, NotFound, BackendError

from http_harness import remember_roles
from support import run_memory, user_env, wait_for

READ_TOOLS = {"memory_search", "memory_read", "memory_links", "memory_changes", "memory_history",
              "memory_status"}


@pytest.fixture
def notes_db(db_path):
    """Three revisions, embedded by the real semantic model (the server uses it too)."""
    with MemoryStore.open(db_path, embedder="e5") as s:
        s.remember("secret", "prefer the other namespace", namespace="private",
                   known_at="2025-01-01")
        remember_roles(s)
        s.embed_pending()
    return db_path


def call(server, name, args=None, mode="legacy"):
    async def go():
        async with Client(server, mode=mode) as c:
            return await c.call_tool(name, args or {})
    return asyncio.run(go())


def config(**flags):
    """Settings from flags alone, whatever this machine's environment says."""
    return resolve(environ={}, **flags)


def list_tools(server, mode="legacy"):
    async def go():
        async with Client(server, mode=mode) as c:
            return (await c.list_tools()).tools
    return asyncio.run(go())


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_search_at_cutoffs_through_the_sdk(notes_db, mode):
    server = build_server(config(db=notes_db))
    r = call(server, "memory_search", {"query": "prefer", "as_of": "2025-02-01",
                                       "detail": "full"}, mode)
    assert not r.is_error
    out = r.structured_content
    assert out["as_of"] == "2025-02-01T23:59:59.999999Z"  # a day as a cutoff: its end
    assert [x["snippet"] for x in out["results"]] == ["I **prefer** equity research."]
    assert '"memory_id":"role"' in r.content[0].text  # full: the records, compact JSON
    first = rev = out["full"][0]
    assert (rev["memory_id"], rev["known_at"], rev["valid_from"], rev["valid_to"]) == (
        "role", "2025-01-10T00:00:00Z", "2025-01-10T00:00:00Z", None)
    assert rev["content_hash"] == hashlib.sha256(b"I prefer equity research.").hexdigest()
    assert first["bm25_rank"] == 1 and first["bm25"] > 0 and first["score"] > 0
    assert first["cosine_rank"] == 1 and 0 < first["cosine"] <= 1
    assert "unembedded" not in out and "hint" not in out  # defaults (0, null) are left out
    r = call(server, "memory_search", {"query": "prefer"}, mode)
    results = r.structured_content["results"]
    assert [x["memory_id"] for x in results] == ["role"]  # pinned namespace
    assert "quantitative" in results[0]["snippet"] and r.structured_content.get("full") is None


def test_a_search_names_the_words_no_result_holds(notes_db):
    """"vacation" is a real word the notes lack: the results rest on the others, and the
    structured answer and its text say which word none of them holds."""
    r = call(build_server(config(db=notes_db)), "memory_search",
             {"query": "vacation prefer trading"})
    assert not r.is_error and r.structured_content["missing"] == ["vacation"]
    assert r.content[0].text.splitlines()[0].endswith(", none holding 'vacation':")
    r = call(build_server(config(db=notes_db)), "memory_search", {"query": "prefer trading"})
    assert "missing" not in r.structured_content  # the default ([]) is left out


def test_tools_are_described_and_annotated(notes_db):
    tools = {t.name: t for t in list_tools(build_server(config(db=notes_db)))}
    assert set(tools) == READ_TOOLS
    for t in tools.values():
        assert t.title and t.description and t.output_schema
        a = t.annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == \
               (True, False, True, False)
        for prop in t.input_schema.get("properties", {}).values():
            assert prop.get("description")
    props = tools["memory_search"].input_schema["properties"]
    assert props["query"]["maxLength"] == 1000 and props["limit"]["maximum"] == 50
    assert props["limit"]["default"] == 5


def test_input_schemas_give_one_type_per_argument_and_null_is_still_taken(notes_db):
    """Function-calling APIs that take one type per field (Gemini's) refuse the whole
    list over a ``type: [string, null]``; an optional argument left out means none."""
    server = build_server(config(db=notes_db, enable_writes=True))
    for t in list_tools(server):
        for name, prop in t.input_schema.get("properties", {}).items():
            assert isinstance(prop.get("type"), str) and "anyOf" not in prop, (t.name, name)
    assert list_tools(server)[0].output_schema  # outputs keep their nulls
    r = call(server, "memory_search", {"query": "prefer", "as_of": None, "tags": None})
    assert not r.is_error and r.structured_content["as_of"] is None


def test_write_tools_only_with_writes_enabled(notes_db):
    server = build_server(config(db=notes_db, enable_writes=True))
    tools = {t.name: t for t in list_tools(server)}
    assert set(tools) == READ_TOOLS | {"memory_remember", "memory_forget"}
    assert tools["memory_forget"].annotations.destructive_hint is True
    for t in tools.values():
        assert t.output_schema and t.title
        for prop in t.input_schema.get("properties", {}).values():
            assert prop.get("description")
    assert tools["memory_remember"].annotations.read_only_hint is False
    r = call(server, "memory_remember", {"memory_id": "new", "content": "fresh fact"})
    assert r.structured_content["created"] is True
    again = call(server, "memory_remember", {"memory_id": "new", "content": "fresh fact"})
    assert again.structured_content["created"] is False
    r = call(server, "memory_forget", {"memory_id": "new"})
    assert r.structured_content["deleted"] is True
    r = call(server, "memory_history", {"memory_id": "new"})
    assert [x["deleted"] for x in r.structured_content["revisions"]] == [False, True]


def test_a_memory_written_through_mcp_gets_its_vector_without_the_daemon(notes_db):
    """The CLI's remember embeds at once; the tool's reply does not wait for the model,
    and the vector follows on a thread of the server's."""
    server = build_server(config(db=notes_db, enable_writes=True, embedder="e5"))
    r = call(server, "memory_remember", {"memory_id": "bike", "content": "a blue Brompton"})
    assert r.structured_content["created"] is True
    with MemoryStore.open(notes_db, embedder="e5", read_only=True) as store:
        wait_for(lambda: store.status().vectors.pending_vectors == 0,
                 what="the remembered memory's vector")


@pytest.mark.parametrize("name, args, fragment", [
    ("memory_search", {"query": "x", "as_of": "last week"}, "as_of"),
    ("memory_search", {"query": "x", "valid_at": "2025-01-01T10:00"}, "no timezone"),
    ("memory_search", {"query": ""}, "at least 1 character"),
    ("memory_search", {"query": "x" * 1001}, "at most 1000"),
    ("memory_search", {"query": "x", "limit": 51}, "less than or equal to 50"),
    ("memory_search", {"query": "x", "limit": 0}, "greater than or equal to 1"),
    ("memory_history", {"memory_id": "nope"}, "memory_search"),
    ("memory_history", {"memory_id": "secret"}, "has no revisions"),
    ("memory_remember", {"memory_id": "a", "content": "b"}, "Unknown tool"),
])
def test_tool_errors_say_what_to_fix(notes_db, name, args, fragment):
    r = call(build_server(config(db=notes_db)), name, args)
    assert r.is_error
    assert fragment in r.content[0].text
    assert not r.content[0].text.startswith("Error executing tool")  # the error alone


def test_status_tool(notes_db):
    r = call(build_server(config(db=notes_db)), "memory_status")
    assert r.structured_content["writes_enabled"] is False
    s = r.structured_content["status"]
    assert s["namespace"] == "notes" and s["vector_backend"] == "python"
    assert s["counts"]["revisions"] == 2 and s["counts"]["memories"] == 1
    v, d = s["vectors"], s["daemon"]
    assert v["semantic"].startswith("semantic: multilingual-e5-small")
    assert v["pending_vectors"] == 0 and v["embedding_per_second"] > 0
    assert d["daemon_running"] is False and d["daemon_state"] == "never started"


def test_nothing_fits_gives_zero_results_and_a_hint(notes_db):
    r = call(build_server(config(db=notes_db)), "memory_search", {"query": "xyzzyplugh"})
    out = r.structured_content
    assert not r.is_error and out["count"] == 0 and out["results"] == []
    assert out["hint"].startswith("Nothing matched: no visible memory contains a word")
    assert "the notes' own language" in out["hint"]  # never "the notes hold nothing"
    # a day no memory is about: ask about another one, not in other words
    r = call(build_server(config(db=notes_db)), "memory_search",
             {"query": "what did I do on 3 March 2021?"})
    out = r.structured_content
    assert out["count"] == 0 and out["hint"].startswith(
        "Nothing matched: no visible memory is about Wednesday 3 March 2021"), out["hint"]
    assert "another day or period" in out["hint"] and "language" not in out["hint"]


def test_tools_are_plain_functions(notes_db):
    tools = MemoryTools(config(db=notes_db))
    out = tools.search("prefer", as_of="2025-04-01", limit=1).structured_content
    assert out["count"] == 1 and "quantitative" in out["results"][0]["snippet"]
    history = tools.history("role").structured_content
    assert history["revisions"][0]["content"] == "I prefer equity research."


def test_status_over_http_names_folders_not_their_local_paths(tmp_path):
    """memory_status for a client on another machine: the notes folder by its name (its
    path names the user and the disk); on this machine (stdio) the path."""
    vault = tmp_path / "alice-home" / "vault"
    vault.mkdir(parents=True)
    (vault / "a.md").write_text("# A\n\nalpha\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
    cfg = config(db=str(tmp_path / "m.db"), embedder="none")
    local = MemoryTools(cfg).status().structured_content["status"]
    assert local["daemon"]["imported_folders"] == [str(vault)]
    remote = MemoryTools(cfg, remote=True).status()
    assert remote.structured_content["status"]["daemon"]["imported_folders"] == ["vault"]
    assert "alice-home" not in json.dumps(remote.structured_content) + \
        remote.content[0].text


def test_a_title_the_file_name_says_is_not_repeated(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Sync regions.md").write_text("The regions are Asia and Europe.\n")
    (vault / "b.md").write_text("# Other regions\n\nThe regions of the moon.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
    tools = MemoryTools(config(db=str(tmp_path / "m.db"), embedder="none"))
    found = tools.search("regions")
    hits = {h["note"]: h for h in found.structured_content["results"]}
    assert "title" not in hits["vault/Sync regions.md"]  # the file name says it
    assert hits["vault/b.md"]["title"] == "Other regions"
    assert "vault/Sync regions.md:1 (known" in found.content[0].text
    assert "vault/b.md:3 — Other regions" in found.content[0].text


def test_a_query_of_tags_alone_lists_the_tagged_notes(tmp_path):
    """'tag:work' has no word to rank by: the notes that have the tag, by path, in a
    result the tool's output schema accepts (through the SDK, which checks it)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "b.md").write_text("---\ntags: [project/alpha]\n---\n# Beta\n\nplans\n")
    (vault / "a.md").write_text("# Alpha\n\n#project today\n")
    (vault / "c.md").write_text("# Gamma\n\nuntagged\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
    server = build_server(config(db=str(tmp_path / "m.db"), embedder="none"))
    r = call(server, "memory_search", {"query": "tag:project"})
    out = r.structured_content
    assert not r.is_error, r.content[0].text
    assert [h["note"] for h in out["results"]] == ["vault/a.md", "vault/b.md"]
    assert out["count"] == 2 and "tagged #project" in out["hint"]
    assert "2 notes tagged #project" in r.content[0].text
    before = call(server, "memory_search", {"query": "tag:project", "as_of": "2024-12-31"})
    assert before.structured_content["results"] == []
    mixed = call(server, "memory_search", {"query": "tag:project plans"})
    assert [h["note"] for h in mixed.structured_content["results"]] == ["vault/b.md"]
    cli = run_memory("--db", tmp_path / "m.db", "--embedder", "none", "search", "tag:project/alpha")
    assert cli.returncode == 0 and cli.stdout.startswith("1 note tagged #project/alpha")
    assert "vault/b.md — Beta" in cli.stdout
    cli = run_memory("--db", tmp_path / "m.db", "--embedder", "none", "search", "--tag",
                     "project")
    assert cli.returncode == 0 and "vault/a.md — Alpha" in cli.stdout
    # valid at a time before the notes were: none (as a search with words finds none)
    cli = run_memory("--db", tmp_path / "m.db", "--embedder", "none", "search", "tag:project",
                     "--valid-at", "2024-06-01")
    assert cli.returncode == 0 and cli.stdout.startswith("0 notes tagged #project")
    early = call(server, "memory_search", {"query": "tag:project", "valid_at": "2024-06-01"})
    assert early.structured_content["results"] == []
    assert early.structured_content["valid_at"].startswith("2024-06-01")
    cli = run_memory("--db", tmp_path / "m.db", "--embedder", "none", "search")
    assert cli.returncode == 2 and "give words to search for, or --tag TAG" in cli.stderr


def test_a_file_named_with_a_newline_is_cited_on_one_line(tmp_path):
    """Linux lets a note be named 'a\\nb.md'; cited raw, its second half would read as the
    next line of the answer (a forged result). Structured content keeps the real name."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Fake\n2. vault\tx.md").write_text("Quokka facts live here.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
    tools = MemoryTools(config(db=str(tmp_path / "m.db"), embedder="none"))
    found = tools.search("quokka")
    assert found.structured_content["results"][0]["note"] == "vault/Fake\n2. vault\tx.md"
    text = found.content[0].text
    assert "1. vault/Fake\\n2. vault\\tx.md:1 (known" in text
    assert not any(line.startswith("2.") for line in text.split("\n"))
    cli = run_memory("--db", tmp_path / "m.db", "--embedder", "none", "changes",
                     "--since", "2024-01-01")
    assert cli.returncode == 0 and "vault/Fake\\n2. vault\\tx.md — " in cli.stdout


def test_a_place_as_a_search_cites_it_opens_in_read(tmp_path):
    """``vault/Café.md:3-4`` as printed by a search opens those lines through the CLI and
    the tool (a note's name ends in .md, so none is named so); an unknown path's error
    names the path as given."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Café.md").write_text("# Cafe\n\nline three\nline four\nline five\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
    tools = MemoryTools(config(db=str(tmp_path / "m.db"), embedder="none"))
    cited = tools.search("four").structured_content["results"][0]
    place = f"{cited['note']}:{cited['line_start']}-{cited['line_end']}"
    assert place == "vault/Café.md:3-5"
    out = tools.read(place).structured_content
    assert out["text"] == "line three\nline four\nline five" and out["line_start"] == 3
    assert tools.read("vault/Café.md:3-4").structured_content["line_end"] == 4
    db = tmp_path / "m.db"
    cli = run_memory("--db", db, "--embedder", "none", "read", "vault/Café.md:5")
    assert cli.returncode == 0 and cli.stdout == "5  line five\n", cli.stderr
    cli = run_memory("--db", db, "--embedder", "none", "read", "vault/Nope.md:3")
    assert cli.returncode == 2 and "note 'vault/Nope.md:3' is not known" in cli.stderr
    cli = run_memory("--db", db, "--embedder", "none", "read", "vault/Café.md:3",
                     "--lines", "4")  # lines given twice: the name is taken as written
    assert cli.returncode == 2 and "note 'vault/Café.md:3' is not known" in cli.stderr


def test_a_server_that_cannot_start_says_why_in_one_line_while_the_client_waits(tmp_path):
    """An MCP client keeps the server's stdin open: a setup error is one line and exit 2,
    never the interpreter's abort (a thread blocked on sys.stdin's buffer at exit made it
    "Fatal Python error: _enter_buffered_busy", exit 134)."""
    env = user_env({"MEMORY_DB": str(tmp_path / "missing.db")})
    server = subprocess.Popen([sys.executable, "-m", "personal_memory", "serve"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env)
    try:
        server.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
        server.stdin.flush()
        code = server.wait(timeout=60)
        err = server.stderr.read().decode()
    finally:
        server.kill()
        server.stdin.close()
    assert code == 2, err
    assert err.strip().splitlines() == [
        f"memory serve: error: database {tmp_path / 'missing.db'} does not exist; run "
        "'memory init' or a sync first"], err


def test_configuration_precedence_and_startup_errors(notes_db, tmp_path):
    env = {"MEMORY_DB": notes_db, "MEMORY_NAMESPACE": "private", "MEMORY_ENABLE_WRITES": "true"}
    c = resolve(environ=env)
    assert (str(c.db), c.namespace, c.enable_writes) == (notes_db, "private", True)
    c = resolve(db=str(tmp_path / "x.db"), namespace="notes",
                                  enable_writes=False, environ=env)
    assert (str(c.db), c.namespace, c.enable_writes) == (str(tmp_path / "x.db"), "notes", False)
    with pytest.raises(ConfigError, match="MEMORY_ENABLE_WRITES"):
        resolve(environ={"MEMORY_ENABLE_WRITES": "maybe"})
    with pytest.raises(NotFound):
        MemoryTools(config(db=str(tmp_path / "missing.db")))
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(NotFound):  # not even with writes: a typo must not create a database
        MemoryTools(config(db=str(tmp_path / "missing.db"), enable_writes=True))
    with pytest.raises(BackendError):
        MemoryTools(config(db=notes_db, vector_backend="faiss"))


def test_write_protected_database_works_read_only(notes_db):
    os.chmod(notes_db, 0o444)
    try:
        server = build_server(config(db=notes_db))
        r = call(server, "memory_search", {"query": "prefer"})
        assert r.structured_content["count"] == 1
    finally:
        os.chmod(notes_db, 0o644)


@pytest.mark.parametrize("args, env, fragment", [
    (["--db", "{tmp}/missing.db"], {}, "does not exist"),
    ([], {"MEMORY_DB": "{tmp}/missing.db"}, "does not exist"),
    (["--db", "{tmp}/foreign.db"], {}, "another application"),
    (["--db", "{db}"], {"MEMORY_VECTOR_BACKEND": "faiss"}, "unknown"),
    (["--db", "{db}"], {"MEMORY_ENABLE_WRITES": "perhaps"}, "MEMORY_ENABLE_WRITES"),
])
def test_startup_errors_are_one_line(notes_db, tmp_path, args, env, fragment):
    import apsw
    conn = apsw.Connection(str(tmp_path / "foreign.db"))
    conn.execute("CREATE TABLE x (y)")
    conn.close()
    fill = lambda s: s.format(tmp=tmp_path, db=notes_db)
    p = run_memory("serve", *map(fill, args), env={k: fill(v) for k, v in env.items()},
                   input="", timeout=30)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], p.stderr
    assert p.stdout == ""


def _stdio(db, *extra, env=None):
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "personal_memory.mcp_server", "--db", db, *extra],
                                 env={"MEMORY_EMBEDDER": os.environ.get("PM_TEST_EMBEDDER", "none"),
                                      "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                                      **(env or {})})


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_real_subprocess_over_stdio(notes_db, mode):
    async def go():
        async with Client(_stdio(notes_db), mode=mode) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            r = await c.call_tool("memory_search", {"query": "prefer", "as_of": "2025-02-01"})
            return names, r
    names, r = asyncio.run(go())
    assert names == READ_TOOLS
    assert r.structured_content["results"][0]["snippet"] == "I **prefer** equity research."


def test_stdout_carries_only_json_rpc(notes_db):
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "memory_search", "arguments": {"query": "prefer"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "memory_search", "arguments": {"query": "x", "as_of": "bad"}}},
    ]
    proc = subprocess.Popen([sys.executable, "-m", "personal_memory.mcp_server", "--db", notes_db],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    responses = []
    for req in requests:
        proc.stdin.write(json.dumps(req) + "\n")
        proc.stdin.flush()
        if "id" in req:
            responses.append(json.loads(proc.stdout.readline()))
    proc.stdin.close()
    rest = proc.stdout.read()
    proc.wait(timeout=20)
    assert rest.strip() == ""
    assert [r["id"] for r in responses] == [1, 2, 3, 4]
    assert all(r["jsonrpc"] == "2.0" for r in responses)
    assert responses[2]["result"]["structuredContent"]["count"] == 1
    assert responses[3]["result"]["isError"] is True
    assert "serving" in proc.stderr.read()


WRITER = textwrap.dedent("""
    import sys, time
    from personal_memory import MemoryStore
    db, stop = sys.argv[1], sys.argv[2]
    import os
    with MemoryStore.open(db) as s:
        i = 0
        while not os.path.exists(stop):
            s.remember(f"w{i}", f"appended fact number{i} kiwi", namespace="notes")
            i += 1
            time.sleep(0.005)
        print(i)
""")


def test_searches_while_a_writer_appends(notes_db, tmp_path):
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, notes_db, str(stop)],
                              stdout=subprocess.PIPE, text=True)

    async def go():
        seen = []
        async with Client(_stdio(notes_db), mode="legacy") as c:
            for i in range(200):
                r = await c.call_tool("memory_search", {"query": "kiwi", "limit": 50})
                assert not r.is_error, r.content
                if i % 20 == 0:
                    seen.append((await c.call_tool("memory_status")).structured_content["status"]["counts"]["revisions"])
            stop.touch()
            written = int(writer.communicate(timeout=30)[0])
            last = await c.call_tool("memory_search", {"query": f"number{written - 1}"})
        return seen, written, last
    try:
        revisions, written, last = asyncio.run(go())
    finally:
        stop.touch()
        writer.wait(timeout=30)
    assert written > 20
    assert revisions == sorted(revisions) and revisions[-1] > revisions[0]
    # the newest revision, written after the server started, is found without a restart
    assert last.structured_content["results"][0]["memory_id"] == f"w{written - 1}"


def test_concurrent_calls_over_stdio_get_their_own_answers(notes_db):
    """Many calls in flight at once on one real server process: each gets the answer to
    its own question (the server runs tools on worker threads with their own connections
    and one shared search index)."""
    with MemoryStore.open(notes_db) as s:
        for i in range(60):
            s.remember(f"c{i:02d}", f"concurrent fact token{i}", namespace="notes",
                       known_at="2025-03-20")

    async def go():
        async with Client(_stdio(notes_db), mode="legacy") as c:
            calls = [c.call_tool("memory_search", {"query": f"token{i}", "limit": 1})
                     for i in range(60)]
            calls += [c.call_tool("memory_history", {"memory_id": f"c{i:02d}"})
                      for i in range(0, 60, 6)]
            calls.append(c.call_tool("memory_status"))
            return await asyncio.gather(*calls)
    out = asyncio.run(go())
    searches, histories, status = out[:60], out[60:-1], out[-1]
    assert [r.structured_content["results"][0]["memory_id"] for r in searches] == [
        f"c{i:02d}" for i in range(60)]
    assert [r.structured_content["memory_id"] for r in histories] == [
        f"c{i:02d}" for i in range(0, 60, 6)]
    assert status.structured_content["status"]["counts"]["memories"] == 61


INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def raw_session(db, lines):
    """Send lines to a real `memory serve` one by one and read one reply per line that
    expects one (a request, or anything malformed)."""
    proc = subprocess.Popen([sys.executable, "-m", "personal_memory.mcp_server", "--db", db],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=user_env())
    replies = []
    try:
        for line, answered in lines:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            if answered:
                replies.append(json.loads(proc.stdout.readline()))
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    return replies


def test_every_request_with_an_id_gets_an_answer_and_the_server_goes_on(notes_db):
    search = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_search",'
              '"arguments":{"query":"%s"}}}')
    replies = raw_session(notes_db, [
        (INIT, True), (INITIALIZED, False),
        ("this is not json", True),
        ('[{"jsonrpc":"2.0","id":5,"method":"ping"}]', True),
        ('{"jsonrpc":"2.0","id":6}', True),
        ('{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1,2]}', True),
        (search % (8, "prefer \\ud800"), True),
        ('{"jsonrpc":"2.0","method":"x","params":{"a":"\\udc00"}}', False),  # dropped
        ('"just a string"', True),
        (search % (9, "prefer \\ud83d\\ude00"), True),  # a valid pair is fine
        ('{"jsonrpc":"2.0","id":10,"method":"ping"}', True),
    ])
    codes = [(r.get("id"), r.get("error", {}).get("code")) for r in replies]
    assert codes == [(1, None), (None, -32700), (None, -32600), (6, -32600), (7, -32602),
                     (8, -32602), (None, -32600), (9, None), (10, None)]
    assert "not JSON" in replies[1]["error"]["message"]
    assert "batches" in replies[2]["error"]["message"]
    assert "needs a method" in replies[3]["error"]["message"]
    assert "params must be an object" in replies[4]["error"]["message"]
    assert "not valid Unicode" in replies[5]["error"]["message"]
    assert replies[7]["result"]["structuredContent"]["count"] == 1


def test_requests_written_at_once_before_the_input_ends_are_all_answered(notes_db):
    """A script that writes its requests and closes its end (printf ... | memory serve):
    the search still under way when the input ended gets its answer too, then the server
    exits 0."""
    search = ('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search",'
              '"arguments":{"query":"prefer"}}}')
    lines = [INIT, INITIALIZED, search, '{"jsonrpc":"2.0","id":3,"method":"tools/list"}']
    p = subprocess.run([sys.executable, "-m", "personal_memory", "--db", str(notes_db), "serve"],
                       input="\n".join(lines) + "\n", capture_output=True, text=True,
                       timeout=120, env=user_env())
    assert p.returncode == 0, p.stderr
    replies = {r["id"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert set(replies) == {1, 2, 3}, p.stdout
    assert replies[2]["result"]["structuredContent"]["count"] == 1


def test_check_line_forwards_ordinary_lines():
    from personal_memory.mcp_server.stdio import check_line
    assert check_line(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n') == (None, 1)
    assert check_line(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n') == (
        None, None)
    assert check_line(b'{"jsonrpc":"2.0","id":"a","result":{}}\n') == (None, None)
    assert check_line(b"\n") == (None, None)


def test_a_tool_call_that_is_no_call_is_answered_with_what_is_wrong():
    from personal_memory.mcp_server.stdio import check_line
    reply, _ = check_line(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}\n')
    assert json.loads(reply)["error"]["message"] == (
        'Invalid params: tools/call needs "name", the name of a tool (a string)')
    reply, _ = check_line(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":'
                          b'"memory_search","arguments":"notadict"}}\n')
    assert json.loads(reply)["error"] == {"code": -32602, "message": (
        "Invalid params: \"arguments\" must be an object: the tool's arguments by name")}
    assert check_line(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":'
                      b'"memory_search"}}\n') == (None, 4)


def test_a_cutoff_before_the_first_knowledge_is_named_in_the_hint(notes_db):
    server = build_server(config(db=notes_db))
    r = call(server, "memory_search", {"query": "prefer", "as_of": "2024-12-31"}, "legacy")
    hint = r.structured_content["hint"]
    assert "earliest knowledge" in hint and "later cutoff" in hint
    assert "other words" not in hint.split("rather than")[0]
    assert r.structured_content["as_of"] == "2024-12-31T23:59:59.999999Z"


def test_a_page_of_changes_reads_cleanly_for_a_moved_note(tmp_path):
    """A note moved with no section changed: its line names the move and a time a person
    reads, and ends there (no ': ' and no empty line after it)."""
    import os
    import re

    from support import vault_of
    vault = vault_of(tmp_path, {"a.md": "# A\n\nsame words\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-01")
        os.rename(vault / "a.md", vault / "b.md")
        s.sync([Folder.of(vault)], known_at="2025-02-01")
    tools = MemoryTools(config(db=str(tmp_path / "m.db"), embedder="none"))
    text = tools.changes(since="2025-01-15", until="2025-02-02").content[0].text
    (line,) = [x for x in text.split("\n") if x.startswith("- vault/b.md")]
    assert line.endswith("(moved from vault/a.md, last change 2025-02-01 00:00:00 UTC)"), line
    assert "\n    \n" not in text and not re.search(r"\n\s*\n", text)
