"""YAML front matter of a note: parsed with PyYAML's safe loader (never executed), read
for the fields the store uses. Pure functions, no I/O."""

from __future__ import annotations

import datetime as dt
import unicodedata
from dataclasses import dataclass, field

import yaml

from ..limits import MAX_TITLE_CHARS

DATE_KEYS = ("date", "created", "updated", "modified")


@dataclass(frozen=True)
class FrontMatter:
    """What a note's front matter says. ``error`` is set (and nothing else) when the YAML
    could not be read; the block is then kept as plain text."""
    title: str | None = None
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    dates: dict[str, str] = field(default_factory=dict)
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
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None and not isinstance(v, (dict, list))]
    if isinstance(value, (dict, set)):
        return []
    return [str(value)]


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


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml: 20x faster
    """PyYAML's safe loader, except that a date no calendar has (``0000-00-00``,
    ``2024-02-30``) stays the text it is instead of failing the whole block."""

    def construct_yaml_timestamp(self, node):
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError, AttributeError):  # AttributeError: !!timestamp x
            return self.construct_scalar(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)


def parse(yaml_text: str) -> FrontMatter:
    """The fields of a front matter block (the YAML between the fences)."""
    try:
        data = yaml.load(yaml_text, Loader=_Loader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        last = yaml_text.rstrip("\n").count("\n")  # libyaml marks the end of input after it
        where = f"line {min(mark.line, last) + 2}" if mark is not None else "front matter"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return FrontMatter(error=f"front matter is not valid YAML ({where}: {problem})")
    except RecursionError:
        return FrontMatter(error="front matter is nested too deeply to read")
    if data is None:
        return FrontMatter()
    if not isinstance(data, dict):
        return FrontMatter(error="front matter is not a YAML mapping "
                                 f"(it is a {type(data).__name__})")
    data = {str(k).lower(): v for k, v in data.items()}
    title = data.get("title")
    title = str(title).strip()[:MAX_TITLE_CHARS] if isinstance(title, (str, int, float)) \
        and str(title).strip() else None
    aliases = tuple(dict.fromkeys(a.strip()[:MAX_TITLE_CHARS] for a in
                                  _strings(data.get("aliases", data.get("alias")))
                                  if a.strip()))
    tags = _tags(data.get("tags", data.get("tag")))
    dates = {k: d for k in DATE_KEYS if (d := _date(data.get(k))) is not None}
    return FrontMatter(title=title, aliases=aliases, tags=tags, dates=dates)
