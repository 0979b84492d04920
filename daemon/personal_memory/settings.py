"""Every setting, resolved once: a command-line flag wins over the environment, which wins
over the configuration file, which wins over the default.

| setting | flag | environment | config.toml | default |
| --- | --- | --- | --- | --- |
| database | ``--db`` | ``MEMORY_DB`` | | ``memory.db`` in the user data dir |
| namespace | ``--namespace`` | ``MEMORY_NAMESPACE`` | | ``notes`` |
| writes over MCP | ``--enable-writes`` | ``MEMORY_ENABLE_WRITES`` | | off |
| vector backend | ``--vector-backend`` | ``MEMORY_VECTOR_BACKEND`` | | ``auto`` |
| semantic model | ``--embedder`` | ``MEMORY_EMBEDDER`` | | ``auto`` (e5 where installed) |
| config file | ``--config`` | ``MEMORY_CONFIG`` | | ``config.toml`` in the user config dir |
| settle time | ``--settle-ms`` | | ``settle_ms`` | 300 |
| rescan interval | ``--rescan-interval`` | | ``rescan_interval`` | 600 |
| folders | ``FOLDER...`` | | ``[[folders]]`` | none |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from . import config as config_file
from .errors import ConfigError
from .limits import EMBEDDER_CHOICES, REPLICA_MAX_LAG_SECONDS
from .notes.folders import DEFAULT_NAMESPACE, Folder
from .paths import default_config, default_db

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


@dataclass(frozen=True)
class Settings:
    db: Path
    namespace: str
    enable_writes: bool
    vector_backend: str
    config_path: Path
    embedder: str = "auto"
    replica_max_lag: float = REPLICA_MAX_LAG_SECONDS  # seconds; MEMORY_REPLICA_MAX_LAG
    replica: str | None = None  # a replica's URL to read instead of db; MEMORY_REPLICA

    def load_config(self) -> config_file.Config:
        """The configuration file (defaults when it does not exist)."""
        return config_file.load(self.config_path)

    def watch_options(self, *, settle_ms: int | None = None,
                      rescan_interval: float | None = None) -> tuple[int, float]:
        """(settle_ms, rescan_interval): the flags, else the config file, else defaults."""
        cfg = self.load_config()
        settle = cfg.settle_ms if settle_ms is None \
            else config_file.settle_ms(settle_ms, "--settle-ms")
        rescan = cfg.rescan_interval if rescan_interval is None \
            else config_file.rescan_interval(rescan_interval, "--rescan-interval")
        return settle, rescan

    def folders(self, paths: list[str], *, collection: str | None = None,
                namespace: str | None = None) -> list[Folder]:
        """The folders named on the command line, else those of the config file."""
        if paths:
            if collection and len(paths) > 1:
                raise ConfigError("--collection names one folder; give one FOLDER per "
                                  "command or use the config file")
            for p in paths:
                if not os.path.isdir(p):
                    raise ConfigError(f"{p}: not a folder")
            return [Folder.of(p, collection, namespace or self.namespace) for p in paths]
        folders = self.load_config().folders
        if not folders:
            raise ConfigError(f"no folders: give FOLDER, or add [[folders]] to "
                              f"{self.config_path}")
        return folders


def _bool(raw: str, name: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}: {raw!r} is not true or false")


def _seconds(raw: str | None, name: str) -> float:
    if raw is None or raw == "":
        return REPLICA_MAX_LAG_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e9:
        raise ConfigError(f"{name}: {raw!r} is not a number of seconds above 0")
    return value


def resolve(*, db: str | os.PathLike | None = None, namespace: str | None = None,
            enable_writes: bool | None = None, vector_backend: str | None = None,
            config: str | os.PathLike | None = None, embedder: str | None = None,
            replica: str | None = None,
            environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from flags (None: not given) and the environment (default: os.environ)."""
    env = os.environ if environ is None else environ
    for flag, value in (("--db", db), ("--namespace", namespace), ("--config", config),
                        ("--replica", replica)):
        if value is not None and not str(value).strip():
            # an empty flag is no flag left out: "" must not fall back to another database
            raise ConfigError(f"{flag}: empty; give a value or leave the option out")
    db_value = db or env.get("MEMORY_DB") or None
    config_value = config or env.get("MEMORY_CONFIG") or None
    if enable_writes is None:
        enable_writes = _bool(env.get("MEMORY_ENABLE_WRITES", ""), "MEMORY_ENABLE_WRITES")
    if embedder is None:
        embedder = env.get("MEMORY_EMBEDDER") or "auto"
        if embedder not in EMBEDDER_CHOICES:
            raise ConfigError(f"MEMORY_EMBEDDER: {embedder!r} is not one of "
                              f"{', '.join(EMBEDDER_CHOICES)}")
    return Settings(
        replica_max_lag=_seconds(env.get("MEMORY_REPLICA_MAX_LAG"), "MEMORY_REPLICA_MAX_LAG"),
        db=Path(db_value).expanduser() if db_value else default_db(),
        namespace=namespace or env.get("MEMORY_NAMESPACE") or DEFAULT_NAMESPACE,
        enable_writes=enable_writes,
        vector_backend=vector_backend or env.get("MEMORY_VECTOR_BACKEND") or "auto",
        config_path=Path(config_value).expanduser() if config_value else default_config(),
        embedder=embedder, replica=replica or env.get("MEMORY_REPLICA") or None)
