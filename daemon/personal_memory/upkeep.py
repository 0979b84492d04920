"""The upkeep half of :class:`~personal_memory.memory.MemoryStore`: state and health,
restore and backup, vectors, purge and folder syncs. A mixin over the store's one database
connection (``self._db``), so that the public API stays one class in two modules."""

from __future__ import annotations

import contextlib
import os
import unicodedata
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from . import arguments as args
from .embedding import models as embedders
from .embedding.runner import embed_pending, embedder_pid, eta_seconds
from .errors import DatabaseCorrupt, DiskFull, InvalidArgument, SchemaError
from .limits import CLOCK_TOLERANCE_US, MAX_QUERY_CHARS, REPLICA_MAX_LAG_SECONDS
from .notes.folders import Folder
from .records import (ClockAnomaly, ClockRepair, DaemonStatus, EmbeddingRun, Health, PurgeAudit,
                      PurgeReport, Replication, Restored, Stats, Status, SyncReport, SyncRun,
                      VectorStatus)
from .store import SCHEMA_VERSION, Database
from .sync.folder_sync import FolderSync
from .sync.status import daemon_status, pid_alive
from .timeline import writes
from .timeline.clock import clock_status, repair_clock
from .timeline.purge import purge as purge_revisions
from .times import format_time, now_micros


class Upkeep:
    """State, maintenance, erasure and syncs of a :class:`MemoryStore`."""

    # What it shares with MemoryStore, which sets it when it opens a database.
    _db: Database
    _embedder: embedders.Embedder | None
    _embedder_note: str
    _replica: Any

    def stats(self, namespace: str | None = None) -> Stats:
        with self._db.errors(), self._db.snapshot():
            counts = self._db.counts(namespace)
            namespaces = self._db.namespaces()
            vectors = self._vector_status(namespace)
        size = sum(os.path.getsize(self.path + suffix) for suffix in ("", "-wal")
                   if os.path.exists(self.path + suffix))
        return Stats(path=os.path.abspath(self.path), namespace=namespace, counts=counts,
                     namespaces=namespaces, bytes=size, vector_backend=self.vector_backend,
                     vectors=vectors)

    def status(self, namespace: str | None = None,
               replica_max_lag: float = REPLICA_MAX_LAG_SECONDS) -> Status:
        """Counts (of one namespace, or all), search and vectors, and the sync daemon's
        state: running or not, last sync, files indexed, problems. The time left for the
        vectors is estimated only while something embeds them: the daemon, or a process
        (a one-shot sync, a reembed) that committed vectors lately and still runs."""
        with self._db.errors(), self._db.snapshot():
            daemon = daemon_status(self._db, namespace)
            vectors = self._vector_status(namespace)
            embedder = embedder_pid(self._db)
            live = bool(embedder and pid_alive(embedder))
            vectors = replace(vectors, rate_current=live)
            if not daemon.daemon_running and not live:
                vectors = replace(vectors, eta_seconds=None)  # nothing embeds: no estimate
            found = Status(namespace=namespace, counts=self._db.counts(namespace),
                           vector_backend=self.vector_backend, vectors=vectors,
                           daemon=daemon, clock=clock_status(self._db),
                           purges_unfinished=[p for p in self._db.purges() if p.unfinished
                                              and namespace in (None, p.namespace)])
        return replace(found, replication=self.replication(replica_max_lag))

    def replication(self, max_lag: float = REPLICA_MAX_LAG_SECONDS) -> Replication:
        """How the Litestream replica stands (``absent`` when none is set up); lagging
        when more than ``max_lag`` seconds behind the last write."""
        from .replication.health import replication
        return (Replication("replica", destination=self._replica, position=self.known_up_to(),
                            max_lag_seconds=max_lag) if self._replica is not None
                else replication(Path(self._db.path), max_lag))

    @classmethod
    def restore(cls, source: str, to: str | os.PathLike, *, at: Any = None,
                ssh_key: str | None = None) -> Restored:
        """Restore a replica (a folder, an ``sftp://`` or ``s3://`` URL, or a database
        with a replica set up) or a ``memory backup`` file into the new file ``to``, as
        of ``at`` (replicas only), then check the copy: integrity, schema, revisions,
        the newest ``known_at``. ``ssh_key``: the key for an ``sftp://`` URL (default:
        the user's usual one). The copy is made and checked in a scratch folder beside
        ``to``: a restore leaves the checked file at ``to``, or nothing (``ok`` False)."""
        from .replication.restore import (check_source, check_target, place,
                                          remove_leftovers, scratch_folder, write_copy)
        when = args.optional_cutoff(at, "at")
        at_text = format_time(when) if when is not None else None
        target = check_target(Path(to))
        check_source(source)
        remove_leftovers(target.parent)
        with scratch_folder(target) as scratch:
            try:
                copy, at_text = write_copy(source, scratch, at_text, ssh_key)
                with cls.open(copy, read_only=True, create=False,
                              embedder="none") as store:
                    health = store.health()
            except (DatabaseCorrupt, SchemaError) as exc:  # said of the source
                return Restored(source=source, path=str(target), at=at_text,
                                integrity="failed", schema_version=0, revisions=0,
                                newest_known_at=None, ok=False, problem=str(exc).replace(
                                    str(scratch / "restored.db"), source))
            except DiskFull:
                raise DiskFull(f"restore: disk full writing the copy beside {target}; "
                               "nothing was written (free space and restore again)") from None
            # an older schema is fine (the next writer upgrades it); a newer one is not ours
            ok = (health.integrity == "ok"
                  and health.schema_version <= health.supported_schema_version)
            if ok:
                place(copy, target)
        return Restored(source=source, path=str(target), at=at_text,
                        integrity=health.integrity, schema_version=health.schema_version,
                        revisions=health.revisions, newest_known_at=health.newest_known_at,
                        ok=ok)

    def sync_status(self, namespace: str | None = None) -> DaemonStatus:
        """The sync daemon's part of :meth:`status` alone (no revision counts: cheap
        enough to ask after every sync)."""
        with self._db.errors(), self._db.snapshot():
            return daemon_status(self._db, namespace)

    def sync_runs(self, limit: int = 10) -> list[SyncRun]:
        """The most recent folder syncs, newest first: kind, folders, counts, skipped files
        and status (running, ok, refused, interrupted, failed)."""
        with self._db.errors(), self._db.snapshot():
            return self._db.last_sync_runs(limit)

    def health(self) -> Health:
        """Integrity check, revision count, schema version, vectors, and the clock:
        revisions known after now (beyond the tolerance), how far the newest revision is
        ahead of the clock, and what ``repair_clock`` would repair."""
        now = now_micros()
        with self._db.errors(), self._db.snapshot():
            clock = clock_status(self._db)
            return Health(integrity=self._db.integrity(),
                          revisions=self._db.counts(None).revisions,
                          schema_version=self._db.schema_version(),
                          supported_schema_version=SCHEMA_VERSION,
                          vectors=self._db.vector_counts(),
                          pending_vectors=self.pending_vectors(),
                          future_revisions=[ClockAnomaly(r.revision_id, r.namespace,
                                                         r.memory_id, r.known_at) for r in
                                            self._db.known_after(now + CLOCK_TOLERANCE_US)],
                          clock_behind_by_seconds=clock.behind_seconds,
                          newest_known_at=clock.newest_known_at, clock=clock,
                          index_current=self._db.index_is_current())

    def repair_clock(self) -> ClockRepair:
        """Make each note what its last sync recorded again where an earlier version
        stamped a write before a revision a clock running ahead had stamped later: one
        audited append after every stored revision (:mod:`personal_memory.timeline.clock`)."""
        with self._db.errors():
            return repair_clock(self._db)

    def checkpoint(self) -> None:
        """Write what the write-ahead log holds into the database file. Through an open
        connection this reaches the file it opened, wherever it is now: a database moved
        or replaced under a daemon keeps its writes, and no log is left beside a new file
        at its old name."""
        with self._db.errors():
            self._db.checkpoint()

    def backup(self, dest: str) -> None:
        """A consistent copy to a new file (0600), safe while the daemon writes."""
        with self._db.errors():
            self._db.backup_to(dest)

    # -- vectors ------------------------------------------------------------------------

    def pending_vectors(self, namespace: str | None = None) -> int:
        """Revisions a search can rank that have no vector from this store's model yet
        (0 when search is keyword-only: there is no model to wait for)."""
        if self._embedder is None:
            return 0
        with self._db.errors(), self._db.snapshot():
            return self._db.count_missing_vectors(self._embedder.key, namespace)

    def embedding_eta(self) -> float | None:
        """Seconds the revisions without a vector still take at the rate of the run in
        progress, by their tokens (None: none waiting, or nothing measured)."""
        if self._embedder is None:
            return None
        with self._db.errors(), self._db.snapshot():
            return eta_seconds(self._db, self._embedder,
                               self._db.count_missing_vectors(self._embedder.key))

    def _model(self) -> embedders.Embedder:
        if self._embedder is None:
            raise InvalidArgument("embedder: search is keyword-only here "
                                  f"({self._embedder_note}); there is nothing to embed with")
        return self._embedder

    def embed_pending(self, *, batch_size: int = 32, max_rows: int | None = None,
                      below: int | None = None,
                      progress: Callable[[int, int], None] | None = None,
                      cancel: Callable[[], bool] | None = None) -> EmbeddingRun:
        """Give vectors to revisions that lack them, newest first, one transaction per
        batch, reusing the vector of an identical passage. ``cancel`` is asked before each
        passage: stopping keeps what was embedded, and the next call resumes (``below``:
        pass the returned one back to continue from there)."""
        batch_size = args.whole_number(batch_size, "batch_size", 1)
        max_rows = None if max_rows is None else args.whole_number(max_rows, "max_rows", 0)
        model = self._model()
        with self._db.errors():
            return embed_pending(self._db, model, batch_size=batch_size, max_rows=max_rows,
                                 below=below, progress=progress, cancel=cancel)

    def reembed(self, *, everything: bool = False, batch_size: int = 32,
                progress: Callable[[int, int], None] | None = None,
                cancel: Callable[[], bool] | None = None) -> EmbeddingRun:
        """Rebuild vectors for this store's model: vectors of other models or versions are
        deleted (they cannot be compared with this model's queries), then every revision
        without a vector is embedded. The same model's vectors of whole sections (before
        pieces) are kept until the end, so a short section's is reused. ``everything``
        also drops this model's own vectors first. Revisions are never touched."""
        batch_size = args.whole_number(batch_size, "batch_size", 1)
        model = self._model()
        key, earlier = model.key, tuple(getattr(model, "earlier_keys", ()))
        with self._db.errors(), self._db.transaction():
            dropped = self._db.drop_vectors(keep=None if everything else (key, *earlier))
            if everything:
                self._db.bump_index_generation()  # readers reload their vectors
        run = self.embed_pending(batch_size=batch_size, progress=progress, cancel=cancel)
        if earlier and not run.interrupted:
            with self._db.errors(), self._db.transaction():
                dropped += self._db.drop_vectors(keep=(key,))
        return EmbeddingRun(**{**run.to_dict(), "dropped": dropped})

    def _vector_status(self, namespace: str | None) -> VectorStatus:
        rate = self._db.meta("embedding_rate")
        pending = self.pending_vectors(namespace)
        per_second = float(rate) if rate else None
        return VectorStatus(semantic=self._embedder_note, embedder=self.embedder,
                            pending_vectors=pending, embedding_per_second=per_second,
                            eta_seconds=eta_seconds(self._db, self._embedder, pending)
                            if self._embedder is not None else None,
                            embedding_threads=self._db.meta("embedding_threads"))

    # -- erasure ------------------------------------------------------------------------

    def purge(self, *, namespace: str, memory_id: str | None = None, note: str | None = None,
              matching: str | None = None, known_before: Any = None,
              reason: str | None = None, dry_run: bool = False,
              replicas: bool = False) -> PurgeReport:
        """Erase revisions for good: by memory ID, by note (``COLLECTION/path.md``: every
        section, and the path itself) or by text (every revision holding it anywhere: text,
        title, heading path, memory ID, note path, source, metadata), in one namespace,
        optionally only those known before a time. Each becomes a stub (its ID, times,
        "purged at T" and the reason); the text leaves the full-text index, the vectors,
        the bookkeeping tables, the WAL and the free pages, and the files are then scanned
        to prove it. The one operation that changes past answers. Raises
        :class:`~personal_memory.errors.PurgeRefused` while a note file still holds the
        text (the next sync would import it again). With a replica set up, ``replicas``
        carries the purge there (see :mod:`personal_memory.replication.forget`); without
        it the report warns that the replica still holds the text. Replication is paused
        for every purge. A purge that could not prove its erasure (a reader kept the WAL
        from emptying, the replica was not reached, the process was killed) stays in the
        audit as unfinished, and the next purge finishes it, whatever it selects:
        ``matching`` names a text to prove gone, and with nothing selected only the
        unfinished work is done (:meth:`purges` says what each still lacks)."""
        namespace = args.namespace_arg(namespace)
        if sum(x is not None for x in (memory_id, note, matching)) > 1:
            raise InvalidArgument("purge: choose one of memory_id, note, matching (or none, "
                                  "to finish unfinished purges only)")
        before = args.optional_time(known_before, "known_before")
        reason = args.text(reason, "reason", MAX_QUERY_CHARS, optional=True)
        if memory_id is not None:
            memory_id = args.memory_id_arg(memory_id)
            composed = unicodedata.normalize("NFC", memory_id)
            if composed != memory_id:  # a note's path is stored NFC: typed decomposed
                with self._db.errors(), self._db.snapshot():
                    if not self._db.history(namespace, memory_id, None):
                        memory_id = composed
            selector = f"memory_id {memory_id}"
        elif note is not None:
            note = args.note_arg(note)
            selector = "note (its path is not recorded)"
        elif matching is not None:
            matching = args.text(matching, "matching", MAX_QUERY_CHARS)
            selector = "matching (the text is not recorded)"
        else:
            selector = PurgeReport.RESUME
        from .replication import control, forget, litestream
        db_path = Path(self._db.path)  # the real file's path (resolved at open)
        selection = dict(namespace=namespace, selector=selector, memory_id=memory_id,
                         note=note, matching=matching, known_before=before, reason=reason,
                         dry_run=dry_run)
        dest = litestream.read_destination(db_path)
        shadow = litestream.shadow_dir(db_path)
        if dry_run:
            with self._db.errors():
                return purge_revisions(self._db, **selection)
        # Replication paused for every purge: Litestream's read transaction would keep the
        # WAL from emptying, and its own WAL copies (dropped here) hold the text too.
        pause = control.paused(db_path) if dest is not None else contextlib.nullcontext()
        with pause, self._db.errors():
            report = purge_revisions(
                self._db, **selection, companions=[str(shadow)],
                replica_set_up=dest is not None,
                then=(lambda patterns: forget.forget(db_path, patterns))
                if dest is not None and replicas else None)
        if dest is not None and not replicas and report.unfinished:
            return replace(report, replica_warning=(
                f"the replica at {dest.url} still holds the purged text in older "
                "snapshots and WAL segments; run the purge again with replicas "
                "(--replicas) to make it forget"))
        return report

    def purges(self) -> list[PurgeAudit]:
        """The audit record: every purge, when, what kind of selection, why, and the
        revision IDs it blanked (never the text)."""
        with self._db.errors(), self._db.snapshot():
            return self._db.purges()

    # -- notes folders ------------------------------------------------------------------

    def sync(self, folders: list[Folder], *, dry_run: bool = False, full: bool = False,
             allow_mass_delete: bool = False, known_at: str | None = None,
             kind: str = "sync", progress: Callable[[int, int], None] | None = None,
             cancel: Callable[[], bool] | None = None,
             hold: dict[Folder, set[str]] | None = None,
             allow_emptied: bool = False) -> SyncReport:
        """Reconcile whole folders with the store (see :mod:`personal_memory.sync`).
        ``hold``: paths (relative to their folder) left as the store has them this time.
        ``allow_emptied``: a folder found empty was emptied on purpose (else it is taken
        for an unmounted drive and nothing is tombstoned); only asked of one sync, never
        of the daemon's rescans, which a drive unmounted later would empty."""
        syncer = FolderSync(self._db, allow_mass_delete=allow_mass_delete, known_at=known_at,
                            progress=progress, cancel=cancel, hold=hold,
                            allow_emptied=allow_emptied)
        with self._db.errors():
            return syncer.sync(folders, dry_run=dry_run, full=full, kind=kind)

    def sync_paths(self, scopes: dict[Folder, set[str]], *, allow_mass_delete: bool = False,
                   kind: str = "event", progress: Callable[[int, int], None] | None = None,
                   cancel: Callable[[], bool] | None = None) -> SyncReport:
        """Reconcile only the given relative paths (files or folders) of each folder."""
        syncer = FolderSync(self._db, allow_mass_delete=allow_mass_delete,
                            progress=progress, cancel=cancel)
        with self._db.errors():
            return syncer.sync_paths(scopes, kind=kind)

    @staticmethod
    def check_folder(folder: Folder) -> None:
        """Raise :class:`~personal_memory.errors.RootUnavailable` if the folder is missing,
        not a folder or unlistable."""
        FolderSync.check_root(folder)

    def record_daemon(self, *, state: str, started_at: int, roots: list[str]) -> None:
        """The daemon's heartbeat: its pid, state and folders, stamped now."""
        with self._db.errors():
            self._db.set_daemon(pid=os.getpid(), started_at=started_at,
                                heartbeat_at=now_micros(), roots=roots, state=state)

