"""The companion service that keeps the replica current: ``memory replicate run``
(Litestream under this package's pause rule) as a systemd user unit or launchd agent,
hardened like the daemon's, but with the network a remote replica needs."""

from __future__ import annotations

import os
import plistlib
from pathlib import Path

from ..paths import ensure_private_dir, memory_executable, real_database
from ..replication.litestream import Destination
from . import units
from .units import Outcome, default_kind, plist_path, quote, run_steps, unit_path

UNIT_NAME = "personal-memory-replicate.service"
LABEL = "io.github.personal-memory.replicate"
LAUNCHD_LOGS = Path.home() / "Library" / "Logs" / "personal-memory"


def kind(args) -> str:
    return "launchd" if args.launchd else "systemd" if args.systemd else default_kind()


def command(db: Path) -> list[str]:
    return [str(memory_executable()), "--db", str(db), "replicate", "run"]


def systemd_unit(db: Path, dest: Destination) -> str:
    """Hardened as the daemon's unit is (one sandbox for both), with the network only a
    remote replica needs."""
    writable = ([str(real_database(db).parent)]  # the WAL is beside the real file
                + ([dest.location] if dest.scheme == "file" else []))
    return f"""\
[Unit]
Description=personal-memory replication: streams the database to {dest.url} (Litestream)

[Service]
Type=simple
ExecStart={" ".join(quote(a) for a in command(db))}
Restart=always
RestartSec=10
TimeoutStopSec=30
Environment=PYTHONUNBUFFERED=1
Nice=10
UMask=0077
{units.sandbox(writable, network=not dest.readable_here)}
[Install]
WantedBy=default.target
"""


def launchd_plist(db: Path) -> str:
    logs = LAUNCHD_LOGS
    return plistlib.dumps({
        "Label": LABEL, "ProgramArguments": command(db), "RunAtLoad": True,
        "KeepAlive": True, "ProcessType": "Background", "ThrottleInterval": 10,
        "StandardOutPath": str(logs / "replicate.out.log"),
        "StandardErrorPath": str(logs / "replicate.err.log"), "Umask": 0o077,
    }, fmt=plistlib.FMT_XML).decode("utf-8")


def streamed(kind: str) -> Path | None:
    """The database the installed service streams (None: no service file, or one this
    version cannot read): one service per user, so another database's is not replaced."""
    try:
        if kind == "systemd":
            line = next(x for x in path(kind).read_text().splitlines()
                        if x.startswith("ExecStart="))
            words = units.split_command(line.removeprefix("ExecStart="))
        else:
            words = plistlib.loads(path(kind).read_bytes())["ProgramArguments"]
        return Path(os.path.abspath(words[words.index("--db") + 1]))
    except (OSError, StopIteration, ValueError, IndexError, KeyError, TypeError,
            plistlib.InvalidFileException):
        return None


def another_database(kind: str, db: Path) -> Path | None:
    """The database the installed service streams when it is not ``db`` (else None)."""
    other = streamed(kind)
    return other if other is not None and other != Path(os.path.abspath(db)) else None


def install(kind: str, db: Path, dest: Destination, messages: list[str]) -> Outcome:
    units.refuse_foreign(kind)
    other = another_database(kind, db)
    if other is not None:
        return Outcome(kind, messages, (
            f"the replication service ({path(kind)}) streams another database, {other}; "
            f"one runs per user: run 'memory --db {db} replicate run' yourself (the replica "
            "is set up), or remove the other's first ('memory --db "
            f"{other} replicate remove')"))
    if kind == "systemd":
        file = unit_path(name=UNIT_NAME)
        text = systemd_unit(db, dest)
        steps = [["systemctl", "--user", "daemon-reload"],
                 ["systemctl", "--user", "enable", "--now", UNIT_NAME],
                 ["systemctl", "--user", "restart", UNIT_NAME]]  # a new config: reread it
        logs = f"journalctl --user -u {UNIT_NAME} -f"
    else:
        file = plist_path(LABEL)
        text = launchd_plist(db)
        ensure_private_dir(LAUNCHD_LOGS)
        steps = [["launchctl", "bootstrap", f"gui/{os.getuid()}", str(file)]]
        logs = str(LAUNCHD_LOGS)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)
    messages = [*messages, f"wrote {file}"]
    failure = run_steps(steps, messages)
    if failure:
        return Outcome(kind, messages, (
            f"{failure}; the service file is written ({file}) but replication is not "
            f"running: fix the cause and run '{' '.join(steps[-1])}', or run 'memory "
            f"--db {db} replicate run' yourself"))
    messages.append(f"logs: {logs}")
    return Outcome(kind, messages, None)


def path(kind: str) -> Path:
    return unit_path(name=UNIT_NAME) if kind == "systemd" else plist_path(LABEL)


def uninstall(kind: str) -> Outcome:
    return units.uninstall(kind, name=UNIT_NAME, label=LABEL)
