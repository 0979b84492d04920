"""What every command shares: the registry, the resolved settings, opening the store,
printing a record (text or ``--json``), and Ctrl-C handling for long work."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any, Callable

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


class CommandError(Exception):
    """A usage problem found by the CLI itself."""


def command(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    COMMANDS[fn.__name__.removeprefix("cmd_").replace("_", "-")] = fn
    return fn


def settings(args: argparse.Namespace):
    from .. import settings as resolved
    return resolved.resolve(db=args.db, namespace=getattr(args, "namespace", None),
                            enable_writes=getattr(args, "enable_writes", None),
                            vector_backend=args.vector_backend,
                            config=getattr(args, "config", None), embedder=args.embedder,
                            replica=getattr(args, "replica", None))


def open_store(args: argparse.Namespace, *, read_only: bool, embedder: str | None = None,
               create: bool = True):
    """The store the command reads or writes; ``create``: a missing database is made (a
    command that only changes what is stored, such as forget or purge, reports it instead:
    a mistyped path is no empty history with nothing to purge)."""
    from ..memory import MemoryStore
    s = settings(args)
    if s.replica:
        return MemoryStore.open_replica(replica_process(s.replica),
                                        vector_backend=s.vector_backend,
                                        embedder=embedder or s.embedder)
    return MemoryStore.open(s.db, read_only=read_only, vector_backend=s.vector_backend,
                            embedder=embedder or s.embedder, create=create)


def replica_process(raw: str) -> str:
    """The replica's URL, once this process is one that can read it: Litestream's VFS reads
    its settings from the environment at start, so the command runs again with them, in a
    process this one watches (:func:`_read_through`)."""
    from ..replication import replica
    url = replica.replica_url(raw)
    if not replica.ready(url):
        sys.exit(_read_through(url, replica.environment(url)))
    return url


# How the Go runtime inside Litestream's VFS begins the report of a crash it cannot
# recover from (a half-copied file in the replica: "panic: runtime error: slice bounds
# out of range"); the stack that follows is its own, no help to a reader of notes.
GO_CRASH = (b"panic: ", b"fatal error: ")


def _read_through(url: str, environment: dict[str, str]) -> int:
    """Run this command again as a reader of ``url`` and pass on its exit code, its output
    and its messages; a crash of the VFS is said in one line (exit 2), the replica named,
    instead of a Go stack. Signals that stop a command are passed on to it."""
    import subprocess
    from ..limits import EXIT_USAGE
    child = subprocess.Popen([sys.executable, "-m", "personal_memory", *sys.argv[1:]],
                             env=environment, stderr=subprocess.PIPE)
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        # Ctrl-C reaches both through the terminal: the child decides what it means
        signal.signal(number, signal.SIG_IGN if number == signal.SIGINT
                      else lambda signum, _frame: child.send_signal(signum))
    crash = None
    with child.stderr:
        for line in child.stderr:
            if crash is None and line.startswith(GO_CRASH):
                crash = line.decode("utf-8", "replace").strip()
            if crash is None:
                sys.stderr.buffer.write(line)
                sys.stderr.buffer.flush()
    code = child.wait()
    if crash is None:
        return code if code >= 0 else 128 - code
    print(f"memory: error: the replica at {url} could not be read: Litestream's reader "
          f"stopped ({crash[:160]}); a file in it may be damaged or only partly copied "
          f"('memory restore {url} --to FILE' checks each one)", file=sys.stderr)
    return EXIT_USAGE


def emit(args: argparse.Namespace, record: Any, human: Callable[[Any], str]) -> None:
    """Print a record: ``human(record)`` for a person, its JSON with ``--json``."""
    if args.json:
        data = record.to_dict() if hasattr(record, "to_dict") else record
        if isinstance(data, list):
            data = [x.to_dict() if hasattr(x, "to_dict") else x for x in data]
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        from ..render import for_terminal
        text = human(record)
        if text:
            print(for_terminal(text))


def note(args: argparse.Namespace, line: str) -> None:
    """A remark beside the output: on stdout for a person, stderr with ``--json``."""
    from ..render import for_terminal
    print(for_terminal(line), file=sys.stderr if args.json else sys.stdout)


def replica_note(args: argparse.Namespace, known_up_to: str | None,
                 cutoff: str | None) -> None:
    """On a replica, how far its answer can know (nothing on the database itself)."""
    from .. import render
    line = render.replica_position(known_up_to, cutoff)
    if line:
        note(args, line)


class Interrupt:
    """Ctrl-C during long work: the first asks it to stop after the passage or batch in
    hand (what is done is kept), a second stops at once. Use as ``cancel``."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __call__(self) -> bool:
        return self.requested

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\nStopping after the work in hand (Ctrl-C again to stop now)...",
              file=sys.stderr)

    def __enter__(self) -> "Interrupt":
        self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self._previous)


ASK_EVERY = 2.0  # seconds between the estimates a bar asks for (each counts tokens)


def progress_bar(unit: str, desc: str, left: Callable[[], float | None] | None = None):
    """A tqdm bar on a terminal (stderr), with the update function work calls back:
    ``update(done, total)``. Nothing when stderr is not a terminal. ``left``: the seconds
    the work still takes by its own measure (the vectors: by tokens, at the run's recent
    rate), asked every few seconds: the bar's time left says that, not tqdm's items per
    second (sections differ in length)."""
    from tqdm import tqdm

    class Bar(tqdm):
        told: tuple[float, float] | None = None  # (seconds left, when)

        @property
        def format_dict(self):
            found = super().format_dict
            if self.told is not None and found["total"] and found["n"] < found["total"]:
                seconds = max(self.told[0] - (time.monotonic() - self.told[1]), 1.0)
                found["rate"] = (found["total"] - found["n"]) / seconds
            return found

    bar = Bar(total=0, unit=unit, desc=desc, disable=not sys.stderr.isatty(),
              file=sys.stderr, leave=False, dynamic_ncols=True)
    asked = [0.0]

    def update(done: int, total: int) -> None:
        now = time.monotonic()
        if left is not None and not bar.disable and now - asked[0] >= ASK_EVERY:
            asked[0] = now
            seconds = left()
            bar.told = (seconds, now) if seconds is not None else None
        bar.total = total
        bar.n = done
        bar.refresh()
    return bar, update
