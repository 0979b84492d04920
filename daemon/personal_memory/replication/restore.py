"""``restore``: a replica (or a ``memory backup`` file) written into a new file."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidArgument
from ..store import Database
from . import litestream

SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_file(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_HEADER
    except (IsADirectoryError, FileNotFoundError, PermissionError):
        return False


def write_copy(source: str, to: Path, at: str | None, ssh_key: str | None = None) -> Path:
    """Write the copy (0600); the caller checks it (:meth:`MemoryStore.restore`)."""
    to = to.expanduser().absolute()
    for path in (to, Path(f"{to}-wal"), Path(f"{to}-shm")):
        if path.exists():
            raise InvalidArgument(f"--to: {path} exists; restore writes a new file, never "
                                  "over one")
    if not to.parent.is_dir():
        raise InvalidArgument(f"--to: the folder {to.parent} does not exist")
    src = Path(source).expanduser()
    if is_sqlite_file(src):
        if at:
            raise InvalidArgument("--at: a backup file holds one moment; --at needs a "
                                  "replica")
        db = Database.open(src, read_only=True, create=False)
        try:
            db.backup_to(str(to))
        finally:
            db.close()
    elif litestream.config_path(src).exists():  # a database with a replica set up
        litestream.restore_from_config(src.absolute(), to, at)
    else:
        dest = litestream.Destination.parse(source, ssh_key)
        if dest.scheme == "file" and not src.is_dir():
            raise InvalidArgument(f"{source}: neither a replica folder, a replica URL, a "
                                  "database with a replica set up, nor a backup file")
        litestream.restore(dest, to, at)
    os.chmod(to, 0o600)
    return to
