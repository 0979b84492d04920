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


def default_db() -> Path:
    return data_dir() / "memory.db"


def default_config() -> Path:
    return config_dir() / "config.toml"


def lock_path(db: Path) -> Path:
    return db.with_name(db.name + ".lock")


def ensure_private_dir(path: Path) -> None:
    """Create a directory (and its parents) readable only by the user (0700)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)


def memory_executable() -> Path:
    """The absolute path of the ``memory`` command that runs this package."""
    exe = shutil.which("memory") or os.path.join(os.path.dirname(sys.executable), "memory")
    return Path(exe).absolute()
