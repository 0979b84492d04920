"""Giving revisions their vectors: newest first, a passage at a time, one transaction per
batch, reusing the vector of an identical passage instead of running the model again.

A revision gets a vector per piece (its paragraphs, list runs, groups of table rows:
:mod:`pieces`), all stored together. A vector belongs to (embedder, passage): the exact
text the model reads, hashed. A moved or renamed note, a reverted edit, an edit that
leaves most paragraphs alone and duplicated text cost no model time for the passages
already known; a reused vector is the same bytes the model gave the first time.
"""

from __future__ import annotations

import hashlib
import os
import time
from typing import Callable

from ..records import EmbeddingRun
from ..search.text import model_text
from ..store import Database
from ..store.vectors import PieceVector
from .models import Embedder, to_blob
from .pieces import Piece, pieces


def passage_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pieces_of(row) -> list[Piece]:
    """The exact texts a revision's vectors are made from, with their lines."""
    return pieces(model_text(row.title) if row.title else None, model_text(row.content))


def _stored(rid: int, parts: list[Piece], hashes: list[str], blobs: dict[str, bytes],
            ) -> list[PieceVector]:
    return [PieceVector(rid, i, blobs[h], h, p.first_line, p.last_line)
            for i, (p, h) in enumerate(zip(parts, hashes))]


def carry_vectors(db: Database, last_id: int) -> int:
    """Inside the caller's write transaction: the revisions appended after ``last_id``
    whose exact passage already has a vector get it now, for every model that has one, so
    a moved or renamed note, a reverted edit or a copied section is searched by meaning
    from the moment it is written, before the embedding worker comes to it. Returns how
    many vectors were carried."""
    keys = db.embedders()
    rows = db.passages_after(last_id) if keys else []
    if not rows:
        return 0
    parts = {row.id: pieces_of(row) for row in rows}
    hashes = {rid: [passage_hash(p.text) for p in ps] for rid, ps in parts.items()}
    wanted = list({h for hs in hashes.values() for h in hs})
    carried = 0
    for key in keys:
        blobs = db.vectors_of_passages(key, wanted)
        found = [(rid, hs) for rid, hs in hashes.items() if all(h in blobs for h in hs)]
        db.add_vectors(key, [v for rid, hs in found
                             for v in _stored(rid, parts[rid], hs, blobs)])
        carried += len(found)
    return carried


ETA_SAMPLE = 200  # pending passages whose tokens are counted for an estimate
# The rate an estimate goes by is the current run's, over about its last this many
# passages (older ones weigh less and less): a machine that gets busier midway is
# followed within a minute or so, and the first seconds (the model loading) fade out.
RATE_PASSAGES = 50


def work_of(model: Embedder, text: str) -> int:
    """What a passage costs the model: its tokens, where the model counts them (a long
    Chinese section is several windows); else its words."""
    tokens = getattr(model, "tokens", None)
    return tokens(text) if tokens is not None else max(1, len(text.split()))


def _pace(db: Database, mine: bool = False) -> tuple[float, float, int, float] | None:
    """(tokens, seconds) of the recent passages, the process and the time the last batch
    stored them; ``mine``: only when this process stored them lately (a run resumed, not
    an earlier run)."""
    held = (db.meta("embedding_pace") or "").split()
    if len(held) != 4:
        return None
    tokens, seconds, pid, at = float(held[0]), float(held[1]), int(held[2]), float(held[3])
    if mine and (pid != os.getpid() or time.time() - at > EMBEDDING_SEEN_SECONDS):
        return None
    return tokens, seconds, pid, at


def eta_seconds(db: Database, model: Embedder, pending: int) -> float | None:
    """How long the pending passages will take: by their tokens (a sample spread over them,
    counted by the model) at the tokens per second of the run in progress over its recent
    passages (:data:`RATE_PASSAGES`), less the time since its last batch was committed
    (the pending count is as of then); else by passages at the last passages per
    second. None when that run is :data:`ETA_OVERDUE_SECONDS` past its estimate without
    storing a batch: it is stuck, and "about 1 s to go" would be wrong for as long."""
    if not pending:
        return None
    pace = _pace(db)
    if pace and pace[0] > 0 and pace[1] > 0:
        sample = db.missing_sample(model.key, ETA_SAMPLE)
        if sample:
            work = sum(work_of(model, p.text) for r in sample for p in pieces_of(r))
            left = pending * work / len(sample) * pace[1] / pace[0]
            if pace[2] == embedder_pid(db):  # that run goes on
                since = time.time() - pace[3]
                if since > left + ETA_OVERDUE_SECONDS:
                    return None  # long overdue, nothing stored since: stuck (a full disk?)
                left = max(left - since, 1.0)
            return round(left, 1)
    rate = db.meta("embedding_rate")
    return round(pending / float(rate), 1) if rate else None


ETA_OVERDUE_SECONDS = 30  # past the estimate with no batch stored: no estimate at all
EMBEDDING_SEEN_SECONDS = 300  # a batch of long passages can take minutes on a slow machine


def embedder_pid(db: Database) -> int | None:
    """The process embedding now (a one-shot sync, a reembed, the daemon): it marks each
    batch it commits and unmarks when its run ends; a mark older than a few minutes, or
    of a process that died, is nobody's."""
    by = (db.meta("embedding_by") or "").split()
    if len(by) == 2 and by[0].isdigit() and time.time() - float(by[1]) < EMBEDDING_SEEN_SECONDS:
        return int(by[0])
    return None


def embed_pending(db: Database, model: Embedder, *, batch_size: int = 32,
                  max_rows: int | None = None, below: int | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  cancel: Callable[[], bool] | None = None) -> EmbeddingRun:
    """Vectors for revisions that lack them, newest first, every piece of each. ``cancel``
    is asked before each passage the model reads: when it says stop, the revisions whose
    pieces were all embedded are committed and the call returns (``interrupted``).
    ``progress(done, total)`` (in revisions) before the first passage and after each
    revision, so a bar moves from the first section on."""
    key = model.key
    stop = cancel or (lambda: False)
    with db.snapshot():
        total = db.count_missing_vectors(key) if max_rows is None else max_rows
    done = reused = 0
    seconds = 0.0
    interrupted = False
    with db.snapshot():
        pace = (_pace(db, mine=True) or (0.0, 0.0))[:2]  # a resumed run goes on with its own
    if progress:
        progress(0, total)
    while done < total and not interrupted:
        if stop():
            interrupted = True
            break
        started, work, runs = time.perf_counter(), 0, 0
        with db.snapshot():
            rows = db.missing_vectors(key, min(batch_size, total - done), below)
        if not rows:
            break
        parts = [pieces_of(r) for r in rows]
        hashes = [[passage_hash(p.text) for p in ps] for ps in parts]
        with db.snapshot():
            blobs = db.vectors_of_passages(key, [h for hs in hashes for h in hs])
            for earlier in getattr(model, "earlier_keys", ()):
                missing = [h for hs in hashes for h in hs if h not in blobs]
                if missing:
                    blobs.update(db.vectors_of_passages(earlier, missing))
        handled = 0
        for ps, hs in zip(parts, hashes):
            known = all(h in blobs for h in hs)
            for piece, digest in zip(ps, hs):
                if digest in blobs:
                    continue
                if stop():
                    interrupted = True
                    break
                t0 = time.perf_counter()
                (vector,) = model.passages([piece.text])
                seconds += time.perf_counter() - t0
                work += work_of(model, piece.text)
                runs += 1
                blobs[digest] = to_blob(vector)
            if interrupted:
                break
            reused += known
            handled += 1
            if progress:
                progress(done + handled, total)
        kept = list(zip(rows, parts, hashes))[:handled]
        if kept:
            with db.transaction():
                db.add_vectors(key, [v for row, ps, hs in kept
                                     for v in _stored(row.id, ps, hs, blobs)])
                if seconds > 0:
                    db.set_meta("embedding_rate", f"{(done + handled - reused) / seconds:.2f}")
                db.set_meta("embedding_by", f"{os.getpid()} {time.time():.0f}")
                if runs:  # the batch's time, writes included; each passage fades older ones
                    fade = (1 - 1 / RATE_PASSAGES) ** runs
                    pace = (pace[0] * fade + work,
                            pace[1] * fade + time.perf_counter() - started)
                    db.set_meta("embedding_pace", f"{pace[0]:.1f} {pace[1]:.4f} "
                                f"{os.getpid()} {time.time():.1f}")
                choice = getattr(model, "threads", None)  # a model that chooses them
                if choice is not None:
                    db.set_meta("embedding_threads", choice.describe())
            below = kept[-1][0].id
        done += handled
    if done and embedder_pid(db) == os.getpid():
        with db.transaction():  # this process embeds no more (a kill leaves a dead pid)
            db.set_meta("embedding_by", "")
    with db.snapshot():
        remaining = db.count_missing_vectors(key) if max_rows is None else None
    model_runs = done - reused
    return EmbeddingRun(embedder=key, embedded=done, below=below, remaining=remaining,
                        per_second=round(model_runs / seconds, 2) if seconds else None,
                        reused=reused, interrupted=interrupted)
