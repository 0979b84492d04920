"""A running MCP server never serves what a purge erased, nor rows of a file that replaced
its database: its worker is replaced, and the process memory holds no copy of the text."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from support import run_memory, user_env, wait_for

SECRET = "zq-secret-91f3c07ab2"


ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {},
              "clientInfo": {"name": "t", "version": "1"}}


class Server:
    """`memory serve` as a client starts it, spoken to line by line."""

    def __init__(self, db, handshake=True):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "personal_memory", "--db", str(db), "serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=user_env())
        self.next_id = 1
        if handshake:
            self.call("initialize", INITIALIZE)
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def call(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        reply = json.loads(self.proc.stdout.readline())
        assert reply["id"] == self.next_id
        return reply

    def search(self, query):
        reply = self.call("tools/call", {"name": "memory_search",
                                         "arguments": {"query": query}})
        return reply["result"]["structuredContent"]

    def worker(self) -> int | None:
        path = f"/proc/{self.proc.pid}/task/{self.proc.pid}/children"
        try:
            kids = open(path).read().split()
        except OSError:
            return None
        return int(kids[0]) if kids else None

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def occurrences(pid: int, needle: bytes) -> int:
    """Copies of ``needle`` in the readable memory of a process of ours."""
    count = 0
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]",
                                                                           "[vsyscall]")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                count += mem.read(end - start).count(needle)
            except (OSError, ValueError, OverflowError):
                continue
    return count


@pytest.fixture
def vault_db(tmp_path):
    vault = tmp_path / "n"
    vault.mkdir()
    (vault / "keys.md").write_text(f"# Keys\n\nthe token is {SECRET} for billing\n")
    (vault / "other.md").write_text("# Other\n\nbilling runs monthly\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)])
    return vault, db


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_after_a_purge_the_server_memory_holds_no_copy_of_the_text(vault_db):
    vault, db = vault_db
    server = Server(db)
    try:
        first = server.worker()
        try:
            occurrences(first, b"x")
        except PermissionError:
            pytest.skip("this system does not let a process read its child's memory")
        found = server.search("billing token")
        assert SECRET in json.dumps(found)  # the worker has served (and cached) it
        assert occurrences(first, SECRET.encode()) > 0  # so the scan can see a copy
        (vault / "keys.md").write_text("# Keys\n\nthe token was rotated; billing\n")
        assert run_memory("--db", db, "sync", vault).returncode == 0
        p = run_memory("--db", db, "purge", "--matching", SECRET, "--yes")
        assert p.returncode == 0, p.stdout + p.stderr
        wait_for(lambda: server.worker() not in (None, first), timeout=30,
                 what="a fresh worker")
        after = server.search("billing token")  # answered by the fresh worker
        assert SECRET not in json.dumps(after) and after["count"] == 2
        time.sleep(0.2)
        assert occurrences(server.proc.pid, SECRET.encode()) == 0
        assert occurrences(server.worker(), SECRET.encode()) == 0
    finally:
        server.close()


def test_a_database_replaced_under_the_server_is_served_afresh(vault_db, tmp_path):
    vault, db = vault_db
    other = tmp_path / "other.db"
    with MemoryStore.open(other, embedder="none") as s:
        s.remember("swap", "a replacement kumquat", namespace="notes")
    server = Server(db)
    try:
        assert server.search("billing")["count"] == 2
        first = server.worker()
        os.replace(other, db)  # another file moved over the path
        for suffix in ("-wal", "-shm"):
            if os.path.exists(str(db) + suffix):
                os.unlink(str(db) + suffix)
        wait_for(lambda: server.worker() not in (None, first), timeout=30,
                 what="a fresh worker")
        found = server.search("kumquat")
        assert [r["memory_id"] for r in found["results"]] == ["swap"]
        assert server.search("billing")["count"] == 0
    finally:
        server.close()


def test_a_copy_over_the_same_inode_is_noticed(vault_db, tmp_path):
    vault, db = vault_db
    other = tmp_path / "other.db"
    with MemoryStore.open(other, embedder="none") as s:
        s.remember("swap", "a replacement kumquat", namespace="notes")
    server = Server(db)
    try:
        assert server.search("billing")["count"] == 2
        first = server.worker()
        inode = os.stat(db).st_ino
        with MemoryStore.open(db, embedder="none"):
            pass  # checkpoint: the WAL is emptied into the file
        shutil.copyfile(other, db)  # the same inode, another database's bytes
        assert os.stat(db).st_ino == inode
        wait_for(lambda: server.worker() not in (None, first), timeout=30,
                 what="a fresh worker")
        assert [r["memory_id"] for r in server.search("kumquat")["results"]] == [
            "swap"]
    finally:
        server.close()


def rotate(vault, db) -> None:
    """The secret edited out of its note and the edit synced (so it can be purged)."""
    (vault / "keys.md").write_text("# Keys\n\nthe token was rotated; billing\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0


def purge_for_a_fresh_worker(server: Server, db) -> None:
    first = server.worker()
    assert run_memory("--db", db, "purge", "--matching", SECRET, "--yes").returncode == 0
    wait_for(lambda: server.worker() not in (None, first), timeout=30, what="a fresh worker")


def test_a_client_that_fell_back_to_the_handshake_keeps_its_era_after_a_purge(vault_db):
    """The SDK's auto mode: its server/discover took too long, so it sent initialize,
    which the server (locked modern by the discover) refused; the client goes on with
    enveloped requests. The fresh worker after a purge must serve those."""
    vault, db = vault_db
    server = Server(db, handshake=False)
    try:
        assert "result" in server.call("server/discover", {"_meta": ENVELOPE})
        assert "error" in server.call("initialize", INITIALIZE)  # the era is modern
        call = {"name": "memory_search", "arguments": {"query": "billing"}, "_meta": ENVELOPE}
        assert server.call("tools/call", call)["result"]["structuredContent"]["count"] == 2
        rotate(vault, db)
        purge_for_a_fresh_worker(server, db)
        reply = server.call("tools/call", call)
        assert "result" in reply, reply
        assert SECRET not in json.dumps(reply)
    finally:
        server.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_announcements_resume_where_the_replaced_worker_stopped(vault_db):
    vault, db = vault_db
    server = Server(db)
    try:
        first = server.worker()
        with MemoryStore.open(db, embedder="none") as s:
            newest = s.appended_since(None).newest
        rotate(vault, db)
        time.sleep(1.5)  # announced by the first worker: the next one must start after it
        assert server.worker() == first
        purge_for_a_fresh_worker(server, db)

        def environment():
            try:
                return dict(kv.split("=", 1) for kv in open(f"/proc/{server.worker()}/environ")
                            .read().split("\0") if "=" in kv)
            except OSError:
                return {}
        # a child just forked shows its parent's environment until it has called exec
        env = wait_for(lambda: "PERSONAL_MEMORY_ANNOUNCE_AFTER" in environment()
                       and environment(), timeout=30, what="the fresh worker's exec")
        after = int(env["PERSONAL_MEMORY_ANNOUNCE_AFTER"])
        assert after > newest  # what the first worker announced, not the newest at start
    finally:
        server.close()


def test_a_database_it_cannot_open_for_a_moment_is_no_replaced_one(vault_db, monkeypatch):
    """Out of file descriptors (a flood of connections) the worker cannot open the file
    it watches: that is no purge or replacement, and no reason to drop every session;
    a file that is gone is one."""
    from personal_memory.errors import DatabaseError
    from personal_memory.mcp_server import tools as tools_module
    from personal_memory.settings import resolve
    vault, db = vault_db
    tools = tools_module.MemoryTools(resolve(environ={}, db=str(db), embedder="none"))
    tools._store()  # the fingerprint it serves
    exits, real = [], MemoryStore.open
    failing = [True]

    def open_(*args, **kwargs):
        if failing[0]:
            raise DatabaseError(f"database {db}: unable to open database file")
        return real(*args, **kwargs)
    monkeypatch.setattr(tools_module.MemoryStore, "open", open_)
    monkeypatch.setattr(tools_module.os, "_exit", exits.append)
    tools.exit_when_changed(every=0.05)
    time.sleep(0.5)
    assert exits == []
    failing[0] = False
    moved = db.with_name("moved.db")
    os.rename(db, moved)  # gone: a fresh worker says why
    wait_for(lambda: exits, what="the restart for a file that is gone")
    os.rename(moved, db)
