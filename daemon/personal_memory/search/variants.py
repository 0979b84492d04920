"""Forms of a query word that no visible row holds, searched as the held words they are
made of: two words written as one (German compounds), or the compounds it ends ("Suppe"
in "Linsensuppe"), a word with a prefix written onto it (Arabic's article and
conjunctions, Hebrew's), German's umlauts and ß spelled out on a keyboard without them
(Tastenkuerzel, Fussnoten), and one character of a script
written without spaces (税), which the index holds in pairs (税金, 关税); and the other
form of an English verb or noun Porter stems apart (decide, decision), held or not.
docs/data-model.md#ranking"""

from __future__ import annotations

from typing import Callable

from . import lexicon
from .contract import UNSPACED, lone_character, query_language, query_terms, stop_terms
from .text import is_phrase

# Two words some row holds written as one ("Dateiwiederherstellung", "Studentenrabatt":
# Student-en-Rabatt): each of at least COMPOUND_PART letters, the first maybe followed by
# a letter or two that join words in German.
COMPOUND_PART = 4
COMPOUND_LONGEST = 40  # a longer run of letters is no word to take apart
_JOINS = ("", "s", "n", "en", "es", "e")

# A word no row holds that ends a compound some row holds ("Suppe" in "Linsensuppe",
# "Migration" in "Datenmigration"), after at least COMPOUND_PART letters: searched as up
# to COMPOUND_HEADS of those compounds, the shortest first, chosen from the
# COMPOUND_CANDIDATES shortest the index has ever held whose stem ends in the word's, or
# in its stem shortened by up to COMPOUND_STEM_SLACK letters (Porter stems a longer word
# further: datenmigration is "datenmigr", migration "migrat"), and that the word as typed
# after the compound's first part stems to.
COMPOUND_HEADS = 4
COMPOUND_CANDIDATES = 16
COMPOUND_STEM_SLACK = 3

# Prefixes written onto the next word, longest first: Arabic's article and the
# conjunctions and prepositions before it, Hebrew's one-letter words (and, the, in, to,
# from, that, as) and their pairs. A word is found with or without one ("فلتر" finds
# "الفلتر", "ההשקה" finds "השקה"), when at least PREFIXED_REST letters stay.
_PREFIXES = {
    "arabic": ("وال", "بال", "فال", "كال", "لل", "ال", "و", "ف", "ب", "ك", "ل"),
    "hebrew": ("וה", "וב", "ול", "ומ", "וש", "שה", "מה", "כש", "ה", "ו", "ב", "כ", "ל", "מ",
               "ש"),
}
PREFIXED_REST = 3
PREFIXED_FORMS = 3  # at most this many held forms searched for one word
# A lone character is searched as the held pairs that hold it, at most this many (in code
# point order, so that the choice depends on the rows the search sees alone).
PAIRS_OF_ONE = 64


def _script(term: str) -> str | None:
    first = term[:1]
    if "\u0600" <= first <= "\u06ff":
        return "arabic"
    if "\u0590" <= first <= "\u05ff":
        return "hebrew"
    return None


def _splits(term: str, stop: frozenset[str]) -> list[tuple[str, str]]:
    """The ways ``term`` is two words written together, the shortest first part first."""
    if not 2 * COMPOUND_PART <= len(term) <= COMPOUND_LONGEST or not term.isalpha() \
            or UNSPACED.search(term):
        return []
    out = [(head[:len(head) - len(join)], term[i:])
           for i in range(COMPOUND_PART, len(term) - COMPOUND_PART + 1)
           for head in (term[:i],) for join in _JOINS
           if head.endswith(join) and len(head) - len(join) >= COMPOUND_PART]
    return [(a, b) for a, b in out if a not in stop and b not in stop]


def _prefixed(term: str) -> list[str]:
    """``term`` without a prefix written onto it, and with each, in its script."""
    prefixes = _PREFIXES.get(_script(term) or "", ())
    bare = [term[len(p):] for p in prefixes
            if term.startswith(p) and len(term) - len(p) >= PREFIXED_REST]
    return bare + ([p + term for p in prefixes] if len(term) >= PREFIXED_REST else [])


# German written without its letters: ä ö ü as ae oe ue (the index reads ä as a), ß as ss;
# in a word of at least this many letters (a short one, "sue", is more often another word).
_UMLAUTS = (("ae", "a"), ("oe", "o"), ("ue", "u"))
SPELLED_OUT_LETTERS = 6


def _spelled_out(term: str) -> list[str]:
    """``term`` with ae, oe, ue read as the umlauts the index folds to a, o, u, with ss
    read as ß, and with both."""
    if not term.isascii() or not term.isalpha() or len(term) < SPELLED_OUT_LETTERS:
        return []
    folded = term
    for written, letter in _UMLAUTS:
        folded = folded.replace(written, letter)
    forms = [folded, term.replace("ss", "ß"), folded.replace("ss", "ß")]
    return [f for f in dict.fromkeys(forms) if f != term]


# English verbs and the nouns made from them that Porter stems apart (decide: decid,
# decision: decis), as the ends of their stems: a query word is searched in both forms
# when a row holds the other ("what did we decide" finds "Decision: ..."). Each pair is
# a family of words, not one word (include, conclude, exclude; admit, permit, submit).
_DERIVED = (("id", "is"), ("ud", "us"), ("od", "os"), ("ad", "as"), ("mit", "miss"),
            ("ceiv", "cept"), ("scrib", "script"), ("sum", "sumpt"), ("duc", "duct"),
            ("solv", "solut"))
DERIVED_STEM = 5  # the shortest stem read so (bid, said and paid are not derived)


def _derived(term: str) -> list[str]:
    """The other forms of ``term``'s family (:data:`_DERIVED`), as stems."""
    if not term.isascii() or not term.isalpha() or len(term) < DERIVED_STEM:
        return []
    return [term[:-len(a)] + b for pair in _DERIVED for a, b in (pair, pair[::-1])
            if term.endswith(a) and len(term) - len(a) + len(b) >= DERIVED_STEM]


# English verbs whose past tense no stemmer joins to them: a question asks "what did I
# buy", a journal says "bought". Each line a verb, its past tense and participle; forms
# that are as often another word are left out (saw, found, left, felt, fell, rose,
# ground, lay, spoke, stole, wound, led, lit, bit), and so are verbs a stemmer joins
# already or whose forms are function words.
_IRREGULAR = """
arise arose arisen; awake awoke awoken; bear bore borne; beat beaten; become became;
begin began begun; bend bent; bind bound; bleed bled; blow blew blown; break broke
broken; breed bred; bring brought; build built; burn burnt; buy bought; catch caught;
choose chose chosen; cling clung; creep crept; deal dealt; dig dug; draw drew drawn;
dream dreamt; drink drank drunk; drive drove driven; eat ate eaten; feed fed; fight
fought; flee fled; fly flew flown; forbid forbade forbidden; forget forgot forgotten;
forgive forgave forgiven; freeze froze frozen; get got gotten; give gave given; go went
gone; grow grew grown; hang hung; hear heard; hide hid hidden; hold held; keep kept;
kneel knelt; know knew known; lend lent; lose lost; mean meant; meet met; pay paid;
ride rode ridden; ring rang rung; run ran; say said; seek sought; sell sold; send sent;
shake shook shaken; shine shone; shoot shot; shrink shrank shrunk; sing sang sung; sink
sank sunk; sit sat; sleep slept; slide slid; sling slung; speak spoken; spend spent;
spin spun; stand stood; stick stuck; sting stung; stink stank stunk; strike struck;
swear swore sworn; sweep swept; swim swam swum; swing swung; take took taken; teach
taught; tear tore torn; tell told; think thought; throw threw thrown; understand
understood; wake woke woken; wear wore worn; weep wept; win won; write wrote written
"""
_VERBS = [tuple(line.split()) for line in _IRREGULAR.replace("\n", " ").split(";")]


_IRREGULAR_TERMS: dict[str, dict[str, tuple[str, ...]]] = {}  # by the index's tokenizer


def _irregular(db) -> dict[str, tuple[str, ...]]:
    """A verb's term (as the index stems it) -> the terms of its past forms. Not the other
    way: a question's "gone" ("the icon is gone") is no question about going, and the
    verb alone is in far more rows than its past."""
    found = _IRREGULAR_TERMS.get(db.tokenizer)
    if found is None:
        found = {}
        for verb in _VERBS:
            terms = [t for word in verb for t in db.tokens(word)[:1]]
            found.setdefault(terms[0], tuple(t for t in terms[1:] if t != terms[0]))
        _IRREGULAR_TERMS[db.tokenizer] = found
    return found


def _compounds_ending(db, term: str, word: str) -> list[str]:
    """The terms of compounds that end in ``word`` (its term ``term``), as candidates
    (see :data:`COMPOUND_HEADS`)."""
    endings = tuple(term[:k] for k in range(len(term), max(COMPOUND_PART, len(term)
                                                               - COMPOUND_STEM_SLACK) - 1, -1))
    out = []
    for found in db.terms_ending(endings, COMPOUND_PART, COMPOUND_CANDIDATES):
        cut = next(len(found) - len(e) for e in endings if found.endswith(e))
        if db.tokens(found[:cut] + word) == [found]:
            out.append(found)
    return out


def word_parts(db, terms: list[str], held: set[str],
               held_in: Callable[[list[str]], set[str]], words: str = ""
               ) -> dict[str, tuple[str, ...]]:
    """Each of the query's ``terms`` that no row it ranks holds (``held``: those some row
    holds) and that is made of terms some row holds, with those: two words written
    together (the first such split, the shortest first part first), or the word with or
    without a prefix written onto it (up to :data:`PREFIXED_FORMS`, in the order
    tried); and each term whose derived forms (:func:`_derived`, held or not itself) a
    row holds, with them. ``held_in(terms)``: which of these terms a row it ranks holds;
    ``words``: the query as typed (for the compounds a word ends)."""
    stop = stop_terms(db)
    splits, forms, alone, ends = {}, {}, set(), {}
    # compounds only in a query its function words say is not English: English writes
    # few ("word" is no part of "password", nor "land" of "Thailand")
    typed = {term: word.casefold() for word, term in (db.term_spans(words) if words else ())
             if len(term) >= COMPOUND_PART and term.isalpha() and not UNSPACED.search(term)
             } if words and query_language(db, query_terms(db, words)) else {}
    words_only = [t for t in terms if not is_phrase(t)]  # a date's phrase has no forms
    for term in words_only:
        if term not in held and term not in stop:
            splits[term] = _splits(term, stop)
            if lone_character(term):
                alone.add(term)
                forms[term] = db.pairs_holding(term)
            else:
                forms[term] = [f for f in _prefixed(term) + _spelled_out(term)
                               if f not in stop]
            if term in typed:
                ends[term] = _compounds_ending(db, term, typed[term])
    irregular = _irregular(db)
    derived = {t: [f for f in _derived(t) + list(irregular.get(t, ()))
                   if f not in stop and f not in terms]
               for t in words_only if t not in stop}
    asked = {p for pairs in splits.values() for pair in pairs for p in pair}
    asked.update(f for found in forms.values() for f in found)
    asked.update(f for found in derived.values() for f in found)
    asked.update(f for found in ends.values() for f in found)
    have = held_in(sorted(asked)) if asked else set()
    out: dict[str, tuple[str, ...]] = {}
    for term in terms:
        found: tuple[str, ...] = ()
        if term in splits:
            pick = next((pair for pair in splits[term] if set(pair) <= have), None)
            if pick and _known_whole(db, words, term):
                pick = None  # "passport" is no pass and no port, "notebook" no note
            kept = tuple(dict.fromkeys(f for f in forms[term] if f in have))[
                :PAIRS_OF_ONE if term in alone else PREFIXED_FORMS]
            found = pick or kept or tuple(f for f in ends.get(term, ()) if f in have)[
                :COMPOUND_HEADS]
        more = tuple(f for f in derived.get(term, ()) if f in have)
        if found or more:
            out[term] = tuple(dict.fromkeys((*found, *more)))
    return out


def _known_whole(db, words: str, term: str) -> bool:
    """Whether a dictionary knows the query's word of ``term`` as typed, whole: then it is
    no two words written together. Asked only when a split is found (the dictionaries
    take a second to read)."""
    return any(lexicon.known(word) for word, t in (db.term_spans(words) if words else ())
               if t == term)


def with_parts(terms: list[str], parts: dict[str, tuple[str, ...]]) -> list[str]:
    """The terms to rank by: the query's, then the held words its other words are made
    of (once each)."""
    return list(dict.fromkeys([*terms, *(p for found in parts.values() for p in found)]))
