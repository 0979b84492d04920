"""Ranking maths: tie-aware component ranks and reciprocal rank fusion. Pure functions.

Tie rules: BM25 scores within a relative 1e-9 share a rank (maths libraries differ in the
last bit), cosine similarities within 1e-6 share a rank (sqlite-vec computes in float32,
the numpy backend in float64). Ties use competition ranking: 1, 1, 3.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable

RRF_K = 60
BM25_REL_TOL = 1e-9
COSINE_ABS_TOL = 1e-6


def bm25_tied(a: float, b: float) -> bool:
    return abs(a - b) <= BM25_REL_TOL * max(abs(a), abs(b))


def cosine_tied(a: float, b: float) -> bool:
    return abs(a - b) <= COSINE_ABS_TOL


def competition_ranks(
    scores: Iterable[tuple[Hashable, float]], tied: Callable[[float, float], bool]
) -> dict[Hashable, int]:
    """Rank by descending score; a score tied with its group's first member shares its rank."""
    ordered = sorted(scores, key=lambda kv: -kv[1])
    ranks: dict[Hashable, int] = {}
    anchor = None
    rank = 0
    for position, (key, score) in enumerate(ordered, start=1):
        if anchor is None or not tied(anchor, score):
            anchor, rank = score, position
        ranks[key] = rank
    return ranks


def rrf(*rank_maps: dict[Hashable, int], k: int = RRF_K) -> dict[Hashable, float]:
    """Reciprocal rank fusion: sum of 1 / (k + rank) over the components that rank a key."""
    fused: dict[Hashable, float] = {}
    for ranks in rank_maps:
        for key, rank in ranks.items():
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


def fused_order(fused: dict[str, float]) -> list[str]:
    """Highest fused score first; equal scores in memory ID order."""
    return sorted(fused, key=lambda key: (-fused[key], key))
