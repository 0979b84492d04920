"""Text on the page: a note's Markdown as HTML, snippets with their found words marked,
word diffs. Notes are rendered with their raw HTML escaped (never executed) and no link
that is not http(s), mailto or relative (markdown-it refuses javascript:, data: and the
like); a link to another note goes to that note's page, resolved by the store as
``memory links`` resolves it, and one the page cannot show (an attachment, a note that
does not exist then) is shown as text."""

from __future__ import annotations

import bisect
import re
from html import escape
from typing import Callable, Iterator, NamedTuple
from urllib.parse import quote, urlencode

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markupsafe import Markup
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.tasklists import tasklists_plugin

from ..records import Link

# a snippet's mark is around a word (or touching tokens, 東京): no space, no * in it, so
# a note's own ** left in a snippet (2**10, src/**/*.py) is not taken for one
_MARKED = re.compile(r"\*\*([^\s*]+?)\*\*")
_DIFF = re.compile(r"\[-(.*?)-\]|\{\+(.*?)\+\}", re.S)
# An Obsidian callout: a block quote whose first line is "[!type]" (folded with + or -),
# then its title.
_CALLOUT = re.compile(r"\[!([A-Za-z][\w-]{0,40})\]([+-]?)[ \t]*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:|//")  # an address elsewhere, not a path

Resolver = Callable[[list[tuple[str, bool]]], list[Link]]


def _wikilink(state: StateInline, silent: bool) -> bool:
    """``[[target#fragment|shown]]`` and ``![[embed]]`` as a link token; its target is
    resolved later. Scans to the first bracket or line end only, so text full of brackets
    stays linear."""
    src, pos = state.src, state.pos
    embed = src.startswith("![[", pos)
    if not embed and not src.startswith("[[", pos):
        return False
    start = end = pos + (3 if embed else 2)
    while end < state.posMax and src[end] not in "[]\n":
        end += 1
    if not src.startswith("]]", end):
        return False
    # in a table a link's alias is written after "\|" (Obsidian's way): the same link
    target, _, shown = src[start:end].replace("\\|", "|").partition("|")
    if not target.strip():
        return False
    if not silent:
        link = state.push("link_open", "a", 1)
        link.meta = {"wiki": target.strip()}
        state.push("text", "", 0).content = (shown.strip() or target.strip())
        state.push("link_close", "a", -1)
    state.pos = end + 2
    return True


def _wikilinks(md: MarkdownIt) -> None:
    md.inline.ruler.before("link", "wikilink", _wikilink)


# The front matter is shown apart (title, aliases, tags), not rendered as text. As in
# Obsidian: a line break is one ("Strict line breaks" is off there by default), and a
# task's "[ ]" or "[x]" is a box, not ticked from the page.
_MARKDOWN = (MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True})
             .enable("table").use(front_matter_plugin).use(tasklists_plugin)
             .use(_wikilinks))


def _link_open(self, tokens, idx, options, env) -> str:
    plain = tokens[idx].meta.get("plain")
    if plain is not None:  # a link the page cannot follow: its words, and why
        return f'<span class="unlinked" title="{escape(plain)}">'
    return self.renderToken(tokens, idx, options, env)


def _link_close(self, tokens, idx, options, env) -> str:
    if tokens[idx].meta.get("plain") is not None:
        return "</span>"
    return self.renderToken(tokens, idx, options, env)


def _image(self, tokens, idx, options, env) -> str:
    """An image on another server is a link to it: the page loads nothing from elsewhere
    (its policy would refuse it, and a note's reader would be seen by that server)."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    if not _SCHEME.match(src) or src.lower().startswith("data:"):
        return self.image(tokens, idx, options, env)
    alt = self.renderInlineAsText(token.children or [], options, env)
    return (f'<a class="image" href="{escape(src)}" rel="noreferrer">'
            f'{escape(alt or src)} (image)</a>')


_MARKDOWN.add_render_rule("link_open", _link_open)
_MARKDOWN.add_render_rule("link_close", _link_close)
_MARKDOWN.add_render_rule("image", _image)


def marked(text: str) -> Markup:
    """A snippet with its found words (``**so**``) as <mark>, everything else escaped."""
    out, last = [], 0
    for m in _MARKED.finditer(text):
        out += [escape(text[last:m.start()]), "<mark>", escape(m.group(1)), "</mark>"]
        last = m.end()
    out.append(escape(text[last:]))
    return Markup("".join(out))


def field_value(value: object) -> str:
    """A record field's value as a reader writes it: a list's items and a mapping's
    ``key: value`` pairs joined, nothing for a value that is not there."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {field_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(field_value(v) for v in value)
    return str(value)


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


# Blocks that take their direction from their own first letters, so a paragraph of Arabic or
# Hebrew reads right to left beside English ones.
_BLOCKS = {"paragraph_open", "heading_open", "list_item_open", "blockquote_open", "th_open",
           "td_open"}


def _callouts(tokens: list[Token]) -> None:
    """Obsidian's callouts (``> [!warning] Careful``) as a titled box: the block quote gets
    the class ``callout`` and the type, its marker goes, and its title (the type's name
    when none is written) is shown strong on a line of its own."""
    for i, tok in enumerate(tokens[:-2]):
        inline = tokens[i + 2]
        if (tok.type != "blockquote_open" or tokens[i + 1].type != "paragraph_open"
                or inline.type != "inline" or not inline.children
                or inline.children[0].type != "text"):
            continue
        first = inline.children[0]
        m = _CALLOUT.match(first.content)
        if m is None:
            continue
        kind = m.group(1).lower()
        tok.attrSet("class", "callout")
        tok.attrSet("data-callout", kind)
        first.content = first.content[m.end():] or kind.capitalize()
        end = next((k for k, c in enumerate(inline.children)
                    if c.type in ("softbreak", "hardbreak")), len(inline.children))
        if end < len(inline.children):
            inline.children[end] = Token("hardbreak", "br", 0)  # the text under the title
        strong = Token("strong_open", "strong", 1)
        strong.attrSet("class", "callout-title")
        inline.children[end:end] = [Token("strong_close", "strong", -1)]
        inline.children[0:0] = [strong]


def anchor(memory_id: str, note: str) -> str | None:
    """The id a section's heading has on its note's page (None for the text before the
    first heading): its part of the memory ID, so a link to ``Note#Heading`` finds it."""
    part = memory_id[len(note) + 1:] if memory_id.startswith(note + "#") else ""
    return "s" + quote(part, safe="") if part else None  # (a note's record: "note#")


def markdown(text: str) -> Markup:
    """Markdown that is not a note's own text (what a note embeds): links between notes
    are not resolved for it, so they are shown as text."""
    tokens = _MARKDOWN.parse(text)
    _link(tokens, None, None)
    _callouts(tokens)
    _directed(tokens, [])
    return Markup(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}))


class Heading(NamedTuple):
    """A section of the note on the page: its (1-based) lines, its own heading's words and
    the id that heading gets (see :func:`anchor`)."""
    first: int
    last: int
    words: str
    id: str


def note_markdown(text: str, title: str | None, resolve: Resolver | None = None,
                  as_of: str | None = None, headings: list[Heading] = ()) -> Markup:
    """A note's text, without its first heading when that is a level-1 heading saying the
    title (compared without inline markup: the page shows the title once, above), its
    links to notes leading to their pages as of ``as_of``; a section's heading (within its
    lines, saying its words) gets the section's id."""
    tokens = _MARKDOWN.parse(text)
    first = next((i for i, t in enumerate(tokens) if t.type != "front_matter"), None)
    if (title and first is not None and first + 2 < len(tokens)
            and tokens[first].type == "heading_open" and tokens[first].tag == "h1"
            and _plain(tokens[first + 1].children) == _plain(
                _MARKDOWN.parseInline(title)[0].children)):
        del tokens[first:first + 3]
    _link(tokens, resolve, as_of)
    _callouts(tokens)
    _directed(tokens, headings)
    return Markup(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}))


def properties_table(properties: dict[str, str], resolve: Resolver | None = None,
                     as_of: str | None = None) -> Markup:
    """A note's other properties as a table of key and value, a link in a value (``owner:
    "[[Mei Chen]]"``) leading to its note as a link in the text does."""
    if not properties:
        return Markup("")

    def cell(text: str) -> str:  # one line, no pipe that would end the cell
        return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|")
    rows = [f"| {cell(k)} | {cell(v) if v else '(empty)'} |" for k, v in properties.items()]
    tokens = _MARKDOWN.parse("| property | value |\n| --- | --- |\n" + "\n".join(rows))
    _link(tokens, resolve, as_of)
    _directed(tokens, [])
    return Markup(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}).replace(
        "<table>", '<table class="properties">', 1))


def _directed(tokens: list[Token], headings: list[Heading]) -> None:
    """Each block's direction from its text (``dir="auto"``), and a section's heading its
    id (a heading with nothing under it is part of the next section, which is named after
    the heading it holds)."""
    ordered = sorted(headings)  # sections do not overlap: the one holding a line by bisection
    firsts = [h.first for h in ordered]
    for i, t in enumerate(tokens):
        if t.type in _BLOCKS:
            t.attrSet("dir", "auto")
        if t.type == "heading_open" and t.map and ordered and i + 1 < len(tokens):
            line = t.map[0] + 1
            at = bisect.bisect_right(firsts, line) - 1
            if at >= 0 and line <= ordered[at].last and _words(ordered[at].words) == _words(
                    _plain(tokens[i + 1].children)):
                t.attrSet("id", ordered[at].id)


def _words(heading: str) -> str:
    """A heading's words as a section's ID names them (``#``, ``^``, ``|``, brackets are
    spaces there)."""
    return " ".join(re.sub(r"[#^|\[\]]", " ", heading).split())


def _plain(children: list[Token] | None) -> str:
    """An inline text's words without their markup: ``*best*`` is best."""
    words = []
    for t in children or []:
        if t.type in ("text", "code_inline"):
            words.append(t.content)
        elif t.type in ("softbreak", "hardbreak"):
            words.append(" ")
    return " ".join("".join(words).split())


def _links(tokens: list[Token]) -> Iterator[tuple[Token, Token]]:
    """Each link's opening and closing token (links do not nest)."""
    for t in tokens:
        opened = None
        for child in t.children or []:
            if child.type == "link_open":
                opened = child
            elif child.type == "link_close" and opened is not None:
                yield opened, child
                opened = None


def _link(tokens: list[Token], resolve: Resolver | None, as_of: str | None) -> None:
    """Each link to a path or a note: to the page of the note it resolves to, else text.
    A link elsewhere, or within the page (``#...``), stays."""
    asked = []
    for opened, closed in _links(tokens):
        href = opened.attrGet("href")
        if "wiki" in opened.meta:
            asked.append((opened, closed, opened.meta["wiki"], False))
        elif isinstance(href, str) and href and not href.startswith("#") \
                and not _SCHEME.match(href):
            asked.append((opened, closed, href, True))
    found = resolve([(target, md) for _, _, target, md in asked]) if resolve and asked else []
    for n, (opened, closed, target, _) in enumerate(asked):
        to = found[n] if n < len(found) else None
        if to is not None and to.note is not None:
            at = anchor(to.section, to.note) if to.kind == "section" and to.section else None
            opened.attrSet("href", "/note?" + urlencode(
                {"id": to.note} | ({"as_of": as_of} if as_of else {}))
                + (f"#{at}" if at else ""))
            continue
        why = ("a link the page does not follow here" if to is None else
               "no note by this name then" if to.kind == "dangling" else
               f"{to.kind}: not shown on this page")
        opened.meta["plain"] = closed.meta["plain"] = f"{target} ({why})"
