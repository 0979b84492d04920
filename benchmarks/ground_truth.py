"""An independent, deliberately slow ground truth for point-in-time retrieval.

Visibility is brute force in plain Python over a list of revisions (no SQL); BM25 comes
from a brand-new in-memory FTS5 index holding exactly the visible rows; cosine is plain
Python in float64 over the vectors an embedder gives (a row's cosine is its best piece's:
the pieces are the package's input preparation, like its text normalisation); the fusion
is the documented formula written out again. The store is checked against this, never
against itself.

:class:`ToyEmbedder` is a small deterministic stand-in for a semantic model (a sum of
pseudo-random word vectors): fast enough for thousands of randomised checks, real-valued
like a model's vectors. It is not a semantic model.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections import Counter
from datetime import datetime, timezone
from dataclasses import dataclass

import apsw
import numpy as np

from personal_memory.embedding.pieces import pieces
from personal_memory.search.dates import periods_named, written_dates, written_forms
from personal_memory.search.text import (model_text, normalize_text, stop_words,
                                         stop_words_by_language)


class ToyEmbedder:
    """Deterministic word-vector sums in 8 dimensions, unit length, float32."""

    name = "toy"
    version = "1"
    dimensions = 8

    @staticmethod
    def no_answer_below(rows: int) -> float:
        return 0.4 + 0.1 * min(rows, 3)  # depends on the count, as the real model's does

    @property
    def key(self) -> str:
        return f"{self.name}/{self.version}"

    def _vector(self, text: str) -> np.ndarray:
        total = np.zeros(self.dimensions)
        for word in re.findall(r"[^\W_]+", text.casefold()):
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            total += np.random.default_rng(seed).normal(size=self.dimensions)
        norm = np.linalg.norm(total)
        return (total / norm if norm else total).astype(np.float32)

    def passages(self, texts):
        return np.array([self._vector(t) for t in texts], dtype=np.float32).reshape(
            len(texts), self.dimensions)

    def query(self, text: str) -> np.ndarray:
        return self._vector("query " + text)  # queries and passages differ, as in E5


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
    purged: bool = False
    note: str | None = None  # the note a section belongs to


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
    # A winning tombstone or purged stub hides its memory (no older revision shows through).
    return sorted((r for r in best.values() if not r.deleted and not r.purged),
                  key=lambda r: r.id)


def _nfkc(text: str | None) -> str:
    # The store's input preparation (NFKC, CJK characters set apart), not its ranking.
    return normalize_text(text or "")


# FTS5's Porter over unicode61, a word's combining marks kept in it (the documented rule).
_TOKENIZER_ARGS = ["unicode61", "remove_diacritics", "2", "categories", "L* N* Co M*"]
TOKENIZE = "tokenize=\"porter unicode61 remove_diacritics 2 categories 'L* N* Co M*'\""


def query_terms(query: str) -> list[str]:
    return list(_words_of_terms(query))


def _words_of_terms(query: str) -> dict[str, str]:
    """Each term of the query (in order, once) and the word of the query it came from: a
    MATCH must name the word, which FTS5 stems once, not the term, which Porter would stem
    again ("coffee" is "coffe", and "coffe" would be "coff")."""
    conn = apsw.Connection(":memory:")
    tok = conn.fts5_tokenizer("porter", _TOKENIZER_ARGS)
    data = _nfkc(query).encode()
    out: dict[str, str] = {}
    for start, end, term, *rest in tok(data, apsw.FTS5_TOKENIZE_QUERY, None):
        out.setdefault(term, data[start:end].decode())
    conn.close()
    return out


@functools.lru_cache(maxsize=1)
def _stop_terms() -> frozenset[str]:
    return frozenset(_tokens(" ".join(stop_words()), apsw.FTS5_TOKENIZE_QUERY))


@functools.lru_cache(maxsize=1)
def _language_terms() -> tuple[dict, dict]:
    words, only = stop_words_by_language()
    def tokens(found):
        return {k: set(_tokens(" ".join(v), apsw.FTS5_TOKENIZE_QUERY)) for k, v in found.items()}
    return tokens(words), tokens(only)


def keyword_terms(query: str, at: int | None = None) -> list[str]:
    """The query's terms without stop words (the package's list of words, tokenized here),
    a date the query names one phrase of its terms or none (:func:`_date_phrases`),
    unless nothing else is left; a language's words that are content words elsewhere
    ("son", "van") are stop words when the query holds more of that language's function
    words than of any other's, English's included."""
    phrases, rest = _date_phrases(query, at)
    terms = query_terms(rest)
    words, only = _language_terms()
    stop = set(_stop_terms())
    counts = sorted(((len(set(terms) & w), lang) for lang, w in words.items()), reverse=True)
    (best, language), (second, _) = counts[0], counts[1]
    if best >= 1 and best > second and language != "en":  # one language, and not English
        stop |= only.get(language, set())
    kept = [t for t in terms if t not in stop]
    if kept or phrases:
        return kept + list(phrases)
    return terms if rest == _nfkc(query) and not _dated(query) else []


def _dated(query: str) -> bool:
    return any(written_dates(query))


def _date_phrases(query: str, at: int | None = None) -> tuple[dict[str, list[str]], str]:
    """A date the query names as a note could write it ("2025-01-15", "3 February 2025")
    is one phrase of its terms, matched where they are written together, or a day or
    month as any of the ways a note writes it ("3 February", "February 3rd", "3. Februar",
    "03.02.2025"): {the phrases' terms, each joined by a space, joined by "|": the dates
    as written}; one named from the day asked about or as a span ("last week", "3-9
    March") is no term, but one day named so ("tomorrow", from ``at``) is its day's ways
    of writing alone. And the query without those dates (reading the dates and listing
    their ways of writing is input preparation: the package's reader)."""
    rest = _nfkc(query)
    out: dict[str, list[str]] = {}
    written, dropped = written_forms(query, at)
    for date, forms, own in written:  # own: the date's own words are one of its forms
        terms = _tokens(date, apsw.FTS5_TOKENIZE_QUERY)
        alternatives = {" ".join(terms): date} if own and len(terms) > 1 else {}
        for form in forms:
            words = _tokens(form, apsw.FTS5_TOKENIZE_QUERY)
            if len(words) > 1:
                alternatives.setdefault(" ".join(words), form)
        if alternatives and (len(terms) > 1 or not own):
            out.setdefault("|".join(alternatives), list(alternatives.values()))
            rest = rest.replace(date, " ", 1)
    for date in dropped:
        rest = rest.replace(date, " ", 1)
    return out, rest


def _tokens(text: str, mode) -> list[str]:
    conn = apsw.Connection(":memory:")
    tok = conn.fts5_tokenizer("porter", _TOKENIZER_ARGS)
    out = [t[2] for t in tok(_nfkc(text).encode(), mode, None)]
    conn.close()
    return out


def holds_phrase(r: Rev, phrase: str) -> bool:
    """The phrase's terms, in order, in the title or in the content (FTS5's rule, by
    hand)."""
    wanted = _tokens(phrase, apsw.FTS5_TOKENIZE_QUERY)
    if not wanted:
        return False
    for column in (r.title or "", r.content):
        have = _tokens(column, apsw.FTS5_TOKENIZE_DOCUMENT)
        if any(have[i:i + len(wanted)] == wanted for i in range(len(have))):
            return True
    return False


def fresh_bm25(rows: list[Rev], query: str) -> dict[str, float]:
    """memory_id -> positive BM25 from an index of exactly ``rows`` (the title column
    counts three times the text, as documented)."""
    return _fresh(rows, query)[0]


def _fresh_index(rows: list[Rev]) -> apsw.Connection:
    """A brand-new in-memory FTS5 table ``f`` holding exactly ``rows``."""
    conn = apsw.Connection(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(title, content, {TOKENIZE})")
    for r in rows:
        conn.execute("INSERT INTO f (rowid, title, content) VALUES (?,?,?)",
                     (r.id, _nfkc(r.title), _nfkc(r.content)))
    return conn


def _fresh(rows: list[Rev], query: str, at: int | None = None
           ) -> tuple[dict[str, float], set[str]]:
    """BM25 as :func:`fresh_bm25`, and which of the query's keyword terms the rows hold
    (``at``: the moment the question is about, for the days it names from it)."""
    terms = keyword_terms(query, at)
    if not terms or not rows:
        return {}, set()
    conn = _fresh_index(rows)
    quoted = _matching(query, at, terms)
    by_id = {r.id: r.memory_id for r in rows}
    out = {by_id[rid]: -score for rid, score in
           conn.execute("SELECT rowid, bm25(f, 3.0, 1.0) FROM f WHERE f MATCH ?",
                        (" OR ".join(quoted),))}
    held = {t for t, q in zip(terms, quoted)
            if conn.execute("SELECT 1 FROM f WHERE f MATCH ? LIMIT 1", (q,)).fetchone()}
    conn.close()
    return out, held


def _matching(query: str, at: int | None, terms: list[str]) -> list[str]:
    """Each of ``terms`` as an FTS5 MATCH of the ways the query writes it."""
    words = {**{t: [w] for t, w in _words_of_terms(query).items()},
             **_date_phrases(query, at)[0]}
    return [" OR ".join('"' + w.replace('"', '""') + '"' for w in words[t]) for t in terms]


def _relating(rows: list[Rev], query: str, at: int | None) -> set[str] | None:
    """The rows that hold a keyword term of a query holding words and numbers that is no
    number: a row holding only the query's numbers ("15") is not related to it. None when
    the query's terms are all words, or all numbers (then every row holding one relates)."""
    terms = keyword_terms(query, at)
    words = [t for t in terms if not t.isdecimal()]
    if not words or len(words) == len(terms) or not rows:
        return None
    conn = _fresh_index(rows)
    by_id = {r.id: r.memory_id for r in rows}
    held = {by_id[rid] for (rid,) in conn.execute("SELECT rowid FROM f WHERE f MATCH ?",
                                                  (" OR ".join(_matching(query, at, words)),))}
    conn.close()
    return held


def _writing(rows: list[Rev], query: str, at: int) -> set[str]:
    """The memory IDs of the rows that hold a date the query names, written any way."""
    dates = _date_phrases(query, at)[0]
    if not dates or not rows:
        return set()
    conn = _fresh_index(rows)
    forms = " OR ".join('"' + w.replace('"', '""') + '"' for ws in dates.values() for w in ws)
    by_id = {r.id: r.memory_id for r in rows}
    found = {by_id[rid] for (rid,) in conn.execute("SELECT rowid FROM f WHERE f MATCH ?",
                                                   (forms,))}
    conn.close()
    return found


def _vocabulary(query: str, unheld: set[str], embedder) -> int:
    """How many unheld terms were typed as a word the model reads in one or two pieces.
    (Not mirrored: a longer word spelled like a held term, and the made-up-word rule,
    which the toy model's tests do not reach: it has no ``word_pieces``.)"""
    pieces = getattr(embedder, "word_pieces", None)
    if pieces is None:
        return 0
    found = {t for t in unheld if t.isdigit() or " " in t}  # numbers (a date) are never made up
    for word in re.findall(r"[^\W\d_]+", _nfkc(query)):
        if re.search("[\u0e00-\u0fff\u1000-\u109f\u1780-\u17ff\u2e80-\U0010ffff]", word):
            continue  # a run of a script written without spaces is no one word
        own = _tokens(word, apsw.FTS5_TOKENIZE_QUERY)
        if len(own) == 1 and own[0] in unheld and min(pieces(word), pieces(word.lower())) <= 2:
            found.add(own[0])
    return len(found)


def python_cosine(rows: list[Rev], query: str, embedder, embedded: set[int] | None,
                  ) -> dict[str, float]:
    """Plain-Python float64 cosine with the query's of each row's best piece (float32
    vectors; rows in ``embedded`` only, when given)."""
    if embedder is None:
        return {}
    q = [float(x) for x in embedder.query(query)]
    out = {}
    for r in rows:
        if embedded is not None and r.id not in embedded:
            continue
        title = model_text(r.title) if r.title else None
        best = None
        for piece in pieces(title, model_text(r.content)):
            v = [float(x) for x in embedder.passages([piece.text])[0]]
            nv = math.sqrt(sum(a * a for a in v))
            nq = math.sqrt(sum(b * b for b in q))
            value = 0.0 if nv == 0 or nq == 0 else sum(a * b for a, b in zip(v, q)) / (nv * nq)
            best = value if best is None else max(best, value)
        out[r.memory_id] = best
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


def expected(revs: list[Rev], query: str, namespace: str, as_of: int, valid_at: int,
             embedder=None, embedded: set[int] | None = None, keep=None,
             links: dict[str, set[str]] | None = None):
    """The full expected answer: [(memory_id, fused, bm25, bm25_rank, cosine, cosine_rank)],
    or [] when nothing matches (no query word, nothing close enough in meaning). ``keep``
    filters the visible rows before anything is ranked (the search syntax's filters).
    ``links``: the notes each visible note links to (as its writer knows them)."""
    rows = visible(revs, namespace, as_of, valid_at)
    if keep is not None:
        rows = [r for r in rows if keep(r)]
    bm, held = _fresh(rows, query, valid_at)
    co = python_cosine(rows, query, embedder, embedded)
    kept = keyword_terms(query, valid_at)
    terms = len(kept)
    # With a model, a query most of whose words no row holds (and the model does not read
    # as one word of its vocabulary) is answered by meaning alone.
    known = (len(held) + _vocabulary(query, set(kept) - held, embedder)) if embedder else 0
    unknown = embedder is not None and terms > 0 and 2 * (terms - known) >= terms
    # A row about a period the query names gains 0.3 (a memory valid from then) or
    # 1.0 (a note whose file name names a period inside it); such a row is never left out, and
    # such a note answers the query as a word would, a result even when neither arm
    # scored it (reading the dates is input preparation, like the stop words: the
    # package's parser).
    named = periods_named(query, valid_at)
    periods = named.periods
    # of a day named without its year, the years before the latest by valid_at gain 0.9
    # of that
    gain = {r.memory_id: (0.3 if r.note is None else 1.0)
            * (1.0 if _held(t, named.latest) else 0.9)
            for r in rows if (t := _about(r)) is not None and _held(t, periods)}
    notes = {r.memory_id for r in rows if r.note is not None}  # a note's day counts alone
    about = set(gain)
    # a row that writes a date the query names (any way) and is about none gains 0.3
    if periods:
        gain.update({m: 0.3 for m in _writing(rows, query, valid_at) if m not in gain})
    if (not bm or unknown) and not about & notes:
        if periods and all(" " in t for t in kept) and not about:
            return []  # it asks about a period alone, and no row is about it
        if not co:
            if not bm:
                return []
        elif max(co.values()) < embedder.no_answer_below(len(co)):
            return []
    br = ranks(bm, lambda a, b: abs(a - b) <= 1e-9 * max(abs(a), abs(b)))
    cr = ranks(co, lambda a, b: abs(a - b) <= 1e-6)
    # Each arm is measured against the mean of its best three (cosine: those above the
    # median), not its single best.
    best_bm = sorted(bm.values(), reverse=True)[:3]
    top_bm = sum(best_bm) / len(best_bm) if best_bm else 0.0
    sims = sorted(co.values())
    n = len(sims)
    median = (sims[n // 2] if n % 2 else (sims[n // 2 - 1] + sims[n // 2]) / 2) if n else 0.0
    above = [c for c in sims[::-1][:3] if c > median]
    top_co = sum(above) / len(above) if above else median
    fused = {}
    for m in set(bm) | set(co) | (about & notes):
        f = gain.get(m, 0.0)
        f += 0.4 * (bm[m] / top_bm) if m in bm else 0.0
        if m in co and top_co > median:  # for a row about the day named, at least 0
            sem = 0.6 * ((co[m] - median) / (top_co - median))
            f += max(sem, 0.0) if m in gain else sem
        elif top_co > median and m in bm:  # words, no vector yet: meaning as its words
            f += 0.6 * min(1.0, bm[m] / top_bm)
        fused[m] = f
    order = _by_score(list(fused), fused)
    if embedder is not None:  # no word of the query and below the bar: noise, left out
        bar = embedder.no_answer_below(len(co))
        relating = _relating(rows, query, valid_at)
        related = set(bm) if relating is None else relating
        order = [m for m in order if m in related or m in gain or co.get(m, bar) >= bar]
    # The first 50 again, each row that is no note's section with 0.1 of the score (if
    # positive) of the one such row remembered just before it (0.6 when that one's text
    # ends with a question mark) and 0.1 of the one just after it (in id order), when
    # those are among the 50 too; the rest follow as they were.
    first = order[:50]
    free = [r for r in rows if r.note is None]
    place = {r.memory_id: i for i, r in enumerate(free)}

    def before_share(r: Rev) -> float:
        return 0.6 if re.search(r"[?\uff1f\u061f]\s*$", r.content) else 0.1

    again = {}
    for m in first:
        i = place.get(m)
        lent = [] if i is None else [(free[j].memory_id, share) for j, share
                                     in ((i - 1, before_share(free[i - 1]) if i else 0.0),
                                         (i + 1, 0.1)) if 0 <= j < len(free)]
        again[m] = fused[m] + sum(share * max(0.0, fused[n]) for n, share in lent
                                  if n in first)
    fused.update(again)
    order = _by_score(first, fused) + order[50:]
    # The first 50 again: a note's rows gain 0.1 of the best score (if positive) of each
    # of the first five notes there that links to it, divided by how many notes link to it.
    first = order[:50]
    note_of = {r.memory_id: r.note for r in rows if r.note is not None}
    best: dict[str, float] = {}
    for m in first:
        if m in note_of:
            best.setdefault(note_of[m], fused[m])
    into = Counter(t for s, targets in (links or {}).items() for t in set(targets) - {s})
    lift: dict[str, float] = {}
    for s in [n for n in list(best)[:5] if best[n] > 0]:
        for t in sorted(set((links or {}).get(s, ())) - {s}):
            if t in best:
                lift[t] = lift.get(t, 0.0) + 0.1 * best[s] / into[t]
    fused.update({m: fused[m] + lift[note_of[m]] for m in first if note_of.get(m) in lift})
    order = _by_score(first, fused) + order[50:]
    return [(m, fused[m], bm.get(m), br.get(m), co.get(m),
             cr[m] if m in cr and cr[m] <= 100 else None) for m in order]


def _about(r: Rev) -> tuple[int, int] | None:
    """The span a row is about: a memory outside notes, the moment of its valid time; a
    note, the period its file name names: a day (YYYY-MM-DD, the separator -, _, . or
    none, used twice alike), else an ISO week (YYYY-Www), a quarter (YYYY-Qn), a month
    (YYYY-MM, a separator needed), each the first found, between non-digits, else a day
    with its year last; or none."""
    if r.note is None:
        return r.valid_from, r.valid_from + 1
    name = r.note.rsplit("/", 1)[-1]
    utc = timezone.utc
    try:
        if m := re.search(r"(?<!\d)((?:19|20|21)\d\d)([-_.]?)(\d\d)\2(\d\d)(?!\d)", name):
            start = datetime(int(m[1]), int(m[3]), int(m[4]), tzinfo=utc)
            return _micros(start), _micros(start) + 86_400_000_000
        if m := re.search(r"(?<!\w)((?:19|20|21)\d\d)[-_ ]?(?:[Ww]|[Kk][Ww])(\d\d?)(?!\d)", name):
            start = datetime.fromisocalendar(int(m[1]), int(m[2]), 1).replace(tzinfo=utc)
            return _micros(start), _micros(start) + 7 * 86_400_000_000
        if m := re.search(r"(?<!\w)((?:19|20|21)\d\d)[-_ ]?[Qq]([1-4])(?!\d)", name):
            return _months(int(m[1]), 3 * int(m[2]) - 2, 3)
        if m := re.search(r"(?<!\d)((?:19|20|21)\d\d)([-_.])(\d\d)(?![-_.]?\d)", name):
            return _months(int(m[1]), int(m[3]), 1)
        # the year last: DD.MM.YYYY; DD-MM-YYYY or MM-DD-YYYY when only one can be
        if m := re.search(r"(?<![\w.])(\d\d)([-_.])(\d\d)\2((?:19|20|21)\d\d)(?!\d|[-_.]\d)",
                          name):
            first, second = int(m[1]), int(m[3])
            if m[2] == ".":
                day, month = first, second
            elif (first > 12) == (second > 12):
                return None
            else:
                day, month = max(first, second), min(first, second)
            start = datetime(int(m[4]), month, day, tzinfo=utc)
            return _micros(start), _micros(start) + 86_400_000_000
    except ValueError:  # no such day, week or month
        return None
    return None


def _months(year: int, first: int, count: int) -> tuple[int, int]:
    start = datetime(year, first, 1, tzinfo=timezone.utc)
    last = first + count
    end = datetime(year + (last > 12), (last - 1) % 12 + 1, 1, tzinfo=timezone.utc)
    return _micros(start), _micros(end)


def _micros(t: datetime) -> int:
    return int(t.timestamp()) * 1_000_000


def _held(span: tuple[int, int], periods) -> bool:
    """Whether the periods, those touching or overlapping joined, hold the span whole."""
    joined: list[list[int]] = []
    for a, b in sorted(periods):
        if joined and a <= joined[-1][1]:
            joined[-1][1] = max(joined[-1][1], b)
        else:
            joined.append([a, b])
    return any(a <= span[0] and span[1] <= b for a, b in joined)


def _by_score(keys: list[str], scores: dict[str, float]) -> list[str]:
    """Highest first; within 1e-9 of the first of a group: memory ID order."""
    order, group, lead = [], [], None
    for m in sorted(keys, key=lambda m: (-scores[m], m)):
        if lead is None or lead - scores[m] > 1e-9:
            order += sorted(group)
            group, lead = [], scores[m]
        group.append(m)
    return order + sorted(group)


def bm25_top(scores: dict[str, float], k: int) -> list[str]:
    return sorted(scores, key=lambda m: (-scores[m], m))[:k]
