"""Plain data about notes folders: what a folder is, a file's stat signature, a sync's
report. No I/O beyond path arithmetic."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from .markdown import normalise_path

DEFAULT_NAMESPACE = "notes"


@dataclass(frozen=True)
class Folder:
    root: Path
    collection: str
    namespace: str

    @classmethod
    def of(cls, root: str | os.PathLike, collection: str | None = None,
           namespace: str = DEFAULT_NAMESPACE) -> "Folder":
        path = Path(root).expanduser().absolute()
        return cls(path, collection or normalise_path(path.name) or "notes", namespace)


@dataclass(frozen=True)
class FileStat:
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, st: os.stat_result) -> "FileStat":
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


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


@dataclass
class SyncReport:
    files_scanned: int = 0
    files_imported: int = 0
    files_removed: int = 0
    chunks_added: int = 0
    chunks_changed: int = 0
    chunks_tombstoned: int = 0
    skipped: list[dict] = field(default_factory=list)
    warnings: list[dict] = field(default_factory=list)  # imported, but not all of it read
    files_reidentified: int = 0  # imported again for a new note model version
    transactions: int = 0
    dry_run: bool = False

    def merge(self, other: "SyncReport") -> None:
        for name in ("files_scanned", "files_imported", "files_removed", "chunks_added",
                     "chunks_changed", "chunks_tombstoned", "files_reidentified",
                     "transactions"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped.extend(other.skipped)
        self.warnings.extend(other.warnings)

    @property
    def changed(self) -> bool:
        return bool(self.chunks_added or self.chunks_changed or self.chunks_tombstoned)

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        text = (f"{self.files_scanned} files scanned, {self.files_imported} imported, "
                f"{self.files_removed} removed; chunks: {self.chunks_added} added, "
                f"{self.chunks_changed} changed, {self.chunks_tombstoned} tombstoned; "
                f"{len(self.skipped)} skipped")
        if self.warnings:
            text += f"; {len(self.warnings)} with warnings"
        if self.files_reidentified:
            text += f"; {self.files_reidentified} re-identified for the new note model"
        return ("dry run (nothing written): " + text) if self.dry_run else text
