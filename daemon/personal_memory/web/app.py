"""The page's routes: search with a cutoff, a note through time, what changed, status.
Each reads through the same MemoryStore API as the command line and the MCP server; the
database is opened read-only and nothing here writes."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from markdown_it import MarkdownIt
from markupsafe import Markup
from mdit_py_plugins.front_matter import front_matter_plugin
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from .. import render
from ..errors import NotFound, PersonalMemoryError
from ..readers import ReaderPool
from ..times import format_time, parse_cutoff
from . import pictures
from .security import Guard

HERE = Path(__file__).resolve().parent
# Notes are rendered with their raw HTML escaped (never executed) and no link that is not
# http(s), mailto or relative (markdown-it refuses javascript:, data: and the like).
# The front matter is shown apart (title, aliases, tags), not rendered as text.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").use(
    front_matter_plugin)
_MARKED = re.compile(r"\*\*(.+?)\*\*", re.S)
_DIFF = re.compile(r"\[-(.*?)-\]|\{\+(.*?)\+\}", re.S)


def marked(text: str) -> Markup:
    """A snippet with its found words (``**so**``) as <mark>, everything else escaped."""
    out, last = [], 0
    for m in _MARKED.finditer(text):
        out += [escape(text[last:m.start()]), "<mark>", escape(m.group(1)), "</mark>"]
        last = m.end()
    out.append(escape(text[last:]))
    return Markup("".join(out))


def diffed(diff: str) -> Markup:
    """A word diff (``[-old-] {+new+}``) as <del> and <ins>, everything else escaped."""
    out, last = [], 0
    for m in _DIFF.finditer(diff):
        out.append(escape(diff[last:m.start()]))
        out.append(f"<del>{escape(m.group(1))}</del>" if m.group(1) is not None
                   else f"<ins>{escape(m.group(2))}</ins>")
        last = m.end()
    out.append(escape(diff[last:]))
    return Markup("".join(out))


def markdown(text: str) -> Markup:
    return Markup(_MARKDOWN.render(text))


def note_markdown(text: str, title: str | None) -> Markup:
    """A note's text, without its first heading when that is a level-1 heading saying the
    title: the page shows the title once, above."""
    tokens = _MARKDOWN.parse(text)
    first = next((i for i, t in enumerate(tokens) if t.type != "front_matter"), None)
    if (title and first is not None and first + 2 < len(tokens)
            and tokens[first].type == "heading_open" and tokens[first].tag == "h1"
            and tokens[first + 1].content.strip() == title.strip()):
        del tokens[first:first + 3]
    return Markup(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}))


def moment(iso: str | None) -> str:
    """A stored or echoed time as a person reads it: a day's end (how a bare day is read as
    a cutoff) as "the end of 2025-02-14", else to the second, in UTC."""
    if iso is None:
        return "everything known"
    if iso.endswith("T23:59:59.999999Z"):
        return f"the end of {iso[:10]} (UTC)"
    return when(iso)


def when(iso: str | None) -> str:
    """A time to the second, in UTC (a heartbeat, a revision's time)."""
    return "-" if iso is None else iso[:19].replace("T", " ") + " UTC"


def counts(found: dict[str, int]) -> str:
    """A change's counts in words: "2 notes, 1 note added, 3 sections revised"."""
    names = {"notes": "note{s}", "memories": "memor{ies} written through the API",
             "notes_added": "note{s} added", "notes_deleted": "note{s} deleted",
             "notes_moved": "note{s} moved", "added": "section{s} added",
             "revised": "section{s} revised", "retracted": "section{s} retracted",
             "new": "new", "gone": "gone", "up": "up", "down": "down",
             "changed": "changed", "unchanged": "unchanged"}
    out = []
    for key, n in found.items():
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
                                          moment=moment, when=when, counts=counts)
        self.templates.env.globals.update(place=render.place, heading=render.heading,
                                          duration=render.duration, folders=render.folders)

    def page(self, request: Request, name: str, code: int = 200, **context) -> Response:
        return self.templates.TemplateResponse(request, name, {
            "namespace": self.namespace, **context}, status_code=code)

    def failed(self, request: Request, exc: PersonalMemoryError) -> Response:
        code = 404 if isinstance(exc, NotFound) else 400
        return self.page(request, "error.html", code=code, message=str(exc))

    def search(self, request: Request) -> Response:
        store = self.pool.store()
        q = request.query_params.get("q", "").strip()
        as_of = request.query_params.get("as_of") or None
        # an empty box in the form is no tag, not the tag ''
        tags = [t.strip() for t in request.query_params.getlist("tag") if t.strip()] or None
        periods = pictures.periods(store.activity(namespace=self.namespace))
        cutoff = _cutoff(as_of)
        shown = pictures.position(periods, cutoff)
        found, error = None, None
        if q:
            try:
                found = store.search(q, namespace=self.namespace, as_of=as_of, tags=tags,
                                     limit=20, snippets=True)
            except PersonalMemoryError as exc:
                error = str(exc)
        link = {"q": q} | ({"tag": tags[0]} if tags else {})
        return self.page(request, "search.html", q=q, as_of=as_of, tags=tags or [],
                         found=found, error=error, periods=periods, shown=shown,
                         inset=pictures.slider_inset(periods) if periods else 0,
                         cutoff=format_time(cutoff),
                         picture=Markup(pictures.activity(periods, link, shown)))

    def note(self, request: Request) -> Response:
        store = self.pool.store()
        note = request.query_params.get("id", "")
        as_of = request.query_params.get("as_of") or None
        since = request.query_params.get("from") or None
        until = request.query_params.get("to") or None
        try:
            view = store.read(note, namespace=self.namespace, as_of=as_of)
            timeline = store.timeline(note, namespace=self.namespace)
            diff = None
            if since and until:
                diff = store.changes(namespace=self.namespace, since=since, until=until,
                                     note=note, limit=10).notes
        except PersonalMemoryError as exc:
            return self.failed(request, exc)
        times = sorted({r.known_at for r in timeline.revisions})
        return self.page(request, "note.html", view=view, as_of=as_of, times=times,
                         changed=view.changed_at, text=note_markdown(view.text, view.title),
                         picture=Markup(pictures.timeline(timeline, note,
                                                          _cutoff(view.as_of))),
                         since=since, until=until, diff=diff)

    def changes(self, request: Request) -> Response:
        store = self.pool.store()
        since = request.query_params.get("since") or "7d"
        until = request.query_params.get("until") or None
        q = request.query_params.get("q", "").strip() or None
        try:
            found = store.changes(namespace=self.namespace, since=since, until=until,
                                  query=q, limit=50)
        except PersonalMemoryError as exc:
            return self.failed(request, exc)
        return self.page(request, "changes.html", found=found, since=since,
                         until=until or "", q=q or "")

    def status(self, request: Request) -> Response:
        return self.page(request, "status.html", status=self.pool.store().status(
            self.namespace))


def build_app(pool: ReaderPool, namespace: str, token: str, port: int):
    pages = Pages(pool, namespace)
    # The file gone or unreadable under a running page: the CLI's one line, on every page,
    # until it is back.
    app = Starlette(exception_handlers={PersonalMemoryError: pages.failed}, routes=[
        Route("/", pages.search), Route("/note", pages.note),
        Route("/changes", pages.changes), Route("/status", pages.status),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ])
    return Guard(app, token, port)
