"""The reference search path: slow and obviously correct, the definition of the ranking.
The visible rows are copied into a fresh FTS5 index for every query, and the cosine of
each visible row's stored vector is computed row by row."""

from __future__ import annotations

import numpy as np

from ..store import Database
from .contract import (Ranked, Semantic, cosines, fuse, left_out, no_answer, padding_floor,
                       query_terms, rankable, text_filtered)
from .syntax import Query


def cosine_reference(db: Database, revision_ids: list[int], semantic: Semantic | None,
                     ) -> dict[int, float]:
    """Cosine of every given row that has a vector: numpy in float64 over the stored
    float32 vectors (the exact rule), or sqlite-vec in float32 when that backend is chosen."""
    if semantic is None or not revision_ids:
        return {}
    q32 = np.asarray(semantic.query, dtype="<f4")
    if db.vector_backend == "sqlite-vec":
        return db.cosine_sqlite_vec(semantic.key, revision_ids, q32.tobytes())
    blobs = db.vector_blobs(semantic.key, revision_ids)
    ids = [rid for rid in revision_ids if rid in blobs]
    if not ids:
        return {}
    matrix = np.frombuffer(b"".join(blobs[rid] for rid in ids), dtype="<f4")
    matrix = matrix.reshape(len(ids), len(q32)).astype(np.float64)
    return dict(zip(ids, cosines(matrix, q32).tolist()))


def search_reference(db: Database, query: Query, *, namespace: str, as_of: int | None,
                     valid_at: int, limit: int, semantic: Semantic | None = None) -> Ranked:
    """A fresh FTS5 index of the visible (and filtered) rows, and the cosine of each
    visible row's stored vector."""
    with db.snapshot():
        db.index_generation()  # takes up a tokenizer another process re-indexed with
        everything = db.visible_revisions(namespace, as_of, valid_at)
        visible = rankable(everything, query)
        if query.filters_rows:
            kept = set(text_filtered(db, [r.revision_id for r in visible], query))
            visible = [r for r in visible if r.revision_id in kept]
        rows = {r.revision_id: r for r in visible}
        bm25 = db.bm25_over(list(rows), query_terms(db, query.words))
        cosine = cosine_reference(db, list(rows), semantic)
    unembedded = len(rows) - len(cosine) if semantic is not None else 0
    why = no_answer(len(bm25), max(cosine.values(), default=None), len(cosine), semantic,
                    visible=len(rows), unfiltered=len(everything), query=query)
    if why:
        return Ranked(unembedded=unembedded, no_answer=why)
    found = fuse(rows, bm25, cosine, limit, padding_floor(semantic, len(cosine)))
    return Ranked(found, unembedded,
                  left_out=left_out(limit, len(set(bm25) | set(cosine)), len(found)))
