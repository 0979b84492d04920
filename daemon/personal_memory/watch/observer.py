"""The operating system's file watcher behind one seam: which events matter (the filter),
and the observer's life (start, health, restart). watchdog's events are hints, never
truth: they only mark paths for the daemon to reconcile."""

from __future__ import annotations

import errno
import logging
import os
import threading
from pathlib import Path
from typing import Callable

from ..notes.folders import Folder
from ..notes.markdown import is_hidden, is_note_name, is_watched_dir

log = logging.getLogger("personal_memory.watch")

INOTIFY_WATCHES = Path("/proc/sys/fs/inotify/max_user_watches")
# Where watchdog reports a lost-events overflow (it only logs it).
OBSERVER_LOGGERS = ("watchdog.observers.inotify", "watchdog.observers.inotify_c",
                    "watchdog.observers.inotify_buffer", "fsevents")


def watchdog_observer():
    from watchdog.observers import Observer
    return Observer()


def watched_events() -> tuple[list, list]:
    """The event kinds asked of the OS (inotify's mask is built from them): in the notes
    folders, what can change a note; in a root's parent, what can move or remove the root.
    Never opens and reads: a program reading a file beside the folder, or its hidden
    settings, thousands of times a second would otherwise reach Python as events to
    throw away, overflow the queue, and cost a full rescan each time."""
    from watchdog import events as e
    moves = [e.DirCreatedEvent, e.DirDeletedEvent, e.DirMovedEvent, e.FileCreatedEvent,
             e.FileDeletedEvent, e.FileMovedEvent]
    return moves + [e.FileModifiedEvent, e.FileClosedEvent], moves


class EventFilter:
    """Whether an event at a path can change what is indexed: a folder, or a file with a
    note's name, and never the database's own files (it may live in a notes folder); or a
    symbolic link to a folder, which inotify reports as a file (the scan names it as not
    followed)."""

    def __init__(self, db_path: str):
        db = os.path.abspath(db_path)
        self.own_files = {db + suffix for suffix in ("", "-wal", "-shm", "-journal", ".lock")}

    def relevant(self, path: str | bytes, is_directory: bool) -> bool:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if os.path.abspath(path) in self.own_files:
            return False
        name = os.path.basename(path)
        return (is_directory or is_note_name(name)
                or (is_watched_dir(name) and os.path.islink(path) and os.path.isdir(path)))


class OverflowWatch(logging.Handler):
    """watchdog only logs an inotify queue overflow; turn that log line into a rescan."""

    def __init__(self, on_overflow: Callable[[], None]):
        super().__init__(logging.WARNING)
        self.on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.on_overflow()


class ObserverLifecycle:
    """Starts, checks and replaces the file observer. ``mark(*paths)`` is called from the
    observer's thread for every relevant event, with all its paths at once (a move's two
    sides settle together, so the daemon imports them as one move); ``on_limit`` when
    inotify has too few watches (the daemon then rescans more often)."""

    def __init__(self, folders: list[Folder], event_filter: EventFilter,
                 mark: Callable[..., None], on_limit: Callable[[], None],
                 factory: Callable[[], object] = watchdog_observer):
        self.folders = folders
        self.filter = event_filter
        self.mark = mark
        self.on_limit = on_limit
        self.factory = factory
        self._observer = None
        self._stale = threading.Event()

    def start(self, lost: set[Folder]) -> None:
        """(Re)start watching every folder not in ``lost``, and each root's parent (inotify
        says nothing when a root itself moves)."""
        from watchdog.events import FileSystemEventHandler
        lifecycle = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event) -> None:
                if event.is_directory and event.event_type == "modified":
                    return  # its entries' own events say what changed
                if (event.is_directory and event.event_type == "deleted"
                        and lifecycle._indexed(event.src_path)):
                    # A folder moved into one just made reaches inotify as an unpaired
                    # move, and watchdog then drops the watch the moved folder still needs
                    # (a real deletion reads the same): its watches are rebuilt afresh.
                    lifecycle._stale.set()
                paths = [path for path in (event.src_path, getattr(event, "dest_path", ""))
                         if path and lifecycle.filter.relevant(path, event.is_directory)]
                if paths:
                    lifecycle.mark(*paths)

        class RootHandler(FileSystemEventHandler):
            def __init__(self, root: str):
                self.root = root

            def on_any_event(self, event) -> None:
                if self.root in (event.src_path, getattr(event, "dest_path", "")):
                    lifecycle.mark(self.root)

        self.stop()
        self._stale.clear()
        observer = self.factory()
        handler = Handler()
        in_folders, in_parents = watched_events()
        for folder in self.folders:
            try:
                if folder.root.parent.is_dir() and folder.root.parent != folder.root:
                    observer.schedule(RootHandler(str(folder.root)), str(folder.root.parent),
                                      recursive=False, event_filter=in_parents)
                if folder not in lost and folder.root.is_dir():
                    observer.schedule(handler, str(folder.root), recursive=True,
                                      event_filter=in_folders)
            except OSError as exc:
                self._failed(folder, exc)
        try:
            observer.start()
        except OSError as exc:
            self._failed(None, exc)
        self._observer = observer

    def _failed(self, folder: Folder | None, exc: OSError) -> None:
        where = folder.root if folder else "the notes folders"
        if exc.errno != errno.ENOSPC:  # ENOSPC from inotify: too few watches
            raise exc
        log.error("cannot watch %s: the inotify watch limit (fs.inotify.max_user_watches"
                  "=%s) is reached; raise it with 'sysctl fs.inotify.max_user_watches="
                  "524288'. Falling back to a rescan every 60 s.", where,
                  read_int(INOTIFY_WATCHES))
        self.on_limit()

    def stop(self) -> None:
        if self._observer is not None:
            try:
                self._observer.stop()
                self._observer.join(timeout=5)
            except Exception as exc:  # a dead observer may fail to stop; it is replaced
                log.warning("stopping the file observer failed: %s", exc)
            self._observer = None

    def _indexed(self, path: str | bytes) -> bool:
        """Whether a folder is one the notes are read from (not .git, .obsidian, .trash)."""
        path = os.fsdecode(path)
        for folder in self.folders:
            root = str(folder.root)
            if path.startswith(root + os.sep):
                return not is_hidden(os.path.relpath(path, root).replace(os.sep, "/"))
        return False

    def stale(self) -> bool:
        """A folder was deleted or moved away since the watches were made: they may have lost
        track of a folder that still exists, so they are to be made again."""
        return self._stale.is_set()

    def healthy(self) -> bool:
        observer = self._observer
        if observer is None or not observer.is_alive():
            return False
        # An emitter thread dies when its folder is deleted or after a handler error.
        return all(e.is_alive() for e in getattr(observer, "emitters", ()))


def read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None
