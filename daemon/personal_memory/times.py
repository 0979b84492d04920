"""Time parsing and formatting: every time is stored as UTC microseconds since the epoch.

Accepted: ``YYYY-MM-DD`` and ISO 8601 timestamps that carry a zone (``Z`` or ``+HH:MM``),
or aware ``datetime`` objects. Anything else is rejected rather than guessed, because a
silently shifted cutoff would leak or hide knowledge.

One rule for a bare day: as a cutoff (``as_of``, ``until``, ``valid_at``: a moment one looks
back from) it means the day's end, 23:59:59.999999 UTC, so "as of the 14th" includes what was
learnt on the 14th; as a start or a stored time (``since``, ``known_at``, ``valid_from``) it
means 00:00:00 UTC.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache
from datetime import date, datetime, timedelta, timezone

from .errors import ClockImplausible, InvalidTime
from .limits import CLOCK_PLAUSIBLE_FROM_US, CLOCK_PLAUSIBLE_UNTIL_US

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
# a day as written from Germany to Russia, day first: 14.03.2026 (ASCII digits)
_DOTTED = re.compile(r"([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{4})")
_STAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"\s*([Zz]|[+-]\d{2}(?::?\d{2})?)"
)
MIN_US = -62135596800 * 1_000_000  # 0001-01-01T00:00:00Z
MAX_US = 253402300799 * 1_000_000 + 999_999  # 9999-12-31T23:59:59.999999Z


def to_micros(dt: datetime) -> int:
    delta = dt - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


DAY_US = 86_400_000_000


_NOT_A_TIME = "is not a date"  # what no form of a time reads, where a span is named too


def parse_time(value: object, field: str = "time", *, day_end: bool = False) -> int:
    """Return UTC microseconds for a date string, zoned timestamp or aware datetime. A bare
    day is its start, or with ``day_end`` its last microsecond (see the module's rule)."""
    last = DAY_US - 1 if day_end else 0
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidTime(f"{field}: datetime {value.isoformat()!r} has no timezone; "
                              "give an aware datetime")
        return _checked(to_micros(value), field, value.isoformat())
    if isinstance(value, date):
        return _checked(to_micros(datetime(value.year, value.month, value.day,
                                           tzinfo=timezone.utc)) + last, field, str(value))
    if not isinstance(value, str):
        raise InvalidTime(f"{field}: expected an ISO 8601 string, got {type(value).__name__}")
    text = value.strip()
    m = _DATE.fullmatch(text)
    if m:
        return _checked(_build(field, value, *m.groups(), "0", "0", "0", None, "Z") + last,
                        field, value)
    m = _DOTTED.fullmatch(text)
    if m:
        day, month, year = m.groups()
        return _checked(_build(field, value, year, month, day, "0", "0", "0", None, "Z")
                        + last, field, value)
    m = _STAMP.fullmatch(text)
    if m:
        return _build(field, value, *m.groups())
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}([.,]\d+)?)?", text):
        raise InvalidTime(f"{field}: {value!r} has no timezone; add 'Z' or an offset like +02:00")
    raise InvalidTime(f"{field}: {value!r} {_NOT_A_TIME} (YYYY-MM-DD, or DD.MM.YYYY) or an "
                      "ISO 8601 timestamp with a timezone (e.g. 2025-02-01T09:30:00Z)")


def _build(field, raw, y, mo, d, h, mi, s, frac, zone) -> int:
    if frac is not None and len(frac) > 6:
        raise InvalidTime(f"{field}: {raw!r} has sub-microsecond precision; "
                          "use at most 6 fractional digits")
    micro = int((frac or "0").ljust(6, "0"))
    if zone in ("Z", "z"):
        offset = timedelta(0)
    else:
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        oh, om = int(digits[:2]), int(digits[2:] or 0)
        if oh > 23 or om > 59:
            raise InvalidTime(f"{field}: {raw!r} has an invalid UTC offset")
        offset = sign * timedelta(hours=oh, minutes=om)
    try:
        local = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s or 0), micro,
                         tzinfo=timezone(offset))
    except ValueError as exc:
        raise InvalidTime(f"{field}: {raw!r} is out of range ({exc})") from None
    return _checked(to_micros(local), field, raw)


def _checked(us: int, field: str, raw: str) -> int:
    if not MIN_US <= us <= MAX_US:
        raise InvalidTime(f"{field}: {raw!r} is outside years 0001 to 9999 in UTC")
    return us


def format_time(us: int | None) -> str | None:
    """ISO 8601 in UTC with a ``Z``; microseconds only when present."""
    if us is None:
        return None
    return _format(us)


@lru_cache(maxsize=1 << 16)  # a revision's known_at and valid_from are usually equal
def _format(us: int) -> str:
    dt = from_micros(us)
    text = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    return text + (f".{dt.microsecond:06d}Z" if dt.microsecond else "Z")


def now_micros() -> int:
    return time.time_ns() // 1000


def plausible_now() -> int:
    """The machine's clock, refused when it is far in the future (a write stamped then would
    put every later one after it, for good) or was never set (:class:`ClockImplausible`)."""
    now = now_micros()
    if not CLOCK_PLAUSIBLE_FROM_US <= now <= CLOCK_PLAUSIBLE_UNTIL_US:
        raise ClockImplausible(f"the system clock says {format_time(now)}, which cannot be "
                               "right; nothing was written (set the clock, then try again)")
    return now


def plausible_stamp(stamp: int) -> int:
    """A transaction time about to be written, refused past the plausible range: steps of
    a microsecond after the newest revision must not carry the store past it either."""
    if stamp > CLOCK_PLAUSIBLE_UNTIL_US:
        raise ClockImplausible(f"the next revision would be stamped {format_time(stamp)}, "
                               f"after {format_time(CLOCK_PLAUSIBLE_UNTIL_US)}; nothing was "
                               "written")
    return stamp


# ASCII digits (７d is no span); a span too long for the calendar is said to be out of range
_RELATIVE = re.compile(r"([0-9]{1,30})\s*([smhdw])")
_UNIT_US = {"s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000, "d": 86_400_000_000,
            "w": 7 * 86_400_000_000}


def parse_span(value: object, field: str) -> int | None:
    """A span a person types (``90s``, ``15m``, ``24h``, ``7d``, ``2w``) in microseconds, or
    None when the value is not one."""
    m = _RELATIVE.fullmatch(value.strip().lower()) if isinstance(value, str) else None
    return int(m.group(1)) * _UNIT_US[m.group(2)] if m else None


def parse_cutoff(value: object, field: str = "as_of") -> int:
    """A cutoff: :func:`parse_moment` (a time, ``now``, or a span back from now such as
    ``7d``) with a bare day meaning its end."""
    return parse_moment(value, field, now_micros(), day_end=True)


def parse_moment(value: object, field: str, now: int, *, day_end: bool = False) -> int:
    """:func:`parse_time`, plus what a person types for "that long ago": ``now``, ``90s``,
    ``15m``, ``24h``, ``7d``, ``2w`` (seconds, minutes, hours, days, weeks before ``now``)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "now":
            return now
        span = parse_span(text, field)
        if span is not None:
            return _checked(now - span, field, value)
    try:
        return parse_time(value, field, day_end=day_end)
    except InvalidTime as exc:
        if _NOT_A_TIME not in str(exc):  # a date out of range, an offset missing: as said
            raise
        raise InvalidTime(f"{exc}, or a span back from now such as 15m, 24h, 7d or "
                          "2w") from None
