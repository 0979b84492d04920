"""systemd's notify protocol (sd_notify), spoken directly: one datagram, no dependency."""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger("personal_memory.notify")


def notify(message: str) -> bool:
    """Send ``message`` (e.g. ``READY=1``) to $NOTIFY_SOCKET; False when not under systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # abstract socket namespace
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            # Never block the daemon on a receiver that is slow to read: a full queue
            # drops this status message instead.
            sock.setblocking(False)
            sock.connect(address)
            sock.send(message.encode("utf-8"))
        return True
    except BlockingIOError:
        log.debug("systemd's notify queue is full; dropped %r", message.split("\n")[0])
        return False
    except OSError as exc:
        log.warning("could not notify systemd at %s: %s", address.lstrip("\0"), exc)
        return False


def watchdog_interval() -> float | None:
    """Seconds between WATCHDOG=1 pings (half systemd's WatchdogSec), or None."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 2_000_000
    except ValueError:
        return None
