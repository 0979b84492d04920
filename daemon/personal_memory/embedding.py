"""The built-in embedding: a signed, hashed 256-dimension vector of words and word pairs.

It is a reproducible lexical baseline that works offline, not a semantic model. The
version string is recorded in each database; a database built with another version is
refused, because its stored vectors would no longer be comparable with new queries.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

import numpy as np

DIMENSIONS = 256
EMBEDDING_VERSION = "hashed-word-pair-counts-256-v1"
_WORD = re.compile(r"[^\W_]+")


# Han ideographs and Japanese kana: written without spaces, so each character is a term.
_CJK = re.compile("([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                  "\U00020000-\U0002fa1f])")


def normalize_text(text: str) -> str:
    """The text as indexed and queried: NFKC (compatibility forms and decomposed accents
    match their composed form), with Han and kana characters set apart so that FTS5's
    unicode61 tokenizer makes each one a term instead of a whole unspaced sentence."""
    text = unicodedata.normalize("NFKC", text)
    return _CJK.sub(r" \1 ", text) if _CJK.search(text) else text


def words(text: str) -> list[str]:
    return _WORD.findall(normalize_text(text).casefold())


_HASHES: dict[str, int] = {}
_MAX_CACHED_HASHES = 500_000


def _word_hash(word: str) -> int:
    value = _HASHES.get(word)
    if value is None:
        value = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(),
                               "little")
        if len(_HASHES) >= _MAX_CACHED_HASHES:
            _HASHES.clear()
        _HASHES[word] = value
    return value


def _mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An order-sensitive 64-bit hash of two word hashes (splitmix64's finaliser)."""
    x = a * np.uint64(0x9E3779B97F4A7C15) + b
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def counts(text: str) -> np.ndarray | None:
    """The signed bucket counts of a text (float64 integers), or None without words.

    Each word and each adjacent word pair adds +1 or -1 (by one bit of its hash) to one of
    256 buckets (by the hash modulo 256)."""
    tokens = words(text)
    if not tokens:
        return None
    get = _HASHES.get
    hashes = np.array([get(t) or _word_hash(t) for t in tokens], dtype=np.uint64)
    features = np.concatenate([hashes, _mix(hashes[:-1], hashes[1:])])
    buckets = (features % np.uint64(DIMENSIONS)).astype(np.intp)
    signs = np.where((features >> np.uint64(63)) == 1, 1.0, -1.0)
    return np.bincount(buckets, weights=signs, minlength=DIMENSIONS)


def embed(text: str) -> bytes | None:
    """The bucket counts as a little-endian float32 BLOB (exact: they are small integers),
    or None when the text has no words or every bucket cancels out.

    Cosine similarity normalises, so the vector is stored unnormalised: dot products of
    integer vectors are then exact in any summation order, and every implementation
    (numpy, the fast path, sqlite-vec up to its float32 division) agrees."""
    vec = counts(text)
    if vec is None or not vec.any():
        return None
    return vec.astype("<f4").tobytes()
