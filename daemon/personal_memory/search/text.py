"""Text as it is indexed and queried: one Unicode normalisation for every path."""

from __future__ import annotations

import re
import unicodedata

# Han ideographs and Japanese kana: written without spaces, so each character is a term.
_CJK = re.compile("([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                  "\U00020000-\U0002fa1f])")


def normalize_text(text: str) -> str:
    """The text as indexed and queried: NFKC (compatibility forms and decomposed accents
    match their composed form), with Han and kana characters set apart so that FTS5's
    unicode61 tokenizer makes each one a term instead of a whole unspaced sentence."""
    text = unicodedata.normalize("NFKC", text)
    return _CJK.sub(r" \1 ", text) if _CJK.search(text) else text
