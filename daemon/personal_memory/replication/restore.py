"""``restore``: a replica (or a ``memory backup`` file) written into a new file."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidArgument
from ..paths import access_path, lock_path, real_database
from ..store import Database
from . import control, litestream

SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_file(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_HEADER
    except (IsADirectoryError, FileNotFoundError, PermissionError):
        return False


# SQLite's files beside a database, whatever it is called: a restore never writes to a
# name like these.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def own_companions() -> list[str]:
    """The endings of the files this package keeps beside a database, from the functions
    that name them."""
    base = Path("db")
    return [str(name(base))[len("db"):] for name in (
        lock_path, access_path, litestream.config_path, control.lock_path,
        control.pause_path)]


def check_target(to: Path) -> Path:
    """The absolute target of a restore, refused when it exists, when its folder does
    not, or when it is named like a companion file of a database (the live database would
    take it for its journal, and the next sync delete it)."""
    to = to.expanduser().absolute()
    if to.name.endswith(SQLITE_COMPANIONS):
        raise InvalidArgument(f"--to: {to.name} is named like SQLite's journal of a "
                              "database (-wal, -shm, -journal); choose another name")
    for suffix in own_companions():
        if to.name.endswith(suffix) and Path(str(to)[:-len(suffix)]).exists():
            raise InvalidArgument(f"--to: {to.name} is the name of a file kept beside the "
                                  f"database {str(to)[:-len(suffix)]}; choose another name")
    for path in (to, Path(f"{to}-wal"), Path(f"{to}-shm")):
        if os.path.lexists(path):
            raise InvalidArgument(f"--to: {path} exists; restore writes a new file, never "
                                  "over one")
    if not to.parent.is_dir():
        raise InvalidArgument(f"--to: the folder {to.parent} does not exist")
    return to


def write_copy(source: str, folder: Path, at: str | None, ssh_key: str | None = None) -> Path:
    """Write the copy (0600) into ``folder``, a private scratch folder beside the target:
    the caller checks it there (:meth:`MemoryStore.restore`) and moves only the file into
    place, so that a restore leaves the restored file or nothing."""
    to = folder / "restored.db"
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
    elif litestream.config_path(real_database(src)).exists():  # a database with a replica
        litestream.restore_from_config(real_database(src), to, at)
    else:
        dest = litestream.Destination.parse(source, ssh_key)
        if dest.scheme == "file" and not src.is_dir():
            raise InvalidArgument(f"{source}: neither a replica folder, a replica URL, a "
                                  "database with a replica set up, nor a backup file")
        litestream.restore(dest, to, at)
    os.chmod(to, 0o600)
    return to


def place(copy: Path, to: Path) -> None:
    """Move the checked copy to its name, never over a file that appeared meanwhile."""
    try:
        os.link(copy, to)
    except FileExistsError:
        raise InvalidArgument(f"--to: {to} exists; restore writes a new file, never over "
                              "one") from None
    except OSError:  # a file system without hard links
        if os.path.lexists(to):
            raise InvalidArgument(f"--to: {to} exists; restore writes a new file, never "
                                  "over one") from None
        os.rename(copy, to)
