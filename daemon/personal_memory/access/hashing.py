"""Tokens and the passphrase as they are kept: a token is random (256 bits) and stored as
its SHA-256 (a fast hash is enough for a secret nobody chose); the passphrase is chosen
by a person, so only a slow, salted scrypt hash of it is kept."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

# The kinds of secret and the prefix each carries, so that a leaked one is recognisable
# (secret scanners) and a refresh token sent as a bearer token is told apart.
PREFIXES = {"access": "pm_at_", "refresh": "pm_rt_", "static": "pm_st_", "code": "pm_ac_"}
_FORM = re.compile(r"pm_(?:at|rt|st|ac)_[A-Za-z0-9_-]{43}")
MIN_PASSPHRASE_CHARS = 10
MAX_PASSPHRASE_CHARS = 1024
# scrypt at 2**15 x 8: about 32 MB and a few tens of ms a try.
_SCRYPT = dict(n=2 ** 15, r=8, p=1, maxmem=64 * 1024 * 1024, dklen=32)


def new_secret(kind: str) -> str:
    return PREFIXES[kind] + secrets.token_urlsafe(32)


def well_formed(token: str) -> bool:
    return _FORM.fullmatch(token) is not None


def kind_of(token: str) -> str | None:
    return next((k for k, p in PREFIXES.items() if token.startswith(p)), None)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


CLIENT_SECRET_PREFIX = "sha256$"


def hash_client_secret(secret: str) -> str:
    """A registered client's secret as kept: random like a token, so SHA-256 is enough."""
    return CLIENT_SECRET_PREFIX + digest(secret)


def client_secret_matches(given: str, kept: str) -> bool:
    return kept.startswith(CLIENT_SECRET_PREFIX) and hmac.compare_digest(
        hash_client_secret(given).encode(), kept.encode())


def hash_passphrase(passphrase: str) -> str:
    salt = secrets.token_bytes(16)
    key = hashlib.scrypt(passphrase.encode(), salt=salt, **_SCRYPT)
    return "scrypt$" + "$".join(base64.b64encode(x).decode() for x in (salt, key))


def passphrase_matches(passphrase: str, stored: str) -> bool:
    try:
        _, salt, key = stored.split("$")
        given = hashlib.scrypt(passphrase.encode()[:4 * MAX_PASSPHRASE_CHARS],
                               salt=base64.b64decode(salt), **_SCRYPT)
    except ValueError:
        return False
    return hmac.compare_digest(given, base64.b64decode(key))
