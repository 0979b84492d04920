"""The built-in embedding: a signed, hashed 256-dimension vector of words and word pairs.

It is a reproducible lexical baseline that works offline, not a semantic model. The
version string is recorded in each database; a database built with another version is
refused, because its stored vectors would no longer be comparable with new queries.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import struct
import unicodedata

DIMENSIONS = 256
EMBEDDING_VERSION = "hashed-words-pairs-256-v1"
_WORD = re.compile(r"[^\W_]+")
_PACK = struct.Struct(f"<{DIMENSIONS}f")


def normalize_text(text: str) -> str:
    """NFKC, so that compatibility forms and decomposed accents index like their composed form."""
    return unicodedata.normalize("NFKC", text)


def words(text: str) -> list[str]:
    return _WORD.findall(normalize_text(text).casefold())


@functools.lru_cache(maxsize=262_144)
def _bucket(feature: str) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % DIMENSIONS, (1.0 if (value >> 63) & 1 else -1.0)


def embed(text: str) -> bytes | None:
    """Unit-length float32 vector as a little-endian BLOB, or None when the text has no words."""
    tokens = words(text)
    vec = [0.0] * DIMENSIONS
    features = tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:])]
    for feature in features:
        index, sign = _bucket(feature)
        vec[index] += sign
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        return None
    return _PACK.pack(*(v / norm for v in vec))


def unpack(blob: bytes) -> tuple[float, ...]:
    return _PACK.unpack(blob)
