"""What both search paths compute, defined once: which visible rows a search ranks, how the
two arms are fused, when there is no answer, and the shapes they return.

Pipeline: visible revisions at (as_of, valid_at) -> the rankable ones (no notes' records;
the tags filter) -> BM25 over exactly those rows -> exact cosine of the same rows' vectors
-> fused scores from statistics of those rows alone (:mod:`ranking`) -> order by fused
score, then memory ID. When no query word occurs in any visible row and no row is
semantically close enough, there is no answer.
"""

from __future__ import annotations

import math
import re
import unicodedata
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..limits import NOTHING_ABOUT
from ..notes.model import is_record
from ..notes.resolve import VisibleNotes
from ..records import RevisionRecord, SearchResult
from ..times import parse_time
from . import lexicon, ranking, syntax
from .dates import Named, date_words, described, share, written_forms
from .graph import LinkGraph
from .periods import about
from .text import (PHRASE_OR, find_folded, is_phrase, normalize_text, paired, stop_words,
                   stop_words_by_language)


def query_terms(db, query: str) -> list[str]:
    """Distinct FTS5 terms of the query (as ``db`` tokenizes), in first-seen order."""
    seen: dict[str, None] = {}
    for token in db.tokens(query):
        seen.setdefault(token, None)
    return list(seen)


_STOP_TERMS: dict[tuple[str, str], frozenset[str]] = {}
# Japanese writes its particles, endings and auxiliaries in hiragana (した, たい, です,
# には): a pair of hiragana is read like a function word, beside pairs that hold a kanji
# or katakana (a query of hiragana alone still searches for them).
_HIRAGANA = [chr(cp) for cp in range(0x3041, 0x3097)]
HIRAGANA_PAIRS = frozenset(a + b for a in _HIRAGANA for b in _HIRAGANA)


def stop_terms(db) -> frozenset[str]:
    """The stop words as ``db`` tokenizes them (stemmed, accents folded), and the pairs
    of hiragana."""
    key = (db.tokenizer, db.text_version)
    found = _STOP_TERMS.get(key)
    if found is None:
        found = _STOP_TERMS[key] = frozenset(
            t for w in stop_words() for t in db.tokens(w)) | HIRAGANA_PAIRS
    return found


_LANGUAGE_TERMS: dict[tuple[str, str], tuple[dict, dict]] = {}
# A query is in a language whose function words it holds at least this many of (distinct),
# more than of any other language ("¿Cuáles son...?": "cuáles"): then that language's
# function words that are content words elsewhere (Spanish "son", Dutch "van") are
# function words too, and a word it holds no row holds is looked for in compounds.
LANGUAGE_FUNCTION_WORDS = 1


def _language_terms(db) -> tuple[dict, dict]:
    """Each language's function words, and those it shares with content words elsewhere,
    as ``db`` tokenizes them (once per tokenizer)."""
    key = (db.tokenizer, db.text_version)
    if key not in _LANGUAGE_TERMS:
        by_language, only = stop_words_by_language()
        _LANGUAGE_TERMS[key] = (
            {k: frozenset(t for w in v for t in db.tokens(w)) for k, v in by_language.items()},
            {k: frozenset(t for w in v for t in db.tokens(w)) for k, v in only.items()})
    return _LANGUAGE_TERMS[key]


def query_language(db, terms: list[str]) -> str | None:
    """The language a query's function words say it is in, other than English
    (:func:`_leading_language`); None when they say English, or nothing, or two languages
    alike ("Le son de la guitare" is as Spanish as French)."""
    language = _leading_language(db, set(terms))
    return None if language == "en" else language


def _leading_language(db, asked: set[str]) -> str | None:
    """The language whose function words the terms ``asked`` hold most of (at least
    :data:`LANGUAGE_FUNCTION_WORDS`), more than of any other, English included."""
    plain, _ = _language_terms(db)
    counts = {language: len(asked & words) for language, words in plain.items()}
    best = max(counts.values(), default=0)
    leaders = [language for language, n in counts.items() if n == best]
    return leaders[0] if best >= LANGUAGE_FUNCTION_WORDS and len(leaders) == 1 else None


def query_stop_terms(db, terms: list[str]) -> frozenset[str]:
    """The stop words of a query of ``terms``: :func:`stop_terms`, and the function words
    of the query's language (:func:`query_language`) that are content words elsewhere
    ("¿Cuáles son los horarios?" drops "son"; "my son's school" keeps it)."""
    language = query_language(db, terms)
    _, only = _language_terms(db)
    return stop_terms(db) | only.get(language, frozenset()) if language else stop_terms(db)


# A question word and the word after it that together ask for an amount or a moment ("how
# long did the ride take?", "what day is garbage pickup?"): that word asks, as the question
# word does, and names nothing a row would hold ("long", "day" matched "Long ride every
# Sunday" and "Victoria Day").
QUESTION_PHRASES = {
    "how": ("long", "much", "many", "often", "far", "soon", "old"),
    "what": ("time", "day"), "which": ("day",),
    "wie": ("lange", "viel", "viele", "oft", "weit", "alt"),
}
_PHRASE_TERMS: dict[tuple[str, str], dict[str, frozenset[str]]] = {}


def question_phrase_terms(db, text: str) -> frozenset[str]:
    """The terms of ``text`` that follow a question word they ask with
    (:data:`QUESTION_PHRASES`), as ``db`` tokenizes them."""
    key = (db.tokenizer, db.text_version)
    phrases = _PHRASE_TERMS.get(key)
    if phrases is None:
        phrases = _PHRASE_TERMS[key] = {}
        for asking, words in QUESTION_PHRASES.items():
            for a in db.tokens(asking):
                phrases[a] = phrases.get(a, frozenset()) | frozenset(
                    t for w in words for t in db.tokens(w))
    tokens = db.tokens(text)
    return frozenset(b for a, b in zip(tokens, tokens[1:]) if b in phrases.get(a, ()))


def keyword_terms(db, query: str, at: int | None = None) -> list[str]:
    """The terms the keyword arm ranks by: the query's terms without its stop words
    ("how", "the", "is"; :func:`query_stop_terms`), unless it has nothing else (a search
    for "the who"); a date is one phrase of its terms, or no term at all
    (:func:`date_phrases`; ``at``: the moment the question is about)."""
    phrases, rest = date_phrases(db, query, at)
    terms = query_terms(db, rest)
    stop = query_stop_terms(db, terms) | question_phrase_terms(db, rest)
    kept = [t for t in terms if t not in stop]
    if kept or phrases:
        return kept + phrases
    # stop words alone are searched for ("the who"), unless a date was all the rest
    # ("what did I do last week": its period and meaning rank)
    return terms if rest is query else []


def date_phrases(db, query: str, at: int | None = None) -> tuple[list[str], str]:
    """The phrases of the dates ``query`` names as a note could write them
    (:func:`dates.written_forms`: "March 14", "2026-03-11", "week 11"), each its terms
    joined by a space ("march 14"), and a day or month as each of the ways a note writes
    it, joined by "|" ("march 14|14 march|14th of march|14 märz|..."), once each; a day
    named from the moment ``at`` ("tomorrow", "yesterday") as its day's ways alone; and
    the query without them, nor the other dates it names from that moment ("last week")
    or as spans. A date is its period's to favour, and its words count only together:
    "March" or "2026" alone is in every note of the month or year, "14" in every price,
    "week" in every weekly plan."""
    written, dropped = written_forms(query, at)
    if not written and not dropped:
        return [], query
    rest = unicodedata.normalize("NFKC", query)
    phrases: dict[str, None] = {}
    for date, forms, own in written:
        terms = db.tokens(date)
        alternatives = [" ".join(terms)] if own and len(terms) > 1 else []
        alternatives += [" ".join(words) for form in forms if len(words := db.tokens(form)) > 1]
        if alternatives and (len(terms) > 1 or not own):
            phrases.setdefault(PHRASE_OR.join(dict.fromkeys(alternatives)), None)
            rest = rest.replace(date, " ", 1)
    for date in dropped:
        rest = rest.replace(date, " ", 1)
    return list(phrases), rest


def has_tag(note_tags, wanted: tuple[str, ...]) -> bool:
    """Whether a note's tags include any wanted tag, or a tag nested under one
    (``project`` matches ``project/alpha``)."""
    return any(t == w or t.startswith(w + "/") for t in note_tags for w in wanted)


def rankable(visible: list[RevisionRecord], query: syntax.Query) -> list[RevisionRecord]:
    """The visible revisions a search ranks: notes' records are metadata, not results;
    with tags, only sections of notes whose record (at the same time) has one; with path,
    folder, file or section filters, only the rows they keep. (Phrases and exclusions are
    applied next, by text: :func:`text_filtered`.)"""
    rows = [r for r in visible if not is_record(r.memory_id, r.note)]
    if query.tags:
        allowed = {r.note for r in visible if is_record(r.memory_id, r.note)
                   and has_tag((r.metadata or {}).get("tags", ()), query.tags)}
        rows = [r for r in rows if r.note in allowed]
    return [r for r in rows if syntax.note_matches(query, r.note)
            and syntax.section_matches(query, r.memory_id, r.note)]


def text_filtered(db, ids: list[int], query: syntax.Query,
                  candidates=None) -> list[int]:
    """The rows (revision ids, in order) that hold every phrase and no excluded word or
    phrase, decided by FTS5 over their own text. ``candidates(text)``, when given, narrows
    the rows that can hold a text before FTS5 checks them (the fast path's postings)."""
    keep = set(ids)
    for phrase in query.phrases:
        pool = keep if candidates is None else keep & candidates(phrase)
        keep = db.matching(sorted(pool), phrase)
    for text in query.excluded:
        pool = keep if candidates is None else keep & candidates(text)
        keep -= db.matching(sorted(pool), text)
    return [i for i in ids if i in keep]


@dataclass(frozen=True)
class Semantic:
    """The semantic arm of one search: which vectors (embedder key), the query's vector,
    and the similarity below which a search with no keyword match has no answer (a
    function of how many visible rows have a vector). The vector may still be on its way
    (a Future): a search ranks by keywords while the model encodes the query."""
    key: str
    vector: "np.ndarray | Future[np.ndarray]"
    no_answer_below: Callable[[int], float]
    # How many pieces the model's tokenizer cuts a word into (None: not known).
    word_pieces: Callable[[str], int] | None = None

    @property
    def query(self) -> np.ndarray:
        """The query's vector, once the model has it."""
        return self.vector.result() if isinstance(self.vector, Future) else self.vector


@dataclass
class Ranked:
    """What a search path returns: the results, how many visible rows it could rank only
    by keywords (no vector yet), and why there is no answer when there is none."""
    results: list[SearchResult] = field(default_factory=list)
    unembedded: int = 0
    no_answer: str | None = None
    left_out: int = 0  # unrelated rows the limit would have held (see fuse)
    # how many notes the rows either arm scored belong to (a memory outside notes counts
    # alone): what a search by note counts its places against (MemoryStore.search)
    scored_notes: Callable[[], int] | None = None
    # the notes visible at the search's cutoff, as the fast path holds them (snippets'
    # embeds: timeline.links.search_embeds)
    visible_notes: Callable[[], VisibleNotes] | None = None
    terms: list[str] = field(default_factory=list)  # ranked by (search/variants.py too)
    missing: list[str] = field(default_factory=list)  # see missing_words
    marks: list[str] = field(default_factory=list)  # of terms, worth marking (see marked)


# A query term is marked in a snippet when it carries weight: BM25's idf of at least this
# (a term held by fewer than about a quarter of the rows). "the", "to", "a" carry almost none.
MARK_IDF = 1.0


def marked(terms: list[str], total: int, docs: dict[str, int]) -> list[str]:
    """The ``terms`` worth marking, by their idf over the ``total`` rows the search ranked
    (``docs``: how many of them hold each), never over rows its cutoff does not see;
    when none has weight, the rarest."""
    if len(terms) < 2:
        return terms
    idf = {t: math.log((total - docs.get(t, 0) + 0.5) / (docs.get(t, 0) + 0.5)) for t in terms}
    keep = [t for t in terms if idf[t] >= MARK_IDF]
    keep = keep or [t for t in terms if idf[t] == max(idf.values())]
    # A word of a script without spaces is searched as its pairs of characters: where one
    # of them is worth marking, the whole word is, as the query wrote it (a common pair,
    # the "ート" of テンプレート, alone would stop the mark a character short of the word,
    # and marked alone it would mark every ショート).
    kept = set(keep)
    words = [word for word, pairs in _unspaced_words(terms)
             if len(pairs) > 1 and kept.intersection(pairs)]
    # A lone character (税) is searched as the pairs that hold it (税金, 关税): the character
    # is marked, not the pairs, which reach past it.
    alone = {t for t in terms if lone_character(t)}
    if alone:
        keep = [t for t in keep if not (paired(t) and alone.intersection(t))]
    return keep + words


def _unspaced_words(terms: list[str]) -> list[tuple[str, list[str]]]:
    """The query's words of a script without spaces, from its terms in the query's order:
    each with its pairs of characters (one overlaps the next by a character)."""
    words: list[tuple[str, list[str]]] = []
    previous = ""
    for term in terms:
        if not paired(term):
            pass
        elif paired(previous) and previous[-1] == term[0]:  # the word's last pair
            word, pairs = words[-1]
            words[-1] = (word + term[1:], pairs + [term])
        else:
            words.append((term, [term]))
        previous = term
    return words


NO_WORDS = ("the query has no letters or digits, so nothing can match it; ask with words")


def has_words(query: str) -> bool:
    """Whether a query has something to search for: a letter or a digit (punctuation,
    emoji and symbols alone match nothing, and the semantic model would rank noise)."""
    return any(ch.isalnum() for ch in normalize_text(query))


def mostly_unknown(db, words: str, terms: list[str], held: set[str],
                   semantic: "Semantic | None",
                   held_in: Callable[[list[str]], set[str]]) -> bool:
    """Whether at least half of a query's keyword ``terms`` occur in no row it ranks
    (``held``: those that do) and are no real word (:func:`_real_words`): a made-up name
    beside a common word ("Plonkify account") is not answered by the common word alone;
    a real word the notes happen not to use ("vacation plans", "Sicherung Ordner") leaves
    the answer to the others and to meaning. Without a model every unheld term counts."""
    count = len(terms)
    unknown = count - len(held)
    if count == 0 or 2 * unknown < count:
        return False
    for _ in _real_words(db, words, set(terms) - held, semantic, held_in):
        unknown -= 1
        if 2 * unknown < count:
            return False
    return True


def _pieces(semantic: "Semantic", word: str) -> int:
    """How many pieces the model cuts a word into, as typed or in lower case, whichever
    is fewer: "Console" at a sentence's start is the word console."""
    return min(semantic.word_pieces(word), semantic.word_pieces(word.lower()))


def _words_among(db, words: str, among: set[str]):
    """(word as typed, its term) for each term of the query, once, that is ``among`` the
    terms asked for (those no row holds, its function words), in a script written with
    spaces; a word is what the index reads as one term, digits and all ("juxzac318")."""
    seen: set[str] = set()
    for word, term in db.term_spans(words):
        if term in among and term not in seen and not UNSPACED.search(word):
            seen.add(term)
            yield word, term


def missing_words(db, words: str, terms: list[str], held: set[str],
                  held_in: Callable[[list[str]], set[str]]) -> list[str]:
    """The query's words, as typed and once each, whose term no row it ranks holds
    (``held``: those some row holds, a word found as its parts among them), nor another
    form of (:func:`_inflected`; ``held_in(terms)``: which of these terms a row it ranks
    holds): an answer then rests on its other words and on meaning, and says so. Stop
    words, pairs of characters of a script written without spaces and the words of a date
    the query names (:func:`date_words`: "5th", "yesterday") are no such word."""
    unheld = set(terms) - held - stop_terms(db)
    if not unheld:
        return []
    named = date_words(words)
    return [as_typed(words, word) for word, term in _words_among(db, words, unheld)
            if word.lower() not in named and not _inflected(db, term, held_in)]


# Another form of a word: a term that starts with all of it but its last letters, at least
# this many ("Allergien" for "Allergie", "карта" for "карту", "статуса" for "статус"):
# the keyword arm stems English alone, and a word the notes hold in another form is not
# missing from them.
FORM_LETTERS = 4


def _inflected(db, term: str, held_in: Callable[[list[str]], set[str]]) -> bool:
    """Whether some row the search ranks holds another form of ``term`` (it and that form
    start alike: all of ``term`` but its last two letters, at least
    :data:`FORM_LETTERS`)."""
    if len(term) <= FORM_LETTERS or not term.isalpha():
        return False
    return _held_starting(db, term[:max(FORM_LETTERS, len(term) - 2)], term, held_in)


# A query is taken for one in a language the notes are not written in when at least this
# many of its function words ("wie", "ich", "für") are there and at most half of them are
# in any note it ranks; then a no-answer says so (the model's likeness across languages
# is lower than within one, and no bar tells a foreign question the notes answer from
# one they do not: docs/data-model.md#ranking).
FOREIGN_FUNCTION_WORDS = 2
# ... unless the notes hold at least this many other function words of the query's language
# that no other language has, of four letters or more as the index reads them ("with",
# "from", "about" for English; shorter ones are parts of names and codes: "aux", "san"):
# a few short notes in the query's own language may lack its "what", "did", "do".
OWN_LANGUAGE_WORDS = 3


def foreign_words(db, words: str, held_in: Callable[[list[str]], set[str]]) -> list[str]:
    """The query's function words, as typed and once each, when they say it is written in
    a language the notes do not use (:data:`FOREIGN_FUNCTION_WORDS`), else none."""
    typed = {term: as_typed(words, word)
             for word, term in _words_among(db, words, stop_terms(db) - HIRAGANA_PAIRS)}
    if len(typed) < FOREIGN_FUNCTION_WORDS:
        return []
    held = held_in(sorted(typed))
    if 2 * len(held) > len(typed):
        return []
    own = _own_function_words(db, set(typed))
    if own and len(held_in(sorted(own))) >= OWN_LANGUAGE_WORDS:
        return []
    return [typed[t] for t in typed if t not in held]


def _own_function_words(db, asked: set[str]) -> frozenset[str]:
    """The function words of four letters or more that only the query's language has (as
    ``db`` tokenizes them), but for the query's own: its language is
    :func:`_leading_language`'s, English included; none when two languages tie."""
    language = _leading_language(db, asked)
    if language is None:
        return frozenset()
    plain, _ = _language_terms(db)
    others = frozenset().union(*(t for lang, t in plain.items() if lang != language))
    return frozenset(t for t in plain[language] - others - asked if len(t) >= 4)


def as_typed(words: str, word: str) -> str:
    """A query's word as the query spells it: the index's reading folds letters (Turkish
    ı, the forms of Arabic's letters) that an echo of the query should not."""
    return next(iter(find_folded(words, word)), word)


def _real_words(db, words: str, unheld: set[str], semantic: "Semantic | None",
                held_in: Callable[[list[str]], set[str]]):
    """The ``unheld`` terms that are real words the notes happen not to use, one by one
    (the cheap tests first): numbers, words of a script other than Latin (:func:`latin`),
    words the model reads in at most
    :data:`VOCABULARY_PIECES` pieces of its vocabulary, then words spelled like a term some
    row holds (``held_in(terms)``: which of these terms a row it ranks holds), an
    inflection or a compound of a word of the notes ("markierten", "Systemordners").
    None without a model."""
    if not unheld or semantic is None or semantic.word_pieces is None:
        return
    # A number is never a made-up word; nor is a pair of characters of a script written
    # without spaces (what the index makes of 締め切り), which is no word to judge.
    real = {t for t in unheld if t.isdigit() or UNSPACED.search(t) or is_phrase(t)}
    yield from real
    rest: dict[str, str] = {}
    for word, term in _words_among(db, words, unheld - real):
        if term not in real and (not latin(word)
                                 or _pieces(semantic, word) <= VOCABULARY_PIECES):
            real.add(term)
            yield term
        else:
            rest[term] = word
    for term, word in rest.items():
        if term not in real and (_spelled_like_held(db, term, held_in)
                                 or lexicon.known(word)):
            real.add(term)
            yield term


# A word the model reads in at most this many pieces is taken for a word of some language:
# so are 89% of the help vault's English words, 68-84% of its German, French, Spanish or
# Russian ones, and 16-23% of the made-up words written for the benchmarks; a longer word
# spelled like a held one counts too (docs/data-model.md#ranking).
VOCABULARY_PIECES = 2
# The model's tokenizer cuts a made-up word into this many pieces or more (``Kwibblesoft``:
# K-wibble-soft); so it does some real words (orphanage, chemistry), hence the short query
# asked for as well (docs/data-model.md#ranking).
MADE_UP_PIECES = 3
# A query naming such a word that no visible row holds is still answered when a row is at
# least this much above the no-answer bar in meaning (a name the notes write otherwise);
# so is a query of made-up words alone: a long random string reaches the bar against a
# page of names (the help vault's Credits.md).
MADE_UP_MARGIN = 0.03
# Only in a short query (at most this many words that are not function words, numbers
# aside) is such a word what the query asks about; in a longer question it is one detail
# among others (LoCoMo: "Has Tim been to North Carolina and/or Tennesee states in the US?").
MADE_UP_QUERY_TERMS = 4
# Scripts written without spaces between words (Chinese, Japanese, Korean, Thai, Lao,
# Tibetan, Myanmar, Khmer): a run of them is no one word, and never a made-up word.
UNSPACED = re.compile("[\u0e00-\u0fff\u1000-\u109f\u1780-\u17ff\u2e80-\U0010ffff]")


def lone_character(term: str) -> bool:
    """Whether a query's term is one character of a script written without spaces (which
    the index holds in pairs)."""
    return len(term) == 1 and UNSPACED.search(term) is not None


def latin(word: str) -> bool:
    """Whether a word's letters are all Latin: the model cuts many real words of other
    scripts (Greek, Cyrillic, Arabic) into three pieces or more, so only a Latin word
    is taken for a made-up one."""
    return all(not ch.isalpha() or unicodedata.name(ch, "").startswith("LATIN")
               for ch in word)


def near(a: str, b: str, most: int) -> bool:
    """Whether ``a`` becomes ``b`` in at most ``most`` one-letter edits (Levenshtein)."""
    if abs(len(a) - len(b)) > most:
        return False
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (ca != cb)))
        if min(current) > most:
            return False
        previous = current
    return previous[-1] <= most


def typo_distance(term: str) -> int:
    """How many edits a term may be from a held one and still be its typo."""
    return 1 if len(term) < 8 else 2


# A word that starts like a held term (its first letters) is an inflection or a compound
# of a known word ("Datenschutzeinstellungen", "notlarımı"), not a made-up word.
STEM_LETTERS = 5
STEM_CANDIDATES = 64  # more terms than this start alike: a common stem, a known word


def _spelled_like_held(db, term: str, held: Callable[[list[str]], set[str]]) -> bool:
    """Whether some row the search ranks holds a term that is a typo away from ``term``
    (with the same first letter: "vroom" is no typo of "room") or that starts with its
    first :data:`STEM_LETTERS` letters."""
    if len(term) >= STEM_LETTERS + 2 and _held_starting(db, term[:STEM_LETTERS], term, held):
        return True
    most = typo_distance(term)
    typos = [t for t in db.terms_like(term, most)
             if t != term and t[:1] == term[:1] and near(term, t, most)]
    return bool(typos) and bool(held(typos))


def _held_starting(db, prefix: str, term: str,
                   held: Callable[[list[str]], set[str]]) -> bool:
    """Whether some row the search ranks holds a term other than ``term`` that starts with
    ``prefix``; more than :data:`STEM_CANDIDATES` such terms ever held is a common stem,
    taken for held."""
    found = db.terms_starting(prefix, STEM_CANDIDATES + 1)
    if len(found) > STEM_CANDIDATES:
        return True
    alike = [t for t in found if t != term]
    return bool(alike) and bool(held(alike))


def made_up_word(db, words: str, terms: list[str], unheld: set[str],
                 semantic: Semantic | None,
                 held: Callable[[list[str]], set[str]]) -> str | None:
    """A word of a short query (``terms``: its keyword terms, at most
    :data:`MADE_UP_QUERY_TERMS`), as typed, that looks made up: no row it ranks holds its
    term (``unheld``), the model cuts it into :data:`MADE_UP_PIECES` pieces or more, and
    no row it ranks holds a term spelled like it (``held(terms)``:
    which of these terms a row it ranks holds; candidates come from every term the index
    has ever held, so the answer depends on the rows visible at the cutoff alone). When
    no row holds any of the query's words, only if every one of them looks made up: a
    real word among them ("departure time of the coastal rail") leaves the answer to
    meaning. None when there is none, or no model."""
    asked = [t for t in terms if not t.isdigit() and not is_phrase(t)]  # a version or a
    # date: a detail
    if (not unheld or len(asked) > MADE_UP_QUERY_TERMS or semantic is None
            or semantic.word_pieces is None):
        return None
    stop = stop_terms(db)
    nothing_held = unheld >= set(terms)
    made_up: dict[str, str] = {}
    for word, term in _words_among(db, words, unheld):
        if (term not in stop and not term.isdigit() and latin(word)
                and _pieces(semantic, word) >= MADE_UP_PIECES
                and not _spelled_like_held(db, term, held) and not lexicon.known(word)):
            if not nothing_held:
                return as_typed(words, word)  # beside words some row holds
            made_up[term] = word
    if made_up and all(t in made_up for t in asked if t not in stop):
        return as_typed(words, next(iter(made_up.values())))
    return None


# A path:, file: or section: filter that keeps this many notes at most names them
NAMED_NOTES = 5


def filters_name_notes(query: syntax.Query, notes) -> bool:
    """Whether the query's path, file or section filters left the rows of a few notes
    alone, at most :data:`NAMED_NOTES` (``notes()``: the rows' notes, None for a memory
    outside notes, asked for only when there are such filters: no search without them
    pays for it; ``file:2026-02-11`` keeps the day's journal and its meeting). The user
    named those notes: their sections are the answer however weakly they match the words,
    so the no-answer bar does not apply and no row is left out as unrelated."""
    if not (query.paths or query.files or query.sections):
        return False
    found = set(notes())
    return 0 < len(found) <= NAMED_NOTES and None not in found


def no_answer(keyword_matches: int, best_cosine: float | None, embedded: int,
              semantic: Semantic | None, visible: int = 1, unfiltered: int = 1,
              query: syntax.Query | None = None, unknown: bool = False,
              made_up: str | None = None, named_notes: bool = False,
              dated: int = 0, foreign: Callable[[], list[str]] = list,
              period_unmet: str | None = None) -> str | None:
    """Why a search has no answer, or None when it has one: nothing was visible at all;
    or the query's filters kept none of the ``unfiltered`` visible rows; or it names a
    ``made_up`` word (:func:`made_up_word`: beside words some row holds, or among words
    that all look made up), and no row is :data:`MADE_UP_MARGIN` above the bar in
    meaning; or no row it ranks holds a query word (or, with a model, at least half of
    its words are held by none: ``unknown``), and none is semantically closer than the
    embedder's calibrated threshold for ``embedded`` rows with a vector. A query whose
    filters name a few notes (``named_notes``) is not held to that threshold
    (:func:`filters_name_notes`),
    and one with ``dated`` notes (about a day it names: :func:`dated_notes`) has an
    answer. ``foreign()``: the query's function words no note holds
    (:func:`foreign_words`), named when no word of the query is held. A query that asks
    about a period alone, of which no visible row is (``period_unmet``, the period in
    words: :func:`period_unmet`), has none: rows near it in meaning are about other
    days."""
    if named_notes and semantic is not None and best_cosine is not None:
        return None  # every embedded row of the note is ranked by meaning
    if made_up is not None and semantic is not None and best_cosine is not None:
        plain = semantic.no_answer_below(embedded)
        bar = plain + MADE_UP_MARGIN
        # With no word of the query held, a row below the plain bar is the reason below.
        if best_cosine < bar and (keyword_matches or best_cosine >= plain):
            return (f"no visible memory holds the word {made_up!r}, nor one spelled like "
                    f"it, and the closest in meaning {_below(best_cosine, bar)}")
    if dated or (keyword_matches and not (unknown and semantic is not None)):
        return None  # (a note about a day the query names answers it, as a word would)
    if not visible and unfiltered and query is not None and query.filters():
        return (f"the filter{'s' if len(query.filters()) > 1 else ''} "
                f"{' '.join(query.filters())} left nothing of what was visible then")
    if not visible:
        return ("no memory was visible then: none known by the cutoff was valid at the "
                "valid time, or each was forgotten or deleted by then")
    if period_unmet:
        return (f"{NOTHING_ABOUT}{period_unmet} (the day or period the query names), and it "
                "asks about nothing else")
    if semantic is None or best_cosine is None:
        if keyword_matches:
            return None
        return "no visible memory contains a word of the query" + _in_another(foreign())
    threshold = semantic.no_answer_below(embedded)
    if best_cosine < threshold:
        what = ("most words of the query are in no visible memory" if keyword_matches
                else "no visible memory contains a word of the query")
        return (f"{what}, and the closest in meaning {_below(best_cosine, threshold)}"
                + ("" if keyword_matches else _in_another(foreign())))
    return None


def _in_another(unheld: list[str]) -> str:
    """What a no-answer adds when the query seems to be in a language the notes do not
    use (:func:`foreign_words`)."""
    return (f"; nor does any hold its common words ({', '.join(unheld[:4])}): if the notes "
            f"are in another language, ask in theirs") if unheld else ""


def _below(similarity: float, bar: float) -> str:
    """"(similarity 0.849) is below 0.877", with as many digits as tell them apart (0.8769
    is not "0.877 below 0.877")."""
    digits = 3
    while digits < 6 and f"{similarity:.{digits}f}" == f"{bar:.{digits}f}":
        digits += 1
    return f"(similarity {similarity:.{digits}f}) is below {bar:.{digits}f}"


def padding_floor(semantic: Semantic | None, embedded: int,
                  named_notes: bool = False) -> float | None:
    """The similarity below which a row holding no query word is left out of the results:
    the no-answer bar (the same line that decides there is no answer at all); none when
    the filters name a few notes (:func:`filters_name_notes`)."""
    return semantic.no_answer_below(embedded) if semantic is not None and not named_notes \
        else None


def relating_terms(terms: list[str]) -> list[str] | None:
    """The terms whose presence makes a row related to the query (:func:`unrelated`), or
    None when they are all of ``terms``: a number ("2", "15") is in every numbered list
    and price, so a row holding only the numbers of a query that has words ("tomatoes sow
    indoors 15") holds none of what it asks; a query of numbers alone relates by them."""
    words = [t for t in terms if not t.isdecimal()]
    return words if words and len(words) < len(terms) else None


def unrelated(has_keyword: bool, cosine: float | None, floor: float | None) -> bool:
    return (floor is not None and not has_keyword and cosine is not None
            and cosine < floor)


def left_out(limit: int, scored: int, returned: int) -> int:
    """How many results the limit would have held but were unrelated (see fuse)."""
    return min(limit, scored) - returned


def cosines(matrix64: np.ndarray, query32: np.ndarray) -> np.ndarray:
    """Cosine of float64 rows (float32 values widened) with a float32 query, in float64:
    the formula both search paths use."""
    q = query32.astype(np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix64, matrix64))
    qnorm = float(np.sqrt(q @ q))
    dots = matrix64 @ q
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, dots / (norms * qnorm), 0.0) if qnorm > 0 else dots * 0.0


def result(r: RevisionRecord, score: float, bm25: float | None, bm25_rank: int | None,
           cosine: float | None, cosine_rank: int | None,
           lines: tuple[int, int] | None = None, dated: float = 0.0,
           linked: float = 0.0) -> SearchResult:
    return SearchResult(revision=r, score=score, bm25=bm25, bm25_rank=bm25_rank,
                        cosine=cosine, cosine_rank=cosine_rank, matched_lines=lines,
                        dated=dated, linked=linked)


def piece_lines(db, semantic: "Semantic | None"):
    """``lines(revision id, piece)``: the lines a result's best piece covers (read for the
    returned results only)."""
    if semantic is None:
        return None

    def lines(rid: int, piece: int) -> tuple[int, int] | None:
        return db.piece_lines(semantic.key, [(rid, piece)]).get((rid, piece))
    return lines


def link_graph(visible: list[RevisionRecord]) -> LinkGraph:
    """The links between the notes whose records are among ``visible`` (a cutoff's)."""
    return LinkGraph.of((r.note, r.metadata or {}) for r in visible
                        if is_record(r.memory_id, r.note))


def dated_row(row: RevisionRecord, periods: Named) -> float:
    """What a row gains for being about a span the periods a query names hold
    (:func:`periods.about`, :func:`dates.share`, :func:`ranking.dated_bonus`), or 0."""
    if not periods:
        return 0.0
    return ranking.dated_bonus(row.note is not None) * share(
        about(row.note, parse_time(row.valid_from)), periods)


def period_unmet(terms: list[str], periods: Named,
                 about_then: Callable[[], bool]) -> str | None:
    """When a query asks about the periods it names alone (its keyword ``terms`` are
    none but dates' phrases: "what did I do last week?", "what did I do on March 14?")
    and no row it ranks is about one (``about_then()``): the period, in words
    (:func:`dates.described`). Else None."""
    if periods and all(is_phrase(t) for t in terms) and not about_then():
        return described(periods)
    return None


def dated_notes(rows: dict[int, RevisionRecord], periods) -> list[int]:
    """The rows that are notes' sections about a day the query names: results whether or
    not either arm scored them."""
    return [rid for rid, r in rows.items()
            if r.note is not None and periods and dated_row(r, periods)]


def fuse(rows: dict[int, RevisionRecord], bm25: dict[int, float], cosine: dict[int, float],
         limit: int, floor: float | None = None, pieces: dict[int, int] | None = None,
         lines=None, periods: Named = Named(), graph=None,
         writes: set[int] = frozenset(),
         relating: set[int] | None = None) -> list[SearchResult]:
    """Fused scores of every row either arm scored (keyed by memory ID), ordered and shaped.
    With ``floor`` (the no-answer bar), a row that holds no query word and is less similar
    than the bar is no result: it would only pad the list (:func:`unrelated`). ``pieces``:
    each row's best piece, whose lines ``lines(revision id, piece)`` gives. ``periods``:
    the days and months the query names (a row valid from one of them is favoured);
    ``writes``: the rows that write one of them in their text (gaining
    :data:`ranking.WRITES_DATE` when about none). ``graph()``: the links between notes at
    the cutoff (:func:`link_graph`). ``relating``: the rows holding a query term that
    relates (:func:`relating_terms`; None: every row ``bm25`` scored)."""
    bm25_m = {rows[rid].memory_id: s for rid, s in bm25.items()}
    cos_m = {rows[rid].memory_id: s for rid, s in cosine.items()}
    # rows either arm scored, and notes about a day the query names (not yet embedded,
    # holding no word of it: a daily note just written, asked about as "today")
    by_memory = {rows[rid].memory_id: rid for rid in set(bm25) | set(cosine)
                 | set(dated_notes(rows, periods))}
    top_bm25 = ranking.arm_scale(sorted(bm25_m.values(), reverse=True))
    ordered = sorted(cos_m.values())
    median = ranking.median(ordered) if ordered else 0.0
    top_cos = ranking.arm_scale(ordered[::-1], median)
    dated = {m: bonus for m, rid in by_memory.items()
             if (bonus := dated_row(rows[rid], periods)
                 or (ranking.WRITES_DATE if rid in writes else 0.0))}
    fused = {m: ranking.fused_score(bm25_m.get(m), top_bm25, cos_m.get(m), median, top_cos,
                                    dated=dated.get(m, 0.0))
             for m, rid in by_memory.items()}
    bm25_ranks = ranking.competition_ranks(bm25_m.items(), ranking.bm25_tied)
    cos_ranks = ranking.competition_ranks(cos_m.items(), ranking.cosine_tied)
    # a row about a day the query names is related to it, whatever its words
    related = set(bm25_m) if relating is None else {rows[rid].memory_id for rid in relating}
    kept = [m for m in ranking.fused_order(fused)
            if not unrelated(m in related or m in dated, cos_m.get(m), floor)]
    free = sorted(rid for rid, r in rows.items() if r.note is None)  # not notes' sections
    at = {rid: i for i, rid in enumerate(free)}
    before: dict[str, str] = {}
    after: dict[str, str] = {}
    asking: set[str] = set()
    for m in kept[:ranking.CONTEXT_DEPTH]:
        i = at.get(by_memory[m])
        if i is not None and i > 0:
            before[m] = rows[free[i - 1]].memory_id
            if ranking.asks(rows[free[i - 1]].content):
                asking.add(before[m])
        if i is not None and i + 1 < len(free):
            after[m] = rows[free[i + 1]].memory_id
    kept, fused = ranking.context_order(fused, kept, before, after, asking)
    gained: dict[str, float] = {}
    if graph is not None:
        kept, fused, gained = ranking.linked(kept, fused, {
            m: rows[by_memory[m]].note for m in kept[:ranking.CONTEXT_DEPTH]
            if rows[by_memory[m]].note is not None}, graph)
    out = []
    for m in kept[:limit]:
        co_rank = cos_ranks.get(m)
        rid = by_memory[m]
        matched = (lines(rid, pieces[rid]) if lines is not None and pieces
                   and rid in pieces else None)
        out.append(result(rows[rid], fused[m], bm25_m.get(m), bm25_ranks.get(m),
                          cos_m.get(m), co_rank if co_rank and co_rank <= ranking.SEMANTIC_RANKS
                          else None, matched, dated.get(m, 0.0), gained.get(m, 0.0)))
    return out
