"""Pictures drawn on the server, as SVG markup (every text escaped): activity over time,
and a note's timeline. Each mark is a link to the page at that time. Pure functions."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import timedelta
from html import escape
from urllib.parse import urlencode

from ..notes.markdown import id_text
from ..records import Activity, NoteTimeline
from ..render import when
from ..times import DAY_US, format_time, from_micros, parse_time, to_micros

# The activity chart keeps every bar wide enough to click: past this many periods with a
# change, days become weeks, then months, then years.
MOST_BARS = 90
# A history of at most this many days is shown by the hour (a first day's edits, each a
# moment the slider can stop at), more by the day; one of at most MINUTELY_HOURS hours by
# the minute (a first session's edits).
HOURLY_DAYS = 2
MINUTELY_HOURS = 2
HOUR_US = 3_600_000_000
MINUTE_US = 60_000_000
WIDTH, PAD = 900, 10
# An axis label's width, in the chart's units, per character (10px system-ui, its widest
# digits and letters), and the least room between two labels.
CHAR_W, LABEL_GAP = 6.2, 14.0


@dataclass(frozen=True)
class Period:
    """A day, week, month or year in which something became known."""
    start: int  # microseconds, the period's first
    end: int  # its last microsecond: the cutoff "as of this period"
    revisions: int
    label: str  # how a person names it: 2025-02-14, week of 2025-02-10, 2025-02, 2025

    @property
    def day(self) -> str:
        """The period as a cutoff is typed: its last day, YYYY-MM-DD (as a cutoff, a day
        means its end: times.py), or for an hour its last moment."""
        return format_time(self.end)[:10] if self.end - self.start + 1 >= DAY_US else \
            format_time(self.end)


def periods(found: Activity, most: int = MOST_BARS) -> list[Period]:
    """The activity's hours or days, coarsened until at most ``most`` periods hold a
    change."""
    days = [(parse_time(s), n) for s, n in zip(found.starts, found.revisions)]
    size = {"minute": MINUTE_US, "hour": HOUR_US, "week": 7 * DAY_US}.get(found.bucket, DAY_US)
    given = [Period(s, s + size - 1, n, _label(s, found.bucket)) for s, n in days]
    out = given
    finer = {"minute": ("hour", "day"), "hour": ("day",)}.get(found.bucket, ())
    for unit in finer + ("week", "month", "year"):
        if len(out) <= most or (unit == "week" and found.bucket == "week"):
            continue
        grouped: dict[int, list[Period]] = {}
        for p in given:  # each day into the period that holds it
            grouped.setdefault(_start_of(p.start, unit), []).append(p)
        out = [Period(s, _end_of(s, unit), sum(p.revisions for p in ps), _label(s, unit))
               for s, ps in grouped.items()]
    return out


def _start_of(us: int, unit: str) -> int:
    if unit == "hour":
        return us - us % HOUR_US
    d = from_micros(us).replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "week":
        d -= timedelta(days=d.weekday())
    elif unit == "day":
        pass
    elif unit == "month":
        d = d.replace(day=1)
    else:
        d = d.replace(month=1, day=1)
    return to_micros(d)


def _end_of(start: int, unit: str) -> int:
    d = from_micros(start)
    if unit == "hour":
        return start + HOUR_US - 1
    if unit in ("day", "week"):
        return start + (7 if unit == "week" else 1) * DAY_US - 1
    if unit == "month":
        nxt = d.replace(year=d.year + d.month // 12, month=d.month % 12 + 1)
    else:
        nxt = d.replace(year=d.year + 1)
    return to_micros(nxt) - 1


def _label(start: int, unit: str) -> str:
    day = format_time(start)[:10]
    clock = f"{day} {format_time(start)[11:16]} UTC"
    return {"minute": clock, "hour": clock, "day": day,
            "week": f"week of {day}", "month": day[:7], "year": day[:4]}[unit]


def activity_of(store, namespace: str) -> list[Period]:
    """The periods of a store's history the chart and the slider show: by the day, by
    the hour when it spans at most :data:`HOURLY_DAYS` days, by the minute when at most
    :data:`MINUTELY_HOURS` hours."""
    by_day = store.activity(namespace=namespace)
    if not by_day.starts:
        return periods(by_day)
    span = parse_time(by_day.starts[-1]) - parse_time(by_day.starts[0])
    if span >= HOURLY_DAYS * DAY_US:
        return periods(by_day)
    by_hour = store.activity(namespace=namespace, bucket="hour")
    if parse_time(by_hour.starts[-1]) - parse_time(by_hour.starts[0]) < MINUTELY_HOURS * HOUR_US:
        return periods(store.activity(namespace=namespace, bucket="minute"))
    return periods(by_hour)


def position(found: list[Period], cutoff: int | None) -> int:
    """Where a cutoff stands among the periods: the index of the last period it reaches
    into, or len(periods) for everything known (no cutoff, or one past the last period's
    end: nothing was learnt after it), or -1 before the first (nothing known yet: no bar
    is the moment). A cutoff within the last period, its end included (that bar's own
    cutoff), is that bar."""
    if cutoff is None or not found or cutoff > found[-1].end:
        return len(found)
    return sum(p.start <= cutoff for p in found) - 1


def activity(found: list[Period], link: dict, shown: int) -> str:
    """A bar per period, evenly spaced like the slider under it, and a last slot for
    everything known; a bar links to the search as of its period's end. ``shown`` (a
    position) is outlined and marked."""
    if not found:
        return ""
    height, slots = 84, len(found) + 1
    slot = (WIDTH - 2 * PAD) / slots
    bar = max(slot * 0.7, 1.0)
    top = max(p.revisions for p in found)
    marks = []
    for i, p in enumerate(found):
        x = PAD + i * slot + (slot - bar) / 2
        h = max(3.0, (height - 34) * math.sqrt(p.revisions / top))
        href = "/?" + urlencode({**link, "as_of": p.day})
        cls = "bar shown" if i == shown else "bar"
        marks.append(f'<a href="{escape(href)}"><rect x="{x:.1f}" y="{height - 22 - h:.1f}" '
                     f'width="{bar:.1f}" height="{h:.1f}" class="{cls}">'
                     f'<title>{escape(p.label)}: {p.revisions} revision'
                     f'{"" if p.revisions == 1 else "s"}; as of its end</title></rect></a>')
        if i and found[i - 1].end + 1 < p.start:  # time passed with nothing learnt
            gx = PAD + i * slot
            marks.append(f'<line x1="{gx:.1f}" x2="{gx:.1f}" y1="{height - 30}" '
                         f'y2="{height - 20}" class="gap"/>')
    now_x = PAD + (slots - 1) * slot + slot / 2
    href = "/?" + urlencode(link)
    marks.append(f'<a href="{escape(href)}"><text x="{now_x:.1f}" y="{height - 24}" '
                 f'class="now" text-anchor="middle">now<title>everything known</title>'
                 '</text></a>')
    mx = PAD + shown * slot + slot / 2
    marks.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="2" y2="{height - 20}" '
                 'class="moment"><title>the moment shown</title></line>')
    for i, x, anchor in axis_labels(found, slot):
        tick = PAD + i * slot + slot / 2
        marks.append(f'<line x1="{tick:.1f}" x2="{tick:.1f}" y1="{height - 20}" '
                     f'y2="{height - 16}" class="tick"/><text x="{x:.1f}" y="{height - 5}" '
                     f'class="axis" text-anchor="{anchor}">{escape(found[i].label)}</text>')
    return (f'<svg class="activity" viewBox="0 0 {WIDTH} {height}" role="img" '
            f'aria-label="revisions over time" data-slots="{slots}">{"".join(marks)}</svg>')


def axis_labels(found: list[Period], slot: float) -> list[tuple[int, float, str]]:
    """(period, x, text-anchor) of the periods labelled under the chart: every so many, so
    that no two labels overlap and none runs past the chart's edges (a label at an edge
    is aligned to it rather than centred under its tick)."""
    if not found:
        return []
    wide = max(len(p.label) for p in found) * CHAR_W
    step = max(1, math.ceil((wide + LABEL_GAP) / slot))
    out, right, i = [], -LABEL_GAP, 0
    while i < len(found):
        centre = PAD + i * slot + slot / 2
        half = len(found[i].label) * CHAR_W / 2
        if centre - half < 0:
            x, anchor, left, end = 0.0, "start", 0.0, 2 * half
        elif centre + half > WIDTH:
            x, anchor, left, end = float(WIDTH), "end", WIDTH - 2 * half, float(WIDTH)
        else:
            x, anchor, left, end = centre, "middle", centre - half, centre + half
        if left < right + LABEL_GAP:  # too close to the last one (one set at an edge)
            i += 1
            continue
        out.append((i, x, anchor))
        right, i = end, i + step
    return out


def slider_inset(found: list[Period]) -> float:
    """How far (a percentage of the chart's width) the first and the last slot's centres
    stand in from the chart's edges: the slider is inset by as much, so its positions sit
    under the bars."""
    slot = (WIDTH - 2 * PAD) / (len(found) + 1)
    return round((PAD + slot / 2) / WIDTH * 100, 3)


def timeline(found: NoteTimeline, note: str, shown: int | None = None,
             width: int = WIDTH) -> str:
    """One row per section (and one for the note's record), a mark per revision at the
    time it became known: a dot for a text, a cross for a deletion, a square for a purge,
    an arrow where the note moved here, and one where it moved away (its old path's
    tombstones are part of the move, not deletions). A mark links to the note as of that
    time, a move away to where it went; ``shown`` (a cutoff) is marked."""
    revs = found.revisions
    if not revs:
        return ""
    times = [parse_time(r.known_at) for r in revs]
    first, last = min(times), max(times)
    if shown is not None:
        first, last = min(first, shown), max(last, shown)
    away = {(m.old_note, parse_time(m.known_at)): m.new_note for m in found.moved_away}
    moved = {(m.old_note, parse_time(m.known_at)) for m in found.moves} | set(away)
    arrived = {(m.new_note, parse_time(m.known_at)): m.old_note for m in found.moves}
    rows: dict[str, int] = {}
    written: dict[str, str] = {}  # a row's heading path as written (its newest revision's)
    for r in revs:
        key = _row_key(r)
        rows.setdefault(key, len(rows))
        written[key] = _written(key, r.heading_path) or written.get(key, key)
    shared = _shared_heading(list(written.values()), {r.title for r in revs if r.title})
    labels = {}
    for key in rows:
        label = written[key]
        label = label[len(shared):] if shared and label.startswith(shared) else label
        labels[key] = label if len(label) <= 34 else "…" + label[-33:]
    # the lanes start right after the longest label (10 px text), so short headings leave
    # the marks the room (a phone shows only part of the picture's width)
    row_h, pad = 18, 12
    left = min(230, max(90, round(8 + CHAR_W * max(len(x) for x in labels.values()))))
    legend_y = row_h * len(rows) + 44
    height = legend_y + 8
    axis_y = row_h * len(rows) + 14

    def x_of(t: int) -> float:
        return left + pad + (t - first) / max(last - first, 1) * (width - left - 2 * pad)

    out = [f'<svg class="timeline" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="the note\'s revisions over time">']
    for key, i in rows.items():
        y = 16 + i * row_h
        out.append(f'<text x="4" y="{y + 4}" class="row">{escape(labels[key])}</text>'
                   f'<line x1="{left}" x2="{width - pad}" y1="{y}" y2="{y}" class="lane"/>')
    for move in found.moves + found.moved_away:
        x = x_of(parse_time(move.known_at))
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="4" y2="{axis_y - 8}" class="move">'
                   f'<title>moved from {escape(move.old_note)} to {escape(move.new_note)} at '
                   f'{escape(when(move.known_at))}</title></line>')
    for r, t in zip(revs, times):
        x, y = x_of(t), 16 + rows[_row_key(r)] * row_h
        if r.deleted and not r.purged and (r.note, t) in moved:
            went = away.get((r.note, t))
            if went is not None and r.memory_id == f"{r.note}#":  # once, on the record's row
                out.append(_departure(x, y, went, r.known_at))
            continue  # the old path's side of a move: not a deletion
        came_from = arrived.get((r.note, t))
        renamed = r.deleted and not r.purged and r.moved_to  # a heading's rename
        href = "/note?" + urlencode({"id": note, "as_of": r.known_at})
        what = ("purged" if r.purged else
                f"renamed to {_renamed_to(r, written)}" if renamed else
                "deleted" if r.deleted else
                f"moved from {came_from}" if came_from else "revision")
        tip = escape(f"#{r.revision_id} {what}, known {when(r.known_at)}")
        if r.purged:
            mark = f'<rect x="{x - 4:.1f}" y="{y - 4}" width="8" height="8" class="purged"/>'
        elif renamed:
            mark = (f'<path d="M{x - 5:.1f} {y - 5}L{x + 5:.1f} {y}L{x - 5:.1f} {y + 5}Z" '
                    'class="moved renamed"/>')
        elif r.deleted:
            mark = (f'<path d="M{x - 4:.1f} {y - 4}L{x + 4:.1f} {y + 4}M{x - 4:.1f} {y + 4}'
                    f'L{x + 4:.1f} {y - 4}" class="deleted"/>')
        elif came_from:
            mark = (f'<path d="M{x - 5:.1f} {y - 5}L{x + 5:.1f} {y}L{x - 5:.1f} {y + 5}Z" '
                    'class="moved"/>')
        else:
            mark = f'<circle cx="{x:.1f}" cy="{y}" r="4" class="revision"/>'
        out.append(f'<a href="{escape(href)}" class="mark"><title>{tip}</title>{mark}</a>')
    if shown is not None:
        x = x_of(shown)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="2" y2="{axis_y - 8}" class="moment">'
                   f'<title>the moment shown: {escape(when(format_time(shown)))}</title></line>')
    out.append(f'<line x1="{left + pad}" x2="{width - pad}" y1="{axis_y - 8}" '
               f'y2="{axis_y - 8}" class="lane"/>')
    for x, anchor, label in tick_labels(_ticks(first, last), last - first, x_of):
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{axis_y - 10}" y2="{axis_y - 4}" '
                   f'class="tick"/><text x="{x:.1f}" y="{axis_y + 6}" class="axis" '
                   f'text-anchor="{anchor}">{escape(label)}</text>')
    out.append(_legend(left, legend_y, bool(found.moves), bool(found.moved_away),
                       shown is not None,
                       any(r.deleted and not r.purged and r.moved_to for r in revs)))
    out.append("</svg>")
    return "".join(out)


def _ticks(first: int, last: int, most: int = 6) -> list[int]:
    """Up to ``most`` evenly spaced moments from the first to the last (both included)."""
    if last <= first:
        return [first]
    return [first + (last - first) * i // (most - 1) for i in range(most)]


def tick_labels(ticks: list[int], span: int, x_of) -> list[tuple[float, str, str]]:
    """(x, text-anchor, label) of the ticks to label: the first from its tick onwards, the
    last (at the axis's end) up to it, the others centred; a label that says what the one
    before said (two ticks in one minute or day), or that would touch it, is left out."""
    out: list[tuple[float, str, str]] = []
    right = float("-inf")  # where the last label kept ends
    for i, t in enumerate(ticks):
        label, x = _tick_label(t, span), x_of(t)
        anchor = ("start" if i == 0 else "end" if i == len(ticks) - 1 else "middle")
        begin, end = _extent(x, anchor, label)
        if out and anchor == "end" and len(out) > 1 and begin < right + LABEL_GAP:
            out.pop()  # the axis's end is named rather than the tick before it
            right = _extent(*out[-1])[1]
        if out and (label == out[-1][2] or begin < right + LABEL_GAP):
            continue
        out.append((x, anchor, label))
        right = end
    return out


def _extent(x: float, anchor: str, label: str) -> tuple[float, float]:
    """Where a label placed at ``x`` with ``anchor`` begins and ends."""
    width = CHAR_W * len(label)
    begin = x if anchor == "start" else x - width if anchor == "end" else x - width / 2
    return begin, begin + width


def _tick_label(t: int, span: int) -> str:
    text = format_time(t)
    return text[:10] if span > 3 * DAY_US else text[:16].replace("T", " ")


def _departure(x: float, y: int, went: str, known_at: str) -> str:
    """The mark where a note left this path: an arrow out, linking to where it went."""
    href = "/note?" + urlencode({"id": went})
    tip = escape(f"moved to {went}, known {when(known_at)}")
    return (f'<a href="{escape(href)}" class="mark away"><title>{tip}</title>'
            f'<path d="M{x - 5:.1f} {y - 5}L{x + 5:.1f} {y}L{x - 5:.1f} {y + 5}Z" '
            'class="moved away"/></a>')


def _legend(left: int, y: int, moves: bool, away: bool, shown: bool,
            renamed: bool = False) -> str:
    items = [('<circle cx="4" cy="-4" r="4" class="revision"/>', "a text"),
             ('<path d="M0 -8L8 0M0 0L8 -8" class="deleted"/>', "deleted"),
             ('<rect x="0" y="-8" width="8" height="8" class="purged"/>', "purged")]
    if moves:
        items.append(('<path d="M0 -9L10 -4L0 1Z" class="moved"/>', "moved here"))
    if away:
        items.append(('<path d="M0 -9L10 -4L0 1Z" class="moved away"/>', "moved away"))
    if renamed:
        items.append(('<path d="M0 -9L10 -4L0 1Z" class="moved renamed"/>',
                      "heading renamed"))
    if shown:
        items.append(('<line x1="4" x2="4" y1="-10" y2="2" class="moment"/>', "shown"))
    out, x = [f'<g class="legend" transform="translate({left},{y})">'], 0
    for mark, text in items:
        out.append(f'<g transform="translate({x},0)">{mark}<text x="14" y="0" '
                   f'class="axis">{text}</text></g>')
        x += 24 + 7 * len(text)
    return "".join(out) + "</g>"


def _shared_heading(keys: list[str], titles: set[str]) -> str:
    """The first heading every section's row starts with when it is the note's title (one
    of ``titles``: its one top heading), with its separator: the page's title says it
    already, so the rows show what follows ("Demo", not "…Falke – 18.11.2026 › Demo").
    Another heading they share ("# C# tips" after a preamble) stays."""
    paths = [k for k in keys if not k.startswith("(")]
    firsts = {k.split(" › ", 1)[0] for k in paths}
    if len(firsts) != 1 or not any(" › " in k for k in paths) or not firsts <= titles:
        return ""
    return firsts.pop() + " › "


def _written(key: str, heading_path) -> str | None:
    """A row's label as its headings are written ("C# tips", where the key, read off the
    memory ID, says "C tips"), and what the key adds ("(part 2)"); None when the path is
    not the key's."""
    if not heading_path:
        return None
    named = " › ".join(id_text(h) for h in heading_path)
    if key != named and not key.startswith(named + " ("):
        return None
    return " › ".join(heading_path) + key[len(named):]


def _renamed_to(r, written: dict[str, str]) -> str:
    """The row a renamed heading's section went to, as its headings are written."""
    key = _row_key(replace(r, memory_id=r.moved_to, metadata=None))
    return written.get(key, key)


def _row_key(r) -> str:
    """A section's row: its heading path (the same under every path the note had); the
    parts this package cut from a long section share their section's row."""
    note, memory_id = r.note or "", r.section
    if memory_id == note + "#":
        return "(title, tags, order)"
    if note and memory_id.startswith(note + "#"):
        return memory_id[len(note) + 1:].replace("#", " › ")
    return "(top)" if memory_id == note else memory_id
