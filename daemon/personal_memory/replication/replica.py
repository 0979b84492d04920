"""Reading a replica in place: Litestream's VFS (the litestream-vfs package) serves the
database's pages straight from the replica (a folder, S3, SFTP...), fetching them on
demand and polling for new LTX files, so a reader sees new writes without reopening.

Its rules, which this module follows: each connection names its replica in its URI
(``replica_url``), so any process can read any number of replicas; but the VFS reads its
log file from the environment the process started with (it logs to stdout otherwise),
and once it is loaded the process can open no other SQLite file (apsw fails on every new
connection that is not the VFS's). So the command line reads a replica in a process of
its own, started with :func:`environment`; a Python program opens its other databases
first."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

from ..errors import ReplicationError
from ..store import Database
from .litestream import SNAPSHOT_LEVEL, Destination, ltx_files_at, without_ca_bundle

URL_VARIABLE = "LITESTREAM_REPLICA_URL"
LOG_VARIABLE = "LITESTREAM_LOG_FILE"
WRITE_VARIABLE = "LITESTREAM_WRITE_ENABLED"
HOW_TO_GET = "pip install 'personal-memory[replication]' (the litestream-vfs package)"

log = logging.getLogger("personal_memory.replication")

_LOCK = threading.Lock()
_loader = None  # the connection the extension was loaded through, kept open


def replica_url(raw: str) -> str:
    """The URL Litestream reads: a folder becomes ``file://`` and its absolute path. An
    sftp replica is refused: the VFS takes no SSH key (litestream-vfs 0.5.17 reads no key
    setting), so it could not sign in the way `memory replicate` does. So is a folder
    whose path holds white space: the VFS waits for ever on it (0.5.17, written as it is
    or with %20)."""
    if raw.startswith("sftp:"):
        raise ReplicationError(
            "an sftp replica cannot be read in place (Litestream's VFS signs in with no SSH "
            "key): restore a copy with 'memory restore URL --ssh-key KEY --to FILE' and read "
            "that, or replicate to S3 or a folder the reader can reach")
    url = Destination.parse(raw).url
    if url.startswith("file:") and any(ch.isspace() for ch in url):
        raise ReplicationError(
            f"{url}: a folder replica whose path holds a space cannot be read in place "
            "(Litestream's VFS never opens it): restore a copy with 'memory restore' and "
            "read that, or replicate to a folder without spaces in its path")
    return url


def vfs_uri(url: str) -> str:
    """The SQLite URI of a connection through the VFS to the replica at ``url``: a name of
    its own per replica, read-only, writes to the replica turned off."""
    name = hashlib.sha256(url.encode()).hexdigest()[:16]
    return (f"file:replica-{name}.db?vfs=litestream&write_enabled=false"
            f"&replica_url={quote(url, safe='')}")


def environment(url: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a reader of ``url`` starts with. The VFS logs to stdout unless told
    otherwise, which would corrupt JSON output and the MCP stdio stream: its log goes to
    ``LITESTREAM_LOG_FILE`` when the user set one, else nowhere. AWS_CA_BUNDLE, which
    Litestream's S3 client cannot use, is given as SSL_CERT_FILE."""
    env = without_ca_bundle(dict(os.environ if base is None else base))
    env[URL_VARIABLE] = replica_url(url)
    env.setdefault(LOG_VARIABLE, os.devnull)
    env[WRITE_VARIABLE] = "false"  # a reader never writes to the replica
    return env


def started_with() -> dict[str, str]:
    """The environment this process started with (what the VFS reads), not the one
    Python has changed since."""
    try:
        with open("/proc/self/environ", "rb") as fh:
            pairs = fh.read().split(b"\0")
    except OSError:
        return dict(os.environ)
    return dict(p.decode(errors="replace").split("=", 1) for p in pairs if b"=" in p)


def ready(url: str) -> bool:
    """Whether this process started as the command line reads ``url``: the VFS's log away
    from stdout (which holds JSON or the MCP stream), writes off, and no CA bundle that
    Litestream's S3 client cannot load."""
    env = started_with()
    return (env.get(URL_VARIABLE) == url and env.get(LOG_VARIABLE) is not None
            and env.get(WRITE_VARIABLE, "false").lower() not in ("true", "1")
            and not (url.startswith("s3:") and env.get("AWS_CA_BUNDLE")))


def open_database(url: str, vector_backend: str = "auto") -> Database:
    """A read-only connection to the replica at ``url``, from any process (its log goes
    where the process's start said: see :func:`environment`)."""
    url = replica_url(url)
    if url.startswith("s3:") and started_with().get("AWS_CA_BUNDLE"):
        raise ReplicationError(
            "an s3 replica cannot be read in a process started with AWS_CA_BUNDLE set "
            "(Litestream's S3 client refuses to start): start it with "
            "personal_memory.replication.replica.environment(url), as the memory command "
            "does")
    check_replica(url)
    _load()
    try:
        db = Database.open_uri(vfs_uri(url), f"replica {url}", vector_backend=vector_backend)
        db.follow = Follower(url, vector_backend)
        return db
    except SystemError:  # apsw's answer to a connection the VFS cannot open
        raise ReplicationError(f"the replica {url} cannot be read") from None


def check_replica(url: str) -> None:
    """The replica holds a snapshot to read: the VFS would wait for one for ever."""
    try:
        found = ltx_files_at(url)
    except ReplicationError as exc:
        raise ReplicationError(f"the replica {url} cannot be read: {exc}") from None
    if not any(f.level == SNAPSHOT_LEVEL for f in found):
        raise ReplicationError(
            f"no Litestream 0.5 replica at {url} (no snapshot there: a wrong address, "
            "nothing replicated yet, or a 0.3 replica, which 'memory restore' reads)")


def _load() -> None:
    global _loader
    with _LOCK:
        if _loader is not None:
            return
        try:
            import litestream_vfs
        except ImportError:
            raise ReplicationError(f"reading a replica needs Litestream's VFS: "
                                   f"{HOW_TO_GET}") from None
        import apsw
        conn = apsw.Connection(":memory:")
        conn.enable_load_extension(True)
        try:
            conn.load_extension(litestream_vfs.loadable_path())
        except apsw.Error as exc:
            raise ReplicationError(f"Litestream's VFS could not be loaded: {exc}") from None
        finally:
            conn.enable_load_extension(False)
        _loader = conn


# The VFS polls its replica every second; a reader that stays behind the replica's newest
# LTX file for longer than this has stopped following it (litestream-vfs 0.5.17 does, for
# good, when a compaction rewrites the level it reads: a new connection sees everything).
STUCK_SECONDS = 3.0
FOLDER_CHECK_SECONDS = 1.0  # a folder's listing costs a few directory reads
REMOTE_CHECK_SECONDS = 15.0  # an S3 listing is a request that costs: in the background
_LISTER: ThreadPoolExecutor | None = None


def newest_txid(url: str) -> int | None:
    """The newest transaction any LTX file of the replica holds (None: none, or it
    cannot be listed now)."""
    if url.startswith("file:"):
        top = Path(Destination.parse(url).location) / "ltx"
        newest = None
        try:
            for level in top.iterdir():
                for name in os.listdir(level):
                    if name.endswith(".ltx") and "-" in name:
                        try:
                            txid = int(name[:-4].split("-")[1], 16)
                        except ValueError:
                            continue
                        newest = txid if newest is None else max(newest, txid)
        except OSError:
            return None
        return newest
    try:
        found = ltx_files_at(url)
    except ReplicationError:
        return None
    return max((f.max_txid for f in found), default=None)


class Follower:
    """Keeps a replica's reader following its replica: before a read, the reader's
    position (``litestream_txid()``) is compared with the replica's newest LTX file (a
    folder listed then, a remote replica in the background every 15 s); behind it for
    :data:`STUCK_SECONDS`, the reader takes a new connection (logged). So it does at once
    when the replica's newest transaction goes back (a purge, or a replica started afresh,
    numbers them from 1 again, and the reader would wait for ever ahead of it), and after
    a read that failed (the VFS can lose a page across a compaction: "database disk image
    is malformed"), so the next read is whole."""

    def __init__(self, url: str, vector_backend: str):
        self.url, self.vector_backend = url, vector_backend
        self.remote = not url.startswith("file:")
        self.checked = 0.0
        self.behind_since: float | None = None
        self.newest: int | None = None
        self.listing: Future | None = None
        self.highest: int | None = None  # the newest transaction any listing showed

    def _replica_newest(self, now: float) -> int | None:
        if not self.remote:
            if now - self.checked >= FOLDER_CHECK_SECONDS:
                self.checked, self.newest = now, newest_txid(self.url)
            return self.newest
        global _LISTER
        if self.listing is not None and self.listing.done():
            self.newest, self.listing = self.listing.result(), None
        if self.listing is None and now - self.checked >= REMOTE_CHECK_SECONDS:
            with _LOCK:
                if _LISTER is None:
                    _LISTER = ThreadPoolExecutor(1, thread_name_prefix="replica-lister")
            self.checked, self.listing = now, _LISTER.submit(newest_txid, self.url)
        return self.newest

    def _reconnect(self, db: Database, why: str) -> None:
        log.warning("the reader of %s %s: reconnecting", self.url, why)
        self.behind_since = None
        db.reconnect(Database.open_uri(vfs_uri(self.url), f"replica {self.url}",
                                       vector_backend=self.vector_backend))

    def __call__(self, db: Database) -> None:
        now = time.monotonic()
        if db.suspect:  # its last read failed: a VFS left with a page it cannot give
            self._reconnect(db, "met an error")
            return
        newest = self._replica_newest(now)
        if newest is None:
            return
        restarted = self.highest is not None and newest < self.highest
        self.highest = newest if self.highest is None or restarted else max(self.highest,
                                                                           newest)
        if restarted:  # a purge or a fresh start numbers its transactions from 1 again
            self._reconnect(db, "follows a replica that started afresh")
            return
        try:
            mine = int(db.scalar("SELECT litestream_txid()") or "0", 16)
        except (ValueError, TypeError):
            return
        if mine >= newest:
            self.behind_since = None
        elif self.behind_since is None:
            self.behind_since = now
        elif now - self.behind_since >= STUCK_SECONDS:
            self._reconnect(db, f"stayed at transaction {mine} while the replica holds "
                            f"{newest}")
