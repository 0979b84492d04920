"""The ``memory`` command: parse, dispatch to one command, turn library errors into one
line on stderr. Only this module configures logging. Heavy modules are imported inside
the commands that need them, so a search starts quickly."""

from __future__ import annotations

import logging
import os
import sys

from ..limits import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE
from . import access, commands, operations, replication  # noqa: F401  (they register the commands)
from .context import COMMANDS, CommandError
from .parser import build_parser, command_parser, query_words_last


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(query_words_last(
        parser, sys.argv[1:] if argv is None else list(argv)))
    if extra:  # said by the command's own parser, which names its own --help
        command_parser(parser, getattr(args, "command", None)).error(
            f"unrecognized arguments: {' '.join(extra)}")
    for name, default in (("db", None), ("json", False), ("vector_backend", None),
                          ("embedder", None)):
        if not hasattr(args, name):
            setattr(args, name, default)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    configure_logging(long_running=args.command in ("watch", "serve", "replicate"))
    limit_threads(args.command)
    from ..errors import PersonalMemoryError
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:
        return _reader_went_away()
    except (PersonalMemoryError, CommandError) as exc:
        print(f"memory: error: {_as_flag(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"memory: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


# The Python API names an argument by its field (as_of); the command line by its option.
_FLAGS = {"as_of": "--as-of", "valid_at": "--valid-at", "known_at": "--known-at",
          "since": "--since", "until": "--until",
          "valid_from": "--valid-from", "known_before": "--known-before"}


def _as_flag(message: str) -> str:
    """A library error that starts with a field's name, with the option's instead."""
    field, colon, rest = message.partition(":")
    return f"{_FLAGS[field]}:{rest}" if colon and field in _FLAGS else message


# Commands that search: the model encodes one short query at a time, where a second
# OpenMP thread saves a few ms on an idle machine but, on a busy one, spins at every
# barrier waiting for a descheduled partner (p95 from 55 ms to over a second at 100,000
# revisions; benchmarks/search_scale.py). Commands that embed many passages keep both.
SEARCHING = {"search", "changes", "serve", "ui", "read", "links", "history", "status",
             "stats"}


def limit_threads(command: str) -> None:
    """Thread pools sized before numpy and the model load (they read these once). numpy's
    BLAS gets one thread everywhere: its matrix-vector products are memory-bound, and its
    idle threads spin against the model's. A value the user set is kept."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    if command in SEARCHING:
        os.environ.setdefault("OMP_NUM_THREADS", "1")


class _OneLineWarnings(logging.Filter):
    """Python warnings from libraries, as one short log line each."""

    LIMIT = 300

    def filter(self, record: logging.LogRecord) -> bool:
        text = " ".join(record.getMessage().split())
        record.msg = text if len(text) <= self.LIMIT else text[:self.LIMIT] + "…"
        record.args = ()
        return True


class _OneLineFormatter(logging.Formatter):
    """A log line is one line: a file named with a line break (or a terminal's control)
    is shown escaped, as the command line cites it, so it cannot forge the next line."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        from .. import render
        record.message = render.name(render.for_terminal(record.message))
        return super().formatMessage(record)


def configure_logging(long_running: bool) -> None:
    import warnings
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO if long_running else logging.WARNING,
                        handlers=[handler])
    # The SDK says every HTTP session's start and end at INFO: a line per request.
    for name in ("mcp.server.streamable_http", "mcp.server.streamable_http_manager"):
        logging.getLogger(name).setLevel(logging.WARNING)
    if long_running:  # a daemon must not repeat a library's warning for ever
        logging.captureWarnings(True)
        warnings.simplefilter("once")
        logging.getLogger("py.warnings").addFilter(_OneLineWarnings())


def _reader_went_away() -> int:
    """Output piped into ``head`` or ``grep -q`` that stopped reading: exit quietly, with
    the status a process killed by SIGPIPE has, like other Unix tools."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the final flush must not fail again
    except OSError:
        pass
    return EXIT_BROKEN_PIPE
