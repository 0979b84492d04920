"""Default locations, from platformdirs (appname ``personal-memory``)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

APP_NAME = "personal-memory"


def data_dir() -> Path:
    from platformdirs import user_data_dir
    return Path(user_data_dir(APP_NAME, appauthor=False))


def config_dir() -> Path:
    from platformdirs import user_config_dir
    return Path(user_config_dir(APP_NAME, appauthor=False))


def cache_dir() -> Path:
    """Derived files that can always be made again (the word lists: search/lexicon.py)."""
    from platformdirs import user_cache_dir
    return Path(user_cache_dir(APP_NAME, appauthor=False))


def default_db() -> Path:
    return data_dir() / "memory.db"


def default_config() -> Path:
    return config_dir() / "config.toml"


def real_database(path: str | os.PathLike) -> Path:
    """The file a database path names, resolved once: SQLite keeps the WAL and SHM beside
    the real file, so every file this package keeps beside it (locks, replication config,
    Litestream's WAL copies) and every byte proof goes by this path, not a symlink's."""
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def free_beside(db_path: str | os.PathLike) -> int:
    """Bytes free on the disk that holds the database's real file (its WAL, its locks)."""
    return shutil.disk_usage(real_database(db_path).parent).free


def lock_path(db: Path) -> Path:
    return db.with_name(db.name + ".lock")


def access_path(db: Path) -> Path:
    """The HTTP server's tokens and passphrase hash, beside the database."""
    return db.with_name(db.name + ".access")


def ensure_private_dir(path: Path) -> None:
    """Create a directory (and its parents) readable only by the user (0700)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)


def memory_executable() -> Path:
    """The absolute path of the ``memory`` command that runs this package."""
    exe = shutil.which("memory") or os.path.join(os.path.dirname(sys.executable), "memory")
    return Path(exe).absolute()


def processes_with_open(paths: list[str]) -> list[str]:
    """Other processes that have any of ``paths`` open, as ``pid N (command)``, read from
    /proc (Linux; elsewhere none are named). A purge names them when one keeps the WAL
    from emptying."""
    wanted = {os.path.realpath(p) for p in paths}
    found = []
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if not any(os.readlink(f"/proc/{pid}/fd/{fd}") in wanted for fd in fds):
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        except OSError:  # gone, or another user's
            continue
        found.append(f"pid {pid} ({_command_name(argv)})")
    return found


def _command_name(argv: list[str]) -> str:
    """``memory serve``, ``litestream replicate``: the program and its first word."""
    if not argv:
        return "?"
    words = argv[:]
    if os.path.basename(words[0]).startswith("python") and words[1:3] == ["-m",
                                                                          "personal_memory"]:
        words = ["memory"] + words[3:]
    name, verb, rest = os.path.basename(words[0]), "", iter(words[1:])
    for word in rest:
        if word in ("--db", "--config", "-config"):
            next(rest, None)  # its value
        elif not word.startswith("-"):
            verb = word
            break
    return f"{name} {verb}".strip()


# In the name of a restore's scratch folder beside its target: .<target>.restoring-*
RESTORE_SCRATCH = ".restoring-"


def restore_scratch_folders(folder: str | os.PathLike) -> list[Path]:
    """The restores' scratch folders in ``folder``, running or left by a killed one."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(Path(folder) / n for n in names
                  if n.startswith(".") and RESTORE_SCRATCH in n
                  and os.path.isdir(Path(folder) / n) and not os.path.islink(Path(folder) / n))
