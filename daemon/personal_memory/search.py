"""Point-in-time retrieval: resolve visibility first, then rank only what was visible.

Pipeline: visible revisions at (as_of, valid_at) -> BM25 over exactly those rows ->
exact cosine over the same rows -> tie-aware ranks -> reciprocal rank fusion -> order by
fused score, then memory ID.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from . import embedding, ranking
from .errors import InvalidArgument
from .store import Database, Revision
from .times import format_time

MAX_QUERY_CHARS = 1000
MAX_LIMIT = 1000


@dataclass(frozen=True)
class SearchResult:
    memory_id: str
    namespace: str
    title: str | None
    content: str
    source: str | None
    provenance: dict | None
    content_hash: str
    revision_id: int
    known_at: str
    valid_from: str
    valid_to: str | None
    score: float
    bm25: float | None
    bm25_rank: int | None
    cosine: float | None
    cosine_rank: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def query_terms(db: Database, query: str) -> list[str]:
    """Distinct FTS5 terms of the query, in first-seen order."""
    seen: dict[str, None] = {}
    for token in db.tokens(query):
        seen.setdefault(token, None)
    return list(seen)


def validate_query(query: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("query: must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"query: {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
    return query


def validate_limit(limit: object, maximum: int = MAX_LIMIT) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise InvalidArgument(f"limit: {limit!r} is not a whole number from 1 to {maximum}")
    return limit


def cosine_python(db: Database, revision_ids: list[int], query: bytes) -> dict[int, float]:
    """Cosine similarity in float64 with numpy: the fallback when sqlite-vec is absent."""
    blobs = db.embeddings(revision_ids)
    ids = [rid for rid in revision_ids if blobs.get(rid) is not None]
    if not ids:
        return {}
    matrix = np.frombuffer(b"".join(blobs[rid] for rid in ids), dtype="<f4")
    matrix = matrix.reshape(len(ids), embedding.DIMENSIONS).astype(np.float64)
    q = np.frombuffer(query, dtype="<f4").astype(np.float64)
    sims = (matrix @ q) / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q))
    return dict(zip(ids, sims.tolist()))


def cosine_scores(db: Database, revision_ids: list[int], query: bytes | None) -> dict[int, float]:
    """Cosine of every given row with a vector; only positive similarities take part."""
    if query is None or not revision_ids:
        return {}
    if db.vector_backend == "sqlite-vec":
        sims = db.cosine_sqlite_vec(revision_ids, query)
    else:
        sims = cosine_python(db, revision_ids, query)
    return {rid: s for rid, s in sims.items() if s > ranking.COSINE_ABS_TOL}


def fuse(rows: dict[int, Revision], bm25: dict[int, float], cosine: dict[int, float],
         limit: int) -> list[SearchResult]:
    """Rank both components (keyed by memory ID), fuse, order and shape the results."""
    by_memory = {rows[rid].memory_id: rid for rid in set(bm25) | set(cosine)}
    bm25_m = {rows[rid].memory_id: s for rid, s in bm25.items()}
    cos_m = {rows[rid].memory_id: s for rid, s in cosine.items()}
    bm25_ranks = ranking.competition_ranks(bm25_m.items(), ranking.bm25_tied)
    cos_ranks = ranking.competition_ranks(cos_m.items(), ranking.cosine_tied)
    fused = ranking.rrf(bm25_ranks, cos_ranks)
    results = []
    for memory_id in ranking.fused_order(fused)[:limit]:
        r = rows[by_memory[memory_id]]
        results.append(SearchResult(
            memory_id=r.memory_id, namespace=r.namespace, title=r.title, content=r.content,
            source=r.source, provenance=r.provenance, content_hash=r.content_hash,
            revision_id=r.revision_id, known_at=format_time(r.known_at),
            valid_from=format_time(r.valid_from), valid_to=format_time(r.valid_to),
            score=fused[memory_id], bm25=bm25_m.get(memory_id),
            bm25_rank=bm25_ranks.get(memory_id), cosine=cos_m.get(memory_id),
            cosine_rank=cos_ranks.get(memory_id)))
    return results


def search_reference(db: Database, query: str, *, namespace: str, as_of: int | None,
                     valid_at: int, limit: int) -> list[SearchResult]:
    """The straightforward, obviously correct path: a fresh FTS5 index of the visible rows."""
    with db.snapshot():
        visible = db.visible_revisions(namespace, as_of, valid_at)
        rows = {r.revision_id: r for r in visible}
        bm25 = db.bm25_over(visible, query_terms(db, query))
        cosine = cosine_scores(db, list(rows), embedding.embed(query))
    return fuse(rows, bm25, cosine, limit)
