"""Argument rules shared by every reader and writer: non-blank strings within their limits,
valid Unicode, times, result limits, tag filters. Each raises a one-line
:class:`~personal_memory.errors.InvalidArgument` (or ``InvalidTime``) naming the field."""

from __future__ import annotations

import functools
import numbers
import unicodedata
from typing import Callable

from .errors import InvalidArgument
from .limits import (MAX_ID_CHARS, MAX_LIMIT, MAX_NAMESPACE_CHARS, MAX_QUERY_CHARS,
                     MAX_TAGS, SEARCH_GROUPS)
from .notes.front_matter import wanted_tag
from .times import now_micros, parse_moment, parse_time


def text(value: object, field: str, limit: int, *, optional: bool = False) -> str | None:
    """A validated string argument: non-blank, at most ``limit`` characters, no NUL."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{field}: must be a non-empty string")
    if len(value) > limit:
        raise InvalidArgument(f"{field}: {len(value)} characters; the limit is {limit}")
    if "\x00" in value:
        raise InvalidArgument(f"{field}: contains a NUL character")
    return unicode_checked(value, field)


def unicode_checked(value: str, field: str) -> str:
    """``value``, if it can be stored as UTF-8 (no lone surrogates from a bad decode)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgument(f"{field}: not valid Unicode (a lone surrogate "
                              f"U+{ord(value[exc.start]):04X} at position {exc.start})") from None
    return value


def namespace_arg(value: object) -> str:
    return text(value, "namespace", MAX_NAMESPACE_CHARS)


def memory_id_arg(value: object) -> str:
    return text(value, "memory_id", MAX_ID_CHARS)


def note_arg(value: object) -> str:
    """A note's ID (``COLLECTION/path.md``); a trailing ``#`` (its record's ID) is dropped.
    NFC, as paths are stored: a name typed or pasted decomposed (macOS) is the same note."""
    return unicodedata.normalize("NFC", text(value, "note", MAX_ID_CHARS).rstrip("#"))


def optional_time(value: object, field: str) -> int | None:
    """A start or a stored time: a bare day is its first moment."""
    return None if value is None else parse_time(value, field)


def optional_cutoff(value: object, field: str = "as_of",
                    now: Callable[[], int] = now_micros) -> int | None:
    """A cutoff one looks back from: a bare day is its last moment (see ``times``);
    ``now`` and a span back (``7d``) count from ``now()``, the store's now (never before
    its newest revision: a clock behind it would hide what "now" must see)."""
    return None if value is None else parse_moment(value, field, now(), day_end=True)


def query_arg(query: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("query: must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"query: {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
    return unicode_checked(query, "query")


def whole_number(value: object, field: str, least: int, most: int | None = None) -> int:
    """A whole number from ``least`` (to ``most``), as Python's ``int`` (a numpy or pandas
    integer is one too; a bool, a float or a string is not)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = int(value)
        if value >= least and (most is None or value <= most):
            return value
    span = f"from {least} to {most}" if most is not None else f"from {least} on"
    raise InvalidArgument(f"{field}: {value!r} is not a whole number {span}")


def limit_arg(limit: object, maximum: int = MAX_LIMIT) -> int:
    return whole_number(limit, "limit", 1, maximum)


def group_arg(group: object) -> str | None:
    """How search results are grouped: None (each ranked row), or one of SEARCH_GROUPS."""
    if group is None or (isinstance(group, str) and group in SEARCH_GROUPS):
        return group
    raise InvalidArgument(f"group: {group!r} is not one of "
                          f"{', '.join(map(repr, SEARCH_GROUPS))} or None")


def offset_arg(offset: object) -> int:
    return whole_number(offset, "offset", 0)


def tags_arg(tags: object) -> tuple[str, ...] | None:
    """The tags filter, normalised (None or empty: no filter)."""
    if tags is None:
        return None
    if isinstance(tags, str) or not isinstance(tags, (list, tuple, set, frozenset)):
        raise InvalidArgument("tags: must be a list of tag names")
    if len(tags) > MAX_TAGS:
        raise InvalidArgument(f"tags: {len(tags)} given; the limit is {MAX_TAGS}")
    out: dict[str, None] = {}
    for tag in tags:
        if not isinstance(tag, str) or not wanted_tag(tag):
            raise InvalidArgument(f"tags: {tag!r} is not a tag name")
        out.setdefault(wanted_tag(unicode_checked(tag, "tags")), None)
    return tuple(out) or None


def moment(as_of: object, valid_at: object,
           now: Callable[[], int] = now_micros) -> tuple[int | None, int]:
    """The cutoff (None: everything known) and the valid time, which defaults to the
    cutoff, or to ``now()`` (the store's: never before its newest revision). A cutoff
    after now is now, the time echoed: what arrives later must not change its answer."""
    now = functools.cache(now)  # the store's now is read once (a query each time)
    cutoff = optional_cutoff(as_of, "as_of", now)
    if cutoff is not None:
        cutoff = min(cutoff, now())
    at = optional_cutoff(valid_at, "valid_at", now)
    if at is None:
        at = now() if cutoff is None else cutoff
    return cutoff, at
