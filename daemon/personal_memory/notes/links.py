"""Links, embeds and tags in Markdown text: what a reader sees of them (the words that are
indexed), and what they point to (kept as metadata). Pure functions, no I/O."""

from __future__ import annotations

import bisect
import re
from itertools import groupby
from typing import NamedTuple
from posixpath import basename, splitext

from .front_matter import normalise_tag

# Every pattern here is linear on hostile text (`[a](` or a backtick repeated 500,000
# times): possessive quantifiers (*+, ++) never give back what they took, and no run a
# pattern scans can hold the start of the next attempt.
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TICKS = re.compile(r"`+")
# ![[target#fragment|alias]] and [[target#fragment|alias]]
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|\n]*+)(?:\|([^\[\]\n]*+))?\]\]")
# ![alt](url "title"), [text](url) and [text](<a path with spaces.md>): the text may hold
# one level of brackets, a bare URL one level of parentheses (Foo_(bar)).
_MDLINK = re.compile(r"(!?)\[((?:[^\[\]\n]++|\[[^\[\]\n]*+\])*+)\]\("
                     r"\s*+(?:<([^<>\n]*+)>|((?:[^\s()<>]++|\([^\s()<>]*+\))*+))"
                     r"(?:\s++(?:\"[^\"]*+\"|'[^']*+'))?\s*+\)")
_AUTOLINK = re.compile(r"<(?:https?|ftp|mailto):[^<>\s]++>")
_REFDEF = re.compile(r"^ {0,3}\[[^\]\n]++\]:\s*+\S.*$", re.M)
# Icon shortcodes (:LiSearch:, :smile:); times such as 10:30:00 hold no letter first.
_SHORTCODE = re.compile(r"(?<![\w:]):[A-Za-z][\w+-]*+:(?![\w:])")
# Obsidian tags: '#' after a space or line start, at least one non-digit, may nest with '/'.
_TAG = re.compile(r"(?:(?<=\s)|^)#([^\W_\d]|[\w/-]*[^\W\d][\w/-]*)(?![\w/-])", re.M)
_SIZE = re.compile(r"\d+(?:x\d+)?")
# HTML tags a reader never sees (a video's <div class="interface" style="...">, a <span>
# around a word): the tag goes, the words between tags stay. Only HTML's own elements, and
# one without attributes only when it is no word in angle brackets a note writes (<b>,
# <br>, <kbd>, not <time> or <section>, which may be placeholders in prose). A tag ends at
# its first ">" (or gives up at a "<" or a line's end): linear on any text.
_HTML_FORMAT = frozenset(
    "b i u em strong small br hr wbr p div span kbd sup sub del ins center font ul ol li "
    "table thead tbody tr td th details summary blockquote pre code figure figcaption "
    "iframe video audio".split())
_HTML_NAMES = _HTML_FORMAT | frozenset(
    "a abbr article aside button canvas caption cite dd dl dt embed footer form h1 h2 h3 "
    "h4 h5 h6 header img input label mark nav object option picture q s script section "
    "select source style svg textarea tfoot time".split())
_HTML_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]{0,15}+)(\s[^<>\n]*+)?/?>")


def _html_tag(m: re.Match) -> str:
    name = m.group(2).lower()
    if name in _HTML_NAMES and (m.group(1) or m.group(3) or name in _HTML_FORMAT):
        return " "
    return m.group(0)


# Obsidian block IDs ("... end of a paragraph ^abc123"): link targets, not words.
_BLOCK_ID = re.compile(r"(?<=\s)\^[A-Za-z0-9-]++[ \t]*+$", re.M)


def fenced(lines: list[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (its fences included; an
    unclosed fence runs to the end)."""
    out, fence = [], None
    for line in lines:
        m = _FENCE.match(line)
        if fence is None:
            fence = m.group(1) if m else None
            out.append(fence is not None)
        else:
            out.append(True)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line[m.end():].strip():
                fence = None
    return out


def _outside_code(text: str) -> list[tuple[str, bool]]:
    """The text cut into (piece, is_code) whose concatenation is the text: fenced blocks
    and code spans are code."""
    lines = text.splitlines(keepends=True)
    pieces = [("".join(line for line, _ in run), is_code)
              for is_code, run in groupby(zip(lines, fenced(lines)), key=lambda x: x[1])]
    out: list[tuple[str, bool]] = []
    for piece, is_code in pieces:
        if is_code:
            out.append((piece, True))
            continue
        last = 0
        spans = _code_spans(piece) if "`" in piece else []
        links = sorted(_link_spans(piece)) if spans and "[" in piece else []
        n, reach = 0, -1  # the furthest end of the links that start before a span
        for start, end in spans:
            while n < len(links) and links[n][0] < start:
                reach = max(reach, links[n][1])
                n += 1
            if end < reach:
                continue  # code in a link's text ([[F#x|`x`]]): part of the link
            out.append((piece[last:start], False))
            out.append((piece[start:end], True))
            last = end
        out.append((piece[last:], False))
    return out


def _code_spans(piece: str) -> list[tuple[int, int]]:
    """Code spans, as CommonMark reads them: a run of backticks up to the next run of the
    same length (a run with none after it is text). Linear: each run's next equal run is
    found in one pass from the end."""
    runs = [m.span() for m in _TICKS.finditer(piece)]
    following: list[int | None] = [None] * len(runs)
    after: dict[int, int] = {}  # run length -> the nearest such run seen from the end
    for i in range(len(runs) - 1, -1, -1):
        size = runs[i][1] - runs[i][0]
        following[i] = after.get(size)
        after[size] = i
    spans, i = [], 0
    while i < len(runs):
        j = following[i]
        if j is None:
            i += 1
            continue
        spans.append((runs[i][0], runs[j][1]))
        i = j + 1
    return spans


def _link_spans(piece: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for pattern in (_WIKILINK, _MDLINK)
            for m in pattern.finditer(piece)]


def _md_target(m: re.Match) -> str:
    """A Markdown link's destination: ``<...>`` (spaces allowed) or a bare URL."""
    return m.group(3) if m.group(3) is not None else m.group(4)


def _wiki_target(m: re.Match) -> str:
    """A wikilink's target as written; in a table its pipe is escaped (``[[Y\\|why]]``),
    and the backslash belongs to the table, not to the name."""
    return m.group(2).strip().removesuffix("\\").strip()


def _wikilink_words(m: re.Match) -> str:
    embed, target, alias = m.group(1), _wiki_target(m), m.group(3)
    path, _, fragment = target.partition("#")
    if embed and fragment.strip().lower() == "icon":
        return " "  # an icon: a picture, not words
    if alias is not None and alias.strip() and not (embed and _SIZE.fullmatch(alias.strip())):
        return alias.strip()
    name = basename(path.strip())
    if name.lower().endswith(".md"):
        name = name[:-3]
    elif embed and "." in name:  # a picture, a PDF...: its name; "#page=3" is not words
        name, fragment = splitext(name)[0], ""
    if fragment.strip().startswith("^"):
        fragment = ""  # a block ID is an address, not words
    words = " ".join(x for x in (name, fragment.replace("#", " ").strip()) if x)
    return words or " "


def _mdlink_words(m: re.Match) -> str:
    text = m.group(2).strip()
    if m.group(1) and _SIZE.fullmatch(text):
        return " "  # ![250](url): Obsidian reads the "alt" text as a width
    return text if text else " "


def _transform(piece: str) -> str:
    if "[" in piece:
        piece = _WIKILINK.sub(_wikilink_words, piece)
        piece = _MDLINK.sub(_mdlink_words, piece)
        piece = _REFDEF.sub(" ", piece)
    if "<" in piece:
        piece = _HTML_TAG.sub(_html_tag, _AUTOLINK.sub(" ", piece))
    if ":" in piece:
        piece = _SHORTCODE.sub(" ", piece)
    if "^" in piece:
        piece = _BLOCK_ID.sub("", piece)
    return piece


def reading_text(text: str) -> str:
    """The words a reader sees: links as their text (``[[Target#Heading|Alias]]`` reads
    "Alias", without an alias "Target Heading"), embeds by the file's name, no URL of link
    syntax, no HTML tags, no icon shortcodes, no block IDs (``^abc123``). Code is left as
    written."""
    return read(text)[0]


def outgoing_links(text: str) -> list[str]:
    """Targets of wikilinks, embeds and Markdown links outside code, in order, once each."""
    return read(text)[1]


def inline_tags(text: str) -> list[str]:
    """``#tags`` outside code, normalised, in order, once each. (Callers pass text without
    heading lines: a heading's '#' is not a tag.)"""
    return read(text)[2]


def read(text: str, tag_text: str | None = None) -> tuple[str, list[str], list[str]]:
    """:func:`reading_text`, :func:`outgoing_links` and :func:`inline_tags` in one pass;
    tags are taken from ``tag_text`` when given (the text without its heading lines)."""
    words: list[str] = []
    found: dict[str, None] = {}
    for piece, is_code in _outside_code(text):
        if is_code:
            words.append(piece)
            continue
        if "[" in piece or "<" in piece:
            for occurrence in _in_piece(piece):
                found.setdefault(occurrence.target, None)
        words.append(_transform(piece))
    return "".join(words), list(found), _tags(text if tag_text is None else tag_text)


def _tags(text: str) -> list[str]:
    found: dict[str, None] = {}
    if "#" not in text:
        return []
    for piece, is_code in _outside_code(text):
        if is_code or "#" not in piece:
            continue
        if "[" in piece:
            piece = _MDLINK.sub(" ", _WIKILINK.sub(" ", piece))
        for m in _TAG.finditer(piece):
            tag = normalise_tag(m.group(1))
            if tag:
                found.setdefault(tag, None)
    return list(found)


class Occurrence(NamedTuple):
    """One link in a text: its target as written, whether it is an embed (``![[...]]``,
    ``![...](...)``), whether it is a Markdown link (a relative URL), and its line (0-based)."""
    target: str
    embed: bool
    markdown: bool
    line: int


def occurrences(text: str) -> list[Occurrence]:
    """Every wikilink, embed and Markdown link outside code, in order, with its line."""
    out: list[Occurrence] = []
    line = 0
    for piece, is_code in _outside_code(text):
        if not is_code and ("[" in piece or "<" in piece):
            seen = 0  # lines counted from where the last one was (once, not per link)
            for at, occ in _in_piece(piece, with_starts=True):
                line += piece.count("\n", seen, at)
                seen = at
                out.append(occ._replace(line=line))
            line += piece.count("\n", seen)
        else:
            line += piece.count("\n")
    return out



def _in_piece(piece: str, with_starts: bool = False) -> list:
    """The links of a piece of text outside code: wikilinks and embeds, Markdown links
    and images, and autolinks (``<https://...>``, external), each kind in order; with
    their start offsets, all in the order written, when ``with_starts``."""
    found = []
    taken: list[tuple[int, int]] = []  # Markdown links: an <url> in one is its address
    if "[" in piece:
        for m in _WIKILINK.finditer(piece):
            target = _wiki_target(m)
            if target and not target.lower().endswith("#icon"):
                found.append((m.start(), Occurrence(target, bool(m.group(1)), False, 0)))
        for m in _MDLINK.finditer(piece):
            taken.append(m.span())
            if _md_target(m):
                found.append((m.start(), Occurrence(_md_target(m), bool(m.group(1)), True,
                                                    0)))
    if "<" in piece:
        starts = [a for a, _ in taken]  # in order, never overlapping
        for m in _AUTOLINK.finditer(piece):
            at = bisect.bisect_right(starts, m.start()) - 1
            if at < 0 or taken[at][1] <= m.start():
                found.append((m.start(), Occurrence(m.group(0)[1:-1], False, True, 0)))
    if with_starts:  # in the order written
        return sorted(found, key=lambda x: x[0])
    # by kind, as the note model stored them before autolinks counted (a note without
    # one keeps the very same list, so its record gets no new revision)
    return [occ for _, occ in found]


def address_ranges(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds links and addresses rather than plain words, as (start, end)
    character ranges: wikilinks and embeds (their display text is part of the link as
    Obsidian shows it), tags, block IDs, icon shortcodes. A mark inside one changes it."""
    return [m.span() for pattern in (_WIKILINK, _TAG, _BLOCK_ID, _SHORTCODE)
            for m in pattern.finditer(text)]
