"""Compact word-level differences between two texts. Pure functions."""

from __future__ import annotations

import difflib
import re

_TOKEN = re.compile(r"\S+")
CONTEXT_WORDS = 4
MAX_DIFF_CHARS = 2000


def word_diff(old: str, new: str, context: int = CONTEXT_WORDS) -> str:
    """What changed, word by word: removed words as ``[-...-]``, added as ``{+...+}``, a few
    unchanged words around each change and ``…`` for the rest. Empty when equal."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if a == b:
        return ""
    out: list[str] = []
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            same = a[i1:i2]
            first, last = n == 0, n == len(ops) - 1
            if len(same) <= 2 * context and not first and not last:
                out.extend(same)
                continue
            head = [] if first else same[:context]
            tail = [] if last else same[-context:]
            out.extend(head)
            if len(same) > len(head) + len(tail):
                out.append("…")
            out.extend(tail)
            continue
        if i2 > i1:
            out.append("[-" + " ".join(a[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + " ".join(b[j1:j2]) + "+}")
    text = " ".join(out)
    return text if len(text) <= MAX_DIFF_CHARS else text[:MAX_DIFF_CHARS - 1] + "…"
