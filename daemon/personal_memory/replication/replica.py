"""Reading a replica in place: Litestream's VFS (the litestream-vfs package) serves the
database's pages straight from the replica (a folder, S3, SFTP...), fetching them on
demand and polling for new LTX files, so a reader sees new writes without reopening.

Its rules, which this module enforces: the VFS reads the replica URL (and its log file)
from the environment the process started with, once; and once it is loaded, this process
can open no other SQLite file (apsw fails on every new connection that is not the VFS's).
So a reader is a process of its own, started with :func:`environment`."""

from __future__ import annotations

import os
import threading

from ..errors import ReplicationError
from ..store import Database
from .litestream import SNAPSHOT_LEVEL, Destination, ltx_files_at, without_ca_bundle

URL_VARIABLE = "LITESTREAM_REPLICA_URL"
LOG_VARIABLE = "LITESTREAM_LOG_FILE"
WRITE_VARIABLE = "LITESTREAM_WRITE_ENABLED"
VFS_URI = "file:replica.db?vfs=litestream"
HOW_TO_GET = "pip install 'personal-memory[replication]' (the litestream-vfs package)"

_LOCK = threading.Lock()
_loader = None  # the connection the extension was loaded through, kept open


def replica_url(raw: str) -> str:
    """The URL Litestream reads: a folder becomes ``file://`` and its absolute path. An
    sftp replica is refused: the VFS takes no SSH key (litestream-vfs 0.5.17 reads no key
    setting), so it could not sign in the way `memory replicate` does."""
    if raw.startswith("sftp:"):
        raise ReplicationError(
            "an sftp replica cannot be read in place (Litestream's VFS signs in with no SSH "
            "key): restore a copy with 'memory restore URL --ssh-key KEY --to FILE' and read "
            "that, or replicate to S3 or a folder the reader can reach")
    return Destination.parse(raw).url


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
    """Whether this process can read ``url`` through the VFS."""
    env = started_with()
    return (env.get(URL_VARIABLE) == url and env.get(LOG_VARIABLE) is not None
            and env.get(WRITE_VARIABLE, "false").lower() not in ("true", "1")
            and not (url.startswith("s3:") and env.get("AWS_CA_BUNDLE")))


def open_database(url: str, vector_backend: str = "auto") -> Database:
    """A read-only connection to the replica at ``url``."""
    url = replica_url(url)
    if not ready(url):
        raise ReplicationError(
            f"a replica is read in a process started with {URL_VARIABLE}={url} and "
            f"{LOG_VARIABLE} set (Litestream's VFS reads them once, at start): the memory "
            "command does this itself; from Python, start the process with "
            "personal_memory.replication.replica.environment(url)")
    check_replica(url)
    _load()
    try:
        return Database.open_uri(VFS_URI, f"replica {url}", vector_backend=vector_backend)
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
