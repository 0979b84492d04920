"""The reference search path: slow and obviously correct, the definition of the ranking.
The visible rows are copied into a fresh FTS5 index for every query, and the cosine of
each visible row's stored vector is computed row by row."""

from __future__ import annotations

import numpy as np

from ..store import Database
from .contract import (Ranked, Semantic, cosines, dated_notes, dated_row, filters_name_notes,
                       foreign_words, fuse, keyword_terms, link_graph, left_out, made_up_word, marked, missing_words,
                       mostly_unknown, no_answer, padding_floor, period_unmet, piece_lines,
                       rankable, relating_terms, text_filtered)
from .variants import with_parts, word_parts
from . import ranking
from .syntax import Query
from .text import is_phrase


def cosine_reference(db: Database, revision_ids: list[int], semantic: Semantic | None,
                     ) -> tuple[dict[int, float], dict[int, int]]:
    """Cosine of every given row that has vectors, the best of its pieces', and which
    piece that is (the first of equals): numpy in float64 over the stored float32 vectors
    (the exact rule), or sqlite-vec in float32 when that backend is chosen."""
    if semantic is None or not revision_ids:
        return {}, {}
    q32 = np.asarray(semantic.query, dtype="<f4")
    if db.vector_backend == "sqlite-vec":
        found = db.cosine_sqlite_vec(semantic.key, revision_ids, q32.tobytes())
        return ({rid: c for rid, (c, _) in found.items()},
                {rid: p for rid, (_, p) in found.items()})
    blobs = db.vector_blobs(semantic.key, revision_ids)
    ids = [rid for rid in revision_ids if rid in blobs]
    if not ids:
        return {}, {}
    flat = [(rid, piece, blob) for rid in ids for piece, blob in blobs[rid]]
    matrix = np.frombuffer(b"".join(blob for _, _, blob in flat), dtype="<f4")
    values = cosines(matrix.reshape(len(flat), len(q32)).astype(np.float64), q32).tolist()
    best: dict[int, float] = {}
    piece: dict[int, int] = {}
    for (rid, p, _), value in zip(flat, values):
        if rid not in best or value > best[rid]:
            best[rid], piece[rid] = value, p
    return best, piece


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
        terms = keyword_terms(db, query.words, valid_at)
        weights = (ranking.TITLE_WEIGHT, ranking.CONTENT_WEIGHT)
        bm25 = db.bm25_over(list(rows), terms, weights)
        held = db.terms_held(list(rows), terms) if bm25 else set()
        parts = word_parts(db, terms, held, lambda some: db.terms_held(list(rows), some),
                           query.words)
        ranked_by = with_parts(terms, parts)
        if parts:
            bm25 = db.bm25_over(list(rows), ranked_by, weights)
            held |= set(parts)
        cosine, pieces = cosine_reference(db, list(rows), semantic)
        unembedded = len(rows) - len(cosine) if semantic is not None else 0
        made_up = made_up_word(db, query.words, terms, set(terms) - held, semantic,
                               lambda some: db.terms_held(list(rows), some)) if cosine else None
        named_notes = filters_name_notes(query, lambda: (r.note for r in rows.values()))
        periods = query.periods(valid_at)
        why = no_answer(len(bm25), max(cosine.values(), default=None), len(cosine), semantic,
                        visible=len(rows), unfiltered=len(everything), query=query,
                        unknown=mostly_unknown(db, query.words, terms, held,
                                               semantic if cosine else None,
                                               lambda some: db.terms_held(list(rows), some)),
                        made_up=made_up, named_notes=named_notes,
                        dated=len(dated_notes(rows, periods)),
                        foreign=lambda: foreign_words(
                            db, query.words, lambda some: db.terms_held(list(rows), some)),
                        period_unmet=period_unmet(terms, periods, lambda: any(
                            dated_row(r, periods) for r in rows.values())))
        if why:
            return Ranked(unembedded=unembedded, no_answer=why, terms=ranked_by)
        writing = [t for t in terms if is_phrase(t)]  # the dates named, as written
        # rows holding only numbers do not relate (asked only where the model's bar is)
        relating = relating_terms(ranked_by) if semantic is not None else None
        found = fuse(rows, bm25, cosine, limit,
                     padding_floor(semantic, len(cosine), named_notes),
                     pieces, piece_lines(db, semantic), periods,
                     graph=lambda: link_graph(everything),
                     writes=set(db.bm25_over(list(rows), writing)) if periods and writing
                     else set(),
                     relating=None if relating is None
                     else set(db.bm25_over(list(rows), relating)))
        marks = marked(ranked_by, len(rows), db.documents_holding(list(rows), ranked_by))
    return Ranked(found, unembedded,
                  left_out=left_out(limit, len(set(bm25) | set(cosine)
                                               | set(dated_notes(rows, periods))), len(found)),
                  terms=ranked_by, missing=missing_words(
                      db, query.words, terms, held,
                      lambda some: db.terms_held(list(rows), some)),
                  marks=marks)
