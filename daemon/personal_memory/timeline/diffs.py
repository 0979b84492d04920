"""Compact word-level differences between two texts. Pure functions."""

from __future__ import annotations

import difflib
import re

# A word, or an emphasised run of words (**bold**, __bold__, ~~struck~~, ==marked==, at
# most 200 characters, on one line) as one: a change inside it shows the run whole,
# "[-**12. Januar**-]", not its marks cut in two. The bound keeps the scan linear.
_TOKEN = re.compile(r"(?:\*\*[^*\n]{1,200}?\*\*|__[^_\n]{1,200}?__|~~[^~\n]{1,200}?~~"
                    r"|==[^=\n]{1,200}?==)\S*|\S+")
CONTEXT_WORDS = 4
MAX_DIFF_CHARS = 2000
# difflib's matching takes time in the product of the two lengths (quadratic on a part of
# one long line of repeated words: hours at a megabyte). The words both texts begin and end
# with are set aside first; a middle larger than this is shown removed and added whole.
MAX_DIFF_WORK = 4_000_000


def word_diff(old: str, new: str, context: int = CONTEXT_WORDS) -> str:
    """What changed, word by word: removed words as ``[-...-]``, added as ``{+...+}``, a few
    unchanged words around each change and ``…`` for the rest. Empty when equal."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if a == b:
        return ""
    out: list[str] = []
    ops = _opcodes(a, b)
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


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for ``a`` to ``b``, found between the words both begin and end
    with (at most :data:`MAX_DIFF_WORK` of matching; beyond, the middle is one change)."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    ea, eb = len(a) - tail, len(b) - tail
    if (ea - head) * (eb - head) <= MAX_DIFF_WORK:
        middle = [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2
                  in difflib.SequenceMatcher(None, a[head:ea], b[head:eb],
                                             autojunk=False).get_opcodes()]
    else:
        middle = [("replace", head, ea, head, eb)]
    ops = ([("equal", 0, head, 0, head)] if head else []) + middle + (
        [("equal", ea, len(a), eb, len(b))] if tail else [])
    merged: list[tuple[str, int, int, int, int]] = []
    for op in ops:  # an empty middle's "equal" joins its neighbours
        if merged and op[0] == "equal" and merged[-1][0] == "equal":
            merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
        elif op[1] < op[2] or op[3] < op[4]:
            merged.append(op)
    return merged
