"""A seeded, notes-like corpus of revisions for scale benchmarks.

Markdown-like chunks of 30 to 250 words drawn from a Zipf-distributed vocabulary (a few
very common words, a long tail of rare ones), spread over two years. About a third of the
memories are revised later, some with bounded corrections of a past period, and some are
tombstoned; a small second namespace shares the vocabulary.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import numpy as np

from personal_memory.times import parse_time

START = parse_time("2024-01-01")
END = parse_time("2025-12-31")
DAY = 86_400_000_000
VOCAB_SIZE = 20_000

_SYLLABLES = ("ka ri to mu sa le po ni va de lo mi tu ra ne si ko ba fe gu ha jo li "
              "ma no pe qu ro su ta ve wo xi yu za").split()


def vocabulary(size: int = VOCAB_SIZE, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words, key=lambda w: (len(w), w))


@dataclass
class Write:
    kind: str  # "remember" or "forget"
    namespace: str
    memory_id: str
    known_at: int
    valid_from: int | None
    valid_to: int | None
    title: str | None = None
    content: str | None = None


class Corpus:
    def __init__(self, seed: int = 1, paragraph_words: int | None = None):
        """``paragraph_words``: break each text into paragraphs of this many words (the
        same words: the model then reads a long section in several pieces)."""
        self.rng = random.Random(seed)
        self.paragraph_words = paragraph_words
        self.words = vocabulary()
        # Zipf weights: rank r has weight 1/r.
        self.cum = []
        total = 0.0
        for r in range(1, len(self.words) + 1):
            total += 1.0 / r
            self.cum.append(total)

    def word(self) -> str:
        import bisect
        x = self.rng.random() * self.cum[-1]
        return self.words[min(bisect.bisect_left(self.cum, x), len(self.words) - 1)]

    def text(self) -> str:
        n = self.rng.randint(30, 250)
        words = [self.word() for _ in range(n)]
        step = self.paragraph_words or n
        body = "\n\n".join(" ".join(words[i:i + step]) for i in range(0, n, step))
        return f"## {self.word().title()} {self.word()}\n\n{body}."

    def writes(self, revisions: int) -> list[Write]:
        """About ``revisions`` writes in known_at order."""
        rng = self.rng
        out: list[Write] = []
        memories = int(revisions / 1.6)
        for i in range(memories):
            ns = "other" if i % 20 == 0 else "notes"
            mid = f"note{i:06d}#1"
            t = rng.randint(START, END - 30 * DAY)
            out.append(Write("remember", ns, mid, t, None, None, f"Note {i}", self.text()))
            if rng.random() < 0.34:
                for _ in range(rng.choice([1, 1, 2, 3])):
                    t2 = rng.randint(t + 1, END)
                    roll = rng.random()
                    if roll < 0.15:
                        vf = rng.randint(t, t2)
                        vt = vf + rng.randint(1, 60) * DAY
                        out.append(Write("remember", ns, mid, t2, vf, vt, f"Note {i}",
                                         self.text()))
                    elif roll < 0.30:
                        out.append(Write("forget", ns, mid, t2, None, None))
                    else:
                        out.append(Write("remember", ns, mid, t2, None, None, f"Note {i}",
                                         self.text()))
        out.sort(key=lambda w: (w.known_at, w.memory_id))
        return out[:revisions]

    def queries(self, count: int) -> list[dict]:
        """A fixed mix: rare, common and very common words, one to five words, now and
        historical cutoffs, some with an earlier valid_at."""
        rng = self.rng
        qs = []
        for i in range(count):
            n = rng.randint(1, 5)
            kind = i % 3
            if kind == 0:    # rare words
                words = [self.words[rng.randint(2000, VOCAB_SIZE - 1)] for _ in range(n)]
            elif kind == 1:  # common words
                words = [self.words[rng.randint(50, 1000)] for _ in range(n)]
            else:            # very common words
                words = [self.words[rng.randint(0, 20)] for _ in range(n)]
            as_of = None if i % 4 == 0 else rng.randint(START + 60 * DAY, END)
            valid_at = None
            if as_of is not None and i % 5 == 0:
                valid_at = rng.randint(START, as_of)
            qs.append({"query": " ".join(words), "as_of": as_of, "valid_at": valid_at,
                       "kind": ("rare", "common", "very common")[kind]})
        return qs


def load(store, writes: list[Write]) -> None:
    """Write through the public API, in one transaction per 5,000 writes."""
    from personal_memory.errors import AlreadyHidden
    from personal_memory.times import format_time
    for start in range(0, len(writes), 5000):
        with store.batch():
            for w in writes[start:start + 5000]:
                if w.kind == "remember":
                    store.remember(w.memory_id, w.content, namespace=w.namespace,
                                   title=w.title, known_at=format_time(w.known_at),
                                   valid_from=format_time(w.valid_from),
                                   valid_to=format_time(w.valid_to))
                else:
                    try:
                        store.forget(w.memory_id, namespace=w.namespace,
                                     known_at=format_time(w.known_at))
                    except AlreadyHidden:
                        pass


class SyntheticEmbedder:
    """384-dimension unit vectors with similarities as compressed as e5's (most pairs
    between 0.7 and 0.9; shared words raise them): the size and the hard case of a real
    model's vectors, made in microseconds. For speed and exactness measurements only; it
    is not a semantic model."""

    name = "synthetic"
    version = "1"
    dimensions = 384

    @staticmethod
    def no_answer_below(rows: int) -> float:
        return 0.0
    key = "synthetic/1"

    def __init__(self, seed: int = 5):
        self._seed = seed
        self._words: dict[str, np.ndarray] = {}
        rng = np.random.default_rng(seed)
        common = rng.normal(size=self.dimensions)
        self._common = 2.0 * common / np.linalg.norm(common)

    def _word(self, word: str) -> np.ndarray:
        v = self._words.get(word)
        if v is None:
            rng = np.random.default_rng([self._seed, *word.encode()])
            v = self._words[word] = rng.normal(size=self.dimensions)
        return v

    def _vector(self, text: str) -> np.ndarray:
        words = re.findall(r"[^\W_]+", text.casefold())
        g = sum((self._word(w) for w in words), np.zeros(self.dimensions))
        norm = np.linalg.norm(g)
        v = self._common + (g / norm if norm else g)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def passages(self, texts):
        return np.array([self._vector(t) for t in texts], dtype=np.float32).reshape(
            len(texts), self.dimensions)

    def query(self, text: str) -> np.ndarray:
        return self._vector(text)
