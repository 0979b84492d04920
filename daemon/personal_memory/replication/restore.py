"""``restore``: a replica (or a ``memory backup`` file) written into a new file."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import InvalidArgument, ReplicationError
from ..paths import (RESTORE_SCRATCH, access_path, lock_path, real_database,
                     restore_scratch_folders)
from ..store import Database
from ..times import parse_time
from . import control, litestream

SQLITE_HEADER = b"SQLite format 3\x00"
SCRATCH_LOCK = "lock"  # held (flock) by the restore for as long as it runs
SCRATCH_NAME_BYTES = 200  # of the target's name in it: the folder's name stays under 255
LEFTOVER_AGE = 60.0  # seconds: a scratch folder without its lock yet may be starting

log = logging.getLogger("personal_memory.store")


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


def check_source(source: str) -> None:
    """Refuse a local source that is neither a regular file nor a folder: a FIFO would
    block the restore for ever, a device or socket is no backup."""
    try:
        st = os.stat(Path(source).expanduser())
    except OSError:
        return  # a URL, or missing: said by write_copy
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise InvalidArgument(f"{source}: not a regular file or a folder (a FIFO, device "
                              "or socket); restore reads a backup file, a replica folder "
                              "or a replica URL")


@contextmanager
def scratch_folder(target: Path) -> Iterator[Path]:
    """A private folder beside ``target`` (``.<name>.restoring-*``, the name shortened to
    fit), locked while the restore runs and removed after it; one left by a killed
    restore is removed by the next command on a database of that folder
    (:func:`remove_leftovers`)."""
    short = os.fsencode(target.name)[:SCRATCH_NAME_BYTES].decode("utf-8", "ignore")
    folder = Path(tempfile.mkdtemp(prefix=f".{short}{RESTORE_SCRATCH}", dir=target.parent))
    try:
        fd = os.open(folder / SCRATCH_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield folder
        finally:
            os.close(fd)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_leftovers(folder: str | Path) -> list[Path]:
    """Remove the scratch folders of restores that no longer run (their copy holds the
    history as it was, purged text included); the ones removed."""
    removed = []
    for scratch in restore_scratch_folders(folder):
        try:
            fd = os.open(scratch / SCRATCH_LOCK, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:  # killed before locking, or still starting
            try:
                if time.time() - scratch.stat().st_mtime < LEFTOVER_AGE:
                    continue
            except FileNotFoundError:
                continue
            fd = None
        except OSError as exc:
            log.warning("cannot check %s, left by a restore: %s", scratch,
                        exc.strerror or exc)
            continue
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a restore is running in it
            shutil.rmtree(scratch)
            removed.append(scratch)
        except OSError as exc:
            log.warning("cannot remove %s, left by a restore that was stopped: %s",
                        scratch, exc.strerror or exc)
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def write_copy(source: str, folder: Path, at: str | None, ssh_key: str | None = None
               ) -> tuple[Path, str | None]:
    """Write the copy (0600) into ``folder``, a private scratch folder beside the target:
    the caller checks it there (:meth:`MemoryStore.restore`) and moves only the file into
    place, so that a restore leaves the restored file or nothing. Returns the copy and the
    moment it holds (None: the newest, also for a time after the replica's last write)."""
    to = folder / "restored.db"
    src = Path(source).expanduser()
    if litestream.config_path(real_database(src)).exists():  # a database with a replica:
        at = _as_of(lambda when: litestream.restore_from_config(real_database(src), to, when),
                    to, at)  # its replica (the file itself may be the one being replaced)
    elif is_sqlite_file(src):
        if at:
            raise InvalidArgument("--at: a backup file holds one moment; --at needs a "
                                  "replica")
        db = Database.open(src, read_only=True, create=False)
        try:
            db.backup_to(str(to))
        finally:
            db.close()
    else:
        dest = litestream.Destination.parse(source, ssh_key)
        if dest.scheme == "file" and not src.exists():
            raise InvalidArgument(f"{source}: no such file or folder (give a replica folder, "
                                  "a replica URL, a database with a replica set up, or a "
                                  "backup file)")
        if dest.scheme == "file" and not src.is_dir():
            raise InvalidArgument(f"{source}: neither a replica folder, a replica URL, a "
                                  "database with a replica set up, nor a backup file")
        at = _as_of(lambda when: litestream.restore(dest, to, when), to, at)
    os.chmod(to, 0o600)
    return to, at


def _as_of(restore, to: Path, at: str | None) -> str | None:
    """``restore(at)``, and where Litestream holds no write at or before ``at`` ("timestamp
    does not exist": a time after its last write, or before its first snapshot), the
    newest state when nothing became known after ``at`` (the database's own transaction
    time says so); else a refusal that says what the replica holds."""
    try:
        restore(at)
        return at
    except ReplicationError as exc:
        if not at or "timestamp does not exist" not in str(exc):
            raise
    if to.exists():
        to.unlink()
    restore(None)
    db = Database.open(to, read_only=True, create=False)
    try:
        newest = db.last_known()
    finally:
        db.close()
    if newest is not None and newest > parse_time(at):
        to.unlink()
        raise InvalidArgument(
            f"--at: the replica holds no state as early as {at}: it starts at a later "
            "snapshot (its first, or the one a purge with --replicas or a replica lost and "
            "healed starts afresh); restore without --at for the newest, or give a later "
            "time")
    return None  # the newest: nothing became known after the time asked for


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
