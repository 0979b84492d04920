"""Text as it is indexed and queried: one Unicode normalisation for every path.

Chinese and Japanese are written without spaces, and FTS5's unicode61 tokenizer would make
a whole unspaced sentence one term. Runs of Han ideographs, hiragana and katakana are
therefore indexed as overlapping pairs of characters (bigrams, as search engines' CJK
analyzers do): バックアップ reads as バッ ック クア アッ ップ, so a word ranks as a word,
not as characters found one by one. The version of this rule is recorded in the
database; a file indexed by another is re-indexed from its revisions (the derived index
only), and a reader normalises queries the way its file was indexed.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

TEXT_VERSION = "nfkc+cjk-bigrams"
LEGACY_TEXT_VERSION = "nfkc+cjk-chars"  # files indexed before the version was recorded

_CJK_CHAR = ("\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
             "\U00020000-\U0002fa1f")
_CJK = re.compile(f"([{_CJK_CHAR}])")
_CJK_RUN = re.compile(f"[{_CJK_CHAR}]+")


def _bigrams(match: re.Match) -> str:
    run = match.group(0)
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "


def normalize_text(text: str, version: str = TEXT_VERSION) -> str:
    """The text as indexed and queried: NFKC (compatibility forms and decomposed accents
    match their composed form), then CJK runs as bigrams (or, for files indexed by the
    previous rule, each character apart)."""
    text = unicodedata.normalize("NFKC", text)
    if not _CJK.search(text):
        return text
    if version == LEGACY_TEXT_VERSION:
        return _CJK.sub(r" \1 ", text)
    return _CJK_RUN.sub(_bigrams, text)


def model_text(text: str) -> str:
    """The text a semantic model reads: NFKC only (it has its own tokenizer)."""
    return unicodedata.normalize("NFKC", text)


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """Function words of the main languages (data/stopwords.txt): they never make a
    result count as matching and never pull the keyword score."""
    text = (Path(__file__).parent / "data" / "stopwords.txt").read_text(encoding="utf-8")
    return frozenset(word for line in text.splitlines() if not line.startswith("#")
                     for word in line.split())
