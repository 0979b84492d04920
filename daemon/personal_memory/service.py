"""Service definitions for the sync daemon: a systemd user unit and a launchd agent,
written with this machine's absolute paths."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .paths import data_dir, ensure_private_dir, memory_executable

LABEL = "io.github.personal-memory.watch"
UNIT_NAME = "personal-memory.service"


@dataclass(frozen=True)
class ServiceSpec:
    executable: Path
    db: Path
    config: Path
    log_dir: Path

    @classmethod
    def for_this_machine(cls, db: Path, config: Path) -> "ServiceSpec":
        logs = (Path.home() / "Library" / "Logs" / "personal-memory"
                if sys.platform == "darwin" else data_dir() / "logs")
        return cls(memory_executable(), db.expanduser().absolute(),
                   config.expanduser().absolute(), logs.absolute())

    def command(self) -> list[str]:
        return [str(self.executable), "--db", str(self.db), "watch", "--config", str(self.config)]


def default_kind() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def _quote(arg: str) -> str:
    if any(c in arg for c in ' "\\$%;'):
        escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        return f'"{escaped}"'
    return arg


def systemd_unit(spec: ServiceSpec) -> str:
    exec_start = " ".join(_quote(a) for a in spec.command())
    return f"""\
[Unit]
Description=personal-memory sync daemon: keeps notes folders indexed

[Service]
Type=notify
NotifyAccess=main
ExecStart={exec_start}
Restart=on-failure
RestartSec=5
# 75: another daemon already holds the database; 2: a configuration error (no folders,
# a bad config.toml). Restarting would not help either.
RestartPreventExitStatus=75
RestartPreventExitStatus=2
WatchdogSec=120
TimeoutStopSec=30
Environment=PYTHONUNBUFFERED=1
Nice=10
IOSchedulingClass=idle
CPUWeight=20
IOWeight=20
UMask=0077
# Sandbox: notes are read-only, only the database folder is writable, no network.
PrivateUsers=yes
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=read-only
ReadWritePaths={_quote(str(spec.db.parent))}
PrivateTmp=yes
PrivateNetwork=yes
RestrictAddressFamilies=AF_UNIX
IPAddressDeny=any
CapabilityBoundingSet=
AmbientCapabilities=
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
ProcSubset=pid
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
PrivateDevices=yes
PrivateIPC=yes
KeyringMode=private
RemoveIPC=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged
SystemCallErrorNumber=EPERM

[Install]
WantedBy=default.target
"""


def launchd_plist(spec: ServiceSpec) -> str:
    doc = {
        "Label": LABEL,
        "ProgramArguments": spec.command(),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "Nice": 10,
        "ThrottleInterval": 10,
        "EnvironmentVariables": {"PYTHONUNBUFFERED": "1"},
        "StandardOutPath": str(spec.log_dir / "watch.out.log"),
        "StandardErrorPath": str(spec.log_dir / "watch.err.log"),
        "Umask": 0o077,
    }
    return plistlib.dumps(doc, fmt=plistlib.FMT_XML).decode("utf-8")


def render(kind: str, spec: ServiceSpec) -> str:
    return systemd_unit(spec) if kind == "systemd" else launchd_plist(spec)


def _unit_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "systemd" / "user" / UNIT_NAME


def _plist_path() -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def _run(cmd: list[str]) -> str:
    if shutil.which(cmd[0]) is None:
        return f"(skipped: {cmd[0]} not found) {' '.join(cmd)}"
    done = subprocess.run(cmd, capture_output=True, text=True)
    out = (done.stdout + done.stderr).strip()
    return f"$ {' '.join(cmd)}" + (f"\n{out}" if out else "") + (
        "" if done.returncode == 0 else f"\n(exit code {done.returncode})")


def install(kind: str, spec: ServiceSpec) -> list[str]:
    messages = []
    # The sandbox makes only this folder writable; it must exist before the service starts.
    ensure_private_dir(spec.db.parent)
    if kind == "systemd":
        path = _unit_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(systemd_unit(spec))
        messages.append(f"wrote {path}")
        messages.append(_run(["systemctl", "--user", "daemon-reload"]))
        messages.append(_run(["systemctl", "--user", "enable", "--now", UNIT_NAME]))
        messages.append(f"logs: journalctl --user -u {UNIT_NAME} -f")
    else:
        path = _plist_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        ensure_private_dir(spec.log_dir)
        path.write_text(launchd_plist(spec))
        messages.append(f"wrote {path}")
        messages.append(_run(["launchctl", "bootstrap", f"gui/{os.getuid()}", str(path)]))
        messages.append(f"logs: {spec.log_dir}")
    if not spec.config.exists():
        messages.append(f"note: {spec.config} does not exist yet; add [[folders]] to it "
                        "(see docs/operations.md)")
    return messages


def uninstall(kind: str) -> list[str]:
    messages = []
    if kind == "systemd":
        messages.append(_run(["systemctl", "--user", "disable", "--now", UNIT_NAME]))
        path = _unit_path()
    else:
        path = _plist_path()
        messages.append(_run(["launchctl", "bootout", f"gui/{os.getuid()}", str(path)]))
    if path.exists():
        path.unlink()
        messages.append(f"removed {path}")
    else:
        messages.append(f"{path} was not installed")
    if kind == "systemd":
        messages.append(_run(["systemctl", "--user", "daemon-reload"]))
    return messages
