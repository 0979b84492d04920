"""Whether a word the notes do not hold is a word of some language: "autumn" or
"reschedule" beside "garlic" or "dentist" is a real word the notes put otherwise, and the
search answers by the query's other words and its meaning; "Snaxlo" beside "pricing" is a
made-up name, and it does not (search/contract.py, :func:`made_up_word`).

The model's tokenizer alone cannot tell: it cuts many everyday words into three pieces
or more, as it does made-up ones. The word lists are pyspellchecker's (word frequencies
of subtitles and other text), read once per process when a query first needs them (or
when a long-running reader warms up), and only their words seen at least
:data:`MIN_FREQUENCY` times are kept (about 190,000 words, 20 MB; the rarest are as often
misspellings and names as words). Decoding the lists takes a second, so the words kept are
also written once to the user's cache folder, one per line, which reads in 0.03 s: a
command-line search holding a word the notes lack no longer waits for the decoding."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import threading
import unicodedata
from importlib import metadata, resources

from ..paths import cache_dir

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
                _WORDS = _cached()
    return _WORDS


def _cached() -> frozenset[str]:
    """The words, from the cache file when it is there and whole (named by the lists'
    version and the choice of words; its first line counts the words after it), else read
    from the lists and the file written (atomically; a folder that cannot be written costs
    only the time)."""
    name = (f"lexicon-{metadata.version('pyspellchecker')}-{MIN_FREQUENCY}-"
            f"{'-'.join(LANGUAGES)}.txt")
    path = cache_dir() / name
    try:
        count, *lines = path.read_text(encoding="utf-8").split("\n")
        if count == str(len(lines)):
            return frozenset(lines)
    except (OSError, UnicodeError):
        pass
    words = frozenset(w for w in _read() if "\n" not in w)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".lexicon-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write("\n".join([str(len(words)), *sorted(words)]))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
    return words


def _read():
    """Each language's words seen often enough."""
    folder = resources.files("spellchecker.resources")
    for language in LANGUAGES:
        with folder.joinpath(f"{language}.json.gz").open("rb") as raw:
            counts = json.load(gzip.open(raw))
        yield from (w for w, n in counts.items() if n >= MIN_FREQUENCY)
