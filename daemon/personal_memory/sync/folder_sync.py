"""Reconcile a folder of Markdown notes with the store. Used by ``memory sync`` and by the
daemon, so a one-shot sync and a watched folder behave identically.

Each file is read and validated in full before anything is written, so a bad file is
skipped whole, never half-imported. Files are written in batches, one transaction each,
and every revision of a batch has the batch's ``known_at``. A move (a file or folder
renamed: the same inode, size and time, or the same content, at a new path) is written whole
in one batch: the new path's revisions, the old path's tombstones and the recorded move
share one instant. Nothing is tombstoned when the folder looks lost (missing, unreadable,
suddenly empty), and a sync that would tombstone more than half of a collection stops
unless allowed.
"""

from __future__ import annotations

import contextlib
import difflib
import itertools
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from ..embedding.runner import carry_vectors
from ..errors import (CollectionTaken, MassDelete, NoteUnparsable, PersonalMemoryError,
                      RootUnavailable, SyncError)
from ..notes import markdown, model as notes
from ..notes.folders import FileStat, FileState, Folder
from ..records import Problem, SkippedFile, SyncReport
from ..store import Database
from ..timeline import writes
from ..timeline.reading import read_note
from ..times import format_time, now_micros, parse_time, plausible_now
from .scan import (Found, Listings, LoadedFile, check_root, in_scope, load, occupied, printable,
                   same_dir, scan)
from .status import pid_alive

log = logging.getLogger("personal_memory.sync")

# A file modified this close to its last import may have changed again within the
# filesystem's timestamp granularity (the "racy git" problem), so it is re-hashed.
RACY_WINDOW_NS = 2_000_000_000
BATCH_FILES = 1000
# A file that kept a removed note's inode but not its size or time is that note moved and
# edited when at least this share of its words is the same, in order. (File systems give a
# freed inode again at once, and short notes share many characters by chance: "apples are
# red" and "melons are big" were 0.55 alike by characters, 0.25 by words.)
MOVE_SIMILARITY = 0.6
# ...of its first this many words: comparing words in order takes time that grows with the
# square of their number when one word repeats (20,000 took 40 s); 1,000 take 0.1 s.
MOVE_WORDS = 1000
_WORD = re.compile(r"\w+")


class _DryRun(Exception):
    """Raised to roll back a dry-run batch after counting."""


class _Cancelled(Exception):
    """Raised to roll back a batch cut short by a stop (the next sync does it again)."""


@dataclass
class _Step:
    """One batch: files to import, moves (new path, old path), files to tombstone."""
    changed: list[str] = field(default_factory=list)
    moves: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.changed) + len(self.moves) + len(self.removed)


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
                 cancel: Callable[[], bool] | None = None,
                 hold: dict[Folder, set[str]] | None = None, allow_emptied: bool = False):
        self.db = db
        self.allow_emptied = allow_emptied  # a folder found empty was emptied on purpose
        # Paths left as the store has them (the daemon's emptied files, still settling).
        self.hold = {f: {markdown.normalise_path(p) for p in s} for f, s in (hold or {}).items()}
        self.allow_mass_delete = allow_mass_delete
        # An asserted time (a historical import into a new database): the same for every
        # batch, after every stored revision (checked here, and again in each batch).
        explicit = writes.known_at_arg(db, known_at, "--known-at")
        self.known_at = format_time(explicit) if explicit is not None else None
        self.batch_files = batch_files
        self.progress = progress
        # Checked between batches: a stop request finishes the current transaction only.
        self.cancel = cancel or (lambda: False)
        self.cancelled = False

    @staticmethod
    def check_root(folder: Folder) -> None:
        check_root(folder)

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
        started = plausible_now()  # a wrong clock: not even the run's row is written
        run_id = None
        if not dry_run and self.known_at is None:  # (an asserted time confirms the clock)
            writes.refuse_a_leap(self.db, started)
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
                    report.skipped.append(SkippedFile(str(folder.root), str(exc)))
                if self.cancelled:
                    break
        except (KeyboardInterrupt, SystemExit):
            status = "interrupted"  # a second signal cut it short
            raise
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
            refusals[0].report = report  # the other folders' work stands
            raise refusals[0]
        return report

    # -- one folder ---------------------------------------------------------------------

    def _reconcile(self, folder: Folder, scope: set[str] | None, *, dry_run: bool,
                   full: bool) -> SyncReport:
        report = SyncReport(dry_run=dry_run)
        check_root(folder)
        self._claim_collection(folder, dry_run)
        known_all = self.db.file_states(folder.namespace, folder.collection)
        unlisted: list[str] = []
        listings = Listings()
        found = scan(folder, scope, report.skipped, unlisted, listings)
        for path in self.hold.get(folder, ()):  # neither read nor removed this time
            if found.pop(path, None) is not None or path in known_all:
                unlisted.append(path)
        report.files_scanned = len(found)
        root = os.path.realpath(folder.root)
        known = {p: s for p, s in known_all.items() if in_scope(p, scope)}
        # Notes in a folder that cannot be listed are kept: unreadable is not deleted.
        kept = set(unlisted)
        removed = sorted(p for p in set(known) - set(found) if not in_scope(p, kept))
        emptied = scope is None and not found and bool(known_all) and not unlisted
        if emptied and not self.allow_emptied:
            raise RootUnavailable(f"{folder.root}: folder is suddenly empty but "
                                  f"{len(known_all)} notes were indexed (unmounted drive or "
                                  "sync hiccup?); nothing was tombstoned; if you emptied it, "
                                  f"run 'memory sync {folder.root} --allow-mass-delete'")
        arrivals = sorted(p for p in found if p not in known_all)
        arriving = set(arrivals)
        if scope is not None and arrivals:  # a move whose old path lies outside the scope
            wanted = {(found[p].stat.inode, found[p].stat.size) for p in arrivals}
            removed = sorted(set(removed) | {
                p for p, s in known_all.items() if p not in known
                and (s.inode, s.size) in wanted and not occupied(root, p, listings)})
        moves, probable = _moves_by_inode(arrivals, found, removed, known_all)
        moved_from = set(moves.values())
        lost = [p for p in removed if p not in moved_from]
        maybe_moved = set(probable.values())  # not counted as losses until read

        def mass_delete(losses: int) -> MassDelete | None:
            if not losses or losses * 2 <= len(known_all) or self.allow_mass_delete \
                    or emptied:  # emptied on purpose (allow_emptied): every note goes
                return None
            return MassDelete(f"{folder.root}: this sync would tombstone {losses} of "
                              f"{len(known_all)} notes in collection {folder.collection!r}; "
                              f"new and changed notes were imported; run 'memory sync "
                              f"{folder.root} --allow-mass-delete' if the deletion is "
                              "intended")
        guard = mass_delete(sum(1 for p in lost if p not in maybe_moved))
        stale = sum(1 for p in found if p in known and known[p].chunker < notes.CHUNKER_VERSION)
        if stale and not dry_run:
            log.info("re-identifying %d notes of collection %s for note model version %d "
                     "(once; answers at earlier times do not change)", stale,
                     folder.collection, notes.CHUNKER_VERSION)
        changed = [p for p, f in sorted(found.items())
                   if p not in moves and (full or self._changed(known.get(p), f.stat))]
        # Removed files whose content may reappear at a new path (a copy and a delete,
        # across file systems): matched by hash when that path is read.
        by_hash = {known_all[p].file_hash: p for p in lost}
        pending_removals = set(lost)  # under the guard, only a move may take one
        if full and scope is None:  # live in the store, yet neither a file nor a stat entry
            skipped = {k.path for k in report.skipped}  # unreadable is not deleted
            pending_removals |= {p for p in self._orphans(folder, found, known_all, kept)
                                 if printable(p) not in skipped}
        size = self.batch_files
        pairs = sorted(moves.items())
        steps = ([_Step(moves=pairs[i:i + size]) for i in range(0, len(pairs), size)]
                 + [_Step(changed=changed[i:i + size]) for i in range(0, len(changed), size)])
        total = len(pairs) + len(changed) + (len(lost) if guard is None else 0)
        done = 0
        while True:
            if not steps and pending_removals and guard is None:
                # a file that only took a removed one's inode (the file system gives a
                # freed inode again at once) was no move: now it counts as a loss
                guard = mass_delete(len(pending_removals & set(lost)))
                if guard is not None:
                    break
                rest = sorted(pending_removals)
                pending_removals.clear()
                steps = [_Step(removed=rest[i:i + size]) for i in range(0, len(rest), size)]
            if not steps:
                break
            step = steps.pop(0)
            if self.cancel():
                self.cancelled = True
                return report
            loaded = self._load_all(folder, found, step.changed + [n for n, _ in step.moves],
                                    report)
            if self.cancel():  # asked while the batch's files were read
                self.cancelled = True
                return report
            for rel in list(step.changed):  # a move found once the new file is read
                if rel not in loaded or rel not in arriving:
                    continue
                old = by_hash.get(loaded[rel].digest)  # the same content at another path
                if old is None and probable.get(rel) in pending_removals and self._similar(
                        folder, probable[rel], loaded[rel].text):
                    old = probable[rel]  # the same inode, mostly the same text: edited too
                if old is not None and old in pending_removals:
                    pending_removals.discard(old)
                    by_hash.pop(loaded[rel].digest, None)
                    step.changed.remove(rel)
                    step.moves.append((rel, old))
            self._write(folder, root, step, loaded, report, dry_run, full)
            if self.cancelled:
                return report
            done += step.size
            if self.progress:
                self.progress(done, total)
        if guard is not None and not pending_removals:
            guard = None  # every note it held back turned out to have moved
        if not dry_run:
            self._record_problems(folder, scope, report, known_all, guard)
        if guard is not None:
            raise guard
        return report

    def _load_all(self, folder: Folder, found: dict[str, Found], rels: list[str],
                  report: SyncReport) -> dict[str, LoadedFile]:
        out = {}
        for rel in rels:
            if self.cancel():  # the caller stops before writing any of them
                break
            got = load(found[rel].path, rel, now_micros())
            if isinstance(got, SkippedFile):
                self._skip(folder, report, got)
            elif got is not None:
                out[rel] = got
        return out

    def _claim_collection(self, folder: Folder, dry_run: bool) -> None:
        """A collection name belongs to one folder; a folder that moved takes it along."""
        root = printable(str(folder.root))
        bound = self.db.collection_root(folder.namespace, folder.collection)
        if bound == root:
            return
        if bound is not None and os.path.isdir(bound) and not same_dir(bound, root):
            raise CollectionTaken(
                f"{root}: collection {folder.collection!r} (namespace {folder.namespace!r}) "
                f"already holds the notes of {bound}; give this folder its own name with "
                "--collection NAME (or a collection in config.toml)")
        if bound is None:
            self._refuse_twice(folder, root)
        if not dry_run:
            if bound is not None:
                log.info("collection %s moved from %s to %s", folder.collection, bound, root)
            self.db.bind_collection(folder.namespace, folder.collection, root)

    def _refuse_twice(self, folder: Folder, root: str) -> None:
        """A new collection whose folder is another collection's, or inside it, would hold
        a second copy of its notes (one the daemon may not keep current)."""
        real = os.path.realpath(folder.root)
        for name, other in self.db.collection_bindings(folder.namespace):
            if not os.path.isdir(other):
                continue
            inside = real.startswith(os.path.join(os.path.realpath(other), ""))
            if same_dir(other, root) or inside:
                where = "is" if not inside else f"is inside {other}, the folder of"
                raise CollectionTaken(
                    f"{root}: this folder {where} collection {name!r} (namespace "
                    f"{folder.namespace!r}); its notes are synced as {name!r} already "
                    f"(sync {other} with --collection {name} or as config.toml names it)")

    def _record_problems(self, folder: Folder, scope: set[str] | None, report: SyncReport,
                         known_all: dict[str, FileState], guard: MassDelete | None) -> None:
        """Keep what could not be imported visible in ``memory status`` until it is fixed;
        a note imported before and now unreadable is stale: its last good text stays."""
        ns, coll = folder.namespace, folder.collection
        # Kept under the path's NFC spelling, as syncs of a path name it: a twin's NFD
        # name would outlive the twin, never cleared by the path's next sync.
        problems = [Problem(ns, coll, markdown.normalise_path(s.path), s.reason, "",
                            s.path in known_all) for s in report.skipped]
        if guard is not None:
            problems.append(Problem(ns, coll, "", str(guard), "", False))
        # A deletion held back earlier (the collection's own problem) is over once the
        # notes are back: a sync of a few paths says so when most known notes exist again.
        held_back = guard is None and scope is not None and any(
            p.collection == coll and p.path == "" for p in self.db.problems(ns))
        if held_back:
            root = os.path.realpath(folder.root)
            listed = Listings()
            missing = sum(1 for p in known_all if not occupied(root, p, listed))
            held_back = missing * 2 > len(known_all)
        with self.db.transaction():
            self.db.replace_problems(ns, coll,
                                     None if scope is None else sorted(map(printable, scope)),
                                     problems, now_micros())
            if guard is None and scope is not None and not held_back:
                self.db.drop_problem(ns, coll, "")

    @staticmethod
    def _changed(state: FileState | None, st: FileStat) -> bool:
        if state is None or state.stat != st or state.chunker < notes.CHUNKER_VERSION:
            return True
        return st.mtime_ns >= state.synced_at * 1000 - RACY_WINDOW_NS  # racy: re-hash

    def _skip(self, folder: Folder, report: SyncReport, skipped: SkippedFile) -> None:
        report.skipped.append(skipped)  # the report names it: whoever syncs says it once
        log.debug("skipped %s/%s: %s", folder.collection, skipped.path, skipped.reason)

    # -- writing one batch --------------------------------------------------------------

    def _write(self, folder: Folder, root: str, step: _Step, loaded: dict[str, LoadedFile],
               report: SyncReport, dry_run: bool, full: bool) -> None:
        if not loaded and not step.removed:
            return
        batch = SyncReport()
        ns, coll = folder.namespace, folder.collection
        try:
            with self.db.transaction():
                # One time for the whole batch: a cutoff sees all of it or none of it.
                if self.known_at:
                    writes.known_at_arg(self.db, self.known_at, "--known-at")
                known_at = self.known_at or format_time(writes.next_known_at(self.db))
                before = self.db.max_revision_id()
                plain = [loaded[rel] for rel in step.changed if rel in loaded]
                listed = Listings()  # listed now, in the transaction: what is back
                for rel, old in step.moves:
                    if rel not in loaded:
                        continue
                    if occupied(root, old, listed):  # the old path is back: no move
                        plain.append(loaded[rel])
                        continue
                    self._move(folder, loaded[rel], old, known_at, batch)
                for f in plain:
                    if self.cancel():  # a stop waits for one note, not a whole batch
                        raise _Cancelled
                    self._update(folder, f, known_at, batch, full)
                for rel in step.removed:
                    if occupied(root, rel, listed):
                        continue  # it is back (or was never gone): not a deletion
                    self._remove(folder, rel, known_at, batch)
                if dry_run:
                    raise _DryRun
                carry_vectors(self.db, before)
        except _DryRun:
            pass
        except _Cancelled:
            self.cancelled = True
            return
        batch.transactions = 0 if dry_run else 1
        report.merge(batch)

    def _update(self, folder: Folder, f: LoadedFile, known_at: str, batch: SyncReport,
                full: bool) -> None:
        ns, coll = folder.namespace, folder.collection
        # Read again inside the transaction: another writer may have moved on.
        state = self.db.file_state(ns, coll, f.rel)
        chunks = state.chunks if state else 0
        older_model = state is not None and state.chunker < notes.CHUNKER_VERSION
        changed = full or state is None or state.file_hash != f.digest or older_model
        one = SyncReport()
        with self._one_file(folder, f.rel, batch) as ok:
            with self.db.savepoint():  # a file that fails is skipped whole
                if changed:
                    chunks = self._import_file(folder, f, one, known_at, legacy=older_model)
                self._put_state(folder, f, chunks)
        if ok and changed:
            one.files_imported = 1
            one.files_reidentified = int(older_model)
            batch.merge(one)

    def _move(self, folder: Folder, f: LoadedFile, old: str, known_at: str,
              batch: SyncReport) -> None:
        """The new path's note, the old path's tombstones and the move, at one instant."""
        ns, coll = folder.namespace, folder.collection
        one = SyncReport()
        with self._one_file(folder, f.rel, batch) as ok:
            with self.db.savepoint():
                chunks = self._import_file(folder, f, one, known_at, legacy=False)
                one.chunks_tombstoned += self._tombstone(folder, old, keep=(),
                                                         known_at=known_at)
                self.db.drop_file_state(ns, coll, old)
                self.db.record_move(ns, notes.note_id(coll, old), notes.note_id(coll, f.rel),
                                    parse_time(known_at))
                self._put_state(folder, f, chunks)
        if ok:
            one.files_imported = one.files_moved = 1
            batch.merge(one)

    @contextlib.contextmanager
    def _one_file(self, folder: Folder, rel: str, batch: SyncReport) -> Iterator[list]:
        """Around one file's writes (in their own savepoint): a file that fails, by a named
        problem or by a fault in this program, is skipped and named, and the batch goes
        on with the other files. Truthy while nothing failed."""
        ok = [True]
        try:
            yield ok
        except PersonalMemoryError as exc:
            ok.clear()
            self._skip(folder, batch, SkippedFile(printable(rel), str(exc)))
        except FILE_FAULTS as exc:
            ok.clear()
            log.exception("importing %s/%s failed", folder.collection, printable(rel))
            self._skip(folder, batch, SkippedFile(printable(rel), (
                f"could not be imported ({type(exc).__name__}: {exc}); skipped, its last "
                "imported text stays")))

    def _orphans(self, folder: Folder, found: dict, known_all: dict,
                 kept: set[str]) -> set[str]:
        """Notes the store holds live whose file is gone though no stat entry says so: a
        deletion an earlier version's clock kept from being recorded. A full sync removes
        them (not those in ``kept``: folders that could not be listed, held paths)."""
        prefix = notes.note_id(folder.collection, "")
        rels = (n[len(prefix):] for n in self.db.live_notes(folder.namespace, prefix))
        return {p for p in rels if p not in found and p not in known_all
                and not in_scope(p, kept)}

    def _remove(self, folder: Folder, rel: str, known_at: str, batch: SyncReport) -> None:
        """Tombstone a deleted note; when that cannot be done, its record is kept (and the
        file named) so that a later sync tries again."""
        try:
            with self.db.savepoint():
                tombstoned = self._tombstone(folder, rel, keep=(), known_at=known_at)
                self.db.drop_file_state(folder.namespace, folder.collection, rel)
        except PersonalMemoryError as exc:
            self._skip(folder, batch, SkippedFile(printable(rel), f"its deletion was not "
                                                  f"recorded: {exc}"))
            return
        batch.chunks_tombstoned += tombstoned
        batch.files_removed += 1

    def _similar(self, folder: Folder, old_rel: str, new_text: str) -> bool:
        """Whether a file that kept the inode of a removed note kept most of its words
        (as last imported): a move with an edit, not a new note in a reused inode."""
        try:
            old = read_note(self.db, folder.namespace, notes.note_id(folder.collection,
                                                                     old_rel), None,
                            now_micros()).text
        except PersonalMemoryError:
            return False
        words = [[m.group(0) for m in itertools.islice(_WORD.finditer(t.casefold()),
                                                        MOVE_WORDS)] for t in (old, new_text)]
        matcher = difflib.SequenceMatcher(None, *words, autojunk=False)
        return matcher.real_quick_ratio() >= MOVE_SIMILARITY and \
            matcher.quick_ratio() >= MOVE_SIMILARITY and matcher.ratio() >= MOVE_SIMILARITY

    def _put_state(self, folder: Folder, f: LoadedFile, chunks: int) -> None:
        st = f.stat
        self.db.put_file_state(folder.namespace, folder.collection, f.rel,
                               FileState(st.size, st.mtime_ns, st.ctime_ns, st.inode, f.digest,
                                         chunks, f.read_at, notes.CHUNKER_VERSION))

    def _import_file(self, folder: Folder, f: LoadedFile, report: SyncReport,
                     known_at: Any, legacy: bool) -> int:
        """Write one note: a revision for each section that changed, tombstones for the
        sections that are gone, then the note's record (last, so that whoever sees the
        record sees every section it lists)."""
        note = _parse(f.text, folder.collection, f.rel)
        if note.notice:
            report.warnings.append(SkippedFile(printable(f.rel), note.notice))
        if note.front_matter_error:
            report.warnings.append(SkippedFile(printable(f.rel),
                                               note.front_matter_error + "; imported as text"))
            log.debug("%s/%s: %s; imported as text", folder.collection, printable(f.rel),
                        note.front_matter_error)
        ns = folder.namespace
        before = _note_states(self.db, ns, note.note_id, legacy)
        provenance = {"collection": folder.collection, "path": f.rel, "file_hash": f.digest}
        for s in note.sections:
            done = writes.remember_note_part(
                self.db, s.memory_id, s.text, namespace=ns, title=note.title,
                note=note.note_id, known_at=known_at, provenance=provenance,
                heading_path=list(s.heading_path), metadata=s.metadata(),
                index_title=note.index_title(s.heading_path), index_content=s.index_text)
            if done.created:
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
        record goes first, so no cutoff sees a record whose sections are gone. A failed
        tombstone raises (the caller's savepoint undoes the file's writes)."""
        note = notes.note_id(folder.collection, rel)
        keep = set(keep)
        count = 0
        if states is None:
            states = _note_states(self.db, folder.namespace, note)
        record = notes.record_id(note)
        for memory_id in sorted(states, key=lambda m: (m != record, m)):
            if not states[memory_id] or memory_id in keep:
                continue
            done = writes.forget(self.db, memory_id, namespace=folder.namespace,
                                 known_at=known_at)
            count += done.created and memory_id != record
        return count


def _moves_by_inode(arrivals: list[str], found: dict[str, Found], removed: list[str],
                    known_all: dict[str, FileState],
                    ) -> tuple[dict[str, str], dict[str, str]]:
    """New path -> old path for each arrival with the inode, size and modification time
    of a removed file (a rename keeps all three), and for each arrival with only the inode
    of one (a rename and an edit, or an inode the file system gave again to a new file:
    confirmed by the text once read)."""
    by_identity: dict[tuple[int, int, int], str] = {}
    by_inode: dict[int, str] = {}
    for p in removed:
        k = known_all[p]
        by_identity.setdefault((k.inode, k.size, k.mtime_ns), p)
        by_inode.setdefault(k.inode, p)
    exact, probable = {}, {}
    for p in arrivals:
        st = found[p].stat
        old = by_identity.pop((st.inode, st.size, st.mtime_ns), None)
        if old is not None:
            exact[p] = old
    taken = set(exact.values())
    for p in arrivals:
        old = by_inode.get(found[p].stat.inode)
        if p not in exact and old is not None and old not in taken:
            probable[p] = old
            taken.add(old)
    return exact, probable


# Faults of this program's own code on one file's content (never the database's or the
# disk's: those stop the batch and are retried): that file is skipped and named.
FILE_FAULTS = (RecursionError, MemoryError, ValueError, TypeError, KeyError, IndexError,
               AttributeError, AssertionError, UnicodeError, OverflowError)


def _parse(text: str, collection: str, rel: str):
    """The note model of one file. The parsers are built and fuzzed to fail only by a named
    front-matter problem; should one still raise, that one note is skipped and named (its
    traceback logged) and the sync goes on."""
    try:
        return notes.parse_note(text, collection, rel)
    except FILE_FAULTS as exc:
        log.exception("the note parser failed on %s/%s", collection, printable(rel))
        raise NoteUnparsable(f"the note could not be parsed ({type(exc).__name__}: {exc}); "
                             "skipped, its last imported text stays") from exc
