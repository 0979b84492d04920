"""An independent, deliberately slow ground truth for point-in-time retrieval.

Visibility is brute force in plain Python over a list of revisions (no SQL); BM25 comes
from a brand-new in-memory FTS5 index holding exactly the visible rows; cosine is plain
Python in float64. The store is checked against this, never against itself.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import apsw

from personal_memory.embedding import DIMENSIONS, embed, normalize_text


@dataclass(frozen=True)
class Rev:
    id: int
    namespace: str
    memory_id: str
    known_at: int
    valid_from: int
    valid_to: int | None
    deleted: bool
    title: str | None
    content: str


def visible(revs: list[Rev], namespace: str, as_of: int, valid_at: int) -> list[Rev]:
    best: dict[str, Rev] = {}
    for r in revs:
        if r.namespace != namespace or r.known_at > as_of:
            continue
        if not (r.valid_from <= valid_at and (r.valid_to is None or valid_at < r.valid_to)):
            continue
        cur = best.get(r.memory_id)
        if cur is None or (r.known_at, r.id) > (cur.known_at, cur.id):
            best[r.memory_id] = r
    return sorted((r for r in best.values() if not r.deleted), key=lambda r: r.id)


def _nfkc(text: str | None) -> str:
    # The store's input preparation (NFKC, CJK characters set apart), not its ranking.
    return normalize_text(text or "")


def query_terms(query: str) -> list[str]:
    conn = apsw.Connection(":memory:")
    tok = conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
    out: list[str] = []
    for _, _, term, *rest in tok(_nfkc(query).encode(), apsw.FTS5_TOKENIZE_QUERY, None):
        if term not in out:
            out.append(term)
    conn.close()
    return out


def fresh_bm25(rows: list[Rev], query: str) -> dict[str, float]:
    """memory_id -> positive BM25 from an index of exactly ``rows``."""
    terms = query_terms(query)
    if not terms or not rows:
        return {}
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(title, content, "
                 "tokenize='porter unicode61 remove_diacritics 2')")
    for r in rows:
        conn.execute("INSERT INTO f (rowid, title, content) VALUES (?,?,?)",
                     (r.id, _nfkc(r.title), _nfkc(r.content)))
    expr = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    by_id = {r.id: r.memory_id for r in rows}
    out = {by_id[rid]: -score for rid, score in
           conn.execute("SELECT rowid, bm25(f) FROM f WHERE f MATCH ?", (expr,))}
    conn.close()
    return out


def python_cosine(rows: list[Rev], query: str) -> dict[str, float]:
    """Plain-Python cosine of the stored float32 count vectors (exact integer sums)."""
    q = embed(query)
    if q is None:
        return {}
    qv = struct.unpack(f"<{DIMENSIONS}f", q)
    out = {}
    for r in rows:
        blob = embed(f"{r.title or ''}\n{r.content}")
        if blob is None:
            continue
        v = struct.unpack(f"<{DIMENSIONS}f", blob)
        dot = sum(a * b for a, b in zip(v, qv))
        sim = dot / (math.sqrt(sum(a * a for a in v)) * math.sqrt(sum(b * b for b in qv)))
        if sim > 1e-6:
            out[r.memory_id] = sim
    return out


def ranks(scores: dict[str, float], same) -> dict[str, int]:
    items = sorted(scores.items(), key=lambda kv: -kv[1])
    out: dict[str, int] = {}
    lead = 0.0  # the score that opened the current group of ties
    for i, (key, score) in enumerate(items):
        if i and same(lead, score):
            out[key] = out[items[i - 1][0]]
        else:
            lead = score
            out[key] = i + 1
    return out


def expected(revs: list[Rev], query: str, namespace: str, as_of: int, valid_at: int):
    """The full expected answer: [(memory_id, fused, bm25, bm25_rank, cosine, cosine_rank)]."""
    rows = visible(revs, namespace, as_of, valid_at)
    bm = fresh_bm25(rows, query)
    co = python_cosine(rows, query)
    br = ranks(bm, lambda a, b: abs(a - b) <= 1e-9 * max(abs(a), abs(b)))
    cr = ranks(co, lambda a, b: abs(a - b) <= 1e-6)
    fused = {}
    for m in set(br) | set(co):
        fused[m] = (1 / (60 + br[m]) if m in br else 0.0) + (1 / (60 + cr[m]) if m in cr else 0.0)
    order = sorted(fused, key=lambda m: (-fused[m], m))
    return [(m, fused[m], bm.get(m), br.get(m), co.get(m), cr.get(m)) for m in order]


def bm25_top(scores: dict[str, float], k: int) -> list[str]:
    return sorted(scores, key=lambda m: (-scores[m], m))[:k]
