"""The write rules: the clock, validated times, no-op detection, tombstones and backdating.
Each function runs inside a write transaction its caller holds, so the public API and the
folder sync apply the very same rules.

The clock: transaction time only moves forward. A write's ``known_at`` is now, or just
after the newest revision stored when that is later (a clock that stepped back, or ran
ahead and was corrected), whatever the wall clock says: a new revision always sorts after
every stored one in the visibility order (``known_at``, then ``id``). An explicit
``known_at`` must keep that order (:class:`BackdatedWrite` otherwise) and may not be after
now plus :data:`~personal_memory.limits.CLOCK_TOLERANCE_US`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..arguments import memory_id_arg, namespace_arg, optional_time, text, unicode_checked
from ..errors import (AlreadyHidden, BackdatedWrite, ClockImplausible, InvalidArgument,
                      InvalidTime, NotFound)
from ..limits import (CLOCK_LEAP_US, CLOCK_TOLERANCE_US, MAX_CONTENT_CHARS, MAX_SOURCE_CHARS,
                      MAX_TITLE_CHARS, YEAR_US)
from ..notes.model import is_record
from ..records import RevisionRecord, WriteResult
from ..store import Database
from ..times import format_time, parse_time, plausible_now, plausible_stamp


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _location(provenance: dict | None) -> dict | None:
    """Provenance minus the whole-file hash: editing one chunk of a note must not
    make a new revision of every other chunk."""
    if not provenance:
        return None
    return {k: v for k, v in provenance.items() if k != "file_hash"}


def next_known_at(db: Database) -> int:
    """The clock: now, or just after the newest revision stored when that is later;
    refused, in a store that syncs folders, when now is :data:`CLOCK_LEAP_US` or more
    past the newest revision (a store of history written with known_at, a backtest's,
    may be that old and written to now)."""
    now = plausible_now()
    last = db.max_known_at()
    refuse_a_leap(db, now, last)
    return plausible_stamp(now if last is None or now > last else last + 1)


def refuse_a_leap(db: Database, now: int, last: int | None = None) -> None:
    """:func:`next_known_at`'s rule for a clock far past the newest revision, for a sync
    that may write nothing (its run would be recorded at that time all the same)."""
    last = db.max_known_at() if last is None else last
    if last is not None and now - last >= CLOCK_LEAP_US and db.last_sync_runs(1):
        raise ClockImplausible(
            f"the system clock says {format_time(now)}, {(now - last) // YEAR_US} years "
            f"after the newest revision ({format_time(last)}), which cannot be right; "
            "nothing was written (set the clock; if it is right, confirm it once with "
            f"--known-at {format_time(now)})")


def known_at_arg(db: Database, value: Any, field: str = "known_at") -> int | None:
    """An explicit ``known_at``, validated against the clock (call inside the write
    transaction, or again inside it): not before the newest revision stored (an equal
    time still sorts after it, by id), and not after the clock's next stamp or now plus
    the tolerance, whichever is later. None when not given (the clock decides)."""
    known = optional_time(value, field)
    if known is None:
        return None
    now, last = plausible_now(), db.max_known_at()
    if known > max(now + CLOCK_TOLERANCE_US, -1 if last is None else last + 1):
        raise InvalidTime(f"{field}: {format_time(known)} is in the future (the clock says "
                          f"{format_time(now)}); a revision cannot be known before it is "
                          "written")
    if last is not None and known < last:
        raise BackdatedWrite(f"{field}: {format_time(known)} is before the newest revision "
                             f"({format_time(last)}); transaction time only moves forward "
                             "(record when a fact was true with valid_from instead)")
    return plausible_stamp(known)


def _interval(db: Database, known_at: Any, valid_from: Any, valid_to: Any,
              ) -> tuple[int, int | None, int, int | None]:
    """(known_at, valid_from as given, effective start, valid_to). known_at comes from the
    clock unless asserted; the interval must be non-empty."""
    known = known_at_arg(db, known_at)
    vfrom = optional_time(valid_from, "valid_from")
    vto = optional_time(valid_to, "valid_to")
    known = next_known_at(db) if known is None else known
    start = known if vfrom is None else vfrom
    if vto is not None and vto <= start:
        raise InvalidArgument(f"valid_to: {format_time(vto)} must be after valid_from "
                              f"{format_time(start)}")
    return known, vfrom, start, vto


def _result(db: Database, rec: RevisionRecord, created: bool) -> WriteResult:
    """A write's result: current unless a revision of the same memory is known later."""
    latest = db.latest_revision(rec.namespace, rec.memory_id)
    if latest is None or latest.revision_id == rec.revision_id:
        return WriteResult(rec, created)
    return WriteResult(rec, created, current=False, newer=latest)


def remember(db: Database, memory_id: Any, content: Any, *, namespace: Any,
             title: Any = None, source: Any = None, known_at: Any = None,
             valid_from: Any = None, valid_to: Any = None,
             provenance: dict | None = None) -> WriteResult:
    """Append a revision, or find the identical visible one (``created`` False)."""
    return _append(db, memory_id_arg(memory_id), text(content, "content", MAX_CONTENT_CHARS),
                   namespace=namespace_arg(namespace),
                   title=text(title, "title", MAX_TITLE_CHARS, optional=True),
                   source=text(source, "source", MAX_SOURCE_CHARS, optional=True),
                   known_at=known_at, valid_from=valid_from, valid_to=valid_to,
                   provenance=provenance)


def remember_note_part(db: Database, memory_id: str, content: str, *, namespace: str,
                       title: str, note: str, known_at: Any, provenance: dict,
                       heading_path: list[str] | None, metadata: dict,
                       index_title: str | None, index_content: str | None) -> WriteResult:
    """A section of a note, or (``memory_id`` is ``note#``) its record, whose content is
    the front matter as written and may be empty. Same no-op rule as :func:`remember`."""
    memory_id = memory_id_arg(memory_id)
    if not is_record(memory_id, note) and content:  # empty: a note of properties alone
        content = text(content, "content", MAX_CONTENT_CHARS)
    return _append(db, memory_id, unicode_checked(content, "content"), namespace=namespace,
                   title=text(title, "title", MAX_TITLE_CHARS), source=note,
                   known_at=known_at, valid_from=None, valid_to=None, provenance=provenance,
                   note=note, heading_path=heading_path, metadata=metadata,
                   index_title=index_title, index_content=index_content)


def _append(db: Database, memory_id: str, content: str, *, namespace: str,
            title: str | None, source: str | None, known_at: Any, valid_from: Any,
            valid_to: Any, provenance: dict | None, note: str | None = None,
            heading_path: list[str] | None = None, metadata: dict | None = None,
            index_title: str | None = None, index_content: str | None = None,
            ) -> WriteResult:
    known, vfrom, start, vto = _interval(db, known_at, valid_from, valid_to)
    digest = content_hash(content)
    index_title = None if index_title == title else index_title  # stored only when it differs
    index_content = None if index_content == content else index_content
    current = db.visible(namespace, memory_id, known, start)
    if (current is not None and current.content_hash == digest
            and current.title == title and current.source == source
            and current.valid_to == format_time(vto)
            and (vfrom is None or current.valid_from == format_time(vfrom))
            and _location(current.provenance) == _location(provenance)
            and current.note == note and current.heading_path == heading_path
            and current.metadata == (metadata or None)
            and db.indexed_as(current.revision_id) == (index_title, index_content)):
        return _result(db, current, created=False)
    rec = db.insert_revision(
        namespace=namespace, memory_id=memory_id, known_at=known, valid_from=start,
        valid_to=vto, deleted=False, hides_revision=None, title=title, content=content,
        source=source, provenance=provenance, content_hash=digest, note=note,
        heading_path=heading_path, metadata=metadata, index_title=index_title,
        index_content=index_content)
    return _result(db, rec, created=True)


def _starts_within(db: Database, namespace: str, memory_id: str, known: int, start: int,
                   end: int | None) -> list[int]:
    """The moments in [start, end) at which a revision known by ``known`` becomes valid,
    in order: where the memory may first be visible within a span."""
    return sorted({v for r in db.history(namespace, memory_id, known)
                   if start < (v := parse_time(r.valid_from)) and (end is None or v < end)})


def forget(db: Database, memory_id: Any, *, namespace: Any, known_at: Any = None,
           valid_from: Any = None, valid_to: Any = None) -> WriteResult:
    """Append a tombstone. A memory hidden at that time already (an identical repeat,
    another tombstone, a purge) makes it a no-op (``created`` False, with the revision
    that hides it); one with nothing known or valid then is :class:`AlreadyHidden`, an
    unknown one :class:`NotFound`."""
    memory_id = memory_id_arg(memory_id)
    namespace = namespace_arg(namespace)
    known, vfrom, start, vto = _interval(db, known_at, valid_from, valid_to)
    latest = db.latest_revision(namespace, memory_id)
    if latest is None:
        raise NotFound(f"memory {memory_id!r} does not exist in namespace {namespace!r}")
    if (latest.deleted and latest.valid_to == format_time(vto)
            and (vfrom is None or latest.valid_from == format_time(vfrom))):
        return _result(db, latest, created=False)
    current = db.winner(namespace, memory_id, known, start)
    if current is None:  # not valid yet at its start: the first moment of the span it is
        current = next((w for at in _starts_within(db, namespace, memory_id, known, start, vto)
                        if (w := db.winner(namespace, memory_id, known, at)) is not None
                        and not w.hidden), None)
    if current is None:
        raise AlreadyHidden(f"memory {memory_id!r} is not visible at any time from "
                           f"{format_time(start)}"
                           + (f" to {format_time(vto)}" if vto is not None else "")
                           + f" (known by {format_time(known)}); nothing to forget")
    if current.hidden:  # by a tombstone or a purge: one answer, the no-op of a repeat
        return _result(db, current, created=False)
    rec = db.insert_revision(
        namespace=namespace, memory_id=memory_id, known_at=known, valid_from=start,
        valid_to=vto, deleted=True, hides_revision=current.revision_id, title=None,
        content="", source=None, provenance=None, content_hash=content_hash(""),
        note=current.note)
    return _result(db, rec, created=True)
