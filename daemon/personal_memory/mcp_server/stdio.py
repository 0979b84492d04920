"""``memory serve`` on standard input and output: a small relay in front of the SDK's
server, which runs as a child process.

The relay does two things the SDK cannot:

- **Every request with an id gets an answer.** Each line from the client is checked
  first: a line that is not JSON, a batch, a request without a method, params that are
  not an object, a lone surrogate in a string, are answered here with a JSON-RPC error
  (-32700, -32600, -32602) and one readable line, instead of being dropped. When the
  client's input ends, the child's ends only once the requests under way are answered
  (the SDK would cancel them), a listen aside, for at most :data:`DRAIN_SECONDS`.
- **Nothing the server held survives a purge or a replaced file.** When the database is
  purged (its index generation moves) or replaced under it, the child exits with
  :data:`~personal_memory.limits.EXIT_RESTART` and the relay starts a fresh one, replays
  the session's ``initialize`` if the client speaks the handshake era (a client of the
  2026-07-28 era carries its envelope on every request, so nothing is replayed), and
  sends again every request the old child had not answered (the tools are read-only or
  idempotent; a pending listen is listening again). The fresh child announces changes
  from where the old one stopped, so none made during the restart is missed. The old process's memory, caches and
  pages with it, is gone; the relay itself keeps no answer: it passes the child's output
  through one buffer that it zeroes after every line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading

from ..limits import EXIT_OK, EXIT_RESTART

WORKER_ENV = "PERSONAL_MEMORY_SERVE_WORKER"  # set in the child: serve, do not relay
# The worker writes the newest revision it has announced changes up to, a line at a time,
# to this inherited file descriptor; a replacement worker starts announcing after it.
ANNOUNCED_FD_ENV = "PERSONAL_MEMORY_ANNOUNCED_FD"
ANNOUNCE_AFTER_ENV = "PERSONAL_MEMORY_ANNOUNCE_AFTER"
# The key whose presence in a request's params._meta marks the 2026-07-28 protocol era
# (the SDK's mcp_types.PROTOCOL_VERSION_META_KEY; not imported: the relay starts light).
MODERN_ENVELOPE_KEY = "io.modelcontextprotocol/protocolVersion"
_REPLAY_ID = "personal-memory-relay-initialize"
# When the client's input ends, the requests under way are answered first (a script that
# writes its requests and closes its end reads every answer), for at most this long; a
# listen, which never ends by itself, is not waited for.
DRAIN_SECONDS = 60.0
_LISTEN = "subscriptions/listen"
_RESPONSE = re.compile(rb'\{"jsonrpc":"2\.0","id":("(?:[^"\\]|\\.)*"|-?\d+),"(?:result|error)"')


def _error(id_, code: int, message: str) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": id_,
                        "error": {"code": code, "message": message}}) + "\n").encode()


def call_problem(method: str, params: dict) -> str | None:
    """What makes a tools/call's params no call, in one line (the SDK says only "Invalid
    request parameters"); None for a call, or another method. Both transports ask it."""
    if method != "tools/call":
        return None
    if not isinstance(params.get("name"), str):
        return 'tools/call needs "name", the name of a tool (a string)'
    if not isinstance(params.get("arguments", {}), dict):
        return '"arguments" must be an object: the tool\'s arguments by name'
    return None


def check_line(line: bytes) -> tuple[bytes | None, object | None]:
    """(error reply or None, the request's id or None) for one line from the client. A
    line with no reply and an id is a request to forward; with neither, a notification or
    a response to forward (or a blank line)."""
    if not line.strip():
        return None, None
    try:
        message = json.loads(line)
    except ValueError as exc:
        return _error(None, -32700, f"Parse error: the line is not JSON ({exc.msg} at "
                      f"column {exc.colno})"), None
    if isinstance(message, list):
        return _error(None, -32600, "Invalid Request: batches are not supported; send one "
                      "message per line"), None
    if not isinstance(message, dict):
        return _error(None, -32600, "Invalid Request: a message must be a JSON object"), None
    has_id = "id" in message
    id_ = message.get("id")
    if has_id and (isinstance(id_, bool) or not isinstance(id_, (str, int))):
        return _error(None, -32600, "Invalid Request: id must be a string or an integer"), None
    if message.get("jsonrpc") != "2.0":
        return _error(id_ if has_id else None, -32600,
                      'Invalid Request: "jsonrpc" must be "2.0"'), None
    method = message.get("method")
    if method is None:
        if "result" in message or "error" in message:
            return None, None  # the client answering a request of the server's
        return _error(id_ if has_id else None, -32600,
                      "Invalid Request: a request needs a method"), None
    if not isinstance(method, str):
        return _error(id_ if has_id else None, -32600,
                      "Invalid Request: method must be a string"), None
    params = message.get("params", {})
    if not isinstance(params, dict):
        return (_error(id_, -32602, "Invalid params: params must be an object")
                if has_id else b""), None
    if (problem := call_problem(method, params)) is not None:
        return (_error(id_, -32602, f"Invalid params: {problem}") if has_id else b""), None
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return (_error(id_, -32602, "Invalid params: a string is not valid Unicode (a lone "
                       "surrogate)") if has_id else b""), None
    return None, (id_ if has_id else None)


class _Output:
    """The child's output, line by line, to our stdout through one buffer that is zeroed
    after each line, so no answer stays in the relay's memory."""

    def __init__(self):
        self.buf = bytearray(1 << 16)
        self.size = 0

    def pump(self, fd: int, on_response) -> None:
        while True:
            if self.size == len(self.buf):  # a long line: grow, and wipe the old copy
                bigger = bytearray(len(self.buf) * 2)
                bigger[:self.size] = self.buf
                self.buf[:] = bytes(len(self.buf))
                self.buf = bigger
            n = os.readv(fd, [memoryview(self.buf)[self.size:]])
            if n == 0:
                self.buf[:self.size] = bytes(self.size)  # a partial last line is dropped
                self.size = 0
                return
            self.size += n
            start = 0
            while True:
                end = self.buf.find(b"\n", start, self.size)
                if end < 0:
                    break
                line = memoryview(self.buf)[start:end + 1]
                match = _RESPONSE.match(self.buf, start, end + 1)
                id_ = json.loads(match.group(1)) if match else None
                if on_response(id_):
                    _write_all(1, line)
                line.release()
                start = end + 1
            if start:
                rest = self.size - start
                self.buf[:rest] = self.buf[start:self.size]
                self.buf[rest:self.size] = bytes(self.size - rest)
                self.size = rest


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Relay:
    def __init__(self, command: list[str], env: dict[str, str]):
        self.command = command
        self.env = {**env, WORKER_ENV: "1"}
        self.lock = threading.Lock()
        self.pending: dict[object, bytes] = {}  # request id -> the request, until answered
        self.initialize: bytes | None = None
        self.initialized: bytes | None = None
        self.modern = False  # the client's newest request carried the 2026 envelope
        self.announced_read, self.announced_write = os.pipe()
        self.announced: bytes | None = None  # the newest revision announced so far
        self.child: subprocess.Popen | None = None
        self.replaying = False
        self.closed = False

    # -- the child --------------------------------------------------------------------------

    def _start(self) -> None:
        env = {**self.env, ANNOUNCED_FD_ENV: str(self.announced_write)}
        if self.announced is not None:
            env[ANNOUNCE_AFTER_ENV] = self.announced.decode()
        self.child = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, bufsize=0,
                                      pass_fds=(self.announced_write,))

    def _track_announced(self) -> None:
        """Keep the newest revision a child has announced up to (a thread)."""
        with os.fdopen(self.announced_read, "rb", buffering=0) as pipe:
            for line in pipe:
                if line.strip().isdigit():
                    self.announced = line.strip()

    def _send(self, data: bytes) -> None:
        try:
            _write_all(self.child.stdin.fileno(), data)
        except (BrokenPipeError, OSError):
            pass  # the child is gone; its requests are sent again to the next one

    def _replay(self) -> None:
        """A fresh child gets the session's initialize (its answer is not passed on), the
        initialized notification, and every unanswered request. (An initialize not yet
        answered is simply one of those requests.)"""
        message = json.loads(self.initialize)
        if message.get("id") in self.pending:
            self._after_replay()
            return
        message["id"] = _REPLAY_ID
        self.replaying = True
        self._send((json.dumps(message) + "\n").encode())

    def _after_replay(self) -> None:
        if self.replaying and self.initialized is not None:
            self._send(self.initialized)
        self.replaying = False
        for request in list(self.pending.values()):
            self._send(request)

    def _on_response(self, id_) -> bool:
        """Whether to pass a line of the child's on (the replayed initialize's is not)."""
        with self.lock:
            if id_ == _REPLAY_ID:
                self._after_replay()
                return False
            if id_ is not None:
                self.pending.pop(id_, None)
                if self.closed:
                    self._close_when_answered()
        return True

    def _close_when_answered(self) -> None:
        """Once the client's input has ended: end the child's when every request but a
        listen has its answer (under the lock)."""
        if all(_method(line)[0] == _LISTEN for line in self.pending.values()):
            self._close_child_input()

    def _close_child_input(self) -> None:
        try:
            self.child.stdin.close()
        except OSError:
            pass

    def _children(self) -> int:
        """Run children until one ends other than for a restart: its exit code. The first
        one is already started."""
        out = _Output()
        while True:
            out.pump(self.child.stdout.fileno(), self._on_response)
            code = self.child.wait()
            self.child.stdout.close()
            with self.lock:
                if code != EXIT_RESTART or self.closed:
                    return code
                self._start()
                if self.initialize is not None and not self.modern:
                    self._replay()
                else:  # a stateless session (no handshake): only the unanswered requests
                    for request in list(self.pending.values()):
                        self._send(request)

    # -- the client -------------------------------------------------------------------------

    def _client(self) -> None:
        for line in _lines(0):
            reply, id_ = check_line(line)
            if reply is not None:
                if reply:
                    _write_all(1, reply)
                continue
            method, modern = _method(line)
            with self.lock:
                if method == "initialize":
                    self.initialize, self.initialized, self.modern = bytes(line), None, False
                elif method == "notifications/initialized" and self.initialized is None:
                    self.initialized = bytes(line)
                elif modern:
                    self.modern = True
                if id_ is not None:
                    self.pending[id_] = bytes(line)
                if not self.replaying:
                    self._send(line)
        with self.lock:
            self.closed = True
            self._close_when_answered()
        late = threading.Timer(DRAIN_SECONDS, lambda: self._locked(self._close_child_input))
        late.daemon = True
        late.start()

    def _locked(self, action) -> None:
        with self.lock:
            action()

    def run(self) -> int:
        def stop(signum, frame):
            self.closed = True
            if self.child is not None and self.child.poll() is None:
                self.child.send_signal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        self._start()
        threading.Thread(target=self._client, name="client", daemon=True).start()
        threading.Thread(target=self._track_announced, name="announced", daemon=True).start()
        code = self._children()
        return EXIT_OK if code in (EXIT_OK, -signal.SIGTERM) else code


def _lines(fd: int):
    """The lines read from ``fd``, each with its newline (the last may lack one). Read raw,
    not through ``sys.stdin``: a daemon thread blocked inside its buffer holds the
    buffer's lock, and the interpreter aborts on it at exit ("Fatal Python error:
    _enter_buffered_busy") when the relay ends first, as it does when the server cannot
    start."""
    buf = bytearray()
    while chunk := os.read(fd, 1 << 16):
        start = len(buf)
        buf += chunk
        end = buf.find(b"\n", start)
        if end < 0:
            continue
        begin = 0
        while end >= 0:
            yield bytes(buf[begin:end + 1])
            begin = end + 1
            end = buf.find(b"\n", begin)
        del buf[:begin]
    if buf:
        yield bytes(buf)


def _method(line: bytes) -> tuple[str | None, bool]:
    """A checked line's method, and whether it carries the 2026-07-28 envelope."""
    try:
        message = json.loads(line)
        meta = (message.get("params") or {}).get("_meta")
        return message.get("method"), isinstance(meta, dict) and MODERN_ENVELOPE_KEY in meta
    except (ValueError, AttributeError):
        return None, False


def is_worker() -> bool:
    return os.environ.get(WORKER_ENV) == "1"
