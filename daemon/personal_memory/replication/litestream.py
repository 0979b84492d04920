"""Litestream, the program that streams SQLite's WAL to a replica, as this package uses
it: finding the binary, one config file per database, and reading its generations."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..errors import ConfigError, ReplicationError
from ..times import parse_time

HOW_TO_GET = ("install Litestream (https://litestream.io/install: your package manager, "
              "its releases, or 'npm pack @flydotio/litestream-linux-x64'), or name the "
              "binary in MEMORY_LITESTREAM")
SCHEMES = ("file", "sftp", "s3")


def binary() -> str:
    """The litestream executable: MEMORY_LITESTREAM, else the one on PATH."""
    named = os.environ.get("MEMORY_LITESTREAM")
    found = named if named and os.access(named, os.X_OK) else shutil.which("litestream")
    if not found:
        raise ReplicationError(f"litestream was not found; {HOW_TO_GET}")
    return found


def config_path(db: Path) -> Path:
    """Each database has its own Litestream config beside it."""
    return Path(str(db) + ".litestream.yml")


def shadow_dir(db: Path) -> Path:
    """Where Litestream keeps its own copy of the WAL (it holds old text too)."""
    return db.parent / f".{db.name}-litestream"


@dataclass(frozen=True)
class Destination:
    """Where a replica lives: a local folder (``file``) or a URL Litestream reads."""
    scheme: str
    location: str  # an absolute folder for file, the URL otherwise

    @classmethod
    def parse(cls, raw: str) -> "Destination":
        parsed = urlparse(raw)
        if parsed.scheme in ("", "file"):
            path = Path(parsed.path if parsed.scheme == "file" else raw).expanduser()
            return cls("file", str(path.absolute()))
        if parsed.scheme not in SCHEMES:
            raise ConfigError(f"replica: {parsed.scheme}:// is not one of a folder, "
                              "sftp://HOST/PATH or s3://BUCKET/PATH")
        if not parsed.netloc:
            raise ConfigError(f"replica: {raw!r} names no host or bucket")
        return cls(parsed.scheme, raw)

    @property
    def url(self) -> str:
        return f"file://{self.location}" if self.scheme == "file" else self.location

    @property
    def readable_here(self) -> bool:
        """A local folder this process can read back and clear itself."""
        return self.scheme == "file"


def write_config(db: Path, dest: Destination, sync_interval: str = "1s") -> Path:
    """The config ``litestream replicate`` runs with (0600: it may name a bucket)."""
    replica = (f"      - type: file\n        path: {_yaml(dest.location)}\n"
               if dest.scheme == "file" else f"      - url: {_yaml(dest.location)}\n")
    text = ("# Written by `memory replicate setup`; the replica of this database.\n"
            f"dbs:\n  - path: {_yaml(str(db))}\n    replicas:\n{replica}"
            f"        sync-interval: {sync_interval}\n")
    path = config_path(db)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return path


def read_destination(db: Path) -> Destination | None:
    """The replica the config names, or None when replication is not set up."""
    import yaml
    path = config_path(db)
    if not path.exists():
        return None
    try:
        doc = yaml.safe_load(path.read_text()) or {}
        replica = doc["dbs"][0]["replicas"][0]
    except (yaml.YAMLError, KeyError, IndexError, TypeError) as exc:
        raise ConfigError(f"{path}: not a replica config this package wrote ({exc})") \
            from None
    if replica.get("type") == "file":
        return Destination("file", replica["path"])
    return Destination.parse(replica.get("url", ""))


def _yaml(text: str) -> str:
    import json
    return json.dumps(text)  # a JSON string is a YAML string


@dataclass(frozen=True)
class Generation:
    """One line of ``litestream generations``: a replica's generation and its span."""
    generation: str
    lag_seconds: float
    start: int  # microseconds
    end: int


def run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([binary(), *args], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ReplicationError(f"litestream {args[0]} did not answer in {timeout:.0f} s") \
            from None


def generations(db: Path) -> list[Generation]:
    """The replica's generations, newest last (empty: nothing replicated yet)."""
    done = run(["generations", "-config", str(config_path(db)), str(db)])
    if done.returncode != 0:
        raise ReplicationError("litestream generations: " + _first_line(done))
    out = []
    for line in done.stdout.splitlines()[1:]:
        cols = line.split()
        if len(cols) == 5:
            out.append(Generation(cols[1], _seconds(cols[2]), parse_time(cols[3]),
                                  parse_time(cols[4])))
    return sorted(out, key=lambda g: g.end)


def snapshotted(db: Path) -> set[str]:
    """The replica's generations that hold at least one snapshot (a restore needs one)."""
    done = run(["snapshots", "-config", str(config_path(db)), str(db)])
    if done.returncode != 0:
        raise ReplicationError("litestream snapshots: " + _first_line(done))
    return {cols[1] for cols in (line.split() for line in done.stdout.splitlines()[1:])
            if len(cols) >= 2}


def _seconds(lag: str) -> float:
    """Go's duration text (``-676ms``, ``1m2.5s``, ``3h0m0s``) in seconds."""
    import re
    total = 0.0
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    for value, unit in re.findall(r"([\d.]+)(h|ms|m|s|us|µs|ns)", lag):
        total += float(value) * units[unit]
    return -total if lag.startswith("-") else total


def _first_line(done: subprocess.CompletedProcess) -> str:
    text = (done.stderr or done.stdout).strip()
    return text.splitlines()[-1] if text else f"exit code {done.returncode}"


def restore(source: str, to: Path, at: str | None = None) -> None:
    """``litestream restore`` of a replica URL into ``to`` (as of ``at``, RFC 3339)."""
    _restore(["-o", str(to), *(["-timestamp", at] if at else []), source])


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
        raise ReplicationError("litestream restore: " + _first_line(done))
