"""The float32 screen of the in-memory path, made exact: cosines are computed for every
visible row in float32 (one matrix product), and only the rows within the float32 error
bound of a value that decides the answer are recomputed in float64 by the reference
path's formula. The answer is the reference path's, not an approximation of it."""

from __future__ import annotations

import numpy as np

from ..records import SearchResult
from . import ranking
from .contract import cosines, result

# A float32 dot product of n terms errs by at most about n * 2**-24 of |a| |q| (Higham):
# for 384 dimensions 2.3e-5 in cosine units. Rows within twice this of a deciding value
# are recomputed exactly.
COSINE_MARGIN = 3e-5


class CosineScreen:
    """The semantic arm of one fast search: positions of the rows with vectors (sorted),
    their float32 cosines (each row's best piece), and exact float64 values computed on
    demand. ``pieces`` = (vector positions grouped by row, each row's first and end
    index into them, the piece number of each vector). A row's best piece is within the
    float32 margin of its screened value too: the maximum moves no further than its
    arguments."""

    def __init__(self, pos, approx, matrix, query32, *, pieces):
        self.pos, self.approx = pos, approx
        self._matrix, self._q = matrix, query32
        self._order, self._first, self._end, self._piece = pieces
        self._known = np.zeros(len(pos), dtype=bool)
        self._exact = np.zeros(len(pos))
        self._best_piece = np.zeros(len(pos), dtype=np.int64)
        self._stats: tuple[float, float, float] | None = None

    def exact(self, idx: np.ndarray) -> np.ndarray:
        """Exact cosines of the rows at indices ``idx`` of :attr:`pos` (the reference rule:
        the best of the row's pieces, each in float64; the first of equals)."""
        idx = np.asarray(idx, dtype=np.int64)
        todo = np.unique(idx[~self._known[idx]])
        if len(todo):  # every piece of these rows in one product, rows side by side
            first = self._first[todo]
            counts = self._end[todo] - first
            starts = np.cumsum(counts) - counts
            where = self._order[np.repeat(first - starts, counts)
                                + np.arange(int(counts.sum()))]
            values = cosines(self._matrix[where].astype(np.float64), self._q)
            best = np.maximum.reduceat(values, starts)
            row = np.repeat(np.arange(len(todo)), counts)
            hit = np.flatnonzero(values == best[row])
            _, first_hit = np.unique(row[hit], return_index=True)
            self._exact[todo] = best
            self._best_piece[todo] = self._piece[where[hit[first_hit]]]
            self._known[todo] = True
        return self._exact[idx]

    def piece(self, i: int) -> int:
        """The best piece of the row at index ``i`` (after :meth:`exact` computed it)."""
        return int(self._best_piece[i])

    def best(self) -> float:
        return self.stats()[1]

    def stats(self) -> tuple[float, float, float]:
        """(median, best, scale) of the exact cosines (scale: :func:`ranking.arm_scale`).
        Each order statistic of the exact values lies within the margin of the same order
        statistic of the approximate ones, so only rows within twice the margin of it need
        the exact value."""
        if self._stats is None:
            a = self.approx
            n = len(a)
            k = min(ranking.SCALE_TOP, n)
            kth = -np.partition(-a, k - 1)[k - 1]
            top = np.sort(self.exact(np.flatnonzero(a >= kth - 2 * COSINE_MARGIN)))[::-1]
            best = float(top[0])
            k_lo, k_hi = (n - 1) // 2, n // 2
            part = np.partition(a, (k_lo, k_hi))
            low, high = part[k_lo] - 2 * COSINE_MARGIN, part[k_hi] + 2 * COSINE_MARGIN
            band = np.flatnonzero((a >= low) & (a <= high))
            below = int(np.count_nonzero(a < low))
            values = np.sort(self.exact(band))
            middle = values[k_lo - below:k_hi - below + 1]
            median = ranking.median(middle)
            self._stats = (median, best, ranking.arm_scale(top[:k].tolist(), median))
        return self._stats

    def top_ranks(self) -> dict[int, int]:
        """Competition ranks (cosine tie rule) of the rows ranked within
        :data:`ranking.SEMANTIC_RANKS`, keyed by index into :attr:`pos`."""
        a = self.approx
        k = min(ranking.SEMANTIC_RANKS, len(a))
        kth = -np.partition(-a, k - 1)[k - 1]
        band = np.flatnonzero(a >= kth - 2 * COSINE_MARGIN)
        ranks = ranking.competition_ranks(zip(band.tolist(), self.exact(band).tolist()),
                                          ranking.cosine_tied)
        return {i: r for i, r in ranks.items() if r <= ranking.SEMANTIC_RANKS}


def fuse_ranked(*, memory_ids: list[str], mem: np.ndarray, ids: np.ndarray,
                note: np.ndarray, winners: np.ndarray, bm25: tuple[np.ndarray, np.ndarray],
                cosine: CosineScreen | None, limit: int, load,
                floor: float | None = None, lines=None,
                dated: np.ndarray | None = None, graph=None,
                note_names: list[str] | None = None,
                relating: np.ndarray | None = None) -> list[SearchResult]:
    """:func:`search.fuse` over numpy arrays: fused scores are screened with the float32
    cosines, and those that can reach the top ``limit`` (ties included) are recomputed
    exactly by the same rule as the reference path. Loads only the rows it returns.
    ``winners`` are the sorted positions of the rankable rows; both arms' positions are
    among them. ``lines(revision id, piece)``: the lines of a result's best piece.
    ``dated``: per winner, what it gains for being about a period the query names.
    ``graph()``: the links between notes at the cutoff; ``note_names``: each note code's
    note. ``relating``: the positions of the rows holding a query term that relates
    (contract.relating_terms; None: every row the keyword arm scored)."""
    bm_pos, bm_score = bm25
    n = len(winners)
    if not n:
        return []
    top_bm = ranking.arm_scale(_highest(bm_score, ranking.SCALE_TOP))
    co_pos = cosine.pos if cosine is not None else np.zeros(0, dtype=np.int64)
    median, _, top_cos = cosine.stats() if cosine is not None else (0.0, 0.0, 0.0)
    slot = np.empty(int(winners[-1]) + 1, dtype=np.int64)  # position -> index in winners
    slot[winners] = np.arange(n)
    bi, ci = slot[bm_pos], slot[co_pos]
    approx = np.full(n, -np.inf)  # rows neither arm scored are no result...
    if dated is not None:  # ...unless a note about a day named (not yet embedded)
        approx[(dated > 0) & (note[winners] >= 0)] = 0.0
    approx[bi] = 0.0
    approx[ci] = 0.0
    if top_bm > 0.0:
        approx[bi] += ranking.KEYWORD_WEIGHT * (bm_score / top_bm)
    spread = top_cos - median
    error = 0.0
    if cosine is not None and spread > 0.0:
        meaning = ranking.SEMANTIC_WEIGHT * ((cosine.approx - median) / spread)
        if dated is not None:  # ranking.fused_score: never below 0 for a row about the day
            meaning = np.where(dated[ci] > 0, np.maximum(meaning, 0.0), meaning)
        approx[ci] += meaning
        error = ranking.SEMANTIC_WEIGHT * COSINE_MARGIN / spread * 1.01
        if top_bm > 0.0:  # rows with words and no vector yet: ranking.waiting_share
            waiting = np.ones(n, dtype=bool)
            waiting[ci] = False
            held = waiting[bi]
            approx[bi[held]] += ranking.SEMANTIC_WEIGHT * np.minimum(
                1.0, bm_score[held] / top_bm)
    if dated is not None:
        approx += dated
    if floor is not None and cosine is not None and len(ci):
        _leave_out_unrelated(approx, bi if relating is None else slot[relating], ci,
                             cosine, floor, n, dated)
    scored = np.isfinite(approx)
    depth = max(limit, ranking.CONTEXT_DEPTH)  # the first results lend each other context
    if np.count_nonzero(scored) <= depth:
        candidates = np.flatnonzero(scored)
    else:  # everything that can reach the top `depth`, ties included
        threshold = -np.partition(-approx, depth - 1)[depth - 1]
        candidates = np.flatnonzero(approx >= threshold - 2 * error
                                    - 2 * ranking.FUSED_ABS_TOL)
    bm_at = np.full(n, -1, dtype=np.int64)
    bm_at[bi] = np.arange(len(bi))
    co_at = np.full(n, -1, dtype=np.int64)
    co_at[ci] = np.arange(len(ci))
    c_idx = co_at[candidates]
    exact = (dict(zip(c_idx[c_idx >= 0].tolist(), cosine.exact(c_idx[c_idx >= 0]).tolist()))
             if cosine is not None else {})
    fused: dict[str, float] = {}
    parts: dict[str, tuple[int, int, int]] = {}
    gains: dict[str, float] = {}  # what each gained for a period named
    for w, b, c in zip(candidates.tolist(), bm_at[candidates].tolist(), c_idx.tolist()):
        name = memory_ids[mem[winners[w]]]
        gains[name] = float(dated[w]) if dated is not None else 0.0
        fused[name] = ranking.fused_score(float(bm_score[b]) if b >= 0 else None, top_bm,
                                          exact[c] if c >= 0 else None, median, top_cos,
                                          gains[name])
        parts[name] = (int(winners[w]), b, c)
    kept = ranking.fused_order(fused)
    before, after, earlier = _neighbours(kept[:ranking.CONTEXT_DEPTH], parts, winners, note,
                                         memory_ids, mem)
    among = set(kept[:ranking.CONTEXT_DEPTH])
    lending = {name: pos for name, pos in earlier.items()  # only a positive score lends
               if name in among and fused[name] > 0.0}
    rows = load([int(ids[pos]) for pos in lending.values()]) if lending else {}
    asking = {name for name, pos in lending.items() if ranking.asks(rows[int(ids[pos])].content)}
    kept, fused = ranking.context_order(fused, kept, before, after, asking)
    linked: dict[str, float] = {}
    if graph is not None:
        codes = {name: int(note[parts[name][0]]) for name in kept[:ranking.CONTEXT_DEPTH]}
        kept, fused, linked = ranking.linked(kept, fused, {
            name: note_names[c] for name, c in codes.items() if c >= 0}, graph)
    top = kept[:limit]
    unread = [rid for rid in (int(ids[parts[name][0]]) for name in top) if rid not in rows]
    if unread:  # a returned row that lent context was read already
        rows.update(load(unread))
    bm_ranks = _top_bm25_ranks(bm_score, [parts[name][1] for name in top])
    co_ranks = cosine.top_ranks() if cosine is not None else {}
    out = []
    for name in top:
        pos, b, c = parts[name]
        out.append(result(rows[int(ids[pos])], fused[name],
                          float(bm_score[b]) if b >= 0 else None, bm_ranks.get(b),
                          exact.get(c), co_ranks.get(c),
                          lines(int(ids[pos]), cosine.piece(c)) if c >= 0 and lines else None,
                          gains[name], linked.get(name, 0.0)))
    return out


def _highest(scores: np.ndarray, k: int) -> list[float]:
    """The ``k`` highest of ``scores`` (fewer when there are fewer), highest first."""
    k = min(k, len(scores))
    if not k:
        return []
    return np.sort(np.partition(scores, len(scores) - k)[len(scores) - k:])[::-1].tolist()


def _neighbours(top: list[str], parts: dict[str, tuple[int, int, int]], winners: np.ndarray,
               note: np.ndarray, memory_ids: list[str], mem: np.ndarray
               ) -> tuple[dict[str, str], dict[str, str], dict[str, int]]:
    """For each of ``top`` that is not a note's section: the rankable memory that is not
    one either, remembered just before it and just after it (positions follow revision
    order); and the position of each memory found before one."""
    before: dict[str, str] = {}
    after: dict[str, str] = {}
    earlier: dict[str, int] = {}
    mine = [(name, parts[name][0]) for name in top if note[parts[name][0]] < 0]
    if not mine:
        return before, after, earlier
    free = winners[note[winners] < 0]
    for name, pos in mine:
        i = int(np.searchsorted(free, pos))
        if i > 0:
            before[name] = memory_ids[mem[free[i - 1]]]
            earlier[before[name]] = int(free[i - 1])
        if i + 1 < len(free):
            after[name] = memory_ids[mem[free[i + 1]]]
    return before, after, earlier


def _leave_out_unrelated(approx: np.ndarray, bi: np.ndarray, ci: np.ndarray,
                         cosine: CosineScreen, floor: float, n: int,
                         dated: np.ndarray | None) -> None:
    """:func:`contract.unrelated` on the screen: rows holding no query term that relates
    (``bi``: where those that do are) nor about a day the query names (``dated``) whose
    cosine is below ``floor`` are no result; near the floor the exact value decides."""
    keyword = np.zeros(n, dtype=bool) if dated is None else dated > 0
    keyword[bi] = True
    only = ~keyword[ci]  # per cosine row: scored by meaning alone
    a = cosine.approx
    below = only & (a < floor - 2 * COSINE_MARGIN)
    near = np.flatnonzero(only & (a >= floor - 2 * COSINE_MARGIN)
                          & (a < floor + 2 * COSINE_MARGIN))
    out = np.flatnonzero(below)
    if len(near):
        out = np.concatenate([out, near[cosine.exact(near) < floor]])
    approx[ci[out]] = -np.inf


def _top_bm25_ranks(scores: np.ndarray, wanted: list[int]) -> dict[int, int]:
    """Competition ranks (BM25 tie rule) of the rows at ``wanted`` indices (-1: none).
    Only the rows scoring at least the lowest wanted one can change those ranks, so only
    they are ranked."""
    wanted = [b for b in wanted if b >= 0]
    if not wanted:
        return {}
    floor = float(scores[wanted].min())
    sel = np.flatnonzero(scores >= floor * (1 - 4 * ranking.BM25_REL_TOL))
    ranks = ranking.competition_ranks_array(scores[sel], ranking.bm25_tied)
    at = dict(zip(sel.tolist(), ranks.tolist()))
    return {b: at[b] for b in wanted}
