"""Start ``memory watch`` as a real process and observe it as a user would: through
systemd's notify socket, its log on stderr, and searches of the database."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from personal_memory import MemoryStore
from personal_memory.settings import resolve
from support import keyword_ids, user_env, wait_for


class Daemon:
    def __init__(self, db: Path, folder: Path, *args: str, env: dict | None = None):
        self.db, self.folder = db, folder
        self.args = list(args)
        self.env = env or {}
        self.proc: subprocess.Popen | None = None
        self.sock_dir = tempfile.mkdtemp(prefix="pm-notify-")
        self.sock_path = os.path.join(self.sock_dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.sock_path)
        self.messages: list[str] = []
        self.log_path = Path(self.sock_dir) / "stderr.log"

    def start(self, wait_ready=True) -> "Daemon":
        env = user_env({"NOTIFY_SOCKET": self.sock_path, "PYTHONUNBUFFERED": "1", **self.env})
        while self.recv(0.01) is not None:  # drop what an earlier run sent
            pass
        self.messages = []
        if not self.db.exists():  # the daemon never creates a database by itself
            # made as `memory init` makes it with these settings (the model chosen writes
            # nothing there), in this process rather than one more of its own
            chosen = resolve(environ=env, db=str(self.db))
            MemoryStore.open(chosen.db, vector_backend=chosen.vector_backend,
                             embedder="none").close()
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "personal_memory", "--db", str(self.db), "watch",
             str(self.folder), "--settle-ms", "150", *self.args],
            stdout=subprocess.DEVNULL, stderr=self._log, env=env)
        if wait_ready:  # READY comes once watching; STATUS=watching after the first sync
            self.wait_message("READY=1", timeout=60)
            self.wait_message("STATUS=watching", timeout=120)
        return self

    def recv(self, timeout: float) -> str | None:
        self.sock.settimeout(timeout)
        try:
            msg = self.sock.recv(65536).decode()
        except (socket.timeout, TimeoutError):
            return None
        self.messages.append(msg)
        return msg

    def wait_message(self, prefix: str, timeout=20.0) -> str:
        deadline = time.monotonic() + timeout
        for m in self.messages:
            if any(line.startswith(prefix) for line in m.splitlines()):
                return m
        while time.monotonic() < deadline:
            if self.proc.poll() is not None and prefix != "STOPPING=1":
                raise AssertionError(f"daemon exited {self.proc.returncode}: {self.log()}")
            m = self.recv(0.2)
            if m and any(line.startswith(prefix) for line in m.splitlines()):
                return m
        raise AssertionError(f"no {prefix} from the daemon; log:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, sig=signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)

    def stop(self) -> int | None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()
        return self.proc.returncode if self.proc else None

    def close(self) -> None:
        self.stop()
        self.sock.close()
        shutil.rmtree(self.sock_dir, ignore_errors=True)  # the socket and the log

    # -- observing the database -------------------------------------------------------------

    def store(self) -> MemoryStore:
        return MemoryStore.open(self.db, read_only=True)

    def search_ids(self, query: str, limit=1000) -> list[str]:
        """IDs of the notes that contain a query word (keyword hits, not vector-only ones:
        the hashed embedding can give a small similarity to unrelated text)."""
        with self.store() as s:
            return keyword_ids(s, query, limit=limit)

    def versions(self, paths, chunks=3) -> dict[str, set[str]]:
        """For each note path: the version tokens (vone/vtwo) of its visible sections, read
        whole; a note read with fewer or more than ``chunks`` sections is half-imported."""
        from personal_memory.errors import NotFound
        out = {}
        with self.store() as s:
            for path in paths:
                try:
                    view = s.read(f"notes/{path}", namespace="notes")
                except NotFound:
                    out[path] = set()
                    continue
                assert len(view.sections) == chunks, (path, view.sections)
                out[path] = {"vtwo" if "vtwo" in sec.content else "vone"
                             for sec in view.sections}
        return out

    def history(self, memory_id: str):
        with self.store() as s:
            try:
                return s.history(memory_id, namespace="notes")
            except Exception:
                return []

    def cookie(self, timeout=30.0) -> None:
        """A barrier: write a fresh note and wait until it is searchable."""
        token = "cookie" + uuid.uuid4().hex[:12]
        (self.folder / f"{token}.md").write_text(f"{token}\n")
        wait_for(lambda: self.search_ids(token), timeout, what=f"cookie {token}")
