"""Default locations, from platformdirs (appname ``personal-memory``).

Precedence for the database: ``--db`` flag, then ``MEMORY_DB``, then the user data dir.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "personal-memory"
DEFAULT_NAMESPACE = "notes"


def data_dir() -> Path:
    from platformdirs import user_data_dir
    return Path(user_data_dir(APP_NAME, appauthor=False))


def config_dir() -> Path:
    from platformdirs import user_config_dir
    return Path(user_config_dir(APP_NAME, appauthor=False))


def default_db() -> Path:
    return data_dir() / "memory.db"


def config_file() -> Path:
    env = os.environ.get("MEMORY_CONFIG")
    return Path(env) if env else config_dir() / "config.toml"


def resolve_db(flag: str | None) -> Path:
    if flag:
        return Path(flag).expanduser()
    env = os.environ.get("MEMORY_DB")
    if env:
        return Path(env).expanduser()
    return default_db()


def lock_path(db: Path) -> Path:
    return db.with_name(db.name + ".lock")


def ensure_private_dir(path: Path) -> None:
    """Create a directory readable only by the user (0700)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
