"""The systemd unit and launchd agent that `memory service` writes."""

import os
import tempfile
import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT, run_memory

# What docs/operations.md states: `systemd-analyze security` rates the user unit 1.1 and a
# system unit at most 1.0 (it can also hide other processes, which a user unit cannot).
SECURITY_THRESHOLD = 1.1
SYSTEM_UNIT_THRESHOLD = 1.0


@pytest.fixture
def analyze_env():
    # A short folder: the host's own user units put sockets in it, and a socket's path is
    # limited to 107 bytes (pytest's folders under parallel workers are longer).
    runtime = Path(tempfile.mkdtemp(prefix="pm-rt-"))
    runtime.chmod(0o700)
    yield {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    shutil.rmtree(runtime, ignore_errors=True)


def _unit(tmp_path):
    p = run_memory("--db", tmp_path / "data" / "m.db", "service", "print", "--systemd")
    assert p.returncode == 0, p.stderr
    unit = tmp_path / "personal-memory.service"
    unit.write_text(p.stdout)
    return unit, p.stdout


def test_systemd_unit_contents(tmp_path):
    _, text = _unit(tmp_path)
    for line in ("Type=notify", "WatchdogSec=", "Restart=on-failure",
                 "RestartPreventExitStatus=75", "NoNewPrivileges=yes",
                 "RestrictAddressFamilies=AF_UNIX", "PrivateUsers=yes", "PrivateNetwork=yes",
                 "ProtectHome=read-only", "ProtectSystem=strict", "IOSchedulingClass=idle",
                 "Nice=10", f"ReadWritePaths={tmp_path / 'data'}"):
        assert line in text, line
    exec_start = re.search(r"^ExecStart=(.*)$", text, re.M).group(1).split()
    assert os.path.isabs(exec_start[0]) and exec_start[1:3] == ["--db", str(tmp_path / "data" / "m.db")]
    assert "watch" in exec_start


def test_a_symlinked_database_makes_its_real_folder_writable(tmp_path):
    (tmp_path / "disk").mkdir()
    (tmp_path / "names").mkdir()
    (tmp_path / "names" / "m.db").symlink_to(tmp_path / "disk" / "m.db")
    p = run_memory("--db", tmp_path / "names" / "m.db", "service", "print", "--systemd")
    assert p.returncode == 0, p.stderr
    assert f"ReadWritePaths={tmp_path / 'disk'}" in p.stdout  # SQLite's WAL is there


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_analyze_verify_prints_nothing(tmp_path, analyze_env):
    unit, _ = _unit(tmp_path)
    p = subprocess.run(["systemd-analyze", "verify", "--user", str(unit)],
                       capture_output=True, text=True, env=analyze_env)
    assert p.returncode == 0 and p.stdout == "" and p.stderr == "", p.stdout + p.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_security_exposure_is_low(tmp_path, analyze_env):
    unit, _ = _unit(tmp_path)
    p = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--user",
                        f"--threshold={SECURITY_THRESHOLD * 10:.0f}", str(unit)],
                       capture_output=True, text=True, env=analyze_env)
    m = re.search(r"Overall exposure level for .*?: (\d+\.\d+)", p.stdout)
    assert m, p.stdout + p.stderr
    assert float(m.group(1)) <= SECURITY_THRESHOLD, p.stdout


def test_launchd_plist(tmp_path):
    p = run_memory("--db", tmp_path / "m.db", "service", "print", "--launchd")
    assert p.returncode == 0, p.stderr
    doc = plistlib.loads(p.stdout.encode())
    assert doc["Label"].endswith("personal-memory.watch")
    assert doc["RunAtLoad"] is True and doc["KeepAlive"] == {"SuccessfulExit": False}
    assert doc["ProcessType"] == "Background" and doc["LowPriorityIO"] is True
    assert all(os.path.isabs(doc[k]) for k in ("StandardOutPath", "StandardErrorPath"))
    assert os.path.isabs(doc["ProgramArguments"][0]) and "watch" in doc["ProgramArguments"]


@pytest.mark.skipif(sys.platform != "linux", reason="on macOS launchd is the native kind")
def test_a_launchd_install_off_macos_writes_nothing(tmp_path):
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    vault = tmp_path / "v"
    vault.mkdir()
    for extra in ([vault], ["--http"]):
        p = run_memory("--db", tmp_path / "d" / "m.db", "service", "install", *extra,
                       "--launchd", env=env)
        assert p.returncode == 2 and p.stderr.startswith(
            "memory: error: --launchd: launchd services are for macOS, and this is linux; "
            "nothing was written"), p.stderr
    assert not (tmp_path / "home").exists() and not (tmp_path / "cfg").exists()
    assert not (tmp_path / "d").exists()


def test_install_and_uninstall_write_the_unit(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "PATH": "/nonexistent"}  # no systemctl reachable: the file steps still run
    vault = tmp_path / "My Vault"
    vault.mkdir()
    p = run_memory("--db", tmp_path / "d" / "m.db", "service", "install", vault, "--systemd",
                   env=env)
    # Without systemctl the service cannot start: the install says so and fails.
    assert p.returncode == 2 and "systemctl was not found" in p.stderr
    assert "systemctl --user enable --now personal-memory.service" in p.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "personal-memory.service"
    assert unit.exists() and "Type=notify" in unit.read_text()
    assert (tmp_path / "d").is_dir() and "systemctl" in p.stdout
    config = tmp_path / "cfg" / "personal-memory" / "config.toml"
    assert str(config) in unit.read_text() and f"added {vault}" in p.stdout
    # the unit's /tmp is its own: a vault or database in the host's is out of its sight
    in_tmp = os.path.realpath(tmp_path).startswith(("/tmp/", "/var/tmp/"))
    assert (f"warning: {vault} is in a temporary folder" in p.stdout) is in_tmp
    assert (f"warning: {tmp_path / 'd' / 'm.db'} is in a temporary folder" in p.stdout) \
        is in_tmp
    from personal_memory.config import load
    assert [(f.root, f.collection) for f in load(config).folders] == [(vault, "My Vault")]
    again = run_memory("--db", tmp_path / "d" / "m.db", "service", "install", vault,
                       "--systemd", env=env)
    assert again.returncode == 2 and "added" not in again.stdout  # listed once only
    assert len(load(config).folders) == 1
    p = run_memory("service", "uninstall", "--systemd", env=env)
    assert p.returncode == 0 and not unit.exists()


def test_the_http_server_as_a_service(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "PATH": "/nonexistent"}
    db = tmp_path / "d" / "m.db"
    p = run_memory("--db", db, "service", "install", "--http", "--systemd", env=env)
    assert p.returncode == 2 and "no database at" in p.stderr  # nothing to serve yet
    assert run_memory("--db", db, "init").returncode == 0
    p = run_memory("--db", db, "service", "print", "--http", "--systemd")
    assert p.returncode == 0
    assert f"--db {db} serve --http" in p.stdout
    assert "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" in p.stdout
    assert f"ReadWritePaths={db.parent}" in p.stdout and "ProtectHome=read-only" in p.stdout
    assert "RestartPreventExitStatus=2" in p.stdout
    plist = run_memory("--db", db, "service", "print", "--http", "--launchd").stdout
    assert "io.github.personal-memory.mcp" in plist and "<string>--http</string>" in plist
    p = run_memory("--db", db, "service", "install", "--http", "--systemd", env=env)
    assert p.returncode == 2 and "systemctl was not found" in p.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "personal-memory-mcp.service"
    assert unit.exists() and "serve --http" in unit.read_text()
    assert not (tmp_path / "cfg" / "systemd" / "user" / "personal-memory.service").exists()
    p = run_memory("--db", db, "service", "install", tmp_path, "--http", env=env)
    assert p.returncode == 2 and "takes no FOLDER" in p.stderr
    p = run_memory("--db", db, "service", "uninstall", "--http", "--systemd", env=env)
    assert p.returncode == 0 and not unit.exists()


def test_checked_in_service_files_match_the_generator():
    """service-files/ holds examples for /home/you; they must be what the code writes."""
    from personal_memory.service import units as service
    home = Path("/home/you")
    linux = service.ServiceSpec(home / ".local/bin/memory",
                                home / ".local/share/personal-memory/memory.db",
                                home / ".config/personal-memory/config.toml",
                                home / ".local/share/personal-memory/logs")
    mac_home = Path("/Users/you")
    support = mac_home / "Library/Application Support/personal-memory"
    mac = service.ServiceSpec(mac_home / ".local/bin/memory", support / "memory.db",
                              support / "config.toml", mac_home / "Library/Logs/personal-memory")
    files = ROOT / "service-files"
    assert (files / "personal-memory.service").read_text() == service.systemd_unit(linux)
    assert (files / "io.github.personal-memory.watch.plist").read_text() == \
        service.launchd_plist(mac)


FAILING_SYSTEMCTL = """#!/bin/sh
echo "Failed to connect to bus: No medium found" >&2
exit 1
"""


def test_a_failing_systemctl_fails_the_install(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(FAILING_SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "PATH": str(bin_dir)}
    p = run_memory("--db", tmp_path / "d" / "m.db", "service", "install", "--systemd", env=env)
    assert p.returncode == 2
    assert "exit code 1: Failed to connect to bus" in p.stderr
    assert "then run 'systemctl --user" in p.stderr


def test_the_user_unit_claims_no_system_only_protection(tmp_path):
    _, text = _unit(tmp_path)
    assert "ProtectProc" not in text and "ProcSubset" not in text  # ignored by user managers
    assert "WantedBy=default.target" in text and "User=" not in text


def test_a_system_unit_runs_as_the_named_user(tmp_path):
    import pwd
    user = pwd.getpwuid(os.getuid()).pw_name
    p = run_memory("service", "print", "--systemd", "--system", "--user", user)
    assert p.returncode == 0, p.stderr
    home = pwd.getpwnam(user).pw_dir
    assert f"User={user}" in p.stdout and "WantedBy=multi-user.target" in p.stdout
    assert "ProtectProc=invisible" in p.stdout
    assert f"--db {home}/.local/share/personal-memory/memory.db" in p.stdout
    assert run_memory("service", "print", "--system").returncode == 2
    assert "no such user" in run_memory("service", "print", "--system", "--user",
                                        "no-such-user-xyz").stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_the_system_unit_verifies_and_scores_low(tmp_path):
    import pwd
    user = pwd.getpwuid(os.getuid()).pw_name
    p = run_memory("service", "print", "--systemd", "--system", "--user", user)
    unit = tmp_path / "personal-memory.service"
    unit.write_text(p.stdout)
    done = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(unit)],
                          capture_output=True, text=True)
    m = re.search(r"Overall exposure level for .*?: (\d+\.\d+)", done.stdout)
    assert m and float(m.group(1)) <= SYSTEM_UNIT_THRESHOLD, done.stdout + done.stderr
