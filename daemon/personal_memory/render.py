"""Short readable renderings of the API's records, for a person on a terminal and for an
assistant over MCP: a result as its place in the note and the lines that matched, a note
with line numbers, a change as what happened and the words that moved. Pure functions."""

from __future__ import annotations

import re

from .errors import InvalidArgument, NotFound
from .times import parse_cutoff, parse_time
from .notes.model import same_heading, under
from .records import (Changes, DaemonStatus, FolderListing, NoteView, RevisionRecord,
                      SearchResult, SearchResults, TagListing)

SHORT = 300
# Line breaks, and the bidi controls that reorder what follows them on screen (a name
# ending in U+202E shows "txt.exe" as "exe.txt"): shown escaped.
_BIDI = ["\u061c", "\u200e", "\u200f"] + [chr(c) for c in range(0x202A, 0x202F)] + [
    chr(c) for c in range(0x2066, 0x206A)]
_BREAKS = str.maketrans({c: c.encode("unicode_escape").decode() for c in
                         [chr(i) for i in range(32)] + ["\x7f", "\x85", "\u2028", "\u2029"]
                         + _BIDI})


# The controls a note's text may hold that a terminal obeys (ESC begins sequences that set
# the window's title, write the clipboard or clear the screen): all of C0 but the tab and
# the line break, DEL and C1, shown escaped in what the command line prints for a person.
_CONTROLS = str.maketrans({i: f"\\x{i:02x}" for i in
                           [*range(0, 9), *range(11, 32), 0x7f, *range(0x80, 0xa0)]})


def for_terminal(text: str) -> str:
    """Text as a terminal may print it: its controls shown escaped (``\\x1b``)."""
    return text.translate(_CONTROLS)


def name(text: str | None) -> str:
    """A path, memory ID or title on the one line it is cited on: a file may be named with
    a newline or a tab, shown escaped (``\\n``) so it cannot forge the next line, or with
    a bidi control, shown escaped (``\\u202e``) so it cannot reorder what the line says.
    No two names are cited alike: where a name's own backslash could be read as such an
    escape, or beside one, every backslash it holds is doubled (``back\\\\nslash.md``)."""
    text = text or ""
    if "\\" in text and (unname(text) != text or text.translate(_BREAKS) != text):
        text = text.replace("\\", "\\\\")
    return text.translate(_BREAKS)


# a doubled backslash, or the escape of a character: read from the left, one at a time
_CITED = re.compile(r"\\(?:(\\)|x([0-9a-f]{2})|u([0-9a-f]{4})|([ntr]))")


def unname(text: str) -> str:
    """A name as :func:`name` cited it, back as written (``new\\nline.md`` is the file
    whose name holds a line break, ``back\\\\nslash.md`` the one whose name holds a
    backslash and an n); a backslash :func:`name` would not write stays."""
    def back(m: re.Match) -> str:
        if m.group(1):
            return "\\"
        code = m.group(2) or m.group(3)
        ch = chr(int(code, 16)) if code else {"n": "\n", "t": "\t", "r": "\r"}[m.group(4)]
        return ch if ord(ch) in _BREAKS else m.group(0)
    return _CITED.sub(back, text) if "\\" in text else text


def by_name(lookup, name: str):
    """What ``lookup`` finds by a note or memory ID as :func:`name` cites it (a line break
    in a file name is printed ``\\n``, and pasted back so), then as given (a name typed
    with a backslash of its own)."""
    written = unname(name)
    if written == name:
        return lookup(name)
    try:
        found = lookup(written)
        if found:
            return found
    except NotFound:
        pass
    return lookup(name)


_PLACE = re.compile(r"(.+):([0-9]{1,9}(?:-[0-9]{1,9})?)")  # PATH:12, PATH:12-20


def cited(lookup, name: str, lines: str | None):
    """(what ``lookup`` finds, the lines asked as :func:`parse_lines` reads them) for a
    note named as a search cites a place (``PATH:12``, ``PATH:12-20``) when no note has
    that name and no lines were given apart; any other name's error is the name's own."""
    spec = parse_lines(lines)
    try:
        return by_name(lookup, name), spec
    except NotFound as error:
        place = _PLACE.fullmatch(name)
        if spec is not None or place is None:
            raise
        unknown = error
    try:
        return by_name(lookup, place[1]), parse_lines(place[2])
    except NotFound:
        raise unknown from None


def when(iso: str | None) -> str:
    """A stored time as a person reads it: to the second, in UTC ("2025-02-14 15:00:00
    UTC"); the records keep the microseconds."""
    return "-" if iso is None else iso[:19].replace("T", " ") + " UTC"


def replica_position(known_up_to: str | None, cutoff: str | None) -> str | None:
    """What an answer read on a replica can know (None on the database itself): the
    newest knowledge the replica holds, and plainly when the cutoff asked is later."""
    if known_up_to is None:
        return None
    if cutoff is None or parse_cutoff(cutoff) > parse_time(known_up_to):
        asked = "everything known" if cutoff is None else f"as of {moment(cutoff)}"
        return (f"Replica: it knows only up to {when(known_up_to)}; {asked} may include "
                "what the database learned since, which this answer does not.")
    return f"Replica: known up to {when(known_up_to)}; this answer is complete for its cutoff."


def moment(iso: str | None, fraction: bool = True) -> str:
    """A cutoff as a person reads it: none is "everything known", a day's last
    microsecond (how a bare day is read as a cutoff) "the end of 2025-02-14 (UTC)", else
    :func:`when` with the fraction of a second when it has one (the cutoff used, exactly:
    two cutoffs within a second may give two answers), unless ``fraction`` is False (the
    page, whose times are read, not copied)."""
    if iso is None:
        return "everything known"
    if iso.endswith("T23:59:59.999999Z"):
        return f"the end of {iso[:10]} (UTC)"
    part = iso[19:-1].rstrip("0").rstrip(".") if fraction and iso.endswith("Z") else ""
    return when(iso) if not part else when(iso)[:-4] + part + " UTC"


def short(text: str, width: int = SHORT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def place(r: SearchResult) -> str:
    """``note:12-15`` (the snippet's lines in the file), or the memory ID."""
    s = r.snippet
    if r.note and s is not None and s.line_start is not None:
        return f"{name(r.note)}:{span(s.line_start, s.line_end)}"
    return name(r.memory_id)


def span(first: int, last: int) -> str:
    """Lines as cited: ``12`` or ``12-15``."""
    return f"{first}" if first == last else f"{first}-{last}"


# A result names at most this many of the other places its note matched (a long note
# can match in dozens); the rest are counted.
ALSO_SHOWN = 8


def lines_named(spans) -> str:
    """Places in a note's file: "line 6", "lines 6-8", "lines 6, 22-24"."""
    word = "line" if len(spans) == 1 and spans[0][0] == spans[0][1] else "lines"
    return f"{word} " + ", ".join(span(a, b) for a, b in spans)


def _also(spans) -> str:
    """" (also lines 6, 22-24)" for a result's other matching places, or nothing."""
    if not spans:
        return ""
    rest = len(spans) - ALSO_SHOWN
    return (f" (also {lines_named(spans[:ALSO_SHOWN])}"
            + (f" and {rest} more" if rest > 0 else "") + ")")


def named_by_file(r: SearchResult) -> bool:
    """Whether a result's title only repeats its note's file name (Obsidian's titles)."""
    return bool(r.title and r.note and r.note.rsplit("/", 1)[-1] == r.title + ".md")


def heading(r: SearchResult, file_titles: bool = True) -> str:
    """Title and heading path; without ``file_titles``, no title that the place's file
    name already says."""
    shown = r.title if r.title and (file_titles or not named_by_file(r)) else None
    parts = [name(shown)] if shown else []
    parts += [h for h in (r.heading_path or []) if h and h != r.title]
    return " › ".join(parts)


def quoted(text: str) -> str:
    """A query or a word in quotes, escaped as Python writes it, except the zero-width
    (non-)joiners that Persian and Indic words are written with (فایل‌ها)."""
    return repr(text).replace("\\u200c", "\u200c").replace("\\u200d", "\u200d")


def either(words: list[str]) -> str:
    """Words quoted for a sentence: "'a'", "'a' or 'b'", "'a', 'b' or 'c'"."""
    quoted_words = [quoted(w) for w in words]
    return quoted_words[0] if len(quoted_words) == 1 else \
        ", ".join(quoted_words[:-1]) + " or " + quoted_words[-1]


def hits(found: SearchResults, query: str | None, scores: bool = True,
         file_titles: bool = True) -> str:
    """A search as an assistant or a person reads it: one line of place, heading, time
    (and score) per result, then its snippet. ``query`` None: not repeated (the asker
    knows it); ``file_titles`` False: no title the file name says."""
    shown = f"as of {moment(found.as_of)}" if found.as_of else "everything known"
    asked = f" for {quoted(query)}" if query is not None else ""
    if not found:
        return f"No results{asked} ({shown})." + (
            f" Nothing matched: {found.no_answer}." if found.no_answer else "")
    # a word no visible memory holds: the results match the query's other words or meaning
    lacking = f", none holding {either(found.missing)}" if found.missing else ""
    lines = [f"{len(found)} result{'' if len(found) == 1 else 's'}{asked} ({shown}){lacking}:"]
    for i, r in enumerate(found, 1):
        head = heading(r, file_titles)
        also = _also(r.also)
        lines.append(f"{i}. {place(r)}{also}" + (f" — {head}" if head else "")
                     + f" (known {when(r.known_at)}"
                     + (f", score {r.score:.3f})" if scores else ")"))
        text = r.snippet.text if r.snippet is not None else short(r.content)
        # an empty note (its name or aliases matched) says so rather than print a blank
        lines += [f"   {line}" for line in text.split("\n")] if text.strip() else ["   (empty)"]
        for m in r.more:  # more of the same note: its next-best sections
            where = (lines_named([(m.snippet.line_start, m.snippet.line_end)])
                     if m.snippet.line_start is not None else f"lines {name(m.memory_id)}")
            lines.append(f"   {where}"
                         + (f" — {' › '.join(m.heading_path)}" if m.heading_path else "")
                         + ":")
            lines += [f"   {line}" for line in m.snippet.text.split("\n")]
        for e in r.embeds:
            lines.append(f"   [embedded from {name(e.source or e.note)}]")
            lines += [f"   > {line}" for line in embedded(e.text).split("\n")]
    return "\n".join(lines)


def embedded(text: str, width: int = SHORT) -> str:
    """An embed's text in a search result: its lines, at most ``width`` characters."""
    if len(text) <= width:
        return text
    cut = text[:width]
    return cut[:max(cut.rfind(" "), cut.rfind("\n"), width // 2)].rstrip() + "…"


def folders(s: DaemonStatus, replica: bool = False) -> str:
    """Which folders are in the store, and whether the daemon watches them (read in a
    ``replica``: whether its heartbeat there is recent)."""
    watched = s.watched_folders if s.daemon_running else []
    rest = [f for f in s.imported_folders if f not in watched]
    parts = [f"{', '.join(watched)} (watched)"] if watched else []
    if rest:
        why = daemon_state(False, True) if replica else "the daemon is not running"
        parts.append(", ".join(rest) + " (imported; not watched"
                     + (")" if s.daemon_running else f": {why})"))
    return "; ".join(parts) or "-"


def daemon_state(running: bool, replica: bool = False) -> str:
    """Whether the daemon runs, as a status says it. Read in a replica, a stale heartbeat
    is all there is to see: the daemon stopped, or the replica stopped receiving."""
    if running:
        return "running"
    return ("no recent heartbeat in the replica (the daemon stopped, or the replica "
            "stopped receiving)" if replica else "not running")


def duration(seconds: float) -> str:
    """A time span as people say it: 40 s, 12 min, 1.5 h, 3.2 days, 73.1 years."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    if seconds < 2 * 365.25 * 86400:
        return f"{seconds / 86400:.1f} days"
    return f"{seconds / (365.25 * 86400):.1f} years"


OPEN_END = 2**31  # "12-": to the note's last line, whatever its length


def parse_lines(spec: str | None) -> tuple[int, int] | None:
    """``"10-40"``, ``"12"`` or ``"12-"`` (to the end) as (first, last), 1-based
    inclusive (an open end is a last line past any note); None for all."""
    if spec is None or not str(spec).strip():
        return None
    text = str(spec).strip()
    first, dash, last = text.partition("-")
    try:
        a = int(first)
        b = int(last) if last.strip() else (OPEN_END if dash else a)
    except ValueError:
        raise InvalidArgument(f"lines: {spec!r} is not a line or a range like 10-40") from None
    if a < 1 or b < a:
        raise InvalidArgument(f"lines: {spec!r} is not a range of lines from 1 on")
    return a, b


def note_part(view: NoteView, section: str | None = None,
              lines: tuple[int, int] | None = None) -> tuple[int, int, str]:
    """(first line, last line, text) of a note: all of it, one section (its memory ID, or
    the last heading of its heading path) with its subsections, up to the next heading of
    the same or a higher level, or a line range."""
    all_lines = view.text.split("\n")
    if view.text.endswith("\n"):
        all_lines.pop()  # a final newline ends the last line; it starts none
    first, last = 1, len(all_lines)
    if section is None and lines is None:
        return first, last, view.text
    if section is not None:
        wanted = section.strip()
        match = [s for s in view.sections if s.memory_id == wanted
                 or (s.heading_path and same_heading(s.heading_path[-1], wanted))]
        if not match:
            raise InvalidArgument(f"section: {section!r} is not a section of {view.note} "
                                  "(give a memory ID or a heading)")
        first, last = match[0].line_start, match[-1].line_end
        if not match[0].content:  # the empty section of a note of properties alone
            return first, last, ""
        for s in view.sections[view.sections.index(match[0]) + 1:]:
            if not under(match[0].heading_path, s.heading_path):
                break
            last = max(last, s.line_end)
    if lines is not None:
        first, last = max(first, lines[0]), min(last, lines[1])
        if first > last:
            raise InvalidArgument(f"lines: the note has {len(all_lines)} lines")
    return first, last, "\n".join(all_lines[first - 1:last])


def numbered(first: int, text: str, embeds: list | None = None) -> str:
    """The text with its file line numbers; after a line that embeds something, the
    embedded text as known at the same cutoff, marked, with where it comes from."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    width = len(str(first + len(lines) - 1))
    return _through(first, lines, embeds, lambda n, line: f"{n:>{width}}  {line}",
                    " " * width + "  ↳ ")


def folder(found: FolderListing) -> str:
    """A folder as known at a cutoff: its subfolders, then one line per note."""
    shown = f"as of {moment(found.as_of)}" if found.as_of else "everything known"
    lines = [f"{name(found.folder)}/ ({shown}): {counted(len(found.notes) + found.more, 'note')}"
             + (f", {len(found.folders)} folders" if found.folders else "")]
    lines += [f"{name(sub)}/ ({counted(n, 'note')} below)" for sub, n in found.folders.items()]
    lines += [name(e.note) + (f" — {name(e.title)}" if e.title else "")
              + f" (changed {when(e.known_at)})"
              for e in found.notes]
    if found.more:
        lines.append(f"… and {counted(found.more, 'more note', 'more notes')}")
    return "\n".join(lines)


def tagged(found: TagListing) -> str:
    """The notes with some tags as known at a cutoff: one line per note."""
    shown = f"as of {moment(found.as_of)}" if found.as_of else "everything known"
    total = len(found.notes) + found.more
    lines = [f"{counted(total, 'note')} tagged "
             + " or ".join(f"#{name(t)}" for t in found.tags) + f" ({shown})"]
    lines += [name(e.note) + (f" — {name(e.title)}" if e.title else "")
              + f" (changed {when(e.known_at)})" for e in found.notes]
    if found.more:
        lines.append(f"… and {counted(found.more, 'more note', 'more notes')}")
    return "\n".join(lines)


def read_through(view: NoteView) -> str:
    """A note's Markdown with what it embeds read through, as ``memory_read`` shows it:
    after a line that embeds something, the embedded text as known at the same cutoff,
    quoted, with where it comes from."""
    lines = view.text.split("\n")
    return _through(1, lines, view.embeds, lambda n, line: line, "> ")


def _through(first: int, lines: list[str], embeds: list | None, line_of, pad: str) -> str:
    at: dict[int, list] = {}
    for e in embeds or []:
        at.setdefault(e.line, []).append(e)
    out = []
    for n, line in enumerate(lines, first):
        out.append(line_of(n, line))
        for e in at.get(n, []):
            if not e.text:
                out.append(f"{pad}[embed of {e.target}: {e.kind}, nothing to show]")
                continue
            out.append(f"{pad}[embedded from {name(e.source or e.note)}, "
                       f"known {when(e.known_at)}]")
            out += [f"{pad}{x}" for x in e.text.split("\n")]
    return "\n".join(out)


def gone(view: NoteView) -> str | None:
    """The one line for a note no longer at its path by the cutoff: where it moved, or
    when it was deleted; None for a note that is there."""
    if not view.deleted:
        return None
    shown = f" as of {moment(view.as_of)}" if view.as_of else ""
    then = f" (then {name(view.path_then)})" if view.path_then else ""
    if view.moved_to:
        return (f"{name(view.note)}{then}: moved to {name(view.moved_to.new_note)} at "
                f"{when(view.moved_to.known_at)}{shown}.")
    return f"{name(view.note)}{then}: deleted at {when(view.known_at)}{shown}."


def note(view: NoteView, first: int, last: int, text: str, outline: bool = True) -> str:
    """A note (or part of it) with line numbers; with ``outline``, its sections' line
    spans first (the headings are in a whole note's text already)."""
    if view.deleted:
        return gone(view)
    shown = f" as of {moment(view.as_of)}" if view.as_of else ""
    then = f" (then {name(view.path_then)})" if view.path_then else ""
    total = len(view.text.split("\n")) - view.text.endswith("\n")
    head = [f"{name(view.note)} — {name(view.title)}{shown}{then} "
            f"(changed {when(view.changed_at)}); "
            f"lines {first}-{last}" + (f" of {total}" if (first, last) != (1, total) else "")]
    if view.tags:
        head.append("tags: " + ", ".join(view.tags))
    if outline:
        head.append("sections: " + "; ".join(
            f"{s.line_start}-{s.line_end} {' › '.join(s.heading_path) or '(top)'}"
            for s in view.sections))
    return "\n".join(head) + "\n\n" + numbered(first, text, view.embeds)


def no_more() -> str:
    """What a search says when it returned fewer results than asked because the rest would
    share no word with the query and be far from it in meaning: no hidden matches, only
    padding not shown (how many places were left empty: ``left_out`` in JSON)."""
    return ("No more results: nothing else holds a word of the query or comes close enough "
            "in meaning")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 note``, ``2 notes`` (``plural`` for a noun that takes another form)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def changes(found: Changes) -> str:
    span = f"from {moment(found.since)} to {moment(found.until)}"  # both exact
    c = found.counts
    if found.query is None:
        if not found.notes:
            return f"Nothing changed {span}."
        lines = [f"{counted(c.notes, 'note')} changed {span} ({c.notes_added} new, "
                 f"{c.notes_deleted} deleted, {c.notes_moved} moved); "
                 f"sections {c.added} added, {c.revised} revised, "
                 f"{c.retracted} retracted:"]
        for n in found.notes:
            what = f"moved from {name(n.moved_from)}" if n.moved_from else n.change
            lines.append(f"- {name(n.note or n.sections[0].memory_id)}"
                         + (f" — {name(n.title)}" if n.title else "")
                         + f" ({what}, last change {when(n.latest)})")
            lines += [f"    {change}" for change in record_changes(n.record_changes)]
            for s in n.sections:
                why = f" ({s.why})" if s.why else ""
                parts = f" ({s.parts} parts)" if s.parts > 1 else ""
                lines.append(f"    {s.change}{why}: "
                             f"{' › '.join(s.heading_path or []) or name(s.memory_id)}{parts}")
                if s.diff:
                    lines.append(f"      {short(s.diff, 400)}")
        return "\n".join(lines)
    lines = [f"{found.query!r} {span}: " + (", ".join(f"{v} {k}" for k, v in c.to_dict().items() if v)
                                             or "no results either time")]
    for r in found.results:
        ranks = f"#{r.rank_before or '-'} -> #{r.rank_after or '-'}"
        why = f" ({r.why})" if r.why else ""
        came = f" (moved from {name(r.moved_from)})" if r.moved_from else ""
        lines.append(f"- {r.change}{why} {ranks} {name(r.memory_id)}{came}")
        if r.diff:
            lines.append(f"    {short(r.diff, 400)}")
    return "\n".join(lines)


def property_value(value: str | None, written=repr) -> str:
    """A property's value in a change: ``(not set)`` where it is absent, ``(empty)`` where
    it has no value, else the value as ``written`` gives it."""
    return "(not set)" if value is None else "(empty)" if value == "" else written(value)


def record_changes(changes: dict | None) -> list[str]:
    """A note record's changes, a line each (``tags: ['a'] -> ['a', 'b']``); each changed
    property on its own line (``status: 'draft' -> 'done'``, see ``property_value``)."""
    lines = []
    for field, (old, new) in (changes or {}).items():
        if field == "properties":
            lines += [f"{key}: {property_value(old.get(key))} -> "
                      f"{property_value(new.get(key))}" for key in new]
        else:
            lines.append(f"{field}: {old!r} -> {new!r}")
    return lines


def links(found) -> str:
    """A note's links at a cutoff: outgoing, then backlinks, each with its place."""
    shown = f" as of {moment(found.as_of)}" if found.as_of else ""

    def part(link) -> str:
        """The section a link goes to, as headings (``Budget › Q3``), and its block."""
        path = " › ".join(link.headings)
        block = ("^" + link.target.rsplit("^", 1)[-1] if link.kind == "block" else "")
        return " › ".join(x for x in (path, block) if x)

    def where(link) -> str:
        return name(link.note) + (f" › {part(link)}" if part(link) else "")
    if found.deleted:
        went = (f", moved to {name(found.moved_to.new_note)} at "
                f"{when(found.moved_to.known_at)}" if found.moved_to else "")
        return f"{name(found.note)}{shown}: deleted by then{went}; no links."
    lines = [f"{name(found.note)}{shown}: {counted(len(found.outgoing), 'link')} out, "
             f"{counted(len(found.backlinks), 'backlink')}"]
    for link in found.outgoing:
        kind = "embeds" if link.embed else "links to"
        dest = where(link) if link.note else f"{link.target} ({link.kind})"
        lines.append(f"  line {link.line}: {kind} {dest}")
    for link in found.backlinks:
        kind = "embedded by" if link.embed else "linked from"
        lines.append(f"  {kind} {name(link.source_note)}:{link.line}"
                     + (f" (to {part(link)})" if part(link) else ""))
    return "\n".join(lines)


def history(revisions: list[RevisionRecord], *, source: bool = False) -> str:
    """Revisions one after another (:func:`revision`); one whose text and title are those
    of the revision before it (a section whose span in the file changed, a blank line
    more or less) says so instead of repeating them."""
    def shown(r: RevisionRecord) -> tuple | None:
        if r.deleted or r.purged is not None:
            return None
        return r.memory_id, r.content, r.title, (r.metadata or {}).get("properties")

    lines, before = [], None
    for r in revisions:
        text = revision(r, source=source)
        if before is not None and shown(r) is not None and shown(r) == shown(before):
            moved = (r.metadata or {}).get("lines") != (before.metadata or {}).get("lines")
            text = text.split("\n", 1)[0] + ("\n    (the same text; its lines in the file "
                                             "changed)" if moved else "\n    (the same text)")
        lines.append(text)
        before = r
    return "\n".join(lines)


def revision(r: RevisionRecord, *, source: bool = False) -> str:
    """One revision in a line or two; ``source`` adds where it came from (the CLI's
    history shows it, an assistant's does not need it)."""
    valid = when(r.valid_from) + (f" to {when(r.valid_to)}" if r.valid_to else " on")
    head = f"#{r.revision_id} {name(r.memory_id)} known {when(r.known_at)} · valid {valid}"
    if r.purged is not None:
        why = f" ({r.purged.reason})" if r.purged.reason else ""
        return f"{head} · PURGED at {when(r.purged.at)}{why}: its text was erased"
    if r.deleted and r.moved_to:
        return f"{head} · moved to {name(r.moved_to)} (hides #{r.hides_revision})"
    if r.deleted:
        return f"{head} · {'deleted' if r.note else 'forgotten'} (hides #{r.hides_revision})"
    title = f" — {name(r.title)}" if r.title else ""
    src = f" · source {name(r.source)}" if source and r.source else ""
    # A note's first section carries its properties: an edit of one alone is told apart.
    properties = (r.metadata or {}).get("properties")
    told = f"\n    property values: {short('; '.join(properties.split(chr(10))))}" \
        if isinstance(properties, str) and properties else ""
    return f"{head}{src}\n    {short(r.content)}{title}{told}"
