"""The fast search path: the same answers as :func:`search.search_reference`, in
milliseconds at 100,000 revisions.

A long-running reader keeps revision metadata, vectors and term postings in memory. The
log is append-only, so each search first reads only the revisions appended since the last
one. Visibility is resolved with numpy; BM25 is recomputed exactly as FTS5's ``bm25()``
computes it, but with N, the average length and every document frequency taken from the
visible rows only; cosine is scanned in float32 over every loaded vector and recomputed
exactly (float64, as the reference path does) for the rows that can decide the answer:
the best, the median, the top semantic ranks and the fused top. Nothing outside the cutoff
reaches any statistic.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import threading
import time
from collections import Counter, OrderedDict
from functools import partial
from typing import NamedTuple

import numpy as np

from ..embedding.threads import one_blas_thread
from ..limits import FOREVER_US
from ..notes.resolve import VisibleNotes
from ..store import Database
from .contract import (Ranked, Semantic, filters_name_notes, foreign_words, has_tag,
                       keyword_terms, left_out, made_up_word, marked, missing_words,
                       mostly_unknown, no_answer, padding_floor, period_unmet, piece_lines,
                       query_terms, relating_terms, text_filtered)
from .dates import shares
from .graph import LinkGraph, NameIndex, Resolver
from .periods import about
from .syntax import Query, note_matches, section_matches
from .text import PHRASE_OR, alternatives, is_phrase
from .ranking import CONTENT_WEIGHT, TITLE_WEIGHT, WRITES_DATE, dated_bonus
from .screening import CosineScreen, fuse_ranked
from .variants import with_parts, word_parts

K1 = 1.2  # FTS5's bm25() constants
log = logging.getLogger("personal_memory.search")

B = 0.75
# A revision id missing below the newest is waited for this long, then taken as missing
# (see SearchIndex._before_gap).
GAP_PATIENCE_SECONDS = 60.0
MAX_CACHED_POSTINGS = 8_000_000  # entries (12 bytes each: position, weighted count) kept
WARM_TERMS = 64
PHRASES_KEPT = 64  # dates' phrases whose postings are kept (SearchIndex._phrase_postings)
GRAPHS_KEPT = 4  # link graphs kept, each for one set of visible notes' records


class _Columns:
    """Growable numpy columns: appends copy only when the capacity doubles."""

    def __init__(self, spec: dict[str, tuple], growth: float = 2.0):
        self.spec = spec
        self.growth = growth
        self.size = 0
        self.cols = {name: np.zeros((0, *shape), dtype=dtype)
                     for name, (dtype, shape) in spec.items()}

    def reserve(self, extra: int) -> None:
        need = self.size + extra
        capacity = len(next(iter(self.cols.values())))
        if need <= capacity:
            return
        capacity = max(need, int(capacity * self.growth), 1024)
        for name, (dtype, shape) in self.spec.items():
            grown = np.zeros((capacity, *shape), dtype=dtype)
            grown[:self.size] = self.cols[name][:self.size]
            self.cols[name] = grown

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self.__dict__["cols"][name][:self.__dict__["size"]]
        except KeyError:
            raise AttributeError(name) from None


def _instances(terms: list[str], wanted: list[str]) -> int:
    """:func:`text.instances` of one phrase, by list.index (a C loop) from each place its
    first word stands: the same count."""
    count, at, first, size = 0, -1, wanted[0], len(wanted)
    while True:
        try:
            at = terms.index(first, at + 1)
        except ValueError:
            return count
        if terms[at:at + size] == wanted:
            count += 1


def _reads_as_itself(db: Database, phrase: str) -> bool:
    """Whether the index's tokenizer reads a phrase of stemmed terms as those terms (a
    stemmed term may be stemmed again: then the rows holding its words are read)."""
    return db.tokens(phrase) == phrase.split(" ")


class SearchIndex:
    """In-memory state for fast exact search over one database. Thread-safe: searches
    hold a lock while they refresh and read the arrays."""

    LOAD_CHUNK = 20_000

    def __init__(self):
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        """Forget everything loaded: a purge or re-index rewrote rows cached here."""
        self._generation = 0
        self.last_id = 0
        self._gap: tuple[int, float] | None = None  # a missing id, and since when
        self.rows = _Columns({
            "ids": (np.int64, ()), "ns": (np.int32, ()), "mem": (np.int64, ()),
            "known": (np.int64, ()), "vfrom": (np.int64, ()), "vto": (np.int64, ()),
            "about": (np.int64, ()), "about_end": (np.int64, ()), "hidden": (np.bool_, ()),
            "length": (np.int64, ()),
            "vpos": (np.int64, ()), "note": (np.int32, ()), "record": (np.bool_, ())})
        # Vectors of one embedder's pieces, in the order they were stored; rows.vpos is a
        # row's group of pieces (see _group_pieces).
        self._vector_key: str | None = None
        self._vector_seq = 0
        self._vectors: _Columns | None = None
        self._piece_order = np.zeros(0, dtype=np.int64)
        self._group_start = np.zeros(0, dtype=np.int64)
        # "namespace NUL memory_id" of each memory code; sorts like the memory ID within
        # one namespace, which is all a search ever compares.
        self.memory_ids: list[str] = []
        self._mem_code: dict[str, int] = {}
        self._ns_code: dict[str, int] = {}
        self._note_code: dict[str, int] = {}
        self._note_names: list[str] = []  # note code -> note
        self._record_links: dict[int, dict] = {}  # position of a note record -> its links
        self._graphs: OrderedDict[bytes, LinkGraph] = OrderedDict()  # by visible records
        self._views: OrderedDict[bytes, VisibleNotes] = OrderedDict()  # by visible records
        # the last set of notes' names links were resolved among, its resolver and what
        # each record's targets resolved to there: a note edited re-resolves only its own,
        # a note added or renamed only the targets its name can change
        self._resolved: tuple[tuple, Resolver, dict[int, frozenset[str]]] | None = None
        # the records in _resolved's, by their targets
        self._record_naming = NameIndex(lambda p: self._record_links[p]["links"])
        self._note_days: dict[str, tuple[int, int]] = {}  # note -> its span (periods.about)
        self._record_tags: dict[int, tuple[str, ...]] = {}  # position of a note record -> tags
        self._order = np.zeros(0, dtype=np.int64)  # positions by (memory, known_at, id)
        self._sorted: dict[str, np.ndarray] = {}
        self._postings: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._posting_entries = 0
        self._phrases: dict[str, tuple[int, tuple]] = {}  # phrase -> (rows then, postings)
        # the last search's scores: grouping asks the same search again, deeper
        self._last_scored: tuple | None = None

    # -- keeping current ---------------------------------------------------------------------

    def refresh(self, db: Database, vector_key: str | None = None) -> None:
        """Read the revisions appended since the last refresh (none: one cheap query), then
        the vectors of ``vector_key`` stored since."""
        generation = db.index_generation()
        if generation != self._generation:  # a purge or a re-index rewrote cached rows
            self._reset()
            self._generation = generation
        top = db.max_revision_id()
        if top > self.last_id:
            self._load_revisions(db, top)
        if vector_key is not None:
            self._load_vectors(db, vector_key)

    def _load_vectors(self, db: Database, key: str) -> None:
        if key != self._vector_key:
            self._vector_key, self._vector_seq, self._vectors = key, 0, None
            self._last_scored = None
            self.rows.cols["vpos"][:] = -1
        if db.max_vector_seq() <= self._vector_seq:
            return
        self._last_scored = None  # its screen holds the matrix about to grow
        # Small chunks: each is copied twice on its way in, and the peak memory counts.
        for chunk in iter(lambda: db.vectors_since(key, self._vector_seq, 2048), []):
            seqs, rids, pieces, blobs = zip(*chunk)
            dims = len(blobs[0]) // 4
            if self._vectors is None:  # vectors are large: sized once, then grown by 1/4
                self._vectors = _Columns({"v": (np.float32, (dims,)), "norm": (np.float64, ()),
                                          "owner": (np.int64, ()), "piece": (np.int32, ())},
                                         growth=1.25)
                self._vectors.reserve(db.piece_count(key))
            vec = self._vectors
            vec.reserve(len(chunk))
            at = slice(vec.size, vec.size + len(chunk))
            block = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(chunk), dims)
            vec.cols["v"][at] = block
            vec.cols["norm"][at] = np.sqrt(np.einsum("ij,ij->i", block, block,
                                                     dtype=np.float64))
            vec.cols["owner"][at] = np.searchsorted(self.rows.ids,
                                                    np.array(rids, dtype=np.int64))
            vec.cols["piece"][at] = pieces
            vec.size += len(chunk)
            self._vector_seq = int(seqs[-1])
        if self._vectors is not None:
            self._group_pieces()

    def _group_pieces(self) -> None:
        """Each row's pieces side by side (by row, then piece): ``rows.vpos`` is the row's
        group, :attr:`_piece_order` lists the pieces group by group from
        :attr:`_group_start`."""
        vec = self._vectors
        order = np.lexsort((vec.piece, vec.owner))
        owners = vec.owner[order]
        starts = np.flatnonzero(np.concatenate(([True], owners[1:] != owners[:-1])))
        self._piece_order, self._group_start = order, starts
        self.rows.cols["vpos"][owners[starts]] = np.arange(len(starts))

    def _load_revisions(self, db: Database, top: int) -> None:
        first_new = self.last_id
        self._last_scored = None
        # Room for the new rows plus some growth, so later appends rarely copy the arrays.
        # (Row ids are dense: the log is never deleted from.)
        self.rows.reserve(int((top - self.last_id) * 1.1) + 64)
        cursor = db.revision_meta_since(self.last_id)
        while True:
            chunk = list(itertools.islice(cursor, self.LOAD_CHUNK))
            if not chunk:
                break
            whole = self._before_gap(chunk)
            if whole:
                self._append(whole)
            if len(whole) < len(chunk):
                break
        rows = self.rows
        self._order = np.lexsort((rows.ids, rows.known, rows.mem))
        o = self._order
        self._sorted = {"ns": rows.ns[o], "known": rows.known[o], "vfrom": rows.vfrom[o],
                        "vto": rows.vto[o], "mem": rows.mem[o]}
        if self._postings:
            self._extend_postings(db, first_new, self.last_id)

    def _before_gap(self, chunk: list[tuple]) -> list[tuple]:
        """The rows of ``chunk`` up to a missing id. Ids are dense (the log is never
        deleted from), so a missing one is a row this read could not see yet: a replica's
        reader given a stale page across a compaction. Loading past it would lose that
        row for good; it is waited for, and taken as missing only after
        :data:`GAP_PATIENCE_SECONDS` (a log an older version left with a hole)."""
        expected = self.last_id + 1
        for i, row in enumerate(chunk):
            if row[0] != expected + i:
                gap = expected + i
                now = time.monotonic()
                if self._gap is None or self._gap[0] != gap:
                    self._gap = (gap, now)
                if now - self._gap[1] < GAP_PATIENCE_SECONDS:
                    return chunk[:i]
                log.warning("revision %d is missing from the log: searching without it", gap)
                self._gap = None
                return chunk
        return chunk

    def _append(self, chunk: list[tuple]) -> None:
        n = len(chunk)
        (rid, namespace, identity, known, vfrom, vto, hidden, length, note, record,
         record_meta) = zip(*chunk)
        ns_code = self._ns_code
        mem_code = self._mem_code
        names = self.memory_ids
        codes = []
        add = codes.append
        for key in identity:  # "namespace NUL memory_id"
            code = mem_code.get(key)
            if code is None:
                code = mem_code[key] = len(names)
                names.append(key)
            add(code)
        mem = np.array(codes, dtype=np.int64)
        rows = self.rows
        rows.reserve(n)
        at = slice(rows.size, rows.size + n)
        cols = rows.cols
        cols["ids"][at] = rid
        cols["ns"][at] = [ns_code.setdefault(x, len(ns_code)) for x in namespace]
        cols["mem"][at] = mem
        cols["known"][at] = known
        cols["vfrom"][at] = vfrom
        cols["vto"][at] = [FOREVER_US if t is None else t for t in vto]
        cols["hidden"][at] = hidden
        cols["length"][at] = length
        note_code = self._note_code
        for x in note:
            if x is not None and x not in note_code:
                note_code[x] = len(self._note_names)
                self._note_names.append(x)
        cols["note"][at] = [-1 if x is None else note_code[x] for x in note]
        days = self._note_days
        spans = [about(None, v) if x is None else days[x] if x in days
                 else days.setdefault(x, about(x, v)) for x, v in zip(note, vfrom)]
        cols["about"][at] = [a for a, _ in spans]
        cols["about_end"][at] = [b for _, b in spans]
        cols["record"][at] = record
        for i, meta in enumerate(record_meta):
            if meta:  # a purged record has none (and is hidden like a tombstone)
                meta = json.loads(meta)
                self._record_tags[rows.size + i] = tuple(meta.get("tags", ()))
                if meta.get("links") or meta.get("aliases"):
                    self._record_links[rows.size + i] = {
                        "links": meta.get("links", []), "aliases": meta.get("aliases", []),
                        **{k: meta[k] for k in ("embeds", "markdown_embeds") if meta.get(k)}}
        cols["vpos"][at] = -1
        rows.size += n
        self.last_id = int(rid[-1])

    def _extend_postings(self, db: Database, first_id: int, last_id: int) -> None:
        """Add the new revisions' tokens to the cached postings (the log only grows)."""
        additions: dict[str, tuple[list[int], list[float]]] = {}
        for rid, title, content in db.revision_texts(first_id, last_id):
            weighted: Counter = Counter()
            for term in db.document_tokens(title):
                weighted[term] += TITLE_WEIGHT
            for term in db.document_tokens(content):
                weighted[term] += CONTENT_WEIGHT
            pos = int(np.searchsorted(self.rows.ids, rid))
            for term, tf in weighted.items():
                if term in self._postings:
                    entry = additions.setdefault(term, ([], []))
                    entry[0].append(pos)
                    entry[1].append(tf)
        for term, (pos, tf) in additions.items():
            old_pos, old_tf = self._postings[term]
            self._postings[term] = (np.concatenate([old_pos, np.array(pos, dtype=np.int32)]),
                                    np.concatenate([old_tf, np.array(tf, dtype=np.float64)]))
            self._posting_entries += len(pos)

    def postings(self, db: Database, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Positions of every revision holding ``term`` and its weighted count there (each
        occurrence in the title counts :data:`TITLE_WEIGHT`, in the text
        :data:`CONTENT_WEIGHT`, as FTS5's bm25() counts with column weights)."""
        if PHRASE_OR in term:  # held as any of its phrases: the rows of each, counts summed
            found = self._phrases_postings(db, alternatives(term))
            pos = np.concatenate([p for p, _ in found])
            tf = np.concatenate([t for _, t in found])
            rows, at = np.unique(pos, return_inverse=True)
            return rows.astype(np.int32), np.bincount(at, weights=tf, minlength=len(rows))
        if is_phrase(term):
            return self._phrase_postings(db, term)
        cached = self._postings.get(term)
        if cached is not None:
            self._postings.move_to_end(term)
            return cached
        found = db.term_postings(term)
        if found:
            arr = np.array(found, dtype=np.int64)
            entry = (np.searchsorted(self.rows.ids, arr[:, 0]).astype(np.int32),
                     arr[:, 1] * float(TITLE_WEIGHT) + arr[:, 2] * float(CONTENT_WEIGHT))
        else:
            entry = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64))
        self._postings[term] = entry
        self._posting_entries += len(entry[0])
        while self._posting_entries > MAX_CACHED_POSTINGS and len(self._postings) > 1:
            _, (old, _) = self._postings.popitem(last=False)
            self._posting_entries -= len(old)
        return entry

    def _phrase_postings(self, db: Database, phrase: str) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`postings` of a phrase (a date's: contract.date_phrases)."""
        return self._phrases_postings(db, [phrase])[0]

    def _phrases_postings(self, db: Database, phrases: list[str]
                          ) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`postings` of phrases (a date's forms): the rows holding each of a phrase's
        words, read again for the phrase itself, counted per column as FTS5 counts a
        phrase's instances; each row read and tokenized once for all of them. Kept while
        no row is added (one search asks more than once)."""
        size = self.rows.size
        found = {p: cached[1] for p in dict.fromkeys(phrases)
                 if (cached := self._phrases.get(p)) is not None and cached[0] == size}
        todo = [p for p in dict.fromkeys(phrases) if p not in found]
        if todo:
            candidates, of_words = {}, {}
            for phrase in todo:
                wanted = phrase.split(" ")
                if _reads_as_itself(db, phrase):  # FTS5 finds its rows, at once
                    ids = np.array(db.phrase_rows(wanted), dtype=np.int64)
                    pos = np.searchsorted(self.rows.ids, ids)
                    inside = pos < size
                    inside[inside] = self.rows.ids[pos[inside]] == ids[inside]
                    candidates[phrase] = pos[inside]  # (rows added since: the next refresh)
                    continue
                words = frozenset(wanted)
                if words not in of_words:  # "14 march" and "march 14": the same rows
                    pos = None
                    for word in sorted(words):  # positions of a term are unique
                        held = self.postings(db, word)[0]
                        pos = held if pos is None else np.intersect1d(pos, held,
                                                                      assume_unique=True)
                    of_words[words] = pos
                candidates[phrase] = of_words[words]
            every = np.unique(np.concatenate(list(candidates.values())))
            ids = self.rows.ids[every].tolist()
            texts = db.index_texts(ids)
            tokens = {}
            for p, rid in zip(every.tolist(), ids):
                title, content = texts.get(rid, ("", ""))
                tokens[p] = (db.document_tokens(title or ""), db.document_tokens(content or ""))
            if len(self._phrases) + len(todo) > PHRASES_KEPT:
                self._phrases.clear()  # (those asked for now are in ``found``)
            for phrase in todo:
                wanted = phrase.split(" ")
                kept, tf = [], []
                for p in candidates[phrase].tolist():
                    title, content = tokens[p]
                    count = (_instances(title, wanted) * TITLE_WEIGHT
                             + _instances(content, wanted) * CONTENT_WEIGHT)
                    if count:
                        kept.append(p)
                        tf.append(float(count))
                found[phrase] = (np.array(kept, dtype=np.int32),
                                 np.array(tf, dtype=np.float64))
                self._phrases[phrase] = (size, found[phrase])
        return [found[p] for p in phrases]

    def warm(self, db: Database, vector_key: str | None = None,
             terms: int = WARM_TERMS) -> None:
        """Load everything now and fetch the postings of the most frequent terms, whose
        first use is the slowest; a long-running reader calls this at startup."""
        with self._lock, db.snapshot():
            self.refresh(db, vector_key)
            for term in db.most_frequent_terms(terms):
                self.postings(db, term)

    # -- the three stages --------------------------------------------------------------------

    def visible(self, namespace: str, as_of: int | None, valid_at: int) -> np.ndarray:
        """Positions of the visible revisions: ``store.visibility``'s rule, vectorised
        (eligible rows, the newest per memory, hidden winners dropped)."""
        code = self._ns_code.get(namespace)
        if code is None or not len(self._order):
            return np.zeros(0, dtype=np.int64)
        s = self._sorted
        cutoff = FOREVER_US if as_of is None else as_of
        mask = ((s["ns"] == code) & (s["known"] <= cutoff) & (s["vfrom"] <= valid_at)
                & (valid_at < s["vto"]))
        idx = np.flatnonzero(mask)
        if not len(idx):
            return idx
        groups = s["mem"][idx]
        last = np.empty(len(idx), dtype=bool)
        last[:-1] = groups[1:] != groups[:-1]
        last[-1] = True
        winners = self._order[idx[last]]
        return np.sort(winners[~self.rows.hidden[winners]])

    def graph(self, everything: np.ndarray) -> LinkGraph:
        """The links between the notes whose records are among ``everything`` (a cutoff's
        visible rows), kept for the last few sets of records (a search at now asks for the
        same until a note changes)."""
        records = everything[self.rows.record[everything]]
        key = records.tobytes()
        if key in self._graphs:
            self._graphs.move_to_end(key)
            return self._graphs[key]
        codes = self.rows.note[records]
        meta = [(p, self._note_names[c], self._record_links.get(p, {}))
                for p, c in zip(records.tolist(), codes.tolist())]
        names = (np.sort(codes).tobytes(), tuple(sorted(
            (note, tuple(m["aliases"])) for _, note, m in meta if m.get("aliases"))))
        view = self._view(self._held(), everything)
        if self._resolved is not None and self._resolved[0] == names:
            view.share(self._resolved[1].notes)  # the same notes: the same indexes
        else:
            if self._resolved is None:
                self._resolved = (names, Resolver(view.aliases, view), {})
            else:  # another set of notes: what their names cannot change is kept
                _, resolver, done = self._resolved
                resolver = resolver.after(view.aliases, view)
                done = dict(done)
                for p in self._record_naming.naming(resolver.touched):
                    done.pop(p, None)
                self._resolved = (names, resolver, done)
        names, resolver, done = self._resolved
        out, kept = {}, {}  # kept: what the records visible now resolved to, no more
        for p, note, m in meta:
            if m.get("links"):
                if p in done:
                    kept[p] = done[p]
                else:
                    kept[p] = resolver.targets(note, m["links"])
                    self._record_naming.add(p)
                out[note] = kept[p]
        self._resolved = (names, resolver, kept)
        self._graphs[key] = LinkGraph(out)
        if len(self._graphs) > GRAPHS_KEPT:
            self._graphs.popitem(last=False)
        return self._graphs[key]

    def _visible_notes(self, held: tuple, everything: np.ndarray) -> VisibleNotes:
        """The notes among ``everything`` (a search's visible rows), for finding what
        embeds its results; kept for the last few sets of records. ``held``: what the
        index held at that search (:meth:`_held`; a reset after it makes new ones)."""
        with self._lock:
            return self._view(held, everything)

    def _held(self) -> tuple:
        """The views kept, the record and note columns, the note names and the records'
        links, as they are now (for :meth:`_view`)."""
        return (self._views, self.rows.record, self.rows.note, self._note_names,
                self._record_links)

    def _view(self, held: tuple, everything: np.ndarray) -> VisibleNotes:
        """:meth:`_visible_notes`, the lock held."""
        views, record, note, note_names, record_links = held
        records = everything[record[everything]]
        key = records.tobytes()
        if key in views:
            views.move_to_end(key)
            return views[key]
        aliases, embeds = {}, []
        for p, c in zip(records.tolist(), note[records].tolist()):
            name, m = note_names[c], record_links.get(p, {})
            aliases[name] = tuple(m.get("aliases", ()))
            if m.get("embeds"):
                embeds.append((name, m))
        views[key] = VisibleNotes(aliases, embeds)
        if len(views) > GRAPHS_KEPT:
            views.popitem(last=False)
        return views[key]

    def rankable(self, winners: np.ndarray, query: Query) -> np.ndarray:
        """:func:`contract.rankable` over positions: no note records; with tags, only
        sections of notes whose visible record has one of them; the path, folder, file and
        section filters decided once per distinct note and memory."""
        records = self.rows.record[winners]
        sections = winners[~records]
        if query.tags:
            allowed = [int(self.rows.note[p]) for p in winners[records].tolist()
                       if has_tag(self._record_tags.get(p, ()), query.tags)]
            sections = sections[np.isin(self.rows.note[sections], allowed)]
        if query.paths or query.folders or query.files or query.sections:
            notes = {code: note for note, code in self._note_code.items()}
            codes = self.rows.note[sections]
            ok_note = {int(c): note_matches(query, notes.get(int(c)))
                       for c in np.unique(codes).tolist()}
            keep = np.array([ok_note[int(c)] for c in codes.tolist()], dtype=bool)
            if query.sections:
                mems = self.rows.mem[sections]
                ok_mem = {}
                for m, c in zip(mems.tolist(), codes.tolist()):
                    if m not in ok_mem:
                        memory_id = self.memory_ids[m].split("\0", 1)[1]
                        ok_mem[m] = section_matches(query, memory_id, notes.get(c))
                keep &= np.array([ok_mem[m] for m in mems.tolist()], dtype=bool)
            sections = sections[keep] if len(sections) else sections
        return sections

    def _holding(self, db: Database, winners: np.ndarray, text: str) -> set[int]:
        """Revision ids among ``winners`` that hold every term of ``text``: the only rows
        that can hold it as a phrase (FTS5 then decides)."""
        rows = None
        for term in query_terms(db, text):
            pos, _ = self.postings(db, term)
            found = set(self.rows.ids[pos].tolist())
            rows = found if rows is None else rows & found
        return rows or set()

    def bm25(self, db: Database, winners: np.ndarray, terms: list[str]):
        """Positions and positive scores, computed as FTS5's bm25() would over an index
        holding exactly ``winners``: same formula, same order of floating-point operations;
        and how many winners hold each term."""
        n = len(winners)
        if not terms or not n:
            return np.zeros(0, dtype=np.int64), np.zeros(0), dict.fromkeys(terms, 0)
        size = self.rows.size
        is_visible = np.zeros(size, dtype=bool)
        is_visible[winners] = True
        avgdl = float(self.rows.length[winners].sum()) / float(n)
        hits = []
        matched_mask = np.zeros(size, dtype=bool)
        docs = {}
        for term in terms:
            if PHRASE_OR in term:  # (its phrases read together, once)
                docs[term] = int(np.count_nonzero(is_visible[self.postings(db, term)[0]]))
            for alternative in alternatives(term):  # each phrase of an OR, as FTS5 counts
                pos, tf = self.postings(db, alternative)
                keep = is_visible[pos]
                hits.append((pos[keep], tf[keep]))
                matched_mask[pos[keep]] = True
            docs.setdefault(term, len(hits[-1][0]))
        matched = np.flatnonzero(matched_mask)
        if not len(matched):
            return matched, np.zeros(0), docs
        slot = np.zeros(size, dtype=np.int64)
        slot[matched] = np.arange(len(matched))
        doc_len = self.rows.length[matched].astype(np.float64)
        length_norm = K1 * (1 - B + B * doc_len / avgdl)
        score = np.zeros(len(matched))
        for pos, tf in hits:
            df = len(pos)
            idf = math.log((n - df + 0.5) / (df + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            freq = np.zeros(len(matched))
            freq[slot[pos]] = tf
            score = score + idf * ((freq * (K1 + 1.0)) / (freq + length_norm))
        return matched, score, docs

    def held(self, db: Database, winners: np.ndarray, terms: list[str]) -> set[str]:
        """Which of ``terms`` some of ``winners`` holds."""
        return {t for t, n in self.documents(db, winners, terms).items() if n}

    def documents(self, db: Database, winners: np.ndarray, terms: list[str]) -> dict[str, int]:
        """How many of ``winners`` hold each of ``terms``."""
        is_visible = np.zeros(self.rows.size, dtype=bool)
        is_visible[winners] = True
        return {t: int(np.count_nonzero(is_visible[self.postings(db, t)[0]])) for t in terms}

    def cosine(self, winners: np.ndarray, semantic: Semantic | None) -> "CosineScreen | None":
        """Approximate (float32) cosine of the visible rows that have a vector, with the
        means to make any of them exact."""
        if semantic is None or self._vectors is None or not len(winners):
            return None
        vpos = self.rows.vpos[winners]
        has = vpos >= 0
        if not has.any():
            return None
        q32 = np.asarray(semantic.query, dtype=np.float32)
        qnorm = float(np.sqrt(q32.astype(np.float64) @ q32.astype(np.float64)))
        vec, order = self._vectors, self._piece_order
        dots = (vec.v @ q32)[order].astype(np.float64)
        norms = vec.norm[order] * qnorm
        each = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)
        groups = vpos[has]
        approx = np.maximum.reduceat(each, self._group_start)[groups]
        ends = np.append(self._group_start[1:], len(order))
        return CosineScreen(winners[has], approx, vec.v, q32, pieces=(
            order, self._group_start[groups], ends[groups], vec.piece))

    # -- the whole search ----------------------------------------------------------------------

    def search(self, db: Database, query: Query, *, namespace: str, as_of: int | None,
               valid_at: int, limit: int, semantic: Semantic | None = None) -> Ranked:
        with self._lock, db.snapshot(), one_blas_thread():
            self.refresh(db, semantic.key if semantic else None)
            state = (self._generation, self.last_id, self._vector_key, self._vector_seq)
            asked = (query, semantic, namespace, as_of, valid_at, state)
            last = self._last_scored
            # the same query and vector objects (held here, so never another's id)
            if (last is not None and last[0][0] is query and last[0][1] is semantic
                    and last[0][2:] == asked[2:]):
                scored = last[1]  # the same search deeper (grouping): only fused again
            else:
                scored = self._score(db, query, namespace, as_of, valid_at, semantic)
                self._last_scored = (asked, scored)
            return self._fused(db, scored, limit, semantic)

    def _score(self, db: Database, query: Query, namespace: str, as_of: int | None,
               valid_at: int, semantic: Semantic | None) -> "_Scored":
        """Both arms over the rankable rows: what every depth of one search shares."""
        everything = self.visible(namespace, as_of, valid_at)
        winners = self.rankable(everything, query)
        if query.filters_rows and len(winners):
            kept = text_filtered(db, self.rows.ids[winners].tolist(), query,
                                 lambda text: self._holding(db, winners, text))
            winners = np.sort(np.searchsorted(self.rows.ids,
                                              np.array(kept, dtype=np.int64)))
        terms = keyword_terms(db, query.words, valid_at)
        bm_pos, bm_score, docs = self.bm25(db, winners, terms)
        held = {t for t, n in docs.items() if n}
        parts = word_parts(db, terms, held, lambda some: self.held(db, winners, some),
                           query.words)
        ranked_by = with_parts(terms, parts)
        if parts:
            bm_pos, bm_score, docs = self.bm25(db, winners, ranked_by)
            held |= set(parts)
        # rows holding only numbers do not relate (asked only where the model's bar is)
        relating = relating_terms(ranked_by) if semantic is not None else None
        relating_pos = self.bm25(db, winners, relating)[0] if relating and len(bm_pos) \
            else None
        cos = self.cosine(winners, semantic)
        unembedded = (len(winners) - (len(cos.pos) if cos else 0)) if semantic else 0
        made_up = made_up_word(db, query.words, terms, set(terms) - held, semantic,
                               lambda some: self.held(db, winners, some)) if cos else None
        named_notes = filters_name_notes(query, lambda: (
            None if c < 0 else int(c) for c in np.unique(self.rows.note[winners])))
        periods = query.periods(valid_at)
        dated = None  # per winner: what it gains for being about a period named, or 0
        dated_notes = 0  # notes about a day named (contract.dated_notes)
        if periods:
            is_note = self.rows.note[winners] >= 0
            dated = np.where(is_note, dated_bonus(True), dated_bonus(False)) * \
                shares(self.rows.about[winners], self.rows.about_end[winners], periods)
            dated_notes = int(np.count_nonzero((dated > 0) & is_note))
        why = no_answer(len(bm_pos), cos.best() if cos else None,
                        len(cos.pos) if cos else 0, semantic, visible=len(winners),
                        unfiltered=len(everything), query=query,
                        unknown=mostly_unknown(db, query.words, terms, held,
                                               semantic if cos else None,
                                               lambda some: self.held(db, winners, some)),
                        made_up=made_up, named_notes=named_notes, dated=dated_notes,
                        foreign=lambda: foreign_words(
                            db, query.words, lambda some: self.held(db, winners, some)),
                        period_unmet=period_unmet(terms, periods, lambda: bool(
                            dated is not None and np.any(dated > 0))))
        marks = marked(ranked_by, len(winners), docs)
        missing = missing_words(db, query.words, terms, held,
                                lambda some: self.held(db, winners, some))
        writing = [t for t in terms if is_phrase(t)]  # the dates named, as written
        if dated is not None and writing:  # a row that writes one is about it in part
            writes = np.zeros(self.rows.size, dtype=bool)
            for term in writing:
                writes[self.postings(db, term)[0]] = True
            dated = np.where((dated == 0) & writes[winners], WRITES_DATE, dated)
        return _Scored(winners, bm_pos, bm_score, cos, unembedded, why, dated, ranked_by,
                       missing, marks, named_notes, everything, relating_pos)

    def _fused(self, db: Database, s: "_Scored", limit: int,
               semantic: Semantic | None) -> Ranked:
        if s.no_answer:
            return Ranked(unembedded=s.unembedded, no_answer=s.no_answer, terms=s.terms)
        cos = s.cosine
        found = fuse_ranked(
            memory_ids=self.memory_ids, mem=self.rows.mem, ids=self.rows.ids,
            note=self.rows.note, winners=s.winners, bm25=(s.bm_pos, s.bm_score), cosine=cos,
            limit=limit, load=db.revisions_by_id,
            floor=padding_floor(semantic, len(cos.pos) if cos else 0, s.named_notes),
            lines=piece_lines(db, semantic), dated=s.dated, relating=s.relating,
            graph=lambda: self.graph(s.everything), note_names=self._note_names)
        # rows either arm scored: every row with a vector, and keyword hits without one
        # (a count, not a union of two long arrays: both arms are among the winners)
        scored = len(s.bm_pos) + (len(cos.pos) - int(np.count_nonzero(
            self.rows.vpos[s.bm_pos] >= 0)) if cos else 0)
        days = None
        if s.dated is not None:  # notes about a day named that neither arm scored
            days = s.winners[(s.dated > 0) & (self.rows.note[s.winners] >= 0)]
            scored += len(days) - int(np.count_nonzero(np.isin(
                days, np.union1d(s.bm_pos, cos.pos if cos else s.bm_pos))))
        return Ranked(found, s.unembedded, left_out=left_out(limit, scored, len(found)),
                      scored_notes=partial(_scored_notes, self.rows.note, s, days),
                      visible_notes=partial(self._visible_notes, self._held(), s.everything),
                      terms=s.terms, missing=s.missing, marks=s.marks)


class _Scored(NamedTuple):
    """One search's rankable rows and both arms' scores, before fusion."""
    winners: np.ndarray
    bm_pos: np.ndarray
    bm_score: np.ndarray
    cosine: CosineScreen | None
    unembedded: int
    no_answer: str | None
    dated: np.ndarray | None  # per winner: its gain for a period the query names, or 0
    terms: list[str]  # the keyword terms ranked by
    missing: list[str]  # the query's words no row holds (contract.missing_words)
    marks: list[str]  # the terms worth marking (contract.marked)
    named_notes: bool  # the filters name a few notes (contract.filters_name_notes)
    everything: np.ndarray  # the visible rows, notes' records among them
    relating: np.ndarray | None  # rows holding a term that relates (None: bm_pos's)


def _scored_notes(note: np.ndarray, s: "_Scored", days: np.ndarray | None) -> int:
    """How many notes the rows either arm scored (and ``days``) belong to, a memory outside
    notes counted alone; ``note``, the index's column at the search (a refresh may replace
    it)."""
    parts = [s.bm_pos] + ([s.cosine.pos] if s.cosine else []) + (
        [days] if days is not None else [])
    codes = note[np.unique(np.concatenate(parts))]
    return len(np.unique(codes[codes >= 0])) + int(np.count_nonzero(codes < 0))
