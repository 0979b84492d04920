"""The fast search path: the same answers as :func:`search.search_reference`, in
milliseconds at 100,000 revisions.

A long-running reader keeps revision metadata, vectors and term postings in memory. The
log is append-only, so each search first reads only the revisions appended since the last
one. Visibility is resolved with numpy; BM25 is recomputed exactly as FTS5's ``bm25()``
computes it, but with N, the average length and every document frequency taken from the
visible rows only; cosine is an exact scan of the visible rows' vectors. Nothing outside
the cutoff reaches any statistic.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict

import numpy as np

from . import embedding, ranking
from .search import SearchResult, fuse_ranked, query_terms
from .store import Database

K1 = 1.2  # FTS5's bm25() constants
B = 0.75
FOREVER = np.iinfo(np.int64).max
MAX_CACHED_POSTINGS = 20_000_000  # entries kept across all cached terms


class SearchIndex:
    """In-memory state for fast exact search over one database. Thread-safe: searches
    hold a lock while they refresh and read the arrays."""

    def __init__(self):
        self._lock = threading.Lock()
        self.last_id = 0
        self.ids = np.zeros(0, dtype=np.int64)
        self.ns = np.zeros(0, dtype=np.int32)
        self.mem = np.zeros(0, dtype=np.int64)
        self.known = np.zeros(0, dtype=np.int64)
        self.vfrom = np.zeros(0, dtype=np.int64)
        self.vto = np.zeros(0, dtype=np.int64)
        self.deleted = np.zeros(0, dtype=bool)
        self.length = np.zeros(0, dtype=np.int64)
        self.vectors = np.zeros((0, embedding.DIMENSIONS), dtype=np.float32)
        self.norms = np.zeros(0, dtype=np.float64)
        self.memory_ids: list[str] = []
        self._mem_code: dict[tuple[str, str], int] = {}
        self._ns_code: dict[str, int] = {}
        self._order = np.zeros(0, dtype=np.int64)  # positions by (memory, known_at, id)
        self._postings: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._posting_entries = 0

    # -- keeping current ---------------------------------------------------------------------

    def refresh(self, db: Database) -> None:
        """Read the revisions appended since the last refresh (none: one cheap query)."""
        top = db.max_revision_id()
        if top <= self.last_id:
            return
        rows = list(db.revision_meta_since(self.last_id))
        if not rows:
            return
        first_new = self.last_id
        n = len(rows)
        ids = np.empty(n, dtype=np.int64)
        ns = np.empty(n, dtype=np.int32)
        mem = np.empty(n, dtype=np.int64)
        known = np.empty(n, dtype=np.int64)
        vfrom = np.empty(n, dtype=np.int64)
        vto = np.empty(n, dtype=np.int64)
        deleted = np.empty(n, dtype=bool)
        length = np.empty(n, dtype=np.int64)
        vectors = np.zeros((n, embedding.DIMENSIONS), dtype=np.float32)
        for i, (rid, namespace, memory_id, k, f, t, d, dl, vec) in enumerate(rows):
            ids[i] = rid
            ns[i] = self._ns_code.setdefault(namespace, len(self._ns_code))
            key = (namespace, memory_id)
            code = self._mem_code.get(key)
            if code is None:
                code = self._mem_code[key] = len(self.memory_ids)
                self.memory_ids.append(memory_id)
            mem[i] = code
            known[i], vfrom[i] = k, f
            vto[i] = FOREVER if t is None else t
            deleted[i] = bool(d)
            length[i] = dl
            if vec is not None:
                vectors[i] = np.frombuffer(vec, dtype="<f4")
        self.ids = np.concatenate([self.ids, ids])
        self.ns = np.concatenate([self.ns, ns])
        self.mem = np.concatenate([self.mem, mem])
        self.known = np.concatenate([self.known, known])
        self.vfrom = np.concatenate([self.vfrom, vfrom])
        self.vto = np.concatenate([self.vto, vto])
        self.deleted = np.concatenate([self.deleted, deleted])
        self.length = np.concatenate([self.length, length])
        self.vectors = np.concatenate([self.vectors, vectors]) if len(self.vectors) else vectors
        self.norms = np.concatenate([self.norms, np.linalg.norm(vectors.astype(np.float64),
                                                                axis=1)])
        self._order = np.lexsort((self.ids, self.known, self.mem))
        self.last_id = int(ids[-1])
        if self._postings:
            self._extend_postings(db, first_new, self.last_id)

    def _extend_postings(self, db: Database, first_id: int, last_id: int) -> None:
        """Add the new revisions' tokens to the cached postings (the log only grows)."""
        additions: dict[str, tuple[list[int], list[int]]] = {}
        for rid, title, content in db.revision_texts(first_id, last_id):
            counts = Counter(db.document_tokens(title))
            counts.update(db.document_tokens(content))
            pos = int(np.searchsorted(self.ids, rid))
            for term, tf in counts.items():
                if term in self._postings:
                    entry = additions.setdefault(term, ([], []))
                    entry[0].append(pos)
                    entry[1].append(tf)
        for term, (pos, tf) in additions.items():
            old_pos, old_tf = self._postings[term]
            self._postings[term] = (np.concatenate([old_pos, np.array(pos, dtype=np.int64)]),
                                    np.concatenate([old_tf, np.array(tf, dtype=np.float64)]))
            self._posting_entries += len(pos)

    def postings(self, db: Database, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Positions and occurrence counts of every revision holding ``term``."""
        cached = self._postings.get(term)
        if cached is not None:
            self._postings.move_to_end(term)
            return cached
        rows = db.term_postings(term)
        if rows:
            arr = np.array(rows, dtype=np.int64)
            entry = (np.searchsorted(self.ids, arr[:, 0]), arr[:, 1].astype(np.float64))
        else:
            entry = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        self._postings[term] = entry
        self._posting_entries += len(entry[0])
        while self._posting_entries > MAX_CACHED_POSTINGS and len(self._postings) > 1:
            _, (old, _) = self._postings.popitem(last=False)
            self._posting_entries -= len(old)
        return entry

    # -- the three stages --------------------------------------------------------------------

    def visible(self, namespace: str, as_of: int | None, valid_at: int) -> np.ndarray:
        """Positions of the visible, non-deleted revisions: the seed's rule, vectorised."""
        code = self._ns_code.get(namespace)
        if code is None or not len(self._order):
            return np.zeros(0, dtype=np.int64)
        o = self._order
        cutoff = FOREVER if as_of is None else as_of
        mask = ((self.ns[o] == code) & (self.known[o] <= cutoff) & (self.vfrom[o] <= valid_at)
                & (valid_at < self.vto[o]))
        sel = o[mask]
        if not len(sel):
            return sel
        groups = self.mem[sel]
        last = np.empty(len(sel), dtype=bool)
        last[:-1] = groups[1:] != groups[:-1]
        last[-1] = True
        winners = sel[last]
        return np.sort(winners[~self.deleted[winners]])

    def bm25(self, db: Database, winners: np.ndarray, terms: list[str]):
        """Positions and positive scores, computed as FTS5's bm25() would over an index
        holding exactly ``winners``: same formula, same order of floating-point operations."""
        n = len(winners)
        if not terms or not n:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        is_visible = np.zeros(len(self.ids), dtype=bool)
        is_visible[winners] = True
        avgdl = float(self.length[winners].sum()) / float(n)
        hits = []
        for term in terms:
            pos, tf = self.postings(db, term)
            keep = is_visible[pos]
            hits.append((pos[keep], tf[keep]))
        matched = np.unique(np.concatenate([p for p, _ in hits]))
        if not len(matched):
            return matched, np.zeros(0)
        doc_len = self.length[matched].astype(np.float64)
        length_norm = K1 * (1 - B + B * doc_len / avgdl)
        score = np.zeros(len(matched))
        for pos, tf in hits:
            df = len(pos)
            idf = math.log((n - df + 0.5) / (df + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            freq = np.zeros(len(matched))
            freq[np.searchsorted(matched, pos)] = tf
            score = score + idf * ((freq * (K1 + 1.0)) / (freq + length_norm))
        return matched, score

    def cosine(self, winners: np.ndarray, query: bytes | None):
        """Exact cosine (float64 from the stored float32 vectors) of the visible rows."""
        if query is None or not len(winners):
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        q = np.frombuffer(query, dtype="<f4").astype(np.float64)
        qnorm = float(np.linalg.norm(q))
        sims = np.empty(len(winners))
        step = 8192
        for start in range(0, len(winners), step):
            block = winners[start:start + step]
            sims[start:start + step] = self.vectors[block].astype(np.float64) @ q
        norms = self.norms[winners]
        has_vector = norms > 0
        sims = np.where(has_vector, sims / np.where(has_vector, norms * qnorm, 1.0), 0.0)
        keep = sims > ranking.COSINE_ABS_TOL
        return winners[keep], sims[keep]

    # -- the whole search ----------------------------------------------------------------------

    def search(self, db: Database, query: str, *, namespace: str, as_of: int | None,
               valid_at: int, limit: int) -> list[SearchResult]:
        with self._lock, db.snapshot():
            self.refresh(db)
            winners = self.visible(namespace, as_of, valid_at)
            bm_pos, bm_score = self.bm25(db, winners, query_terms(db, query))
            co_pos, co_score = self.cosine(winners, embedding.embed(query))
            return fuse_ranked(
                memory_ids=self.memory_ids, mem=self.mem, ids=self.ids,
                bm25=(bm_pos, bm_score), cosine=(co_pos, co_score), limit=limit,
                load=db.revisions_by_id)
