"""Whether a word the notes do not hold is a word of some language: "autumn" or
"reschedule" beside "garlic" or "dentist" is a real word the notes put otherwise, and the
search answers by the query's other words and its meaning; "Snaxlo" beside "pricing" is a
made-up name, and it does not (search/contract.py, :func:`made_up_word`).

The model's tokenizer alone cannot tell: it cuts many everyday words into three pieces
or more, as it does made-up ones. The word lists are pyspellchecker's (word frequencies
of subtitles and other text), read once per process when a query first needs them, and
only their words seen at least :data:`MIN_FREQUENCY` times are kept (about 190,000 words,
20 MB; the rarest are as often misspellings and names as words)."""

from __future__ import annotations

import gzip
import json
import threading
import unicodedata
from importlib import resources

# The languages of Latin script it has lists of, as many of the model's as it covers;
# only Latin words are ever taken for made-up ones (search/contract.py, ``latin``).
LANGUAGES = ("en", "de", "fr", "es", "pt", "it", "nl")
MIN_FREQUENCY = 100

_WORDS: frozenset[str] | None = None
_LOCK = threading.Lock()


def known(word: str) -> bool:
    """Whether ``word`` (as typed, any case) is a word of one of :data:`LANGUAGES`."""
    return unicodedata.normalize("NFC", word).lower() in _words()


def _words() -> frozenset[str]:
    global _WORDS
    if _WORDS is None:
        with _LOCK:
            if _WORDS is None:
                _WORDS = frozenset(_read())
    return _WORDS


def _read():
    """Each language's words seen often enough."""
    folder = resources.files("spellchecker.resources")
    for language in LANGUAGES:
        with folder.joinpath(f"{language}.json.gz").open("rb") as raw:
            counts = json.load(gzip.open(raw))
        yield from (w for w, n in counts.items() if n >= MIN_FREQUENCY)
