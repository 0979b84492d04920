"""A whole note as it was known at a time: its record, then each section it lists, each at
the same cutoff. Notes stored by the previous note model (numbered paragraph chunks,
``note.md#3``) are read from those chunks."""

from __future__ import annotations

from dataclasses import replace

from ..notes import model as notes
from ..notes.front_matter import property_values
from ..errors import NotFound
from ..records import NoteView, RevisionRecord, SectionView
from ..store import Database
from ..times import format_time, parse_time
from .moves import chain, departure_at, path_at


def read_note(db: Database, namespace: str, note: str, as_of: int | None,
              valid_at: int) -> NoteView:
    """The note at ``note`` as it was at ``as_of``: what that path held then (a note, or
    its deletion); when it held nothing yet, the note known now as ``note``, under the
    path it had then (``path_then``). Its ``moves`` are those known by ``as_of``, but for
    the later ones that brought the note read under its old path to ``note``."""
    with db.snapshot():
        then, view = note, _read(db, namespace, note, as_of, valid_at)
        if view is None:  # nothing at this path yet: the note that is there now, then
            then = path_at(db, namespace, note, as_of)
            view = _read(db, namespace, then, as_of, valid_at) if then != note else None
        if view is None:
            raise unknown_note(db, namespace, note, as_of)
        moves = chain(db, namespace, note,
                      known_by=as_of if as_of is not None and then == note else None)
        went = departure_at(db, namespace, then, view.known_at) if view.deleted else None
    return replace(view, note=note, path_then=then if then != note else None, moves=moves,
                   moved_to=went)


def unknown_note(db: Database, namespace: str, note: str, as_of: int | None) -> NotFound:
    """The error for a note not known (by ``as_of``): when it is first known, or the notes
    it may mean (``Database.notes_meant``: typed without its collection, as a path on
    disk, by its name), or what to give."""
    when = "" if as_of is None else f" as of {format_time(as_of)}"
    later = db.note_revisions(namespace, note) if as_of is not None else []
    first = min((r.known_at for r in later), key=parse_time, default=None)
    meant = db.notes_meant(namespace, note, as_of) if first is None else []
    hint = (f"; it is first known at {first}" if first is not None else
            "; did you mean " + " or ".join(repr(m) for m in meant) + "?" if meant else
            " (give COLLECTION/path.md, as in memory IDs)")
    return NotFound(f"note {note!r} is not known in namespace {namespace!r}{when}{hint}")


def section_lines(db: Database, namespace: str, note: str, as_of: int | None,
                  valid_at: int) -> dict[str, tuple[int, int]]:
    """memory ID -> (first, last) file line of each section of a note at a cutoff (the
    note's record and its sections, as :func:`read_note` lays them out)."""
    record = db.visible(namespace, notes.record_id(note), as_of, valid_at)
    if record is None:
        return {}
    meta = record.metadata or {}
    ids, counts = [], []
    for memory_id in meta.get("sections", []):
        rev = db.visible(namespace, memory_id, as_of, valid_at)
        if rev is not None:
            ids.append(memory_id)
            counts.append((rev.metadata or {}).get("lines", rev.content.count("\n") + 1))
    ends_with_newline = False  # only the last span's end depends on it
    return dict(zip(ids, notes.line_spans(meta.get("lines", 0), counts, ends_with_newline)))


def _read(db: Database, namespace: str, note: str, as_of: int | None,
          valid_at: int) -> NoteView | None:
    record = db.winner(namespace, notes.record_id(note), as_of, valid_at)
    if record is None:
        return _legacy(db, namespace, note, as_of, valid_at)
    if record.hidden:
        return NoteView(note=note, namespace=namespace, as_of=format_time(as_of),
                        deleted=True, known_at=record.known_at, title=None)
    meta = record.metadata or {}
    revisions = []
    for memory_id in meta.get("sections", []):
        rev = db.visible(namespace, memory_id, as_of, valid_at)
        if rev is not None:  # always, for a record written last
            revisions.append(rev)
    return _assemble(namespace, note, as_of, record, meta, revisions)


def _assemble(namespace: str, note: str, as_of: int | None, record: RevisionRecord,
              meta: dict, revisions: list[RevisionRecord]) -> NoteView:
    pieces = [notes.Piece(rev.content, (rev.metadata or {}).get("context", 0),
                          (rev.metadata or {}).get("lines", rev.content.count("\n") + 1))
              for rev in revisions]
    text = notes.reassemble(notes.Piece(record.content, 0, meta.get("lines", 0)), pieces)
    spans = notes.line_spans(meta.get("lines", 0), [p.lines for p in pieces],
                             text.endswith("\n"))
    sections = [_section(rev, first, last, piece.context)
                for rev, (first, last), piece in zip(revisions, spans, pieces)]
    return NoteView(note=note, namespace=namespace, as_of=format_time(as_of), deleted=False,
                    known_at=record.known_at, title=record.title,
                    aliases=meta.get("aliases", []), tags=meta.get("tags", []),
                    links=meta.get("links", []), dates=meta.get("dates", {}),
                    front_matter=record.content,
                    properties=property_values(record.content) or {}, sections=sections,
                    text=text, model="sections")


def _section(rev: RevisionRecord, first_line: int, last_line: int,
             context: int) -> SectionView:
    return SectionView(memory_id=rev.memory_id, heading_path=rev.heading_path or [],
                       line_start=first_line, line_end=last_line,
                       revision_id=rev.revision_id, known_at=rev.known_at,
                       content="\n".join(rev.content.split("\n")[context:]))


def _legacy(db: Database, namespace: str, note: str, as_of: int | None,
            valid_at: int) -> NoteView | None:
    """The note from the previous model's numbered chunks, or None if it had none."""
    numbered = sorted((notes.legacy_chunk_number(m, note), m)
                      for m in db.legacy_chunk_states(namespace, note))
    if not numbered:
        return None
    seen = [r for r in (db.winner(namespace, m, as_of, valid_at)
                        for _, m in numbered) if r is not None]
    if not seen:
        return None
    live = [r for r in seen if not r.hidden]
    if not live:
        return NoteView(note=note, namespace=namespace, as_of=format_time(as_of),
                        deleted=True, known_at=max(r.known_at for r in seen), title=None,
                        model="numbered chunks")
    sections = [SectionView(memory_id=r.memory_id, heading_path=[],
                            line_start=(r.provenance or {}).get("line_start", 0),
                            line_end=(r.provenance or {}).get("line_end", 0),
                            revision_id=r.revision_id, known_at=r.known_at, content=r.content)
                for r in live]
    return NoteView(note=note, namespace=namespace, as_of=format_time(as_of), deleted=False,
                    known_at=max(r.known_at for r in live), title=live[0].title,
                    sections=sections, text="\n\n".join(r.content for r in live),
                    model="numbered chunks")
