"""The part of a result a reader needs: the lines of a section that best match the query,
a little context, about 300 to 400 characters, the query's words marked, and where those
lines are in the note's file. Words are found the way the index finds them (the same
tokenizer and stemmer), so "prefers" in a note is marked for the query "prefer"."""

from __future__ import annotations

import re
from typing import Callable

from ..notes.front_matter import read_scalar
from ..notes.prose import mark, prose
from ..records import RevisionRecord, SearchResult, Snippet
from ..store import Database
from .text import alternatives, holds_term, is_phrase, unspaced, without_optional

# The lines shown around the best one: 300 characters (220 before) show the answer's lines
# for one or two more questions in each set, and over MCP one question fewer needs a
# second call, for a quarter more bytes (docs/data-model.md#ranking).
WIDTH = 300
# A snippet that would stop inside a sentence or a list item (the next line finishes it) may
# run this far past WIDTH to finish it.
FINISH = 100
_ENDS = (".", "!", "?", "…", "。", "！", "？", "|", "```")


def _heading(line: str) -> bool:
    """An ATX heading line: the result's heading path names it already."""
    stripped = line.lstrip()
    return stripped.startswith("#") and stripped.lstrip("#")[:1] in (" ", "")


_BLOCK_ID = re.compile(r"\^[A-Za-z0-9-]+")


def _block_id(line: str) -> bool:
    """A line that only names the block above it (``^sync-regions``): markup, not text."""
    return _BLOCK_ID.fullmatch(line.strip()) is not None


def _delimiter(line: str) -> bool:
    """A table's delimiter row (``|---|:--:|``): it says nothing without the header."""
    stripped = line.strip()
    return "|" in stripped and "-" in stripped and set(stripped) <= set("|:- \t")


_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")


def _text(line: str) -> bool:
    """A line worth citing: not blank, no heading, block ID, table delimiter, thematic
    break or front matter fence."""
    return (bool(line.strip()) and not _heading(line) and not _block_id(line)
            and not _delimiter(line) and _BREAK.fullmatch(line) is None)


def _unfinished(line: str, following: str) -> bool:
    """Whether ``following`` finishes what ``line`` began: the line ends without a
    sentence's end (a colon, a comma, a bare word) or the next line continues a list item
    (indented), and the next line is text, not a blank or a heading."""
    if not following.strip() or _heading(following):
        return False
    if following[:1] in (" ", "\t") and not following.lstrip().startswith(("-", "*", "+")):
        return True
    return not line.rstrip().endswith(_ENDS)


def _matches(db: Database, line: str, terms: set[str]) -> list[tuple[int, int]]:
    """(start, end) character spans of the words of ``line`` that are query terms."""
    if not terms or not line.strip():
        return []
    # مُحَمَّد is found as محمد: its points go; łazienki is read as lazienki (one for one)
    kept, where = without_optional(line, db.text_version)
    if where is None:
        return _spans(db, kept, terms)
    shown = set(where)
    out = []
    for start, end in _spans(db, kept, terms):
        end = where[end - 1] + 1
        while end < len(line) and end not in shown:  # the last letter's points, marked too
            end += 1
        out.append((where[start], end))
    return out


def _spans(db: Database, line: str, terms: set[str]) -> list[tuple[int, int]]:
    """:func:`_matches` of a line with no optional mark in it."""
    data = line.encode("utf-8")
    ascii_only = len(data) == len(line)  # byte offsets are character offsets
    spans = []
    byte = char = 0  # where the last match began, in bytes and in characters
    for start, end in _byte_spans(db.tokenize_with_offsets(data), terms):
        if ascii_only:
            spans.append((start, end))
            continue
        # counted from the previous match on: a long line is decoded once, not per word
        char += len(data[byte:start].decode("utf-8", "ignore"))
        byte = start
        spans.append((char, char + len(data[start:end].decode("utf-8", "ignore"))))
    if ascii_only:
        return spans
    # Chinese, Japanese, Thai...: the index holds pairs of characters, which the line as
    # written has inside longer runs; where they are, overlapping pairs make one word (and
    # a query's whole word, search/contract.py's marked, is marked where it is written).
    for term in terms:
        if unspaced(term):
            at = line.find(term)
            while at >= 0:
                spans.append((at, at + len(term)))
                at = line.find(term, at + 1)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _byte_spans(found: list[tuple], terms: set[str]) -> list[tuple[int, int]]:
    """(start, end) byte spans, in order, of the tokens (``found``: (start, end, term,
    colocated...) each) that are query terms, a phrase's words (a date's) as one span."""
    words = {t for t in terms if not is_phrase(t)}
    phrases = [a.split(" ") for t in terms if is_phrase(t) for a in alternatives(t)]
    spans: list[tuple[int, int]] = []
    for i, (start, end, *tokens) in enumerate(found):
        last = i if any(t in words for t in tokens) else None
        for wanted in phrases:
            if all(i + j < len(found) and w in found[i + j][2:] for j, w in enumerate(wanted)):
                last = max(last if last is not None else i, i + len(wanted) - 1)
        if last is None:
            continue
        if spans and start < spans[-1][1]:  # inside a phrase already marked
            spans[-1] = (spans[-1][0], max(spans[-1][1], found[last][1]))
        else:
            spans.append((start, found[last][1]))
    return spans


def _named(db: Database, rev: RevisionRecord, terms: set[str]) -> set[str]:
    """The query terms the result's title, heading path and file name hold: shown above
    the snippet already, they do not tell which of its lines answer (a daily note's
    ``date: 2026-03-11`` repeats its file name)."""
    stem = rev.note.rsplit("/", 1)[-1].removesuffix(".md") if rev.note else ""
    heading = "\n".join([rev.title or "", *(rev.heading_path or ()), stem])
    return _held(db.tokens(heading), terms) if heading.strip() else set()


def _held(tokens: list[str], terms: set[str]) -> set[str]:
    """Which of ``terms`` a text of ``tokens`` holds (a phrase as its words in order)."""
    return {t for t in terms if holds_term(tokens, t)}


def _score(line: str, spans: list[tuple[int, int]], fresh: Callable[[str], bool],
           term: Callable[[str], str]) -> tuple[int, int, int]:
    """A line's claim to the snippet: the query words it holds that its headings do not
    name (``fresh``), then all the words it holds, then how often. A word is its term
    (``term``: "meetings" is "meeting" again, not one more word)."""
    words = {term(line[s:e].casefold()) for s, e in spans}
    return (sum(1 for w in words if fresh(w)), len(words), len(spans))


def _window(line: str, at: int) -> tuple[int, int]:
    """Where to cut a line longer than :data:`WIDTH` around its match at ``at``: between
    words, never inside one ("11–25 April" must not show as "…5 April"), keeping the
    match's start; a run without spaces (Chinese) is cut where it falls."""
    begin = max(0, min(at - WIDTH // 3, len(line) - WIDTH))
    end = min(len(line), begin + WIDTH)
    if begin and not line[begin - 1].isspace():
        space = line.find(" ", begin, max(begin, at))
        if space != -1:
            begin = space + 1
    if end < len(line) and not line[end].isspace():
        space = line.rfind(" ", max(begin, at) + 1, end)
        if space != -1:
            end = space
    return begin, end


def _first_part(line: str, room: int) -> int | None:
    """How much of ``line`` to show in ``room`` characters: through its first sentence's
    end when that fits, else up to the last space (None when too little would show)."""
    if room < FINISH // 2:
        return None
    for m in re.finditer(r"[.!?。！？](\s|$)", line):
        if m.start() < FINISH // 5:  # "1. Press", not a sentence
            continue
        if m.end() > room:
            break
        return m.start() + 1
    at = line.rfind(" ", 0, room)
    return at if at >= FINISH // 2 else None


def best_line(lines: list[str], scores: list[tuple[int, ...]],
              matched: tuple[int, int] | None = None) -> int:
    """The line a snippet is built around (0-based): the one with the best ``scores``
    (:func:`_score`: first the query words its headings do not name), in the text rather
    than a heading (the result's heading path shows it) or a block's id, unless only
    those have any; then the first. When no line has such a word, the first text line.
    ``matched``: the lines (0-based, inclusive) of the piece the search found most
    similar to the query: the line is chosen among them."""
    span = range(len(lines))
    if matched is not None and 0 <= matched[0] <= matched[1] < len(lines):
        span = range(matched[0], matched[1] + 1)
    if not span:
        return 0
    best = max(span, key=lambda i: (scores[i][0] > 0 and _text(lines[i]), scores[i], -i))
    if scores[best][0] == 0:  # found by meaning or by its headings: the span's first words
        best = next((i for i in span if _text(lines[i])), span[0])
    return best


def snippet(db: Database, rev: RevisionRecord, terms: list[str],
            first_line: int | None, piece: tuple[int, int] | None = None) -> Snippet:
    """The snippet of one result. ``first_line``: the file line of the section's first
    line (None when the memory is not a note's section); ``piece``: the lines of the
    content (1-based, inclusive) the search matched best (``SearchResult.matched_lines``),
    where the snippet is taken."""
    return _ScoredLines(db, rev, terms).snippet(first_line, piece)


class _ScoredLines:
    """A result's lines scored for a query (:func:`_score`), for its snippets."""

    def __init__(self, db: Database, rev: RevisionRecord, terms: list[str]):
        self.db, self.rev = db, rev
        self.context = (rev.metadata or {}).get("context", 0)
        self.lines = rev.content.split("\n")[self.context:]
        wanted = set(terms)
        self.found = [self._matches(line, wanted) for line in self.lines]
        named = _named(db, rev, wanted)
        named |= {a for t in named for a in alternatives(t)}  # a date as any of its forms
        unnamed: dict[str, bool] = {}  # each word tokenized once, however many lines hold it
        terms_of: dict[str, str] = {}

        def term(word: str) -> str:
            if word not in terms_of:
                terms_of[word] = " ".join(db.tokens(word)) or word
            return terms_of[word]

        def fresh(found_term: str) -> bool:
            if found_term not in unnamed:
                unnamed[found_term] = not named or (found_term not in named and
                                                    not set(found_term.split()) <= named)
            return unnamed[found_term]
        self.scores = [_score(line, spans, fresh, term)
                       for line, spans in zip(self.lines, self.found)]

    def _matches(self, line: str, wanted: set[str]) -> list[tuple[int, int]]:
        return _matches(self.db, line, wanted)

    def matched(self, piece: tuple[int, int] | None) -> tuple[int, int] | None:
        """The piece's lines (1-based in the content) as lines after the context."""
        if piece is None:
            return None
        return (max(piece[0] - 1 - self.context, 0),
                min(piece[1] - 1 - self.context, len(self.lines) - 1))

    def by_words(self, first_line: int | None, shown: Snippet,
                 piece: tuple[int, int] | None) -> Snippet | None:
        """The lines that match the query by its words, when the snippet ``shown``
        (taken from the piece matched by meaning) holds fewer of them: the line with the
        most query words its headings do not name, wherever it is in the section (a
        table's row, the command after the prose), and the lines around it. None when
        the snippet shows such a line already."""
        inside = self.matched(piece)
        if first_line is None or shown.line_start is None or inside is None \
                or not self.lines:
            return None
        best = best_line(self.lines, self.scores)
        if self.scores[best][0] <= self.scores[best_line(self.lines, self.scores,
                                                          inside)][0]:
            return None
        if shown.line_start <= first_line + best <= shown.line_end:
            return None
        return self.snippet(first_line, piece, at=best)

    def snippet(self, first_line: int | None, piece: tuple[int, int] | None,
                at: int | None = None) -> Snippet:
        """The snippet around the best line of the piece, or around line ``at``."""
        return _build(self.db, self.rev, self.lines, self.found, self.context,
                      at if at is not None else best_line(self.lines, self.scores,
                                                          self.matched(piece)),
                      first_line)


def _build(db: Database, rev: RevisionRecord, lines: list[str],
           found: list[list[tuple[int, int]]], context: int, best: int,
           first_line: int | None) -> Snippet:
    """The snippet built around line ``best``: the lines around it that fit, the
    sentence or item they leave open finished, the query's words marked."""
    lo = hi = best
    size = len(lines[best]) if lines else 0
    while True:  # add a line after, then one before, while it fits; no heading line
        grown = False
        for j in (hi + 1, lo - 1):
            if (0 <= j < len(lines) and (j > hi or j < lo) and not _heading(lines[j])
                    and size + len(lines[j]) + 1 <= WIDTH):
                size += len(lines[j]) + 1
                lo, hi = min(lo, j), max(hi, j)
                grown = True
        if not grown:
            break
    # finish the sentence or list item the last line leaves open, or the paragraph after
    # a blank line the snippet took in; a line that announces what follows ("To run a
    # command:") brings it across blank lines; the line that does not fit whole shows as
    # much as fits, to its first sentence's end when it has one
    cut = None  # characters shown of the last line, when not all of it fits
    while hi + 1 < len(lines):
        j = hi + 1
        if lines[hi].rstrip().endswith((":", "：")):
            while j + 1 < len(lines) and not lines[j].strip():
                j += 1
        if not _unfinished(lines[hi], lines[j]):
            break
        blanks = sum(len(lines[k]) + 1 for k in range(hi + 1, j))
        room = WIDTH + FINISH - size - blanks
        if len(lines[j]) + 1 <= room:
            size += blanks + len(lines[j]) + 1
            hi = j
            continue
        cut = _first_part(lines[j], room - 1)
        if cut:
            hi = j
        break
    # rows shown from a table's top: with its header, which names the columns, when it
    # fits; never from the delimiter row alone
    if (lines and _delimiter(lines[lo]) and lo > 0 and lines[lo - 1].lstrip().startswith("|")
            and size + len(lines[lo - 1]) + 1 <= WIDTH + FINISH):
        lo -= 1
        size += len(lines[lo]) + 1
    while lo < hi and not _text(lines[lo]):  # cite only lines that are shown
        lo += 1
    while hi > lo and not _text(lines[hi]):
        hi -= 1
        cut = None
    marks = _prose_only(rev.content, context, lines, found, lo, hi)
    code = code_lines(lines)
    parts = []
    for i in range(lo, hi + 1):
        line, spans = lines[i], marks[i]
        cut_here = i == hi and cut
        if _block_id(line):
            continue
        if cut_here:  # the first part of the line that finishes the snippet
            shown = line[:cut].rstrip()
            spans = [(a, b) for a, b in spans if b <= len(shown)]
            # what is left out is always said, after a sentence's end too ("Hale & Co. …")
            line = shown + (" …" if shown.endswith(_ENDS) else "…")
        elif len(line) > WIDTH:  # one long line: a window around its first match
            at = found[i][0][0] if found[i] else 0
            begin, end = _window(line, at)
            piece = line[begin:end]
            spans = [(s - begin, e - begin) for s, e in spans if s >= begin and e <= end]
            line = ("…" if begin else "") + piece + ("…" if end < len(lines[i]) else "")
            spans = [(s + (1 if begin else 0), e + (1 if begin else 0)) for s, e in spans]
        plain = i not in code and not cut_here and len(lines[i]) <= WIDTH
        pairs = _strong_pairs(line) if plain else []
        if pairs:  # shown whole: its strong text's words marked once it is plain
            spans = sorted(set(spans) | _in_strong(pairs, found[i]))
        parts.append(mark(*_unbolded(line, spans, pairs)))
    text = "\n".join(p for p in parts if p.strip())
    if first_line is None:
        return Snippet(text=text, line_start=None, line_end=None)
    return Snippet(text=text, line_start=first_line + lo, line_end=first_line + hi)


# The note's own strong emphasis (**so**), outside code: dropped from a snippet, whose
# marks are the query's words (the page shows them highlighted). Only plain pairs are:
# each opening after a space or the line's start and closing before a space, a
# punctuation mark or the line's end, nothing but text between; a line with any other
# ** (2**10, src/**/*.py, a nested or unclosed one) or in a code block keeps its own.
_STRONG = re.compile(r"(`[^`\n]{0,500}`)|(?<![^\s(\[{\"'])\*\*(?=[^\s*])"
                     r"([^*\n]{1,500}?)(?<=\S)\*\*(?![^\s.,;:!?)\]}\"'])")
_MARKUP = re.compile(r"[`\[\]<>!\\]")  # strong text holding a link, code or HTML stays
_FENCE = re.compile(r"\s{0,3}(?:`{3,}|~{3,})")


def _strong_pairs(line: str) -> list[re.Match]:
    """The line's plain strong pairs, or none when it holds any other ``**`` (one in code
    or around a link is its own: it stays, and the others go)."""
    found = list(_STRONG.finditer(line))
    pairs = [m for m in found if m.group(2) is not None]
    code = sum(m.group(1).count("**") for m in found if m.group(1))
    if line.count("**") != 2 * len(pairs) + code:
        return []
    return [m for m in pairs if not _MARKUP.search(m.group(2))]


def code_lines(lines: list[str]) -> set[int]:
    """The lines of fenced or indented code blocks (and their fences), by index."""
    out, fence = set(), None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if fence is not None:
            out.add(i)
            if m and m.group().strip()[:3] == fence and not line.strip().strip(fence[0]):
                fence = None
        elif m:
            fence = m.group().strip()[:3]
            out.add(i)
        elif line.startswith(("    ", "\t")):
            out.add(i)
    return out


def _in_strong(pairs: list[re.Match], found: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """The words found inside a line's plain strong text (``pairs``: _strong_pairs)."""
    inner = [(m.start(2), m.end(2)) for m in pairs]
    return {(a, b) for a, b in found if any(x <= a and b <= y for x, y in inner)}


def _unbolded(line: str, spans: list[tuple[int, int]], pairs: list[re.Match],
              ) -> tuple[str, list[tuple[int, int]]]:
    """``line`` without the markers of its strong ``pairs``, and ``spans`` moved with it."""
    cuts: list[int] = []  # where a two-character marker was taken out
    for m in pairs:
        cuts += [m.start(), m.end() - 2]
    if not cuts:
        return line, spans
    text = "".join(line[a + (2 if i else 0):b]
                   for i, (a, b) in enumerate(zip([0] + cuts, cuts + [len(line)])))

    def moved(at: int) -> int:
        return at - 2 * sum(1 for c in cuts if c < at)
    return text, [(moved(a), moved(b)) for a, b in spans]


def _prose_only(content: str, context: int, lines: list[str],
                found: list[list[tuple[int, int]]], lo: int, hi: int,
                ) -> list[list[tuple[int, int]]]:
    """The matches of the shown lines that are prose (notes.prose): never in code, a
    link's address, HTML, the note's own emphasis... The section's context lines (a table's
    header) are parsed with it."""
    offset = sum(len(x) + 1 for x in content.split("\n")[:context])
    at = [offset]
    for line in lines:
        at.append(at[-1] + len(line) + 1)
    spans = [(at[i] + s, at[i] + e) for i in range(lo, hi + 1) for s, e in found[i]]
    keep = iter(prose(content, spans))
    kept: list[list[tuple[int, int]]] = [[] for _ in found]
    for i in range(lo, hi + 1):
        kept[i] = [sp for sp in found[i] if next(keep)]
    return kept


def holds_a_word(db: Database, terms: list[str]) -> Callable[[SearchResult], bool]:
    """Whether a result's own text (its lines and its own heading) holds one of the
    query's ``terms``: every section of a note shares the note's title, so a section that
    matched by the title alone ("Getting there" of "The cabin", asked for the cabin's wifi
    password) says nothing more about the question. Heading lines are left to the
    heading path: a bare parent heading ("# The cabin" with no text) is joined to the
    section after it, whose own words it is not."""
    wanted = set(terms)

    def holds(r: SearchResult) -> bool:
        own = [line for line in r.content.splitlines() if not _heading(line)]
        own.extend(r.heading_path[-1:])
        return bool(_held(db.document_tokens(db.normalize("\n".join(own))), wanted))
    return holds


def names_all(db: Database, terms: list[str]) -> Callable[[SearchResult], bool]:
    """Whether the title text a result is indexed with (its note's title and aliases, its
    heading path) holds every one of the query's ``terms``: the query is the name of its
    note or section, and asks nothing its text must say."""
    wanted = set(terms)

    def named(r: SearchResult) -> bool:
        title = db.index_texts([r.revision_id]).get(r.revision_id, ("", ""))[0]
        return _held(db.document_tokens(db.normalize(title)), wanted) == wanted
    return named


def with_snippets(db: Database, results: list, terms: list[str], namespace: str,
                  as_of: int | None, valid_at: int) -> tuple[list, Snippet | None]:
    """The results with their snippets (the note layouts read once per note), and the
    lines of the first one's section that match by words when its snippet holds fewer
    of the query's words (``_ScoredLines.by_words``; None when it does not). ``terms``: the terms
    worth marking of those the search ranked by (Ranked.marks), so stop words neither pull
    a snippet's line nor are marked."""
    from dataclasses import replace

    from ..timeline.reading import section_lines
    layouts: dict[str, dict[str, tuple[int, int]]] = {}
    out = []
    with db.snapshot():
        words = None
        for r in results:
            first = None
            if r.note is not None:
                if r.note not in layouts:
                    layouts[r.note] = section_lines(db, namespace, r.note, as_of, valid_at)
                span = layouts[r.note].get(r.memory_id)
                first = span[0] if span else None
            scored = _ScoredLines(db, r.revision, terms)
            shown = scored.snippet(first, r.matched_lines)
            if first is not None and not any(scored.found) \
                    and (not r.content or _in_properties(db, r, terms)):
                shown = _properties_snippet(db, r, terms, namespace, as_of, valid_at) or shown
            out.append(replace(r, snippet=shown))
            if len(out) == 1:  # the first result's lines, scored once for both
                words = scored.by_words(first, out[0].snippet, r.matched_lines)
    return out, words


def _in_properties(db: Database, r: SearchResult, terms: list[str]) -> bool:
    """Whether a note's first section holds a query word in its properties that its title
    and headings do not name (a daily note's ``date: 2025-10-12`` repeats its title: its
    lines answer "what happened on 2025-10-12", not its properties)."""
    properties = (r.revision.metadata or {}).get("properties")
    return bool(properties) and bool(_held(
        db.document_tokens(db.normalize(properties)),
        set(terms) - _named(db, r.revision, set(terms))))


def _properties_snippet(db: Database, r: SearchResult, terms: list[str], namespace: str,
                        as_of: int | None, valid_at: int) -> Snippet | None:
    """For a note's first section that matched by its properties alone (none of its own
    lines holds a query word): the front matter lines that hold them, from the note's
    record at the same cutoff (its front matter as written, from the file's first line).
    A note of properties alone (its section empty) is shown by them however it matched."""
    from ..notes.model import record_id
    record = db.visible(namespace, record_id(r.note), as_of, valid_at)
    if record is None or not record.content:
        return None
    named = _named(db, r.revision, set(terms))  # the title says them: not why it is here
    front = _FrontMatterLines(db, record, [t for t in terms if t not in named] or terms)
    return front.snippet(1, None) if any(front.found) or not r.content else None


# A YAML line's key (``owner:``, ``  - name:``), which is no word of the note.
_KEY = re.compile(r"\s*(?:-\s+)?(?:\"[^\"]*\"|'[^']*'|[^\s#\"'][^:]*?):(?=\s|$)")


class _FrontMatterLines(_ScoredLines):
    """A note record's front matter lines, matched as the index reads its properties: the
    values, not the keys; a value written with escapes (``"caf\\u00e9"``) as YAML reads it,
    marked whole."""

    def _matches(self, line: str, wanted: set[str]) -> list[tuple[int, int]]:
        key = _KEY.match(line)
        start = key.end() if key else 0
        found = [(a + start, b + start) for a, b in _matches(self.db, line[start:], wanted)]
        value = line[start:].strip()
        if found or "\\" not in value or not value.startswith('"'):
            return found
        decoded = read_scalar(value)
        if decoded is not None and _matches(self.db, decoded, wanted):
            first = line.index(value, start)
            return [(first, first + len(value))]
        return []
