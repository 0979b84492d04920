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
from typing import Any, Callable, Iterable

from . import markdown, notes, writes
from .errors import (AlreadyHidden, CollectionTaken, MassDelete, NotFound, PersonalMemoryError,
                     RootUnavailable, SyncError)
from .folders import FileStat, FileState, Folder, SyncReport
from .status import pid_alive
from .store import Database
from .times import format_time, now_micros

log = logging.getLogger("personal_memory.sync")

# A file modified this close to its last import may have changed again within the
# filesystem's timestamp granularity (the "racy git" problem), so it is re-hashed.
RACY_WINDOW_NS = 2_000_000_000
BATCH_FILES = 1000


@dataclass(frozen=True)
class LoadedFile:
    """A file read and validated outside any transaction, ready to be written."""
    rel: str
    text: str
    digest: str
    stat: FileStat
    read_at: int


@dataclass(frozen=True)
class Found:
    """A note found by a scan: its OS path (which may be NFD) and stat signature."""
    path: str
    stat: FileStat
    os_rel: str


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


def printable(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 shown as \\xNN escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _permission_hint(root: os.PathLike) -> str:
    if sys.platform == "darwin":
        return (" (macOS privacy protection: grant Full Disk Access, or Files and Folders "
                "access, to the program running personal-memory in System Settings > "
                "Privacy & Security)")
    return ""


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _note_states(db: Database, namespace: str, note: str, legacy: bool = True,
                 ) -> dict[str, bool]:
    """Every memory of one note ever stored, True for the live ones: its sections and
    record, and with ``legacy`` the numbered chunks of the previous note model (``note#3``;
    a note named ``a.md#3.md`` shares that prefix but not those IDs). Only a file imported
    by that model can have them: a file that left the folder had all of them tombstoned."""
    states = db.legacy_chunk_states(namespace, note) if legacy else {}
    states.update(db.note_states(namespace, note))
    return states


class FolderSync:
    """Reconciles folders with one store. Not thread-safe: one per writer thread.

    Safe beside another writer of the same database (the daemon and a ``memory sync``):
    each batch re-reads, inside its own write transaction, the state it compares against
    (the stat cache and the live chunks of each file) and re-checks that a file it is
    about to tombstone is really gone."""

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
        self.cancelled = False

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
             skipped: list[dict] | None = None,
             unlisted: list[str] | None = None) -> dict[str, Found]:
        """relpath (NFC) -> :class:`Found` for every note in scope. Folders that could not
        be listed are added to ``unlisted`` (their notes must not look deleted)."""
        found: dict[str, Found] = {}
        skipped = [] if skipped is None else skipped
        unlisted = [] if unlisted is None else unlisted
        root = os.path.realpath(folder.root)  # a symlinked root is followed, once
        starts = [""] if scope is None or "" in scope else sorted(set(scope))
        for start in starts:
            covered = any(p != start and start.startswith(p + "/") for p in starts)
            if covered or (start and _hidden(start)):
                continue
            self._walk(root, start, found, skipped, unlisted)
        return found

    @staticmethod
    def os_path(root: str, rel: str) -> str | None:
        """The OS path of the note whose NFC relative path is ``rel``, or None. Each
        component is taken as given when it exists, else matched by its NFC form (a name
        stored NFD, as macOS writes them)."""
        current = root
        for part in rel.split("/") if rel else []:
            candidate = os.path.join(current, part)
            if not os.path.lexists(candidate):
                try:
                    names = os.listdir(current)
                except OSError:
                    return None
                matches = sorted(n for n in names if markdown.normalise_path(n) == part)
                if not matches:
                    return None
                candidate = os.path.join(current, matches[0])
            current = candidate
        return current

    def _walk(self, root: str, start: str, found: dict, skipped: list[dict],
              unlisted: list[str]) -> None:
        top = self.os_path(root, start) if start else root
        if top is None:
            return
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
                rel = markdown.normalise_path(os.path.relpath(current, root))
                rel = "" if rel == "." else rel
                unlisted.append(rel)
                skipped.append({"path": printable(rel or "."),
                                "reason": f"cannot list folder: {exc.strerror}; its notes "
                                "are kept as they were"})
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
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:  # undecodable bytes in the name, kept as surrogates
            skipped.append({"path": printable(rel), "reason": "file name is not valid "
                            "UTF-8; rename the file to import it"})
            return
        key = markdown.normalise_path(rel)
        other = found.get(key)
        if other is not None:
            # Twins (NFC and NFD spellings of one name): keep the NFC one, else the first
            # in code point order, so the choice never flips between scans.
            keep_new = (rel == key, other.os_rel > rel) > (other.os_rel == key, False)
            loser = other.os_rel if keep_new else rel
            skipped.append({"path": printable(loser), "reason": "another file has the same "
                            "name after Unicode normalisation; rename one of them"})
            if not keep_new:
                return
        found[key] = Found(path, FileStat.of(st), rel)

    # -- reconciling ----------------------------------------------------------------------------

    def sync(self, folders: list[Folder], *, dry_run: bool = False,
             full: bool = False, kind: str = "sync") -> SyncReport:
        """Reconcile whole folders. Raises RootUnavailable/MassDelete for a refused folder
        after the others are done."""
        return self._run(folders, {f: None for f in folders}, dry_run=dry_run, full=full,
                         kind=kind)

    def sync_paths(self, scopes: dict[Folder, set[str]], *, kind: str = "event") -> SyncReport:
        """Reconcile only the given relative paths (files or folders) of each folder."""
        scopes = {f: {markdown.normalise_path(p) for p in s} for f, s in scopes.items()}
        return self._run(list(scopes), scopes, dry_run=False, full=False, kind=kind)

    def close_stale_runs(self) -> None:
        """Runs still recorded as running by a process that is gone (kill -9, power cut)
        are recorded as interrupted."""
        for run_id, pid in self.db.running_sync_runs():
            if pid != os.getpid() and not pid_alive(pid):
                self.db.mark_sync_run(run_id, "interrupted", now_micros())

    def _run(self, folders, scopes, *, dry_run, full, kind) -> SyncReport:
        report = SyncReport(dry_run=dry_run)
        started = now_micros()
        run_id = None
        if not dry_run:
            self.close_stale_runs()
            run_id = self.db.start_sync_run(kind, [printable(str(f.root)) for f in folders],
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
                if self.cancelled:
                    break
        except BaseException:
            status = "failed"
            raise
        finally:
            if self.cancelled and status == "ok":
                status = "interrupted"
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
        self._claim_collection(folder, dry_run)
        known_all = self.db.file_states(folder.namespace, folder.collection)
        unlisted: list[str] = []
        found = self.scan(folder, scope, report.skipped, unlisted)
        report.files_scanned = len(found)
        known = {p: s for p, s in known_all.items() if _in_scope(p, scope)}
        # Notes in a folder that cannot be listed are kept: unreadable is not deleted.
        removed = sorted(p for p in set(known) - set(found) if not _in_scope(p, unlisted))
        if scope is None and not found and known_all and not unlisted:
            raise RootUnavailable(f"{folder.root}: folder is suddenly empty but "
                                  f"{len(known_all)} notes were indexed (unmounted drive or "
                                  "sync hiccup?); nothing was tombstoned")
        # A renamed file or folder keeps its inode and size: that is a move, not a loss.
        arrivals = {(found[p].stat.inode, found[p].stat.size)
                    for p in set(found) - set(known_all)}
        moved = {p for p in removed if (known[p].inode, known[p].size) in arrivals}
        lost = [p for p in removed if p not in moved]
        guard = None
        if lost and len(lost) * 2 > len(known_all) and not self.allow_mass_delete:
            guard = MassDelete(f"{folder.root}: this sync would tombstone {len(lost)} of "
                               f"{len(known_all)} notes in collection {folder.collection!r}; "
                               f"new and changed notes were imported; run 'memory sync "
                               f"{folder.root} --allow-mass-delete' if the deletion is "
                               "intended")
            removed = sorted(moved)
        stale = sum(1 for p in found if p in known
                    and known[p].chunker < notes.CHUNKER_VERSION)
        if stale and not dry_run:
            log.info("re-identifying %d notes of collection %s for note model version %d "
                     "(once; answers at earlier times do not change)", stale,
                     folder.collection, notes.CHUNKER_VERSION)
        candidates = [p for p, f in sorted(found.items())
                      if full or self._changed(known.get(p), f.stat)]
        total = len(candidates) + len(removed)
        size = self.batch_files
        steps = ([(candidates[i:i + size], []) for i in range(0, len(candidates), size)]
                 + [([], removed[i:i + size]) for i in range(0, len(removed), size)])
        done = 0
        root = os.path.realpath(folder.root)
        for changed, gone in steps:
            if self.cancel():
                self.cancelled = True
                return report
            loaded = [self._load(folder, rel, found[rel], report) for rel in changed]
            self._write(folder, root, [x for x in loaded if x is not None], gone, report,
                        dry_run, full)
            done += len(changed) + len(gone)
            if self.progress:
                self.progress(done, total)
        if not dry_run:
            self._record_problems(folder, scope, report, known_all, guard)
        if guard is not None:
            raise guard
        return report

    def _claim_collection(self, folder: Folder, dry_run: bool) -> None:
        """A collection name belongs to one folder; a folder that moved takes it along."""
        root = printable(str(folder.root))
        bound = self.db.collection_root(folder.namespace, folder.collection)
        if bound == root:
            return
        if bound is not None and os.path.isdir(bound) and not _same_dir(bound, root):
            raise CollectionTaken(
                f"{root}: collection {folder.collection!r} (namespace {folder.namespace!r}) "
                f"already holds the notes of {bound}; give this folder its own name with "
                "--collection NAME (or a collection in config.toml)")
        if not dry_run:
            if bound is not None:
                log.info("collection %s moved from %s to %s", folder.collection, bound, root)
            self.db.bind_collection(folder.namespace, folder.collection, root)

    def _record_problems(self, folder: Folder, scope: set[str] | None, report: SyncReport,
                         known_all: dict[str, FileState], guard: MassDelete | None) -> None:
        """Keep what could not be imported visible in ``memory status`` until it is fixed;
        a note imported before and now unreadable is stale: its last good text stays."""
        problems = [(s["path"], s["reason"], s["path"] in known_all) for s in report.skipped]
        if guard is not None:
            problems.append(("", str(guard), False))
        with self.db.transaction():
            self.db.replace_problems(folder.namespace, folder.collection,
                                     None if scope is None else sorted(map(printable, scope)),
                                     problems,
                                     now_micros())

    @staticmethod
    def _changed(state: FileState | None, st: FileStat) -> bool:
        if state is None or state.stat != st or state.chunker < notes.CHUNKER_VERSION:
            return True
        return st.mtime_ns >= state.synced_at * 1000 - RACY_WINDOW_NS  # racy: re-hash

    def _skip(self, folder: Folder, report: SyncReport, rel: str, reason: str) -> None:
        report.skipped.append({"path": printable(rel), "reason": reason})
        log.warning("skipped %s/%s: %s", folder.collection, printable(rel), reason)

    def _load(self, folder: Folder, rel: str, note: Found,
              report: SyncReport) -> LoadedFile | None:
        """Read and validate one file completely, outside any transaction. Opened without
        blocking (a FIFO renamed over a note must not hang the daemon) and checked to be a
        regular file once open."""
        read_at = now_micros()
        try:
            fd = os.open(note.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        except FileNotFoundError:
            return None  # vanished mid-read: the deletion is handled by its own event or scan
        except OSError as exc:
            self._skip(folder, report, rel, f"unreadable: {exc.strerror}")
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self._skip(folder, report, rel, "not a regular file (a FIFO, socket or "
                           "device took its name)")
                return None
            if st.st_size > markdown.MAX_FILE_BYTES:
                self._skip(folder, report, rel, f"too large ({st.st_size:,} bytes; the limit "
                           f"is {markdown.MAX_FILE_BYTES:,})")
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(markdown.MAX_FILE_BYTES + 1)
            after = os.fstat(fd)
        except OSError as exc:
            self._skip(folder, report, rel, f"unreadable: {exc.strerror}")
            return None
        finally:
            os.close(fd)
        try:
            text = markdown.decode(data)
        except markdown.BadNote as exc:
            self._skip(folder, report, rel, str(exc))
            return None
        return LoadedFile(rel, text, hashlib.sha256(data).hexdigest(), FileStat.of(after),
                          read_at)

    def _write(self, folder: Folder, root: str, loaded: list[LoadedFile], removed: list[str],
               report: SyncReport, dry_run: bool, full: bool) -> None:
        if not loaded and not removed:
            return
        batch = SyncReport()
        ns, coll = folder.namespace, folder.collection
        try:
            with self.db.transaction():
                # One time for the whole batch: a cutoff sees all of it or none of it.
                known_at = self.known_at or format_time(writes.next_known_at(self.db))
                for f in loaded:
                    # Read again inside the transaction: another writer may have moved on.
                    state = self.db.file_state(ns, coll, f.rel)
                    chunks = state.chunks if state else 0
                    older_model = state is not None and state.chunker < notes.CHUNKER_VERSION
                    if full or state is None or state.file_hash != f.digest or older_model:
                        one = SyncReport()
                        try:
                            with self.db.savepoint():  # a file that fails is skipped whole
                                chunks = self._import_file(folder, f, one, known_at,
                                                           legacy=older_model)
                        except PersonalMemoryError as exc:
                            self._skip(folder, batch, f.rel, str(exc))
                            continue
                        one.files_imported = 1
                        one.files_reidentified = int(older_model)
                        batch.merge(one)
                    st = f.stat
                    self.db.put_file_state(ns, coll, f.rel,
                                           FileState(st.size, st.mtime_ns, st.ctime_ns,
                                                     st.inode, f.digest, chunks, f.read_at,
                                                     notes.CHUNKER_VERSION))
                for rel in removed:
                    if self.os_path(root, rel) is not None:
                        continue  # it is back (or was never gone): not a deletion
                    batch.chunks_tombstoned += self._tombstone(folder, rel, keep=(),
                                                               known_at=known_at)
                    self.db.drop_file_state(ns, coll, rel)
                    batch.files_removed += 1
                if dry_run:
                    raise _DryRun
        except _DryRun:
            pass
        batch.transactions = 0 if dry_run else 1
        report.merge(batch)

    def _import_file(self, folder: Folder, f: LoadedFile, report: SyncReport,
                     known_at: Any, legacy: bool) -> int:
        """Write one note: a revision for each section that changed, tombstones for the
        sections that are gone, then the note's record (last, so that whoever sees the
        record sees every section it lists)."""
        note = notes.parse_note(f.text, folder.collection, f.rel)
        if note.front_matter_error:
            report.warnings.append({"path": printable(f.rel),
                                    "reason": note.front_matter_error + "; imported as text"})
            log.warning("%s/%s: %s; imported as text", folder.collection, printable(f.rel),
                        note.front_matter_error)
        ns = folder.namespace
        before = _note_states(self.db, ns, note.note_id, legacy)
        provenance = {"collection": folder.collection, "path": f.rel, "file_hash": f.digest}
        for s in note.sections:
            rec = writes.remember_note_part(
                self.db, s.memory_id, s.text, namespace=ns, title=note.title,
                note=note.note_id, known_at=known_at, provenance=provenance,
                heading_path=list(s.heading_path), metadata=s.metadata(),
                index_title=note.index_title(s.heading_path), index_content=s.index_text)
            if rec.created:
                if s.memory_id in before:  # a new revision of a section stored before
                    report.chunks_changed += 1
                else:
                    report.chunks_added += 1
        keep = {s.memory_id for s in note.sections} | {note.record_id}
        report.chunks_tombstoned += self._tombstone(folder, f.rel, keep=keep, states=before,
                                                    known_at=known_at)
        writes.remember_note_part(
            self.db, note.record_id, note.front_matter, namespace=ns, title=note.title,
            note=note.note_id, known_at=known_at, provenance=provenance, heading_path=None,
            metadata=note.metadata(), index_title=None, index_content=None)
        return len(note.sections)

    def _tombstone(self, folder: Folder, rel: str, keep: Iterable[str], known_at: Any,
                   states: dict[str, bool] | None = None) -> int:
        """Tombstone every live memory of note ``rel`` not in ``keep``: whatever exists,
        not what a counter says, so nothing is ever left behind. ``states`` are the states
        read earlier in the same transaction, if the caller has them. A deleted note's
        record goes first, so no cutoff sees a record whose sections are gone."""
        note = notes.note_id(folder.collection, rel)
        keep = set(keep)
        count = 0
        if states is None:
            states = _note_states(self.db, folder.namespace, note)
        record = notes.record_id(note)
        order = sorted(states, key=lambda m: (m != record, m))
        for memory_id in order:
            if not states[memory_id] or memory_id in keep:
                continue
            try:
                rec = writes.forget(self.db, memory_id, namespace=folder.namespace,
                                    known_at=known_at)
            except (AlreadyHidden, NotFound):
                continue
            count += rec.created and memory_id != record
        return count
