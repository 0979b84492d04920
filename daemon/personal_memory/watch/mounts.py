"""The mount table: which mount a folder lies on, and a watch told at once when a file
system is mounted or unmounted (its watches go with it, and inotify says nothing)."""

from __future__ import annotations

import logging
import os
import re
import select
import threading
from pathlib import Path
from typing import Callable

log = logging.getLogger("personal_memory.watch")

_MOUNTINFO = Path("/proc/self/mountinfo")
_OCTAL = re.compile(r"\\([0-7]{3})")


def mounts() -> list[tuple[str, str]]:
    """(mount ID, mount point) of each mount, in the kernel's order (a mount over another
    comes later); none where the system does not list them. A file system mounted again
    on the same folder has a new ID, though its device number and root inode may be the
    old one's."""
    try:
        lines = _MOUNTINFO.read_text(errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            out.append((fields[0], _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[4])))
    return out


def mount_of(root: Path | str, table: list[tuple[str, str]]) -> str | None:
    """The ID of the mount a folder lies on: the last of the longest mount points above
    it."""
    real = os.path.realpath(root)
    best, found = -1, None
    for mount_id, point in table:
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= best:
            best, found = len(point), mount_id
    return found


class MountWatch:
    """Calls ``changed()`` from its own thread each time the mount table changes: Linux
    marks an open /proc/self/mountinfo with a priority event then (poll's POLLPRI). Where
    there is no such file, or it cannot be polled, it does nothing, and the daemon's
    check once a heartbeat finds a mount all the same, later. :meth:`stop` returns at
    once (a pipe wakes the poll)."""

    def __init__(self, changed: Callable[[], None]):
        self._changed = changed
        self._thread: threading.Thread | None = None
        self._wake: int | None = None  # the pipe's writing end

    def start(self) -> None:
        try:
            f = open(_MOUNTINFO, "rb")
        except OSError:
            return
        try:
            poller = select.poll()
            poller.register(f, select.POLLPRI | select.POLLERR)
            poller.poll(0)  # the first poll reports the table as new: not a change
            woken, self._wake = os.pipe()
            poller.register(woken, select.POLLIN)
        except (OSError, AttributeError) as exc:  # no poll (macOS has it, but no file)
            log.debug("the mount table cannot be watched: %s", exc)
            f.close()
            return
        self._thread = threading.Thread(target=self._run, args=(f, poller, woken),
                                        name="mount-watch", daemon=True)
        self._thread.start()

    def _run(self, f, poller, woken: int) -> None:
        try:
            while True:
                try:
                    events = poller.poll()
                except OSError as exc:
                    log.warning("the mount table can no longer be watched: %s", exc)
                    return
                if any(fd == woken for fd, _ in events):
                    return
                if events:
                    self._changed()
        finally:
            f.close()
            os.close(woken)

    def stop(self) -> None:
        if self._thread is None:
            return
        os.write(self._wake, b"x")
        self._thread.join()
        os.close(self._wake)
        self._thread = self._wake = None
