"""The model's OpenMP threads, owned by the library whoever calls it: a notebook, a
backtest that imported numpy first, the daemon, the MCP server, the command line.

- **Queries are encoded on one thread.** Two OpenMP threads halve a quiet machine's 26 ms,
  but on a busy one their barriers wait for each other: 1.7 s a query beside two busy
  processes, 30 ms on one thread. The limit is set at run time on the loaded runtime
  (threadpoolctl), so no environment variable read at import matters.
- **Passages get what measures best**: every core at first, then one thread or all,
  compared every five minutes on interleaved passages (so both see the same load), by
  tokens per second.
- **libgomp spins briefly.** It spins up to 300,000 times at a barrier before it sleeps,
  which a busy machine turns into lost time slices; the model's own copy of libgomp is
  loaded with ``GOMP_SPINCOUNT`` at 1,000, so that two threads stay faster than one beside
  busy processes (benchmarks/api_load.py). The variable is set only while the model loads.

A user who sets ``OMP_NUM_THREADS`` keeps it for both, and one who sets
``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` keeps those.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Iterator

QUERY_THREADS = 1
SPIN_COUNT = "1000"
FIRST_PROBE_SECONDS = 30.0  # work on every core this long before the first measurement
PROBE_EVERY_SECONDS = 300.0  # between two measurements of the thread counts
PROBE_PASSAGES = 2  # passages per thread count in one measurement
FEWER_THREADS_MARGIN = 1.15  # how much faster one thread must measure to be chosen


def user_threads() -> int | None:
    """``OMP_NUM_THREADS`` when the user set a whole number there."""
    value = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


def cores() -> int:
    """The cores this process may run on (what OpenMP uses by default)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


@contextlib.contextmanager
def loading_environment() -> Iterator[None]:
    """Around the model's first load: libgomp reads its settings once, when it loads."""
    if "GOMP_SPINCOUNT" in os.environ or "OMP_WAIT_POLICY" in os.environ:
        yield
        return
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        yield
    finally:
        os.environ.pop("GOMP_SPINCOUNT", None)


_BLAS = None  # threadpoolctl's controller of the loaded BLAS, made on first use


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread for a search: its matrix-vector product is bound by
    memory, and its idle threads spin against the model's and other processes' (a
    user's ``OPENBLAS_NUM_THREADS`` or ``MKL_NUM_THREADS`` stands)."""
    global _BLAS
    if "OPENBLAS_NUM_THREADS" in os.environ or "MKL_NUM_THREADS" in os.environ:
        yield
        return
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController
        _BLAS = ThreadpoolController()
    with _BLAS.limit(limits=1, user_api="blas"):
        yield


class Pools:
    """The OpenMP pools loaded in this process, limited for the span of one call. Made
    after the model is loaded, so that its runtime is among them."""

    def __init__(self):
        from threadpoolctl import ThreadpoolController
        self._controller = ThreadpoolController()

    @contextlib.contextmanager
    def openmp(self, threads: int, force: bool = False) -> Iterator[None]:
        if user_threads() is not None and not force:
            yield  # the user's own setting stands
            return
        with self._controller.limit(limits=threads, user_api="openmp"):
            yield


class ThreadChoice:
    """How many threads the model reads passages with: one, or every core, whichever
    gave more tokens per second when last measured side by side."""

    def __init__(self, most: int | None = None):
        fixed = user_threads()
        most = fixed or most or cores()
        self.options = [fixed] if fixed else sorted({1, most})
        self.current = self.options[-1]
        self.rates: dict[int, float] = {}  # threads -> tokens per second, last measured
        self._plan: list[int] = []  # the measurement under way: thread counts to run
        self._sums: dict[int, list[float]] = {}
        self._next_probe: float | None = None  # set by the first passage

    def next(self) -> int:
        """The thread count for the next passage: every core at first (the faster choice
        on a quiet machine, and on a busy one with libgomp's short spin), then whichever
        measured faster."""
        now = time.monotonic()
        if self._next_probe is None:
            self._next_probe = now + FIRST_PROBE_SECONDS
        if not self._plan and len(self.options) > 1 and now >= self._next_probe:
            self._plan = self.options[::-1] * PROBE_PASSAGES  # interleaved: 2, 1, 2, 1
            self._sums = {n: [0.0, 0.0] for n in self.options}
        return self._plan[0] if self._plan else self.current

    def record(self, threads: int, tokens: int, seconds: float) -> None:
        """A passage of ``tokens`` read in ``seconds`` on ``threads`` threads."""
        if not self._plan or self._plan[0] != threads or seconds <= 0:
            if seconds > 0:  # the rate it gets now, smoothed over the last passages
                old = self.rates.get(threads)
                new = tokens / seconds
                self.rates[threads] = new if old is None else 0.8 * old + 0.2 * new
            return
        self._plan.pop(0)
        self._sums[threads][0] += tokens
        self._sums[threads][1] += seconds
        if not self._plan:
            self.rates = {n: t / s for n, (t, s) in self._sums.items() if s > 0}
            most = self.options[-1]
            best = max(self.rates, key=self.rates.get)
            # fewer threads only when clearly faster: a close call is noise, and every
            # core is the better bet when the load goes away
            self.current = (best if best == most or self.rates[best]
                            > FEWER_THREADS_MARGIN * self.rates.get(most, 0.0) else most)
            self._next_probe = time.monotonic() + PROBE_EVERY_SECONDS

    def describe(self) -> str:
        """One line: the choice and what it rests on."""
        measured = ", ".join(f"{n} thread{'s' if n > 1 else ''} {r:.0f}"
                             for n, r in sorted(self.rates.items()))
        return (f"reads passages on {self.current} thread{'s' if self.current > 1 else ''}"
                + (f" (tokens per second: {measured})" if measured else ""))
