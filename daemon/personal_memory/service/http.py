"""The HTTP server as a service: ``memory serve --http`` as a systemd user unit or a
launchd agent, sandboxed like the daemon's unit, with the network it serves on. It reads
the database and writes only its access file (tokens) beside it."""

from __future__ import annotations

import os
import plistlib
from pathlib import Path

from ..limits import EXIT_USAGE
from ..paths import ensure_private_dir, memory_executable, real_database
from . import units
from .units import Outcome, plist_path, quote, run_steps, unit_path

UNIT_NAME = "personal-memory-mcp.service"
LABEL = "io.github.personal-memory.mcp"
LAUNCHD_LOGS = Path.home() / "Library" / "Logs" / "personal-memory"


def command(db: Path, replica: str | None = None) -> list[str]:
    """``replica``: a replica's URL, read in place instead of the database (whose folder
    still keeps the access file)."""
    return [str(memory_executable()), "--db", str(db), "serve", "--http",
            *(["--replica", replica] if replica else [])]


def systemd_unit(db: Path, replica: str | None = None) -> str:
    what = f"the replica {replica}" if replica else "the database"
    return f"""\
[Unit]
Description=personal-memory MCP server over Streamable HTTP (read-only, OAuth), reading {what}

[Service]
Type=simple
ExecStart={" ".join(quote(a) for a in command(db, replica))}
Restart=on-failure
RestartSec=5
# {EXIT_USAGE}: bad options or a missing database; restarting would not help.
RestartPreventExitStatus={EXIT_USAGE}
TimeoutStopSec=15
Environment=PYTHONUNBUFFERED=1
UMask=0077
# Sandbox: the database folder is writable (SQLite's shared memory, the access file).
{units.sandbox([str(real_database(db).parent)], network=True)}
[Install]
WantedBy=default.target
"""


def launchd_plist(db: Path, replica: str | None = None) -> str:
    return plistlib.dumps({
        "Label": LABEL, "ProgramArguments": command(db, replica), "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False}, "ProcessType": "Background",
        "ThrottleInterval": 10, "EnvironmentVariables": {"PYTHONUNBUFFERED": "1"},
        "StandardOutPath": str(LAUNCHD_LOGS / "mcp.out.log"),
        "StandardErrorPath": str(LAUNCHD_LOGS / "mcp.err.log"), "Umask": 0o077,
    }, fmt=plistlib.FMT_XML).decode("utf-8")


def render(kind: str, db: Path, replica: str | None = None) -> str:
    return systemd_unit(db, replica) if kind == "systemd" else launchd_plist(db, replica)


def install(kind: str, db: Path, replica: str | None = None) -> Outcome:
    messages: list[str] = []
    units.refuse_foreign(kind)
    if kind == "systemd":
        path = unit_path(name=UNIT_NAME)
        steps = [["systemctl", "--user", "daemon-reload"],
                 ["systemctl", "--user", "enable", "--now", UNIT_NAME]]
        logs = f"journalctl --user -u {UNIT_NAME} -f"
    else:
        path = plist_path(LABEL)
        ensure_private_dir(LAUNCHD_LOGS)
        steps = [["launchctl", "bootstrap", f"gui/{os.getuid()}", str(path)]]
        logs = str(LAUNCHD_LOGS)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(kind, db, replica))
    messages.append(f"wrote {path}")
    failure = run_steps(steps, messages)
    if failure:
        return Outcome(kind, messages, (
            f"{failure}; the service file is written ({path}) but the server is not "
            f"running: fix the cause, then run '{' '.join(steps[-1])}'"))
    messages += [f"logs: {logs}", "next: 'memory http passphrase' (for the consent page) "
                 "or 'memory tokens add NAME' (for a script); docs/http.md"]
    return Outcome(kind, messages, None)


def uninstall(kind: str) -> Outcome:
    return units.uninstall(kind, name=UNIT_NAME, label=LABEL)
