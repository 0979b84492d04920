"""Health checks behind ``memory doctor``: each a named check with a status (ok, warn,
fail) and one line of detail."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import asdict, dataclass

from .. import render
from ..embedding import models as embedders
from ..errors import ClockImplausible, PersonalMemoryError
from ..limits import DISK_FAIL_BYTES, DISK_WARN_BYTES, REPLICA_MAX_LAG_SECONDS
from ..memory import MemoryStore
from ..paths import free_beside
from ..times import plausible_now


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok, warn or fail
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


def run_checks(db_path: str, vector_backend: str = "auto", embedder: str = "auto",
               replica_max_lag: float = REPLICA_MAX_LAG_SECONDS) -> list[Check]:
    checks = []
    ok_python = sys.version_info >= (3, 11)
    checks.append(Check("python", "ok" if ok_python else "fail",
                        f"{platform.python_version()} ({sys.executable})"))
    caps = MemoryStore.capabilities(vector_backend)
    checks.append(Check("sqlite", "ok", f"{caps.sqlite} via apsw {caps.apsw}"))
    checks.append(Check("fts5", "ok", "available") if caps.fts5 is None
                  else Check("fts5", "fail", f"unavailable: {caps.fts5}"))
    if caps.vector_backend is None:
        checks.append(Check("vector backend", "fail", caps.vector_error or "unavailable"))
    else:
        detail = (f"sqlite-vec {caps.sqlite_vec_version} (float32, in SQLite)"
                  if caps.vector_backend == "sqlite-vec" else "numpy (float64, exact)")
        checks.append(Check("vector backend", "ok", detail))
    try:
        model, note = embedders.load(embedder)
    except PersonalMemoryError as exc:
        checks.append(Check("semantic model", "fail", str(exc)))
        model, note = None, ""
    else:
        # Keyword-only because the user chose it is fine; because no wheel exists, a warning.
        checks.append(Check("semantic model", "ok" if model or embedder == "none" else "warn",
                            note))
    if not os.path.exists(db_path):
        checks.append(Check("database", "warn", f"{db_path} does not exist yet; "
                            "'memory init' or 'memory sync' creates it"))
        return checks
    try:
        with MemoryStore.open(db_path, read_only=True, vector_backend="python",
                              embedder=model if model is not None else "none") as store:
            health = store.health()
            daemon = store.status().daemon
            replica = store.replication(replica_max_lag)
            unfinished = [p for p in store.purges() if p.unfinished]
    except PersonalMemoryError as exc:
        checks.append(Check("database", "fail", str(exc)))
        return checks
    integrity = health.integrity
    checks.append(Check("database", "ok" if integrity == "ok" else "fail",
                        f"{db_path} ({health.revisions} revisions, integrity {integrity})"))
    checks.append(Check("schema", "ok", f"v{health.schema_version} "
                        f"(current is v{health.supported_schema_version})"))
    checks.append(Check("search index", "ok", "built by this version's rules")
                  if health.index_current else
                  Check("search index", "warn", "built by an earlier version's rules: "
                        "searches read it that way until the daemon or 'memory sync' "
                        "rebuilds it (once, from the stored revisions, which stay as "
                        "they are)"))
    checks.append(_clock(health))
    checks.append(_disk(db_path, daemon))
    if model is not None:
        pending = health.pending_vectors
        checks.append(Check("vectors", "ok" if not pending else "warn",
                            f"{health.vectors.get(model.key, 0)} stored, {pending} pending"
                            + (" (the daemon embeds them; or run 'memory reembed')"
                               if pending else "")))
    checks.append(_problems(daemon))
    checks.append(_replication(replica))
    checks.append(Check("purges", "fail", "; ".join(p.left for p in unfinished))
                  if unfinished else Check("purges", "ok", "none unfinished"))
    return checks


def _disk(db_path: str, daemon) -> Check:
    """Room beside the database: without it nothing new is recorded (the daemon waits)."""
    free = free_beside(db_path)
    said = f"{free / 2**20:,.0f} MiB free beside the database"
    if daemon.daemon_state.startswith("not writing"):
        return Check("disk", "fail", f"{said}; the daemon is running but has not written "
                     "for a while (see its log)")
    if free < DISK_FAIL_BYTES:
        return Check("disk", "fail", f"{said}: nothing new can be recorded until there is "
                     "more (the daemon waits, and resumes by itself)")
    if free < DISK_WARN_BYTES:
        return Check("disk", "warn", f"{said}: little room left")
    return Check("disk", "ok", said)


def _problems(daemon) -> Check:
    """Files the last syncs could not import (their last imported text stays): a warning
    naming the first few, as 'memory status' lists them all."""
    problems = daemon.problems
    if not problems:
        return Check("notes", "ok", "every file imported")
    some = "; ".join(f"{render.name(p.collection)}/{render.name(p.path)}: {p.reason}"
                     for p in problems[:3])
    more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
    return Check("notes", "warn", f"{render.counted(len(problems), 'file')} not imported "
                 f"({some}{more}); 'memory status' lists them")


def _replication(r) -> Check:
    """A replica that is set up must be running and within its lag; none is fine."""
    if r.state == "absent":
        return Check("replication", "ok", "not set up (memory replicate setup DEST)")
    if r.state == "healthy":
        return Check("replication", "ok", f"{r.destination}: {r.lag_seconds:.1f} s behind, "
                     f"at {r.position}")
    return Check("replication", "fail", f"{r.destination or 'replica'}: {r.state}: "
                 f"{r.problem}")


def _clock(health) -> Check:
    """Note memories whose last write lost to an older revision stamped later (an earlier
    version's clock), and a clock behind the newest revision (how far)."""
    c = health.clock
    try:
        plausible_now()
    except ClockImplausible as exc:
        return Check("clock", "fail", str(exc).replace("nothing was written", "nothing is "
                                                       "written until it is"))
    if c.memories_to_repair:
        some = ", ".join(c.notes_to_repair[:3]) + (", ..." if len(c.notes_to_repair) > 3
                                                   else "")
        return Check("clock", "fail",
                     f"{c.memories_to_repair} memories ({some}) lost their last write to an "
                     "older revision stamped later by a clock that ran ahead; run 'memory "
                     "repair-clock' (it appends what each last write said, audited)")
    if c.behind_seconds > 0:
        # the cause: the first revision stamped ahead (those after it were stamped after
        # it, since transaction time never steps back)
        first = health.future_revisions[0] if health.future_revisions else None
        return Check("clock", "warn",
                     f"this machine's clock is {render.duration(c.behind_seconds)} behind the "
                     f"newest revision ({c.newest_known_at}"
                     + (f"; the first stamped ahead of it: #{first.revision_id} "
                        f"{first.namespace}/{render.name(first.memory_id)}" if first else "")
                     + "): new writes are stamped after it, and 'now' reads as that time "
                     "until the clock catches up")
    return Check("clock", "ok", "no revision is known after now")
