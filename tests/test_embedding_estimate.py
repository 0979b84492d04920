"""The time left for the vectors follows the run in progress: a model that gets slower
midway (the machine got busy) is estimated at the rate it gets now, not at the rate of
the run's first passages or of an earlier run."""

import os
import threading
import time

from ground_truth import ToyEmbedder
from personal_memory import MemoryStore
from personal_memory.embedding.runner import eta_seconds

PASSAGES = 240
SLOWER_AFTER = 60  # passages read at the first speed
LOOK_AFTER = 130  # the estimate is read after this many


class Loaded(ToyEmbedder):
    """A model whose time goes by tokens (words here), four times slower after a while."""

    def __init__(self):
        self.read = 0
        self.looked = threading.Event()  # the test has read the estimate: go on

    def tokens(self, text: str) -> int:
        return len(text.split())

    def passages(self, texts):
        per_word = 0.000125 if self.read < SLOWER_AFTER else 0.0005
        time.sleep(per_word * sum(self.tokens(t) for t in texts))
        self.read += len(texts)
        if self.read == LOOK_AFTER:
            self.looked.wait(30)
        return super().passages(texts)


def test_the_estimate_follows_a_run_that_slows_down(tmp_path):
    model = Loaded()
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder=model) as store:
        for i in range(PASSAGES):  # sections of 10 to 60 words, lengths mixed
            words = " ".join(f"word{i}x{j}" for j in range(10 + i * 37 % 51))
            store.remember(f"n{i}", words, namespace="n")
        worker = threading.Thread(target=store.embed_pending, kwargs={"batch_size": 8})
        worker.start()
        try:
            while model.read < LOOK_AFTER:
                time.sleep(0.005)
            with MemoryStore.open(db, read_only=True, embedder=model) as other:
                model.looked.set()
                at = time.monotonic()
                estimate = other.status().vectors.eta_seconds
        finally:
            model.looked.set()
            worker.join()
        actual = time.monotonic() - at
    assert estimate is not None
    assert 0.7 <= estimate / actual <= 1.3, (estimate, actual)


def test_the_bar_shows_the_time_left_it_is_told(monkeypatch):
    """On a terminal, the embedding bar's time left is the store's estimate (by tokens),
    not tqdm's sections per second: 100 s left shows as 01:40 whatever the pace so far."""
    import io

    from personal_memory.cli import context

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr(context.sys, "stderr", Terminal())
    asked = []

    def left():
        asked.append(True)
        return 100.0
    bar, update = context.progress_bar("section", "embedding", left)
    with bar:
        update(0, 50)
        update(10, 50)  # asked again only after a few seconds
        shown = str(bar)
    assert len(asked) == 1 and ("<01:40," in shown or "<01:39," in shown), shown


def test_a_run_long_past_its_estimate_gives_none(tmp_path):
    """A run that stores nothing for longer than its estimate by far (a full disk) has no
    estimate: it said "about 1 s to go" for as long as it was stuck."""
    from personal_memory.embedding.runner import ETA_OVERDUE_SECONDS
    with MemoryStore.open(tmp_path / "m.db", embedder=ToyEmbedder()) as store:
        for i in range(20):
            store.remember(f"n{i}", f"some words of note {i}", namespace="n")
        db, now = store._db, time.time()

        def paced(stored_at: float) -> float | None:
            with db.transaction():  # this process embeds, 100 tokens a second
                db.set_meta("embedding_by", f"{os.getpid()} {now:.0f}")
                db.set_meta("embedding_pace", f"1000.0 10.0000 {os.getpid()} {stored_at}")
            return eta_seconds(db, store._embedder, 20)
        fresh = paced(now)
        assert fresh is not None and fresh > 0
        assert paced(now - fresh - ETA_OVERDUE_SECONDS / 2) == 1.0  # due any moment
        assert paced(now - fresh - 2 * ETA_OVERDUE_SECONDS) is None  # stuck
