"""YAML front matter of a note: parsed with PyYAML's safe loader (never executed), read
for the fields the store uses. Pure functions, no I/O.

A note is hostile input: before the block is loaded, its event stream is measured (in
one pass, with libyaml when present) for what it expands to, aliases counted each time
they repeat what they name, so a few hundred bytes of nested aliases cannot become
gigabytes. A block beyond the limits (limits.py) is a front matter problem of its note."""

from __future__ import annotations

import datetime as dt
import unicodedata
from dataclasses import dataclass, field

import yaml

from ..limits import (FRONT_MATTER_MAX_CHARS, FRONT_MATTER_MAX_DEPTH, FRONT_MATTER_MAX_DIGITS,
                      FRONT_MATTER_MAX_VALUES, MAX_PROPERTY_CHARS,
                      MAX_PROPERTY_VALUE_CHARS, MAX_TITLE_CHARS)

DATE_KEYS = ("date", "created", "updated", "modified")
# Properties read for what they are rather than as words: the title and aliases are title
# text, tags a filter; CSS classes and a Publish permalink are only styling and address.
NOT_WORDS = ("title", "aliases", "alias", "tags", "tag", "cssclasses", "cssclass",
             "permalink")


@dataclass(frozen=True)
class FrontMatter:
    """What a note's front matter says. ``error`` is set (and nothing else) when the YAML
    could not be read; the block is then kept as plain text."""
    title: str | None = None
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    dates: dict[str, str] = field(default_factory=dict)
    properties: str = ""  # the values of the other properties as words, a line each
    linked: tuple[str, ...] = ()  # the values of all properties that hold a wikilink
    error: str | None = None


def normalise_tag(tag: str) -> str:
    """A tag as stored and compared: no leading '#', NFC, case folded (Obsidian's tags
    are case-insensitive)."""
    return unicodedata.normalize("NFC", tag.strip().lstrip("#")).casefold()


def wanted_tag(tag: str) -> str:
    """A tag a filter asks for: as stored, and ``work/`` means the tag ``work`` (and, as
    every tag filter does, the tags nested under it)."""
    return normalise_tag(tag).rstrip("/")


def _strings(value: object) -> list[str]:
    """A scalar or a list of scalars as strings; tags may also be one comma- or
    space-separated string (both spellings are common)."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, _SCALARS)]
    return [str(value)] if isinstance(value, _SCALARS) else []


_SCALARS = (str, int, float, dt.date)  # bool is an int; a pair or a mapping is no tag


def _tags(value: object) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for item in _strings(value):
        for part in item.replace(",", " ").split():
            tag = normalise_tag(part)
            if tag:
                out.setdefault(tag, None)
    return tuple(out)


def _date(value: object) -> str | None:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str) and value.strip():
        return value.strip()[:64]
    return None


_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: 20x faster


class TooLarge(Exception):
    """A front matter block beyond the limits; the message says which."""


class _Loader(_BASE):
    """PyYAML's safe loader, except that a date no calendar has (``0000-00-00``,
    ``2024-02-30``) stays the text it is instead of failing the whole block, and an
    integer longer than the limit is refused before Python converts it."""

    def construct_yaml_timestamp(self, node):
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError, AttributeError):  # AttributeError: !!timestamp x
            return self.construct_scalar(node)

    def construct_mapping(self, node, deep=False):
        # YAML says a mapping's keys are unique, and Obsidian refuses a block that
        # repeats one; PyYAML would keep the last value without a word.
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if (key.tag, key.value) in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"the key {key.value[:60]!r} is written twice",
                            key.start_mark)
                    seen.add((key.tag, key.value))
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        if len(node.value) > FRONT_MATTER_MAX_DIGITS:
            raise TooLarge(f"holds a number {len(node.value):,} characters long (the limit "
                           f"is {FRONT_MATTER_MAX_DIGITS:,})")
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _measure(yaml_text: str) -> None:
    """Raise :class:`TooLarge` when the block expands beyond the limits. One pass over
    the parser's events, in memory bounded by the nesting and the anchors: an alias
    counts what its anchor expanded to (an alias inside its own anchor, a recursive
    value, counts once: it is not copied)."""
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (values, characters)
    stack: list[list] = []  # open collections: [anchor, values, characters]
    values = chars = 0
    repeated = False
    for event in yaml.parse(yaml_text, Loader=_BASE):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(stack) >= FRONT_MATTER_MAX_DEPTH:
                raise TooLarge(f"is nested too deeply to read (more than "
                               f"{FRONT_MATTER_MAX_DEPTH} levels)")
            stack.append([event.anchor, 1, 0])
            size = (1, 0)
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, n, c = stack.pop()
            if anchor is not None:
                anchors[anchor] = (n, c)
            if stack:
                stack[-1][1] += n
                stack[-1][2] += c
            continue
        elif isinstance(event, yaml.ScalarEvent):
            size = (1, len(event.value))
            if event.anchor is not None:
                anchors[event.anchor] = size
        elif isinstance(event, yaml.AliasEvent):
            size = anchors.get(event.anchor, (1, 0))  # an unknown one fails the load
            repeated = True
        else:
            continue
        values += size[0]
        chars += size[1]
        if stack and not isinstance(event, yaml.CollectionStartEvent):
            stack[-1][1] += size[0]
            stack[-1][2] += size[1]
        if values > FRONT_MATTER_MAX_VALUES or chars > FRONT_MATTER_MAX_CHARS:
            how = " (YAML aliases, *name, counted each time they repeat)" if repeated else ""
            if values > FRONT_MATTER_MAX_VALUES:
                raise TooLarge(f"expands to more than {FRONT_MATTER_MAX_VALUES:,} values{how}")
            raise TooLarge(f"expands to more than {FRONT_MATTER_MAX_CHARS:,} characters{how}")


def _load(yaml_text: str) -> dict | str:
    """The block's mapping (keys lower-cased), or the one-line problem that kept it from
    being read."""
    try:
        _measure(yaml_text)
        data = yaml.load(yaml_text, Loader=_Loader)  # noqa: S506 (a safe loader)
    except TooLarge as exc:
        return f"front matter {exc}"
    except (ValueError, KeyError, TypeError) as exc:  # !!int x, !!float x, !!bool x
        return ("front matter holds a value its tag cannot have "
                f"({type(exc).__name__}: {str(exc)[:100]})")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        last = yaml_text.rstrip("\n").count("\n")  # libyaml marks the end of input after it
        where = f"line {min(mark.line, last) + 2}" if mark is not None else "front matter"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return f"front matter is not valid YAML ({where}: {problem})"
    except RecursionError:
        return "front matter is nested too deeply to read"
    if data is None:
        return {}
    if not isinstance(data, dict):
        return f"front matter is not a YAML mapping (it is a {type(data).__name__})"
    # Keys are read in any case (Title: is title:). Of keys that differ only in case, the
    # one written in lower case (else the first) is read so, the others keep their own
    # spelling: no value is lost.
    lowered = {}
    for k in data:
        if str(k).lower() not in lowered or str(k) == str(k).lower():
            lowered[str(k).lower()] = k
    out: dict = {}
    for k, v in data.items():
        key = str(k).lower() if lowered[str(k).lower()] is k else str(k)
        while key in out:  # 1: beside "1":
            key += "'"
        out[key] = v
    return out


def parse(yaml_text: str) -> FrontMatter:
    """The fields of a front matter block (the YAML between the fences)."""
    data = _load(yaml_text)
    if isinstance(data, str):
        return FrontMatter(error=data)
    title = data.get("title")
    title = str(title).strip()[:MAX_TITLE_CHARS] if isinstance(title, (str, int, float)) \
        and str(title).strip() else None
    aliases = tuple(dict.fromkeys(a.strip()[:MAX_TITLE_CHARS] for a in
                                  _strings(data.get("aliases", data.get("alias")))
                                  if a.strip()))
    tags = _tags(data.get("tags", data.get("tag")))
    dates = {k: d for k in DATE_KEYS if (d := _date(data.get(k))) is not None}
    return FrontMatter(title=title, aliases=aliases, tags=tags, dates=dates,
                       properties=_properties(data), linked=_linked(data))


def _linked(data: dict) -> tuple[str, ...]:
    """Each property's values as text (as :func:`property_values` reads them, whole), those
    that hold a wikilink."""
    values = (_values(value, FRONT_MATTER_MAX_CHARS) for value in data.values())
    return tuple(v for v in values if "[[" in v)


def _values(value: object, budget: int) -> str:
    """A property's values as text: list items and nested values joined, yes/no values
    as ``true`` and ``false``."""
    return ", ".join(_words(value, budget, yes_no=True))


def property_values(block: str, every: bool = False) -> dict[str, str] | None:
    """A front matter block as written, fences included (a note record's content), read
    for its properties other than :data:`NOT_WORDS` (``every``: all of them, whole): each
    key's values as text, yes/no values included. Empty when there is no block; None when
    it does not read."""
    lines = block.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    data = _load("\n".join(lines[1:end])) if end is not None else {}
    if isinstance(data, str):
        return None
    budget = FRONT_MATTER_MAX_CHARS if every else MAX_PROPERTY_CHARS
    return {key: _values(value, budget) for key, value in data.items()
            if every or key not in NOT_WORDS}


def _properties(data: dict) -> str:
    """The values of the properties other than :data:`NOT_WORDS` as text, a line each
    (list items and nested values joined; yes/no values say nothing as words; keys are
    not words of the note), each cut at :data:`MAX_PROPERTY_VALUE_CHARS` and the whole at
    :data:`MAX_PROPERTY_CHARS`."""
    lines: list[str] = []
    size = 0
    for key, value in data.items():
        if key in NOT_WORDS:
            continue
        room = min(MAX_PROPERTY_VALUE_CHARS, MAX_PROPERTY_CHARS - size)
        words = _words(value, room)
        if words:
            lines.append(", ".join(words)[:room])
            size += len(lines[-1]) + 1
            if size >= MAX_PROPERTY_CHARS:
                break
    return "\n".join(lines)[:MAX_PROPERTY_CHARS]


def _words(value: object, budget: int, yes_no: bool = False) -> list[str]:
    """The scalars of ``value`` as strings, in order, until ``budget`` characters (yes/no
    values only with ``yes_no``). A list or mapping that holds itself (``&r [*r]``) is
    read once."""
    out: list[str] = []
    seen: set[int] = set()
    stack = [value]
    while stack and budget > 0:
        item = stack.pop()
        if isinstance(item, bool) and yes_no:
            out.append(str(item).lower())
            continue
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, (list, dict, tuple, set)):
            if id(item) not in seen:
                seen.add(id(item))
                stack.extend(reversed(_items(item)))
            continue
        text = item.isoformat() if isinstance(item, (dt.date, dt.datetime)) else \
            str(item).strip() if isinstance(item, (str, int, float)) else ""
        if text:
            out.append(text)
            budget -= len(text) + 2
    return out


def _items(value: "list | dict | tuple | set") -> list:
    """What a YAML collection holds as values: a mapping's values, a list's items, an
    ``!!omap`` or ``!!pairs`` entry's value (a (key, value) pair), a ``!!set``'s members in
    a fixed order. ``!!binary`` bytes are no words."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, tuple):
        return list(value[1:])
    if isinstance(value, set):
        return sorted(value, key=str)
    return list(value)


def read_scalar(text: str) -> str | None:
    """One YAML value as written on its line (``"caf\\u00e9"``) read as text, or None when
    it is not a plain text value."""
    try:
        value = yaml.load(text, Loader=_BASE)  # noqa: S506 (a safe loader)
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    return value if isinstance(value, str) else None
