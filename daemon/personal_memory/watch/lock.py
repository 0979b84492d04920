"""One daemon per database file, whatever the path it is named by."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import LockedError
from ..paths import ensure_private_dir, lock_path, real_database


class DaemonLock:
    """An exclusive ``fcntl`` lock on a file beside the database's real path: a symlink
    resolves to the same lock. (A second name by hard link is refused when the database is
    opened: SQLite keeps its journal beside the name, so two names would corrupt it.)"""

    def __init__(self, db: Path):
        self.path = lock_path(real_database(db))
        self._fd: int | None = None

    def acquire(self) -> None:
        ensure_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            pid = f" (pid {holder})" if holder.isdigit() else ""
            raise LockedError(f"another 'memory watch'{pid} already uses this "
                              f"database (lock {self.path})") from None
        try:  # the pid only names the holder to a second daemon; a full disk must not stop us
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "DaemonLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
