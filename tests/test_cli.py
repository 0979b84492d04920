"""Every CLI command as a subprocess, with its error paths."""

import json
import os
import time
import re
import shlex
import sqlite3
import subprocess
import sys


from support import ROOT, run_memory, user_env


def ok(*args, **kw):
    p = run_memory(*args, **kw)
    assert p.returncode == 0, p.stderr
    return p


def err(*args, code=2, **kw):
    p = run_memory(*args, **kw)
    assert p.returncode == code, (p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.startswith("memory: error: ")
    return p.stderr


def test_full_cycle(tmp_path):
    db = tmp_path / "m.db"
    ok("--db", db, "init")
    assert oct(db.stat().st_mode & 0o777) == "0o600"
    out = ok("--db", db, "remember", "role", "I prefer equity research.", "-n", "p",
             "--known-at", "2025-01-01", "--json").stdout
    assert json.loads(out)["created"] is True and json.loads(out)["current"] is True
    out = ok("--db", db, "remember", "role", "-", "-n", "p", "--known-at", "2025-03-01",
             input="I prefer quantitative trading.").stdout
    assert "Remembered role as revision #2" in out
    out = ok("--db", db, "search", "prefer", "-n", "p", "--as-of", "2025-02-01", "--json").stdout
    assert [r["content"] for r in json.loads(out)["results"]] == ["I prefer equity research."]
    assert json.loads(out)["as_of"] == "2025-02-01T23:59:59.999999Z"  # the cutoff, echoed
    out = ok("--db", db, "search", "prefer", "-n", "p").stdout
    assert "quantitative trading" in out and "score" in out
    out = ok("--db", db, "history", "role", "-n", "p").stdout
    assert out.count("known 2025-") == 2
    out = ok("--db", db, "forget", "role", "-n", "p", "--json").stdout
    assert json.loads(out)["revision"]["deleted"] is True
    assert json.loads(ok("--db", db, "search", "prefer", "-n", "p", "--json").stdout)["results"] == []
    stats = json.loads(ok("--db", db, "stats", "--json").stdout)
    assert stats["counts"]["revisions"] == 3 and stats["counts"]["tombstones"] == 1
    assert "revisions" in ok("--db", db, "stats").stdout


def test_times_a_person_reads_show_seconds_at_most(tmp_path):
    db = tmp_path / "m.db"
    ok("--db", db, "remember", "role", "I prefer equity research.", "-n", "p",
       "--known-at", "2025-01-01T10:00:00.123456Z")
    for command in (["search", "prefer"], ["history", "role"], ["search", "prefer",
                                                                 "--as-of", "2025-02-01"]):
        out = ok("--db", db, *command, "-n", "p").stdout
        assert "known 2025-01-01 10:00:00 UTC" in out and ".123456" not in out, out
    assert "the end of 2025-02-01" in out
    exact = json.loads(ok("--db", db, "history", "role", "-n", "p", "--json").stdout)
    assert exact[0]["known_at"] == "2025-01-01T10:00:00.123456Z"  # the record keeps them


def test_export_never_overwrites(tmp_path):
    db = tmp_path / "m.db"
    ok("--db", db, "remember", "a", "alpha", "-n", "p")
    out = tmp_path / "out.json"
    ok("--db", db, "export", out)
    doc = json.loads(out.read_text())
    assert doc["format"] == "personal-memory-export" and len(doc["revisions"]) == 1
    before = out.read_text()
    msg = err("--db", db, "export", out)
    assert "already exists" in msg and out.read_text() == before
    assert json.loads(ok("--db", db, "export", "-").stdout)["revisions"][0]["content"] == "alpha"
    msg = err("--db", db, "export", tmp_path / "missing" / "x.json")
    assert "cannot write" in msg


def test_read_only_commands_do_not_create_the_database(tmp_path):
    db = tmp_path / "none.db"
    for cmd in (["search", "x"], ["history", "x"], ["stats"], ["export", tmp_path / "e.json"]):
        msg = err("--db", db, *cmd)
        assert "does not exist" in msg
    assert not db.exists()


def test_errors_are_one_line_with_exit_2(tmp_path):
    db = tmp_path / "m.db"
    ok("--db", db, "remember", "a", "alpha", "-n", "p")
    assert "error: --as-of: 'soon'" in err("--db", db, "search", "x", "--as-of", "soon")
    assert "no timezone" in err("--db", db, "search", "x", "--valid-at", "2025-01-01T10:00")
    assert "limit" in err("--db", db, "search", "x", "--limit", "0")
    # another command's option is refused, not searched for as a word
    assert "unrecognized arguments: --no-embed" in err("--db", db, "search", "x",
                                                       "--no-embed")
    assert "not visible" in err("--db", db, "forget", "a", "-n", "p", "--valid-from",
                                "2020-01-01", "--valid-to", "2020-02-01")
    assert "does not exist" in err("--db", db, "forget", "zzz", "-n", "p")
    assert "has no revisions" in err("--db", db, "history", "zzz", "-n", "p")
    assert "invalid choice" in err("--db", db, "nosuchcommand")
    # an option a command does not take points to that command's help
    assert err("--db", db, "stats", "--bogus").rstrip().endswith("(see 'memory stats --help')")
    for bad in ("99999", "-1", "http"):  # said by the parser, never a traceback
        assert f"--port: {bad} is not a port (0 to 65535)" in err("--db", db, "ui", "--no-open",
                                                                  "--port", bad)
    assert "required" in err("--db", db, "remember")
    assert "give words to search for" in err("--db", db, "search", "")
    (tmp_path / "x.txt").write_text("not a database " * 300)
    assert "not a SQLite database" in err("--db", tmp_path / "x.txt", "stats")


def test_memory_db_environment_and_flag_precedence(tmp_path):
    env_db = tmp_path / "env.db"
    flag_db = tmp_path / "flag.db"
    ok("remember", "a", "alpha", env={"MEMORY_DB": str(env_db)})
    assert env_db.exists()
    ok("--db", flag_db, "remember", "b", "beta", env={"MEMORY_DB": str(env_db)})
    assert flag_db.exists()
    out = ok("search", "alpha", "--json", env={"MEMORY_DB": str(env_db)}).stdout
    assert [r["memory_id"] for r in json.loads(out)["results"]] == ["a"]


def test_default_path_comes_from_platformdirs(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    ok("init", env=env)
    db = tmp_path / "data" / "personal-memory" / "memory.db"
    assert db.exists()
    assert oct(db.parent.stat().st_mode & 0o777) == "0o700"


def test_doctor(tmp_path):
    db = tmp_path / "m.db"
    report = json.loads(ok("--db", db, "doctor", "--json").stdout)
    names = {c["name"]: c for c in report["checks"]}
    assert names["vector backend"]["detail"].startswith("numpy")  # auto: numpy, exact
    chosen = os.environ.get("PM_TEST_EMBEDDER", "none")  # what support.user_env sets
    assert names["semantic model"]["detail"].startswith(
        "keyword-only (embedder set to none)" if chosen == "none" else "semantic: ")
    assert names["database"]["status"] == "warn" and report["ok"] is True
    native = json.loads(ok("--db", db, "--vector-backend", "sqlite-vec", "--embedder", "e5",
                           "doctor", "--json").stdout)
    names = {c["name"]: c for c in native["checks"]}
    assert names["vector backend"]["detail"].startswith("sqlite-vec")
    assert names["semantic model"]["status"] == "ok"
    assert "multilingual-e5-small" in names["semantic model"]["detail"]
    warned = ok("--db", db, "doctor").stdout  # no database yet: a warning, not all good
    assert re.search(r"\n\nNo problems; \d+ warnings? above\.\n$", warned), warned
    ok("--db", db, "init")
    human = ok("--db", db, "doctor").stdout
    assert "All good." in human and "integrity ok" in human
    assert "[  ok] search index   built by this version's rules" in human
    # An index an earlier version built: a warning, until a writer rebuilds it.
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'text_version'",
                 ("nfkc+no-format+no-points+cjk-hangul-sea-bigrams",))
    conn.commit()
    conn.close()
    old = json.loads(ok("--db", db, "doctor", "--json").stdout)
    index = {c["name"]: c for c in old["checks"]}["search index"]
    assert index["status"] == "warn" and "memory sync" in index["detail"] and old["ok"]
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("one note\n")
    assert "1 file scanned" in ok("--db", db, "sync", vault).stdout
    human = ok("--db", db, "doctor").stdout
    assert "[  ok] search index" in human and "[  ok] notes          every file" in human
    (vault / "b.md").write_bytes(b"binary\x00note")  # a file the sync cannot import
    ok("--db", db, "sync", vault)
    human = ok("--db", db, "doctor").stdout
    assert "[warn] notes          1 file not imported (v/b.md: contains a NUL byte" in human
    bad = tmp_path / "bad.db"
    bad.write_text("garbage " * 500)
    p = run_memory("--db", bad, "doctor", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["ok"] is False


def test_demo_prints_point_in_time_answers(tmp_path):
    out = ok("--db", tmp_path / "d.db", "demo").stdout
    assert re.search(r"as of 2025-02-01: .*equity research", out)
    assert re.search(r"as of 2025-04-01: .*quantitative trading", out)
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert "quantitative trading" in ok("demo", env=env).stdout
    assert not (tmp_path / "data").exists()  # the user's default database is untouched
    mine = tmp_path / "mine.db"  # nor the one $MEMORY_DB names (with newer revisions)
    ok("--db", mine, "remember", "a", "alpha")
    assert "quantitative trading" in ok("demo", env={"MEMORY_DB": str(mine)}).stdout
    assert ok("--db", mine, "stats", "--json").stdout.count('"demo"') == 0


def test_vector_backend_flag(tmp_path):
    db = tmp_path / "m.db"
    out = ok("--db", db, "--vector-backend", "python", "init", "--json").stdout
    assert json.loads(out)["vector_backend"] == "python"
    assert "invalid choice" in err("--db", db, "--vector-backend", "faiss", "init")


def test_every_command_is_documented():
    """A command missing from the README or its --help fails here."""
    from personal_memory.cli.context import COMMANDS
    readme = (ROOT / "README.md").read_text()
    for name in COMMANDS:
        assert f"memory {name}" in readme or f"`{name}`" in readme, name
        assert ok(name, "--help").stdout.strip()


def test_backup_is_consistent_private_and_never_overwrites(tmp_path):
    db = tmp_path / "m.db"
    ok("--db", db, "remember", "a", "alpha", "-n", "p")
    out = tmp_path / "copy.db"
    ok("--db", db, "backup", out)
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    res = json.loads(ok("--db", out, "search", "alpha", "-n", "p", "--json").stdout)["results"]
    assert [r["memory_id"] for r in res] == ["a"]
    assert "already exists" in err("--db", db, "backup", out)
    assert "does not exist" in err("--db", tmp_path / "none.db", "backup", tmp_path / "x.db")
    assert "cannot write" in err("--db", db, "backup", tmp_path / "no" / "such" / "dir.db")
    here = os.getcwd()
    os.chdir(tmp_path)
    try:  # '-' is export's standard output, no file name for a backup
        assert "'-' is no file" in err("--db", db, "backup", "-")
        assert not (tmp_path / "-").exists()
    finally:
        os.chdir(here)


def test_client_config_has_absolute_paths(tmp_path):
    db = tmp_path / "m.db"
    out = json.loads(ok("--db", db, "client-config", "--json").stdout)
    entry = out["claude_desktop"]["mcpServers"]["personal-memory"]
    assert os.path.isabs(entry["command"]) and entry["args"] == ["serve"]
    assert entry["env"]["MEMORY_DB"] == str(db) and entry["env"]["MEMORY_NAMESPACE"] == "notes"
    assert out["claude_code"].startswith("claude mcp add personal-memory")
    assert "Claude Desktop" in ok("--db", db, "client-config").stdout


def test_library_warnings_in_the_daemon_log_are_one_short_line(caplog):
    import logging
    import warnings
    from personal_memory.cli import app as cli
    cli.configure_logging(long_running=True)
    with caplog.at_level(logging.WARNING, logger="py.warnings"):
        for _ in range(5):
            warnings.warn("x" * 5000 + "\nsecond line", RuntimeWarning)
    lines = [r.getMessage() for r in caplog.records if r.name == "py.warnings"]
    assert len(lines) == 1 and len(lines[0]) <= 301 and "\n" not in lines[0]
    logging.captureWarnings(False)


def test_search_takes_several_words_without_quotes(tmp_path):
    db = tmp_path / "m.db"
    run_memory("--db", db, "remember", "pdf", "Embed a PDF in a note with an embed link.")
    run_memory("--db", db, "remember", "other", "Unrelated gardening text.")
    p = run_memory("--db", db, "search", "embed", "pdf", "--json")
    assert p.returncode == 0, p.stderr
    import json
    assert json.loads(p.stdout)["results"][0]["memory_id"] == "pdf"


def test_remember_with_the_model_on_embeds_at_once(tmp_path):
    db = tmp_path / "m.db"
    model = {"MEMORY_EMBEDDER": "e5"}
    ok("--db", db, "remember", "role", "I prefer equity research.", "-n", "p", env=model)
    p = ok("--db", db, "search", "prefer", "-n", "p", "--json", env=model)
    assert json.loads(p.stdout)["results"][0]["cosine"] is not None
    assert "no vector yet" not in p.stderr
    # Keyword-only, nothing is embedded (and nothing waits for a model).
    ok("--db", db, "remember", "plain", "kept by words", "-n", "p",
       env={"MEMORY_EMBEDDER": "none"})
    out = ok("--db", db, "search", "words", "-n", "p", env=model).stdout
    assert "1 visible memories have no vector yet" in out


def test_the_readme_console_example_is_what_the_product_prints(tmp_path):
    """Run with the model on, as a user has it by default; the scores' digits aside."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```console\n(\$ memory remember role.*?)```", readme, re.S).group(1)
    db, expected, printed = tmp_path / "m.db", [], []
    for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
        command, *lines = chunk.rstrip("\n").split("\n")
        expected += lines
        args = shlex.split(command)[1:]
        printed += ok("--db", db, *args, env={"MEMORY_EMBEDDER": "e5"}).stdout.rstrip(
            "\n").split("\n")
    digits = re.compile(r"\d+\.\d+(e-?\d+)?")
    assert [digits.sub("N", x) for x in printed] == [digits.sub("N", x) for x in expected]


def test_the_demo_script_shows_only_its_story(tmp_path):
    """run-demo.sh past its setup (the project's .venv), with the model on as a user has
    it: its waiting prints nothing."""
    script = (ROOT / "run-demo.sh").read_text()
    script = script.replace('cd "$(dirname "$0")"', f'cd "{ROOT}"')
    script = script.replace("source scripts/setup-venv.sh", ":")
    script = script.replace('memory=".venv/bin/memory"', f'memory="{tmp_path}/memory"')
    script = script.replace(".venv/bin/python", sys.executable)
    (tmp_path / "memory").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m personal_memory'
                                     ' "$@"\n')
    (tmp_path / "memory").chmod(0o755)
    (tmp_path / "demo.sh").write_text(script)
    out = subprocess.run(["bash", str(tmp_path / "demo.sh")], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=300,
                         env=user_env({"MEMORY_EMBEDDER": "e5"}))
    story = out.stdout  # as a terminal shows it: both streams, in order
    assert out.returncode == 0, story
    waiting = story[story.index("== 2."):story.index("Q: ")]
    for diagnostic in ("No more results", "Nothing matched", "no vector yet"):
        assert diagnostic not in waiting, waiting
    now = story[story.index("-- now:"):story.index("-- every revision")]
    assert "Thursdays" in now and "no vector yet" not in now
    meaning = story[story.index("-- found by meaning"):story.index("-- nothing fits")]
    assert "notes/travel.md" in meaning and "No results" not in meaning, meaning


def test_status_says_what_its_revisions_are(tmp_path):
    from personal_memory import MemoryStore
    from personal_memory.cli import output
    from personal_memory.notes.folders import Folder
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nOne.\n")
    (vault / "b.md").write_text("# B\n\nTwo.\n")
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        (vault / "b.md").unlink()
        store.sync([Folder.of(vault)])
        line = next(x for x in output.status(store.status()).splitlines()
                    if x.startswith("revisions"))
    assert line == ("revisions     6: every version, over all time, of 2 memories (sections "
                    "and facts) and of 2 notes (titles and tags); 2 are deletions"), line


def test_status_calls_the_embedding_run_in_progress_the_current_run(tmp_path):
    from dataclasses import replace

    from personal_memory import MemoryStore
    from personal_memory.cli import output
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        found = store.status()
    busy = replace(found.vectors, embedder="e5", pending_vectors=40,
                   embedding_per_second=8.0, eta_seconds=5.0, rate_current=True)
    assert "8.0 per second in the current run, about" in output.status(
        replace(found, vectors=busy))
    # a daemon just restarted: the rate is the earlier run's until its first batch
    restarted = replace(busy, rate_current=False)
    assert "8.0 per second in the last run, about" in output.status(
        replace(found, vectors=restarted))
    done = replace(busy, pending_vectors=0, eta_seconds=None, rate_current=False)
    assert "all embedded, 8.0 per second in the last run" in output.status(
        replace(found, vectors=done))
    # the rate is a current run's only while the process that wrote it lives
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        for pid, current in ((os.getpid(), True), (int(dead), False)):
            with store._db.transaction():
                store._db.set_meta("embedding_rate", "8.00")
                store._db.set_meta("embedding_by", f"{pid} {time.time():.0f}")
            assert store.status().vectors.rate_current is current


def test_ctrl_c_while_remember_embeds_keeps_the_memory(tmp_path):
    import signal
    db = tmp_path / "m.db"
    ok("--db", db, "init")
    proc = subprocess.Popen([sys.executable, "-m", "personal_memory", "--db", str(db),
                             "remember", "role", "I prefer equity research.", "-n", "p"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=user_env({"MEMORY_EMBEDDER": "e5", "PYTHONUNBUFFERED": "1"}))
    first = proc.stdout.readline()
    assert first.startswith("Remembered role as revision #1"), first
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    # Interrupted while the vector was made (130), done before the signal came (0), or
    # stopped by it while the interpreter shut down: the memory is saved all the same.
    assert proc.returncode in (0, 130, -signal.SIGINT), err
    if proc.returncode == 130:
        assert "Saved; its vector was not made" in out + err
    assert "I prefer equity research." in ok("--db", db, "history", "role", "-n", "p").stdout


def test_search_says_when_a_folder_filter_names_no_folder(tmp_path):
    vault = tmp_path / "vault"
    (vault / "Obsidian Sync").mkdir(parents=True)
    (vault / "Obsidian Sync" / "limits.md").write_text("# Limits\n\nSync keeps versions.\n")
    db = tmp_path / "m.db"
    ok("--db", db, "sync", vault)
    out = ok("--db", db, "search", "folder:Obsidian", "Sync", "versions").stdout
    assert ('Note: folder:Obsidian names no folder known in namespace \'notes\'; the folder '
            '"Obsidian Sync" has a space: quote it, folder:"Obsidian Sync".') in out
    p = ok("--db", db, "search", 'folder:"Obsidian Sync"', "versions", "--json")
    assert len(json.loads(p.stdout)["results"]) == 1 and "Note:" not in p.stderr


def test_search_names_the_words_no_result_holds(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "limits.md").write_text("# Limits\n\nSync keeps versions for a year.\n")
    db = tmp_path / "m.db"
    ok("--db", db, "sync", vault)
    out = ok("--db", db, "search", "zorbleflux", "sync", "versions").stdout
    assert out.splitlines()[0] == ("1 result for 'zorbleflux sync versions' (everything "
                                   "known), none holding 'zorbleflux':")
    p = ok("--db", db, "--json", "search", "zorbleflux", "sync", "versions")
    assert len(json.loads(p.stdout)["results"]) == 1
    assert json.loads(p.stdout)["missing"] == ["zorbleflux"]
    assert "Note: no result holds 'zorbleflux'." in p.stderr
    p = ok("--db", db, "--json", "search", "sync", "versions")
    assert "no result holds" not in p.stderr


def test_a_dry_run_creates_no_database(tmp_path):
    """`sync --dry-run` says what a first sync would import, and leaves no file behind:
    a database appearing where none was would hide an unmounted drive."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nwords\n")
    db = tmp_path / "data" / "m.db"
    p = run_memory("--db", db, "sync", "--dry-run", notes)
    assert p.returncode == 0 and "dry run (nothing written)" in p.stdout
    assert "1 imported" in p.stdout
    assert not db.exists() and not db.parent.exists()


def test_a_notes_terminal_controls_are_printed_escaped(tmp_path):
    """A shared note can hold escape sequences a terminal obeys (write the clipboard,
    clear the screen, set the title): what the command line prints for a person shows
    them escaped, and a file name cannot forge a line of status."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ctrl.md").write_text("# C\n\nredword \x1b]52;c;cHduZWQ=\x07 \x1b[2J end\n")
    (notes / "esc.md").write_text('---\ntags: ["\\e[31mred"]\n---\n# H\n\nbody words\n')
    os.mkfifo(notes / "evil\nproblem       fake.md")  # named as a problem, never opened
    db = tmp_path / "m.db"
    run_memory("--db", db, "sync", notes)
    for args in (["search", "redword"], ["read", "notes/ctrl.md"], ["read", "notes/esc.md"],
                 ["history", "notes/ctrl.md#C"], ["status"]):
        out = ok("--db", db, *args).stdout
        assert not any(ord(c) < 32 and c not in "\n\t" or 0x7f <= ord(c) < 0xa0 for c in out)
    assert "\\x1b]52;c;cHduZWQ=\\x07 \\x1b[2J" in ok("--db", db, "search", "redword").stdout
    assert "\\x1b[31mred" in ok("--db", db, "read", "notes/esc.md").stdout
    status = ok("--db", db, "status").stdout
    assert "\nproblem       fake.md" not in status and "evil\\nproblem" in status, status


def test_a_long_span_is_said_in_days_or_years_not_thousands_of_hours():
    from personal_memory.render import duration
    assert [duration(s) for s in (30, 600, 7200, 3 * 86400, 73 * 365.25 * 86400)] == [
        "30 s", "10 min", "2.0 h", "3.0 days", "73.0 years"]


def test_a_collection_name_that_could_share_note_ids_is_refused(tmp_path):
    """Collection ``a/b`` with ``x.md`` and ``a`` with ``b/x.md`` would both be note
    ``a/b/x.md``, each folder's sync revising and deleting the other's: a name holding
    ``/`` (or blank, ``.``, ``..``) is refused in one line on the command line and in the
    config file, and nothing is written; ``#`` is a name's character like any other."""
    (tmp_path / "c1").mkdir()
    (tmp_path / "c1" / "x.md").write_text("# T\n\nbody\n")
    db = tmp_path / "m.db"
    for name in ("a/b", "", " ", ".", ".."):
        e = err("--db", db, "sync", tmp_path / "c1", "--collection", name)
        assert "collection:" in e
    assert not db.exists()
    config = tmp_path / "config.toml"
    config.write_text(f'[[folders]]\npath = "{tmp_path / "c1"}"\ncollection = "a/b"\n')
    e = err("--db", db, "sync", env=user_env({"MEMORY_CONFIG": str(config)}))
    assert "folders[0].collection: 'a/b' is not a collection name" in e
    ok("--db", db, "sync", tmp_path / "c1", "--collection", "C# notes")
    assert "C# notes/x.md" in ok("--db", db, "read", "C# notes/x.md").stdout


def test_an_empty_option_is_refused_not_taken_for_one_left_out(tmp_path):
    """``--db ''`` would have opened $MEMORY_DB or the default database, ``-n ''`` the
    default namespace: each is refused in one line and nothing is written anywhere."""
    home = tmp_path / "home"
    env = user_env({"HOME": str(home), "XDG_DATA_HOME": str(home / "data"),
                    "MEMORY_DB": str(tmp_path / "env.db")})
    for args, says in ((("--db", "", "remember", "k", "v"), "--db: empty"),
                       (("--db", tmp_path / "m.db", "remember", "k", "v", "-n", ""),
                        "--namespace: empty"),
                       (("--db", tmp_path / "m.db", "stats", "--config", ""), None)):
        p = run_memory(*args, env=env)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
        assert says is None or says in p.stderr, p.stderr
    assert not (tmp_path / "env.db").exists() and not (tmp_path / "m.db").exists()
    assert not home.exists()


def test_forget_purge_and_repair_clock_never_create_a_database(tmp_path):
    """A mistyped path is reported, not made into an empty history that has nothing to
    forget, purge ("Nothing to purge" with exit 0 would reassure someone erasing a leaked
    key) or repair."""
    db = tmp_path / "typo" / "m.db"
    for args in (("forget", "k"), ("purge", "--id", "k", "--yes"),
                 ("purge", "--matching", "secret", "--yes"), ("repair-clock",)):
        e = err("--db", db, *args)
        assert "does not exist; run 'memory init' or a sync first" in e
    assert not (tmp_path / "typo").exists()


def test_a_blank_query_to_changes_is_refused_as_search_refuses_it(tmp_path):
    """``changes --since 7d ''`` listed every change, as if no query were given."""
    db = tmp_path / "m.db"
    ok("--db", db, "remember", "k", "v")
    for blank in ("", "   "):
        assert "query: must be a non-empty string" in err("--db", db, "changes", "--since",
                                                          "7d", blank)
    assert "1 other memory" in ok("--db", db, "changes", "--since", "7d").stdout
