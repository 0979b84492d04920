"""The write rules: validation, the strictly increasing clock, no-op detection and
tombstones. Each function runs inside a write transaction its caller holds, so the public
API and the folder sync apply the very same rules."""

from __future__ import annotations

import hashlib
from typing import Any

from .errors import AlreadyHidden, InvalidArgument, NotFound
from .limits import (MAX_CONTENT_CHARS, MAX_ID_CHARS, MAX_NAMESPACE_CHARS, MAX_SOURCE_CHARS,
                     MAX_TITLE_CHARS)
from .notes import is_record
from .records import RevisionRecord
from .store import Database
from .times import format_time, now_micros, parse_time


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


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


def optional_time(value: object, field: str) -> int | None:
    return None if value is None else parse_time(value, field)


def _location(provenance: dict | None) -> dict | None:
    """Provenance minus the whole-file hash: editing one chunk of a note must not
    make a new revision of every other chunk."""
    if not provenance:
        return None
    return {k: v for k, v in provenance.items() if k != "file_hash"}


def _next_known_at(db: Database, explicit: int | None) -> int:
    """The clock, made strictly increasing within the database; explicit times are
    trusted assertions (historical imports) and are used as given."""
    if explicit is not None:
        return explicit
    last = db.max_known_at()
    now = now_micros()
    return now if last is None or now > last else last + 1


def next_known_at(db: Database) -> int:
    """The next time of the database's clock (for writes that share one time)."""
    return _next_known_at(db, None)


def _interval(db: Database, known_at: Any, valid_from: Any, valid_to: Any,
              ) -> tuple[int, int | None, int, int | None]:
    """(known_at, valid_from as given, effective start, valid_to). known_at comes from the
    clock unless asserted; the interval must be non-empty."""
    known = optional_time(known_at, "known_at")
    vfrom = optional_time(valid_from, "valid_from")
    vto = optional_time(valid_to, "valid_to")
    known = _next_known_at(db, known)
    start = known if vfrom is None else vfrom
    if vto is not None and vto <= start:
        raise InvalidArgument(f"valid_to: {format_time(vto)} must be after valid_from "
                              f"{format_time(start)}")
    return known, vfrom, start, vto


def remember(db: Database, memory_id: Any, content: Any, *, namespace: Any,
             title: Any = None, source: Any = None, known_at: Any = None,
             valid_from: Any = None, valid_to: Any = None,
             provenance: dict | None = None) -> RevisionRecord:
    """Append a revision, or return the identical visible one with ``created=False``."""
    return _append(db, memory_id_arg(memory_id), text(content, "content", MAX_CONTENT_CHARS),
                   namespace=namespace_arg(namespace),
                   title=text(title, "title", MAX_TITLE_CHARS, optional=True),
                   source=text(source, "source", MAX_SOURCE_CHARS, optional=True),
                   known_at=known_at, valid_from=valid_from, valid_to=valid_to,
                   provenance=provenance)


def remember_note_part(db: Database, memory_id: str, content: str, *, namespace: str,
                       title: str, note: str, known_at: Any, provenance: dict,
                       heading_path: list[str] | None, metadata: dict,
                       index_title: str | None, index_content: str | None) -> RevisionRecord:
    """A section of a note, or (``memory_id`` is ``note#``) its record, whose content is
    the front matter as written and may be empty. Same no-op rule as :func:`remember`."""
    memory_id = memory_id_arg(memory_id)
    if not is_record(memory_id, note):
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
            ) -> RevisionRecord:
    known, vfrom, start, vto = _interval(db, known_at, valid_from, valid_to)
    digest = content_hash(content)
    index_title = None if index_title == title else index_title  # stored only when it differs
    index_content = None if index_content == content else index_content
    current = db.visible_revision(namespace, memory_id, known, start)
    if (current is not None and not current.deleted and current.content_hash == digest
            and current.title == title and current.source == source
            and current.valid_to == format_time(vto)
            and (vfrom is None or current.valid_from == format_time(vfrom))
            and _location(current.provenance) == _location(provenance)
            and current.note == note and current.heading_path == heading_path
            and current.metadata == (metadata or None)
            and db.indexed_as(current.revision_id) == (index_title, index_content)):
        return current.but(created=False)
    return db.insert_revision(
        namespace=namespace, memory_id=memory_id, known_at=known, valid_from=start,
        valid_to=vto, deleted=False, hides_revision=None, title=title, content=content,
        source=source, provenance=provenance, content_hash=digest, note=note,
        heading_path=heading_path, metadata=metadata, index_title=index_title,
        index_content=index_content)


def forget(db: Database, memory_id: Any, *, namespace: Any, known_at: Any = None,
           valid_from: Any = None, valid_to: Any = None) -> RevisionRecord:
    """Append a tombstone; an identical repeat is a no-op, an already hidden memory an
    error (:class:`AlreadyHidden`), an unknown one :class:`NotFound`."""
    memory_id = memory_id_arg(memory_id)
    namespace = namespace_arg(namespace)
    known, vfrom, start, vto = _interval(db, known_at, valid_from, valid_to)
    latest = db.latest_revision(namespace, memory_id)
    if latest is None:
        raise NotFound(f"memory {memory_id!r} does not exist in namespace {namespace!r}")
    if (latest.deleted and latest.valid_to == format_time(vto)
            and (vfrom is None or latest.valid_from == format_time(vfrom))):
        return latest.but(created=False)
    current = db.visible_revision(namespace, memory_id, known, start)
    if current is None or current.deleted:
        raise AlreadyHidden(f"memory {memory_id!r} is not visible at "
                            f"{format_time(start)}; nothing to forget")
    return db.insert_revision(
        namespace=namespace, memory_id=memory_id, known_at=known, valid_from=start,
        valid_to=vto, deleted=True, hides_revision=current.revision_id, title=None,
        content="", source=None, provenance=None, content_hash=content_hash(""),
        note=current.note)
