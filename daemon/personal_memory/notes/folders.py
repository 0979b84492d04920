"""Plain data about notes folders: what a folder is and a file's stat signature. No I/O
beyond path arithmetic."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..errors import InvalidArgument
from .markdown import normalise_path

DEFAULT_NAMESPACE = "notes"


def collection_name(value: object, field: str = "collection") -> str:
    """A collection's name as given (not taken from a folder's): the first part of every
    note ID of its folder (``COLLECTION/path.md``), so one holding ``/`` would let two
    folders' notes share IDs (collection ``a/b`` with ``x.md`` and ``a`` with ``b/x.md``),
    each sync revising and deleting the other's; nor blank, ``.`` or ``..``. NFC, as
    paths are stored."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{field}: must be a non-empty name")
    name = normalise_path(value)
    if "/" in name or "\x00" in name or name.strip() in (".", ".."):
        raise InvalidArgument(f"{field}: {value!r} is not a collection name (the first "
                              "part of its notes' IDs: no '/', not '.' or '..')")
    return name


@dataclass(frozen=True)
class Folder:
    root: Path
    collection: str
    namespace: str

    @classmethod
    def of(cls, root: str | os.PathLike, collection: str | None = None,
           namespace: str = DEFAULT_NAMESPACE) -> "Folder":
        path = Path(root).expanduser().absolute()
        if collection is not None:
            return cls(path, collection_name(collection), namespace)
        return cls(path, normalise_path(path.name) or "notes", namespace)


@dataclass(frozen=True)
class FileStat:
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, st: os.stat_result) -> "FileStat":
        return cls(st.st_size, _int64(st.st_mtime_ns), _int64(st.st_ctime_ns),
                   _int64(st.st_ino))


def _int64(value: int) -> int:
    """``value`` as the signed 64-bit integer SQLite stores, wrapped, not clamped, so two
    values stay two: a time after 2262 or before 1677 in nanoseconds, an inode of 2**63
    or more (overlayfs with xino, NFS) would otherwise stop the sync of every note."""
    return (value + 2**63) % 2**64 - 2**63


class FileState(NamedTuple):
    """What the last import of a file recorded (the stat cache)."""
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    file_hash: str
    chunks: int
    synced_at: int  # microseconds
    chunker: int = 1  # the note model version it was imported with (notes.CHUNKER_VERSION)

    @property
    def stat(self) -> FileStat:
        return FileStat(self.size, self.mtime_ns, self.ctime_ns, self.inode)
