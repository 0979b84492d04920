"""The page's routes: search with a cutoff, a note through time, what changed, status.
Each reads through the same MemoryStore API as the command line and the MCP server; the
database is opened read-only and nothing here writes."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from .. import render
from ..errors import NotFound, PersonalMemoryError
from ..limits import MAX_QUERY_CHARS, PAGE_BACKLINKS
from ..notes.model import record_id
from ..readers import ReaderPool
from ..records import AnswerCounts, NoteCounts
from ..times import format_time, now_micros, parse_cutoff, parse_time
from . import pictures
from .security import Guard
from .text import (Heading, anchor, diffed, field_value, markdown, marked, note_markdown,
                   properties_table)

HERE = Path(__file__).resolve().parent


def counts(found: NoteCounts | AnswerCounts) -> str:
    """A change's counts in words: "2 notes, 1 note added, 3 sections revised"."""
    names = {"notes": "note{s}", "memories": "memor{ies} written through the API",
             "notes_added": "note{s} added", "notes_deleted": "note{s} deleted",
             "notes_moved": "note{s} moved", "added": "section{s} added",
             "revised": "section{s} revised", "retracted": "section{s} retracted",
             "new": "new", "gone": "gone", "up": "up", "down": "down",
             "changed": "changed", "moved": "moved", "unchanged": "unchanged"}
    out = []
    for key, n in found.to_dict().items():
        if n or key == "notes":
            name = names.get(key, key.replace("_", " "))
            one = n == 1
            out.append(f"{n} " + name.replace("{s}", "" if one else "s")
                       .replace("{ies}", "y" if one else "ies"))
    return ", ".join(out)


def _cutoff(text: str | None) -> int | None:
    """Where the pictures mark the moment shown; a time that is not one marks none (the
    search, which parses it too, says what is wrong with it)."""
    try:
        return None if text is None else parse_cutoff(text)
    except PersonalMemoryError:
        return None


class Pages:
    def __init__(self, pool: ReaderPool, namespace: str):
        self.pool, self.namespace = pool, namespace
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.filters.update(marked=marked, diffed=diffed, markdown=markdown,
                                          field_value=field_value,
                                          property_value=partial(render.property_value,
                                                                 written=field_value),
                                          moment=partial(render.moment, fraction=False),
                                          when=render.when,
                                          counts=counts)
        self.templates.env.globals.update(place=render.place, heading=render.heading,
                                          lines_named=render.lines_named,
                                          either=render.either,
                                          no_more=render.no_more,
                                          duration=render.duration, folders=render.folders,
                                          daemon_state=render.daemon_state,
                                          max_query=MAX_QUERY_CHARS)

    def page(self, request: Request, name: str, code: int = 200, **context) -> Response:
        return self.templates.TemplateResponse(request, name, {
            "namespace": self.namespace, **context}, status_code=code)

    def failed(self, request: Request, exc: PersonalMemoryError) -> Response:
        code = 404 if isinstance(exc, NotFound) else 400
        return self.page(request, "error.html", code=code, message=said(exc))

    def unknown(self, request: Request, exc: Exception) -> Response:
        """An address the page does not have: said in the page's layout, with its links."""
        return self.page(request, "error.html", code=404,
                         message=f"there is no page {request.url.path!r} here; the search, "
                                 "the changes and the status are linked above")

    def search(self, request: Request) -> Response:
        store = self.pool.store()
        q = request.query_params.get("q", "").strip()
        as_of = request.query_params.get("as_of") or None
        # an empty box in the form is no tag, not the tag ''
        tags = [t.strip() for t in request.query_params.getlist("tag") if t.strip()] or None
        periods = pictures.activity_of(store, self.namespace)
        cutoff = _cutoff(as_of)
        shown = pictures.position(periods, cutoff)
        found, tagged, error = None, None, None
        alone = store.tags_alone(q)  # "tag:x" typed in the box: as a tag clicked
        try:
            if q and not alone:
                found = store.search(q, namespace=self.namespace, as_of=as_of, tags=tags,
                                     limit=20, snippets=True, group="note")
            elif tags or alone:  # a tag alone (a note's tag clicked): the notes that have it
                tagged = store.tagged([*(tags or ()), *alone], namespace=self.namespace,
                                      as_of=as_of)
        except PersonalMemoryError as exc:
            error = said(exc)
        # the chart's bars search again at their time: not with a query refused
        link = ({} if error else {"q": q}) | ({"tag": tags[0]} if tags else {})
        # bad input is said on the page, with the form to mend it, and as a 400
        return self.page(request, "search.html", code=400 if error else 200,
                         q=q, as_of=as_of, tags=tags or [], tagged=tagged,
                         found=found, error=error, periods=periods, shown=shown,
                         inset=pictures.slider_inset(periods) if periods else 0,
                         cutoff=format_time(cutoff),
                         later=cutoff is not None and cutoff > now_micros(),
                         picture=Markup(pictures.activity(periods, link, shown)))

    def note(self, request: Request) -> Response:
        store = self.pool.store()
        note = request.query_params.get("id", "")
        as_of = request.query_params.get("as_of") or None
        since = request.query_params.get("from") or None
        until = request.query_params.get("to") or None
        try:
            view = render.by_name(lambda n: store.read(n, namespace=self.namespace,
                                                       as_of=as_of), note)
            note = view.note  # as stored (NFC)
            timeline = store.timeline(note, namespace=self.namespace, as_of=view.as_of)
            backlinks = [] if view.deleted else store.links(
                note, namespace=self.namespace, as_of=as_of).backlinks
        except PersonalMemoryError as exc:
            return self.failed(request, exc)
        diff, diff_error = None, None
        if since and until:
            try:  # a choice that cannot be compared is said beside the form, which stays
                compared = store.changes(namespace=self.namespace, since=since,
                                         until=until, note=note, limit=10)
                # the times as compared ("7d" and "1h" typed in the address: moments)
                diff, since, until = compared.notes, compared.since, compared.until
            except PersonalMemoryError as exc:  # in the form's words: from and to
                diff_error = re.sub(r"\bsince\b", "from", re.sub(r"\buntil\b", "to", said(exc)))
        # the times the form offers: the revisions', and those asked (a span from the
        # changes page), each in its place
        times = sorted({r.known_at for r in timeline.revisions}
                       | {t for t in (since, until) if _cutoff(t) is not None}, key=_cutoff)
        went = view.moved_to  # a note deleted by moving away: where it went
        # a deleted note: the last moment it read as something, to open it then
        gone = parse_time(view.changed_at)
        before = max((r.known_at for r in timeline.revisions if not r.deleted and r.note == note
                      and parse_time(r.known_at) < gone),
                     key=parse_time, default=None) if view.deleted else None

        def resolve(targets: list[tuple[str, bool]]):
            return store.resolve_links(note, targets, namespace=self.namespace, as_of=as_of)
        headings = [Heading(s.line_start, s.line_end, s.heading_path[-1], a)
                    for s in view.sections if s.heading_path
                    and (a := anchor(s.memory_id, note)) is not None]
        # a comparison asked of times that are none: said beside the form, and as a 400
        return self.page(request, "note.html", code=400 if diff_error else 200,
                         view=view, as_of=as_of, times=times,
                         changed=view.changed_at, went=went, before=before,
                         text=note_markdown(view.text, view.title, resolve, as_of, headings),
                         properties=properties_table(view.properties, resolve, as_of),
                         empty=not any(s.content.strip() for s in view.sections),
                         backlinks=backlinks[:PAGE_BACKLINKS],
                         more_backlinks=max(len(backlinks) - PAGE_BACKLINKS, 0), anchor=anchor,
                         picture=Markup(pictures.timeline(timeline, note,
                                                          _cutoff(view.as_of))),
                         since=since, until=until, diff=diff, diff_error=diff_error)

    def changes(self, request: Request) -> Response:
        store = self.pool.store()
        since = request.query_params.get("since") or "7d"
        until = request.query_params.get("until") or None
        q = request.query_params.get("q", "").strip() or None
        try:
            found = store.changes(namespace=self.namespace, since=since, until=until,
                                  query=q, limit=50)
        except PersonalMemoryError as exc:  # said above the form, which stays to mend it
            return self.page(request, "changes.html", code=400, found=None, error=said(exc),
                             since=since, until=until or "", q=q or "", existed=set())
        # "before" only for a note that was there at the span's start, under the path it
        # had then
        existed = {n.note for n in found.notes if n.note and store.get(
            record_id(n.moved_from or n.note), namespace=self.namespace,
            as_of=found.since) is not None}
        # nothing in a span up to now (the last 7 days, by default): when the last was
        last = (store.recent_notes(namespace=self.namespace, limit=1)
                if not found.notes and q is None and until is None else [])
        return self.page(request, "changes.html", found=found, since=since,
                         until=until or "", q=q or "", existed=existed,
                         last=last[0] if last else None)

    def status(self, request: Request) -> Response:
        return self.page(request, "status.html", status=self.pool.store().status(
            self.namespace))


_ISO_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b")


def said(exc: PersonalMemoryError) -> str:
    """A library error as the page says it: its times as the page writes times
    (render.when), not as ISO 8601 ("2026-08-01T23:59:59.999999Z")."""
    return _ISO_TIME.sub(lambda m: render.when(m.group(0)), str(exc))


def build_app(pool: ReaderPool, namespace: str, token: str, port: int):
    pages = Pages(pool, namespace)
    # The file gone or unreadable under a running page: the CLI's one line, on every page,
    # until it is back.
    app = Starlette(exception_handlers={PersonalMemoryError: pages.failed,
                                        404: pages.unknown}, routes=[
        Route("/", pages.search), Route("/note", pages.note),
        Route("/changes", pages.changes), Route("/status", pages.status),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ])
    return Guard(app, token, port)
