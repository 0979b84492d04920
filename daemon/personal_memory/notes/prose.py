"""Which words of a Markdown text are prose: words a reader sees as text, where a bold mark
(``**word**``) can go without changing what the note says or where its links lead.

Not prose: code (spans of any number of backticks, indented and fenced blocks, also in a
block quote or a list item), link destinations and titles, autolinks, raw HTML (inline
and blocks), images (destination and alt text), reference definitions, words inside the
note's own emphasis or strong text (a mark there would read ``***word***``; they are
emphasised already), wikilinks and embeds (target and display text: a mark would become
part of the link's text), tags, block IDs, icon shortcodes, math, comments, a callout's
type and footnote labels.

CommonMark decides, not a pattern: markdown-it-py parses the text with each candidate
word replaced by a distinct placeholder of letters (which parses exactly as a word does),
and a word is prose when its placeholder comes back in plain text. The marked text is then
rendered again and must give the same HTML apart from the new ``<strong>`` elements; a
mark that would change anything else is dropped."""

from __future__ import annotations

import re
from functools import lru_cache
from string import ascii_lowercase

from .links import address_ranges

MARK = "**"
# A text longer than this (a note's part is at most 1,800) is not parsed whole: only the
# lines that hold the words are, and past this too they stay unmarked.
PARSED_CHARS = 50_000
# A top-level block of more lines (a long list) is not parsed whole for a word in it.
WHOLE_BLOCK_LINES = 200
# Obsidian's markup that CommonMark reads as text: math ($...$, $$...$$), comments
# (%%...%%), a callout's type (> [!note]) and footnote labels ([^1]).
_OBSIDIAN = re.compile(r"\$\$.*?\$\$|\$[^\s$](?:[^$\n]*?[^\s$\\])?\$(?!\d)|%%.*?%%"
                       r"|^[ \t]*(?:>[ \t]*)+\[![^\]\n]*\][-+]?|\[\^[^\]\n]*\]", re.S | re.M)
# What CommonMark could read as something other than words (code, links, HTML, emphasis,
# escapes, entities, images, tables, fences, indented code, also after a block quote's or
# a list item's marker: ">     code", "-     code"); a block without any of it is prose
# but for the list numbers and Obsidian's markup found above.
_MARKUP = re.compile(r"[`<\[\]*_\\&!|~]"
                     r"|^(?:[ \t>]|[-+*](?=[ \t])|\d{1,9}[.)](?=[ \t]))*(?: {4}|\t)", re.M)
# An ordered list's number ("1." at a line's start, after any block quote markers).
_LIST_NUMBER = re.compile(r"[ \t]*(?:>[ \t]*)*\d{1,9}[.)](?:[ \t]|$)")


@lru_cache(maxsize=1)
def _markdown():
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark").enable("table")


@lru_cache(maxsize=1)
def _blocks():
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])


def prose(text: str, spans: list[tuple[int, int]]) -> list[bool]:
    """For each (start, end) character span of ``text`` (one word each, in order, none
    overlapping), whether it is prose that may be marked."""
    if not spans:
        return []
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    first, last = _line_of(starts, spans[0][0]), _line_of(starts, spans[-1][1] - 1)
    env: dict = {}
    if len(text) <= PARSED_CHARS:
        a, b = _enclosing_blocks(text, env, first, last)
    else:  # a huge memory: its lines alone, or no marks rather than seconds of parsing
        a, b = first, last + 1
        if starts[b] - starts[a] > PARSED_CHARS:
            return [False] * len(spans)
    origin = starts[a]
    piece = "\n".join(lines[a:b])
    local = [(s - origin, e - origin) for s, e in spans]
    taken = address_ranges(piece) + [m.span() for m in _OBSIDIAN.finditer(piece)]
    ok = [not any(x < e and s < y for x, y in taken) and not _list_number(piece, s, e)
          for s, e in local]
    if not _MARKUP.search(piece):
        return ok  # plain paragraphs: nothing for CommonMark to read but words
    ok = _in_plain_text(piece, local, ok, env)
    return _verified(piece, local, ok, env)


def mark(line: str, spans: list[tuple[int, int]]) -> str:
    """``line`` with each span marked (bold); spans that touch (one word of several
    tokens, such as Chinese) share one mark."""
    out, last = [], 0
    for start, end in _joined(spans):
        out += [line[last:start], MARK, line[start:end], MARK]
        last = end
    out.append(line[last:])
    return "".join(out)


def _joined(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and out[-1][1] == start:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _line_of(starts: list[int], at: int) -> int:
    from bisect import bisect_right
    return bisect_right(starts, at) - 1


def _enclosing_blocks(text: str, env: dict, first: int, last: int) -> tuple[int, int]:
    """The lines [a, b) of the top-level blocks that hold lines ``first`` to ``last``: a
    whole block parses as it does in the text (when that is long, a long list, the
    smallest block that holds them). ``env`` receives the text's reference definitions
    (a link may use one defined anywhere)."""
    tokens = _blocks().parse(text, env)
    a, b = first, last + 1
    inner = None
    for tok in tokens:
        if tok.map and tok.nesting != -1:
            x, y = tok.map
            if x <= first and y > last and (inner is None or y - x < inner[1] - inner[0]):
                inner = (x, y)
            if tok.level == 0 and x <= last and y > first:
                a, b = min(a, x), max(b, y)
    if inner is not None and b - a > WHOLE_BLOCK_LINES:
        return inner
    return a, b


def _list_number(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    m = _LIST_NUMBER.match(text, line_start)
    return m is not None and m.end() >= end


def _placeholders(text: str, count: int) -> tuple[str, list[str]]:
    prefix = "QZX"
    while prefix in text:
        prefix += "Q"
    names = []
    for i in range(count):
        name = ""
        while True:
            name = ascii_lowercase[i % 26] + name
            i //= 26
            if not i:
                break
        names.append(f"{prefix}{name}{prefix}")
    return prefix, names


def _in_plain_text(text: str, spans: list[tuple[int, int]], ok: list[bool],
                   env: dict) -> list[bool]:
    """Which of the candidate spans CommonMark reads as plain text, outside emphasis,
    autolinks and images."""
    if not any(ok):
        return ok
    prefix, names = _placeholders(text, len(spans))
    out, last = [], 0
    for (s, e), name, k in zip(spans, names, ok):
        if not k:
            continue  # as written: a list's number stays a number
        out += [text[last:s], name]
        last = e
    out.append(text[last:])
    found: set[str] = set()
    pattern = re.compile(f"{prefix}([a-z]+){prefix}")
    for tok in _markdown().parse("".join(out), dict(env)):
        if tok.type != "inline" or not tok.children:
            continue
        depth = 0  # inside emphasis, strong or an autolink
        for child in tok.children:
            if child.type in ("em_open", "strong_open") or (
                    child.type == "link_open" and child.markup == "autolink"):
                depth += 1
            elif child.type in ("em_close", "strong_close") or (
                    child.type == "link_close" and child.markup == "autolink"):
                depth -= 1
            elif child.type == "text" and depth == 0:
                found.update(m.group(0) for m in pattern.finditer(child.content))
    return [k and name in found for k, name in zip(ok, names)]


def _verified(text: str, spans: list[tuple[int, int]], ok: list[bool],
              env: dict) -> list[bool]:
    """The marks that leave the rendered text as it was, apart from their own bold."""
    chosen = [sp for sp, k in zip(spans, ok) if k]
    if not chosen:
        return ok
    plain = _render(text, env)
    if _same(plain, _render(mark(text, chosen), env), len(_joined(chosen))):
        return ok
    keep = [k and _same(plain, _render(mark(text, [sp]), env), 1)
            for sp, k in zip(spans, ok)]
    together = [sp for sp, k in zip(spans, keep) if k]
    if together and not _same(plain, _render(mark(text, together), env),
                              len(_joined(together))):
        return [False] * len(spans)
    return keep


def _render(text: str, env: dict) -> str:
    return _markdown().render(text, dict(env))


def _same(plain: str, marked: str, marks: int) -> bool:
    def bare(html: str) -> str:
        return html.replace("<strong>", "").replace("</strong>", "")
    return (marked.count("<strong>") == plain.count("<strong>") + marks
            and bare(marked) == bare(plain))
