"""Point-in-time retrieval: resolve visibility first, then rank only what was visible.

Pipeline: visible revisions at (as_of, valid_at) -> BM25 over exactly those rows ->
exact cosine over the same rows -> tie-aware ranks -> reciprocal rank fusion -> order by
fused score, then memory ID.
"""

from __future__ import annotations

import math

import numpy as np

from . import embedding, ranking
from .errors import InvalidArgument
from .front_matter import normalise_tag
from .limits import MAX_LIMIT, MAX_QUERY_CHARS, MAX_TAGS
from .notes import is_record
from .records import RevisionRecord, SearchResult
from .store import Database
from .writes import unicode_checked


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
    return unicode_checked(query, "query")


def validate_limit(limit: object, maximum: int = MAX_LIMIT) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise InvalidArgument(f"limit: {limit!r} is not a whole number from 1 to {maximum}")
    return limit


def validate_tags(tags: object) -> tuple[str, ...] | None:
    """The tags filter, normalised (None or empty: no filter)."""
    if tags is None:
        return None
    if isinstance(tags, str) or not isinstance(tags, (list, tuple, set, frozenset)):
        raise InvalidArgument("tags: must be a list of tag names")
    if len(tags) > MAX_TAGS:
        raise InvalidArgument(f"tags: {len(tags)} given; the limit is {MAX_TAGS}")
    out: dict[str, None] = {}
    for tag in tags:
        if not isinstance(tag, str) or not normalise_tag(tag):
            raise InvalidArgument(f"tags: {tag!r} is not a tag name")
        out.setdefault(normalise_tag(unicode_checked(tag, "tags")), None)
    return tuple(out) or None


def has_tag(note_tags, wanted: tuple[str, ...]) -> bool:
    """Whether a note's tags include any wanted tag, or a tag nested under one
    (``project`` matches ``project/alpha``)."""
    return any(t == w or t.startswith(w + "/") for t in note_tags for w in wanted)


def rankable(visible: list[RevisionRecord], tags: tuple[str, ...] | None,
             ) -> list[RevisionRecord]:
    """The visible revisions a search ranks: notes' records are metadata, not results;
    with ``tags``, only sections of notes whose record (at the same time) has one."""
    rows = [r for r in visible if not is_record(r.memory_id, r.note)]
    if tags:
        allowed = {r.note for r in visible if is_record(r.memory_id, r.note)
                   and has_tag((r.metadata or {}).get("tags", ()), tags)}
        rows = [r for r in rows if r.note in allowed]
    return rows


def cosine_python(db: Database, revision_ids: list[int], query: bytes) -> dict[int, float]:
    """Cosine in float64 with numpy: the fallback when sqlite-vec is absent. The stored
    vectors are integer counts, so the dot products and squared norms are exact."""
    blobs = db.embeddings(revision_ids)
    ids = [rid for rid in revision_ids if blobs.get(rid) is not None]
    if not ids:
        return {}
    matrix = np.frombuffer(b"".join(blobs[rid] for rid in ids), dtype="<f4")
    matrix = matrix.reshape(len(ids), embedding.DIMENSIONS).astype(np.float64)
    q = np.frombuffer(query, dtype="<f4").astype(np.float64)
    dots = matrix @ q
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    sims = dots / (norms * math.sqrt(float(q @ q)))
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


def _result(r: RevisionRecord, score: float, bm25: float | None, bm25_rank: int | None,
            cosine: float | None, cosine_rank: int | None) -> SearchResult:
    return SearchResult(revision=r, score=score, bm25=bm25, bm25_rank=bm25_rank,
                        cosine=cosine, cosine_rank=cosine_rank)


def fuse(rows: dict[int, RevisionRecord], bm25: dict[int, float], cosine: dict[int, float],
         limit: int) -> list[SearchResult]:
    """Rank both components (keyed by memory ID), fuse, order and shape the results."""
    by_memory = {rows[rid].memory_id: rid for rid in set(bm25) | set(cosine)}
    bm25_m = {rows[rid].memory_id: s for rid, s in bm25.items()}
    cos_m = {rows[rid].memory_id: s for rid, s in cosine.items()}
    bm25_ranks = ranking.competition_ranks(bm25_m.items(), ranking.bm25_tied)
    cos_ranks = ranking.competition_ranks(cos_m.items(), ranking.cosine_tied)
    fused = ranking.rrf(bm25_ranks, cos_ranks)
    return [_result(rows[by_memory[m]], fused[m], bm25_m.get(m), bm25_ranks.get(m),
                    cos_m.get(m), cos_ranks.get(m))
            for m in ranking.fused_order(fused)[:limit]]


def fuse_ranked(*, memory_ids: list[str], mem: np.ndarray, ids: np.ndarray,
                bm25: tuple[np.ndarray, np.ndarray], cosine: tuple[np.ndarray, np.ndarray],
                limit: int, load) -> list[SearchResult]:
    """:func:`fuse` over numpy arrays of positions and scores; loads only the rows it
    returns. Same ranks, same fused scores, same order."""
    bm_pos, bm_score = bm25
    co_pos, co_score = cosine
    bm_rank = ranking.competition_ranks_array(bm_score, ranking.bm25_tied)
    co_rank = ranking.competition_ranks_array(co_score, ranking.cosine_tied)
    keys = np.union1d(bm_pos, co_pos)
    if not len(keys):
        return []
    fused = np.zeros(len(keys))
    bi = np.searchsorted(keys, bm_pos)
    ci = np.searchsorted(keys, co_pos)
    fused[bi] += 1.0 / (ranking.RRF_K + bm_rank)
    fused[ci] += 1.0 / (ranking.RRF_K + co_rank)
    if len(keys) > limit:  # everything that can reach the top `limit`, ties included
        threshold = -np.partition(-fused, limit - 1)[limit - 1]
        candidates = np.flatnonzero(fused >= threshold).tolist()
    else:
        candidates = range(len(keys))
    top = sorted(candidates, key=lambda i: (-fused[i], memory_ids[mem[keys[i]]]))[:limit]
    rows = load([int(ids[keys[i]]) for i in top])
    out = []
    for i in top:
        key = keys[i]
        b = int(np.searchsorted(bm_pos, key))
        c = int(np.searchsorted(co_pos, key))
        has_b = b < len(bm_pos) and bm_pos[b] == key
        has_c = c < len(co_pos) and co_pos[c] == key
        out.append(_result(rows[int(ids[key])], float(fused[i]),
                           float(bm_score[b]) if has_b else None,
                           int(bm_rank[b]) if has_b else None,
                           float(co_score[c]) if has_c else None,
                           int(co_rank[c]) if has_c else None))
    return out


def search_reference(db: Database, query: str, *, namespace: str, as_of: int | None,
                     valid_at: int, limit: int, tags: tuple[str, ...] | None = None,
                     ) -> list[SearchResult]:
    """The straightforward, obviously correct path: a fresh FTS5 index of the visible rows."""
    with db.snapshot():
        db.index_generation()  # takes up a tokenizer another process re-indexed with
        visible = rankable(db.visible_revisions(namespace, as_of, valid_at), tags)
        rows = {r.revision_id: r for r in visible}
        bm25 = db.bm25_over(list(rows), query_terms(db, query))
        cosine = cosine_scores(db, list(rows), embedding.embed(query))
    return fuse(rows, bm25, cosine, limit)
