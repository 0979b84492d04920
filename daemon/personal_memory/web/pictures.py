"""Pictures drawn on the server, as SVG markup (every text escaped): activity over time,
and a note's timeline. Each mark is a link to the page at that time. Pure functions."""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

from ..records import Activity, NoteTimeline
from ..times import format_time, parse_time


def _x(t: int, first: int, last: int, width: float, pad: float) -> float:
    span = max(last - first, 1)
    return pad + (t - first) / span * (width - 2 * pad)


def activity(found: Activity, link: dict, width: int = 900, height: int = 70) -> str:
    """Bars of revisions per bucket; a bar links to the search as of the bucket's end."""
    if not found.starts:
        return ""
    starts = [parse_time(s) for s in found.starts]
    step = 86_400_000_000 * (7 if found.bucket == "week" else 1)
    first, last = starts[0], starts[-1] + step
    top = max(found.revisions)
    bar = max(2.0, (width - 20) / max((last - first) / step, 1) - 1)
    marks = []
    for start, count in zip(starts, found.revisions):
        x = _x(start, first, last, width, 10)
        h = max(2.0, (height - 16) * count / top)
        end = start + step - 1
        href = "/?" + urlencode({**link, "as_of": format_time(end)})
        marks.append(f'<a href="{escape(href)}"><rect x="{x:.1f}" y="{height - 12 - h:.1f}" '
                     f'width="{bar:.1f}" height="{h:.1f}" class="bar">'
                     f'<title>{escape(format_time(start)[:10])}: {count} revisions</title>'
                     '</rect></a>')
    return (f'<svg class="activity" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="revisions over time">{"".join(marks)}'
            f'<text x="10" y="{height - 1}" class="axis">{escape(found.starts[0][:10])}</text>'
            f'<text x="{width - 10}" y="{height - 1}" class="axis" text-anchor="end">'
            f'{escape(found.starts[-1][:10])}</text></svg>')


def timeline(found: NoteTimeline, note: str, width: int = 900) -> str:
    """One row per section (and one for the note's record), a mark per revision at the
    time it became known: a dot for a text, a cross for a deletion, a square for a purge;
    a dashed line for each move. A mark links to the note as of that time."""
    revs = found.revisions
    if not revs:
        return ""
    times = [parse_time(r.known_at) for r in revs]
    first, last = min(times), max(times)
    rows: dict[str, int] = {}
    for r in revs:
        rows.setdefault(_row_key(r), len(rows))
    row_h, left, pad = 18, 230, 12
    height = row_h * len(rows) + 30
    out = [f'<svg class="timeline" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="the note\'s revisions over time">']
    for key, i in rows.items():
        y = 16 + i * row_h
        label = key if len(key) <= 34 else "…" + key[-33:]
        out.append(f'<text x="4" y="{y + 4}" class="row">{escape(label)}</text>'
                   f'<line x1="{left}" x2="{width - pad}" y1="{y}" y2="{y}" class="lane"/>')
    for move in found.moves:
        x = left + _x(parse_time(move.known_at), first, last, width - left, pad)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="4" y2="{height - 20}" class="move">'
                   f'<title>moved from {escape(move.old_note)} at {escape(move.known_at)}'
                   f'</title></line>')
    for r, t in zip(revs, times):
        x = left + _x(t, first, last, width - left, pad)
        y = 16 + rows[_row_key(r)] * row_h
        href = "/note?" + urlencode({"id": note, "as_of": r.known_at})
        what = ("purged" if r.purged else "deleted" if r.deleted else "revision")
        tip = escape(f"#{r.revision_id} {what}, known {r.known_at}")
        if r.purged:
            mark = f'<rect x="{x - 4:.1f}" y="{y - 4}" width="8" height="8" class="purged"/>'
        elif r.deleted:
            mark = (f'<path d="M{x - 4:.1f} {y - 4}L{x + 4:.1f} {y + 4}M{x - 4:.1f} {y + 4}'
                    f'L{x + 4:.1f} {y - 4}" class="deleted"/>')
        else:
            mark = f'<circle cx="{x:.1f}" cy="{y}" r="4" class="revision"/>'
        out.append(f'<a href="{escape(href)}" class="mark"><title>{tip}</title>{mark}</a>')
    out.append(f'<text x="{left}" y="{height - 4}" class="axis">'
               f'{escape(revs[0].known_at[:16])}</text><text x="{width - pad}" '
               f'y="{height - 4}" class="axis" text-anchor="end">'
               f'{escape(max(revs, key=lambda r: parse_time(r.known_at)).known_at[:16])}'
               '</text></svg>')
    return "".join(out)


def _row_key(r) -> str:
    """A section's row: its heading path (the same under every path the note had)."""
    note = r.note or ""
    if r.memory_id == note + "#":
        return "(the note: title, tags, order)"
    if note and r.memory_id.startswith(note + "#"):
        return r.memory_id[len(note) + 1:].replace("#", " › ")
    return "(top)" if r.memory_id == note else r.memory_id
