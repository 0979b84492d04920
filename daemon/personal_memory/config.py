"""The configuration file: defaults, then parse, then validate, naming the bad field.

```toml
settle_ms = 300          # quiet time per path before a change is imported
rescan_interval = 600    # seconds between safety-net rescans; 0 turns them off

[[folders]]
path = "~/notes"
collection = "notes"     # default: the folder's name
namespace = "notes"      # default: notes
```
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError, InvalidArgument
from .notes.folders import DEFAULT_NAMESPACE, Folder
from .paths import ensure_private_dir

DEFAULT_SETTLE_MS = 300
DEFAULT_RESCAN_SECONDS = 600
MAX_RESCAN_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class Config:
    folders: list[Folder] = field(default_factory=list)
    settle_ms: int = DEFAULT_SETTLE_MS
    rescan_interval: float = DEFAULT_RESCAN_SECONDS
    source: str | None = None


def load(path: Path) -> Config:
    """The parsed file, or defaults when it does not exist."""
    if not path.exists():
        return Config()
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    return validate(raw, where)


def settle_ms(value: object, where: str) -> int:
    """The quiet time, from the file or a flag: whole milliseconds, at most a minute."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 60_000:
        raise ConfigError(f"{where}: {value!r} is not a whole number of milliseconds "
                          "from 0 to 60000")
    return value


def rescan_interval(value: object, where: str) -> float:
    """Seconds between rescans, from the file or a flag: 0 (off) to a week, never nan."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value <= MAX_RESCAN_SECONDS:  # nan compares false: refused too
        raise ConfigError(f"{where}: {value!r} is not a number of seconds from 0 (no "
                          f"rescans) to {MAX_RESCAN_SECONDS}")
    return float(value)


def validate(raw: dict, where: str = "config") -> Config:
    known = {"folders", "settle_ms", "rescan_interval"}
    for key in raw:
        if key not in known:
            raise ConfigError(f"{where}: unknown setting {key!r} "
                              f"(known: {', '.join(sorted(known))})")
    settle = settle_ms(raw.get("settle_ms", DEFAULT_SETTLE_MS), f"{where}: settle_ms")
    rescan = rescan_interval(raw.get("rescan_interval", DEFAULT_RESCAN_SECONDS),
                             f"{where}: rescan_interval")
    folders_raw = raw.get("folders", [])
    if not isinstance(folders_raw, list):
        raise ConfigError(f"{where}: folders: expected a list of [[folders]] tables")
    folders = []
    for i, item in enumerate(folders_raw):
        name = f"{where}: folders[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{name}: expected a table with a path")
        for key in item:
            if key not in ("path", "collection", "namespace"):
                raise ConfigError(f"{name}: unknown key {key!r} (known: path, collection, "
                                  "namespace)")
        path = item.get("path")
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(f"{name}.path: must be a folder path")
        value = item.get("namespace")
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{name}.namespace: {value!r} is not a valid name")
        try:
            folders.append(Folder.of(path, item.get("collection"),
                                     item.get("namespace") or DEFAULT_NAMESPACE))
        except InvalidArgument as exc:
            raise ConfigError(f"{name}.{exc}") from None
    collections = [(f.namespace, f.collection) for f in folders]
    for key in set(collections):
        if collections.count(key) > 1:
            raise ConfigError(f"{where}: folders: collection {key[1]!r} is used twice in "
                              f"namespace {key[0]!r}; give each folder its own collection")
    return Config(folders, settle, float(rescan), where)


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add_folders(path: Path, folders: list[Folder]) -> list[Folder]:
    """Append ``[[folders]]`` entries for folders the file does not list yet (creating the
    file if needed; existing text and comments are kept). Returns the folders added."""
    current = load(path)
    known = {f.root for f in current.folders}
    taken = {(f.namespace, f.collection) for f in current.folders}
    new = []
    for f in folders:
        if f.root in known:
            continue
        name, n = f.collection, 2
        while (f.namespace, name) in taken:  # two folders called "notes": notes, notes-2
            name, n = f"{f.collection}-{n}", n + 1
        taken.add((f.namespace, name))
        new.append(Folder(f.root, name, f.namespace))
    if not new:
        return []
    validate({"folders": [{"path": str(f.root), "collection": f.collection,
                           "namespace": f.namespace} for f in current.folders + new]},
             str(path))
    ensure_private_dir(path.parent)
    text = path.read_text(encoding="utf-8") if path.exists() else (
        "# personal-memory configuration (see docs/operations.md)\n")
    if text and not text.endswith("\n"):
        text += "\n"
    for f in new:
        text += (f"\n[[folders]]\npath = {_toml_string(str(f.root))}\n"
                 f"collection = {_toml_string(f.collection)}\n"
                 f"namespace = {_toml_string(f.namespace)}\n")
    path.write_text(text, encoding="utf-8")
    return new
