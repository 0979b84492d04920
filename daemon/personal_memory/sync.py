"""Reconcile a folder of Markdown notes with the store. Used by ``memory sync`` and by the
daemon, so a one-shot sync and a watched folder behave identically.

Each file is read and validated in full before anything is written, so a bad file is
skipped whole, never half-imported. Files are written in batches, one transaction each.
Nothing is tombstoned when the folder looks lost (missing, unreadable, suddenly empty), and
a sync that would tombstone more than half of a collection stops unless allowed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import sys
from dataclasses import dataclass
from typing import Callable, Iterable

from . import markdown, writes
from .errors import (AlreadyHidden, MassDelete, NotFound, PersonalMemoryError, RootUnavailable,
                     SyncError)
from .folders import FileStat, FileState, Folder, SyncReport
from .store import Database
from .times import now_micros

log = logging.getLogger("personal_memory.sync")

# A file modified this close to its last import may have changed again within the
# filesystem's timestamp granularity (the "racy git" problem), so it is re-hashed.
RACY_WINDOW_NS = 2_000_000_000
BATCH_FILES = 1000


@dataclass(frozen=True)
class LoadedFile:
    """A file read and validated outside any transaction, ready to be written."""
    rel: str
    text: str | None  # None: the bytes are unchanged, only the stat cache is refreshed
    digest: str
    stat: FileStat
    read_at: int
    old_chunks: int


class _DryRun(Exception):
    """Raised to roll back a dry-run batch after counting."""


def _in_scope(relpath: str, scope: Iterable[str] | None) -> bool:
    if scope is None:
        return True
    return any(p == "" or relpath == p or relpath.startswith(p + "/") for p in scope)


def _hidden(relpath: str) -> bool:
    """True when the path is inside a hidden folder (or is one)."""
    parts = relpath.split("/")
    return any(not markdown.is_watched_dir(part) for part in parts[:-1]) or (
        parts[-1].startswith("."))


def _permission_hint(root: os.PathLike) -> str:
    if sys.platform == "darwin":
        return (" (macOS privacy protection: grant Full Disk Access, or Files and Folders "
                "access, to the program running personal-memory in System Settings > "
                "Privacy & Security)")
    return ""


class FolderSync:
    """Reconciles folders with one store. Not thread-safe: one per writer thread."""

    def __init__(self, db: Database, *, allow_mass_delete: bool = False,
                 known_at: str | None = None, batch_files: int = BATCH_FILES,
                 progress: Callable[[int, int], None] | None = None,
                 cancel: Callable[[], bool] | None = None):
        self.db = db
        self.allow_mass_delete = allow_mass_delete
        self.known_at = known_at
        self.batch_files = batch_files
        self.progress = progress
        # Checked between batches: a stop request finishes the current transaction only.
        self.cancel = cancel or (lambda: False)

    # -- scanning --------------------------------------------------------------------------

    @staticmethod
    def check_root(folder: Folder) -> None:
        root = folder.root
        try:
            st = os.stat(root)
        except FileNotFoundError:
            raise RootUnavailable(f"{root}: folder is missing (unmounted or moved?); "
                                  "nothing was tombstoned") from None
        except PermissionError:
            raise RootUnavailable(f"{root}: permission denied{_permission_hint(root)}; "
                                  "nothing was tombstoned") from None
        if not stat.S_ISDIR(st.st_mode):
            raise RootUnavailable(f"{root}: not a folder; nothing was tombstoned")
        try:
            with os.scandir(root):
                pass
        except PermissionError:
            raise RootUnavailable(f"{root}: cannot list the folder{_permission_hint(root)}; "
                                  "nothing was tombstoned") from None

    def scan(self, folder: Folder, scope: Iterable[str] | None = None,
             skipped: list[dict] | None = None) -> dict[str, tuple[str, FileStat]]:
        """relpath (NFC) -> (OS path, stat) of every note in scope."""
        found: dict[str, tuple[str, FileStat]] = {}
        skipped = [] if skipped is None else skipped
        root = str(folder.root)
        starts = [""] if scope is None or "" in scope else sorted(set(scope))
        for start in starts:
            covered = any(p != start and start.startswith(p + "/") for p in starts)
            if covered or (start and _hidden(start)):
                continue
            self._walk(root, start, found, skipped)
        return found

    def _walk(self, root: str, start: str, found: dict, skipped: list[dict]) -> None:
        top = os.path.join(root, start) if start else root
        try:
            st = os.lstat(top)
        except OSError:
            return
        if stat.S_ISREG(st.st_mode):
            name = os.path.basename(top)
            if markdown.is_note_name(name):
                self._add(found, skipped, os.path.relpath(top, root), top, st)
            return
        if not stat.S_ISDIR(st.st_mode):
            return
        stack = [top]
        while stack:
            current = stack.pop()
            try:
                entries = list(os.scandir(current))
            except OSError as exc:
                rel = os.path.relpath(current, root)
                skipped.append({"path": rel, "reason": f"cannot list folder: {exc.strerror}"})
                continue
            for entry in entries:
                try:
                    if entry.is_symlink():
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if markdown.is_watched_dir(entry.name):
                            stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) and markdown.is_note_name(entry.name):
                        self._add(found, skipped, os.path.relpath(entry.path, root), entry.path,
                                  entry.stat(follow_symlinks=False))
                except OSError:
                    continue  # vanished while listing: the next event or rescan sees it

    @staticmethod
    def _add(found: dict, skipped: list[dict], rel: str, path: str, st: os.stat_result) -> None:
        key = markdown.normalise_path(rel)
        if key in found:
            skipped.append({"path": rel, "reason": "another file has the same name after "
                            "Unicode normalisation"})
            return
        found[key] = (path, FileStat.of(st))

    # -- reconciling ----------------------------------------------------------------------------

    def sync(self, folders: list[Folder], *, dry_run: bool = False,
             full: bool = False, kind: str = "sync") -> SyncReport:
        """Reconcile whole folders. Raises RootUnavailable/MassDelete for a refused folder
        after the others are done."""
        return self._run(folders, {f: None for f in folders}, dry_run=dry_run, full=full,
                         kind=kind)

    def sync_paths(self, scopes: dict[Folder, set[str]], *, kind: str = "event") -> SyncReport:
        """Reconcile only the given relative paths (files or folders) of each folder."""
        return self._run(list(scopes), scopes, dry_run=False, full=False, kind=kind)

    def _run(self, folders, scopes, *, dry_run, full, kind) -> SyncReport:
        report = SyncReport(dry_run=dry_run)
        started = now_micros()
        run_id = None if dry_run else self.db.start_sync_run(kind, [str(f.root) for f in folders],
                                                             started)
        refusals: list[SyncError] = []
        status = "ok"
        try:
            for folder in folders:
                try:
                    report.merge(self._reconcile(folder, scopes[folder], dry_run=dry_run,
                                                 full=full))
                except SyncError as exc:
                    refusals.append(exc)
                    report.skipped.append({"path": str(folder.root), "reason": str(exc)})
        except BaseException:
            status = "failed"
            raise
        finally:
            if refusals and status == "ok":
                status = "refused"
            if run_id is not None:
                self.db.finish_sync_run(run_id, finished_at=now_micros(),
                                        files_scanned=report.files_scanned,
                                        added=report.chunks_added,
                                        changed=report.chunks_changed,
                                        tombstoned=report.chunks_tombstoned,
                                        errors=report.skipped, status=status)
        if refusals:
            raise refusals[0]
        return report

    def _reconcile(self, folder: Folder, scope: set[str] | None, *, dry_run: bool,
                   full: bool) -> SyncReport:
        report = SyncReport(dry_run=dry_run)
        self.check_root(folder)
        known_all = self.db.file_states(folder.namespace, folder.collection)
        found = self.scan(folder, scope, report.skipped)
        report.files_scanned = len(found)
        known = {p: s for p, s in known_all.items() if _in_scope(p, scope)}
        removed = sorted(set(known) - set(found))
        if scope is None and not found and known_all:
            raise RootUnavailable(f"{folder.root}: folder is suddenly empty but "
                                  f"{len(known_all)} notes were indexed (unmounted drive or "
                                  "sync hiccup?); nothing was tombstoned")
        if removed and len(removed) * 2 > len(known_all) and not self.allow_mass_delete:
            raise MassDelete(f"{folder.root}: this sync would tombstone {len(removed)} of "
                             f"{len(known_all)} notes in collection {folder.collection!r}; "
                             "rerun with --allow-mass-delete if that is intended")
        candidates = [p for p, (_, st) in sorted(found.items())
                      if full or self._changed(known.get(p), st)]
        total = len(candidates) + len(removed)
        size = self.batch_files
        steps = ([(candidates[i:i + size], []) for i in range(0, len(candidates), size)]
                 + [([], removed[i:i + size]) for i in range(0, len(removed), size)])
        done = 0
        for changed, gone in steps:
            if self.cancel():
                return report
            loaded = [self._load(folder, rel, *found[rel], known.get(rel), report, full)
                      for rel in changed]
            self._write(folder, [x for x in loaded if x is not None],
                        [(rel, known[rel]) for rel in gone], report, dry_run)
            done += len(changed) + len(gone)
            if self.progress:
                self.progress(done, total)
        return report

    @staticmethod
    def _changed(state: FileState | None, st: FileStat) -> bool:
        if state is None or state.stat != st:
            return True
        return st.mtime_ns >= state.synced_at * 1000 - RACY_WINDOW_NS  # racy: re-hash

    def _load(self, folder: Folder, rel: str, path: str, st: FileStat,
              state: FileState | None, report: SyncReport,
              full: bool = False) -> LoadedFile | None:
        """Read and validate one file completely, outside any transaction."""
        read_at = now_micros()
        try:
            with open(path, "rb") as fh:
                data = fh.read(markdown.MAX_FILE_BYTES + 1)
                after = os.fstat(fh.fileno())
        except FileNotFoundError:
            return None  # vanished mid-read: the deletion is handled by its own event or scan
        except OSError as exc:
            report.skipped.append({"path": rel, "reason": f"unreadable: {exc.strerror}"})
            log.warning("skipped %s/%s: unreadable: %s", folder.collection, rel, exc.strerror)
            return None
        digest = hashlib.sha256(data).hexdigest()
        new_stat = FileStat.of(after)
        old_chunks = state.chunks if state else 0
        if state is not None and state.file_hash == digest and not full:
            return LoadedFile(rel, None, digest, new_stat, read_at, old_chunks)
        try:
            text = markdown.decode(data)
        except markdown.BadNote as exc:
            report.skipped.append({"path": rel, "reason": str(exc)})
            log.warning("skipped %s/%s: %s", folder.collection, rel, exc)
            return None
        return LoadedFile(rel, text, digest, new_stat, read_at, old_chunks)

    def _write(self, folder: Folder, loaded: list[LoadedFile],
               removed: list[tuple[str, FileState]], report: SyncReport,
               dry_run: bool) -> None:
        if not loaded and not removed:
            return
        batch = SyncReport()
        try:
            with self.db.transaction():
                for f in loaded:
                    chunks = f.old_chunks
                    if f.text is not None:
                        one = SyncReport()
                        try:
                            with self.db.savepoint():  # a file that fails is skipped whole
                                chunks = self._import_file(folder, f, one)
                        except PersonalMemoryError as exc:
                            batch.skipped.append({"path": f.rel, "reason": str(exc)})
                            log.warning("skipped %s/%s: %s", folder.collection, f.rel, exc)
                            continue
                        one.files_imported = 1
                        batch.merge(one)
                    st = f.stat
                    self.db.put_file_state(folder.namespace, folder.collection, f.rel,
                                           FileState(st.size, st.mtime_ns, st.ctime_ns,
                                                     st.inode, f.digest, chunks, f.read_at))
                for rel, state in removed:
                    batch.chunks_tombstoned += self._tombstone(folder, rel, 1, state.chunks)
                    self.db.drop_file_state(folder.namespace, folder.collection, rel)
                    batch.files_removed += 1
                if dry_run:
                    raise _DryRun
        except _DryRun:
            pass
        batch.transactions = 0 if dry_run else 1
        report.merge(batch)

    def _import_file(self, folder: Folder, f: LoadedFile, report: SyncReport) -> int:
        rel, old_chunks = f.rel, f.old_chunks
        chunks = markdown.chunk(f.text)
        title = markdown.title_of(f.text, rel)
        source = f"{folder.collection}/{rel}"
        for c in chunks:
            rec = writes.remember(
                self.db, markdown.chunk_id(folder.collection, rel, c.number), c.text,
                namespace=folder.namespace, title=title, source=source,
                known_at=self.known_at,
                provenance={"collection": folder.collection, "path": rel,
                            "line_start": c.line_start, "line_end": c.line_end,
                            "file_hash": f.digest})
            if rec.created:
                if c.number <= old_chunks:
                    report.chunks_changed += 1
                else:
                    report.chunks_added += 1
        report.chunks_tombstoned += self._tombstone(folder, rel, len(chunks) + 1, old_chunks)
        return len(chunks)

    def _tombstone(self, folder: Folder, rel: str, first: int, last: int) -> int:
        count = 0
        for number in range(first, last + 1):
            try:
                rec = writes.forget(self.db, markdown.chunk_id(folder.collection, rel, number),
                                    namespace=folder.namespace, known_at=self.known_at)
            except (AlreadyHidden, NotFound):
                continue
            count += rec.created
        return count

