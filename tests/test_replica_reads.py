"""Reading a replica in place through Litestream's VFS: the same answers as the database
at the replica's position for randomised queries and cutoffs, new writes seen without
reopening, and an honest position when the replica lags."""

import json
import os
import random
import shutil
import subprocess
import sys
import time

import pytest

from personal_memory.errors import PersonalMemoryError
from personal_memory.memory import MemoryStore
from personal_memory.replication import replica as replicas
from personal_memory.times import format_time, parse_time
from support import ROOT, run_memory, user_env, wait_for
from test_replication import (Replicator, caught_up, env, needs_litestream, replicated_once,
                              restored_whole)

WORDS = ("quince medlar apricot lighthouse harbour ledger invoice kestrel osprey lantern "
         "granite meadow orchard ferry violin compass").split()
START = parse_time("2025-01-01T00:00:00Z")
HOUR = 3_600_000_000


def _vfs() -> bool:
    try:
        import litestream_vfs  # noqa: F401
    except ImportError:
        return False
    return True


needs_vfs = pytest.mark.skipif(not _vfs(), reason="Litestream's VFS is not installed: pip "
                               "install 'personal-memory[replication]' (litestream-vfs)")


class Reader:
    """A replica reader process (tests/replica_reader.py), asked one JSON line at a time."""

    def __init__(self, url: str):
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "replica_reader.py"), url],
            env=replicas.environment(url, user_env()), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)

    def ask(self, **request) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the reader ended (exit {self.proc.poll()})"
        answer = json.loads(line)
        assert "error" not in answer, answer["error"]
        return answer

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


def fill(store: MemoryStore, rng: random.Random, n: int, start: int) -> list[int]:
    """``n`` writes an hour apart (revisions, some revised, some forgotten); their times."""
    times = []
    for i in range(n):
        at = start + i * HOUR
        ns = rng.choice(["notes", "work"])
        mid = f"m{rng.randrange(n // 3)}"
        if rng.random() < 0.1:
            try:
                store.forget(mid, namespace=ns, known_at=format_time(at))
            except PersonalMemoryError:  # nothing visible to forget then: write instead
                store.remember(mid, " ".join(rng.choices(WORDS, k=8)), namespace=ns,
                               known_at=format_time(at))
        else:
            store.remember(mid, " ".join(rng.choices(WORDS, k=rng.randint(3, 12))),
                           namespace=ns, title=rng.choice(WORDS), known_at=format_time(at))
        times.append(at)
    return times


@pytest.fixture
def s3_server(tmp_path, monkeypatch):
    """An S3-protocol server on loopback (moto's server mode) with one bucket; the URL
    form Litestream needs for it."""
    import socket
    try:
        import boto3
        import moto.server  # noqa: F401
    except ImportError:
        pytest.skip("moto's server is not installed (pip install 'moto[server]', in the "
                    "test extras)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = open(tmp_path / "moto.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=log, stderr=subprocess.STDOUT)
    for name, value in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test")):
        monkeypatch.setenv(name, value)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        wait_for(lambda: _answers(s3), 30, interval=0.2, what="the S3 server")
        s3.create_bucket(Bucket="notes")
        yield f"s3://notes/memory?endpoint={endpoint}&region=us-east-1&forcePathStyle=true"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def _answers(s3) -> bool:
    try:
        s3.list_buckets()
    except Exception:  # not listening yet
        return False
    return True


@pytest.fixture(params=["file", "s3"])
def destination(request, tmp_path):
    if request.param == "file":
        return str(tmp_path / "replica")
    return request.getfixturevalue("s3_server")


@needs_litestream
@needs_vfs
def test_a_replica_answers_as_the_database_did_at_its_position(tmp_path, destination):
    seed = int(os.environ.get("PM_TEST_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    db = tmp_path / "m.db"
    store = MemoryStore.open(db, embedder="none")
    times = fill(store, rng, 150, START)
    done = run_memory("--db", db, "replicate", "setup", destination, "--no-service",
                      env=env())
    assert done.returncode == 0, done.stderr
    rep = Replicator(db)
    reader = None
    try:
        wait_for(lambda: caught_up(db), 30, what="the replica")
        restored_whole(destination, db, tmp_path)  # by its URL alone
        url = replicas.replica_url(destination)
        reader = Reader(url)
        # A reader opened while Litestream compacts the level it reads may start one write
        # behind; it follows within the VFS's poll, or Follower's reconnect (STUCK_SECONDS).
        wait_for(lambda: reader.ask(op="position")["known_up_to"] == format_time(times[-1]),
                 30, interval=0.5, what="the new reader to reach the replica's position")
        cutoffs = [None, *(rng.choice(times) for _ in range(20)),
                   *(START + rng.randrange(-HOUR, len(times) * HOUR) for _ in range(20))]
        for i in range(300):
            query = " ".join(rng.sample(WORDS, rng.randint(1, 2)))
            ns, cutoff = rng.choice(["notes", "work"]), rng.choice(cutoffs)
            as_of = format_time(cutoff) if cutoff is not None else None
            want = store.search(query, namespace=ns, as_of=as_of, limit=8)
            got = reader.ask(op="search", query=query, namespace=ns, as_of=as_of, limit=8)
            assert got["results"] == [r.to_dict() for r in want], \
                f"seed {seed}, query {i}: {query!r} in {ns} as of {as_of}"
            assert got["no_answer"] == want.no_answer and want.known_up_to is None
            assert got["known_up_to"] == format_time(times[-1])
        for _ in range(20):
            mid, ns = f"m{rng.randrange(50)}", rng.choice(["notes", "work"])
            as_of = format_time(rng.choice(times))
            try:
                want = [r.to_dict() for r in store.history(mid, namespace=ns, as_of=as_of)]
            except PersonalMemoryError as exc:
                want = f"{type(exc).__name__}: {exc}"
            request = dict(op="history", memory_id=mid, namespace=ns, as_of=as_of)
            if isinstance(want, str):
                with pytest.raises(AssertionError, match=want.split(":")[0]):
                    reader.ask(**request)
            else:
                assert reader.ask(**request)["history"] == want, f"seed {seed}"

        # a write on the database reaches the open reader, without reopening it
        late = START + len(times) * HOUR
        store.remember("late", "a lantern by the ferry", namespace="notes",
                       known_at=format_time(late))
        wait_for(lambda: reader.ask(op="position")["known_up_to"] == format_time(late), 30,
                 interval=0.5, what="the reader to see the new write")
        # Its search follows within the same bound (over S3 under load, one search came
        # before the index's pages of that write had arrived).
        def found_late(op: str) -> list[str]:
            return [r["memory_id"] for r in reader.ask(
                op=op, query="lantern ferry", namespace="notes", limit=200)["results"]]
        try:  # (a connection the reader takes anew may start a write behind: 2 compactions)
            wait_for(lambda: "late" in found_late("search"), 60, interval=0.5,
                     what="the reader's search to find the new write")
        except AssertionError:  # say whether the reader's cached index or its file lags
            reference = "finds" if "late" in found_late("reference") else "misses"
            raise AssertionError(
                f"seed {seed}: the reader's search misses the write its position shows; "
                f"the reference search {reference} it (position "
                f"{reader.ask(op='position')['known_up_to']})") from None

        # replication stopped: the reader keeps its honest position, the database moves on
        rep.stop()
        rep = None
        store.remember("later", "a violin in the orchard", namespace="notes",
                       known_at=format_time(late + HOUR))
        found = reader.ask(op="search", query="violin orchard", namespace="notes")
        assert found["known_up_to"] == format_time(late)
        assert "later" not in [r["memory_id"] for r in found["results"]]

        # a reader killed outright leaves nothing to repair: the next one answers the same
        reader.proc.kill()
        reader.proc.wait()
        reader = Reader(url)
        again = reader.ask(op="search", query="violin orchard", namespace="notes")
        assert again == found
    finally:
        if reader is not None:
            reader.close()
        if rep is not None:
            rep.stop()
        store.close()


@needs_litestream
@needs_vfs
def test_the_command_reads_a_replica_and_says_how_far_it_knows(tmp_path):
    db, replica = tmp_path / "m.db", tmp_path / "replica"
    store = MemoryStore.open(db, embedder="none")
    store.remember("garden", "the quince tree flowers in April", namespace="notes",
                   known_at="2025-03-01T10:00:00Z")
    store.close()
    replicated_once(db, replica)
    listing = sorted(p.relative_to(replica) for p in replica.rglob("*"))
    done = run_memory("search", "quince", "--replica", replica, "--json", env=env())
    assert done.returncode == 0, done.stderr
    assert [r["memory_id"] for r in json.loads(done.stdout)["results"]] == ["garden"]  # JSON intact
    assert "knows only up to 2025-03-01 10:00:00 UTC" in done.stderr
    before = run_memory("search", "quince", "--replica", replica, "--as-of", "2025-03-01T10:00Z",
                        env=env())
    assert "known up to 2025-03-01 10:00:00 UTC" in before.stdout
    assert "complete for its cutoff" in before.stdout
    status = run_memory("status", "--replica", f"file://{replica}", "--json", env=env())
    assert json.loads(status.stdout)["replication"] == {
        "state": "replica", "destination": f"file://{replica}", "running": False,
        "generation": None, "generations": 0, "position": "2025-03-01T10:00:00Z",
        "lag_seconds": None, "max_lag_seconds": 300.0, "problem": None}
    history = run_memory("history", "garden", "--replica", replica, env=env())
    assert history.returncode == 0 and "quince" in history.stdout
    assert sorted(p.relative_to(replica) for p in replica.rglob("*")) == listing  # unwritten
    missing = run_memory("search", "quince", "--replica", tmp_path / "nothing", env=env())
    assert missing.returncode != 0 and missing.stderr.count("\n") == 1, missing.stderr
    sftp = run_memory("search", "quince", "--replica", "sftp://me@host.example/replica",
                      env=env())  # the VFS takes no SSH key: said at once, in one line
    assert sftp.returncode != 0 and sftp.stderr.count("\n") == 1, sftp.stderr
    assert "cannot be read in place" in sftp.stderr

    # the reader as a service: a machine with no database of its own
    home = {**env(), "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "PATH": "/nonexistent"}  # no service manager: the unit file is all there is
    reader_db = tmp_path / "reader" / "m.db"
    done = run_memory("--db", reader_db, "service", "install", "--http", "--systemd",
                      "--replica", replica, env=home)
    unit = tmp_path / "cfg" / "systemd" / "user" / "personal-memory-mcp.service"
    assert unit.exists(), done.stderr
    assert f"--db {reader_db} serve --http --replica file://{replica}" in unit.read_text()
    assert reader_db.parent.is_dir() and not reader_db.exists()  # its access file's folder
    wrong = run_memory("--db", reader_db, "service", "install", "--http", "--systemd",
                       "--replica", tmp_path / "nothing", env=home)
    assert wrong.returncode == 2 and "no Litestream 0.5 replica" in wrong.stderr


@needs_litestream
@needs_vfs
def test_a_half_copied_file_in_the_replica_is_one_line_not_a_go_stack(tmp_path):
    """A replica folder copied by rsync or a sync client may hold a file cut short: where
    the cut falls, the VFS's Go runtime stops the process with a stack of its own (0.5.17:
    "panic: runtime error: slice bounds out of range"). The command says it in one line,
    naming the replica (exit 2); no cut gives a Go stack or more than one line."""
    db, replica = tmp_path / "m.db", tmp_path / "replica"
    store = MemoryStore.open(db, embedder="none")
    store.remember("m", "quince harvest", namespace="notes")
    assert run_memory("--db", db, "replicate", "setup", replica, "--no-service",
                      env=env()).returncode == 0
    rep = Replicator(db)
    try:  # writes until Litestream compacts several into one file of level 1
        def compacted():
            for i in range(40):
                store.remember(f"m{i}", f"quince harvest at {time.time()} " + "orchard " * 90,
                               namespace="notes")
            return [p for p in (replica / "ltx" / "1").glob("*.ltx")
                    if p.stem.split("-")[0] != p.stem.split("-")[1]]
        (big, *_) = wait_for(compacted, 90, interval=1.0, what="a compacted file of level 1")
        wait_for(lambda: caught_up(db), 30, what="the replica caught up")
    finally:
        rep.stop()
        store.close()
    done = run_memory("search", "quince", "--replica", replica, env=env())
    assert done.returncode == 0 and "quince" in done.stdout, done.stderr
    damaged = tmp_path / "damaged"
    shutil.copytree(replica, damaged)
    cut = damaged / big.relative_to(replica)
    whole = cut.read_bytes()
    crashed = False
    # where the copy stopped: about one cut in six stops the reader (a crash met by the
    # first 49 with all but certainty; most cuts give one line of another kind)
    for share in range(2, 100, 2):
        cut.write_bytes(whole[:len(whole) * share // 100])
        done = run_memory("search", "quince", "--replica", damaged, env=env())
        assert "goroutine" not in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert done.returncode in (0, 2) and done.stderr.count("\n") <= 1, done.stderr
        if done.returncode == 2 and "reader stopped" not in done.stderr:  # SQLite's words
            assert "a file of the replica may be damaged" in done.stderr, done.stderr
        if "Litestream's reader stopped" in done.stderr:
            crashed = True
            assert done.returncode == 2, done.stderr
            assert f"the replica at file://{damaged} could not be read" in done.stderr
            break
    assert crashed, "no cut made the reader stop: the crash was not met"


@needs_litestream
@needs_vfs
def test_a_python_program_reads_two_replicas_without_a_special_start(tmp_path):
    """From Python, open_replica needs no environment set at the process's start: one
    program opens its own database first, then reads two replicas side by side. A folder
    replica whose path holds a space (the VFS would wait for ever) is refused at once."""
    dbs = {}
    for name, words in (("a", "quince medlar"), ("b", "osprey kestrel")):
        db = tmp_path / name / "m.db"
        db.parent.mkdir()
        with MemoryStore.open(db, embedder="none") as store:
            store.remember(name, words, namespace="notes")
        replicated_once(db, tmp_path / name / "replica")
        dbs[name] = db
    spaced = tmp_path / "with space"
    shutil.copytree(tmp_path / "a" / "replica", spaced)
    script = f"""
import json, sys
from personal_memory.memory import MemoryStore
from personal_memory.errors import PersonalMemoryError
own = MemoryStore.open({str(dbs["a"])!r}, read_only=True, embedder="none")  # before the VFS
out = {{"own": [r.memory_id for r in own.search("quince", namespace="notes")]}}
for name in "ab":
    with MemoryStore.open_replica({str(tmp_path)!r} + "/" + name + "/replica",
                                  embedder="none") as reader:
        out[name] = [r.memory_id for r in reader.search("quince osprey", namespace="notes")]
try:
    MemoryStore.open_replica({str(spaced)!r}, embedder="none")
except PersonalMemoryError as exc:
    out["spaced"] = str(exc)
print(json.dumps(out))
"""
    plain = {k: v for k, v in user_env().items() if not k.startswith("LITESTREAM_")}
    done = subprocess.run([sys.executable, "-c", script], env={**plain, **env()},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["own"] == ["a"] and out["a"] == ["a"] and out["b"] == ["b"]
    assert "holds a space" in out["spaced"] and "\n" not in out["spaced"]


@needs_litestream
@needs_vfs
def test_a_bucket_that_disappears_and_comes_back(tmp_path, s3_server):
    """An S3 replica's bucket is deleted under an open reader and made again: the reader
    answers from what it has, with its honest position, and catches up once the bucket is
    back; replication says it is failing until it has written a fresh snapshot, which a
    new reader (refused in one line before it) then reads whole."""
    import boto3
    db = tmp_path / "m.db"
    store = MemoryStore.open(db, embedder="none")
    store.remember("a", "quince medlar", namespace="notes", known_at="2025-03-01T10:00:00Z")
    done = run_memory("--db", db, "replicate", "setup", s3_server, "--no-service", env=env())
    assert done.returncode == 0, done.stderr
    rep = Replicator(db)
    url = replicas.replica_url(s3_server)
    reader = None
    asked = dict(op="search", query="quince osprey lantern", namespace="notes")
    try:
        wait_for(lambda: caught_up(db), 30, what="the replica")
        reader = Reader(url)
        assert [r["memory_id"] for r in reader.ask(**asked)["results"]] == ["a"]
        endpoint = s3_server.split("endpoint=")[1].split("&")[0]
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        _delete_bucket(s3, "notes")
        store.remember("b", "osprey kestrel", namespace="notes", known_at="2025-03-01T11:00Z")
        gone = reader.ask(**asked)
        assert [r["memory_id"] for r in gone["results"]] == ["a"]
        assert gone["known_up_to"] == "2025-03-01T10:00:00Z"
        wait_for(lambda: "failing" in run_memory("--db", db, "replicate", "status",
                                                 env=env()).stdout, 30, interval=0.5,
                 what="replication to say it is failing")
        s3.create_bucket(Bucket="notes")
        store.remember("c", "lantern ferry", namespace="notes", known_at="2025-03-01T12:00Z")
        wait_for(lambda: len(reader.ask(**asked)["results"]) == 3, 60, interval=0.5,
                 what="the open reader to catch up")
        wait_for(lambda: caught_up(db), 90, interval=1, what="a fresh snapshot")
        fresh = Reader(url)
        try:
            again = fresh.ask(**asked)
        finally:
            fresh.close()
        assert sorted(r["memory_id"] for r in again["results"]) == ["a", "b", "c"]
        assert again["known_up_to"] == "2025-03-01T12:00:00Z"
    finally:
        if reader is not None:
            reader.close()
        rep.stop()
        store.close()


def _delete_bucket(s3, bucket: str) -> None:
    """Empty and delete a bucket that Litestream may write to meanwhile: an object it
    uploads between the listing and the delete makes S3 refuse (BucketNotEmpty), so
    list and delete again until the bucket goes."""
    from botocore.exceptions import ClientError
    deadline = time.monotonic() + 30
    while True:
        for found in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
            s3.delete_object(Bucket=bucket, Key=found["Key"])
        try:
            s3.delete_bucket(Bucket=bucket)
            return
        except ClientError as refused:
            if (refused.response.get("Error", {}).get("Code") != "BucketNotEmpty"
                    or time.monotonic() > deadline):
                raise


def _without_position(text: str) -> str:
    """A tool's text without the replica's position (its last line, or a JSON key)."""
    if text.startswith("{"):
        found = json.loads(text)
        found.pop("known_up_to", None)
        return json.dumps(found, ensure_ascii=False, separators=(",", ":"))
    return text.rsplit("\nReplica: ", 1)[0]


@needs_litestream
@needs_vfs
def test_the_http_server_serves_a_replica_as_the_database(tmp_path):
    """`memory serve --http --replica URL`: the same answers as the database's own stdio
    server, and memory_status says it reads a replica, known up to its newest write."""
    import asyncio

    from http_harness import PASSPHRASE, remember_roles, start, stop, with_token
    from test_mcp_http import REQUESTS, answers, stdio
    db, replica = tmp_path / "m.db", tmp_path / "replica"
    with MemoryStore.open(db, embedder="none") as s:
        remember_roles(s)
    assert run_memory("--db", db, "http", "passphrase", input=PASSPHRASE + "\n"
                      ).returncode == 0
    replicated_once(db, replica)
    served = start(str(db), tmp_path, "--replica", str(replica))
    try:
        token = served.token("script")

        async def go():
            async with with_token(served.url, token) as c:
                status = (await c.call_tool("memory_status", {})).structured_content
                late = await c.call_tool("memory_search", {"query": "prefer"})
                early = await c.call_tool("memory_search", {"query": "prefer",
                                                            "as_of": "2025-02-01"})
            return (await answers(stdio(str(db))), await answers(with_token(served.url, token)),
                    status, late, early)
        local, remote, status, late, early = asyncio.run(go())
        # the same answers, but for the replica's position, which each answer carries
        # (search, history, changes; read's answer here is an error)
        for (tool, _), mine, theirs in zip(REQUESTS, local, remote):
            theirs = json.loads(theirs)
            if not theirs[0]:
                assert theirs[2].pop("known_up_to") == "2025-03-15T00:00:00Z", tool
                assert "Replica: " in theirs[1][-1] or "known_up_to" in theirs[1][-1], tool
                theirs[1] = [_without_position(t) for t in theirs[1]]
            assert json.dumps(theirs, sort_keys=True) == mine
        assert "it knows only up to 2025-03-15" in late.content[0].text
        assert "known up to 2025-03-15" in early.content[0].text

        # a purge carried to the replica reaches the running server
        done = run_memory("--db", db, "purge", "--id", "role", "--replicas", "--yes",
                          "--json", env=env(), timeout=180)
        assert done.returncode == 0 and json.loads(done.stdout)["replica"]["verified"]

        async def search() -> str:
            try:
                async with with_token(served.url, token) as c:
                    found = await c.call_tool("memory_search", {"query": "quantitative"})
            except Exception as exc:  # the server restarting: ask again
                return f"{type(exc).__name__}"
            return found.content[0].text
        seen = []

        def lost() -> bool:
            seen.append(asyncio.run(search()))
            return seen[-1].startswith("No results")
        try:
            wait_for(lost, 60, interval=0.5, what="the server to lose the purged text")
        except AssertionError:
            raise AssertionError(f"{seen[-3:]}\n{served.log_text()[-3000:]}") from None
        assert status["status"]["replication"]["state"] == "replica"
        assert status["status"]["replication"]["position"] == "2025-03-15T00:00:00Z"
    finally:
        stop(served)


@needs_litestream
@needs_vfs
def test_a_reader_machine_needs_no_database_folder_of_its_own(tmp_path):
    """`memory serve --http --replica URL` on a machine that never had a database: the
    access file's folder beside --db is made (0700, as `memory init` makes it), and the
    server serves; it said "serving" and then stopped on the missing folder."""
    import asyncio

    from http_harness import start, stop, with_token
    db, replica = tmp_path / "m.db", tmp_path / "replica"
    with MemoryStore.open(db, embedder="none") as s:
        s.remember("garden", "the quince tree flowers in April", namespace="notes")
    replicated_once(db, replica)
    reader = tmp_path / "elsewhere" / "data" / "memory.db"
    served = start(str(reader), tmp_path, "--replica", str(replica), env=env())
    try:
        assert (reader.parent.stat().st_mode & 0o777) == 0o700
        token = served.token("phone")

        async def ask():
            async with with_token(served.url, token) as c:
                return await c.call_tool("memory_search", {"query": "quince"})
        assert "garden" in asyncio.run(ask()).content[0].text
    finally:
        stop(served)
    assert not reader.exists()  # only the access file lives there


@needs_litestream
@needs_vfs
def test_a_purge_reaches_readers_of_the_replica(tmp_path):
    """A purge carried to the replica (--replicas): a reader started after it, and one
    that was open all along, no longer find the text."""
    db, replica = tmp_path / "m.db", tmp_path / "replica"
    with MemoryStore.open(db, embedder="none") as store:
        store.remember("code", "the door code is 4417-kestrel", namespace="notes",
                       known_at="2025-03-01T10:00:00Z")
        store.remember("garden", "the quince tree", namespace="notes",
                       known_at="2025-03-02T10:00:00Z")
    assert run_memory("--db", db, "replicate", "setup", replica, "--no-service",
                      env=env()).returncode == 0
    rep = Replicator(db)
    reader = None
    try:
        wait_for(lambda: caught_up(db), 30, what="the replica")
        reader = Reader(replicas.replica_url(str(replica)))
        assert reader.ask(op="search", query="kestrel", namespace="notes")["results"]
        done = run_memory("--db", db, "purge", "--id", "code", "--replicas", "--yes",
                          "--json", env=env(), timeout=180)
        report = json.loads(done.stdout)
        assert done.returncode == 0 and report["replica"]["verified"], done.stdout
        wait_for(lambda: caught_up(db), 30, what="replication resumed")
        fresh = run_memory("search", "kestrel", "--replica", replica, "--json", env=env())
        assert fresh.returncode == 0 and json.loads(fresh.stdout)["results"] == [], fresh.stderr

        def forgotten():
            try:
                return reader.ask(op="search", query="kestrel", namespace="notes")[
                    "results"] == []
            except AssertionError:  # the replica rewritten under it: an error, not text
                return False
        wait_for(forgotten, 30, interval=0.5, what="the open reader to lose the text")
        assert reader.ask(op="search", query="quince", namespace="notes")["results"]
    finally:
        if reader is not None:
            reader.proc.kill()
            reader.proc.wait()
        rep.stop()


@needs_litestream
@needs_vfs
def test_a_reader_left_behind_by_the_vfs_takes_a_new_connection(tmp_path):
    """litestream-vfs 0.5.17 stops following a replica, for good, when a compaction
    rewrites the level it reads (benchmarks/replica_lag.py shows it about a minute in). A
    reader whose position stays behind the replica's newest LTX file takes a new
    connection before its next read, and answers as before from it."""
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as store:
        store.remember("a", "quince medlar", namespace="notes")
    replicated_once(db, tmp_path / "replica")
    ahead = tmp_path / "ahead"  # how a folder replica's newest transaction is read
    (ahead / "ltx" / "0").mkdir(parents=True)
    (ahead / "ltx" / "0" / "00000000000000ff-00000000000000ff.ltx").write_bytes(b"")
    assert replicas.newest_txid(f"file://{ahead}") == 255
    script = f"""
import json
from personal_memory.memory import MemoryStore
from personal_memory.replication import replica
replica.STUCK_SECONDS = replica.FOLDER_CHECK_SECONDS = 0.0
store = MemoryStore.open_replica({str(tmp_path / "replica")!r}, embedder="none")
conns = {{store._db.conn}}  # every connection the reader held (kept alive: ids stay unique)
reconnect = store._db.reconnect
store._db.reconnect = lambda fresh: (conns.add(fresh.conn), reconnect(fresh))
replica.newest_txid = lambda url: 255  # the replica now looks ahead of the reader
answers = [[r.memory_id for r in store.search("quince", namespace="notes")] for _ in range(2)]
print(json.dumps({{"answers": answers, "reconnected": len(conns) > 1}}))
"""
    done = subprocess.run([sys.executable, "-c", script], env={**user_env(), **env()},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"answers": [["a"], ["a"]], "reconnected": True}
    assert "reconnecting" in done.stderr


def test_a_reader_reconnects_after_an_error_or_when_its_replica_starts_afresh(monkeypatch):
    """The follower's two rules beside "behind for a while": a read that failed (a page
    the VFS lost across a compaction) and a replica whose newest transaction went back (a
    purge or a fresh start numbers them from 1 again, leaving the reader ahead of it for
    ever) each make the reader take a new connection before its next read."""
    from types import SimpleNamespace
    follower = replicas.Follower("file:///nowhere", "python")
    why: list[str] = []
    monkeypatch.setattr(follower, "_reconnect", lambda db, reason: why.append(reason))
    listed = iter([40, 41, 3])
    monkeypatch.setattr(follower, "_replica_newest", lambda now: next(listed))
    reader = SimpleNamespace(suspect=False, scalar=lambda sql: "29")  # at transaction 41
    follower(reader)
    follower(reader)
    assert why == []  # level with the replica
    follower(reader)  # the replica's newest is now 3: it started afresh
    assert why == ["follows a replica that started afresh"]
    reader.suspect = True
    follower(reader)
    assert why[-1] == "met an error"


def test_a_failed_read_on_a_replica_marks_its_connection_for_a_new_one(tmp_path):
    from personal_memory.store import Database
    db = Database.open(str(tmp_path / "m.db"))
    try:
        with pytest.raises(PersonalMemoryError):
            with db.errors():
                db.execute("SELECT * FROM no_such_table")
        assert not db.suspect  # the database's own reader: nothing to follow
        db.follow = lambda d: None  # as a replica's reader has
        with pytest.raises(PersonalMemoryError):
            with db.errors():
                db.execute("SELECT * FROM no_such_table")
        assert db.suspect
        db.reconnect(Database.open(str(tmp_path / "m.db")))
        assert not db.suspect
    finally:
        db.close()


def test_a_replica_judges_the_daemon_by_its_heartbeat_not_a_local_pid(tmp_path):
    """Read on another machine, a replica's daemon pid names no process there: whether
    the daemon runs is its heartbeat's freshness alone."""
    from personal_memory.store import Database
    from personal_memory.sync.status import daemon_status
    from personal_memory.times import now_micros
    db = Database.open(str(tmp_path / "m.db"))
    try:
        gone = 2**22 + 12345  # above Linux's default pid_max: no process here has it
        db.set_daemon(pid=gone, started_at=now_micros(), heartbeat_at=now_micros(),
                      roots=["/notes"], state="watching")
        assert not daemon_status(db).daemon_running  # the database's own machine
        db.follow = lambda d: None  # as a replica's reader has
        assert daemon_status(db).daemon_running
    finally:
        db.close()


def test_a_stale_heartbeat_read_in_a_replica_blames_neither_side(tmp_path):
    """On the reading machine a stale heartbeat means the daemon stopped, or the replica
    stopped receiving: the status says so, where on the database's own machine it says
    the daemon is not running."""
    from dataclasses import replace
    from personal_memory.cli import output
    from personal_memory.records import Replication
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        found = store.status("notes")
    quiet = replace(found, daemon=replace(found.daemon, daemon_running=False,
                                          imported_folders=["/home/me/notes"]))
    here = output.status(quiet)
    assert "daemon        not running" in here
    assert "(imported; not watched: the daemon is not running)" in here
    there = output.status(replace(quiet, replication=Replication(
        state="replica", destination="file:///replica", position="2026-12-06T10:00:00Z")))
    assert "daemon        no recent heartbeat in the replica (the daemon stopped, or the " \
        "replica stopped receiving)" in there
    assert "not watched: no recent heartbeat in the replica" in there
    assert "is not running" not in there
