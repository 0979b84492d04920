"""Service definitions for the sync daemon: a systemd user unit (or a system unit that runs
as one user, for a home server) and a launchd agent, written with this machine's absolute
paths."""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

from ..errors import ConfigError, PersonalMemoryError, ServiceError
from ..paths import APP_NAME, data_dir, ensure_private_dir, memory_executable, real_database

LABEL = "io.github.personal-memory.watch"
UNIT_NAME = "personal-memory.service"


@dataclass(frozen=True)
class ServiceSpec:
    executable: Path
    db: Path
    config: Path
    log_dir: Path
    system_user: str | None = None  # a system unit running as this user

    @classmethod
    def for_this_machine(cls, db: Path, config: Path) -> "ServiceSpec":
        logs = (Path.home() / "Library" / "Logs" / "personal-memory"
                if sys.platform == "darwin" else data_dir() / "logs")
        return cls(memory_executable(), db.expanduser().absolute(),
                   config.expanduser().absolute(), logs.absolute())

    @classmethod
    def for_system_user(cls, user: str, db: Path | None, config: Path | None) -> "ServiceSpec":
        """A system unit for ``user``; the database and config default to that user's."""
        import pwd
        try:
            home = Path(pwd.getpwnam(user).pw_dir)
        except KeyError:
            raise ConfigError(f"--user: no such user {user!r}") from None
        share = home / ".local" / "share" / APP_NAME
        return cls(memory_executable(), (db or share / "memory.db").expanduser().absolute(),
                   (config or home / ".config" / APP_NAME / "config.toml").expanduser()
                   .absolute(), share / "logs", user)

    def command(self) -> list[str]:
        return [str(self.executable), "--db", str(self.db), "watch", "--config", str(self.config)]


def default_kind() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def quote(arg: str) -> str:
    if any(c in arg for c in ' "\\$%;'):
        escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        return f'"{escaped}"'
    return arg


def split_command(line: str) -> list[str]:
    """The arguments of an ExecStart line :func:`quote` wrote."""
    return [word.replace("%%", "%") for word in shlex.split(line)]


def systemd_unit(spec: ServiceSpec) -> str:
    exec_start = " ".join(quote(a) for a in spec.command())
    if spec.system_user:
        identity = f"User={spec.system_user}\n"
        # In force in system units only (systemd.exec): a user manager ignores them.
        proc = "ProtectProc=invisible\nProcSubset=pid\n"
        wanted = "multi-user.target"
    else:
        identity = proc = ""
        wanted = "default.target"
    return f"""\
[Unit]
Description=personal-memory sync daemon: keeps notes folders indexed

[Service]
Type=notify
NotifyAccess=main
{identity}ExecStart={exec_start}
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
{sandbox([str(real_database(spec.db).parent)], network=False, proc=proc)}
[Install]
WantedBy={wanted}
"""


def sandbox(writable: list[str], network: bool, proc: str = "") -> str:
    """The hardening every unit of this package gets. ``PrivateUsers=yes`` is what lets a
    user manager apply the capability and namespace settings at all (without it the unit
    fails with 218/CAPABILITIES)."""
    net = ("RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6\n" if network else
           "PrivateNetwork=yes\nRestrictAddressFamilies=AF_UNIX\nIPAddressDeny=any\n")
    paths = "".join(f"ReadWritePaths={quote(p)}\n" for p in writable)
    return f"""\
PrivateUsers=yes
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=read-only
{paths}PrivateTmp=yes
{net}CapabilityBoundingSet=
AmbientCapabilities=
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
{proc}RestrictNamespaces=yes
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


def unit_path(system: bool = False, name: str = UNIT_NAME) -> Path:
    if system:
        return Path("/etc/systemd/system") / name
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "systemd" / "user" / name


def plist_path(label: str = LABEL) -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"{label}.plist"


class Ran(NamedTuple):
    """What a command printed, and why it failed (None when it did not)."""
    text: str
    failure: str | None


@dataclass(frozen=True)
class Outcome:
    """What installing or removing a service did: the steps it printed, and what failed
    (None when all went well)."""
    kind: str
    messages: list[str]
    error: str | None

    def to_dict(self) -> dict:
        return asdict(self)


def run_step(cmd: list[str]) -> Ran:
    if shutil.which(cmd[0]) is None:
        return Ran(f"$ {' '.join(cmd)}\n({cmd[0]} not found)", f"{cmd[0]} was not found")
    done = subprocess.run(cmd, capture_output=True, text=True)
    out = (done.stdout + done.stderr).strip()
    text = f"$ {' '.join(cmd)}" + (f"\n{out}" if out else "")
    if done.returncode == 0:
        return Ran(text, None)
    first = out.splitlines()[0] if out else "no output"
    return Ran(text + f"\n(exit code {done.returncode})",
               f"'{' '.join(cmd)}' failed with exit code {done.returncode}: {first}")


def run_steps(steps: list[list[str]], messages: list[str]) -> str | None:
    """Run each command in turn, its output added to ``messages``; stop at the first that
    fails and say why (None when all succeeded)."""
    for step in steps:
        text, failure = run_step(step)
        messages.append(text)
        if failure:
            return failure
    return None


def _create_database(spec: ServiceSpec) -> list[str]:
    """The daemon never creates its database (a missing one may be an unmounted drive):
    installing the service does, once, owned by the user the service runs as."""
    if spec.db.exists():
        return []
    from ..memory import MemoryStore
    MemoryStore.open(spec.db, embedder="none").close()
    if spec.system_user:
        import pwd
        entry = pwd.getpwnam(spec.system_user)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(str(spec.db) + suffix):
                os.chown(str(spec.db) + suffix, entry.pw_uid, entry.pw_gid)
    return [f"created {spec.db}"]


PRIVATE_TMP = ("/tmp", "/var/tmp")  # the unit's own (PrivateTmp=yes): the host's are hidden


def unseen_in_private_tmp(spec: ServiceSpec) -> list[str]:
    """A warning for each path the unit needs that lies in a temporary folder, which the
    service sees empty (its /tmp is private): the program, the database, the folders."""
    from ..config import load
    paths = [spec.executable, spec.db]
    try:
        paths += [f.root for f in load(spec.config).folders] if spec.config.exists() else []
    except PersonalMemoryError:
        pass  # the daemon says what is wrong with its config when it starts
    hidden = [p for p in paths
              if any(os.path.realpath(p).startswith(t + "/") for t in PRIVATE_TMP)]
    return [f"warning: {p} is in a temporary folder, which the service does not see (its "
            "/tmp is private); keep the program, the database and the notes elsewhere"
            for p in hidden]


def refuse_foreign(kind: str) -> None:
    """A launchd service installed off macOS, or a systemd one on it, writes nothing
    ('service print' still shows the file)."""
    if (kind == "launchd") != (sys.platform == "darwin"):
        where = "macOS" if kind == "launchd" else "Linux"
        raise ServiceError(f"--{kind}: {kind} services are for {where}, and this is "
                           f"{sys.platform}; nothing was written ('memory service print "
                           f"--{kind}' shows the file)")


def install(kind: str, spec: ServiceSpec, messages: list[str] | None = None) -> Outcome:
    """Write the service file and start it; on failure, the outcome says what failed and
    what to do next. ``messages``: steps already done (printed first)."""
    messages = list(messages or [])
    refuse_foreign(kind)
    # The sandbox makes only this folder writable; it must exist before the service starts.
    ensure_private_dir(spec.db.parent)
    if kind == "systemd":
        system = spec.system_user is not None
        if system and os.geteuid() != 0:
            raise ServiceError("--system: installing a system unit needs root; run it with "
                               "sudo")
        if system:
            import pwd
            entry = pwd.getpwnam(spec.system_user)
            for folder in (spec.db.parent, spec.log_dir):
                ensure_private_dir(folder)
                os.chown(folder, entry.pw_uid, entry.pw_gid)
        messages += _create_database(spec)
        path = unit_path(system)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(systemd_unit(spec))
        messages.append(f"wrote {path}")
        messages += unseen_in_private_tmp(spec)
        ctl = ["systemctl"] if system else ["systemctl", "--user"]
        steps = [ctl + ["daemon-reload"], ctl + ["enable", "--now", UNIT_NAME]]
        logs = f"journalctl {'' if system else '--user '}-u {UNIT_NAME} -f"
    else:
        messages += _create_database(spec)
        path = plist_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        ensure_private_dir(spec.log_dir)
        path.write_text(launchd_plist(spec))
        messages.append(f"wrote {path}")
        steps = [["launchctl", "bootstrap", f"gui/{os.getuid()}", str(path)]]
        logs = str(spec.log_dir)
    failure = run_steps(steps, messages)
    if failure:
        return Outcome(kind, messages, (
            f"{failure}; the service file is written ({path}) but the service is not "
            f"running: fix the cause, then run '{' '.join(steps[-1])}'"))
    messages.append(f"logs: {logs}")
    if not spec.config.exists():
        messages.append(f"note: {spec.config} does not exist yet; add [[folders]] to it "
                        "(see docs/operations.md)")
    return Outcome(kind, messages, None)


def uninstall(kind: str, system: bool = False, name: str = UNIT_NAME,
              label: str = LABEL) -> Outcome:
    """Stop the service and remove its file. A missing systemctl or launchctl is not a
    failure here (nothing can be running); a command that fails is."""
    messages, failure = [], None
    if kind == "systemd":
        ctl = ["systemctl"] if system else ["systemctl", "--user"]
        path = unit_path(system, name)
        text, failure = run_step(ctl + ["disable", "--now", name])
    else:
        path = plist_path(label)
        text, failure = run_step(["launchctl", "bootout", f"gui/{os.getuid()}", str(path)])
    messages.append(text)
    if failure and ("not found" in failure or not path.exists()):
        failure = None  # no systemctl/launchctl, or nothing installed: nothing runs
    if path.exists():
        path.unlink()
        messages.append(f"removed {path}")
    else:
        messages.append(f"{path} was not installed")
    if kind == "systemd":
        messages.append(run_step(ctl + ["daemon-reload"]).text)
    return Outcome(kind, messages, failure)
