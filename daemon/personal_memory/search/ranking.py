"""Ranking maths: tie-aware component ranks and the fusion of the two arms. Pure functions.

Fusion (docs/data-model.md#ranking): each visible row scores ``0.4 * bm25 / top bm25 +
0.6 * (cosine - median) / (top cosine - median)``, where an arm's top is the mean of its
best three scores (:func:`arm_scale`), the statistics taken over the rows visible at the
cutoff alone; a row valid from a day or month the query names gains :data:`DATED`. A
row with no keyword match scores nothing on the first term; a row not yet embedded
scores on the second as it does on the first, at most the top's (:func:`waiting_share`);
one with neither scores nothing. Then the
first results that are not notes' sections take a share of their neighbours' scores
(:func:`with_context`), and the first that are take a share of the scores of the best
notes that link to theirs (:func:`linked`).

Tie rules: BM25 scores within a relative 1e-9 share a rank (maths libraries differ in the
last bit), cosine similarities within 1e-6 share a rank (sqlite-vec computes in float32,
numpy in float64), fused scores within 1e-9 are ordered by memory ID. Ties use
competition ranking: 1, 1, 3.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, Sequence

BM25_REL_TOL = 1e-9
COSINE_ABS_TOL = 1e-6
FUSED_ABS_TOL = 1e-9
# BM25 counts a query word in the title column (the note's title, aliases and heading
# path) this many times over one in the text (FTS5's bm25() column weights; whole numbers,
# so the fast path's sums are exact).
TITLE_WEIGHT = 3
CONTENT_WEIGHT = 1
KEYWORD_WEIGHT = 0.4
SEMANTIC_WEIGHT = 1.0 - KEYWORD_WEIGHT
# An arm's scores are scaled by the mean of its best this many (those above the median, for
# cosine), not by its single best: one outlying row no longer squashes every other's share.
# LoCoMo R@5 +0.011 on the four development conversations, +0.005 on the other three; the
# help vault's questions unchanged (docs/data-model.md#ranking).
SCALE_TOP = 3
# A row whose valid time begins in a day or month the query names with its year ("in
# December 2023", search/dates.py) gains this much: what a memory says was true from then.
# LoCoMo, where 12% of the questions name one: R@5 +0.022 on the development conversations
# at 0.3, flat to 0.5; +0.017 on the other three (docs/data-model.md#ranking).
DATED = 0.3
# A note whose file name names a day the query names ("what did I do on 14 March?":
# Daily/2026-03-14.md) gains this much: the user filed it under that day. Chosen on two
# personal vaults' 15 date questions (the smallest share at which they stop rising: 0.3
# puts 8 first, 0.5 11, 1.0 to 2.0 13), held out on a third's 16 (16 first at 1.0, 11 at
# 0.5; benchmarks/personal_vaults.py, docs/data-model.md#ranking).
DATED_NOTE = 1.0
# What a row gains that writes a day, week or month the query names in its text (any way:
# contract.date_phrases) and is about no period named: as a memory valid then.
WRITES_DATE = DATED
# Of a day, week or month named without its year, the latest by the moment asked about
# gains the whole share and each earlier year's this much of it, so that "what did I do
# on March 14?" puts this year's daily note before last year's when their words tie,
# while words can still put last year's first ("... at the dentist"). Not measured: no
# benchmark vault spans two years (docs/data-model.md#ranking).
EARLIER_YEARS = 0.9
# Results report their rank in the semantic arm down to this rank (None below it).
SEMANTIC_RANKS = 100
# A memory that is not a section of a note (a conversation's turn, a fact remembered through
# the API) gains shares of the fused scores of the rankable memories remembered just before
# and just after it, when they are among the first CONTEXT_DEPTH results: a reply ("yes,
# last week") holds no word of the question its previous turn asked, so a memory before it
# that asks a question (its text ends with a question mark) lends the most. Chosen on four
# LoCoMo conversations, reported on the other three; notes' sections lost by it
# (docs/data-model.md#ranking).
CONTEXT_BEFORE = 0.1
CONTEXT_QUESTION = 0.6
CONTEXT_AFTER = 0.1
QUESTION_MARKS = ("?", "\uff1f", "\u061f")  # ?, fullwidth ？ (Chinese, Japanese), Arabic ؟
CONTEXT_DEPTH = 50
# A note the best results link to gains: each of the first LINK_SEEDS notes (by their best
# section among the first CONTEXT_DEPTH results) that links to it lends LINK_SHARE of its
# score (if positive), divided by how many notes link to it in all, so a note everything
# links to (Settings) gains little and one the best results point to gains most. Chosen on
# the help vault's development half (right note first unchanged, MRR@10 0.849 to 0.851),
# held out: 0.740 to 0.766 first; on graphs shuffled with the same number of links per
# note it gains nothing (docs/data-model.md#ranking).
LINK_SEEDS = 5
LINK_SHARE = 0.1


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


def median(sorted_values) -> float:
    """The median of ascending values (the mean of the middle two for an even count),
    computed the one way both search paths use."""
    n = len(sorted_values)
    mid = n // 2
    if n % 2:
        return float(sorted_values[mid])
    return (float(sorted_values[mid - 1]) + float(sorted_values[mid])) / 2.0


def arm_scale(best_first: Sequence[float], above: float = 0.0) -> float:
    """What an arm's scores are measured against: the mean of the first :data:`SCALE_TOP`
    of ``best_first`` (its scores, highest first) that are above ``above`` (BM25: 0;
    cosine: the median); ``above`` itself when none is. Both search paths call this with
    the same exact values in the same order, so they agree to the last bit."""
    top = [float(v) for v in best_first[:SCALE_TOP] if v > above]
    return sum(top) / len(top) if top else float(above)


def dated_bonus(is_note: bool) -> float:
    """What a row about a period the query names gains (search/dates.py: about)."""
    return DATED_NOTE if is_note else DATED


def fused_score(bm25: float | None, top_bm25: float, cosine: float | None,
                median_cosine: float, top_cosine: float, dated: float = 0.0) -> float:
    """One row's fused score from its two arms and the visible rows' statistics
    (``top_*``: :func:`arm_scale`), plus ``dated``: what it gains for being about a period
    the query names (:func:`dated_bonus`), or 0."""
    score = dated
    if bm25 is not None and top_bm25 > 0.0:
        score += KEYWORD_WEIGHT * (bm25 / top_bm25)
    spread = top_cosine - median_cosine
    if cosine is not None and spread > 0.0:
        meaning = SEMANTIC_WEIGHT * ((cosine - median_cosine) / spread)
        # a row about the day named is not held back for being unlike the question's words
        score += max(meaning, 0.0) if dated > 0.0 else meaning
    elif spread > 0.0 and bm25 is not None and top_bm25 > 0.0:
        score += SEMANTIC_WEIGHT * waiting_share(bm25 / top_bm25)
    return score


def waiting_share(keyword: float) -> float:
    """The meaning share of a row that holds query words but waits for its vector (a note
    saved a moment ago, a large import the model is still reading): its words' share, at
    most the top's, as if its meaning agreed with its words. Counting it as the median
    put it below rows that only resemble the query, for as long as the model took."""
    return min(1.0, keyword)


def fused_order(fused: dict[str, float]) -> list[str]:
    """Highest fused score first; scores within :data:`FUSED_ABS_TOL` of the first of
    their group are tied and ordered by memory ID."""
    ordered = sorted(fused, key=lambda key: (-fused[key], key))
    out: list[str] = []
    group: list[str] = []
    anchor = None
    for key in ordered:
        if anchor is None or anchor - fused[key] > FUSED_ABS_TOL:
            out.extend(sorted(group))
            group, anchor = [], fused[key]
        group.append(key)
    out.extend(sorted(group))
    return out


def asks(text: str) -> bool:
    """Whether a memory's text asks a question: its last character that is not white space
    is a question mark."""
    end = text.rstrip()
    return bool(end) and end[-1] in QUESTION_MARKS


def with_context(top: list[str], fused: dict[str, float], before: dict[str, str],
                 after: dict[str, str], asking: set[str] = frozenset()) -> dict[str, float]:
    """The scores of ``top`` (the first :data:`CONTEXT_DEPTH` results, by fused score), each
    with the shares of its neighbours' (``before[m]``, ``after[m]``: the rankable memory
    remembered just before and after ``m``, for memories that are not notes' sections) when
    they are in ``top`` too; a neighbour's negative score lends nothing. A memory before
    that is in ``asking`` (:func:`asks`) lends :data:`CONTEXT_QUESTION`."""
    among = set(top)
    out: dict[str, float] = {}
    for m in top:
        score = fused[m]
        if before.get(m) in among:
            share = CONTEXT_QUESTION if before[m] in asking else CONTEXT_BEFORE
            score += share * max(0.0, fused[before[m]])
        if after.get(m) in among:
            score += CONTEXT_AFTER * max(0.0, fused[after[m]])
        out[m] = score
    return out


def context_order(fused: dict[str, float], kept: list[str], before: dict[str, str],
                  after: dict[str, str], asking: set[str] = frozenset()
                  ) -> tuple[list[str], dict[str, float]]:
    """``kept`` (the results in fused order) with its first :data:`CONTEXT_DEPTH` ordered
    again by :func:`with_context`, and every result's final score."""
    top = kept[:CONTEXT_DEPTH]
    scores = {**fused, **with_context(top, fused, before, after, asking)}
    return fused_order({m: scores[m] for m in top}) + kept[len(top):], scores


def linked(kept: list[str], fused: dict[str, float], note_of: dict[str, str],
           graph: Callable) -> tuple[list[str], dict[str, float], dict[str, float]]:
    """``kept`` (the results in order, :func:`context_order`) with its first
    :data:`CONTEXT_DEPTH` ordered again after each note's sections among them gain what
    the notes linking to it lend (:data:`LINK_SHARE`), every result's final score, and
    what each result that gained gained.
    ``note_of``: the note of each result that is a note's section; ``graph()``: the links
    at the cutoff (``targets(note)``, ``degree[note]``: search.graph.LinkGraph), read only
    when a note is among the results."""
    top = kept[:CONTEXT_DEPTH]
    best: dict[str, float] = {}  # each note's first (best) score among the top
    for m in top:
        if (n := note_of.get(m)) is not None and n not in best:
            best[n] = fused[m]
    seeds = [n for n in list(best)[:LINK_SEEDS] if best[n] > 0.0]
    if not seeds:
        return kept, fused, {}
    links = graph()
    lift: dict[str, float] = {}
    for seed in seeds:
        for target in sorted(links.targets(seed)):
            if target in best:
                lift[target] = lift.get(target, 0.0) + \
                    LINK_SHARE * best[seed] / links.degree[target]
    if not lift:
        return kept, fused, {}
    gained = {m: lift[note_of[m]] for m in top if note_of.get(m) in lift}
    scores = {**fused, **{m: fused[m] + gain for m, gain in gained.items()}}
    return fused_order({m: scores[m] for m in top}) + kept[len(top):], scores, gained


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
