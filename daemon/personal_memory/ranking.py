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


def competition_ranks_array(scores, tied: Callable[[float, float], bool]):
    """:func:`competition_ranks` for a numpy array of scores: the ranks, aligned with it.

    Equal scores always share a rank, so the sequential anchor rule only has to walk the
    distinct values that lie within the tolerance of their neighbour; numpy does the rest."""
    import numpy as np
    if not len(scores):
        return np.zeros(0, dtype=np.int64)
    neg, inverse, counts = np.unique(-scores, return_inverse=True, return_counts=True)
    values = -neg                                   # distinct scores, highest first
    first = np.cumsum(counts) - counts              # 0-based position of each in sorted order
    anchor_of = np.arange(len(values))
    if len(values) > 1:
        a, b = values[:-1], values[1:]
        if tied is bm25_tied:
            close = np.abs(a - b) <= BM25_REL_TOL * np.maximum(np.abs(a), np.abs(b))
        else:
            close = np.abs(a - b) <= COSINE_ABS_TOL
        anchor = -1
        previous = -2
        for i in (np.flatnonzero(close) + 1).tolist():
            if previous != i - 1:
                anchor = i - 1  # i - 1 began a group: it was not close to its predecessor
            if tied(float(values[anchor]), float(values[i])):
                anchor_of[i] = anchor
            else:
                anchor = i
            previous = i
    return (first[anchor_of] + 1)[inverse.reshape(-1)]
