"""Text as it is indexed and queried: one Unicode normalisation for every path.

Chinese and Japanese are written without spaces, and FTS5's unicode61 tokenizer would make
a whole unspaced sentence one term. Runs of Han ideographs, hiragana and katakana are
therefore indexed as overlapping pairs of characters (bigrams, as search engines' CJK
analyzers do): バックアップ reads as バッ ック クア アッ ップ, so a word ranks as a word,
not as characters found one by one. Thai, Lao, Khmer and Myanmar runs are read the same
way, by pairs of characters with their marks, and a Korean word both as written and by
pairs of syllables (its particles are written onto it). The version of this rule is
recorded in the database; a file indexed by another is re-indexed from its revisions (the derived index
only), and a reader normalises queries the way its file was indexed.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from functools import lru_cache
from pathlib import Path

TEXT_VERSION = ("nfkc+no-format+persian-parts+no-points+letter-folds-2+han-simplified"
                "+cjk-hangul-sea-bigrams+names+properties")
LEGACY_TEXT_VERSION = "nfkc+cjk-chars"  # files indexed before the version was recorded
_FORMAT_KEPT_VERSIONS = (LEGACY_TEXT_VERSION, "nfkc+cjk-bigrams")
_CJK_ONLY_VERSIONS = (*_FORMAT_KEPT_VERSIONS, "nfkc+no-format+cjk-bigrams")
_UNFOLDED_VERSIONS = (*_CJK_ONLY_VERSIONS,
                      "nfkc+no-format+no-points+cjk-hangul-sea-bigrams")
_NAMELESS_VERSIONS = (*_UNFOLDED_VERSIONS,
                      "nfkc+no-format+no-points+letter-folds+cjk-hangul-sea-bigrams")
# Folded letters by the first table, and a ZWNJ dropped everywhere (see _ZWNJ_WORD).
_FIRST_FOLD_VERSIONS = (
    "nfkc+no-format+no-points+letter-folds+cjk-hangul-sea-bigrams",
    "nfkc+no-format+no-points+letter-folds+cjk-hangul-sea-bigrams+names+properties")

# Invisible format characters a reader does not see inside a word (soft hyphen, zero-width
# space and joiners, word joiner, byte order mark, bidi marks, embeddings, overrides and
# isolates): dropped, so that the word is found by the word as read.
_FORMAT = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                     "\u2066-\u2069\ufeff]")

# Dropped too: variation selectors (an emoji's ⚠️ presentation), invisible marks the
# tokenizer would glue to the next word ("⚠️Warning"); and the optional vowel points of
# Arabic (harakat, and the tatweel that stretches a word) and Hebrew (niqqud, cantillation),
# which most text leaves out, so that مُحَمَّد is محمد and שָׁלוֹם is שלום.
_OPTIONAL = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\u0591-\u05bd\u05bf\u05c1"
                        "\u05c2\u05c4\u05c5\u05c7\u0610-\u061a\u0640\u064b-\u065f"
                        "\u0670\u06d6-\u06dc\u06df-\u06e8\u06ea-\u06ed]")

# Letters people often type as another, which the tokenizer does not fold as it folds
# accents: Polish ł, Croatian đ, Danish ø, Turkish dotless ı, Maltese ħ, Sami ŧ, Catalan ŀ
# as their plain letter; Russian ё as е; the forms of Arabic alef (أ إ آ ٱ) as ا, alef
# maksura ى as ي and ta marbuta ة as ه (as Arabic search engines read them). One letter
# for one, so a line keeps its length. And the nukta of Indic scripts, which many leave
# out (फ़्लाइट is found as फ्लाइट), is dropped like a vowel point.
_FIRST_LETTER_FOLDS = str.maketrans("łŁđĐøØıħĦŧŦŀĿёЁأإآٱىة", "lLdDoOihHtTlLеЕاااايه")


def _greek_folds() -> dict[int, str]:
    """Greek letters with a tonos, dialytika or the marks of polytonic Greek as their
    plain letter (ημερήσιες is ημερησιες; capitals are written without them): the
    index's tokenizer removes the accents of Latin letters only."""
    out = {}
    for cp in (*range(0x0370, 0x0400), *range(0x1F00, 0x2000)):
        parts = unicodedata.normalize("NFD", chr(cp))
        if len(parts) > 1 and unicodedata.name(parts[0], "").startswith("GREEK") \
                and all(unicodedata.combining(c) for c in parts[1:]):
            out[cp] = parts[0]
    return out


@lru_cache(maxsize=1)
def _han_folds() -> dict[int, str]:
    """Traditional Chinese characters as their simplified form (備份 is 备份, 關係 is 关系),
    one for one, by OpenCC's table: a note written in one script is found by a query typed
    in the other, as by a Japanese kanji written in its older form."""
    from opencc import OpenCC
    simplified = OpenCC("t2s").convert
    out = {}
    for first, last in ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0x20000, 0x2FA1F)):
        for cp in range(first, last + 1):
            ch = simplified(chr(cp))
            if len(ch) == 1 and ch != chr(cp):
                out[cp] = ch
    return out


# The folds of this rule: the first table's, Persian yeh and keheh (ی ک) as Arabic yeh and
# kaf (ي ك), which keyboards of the two languages type either, and Greek letters without
# their accents; then traditional Chinese as simplified (its table is built on first use,
# in 0.1 s, by a process that meets a Han character).
_LETTER_FOLDS = {**_FIRST_LETTER_FOLDS, **str.maketrans("یک", "يك"), **_greek_folds()}
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U0002fa1f]")


def _fold_letters(text: str, version: str) -> str:
    """``text`` with the letters of a version's rule folded, one for one."""
    if version in _UNFOLDED_VERSIONS:
        return text
    if version in _FIRST_FOLD_VERSIONS:
        return text.translate(_FIRST_LETTER_FOLDS)
    text = text.translate(_LETTER_FOLDS)
    return text.translate(_han_folds()) if _HAN.search(text) else text


# A zero-width non-joiner between Arabic-script letters separates the parts of a Persian
# word (فایل‌ها, "files"; پشتیبان‌گیری): the word is indexed by its parts, so فایل finds
# it, and whole, as it is also typed (فایلها). A query asks for the word whole (its parts
# would match every note that holds one of them, as search engines' decompounding reads
# compounds on the index side only). Elsewhere (Indic scripts) a ZWNJ only shapes the
# letters around it and is dropped with the other invisible characters.
_ARABIC_SCRIPT = "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff"
_ZWNJ_WORD = re.compile(f"[{_ARABIC_SCRIPT}]+(?:\u200c[{_ARABIC_SCRIPT}]+)+")


def _parts_and_whole(match: re.Match) -> str:
    word = match.group(0)
    return f"{word.replace(chr(0x200c), ' ')} {word.replace(chr(0x200c), '')}"


_NUKTA = re.compile("[\u093c\u09bc\u0a3c\u0abc\u0b3c\u0cbc]")

_CJK_CHAR = ("\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
             "\U00020000-\U0002fa1f")
_CJK = re.compile(f"([{_CJK_CHAR}])")
_CJK_RUN = re.compile(f"[{_CJK_CHAR}]+")


def _char_class(blocks: tuple[tuple[int, int], ...], categories: str) -> str:
    """A regex character class body: the characters of ``blocks`` whose Unicode general
    category starts with one of ``categories``, as ranges."""
    ranges: list[list[int]] = []
    for first, last in blocks:
        for cp in range(first, last + 1):
            if unicodedata.category(chr(cp))[0] in categories:
                if ranges and ranges[-1][1] == cp - 1:
                    ranges[-1][1] = cp
                else:
                    ranges.append([cp, cp])
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                   for a, b in ranges)


# Thai, Lao, Myanmar and Khmer (and their extensions): letters and their combining marks.
_SEA_BLOCKS = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x19E0, 0x19FF),
               (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F))
_SEA_CHAR = _char_class(_SEA_BLOCKS, "LM")
_SEA_RUN = re.compile(f"[{_SEA_CHAR}]+")
# Korean words take their particles and endings without a space (노트를, 노트에서: "the
# note", "in the note"), so a word is found inside them only by pairs of syllables too,
# as search engines' CJK analyzers read Hangul.
_HANGUL_CHAR = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
_HANGUL_RUN = re.compile(f"[{_HANGUL_CHAR}]+")
_SPLIT = re.compile(f"[{_CJK_CHAR}{_HANGUL_CHAR}{_SEA_CHAR}]")


def clusters(run: str) -> list[str]:
    """A run cut into characters, each with the combining marks that follow it."""
    out: list[str] = []
    for ch in run:
        if out and unicodedata.category(ch)[0] == "M":
            out[-1] += ch
        else:
            out.append(ch)
    return out


def _pairs(units) -> str:
    """Overlapping pairs of ``units`` as terms (one unit alone is a term by itself)."""
    if len(units) == 1:
        return f" {units[0]} "
    return " " + " ".join(units[i] + units[i + 1] for i in range(len(units) - 1)) + " "


def _sea_bigrams(match: re.Match) -> str:
    return _pairs(clusters(match.group(0)))


def _bigrams(match: re.Match) -> str:
    return _pairs(match.group(0))


def indexes_names_and_properties(version: str) -> bool:
    """Whether a file indexed by this rule indexes a note's file name with its title and
    its other properties with its first section (see ``Connection.keyword_texts``)."""
    return version not in _NAMELESS_VERSIONS


def normalize_text(text: str, version: str = TEXT_VERSION, query: bool = False) -> str:
    """The text as indexed and queried: invisible format characters dropped, NFKC
    (compatibility forms and decomposed accents match their composed form), variation
    selectors and Arabic and Hebrew vowel points dropped, then runs of CJK, Hangul, Thai,
    Lao, Khmer and Myanmar as bigrams (or, for files indexed by the previous rules, CJK alone,
    or each character apart, or with format characters kept). ``query``: a query's text,
    whose Persian words are read whole (see _ZWNJ_WORD)."""
    if text.isascii():  # nothing in it to drop, compose or cut (by every rule)
        return text
    if version not in _FORMAT_KEPT_VERSIONS:
        if not query and version not in _FIRST_FOLD_VERSIONS \
                and version not in _UNFOLDED_VERSIONS:
            text = _ZWNJ_WORD.sub(_parts_and_whole, text)
        text = _FORMAT.sub("", text)
    text = unicodedata.normalize("NFKC", text)
    if version in _CJK_ONLY_VERSIONS:
        if not _CJK.search(text):
            return text
        if version == LEGACY_TEXT_VERSION:
            return _CJK.sub(r" \1 ", text)
        return _CJK_RUN.sub(_bigrams, text)
    text = _OPTIONAL.sub("", text)
    if version not in _UNFOLDED_VERSIONS:
        text = _fold_letters(_NUKTA.sub("", text), version)
    if not _SPLIT.search(text):
        return text
    text = _CJK_RUN.sub(_bigrams, text)
    return _SEA_RUN.sub(_sea_bigrams, _HANGUL_RUN.sub(_word_and_bigrams, text))


def _word_and_bigrams(match: re.Match) -> str:
    run = match.group(0)
    return f" {run} " if len(run) <= 2 else f" {run} " + _pairs(run)


def without_optional(text: str,
                     version: str = TEXT_VERSION) -> tuple[str, list[int] | None]:
    """``text`` without the marks :func:`normalize_text` drops as optional (vowel points,
    variation selectors, nuktas) and with its letters folded as it folds them, and where
    each character kept stands in ``text`` (None when none is dropped)."""
    folds = version not in _UNFOLDED_VERSIONS
    if folds and not text.isascii():
        text = _fold_letters(text, version)
    optional = _OPTIONAL.match if not folds else (
        lambda ch: _OPTIONAL.match(ch) or _NUKTA.match(ch))
    if not _OPTIONAL.search(text) and not (folds and _NUKTA.search(text)):
        return text, None
    where = [i for i, ch in enumerate(text) if not optional(ch)]
    return "".join(text[i] for i in where), where


def _unspaced_letters(term: str) -> int:
    """How many characters (marks aside) a run of a script written without spaces has; 0
    for any other term."""
    if _SPLIT.match(term) is None or " " in term:
        return 0
    return sum(unicodedata.category(ch)[0] != "M" for ch in term)


def unspaced(term: str) -> bool:
    """Whether a term is a run of a script written without spaces: a pair the index holds,
    or a query's word of one character or more, whose pairs it holds."""
    return _unspaced_letters(term) > 0


def paired(term: str) -> bool:
    """Whether an index term is a pair of characters of a script written without spaces
    (what :func:`normalize_text` makes of its runs)."""
    return _unspaced_letters(term) == 2


@lru_cache(maxsize=1)
def marks() -> str:
    """A regex character class body: every combining mark (vowel signs, viramas, tone
    marks, accents), which Python's ``\\w`` leaves out and which belong to their word."""
    return _char_class(((0x0300, 0x1FFFF),), "M")


def model_text(text: str) -> str:
    """The text a semantic model reads: NFKC only (it has its own tokenizer)."""
    return unicodedata.normalize("NFKC", text)


@lru_cache(maxsize=65536)
def _fold_char(ch: str) -> str:
    if _FORMAT.match(ch):
        return ""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", ch).casefold())
    return _fold_letters("".join(c for c in decomposed if not unicodedata.combining(c)),
                         TEXT_VERSION)


def fold(text: str) -> str:
    """``text`` as a word is matched whatever its form: what :func:`normalize_text` and
    the index's tokenizer (case folding, diacritics removed) make equal is equal here
    (NFD and NFC, full-width and ASCII, any case, format characters dropped). Character by
    character, so :func:`find_folded` can map a match back to the text as written."""
    if text.isascii():
        return text.lower()
    return "".join(map(_fold_char, text))


def find_folded(text: str, needle: str) -> list[str]:
    """Every occurrence in ``text`` of what folds to ``fold(needle)``, as written in
    ``text`` (the exact characters, format characters inside it included)."""
    wanted = fold(needle)
    if not wanted or not text:
        return []
    if text.isascii():
        if not wanted.isascii():
            return []
        low, found = text.lower(), []
        at = low.find(wanted)
        while at >= 0:  # overlapping, as the other path counts them
            found.append(text[at:at + len(wanted)])
            at = low.find(wanted, at + 1)
        return found
    parts = [_fold_char(ch) for ch in text]
    folded = "".join(parts)
    starts, pos = [], 0  # the folded offset where each character's folding starts
    for part in parts:
        starts.append(pos)
        pos += len(part)
    found, at = [], folded.find(wanted)
    while at >= 0:
        first = _char_at(starts, parts, at)
        last = _char_at(starts, parts, at + len(wanted) - 1)
        while (last + 1 < len(parts) and not parts[last + 1]
               and unicodedata.combining(text[last + 1])):  # its accents, as written
            last += 1
        found.append(text[first:last + 1])
        at = folded.find(wanted, at + 1)
    return found


def _char_at(starts: list[int], parts: list[str], offset: int) -> int:
    """The index of the character whose folding covers folded ``offset``."""
    i = bisect_right(starts, offset) - 1
    while not parts[i]:  # an empty folding covers nothing: step back to the one that does
        i -= 1
    return i


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """Function words of the main languages (data/stopwords.txt): they never make a
    result count as matching and never pull the keyword score."""
    return frozenset(word for words in stop_words_by_language()[0].values() for word in words)


_LANGUAGE = re.compile(r"# ([a-z]{2})(?: \(.*)?")


@lru_cache(maxsize=1)
def stop_words_by_language() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """Each language's function words (:func:`stop_words`), and its function words that
    are content words elsewhere (Spanish "son", Dutch "van"; the file's "?" lines), which
    count only in a query written in that language (contract.query_stop_terms)."""
    text = (Path(__file__).parent / "data" / "stopwords.txt").read_text(encoding="utf-8")
    words: dict[str, set[str]] = {}
    only: dict[str, set[str]] = {}
    language = ""
    for line in text.splitlines():
        if (m := _LANGUAGE.fullmatch(line)) is not None:
            language = m.group(1)
        elif line.startswith("?"):
            only.setdefault(language, set()).update(line[1:].split())
        elif not line.startswith("#"):
            words.setdefault(language, set()).update(line.split())
    return ({k: frozenset(v) for k, v in words.items()},
            {k: frozenset(v) for k, v in only.items()})


PHRASE_OR = "|"  # between the phrases of a term held as any of them (a date's forms)


def is_phrase(term: str) -> bool:
    """Whether a keyword term is a phrase of several (a date's: contract.date_phrases), or
    any of several such phrases (:func:`alternatives`); a term the index holds is never
    written with a space or "|"."""
    return " " in term


def alternatives(term: str) -> list[str]:
    """The phrases a term is held as, any of them (a date's ways to be written: "march
    14|14 march"); a word or a single phrase is its own one. BM25 counts each as a
    phrase of its own, as FTS5 counts the phrases of an OR."""
    return term.split(PHRASE_OR)


def holds_term(terms: list[str], term: str) -> bool:
    """Whether a text of ``terms`` (as the index reads it, in order) holds ``term``: a
    word anywhere, a phrase as its words one after another."""
    return term in terms if not is_phrase(term) else instances(terms, term) > 0


def instances(terms: list[str], phrase: str) -> int:
    """How many times a text of ``terms`` holds ``phrase`` (its words one after another),
    each place it starts counted, as FTS5 counts a phrase's instances (of any of its
    :func:`alternatives`, summed)."""
    count = 0
    for alternative in alternatives(phrase):
        wanted = alternative.split(" ")
        size = len(wanted)
        count += sum(1 for i, t in enumerate(terms)
                     if t == wanted[0] and terms[i:i + size] == wanted)
    return count
