"""The replication process and the one rule that coordinates with it: Litestream runs
under ``memory replicate run``, which holds the replication lock while it runs and stops
it whenever the pause file exists. Whoever must rewrite the file behind Litestream's back
(purge's VACUUM and WAL truncation, a fresh generation) creates the pause file and takes
the lock; Litestream resumes when both are gone."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from ..errors import ReplicationError
from . import litestream

log = logging.getLogger(__name__)
PAUSE_WAIT_SECONDS = 60.0
HELD_NOTICE_SECONDS = 2.0  # a second replicator says it waits after this long


def lock_path(db: Path) -> Path:
    return Path(str(db) + ".replication-lock")


def pause_path(db: Path) -> Path:
    return Path(str(db) + ".replication-pause")


def _lock(db: Path, blocking: bool) -> int | None:
    fd = os.open(lock_path(db), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def running(db: Path) -> bool:
    """Whether a replication process (or a pause) holds the lock now."""
    fd = _lock(db, blocking=False)
    if fd is None:
        return True
    os.close(fd)
    return False


def error_path(db: Path) -> Path:
    """The last error Litestream logged while replicating, and when (status reads it)."""
    return Path(str(db) + ".replication-error")


def start(db: Path, quiet: bool = False) -> subprocess.Popen:
    """``litestream replicate`` for this database, its files private to the user; its
    log goes where ours goes (the journal), its errors noted for status, or nowhere when
    ``quiet``."""
    old = os.umask(0o077)  # the replica and Litestream's WAL copies hold the notes
    out = subprocess.DEVNULL if quiet else subprocess.PIPE
    try:
        proc = subprocess.Popen([litestream.binary(), "replicate", "-config",
                                 str(litestream.config_path(db))], stdout=out,
                                stderr=subprocess.STDOUT if not quiet else out,
                                env=litestream.environment(), preexec_fn=_die_with_parent)
    finally:
        os.umask(old)
    if not quiet:
        import threading
        threading.Thread(target=_relay_log, args=(proc, db), daemon=True,
                         name="litestream-log").start()
    return proc


def _relay_log(proc: subprocess.Popen, db: Path) -> None:
    """Litestream's log, line by line, to our stderr; each error it logs also noted in
    :func:`error_path` (a write that fails shows in status at once, not only when the
    replica has fallen minutes behind)."""
    for raw in proc.stdout:
        line = raw.decode("utf-8", "replace")
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # our stderr gone (a closed terminal): the log is lost, replication not
        error = litestream.logged_error(line)
        if error:
            _note_error(db, error)
    proc.stdout.close()


def _note_error(db: Path, error: str) -> None:
    path = error_path(db)
    try:
        fd = os.open(f"{path}.new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(f"{time.time_ns() // 1000}\n{error[:500]}\n")
        os.replace(f"{path}.new", path)
    except OSError:
        log.warning("could not note Litestream's error beside %s: %s", db, error)


def last_error(db: Path) -> tuple[int, str] | None:
    """When Litestream last logged an error replicating ``db`` (microseconds), and what."""
    try:
        when, _, text = error_path(db).read_text().partition("\n")
        return int(when), text.strip()
    except (OSError, ValueError):
        return None


def _die_with_parent() -> None:
    """Linux: Litestream gets SIGTERM if its supervisor is killed (even by SIGKILL), so
    no orphan replicates on while a purge believes replication is paused."""
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


@contextlib.contextmanager
def paused(db: Path, wait: float = PAUSE_WAIT_SECONDS) -> Iterator[None]:
    """Litestream stopped for the duration (and kept from starting again). The pause file
    names this process, so a pause left by one that was killed is not obeyed for ever."""
    pause = pause_path(db)
    fd = os.open(pause, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)
    fd = None
    try:
        deadline = time.monotonic() + wait
        while fd is None:
            fd = _lock(db, blocking=False)
            if fd is None:
                if time.monotonic() > deadline:
                    raise ReplicationError(
                        f"replication did not pause within {wait:.0f} s; stop it "
                        f"(the companion service) and try again")
                time.sleep(0.1)
        yield
    finally:
        if fd is not None:
            os.close(fd)
        pause.unlink(missing_ok=True)


def supervise(db: Path, stopping) -> int:
    """The body of ``memory replicate run``: Litestream while not paused, until
    ``stopping()``. Returns Litestream's exit code when it fails by itself (the service
    manager restarts the whole)."""
    if not litestream.config_path(db).exists():
        raise ReplicationError(f"no replica is set up for {db}; run 'memory replicate "
                               "setup DEST' first")
    litestream.binary()
    held_since = None  # when the lock was first found held by another replicator
    while not stopping():
        if not litestream.config_path(db).exists():
            log.info("the replica of %s was removed; replication ends", db)
            return 0
        if paused_by_a_live_process(db):
            time.sleep(0.2)
            continue
        fd = _lock(db, blocking=False)
        if fd is None:  # another replicator, or a pause being taken (a moment)
            held_since = held_since or time.monotonic()
            if held_since > 0 and time.monotonic() - held_since > HELD_NOTICE_SECONDS:
                log.warning("another 'memory replicate run' is replicating %s; this one "
                            "waits and takes over when it stops", db)
                held_since = -1.0  # said once
            time.sleep(0.2)
            continue
        held_since = None
        try:
            lost = lost_generation(db)
            if lost:
                start_afresh(db, lost)
            proc = start(db)
            log.info("replicating %s (litestream pid %d)", db, proc.pid)
            dest = litestream.read_destination(db)
            every = (LOSS_CHECK_SECONDS if dest is None or dest.readable_here
                     else REMOTE_LOSS_CHECK_SECONDS)
            checked, lost, suspect = time.monotonic(), None, None
            while proc.poll() is None and not stopping() and not pause_path(db).exists():
                time.sleep(0.2)
                if time.monotonic() - checked > every:
                    # seen twice in a row, so a snapshot being written is not a loss
                    checked, seen = time.monotonic(), lost_generation(db)
                    lost, suspect = (seen if seen and seen == suspect else None), seen
                    if lost:
                        break
            if proc.poll() is not None:
                log.error("litestream exited with code %d", proc.returncode)
                return proc.returncode or 1
            stop(proc)
            if lost:
                start_afresh(db, lost)
            elif not stopping():
                log.info("replication paused")
        finally:
            os.close(fd)
    return 0


def paused_by_a_live_process(db: Path) -> bool:
    """Whether a pause is in force. A pause file whose process is gone (a purge killed
    while replication was paused) is removed, and replication goes on."""
    pause = pause_path(db)
    try:
        text = pause.read_text().strip()
    except FileNotFoundError:
        return False
    try:
        if text.isdigit():
            os.kill(int(text), 0)
        elif time.time() - pause.stat().st_mtime > 10:  # no pid: written by an old version
            raise ProcessLookupError
    except ProcessLookupError:
        log.warning("the process that paused replication (%s) is gone; resuming",
                    f"pid {text}" if text else "unknown")
        pause.unlink(missing_ok=True)
        return False
    except (PermissionError, FileNotFoundError):
        pass  # alive (another user's); or just removed
    return True


LOSS_CHECK_SECONDS = 2.0
REMOTE_LOSS_CHECK_SECONDS = 15.0  # a listing of an S3 replica is a request that costs
SNAPSHOT_GRACE_SECONDS = 10.0  # a new generation's first snapshot takes about a second


def lost_generation(db: Path) -> str | None:
    """The replica (a folder, or the URL of a remote one), when it no longer holds a
    snapshot although Litestream has been replicating for a while (its files, or its
    bucket, were deleted while Litestream ran): Litestream would go on writing changes
    there that no restore and no new reader can use."""
    dest = litestream.read_destination(db)
    if dest is None:
        return None
    if not _started_long_ago(litestream.shadow_dir(db) / "ltx"):
        return None  # nothing replicated yet, or just started: a snapshot comes first
    if not dest.readable_here:
        try:  # the replica alone (with the config, Litestream holds replication up)
            found = litestream.ltx_files_of(dest)
        except ReplicationError:
            return None  # unreachable now (a bucket gone): never act on a guess
        if not found or any(f.level == litestream.SNAPSHOT_LEVEL for f in found):
            return None
        return dest.url
    try:
        with os.scandir(Path(dest.location) / "ltx" / str(litestream.SNAPSHOT_LEVEL)) as it:
            if next(it, None) is not None:
                return None
    except FileNotFoundError:
        pass
    except OSError:
        return None  # cannot tell (a mount that hiccups): never act on a guess
    return dest.location


def _started_long_ago(shadow: Path) -> bool:
    try:
        oldest = min(p.stat().st_mtime for p in shadow.rglob("*.ltx"))
    except (ValueError, OSError):  # none yet, or one removed while looking
        return False
    return time.time() - oldest > SNAPSHOT_GRACE_SECONDS


def start_afresh(db: Path, lost: str) -> None:
    """A fresh replica at the next start: Litestream's own copy (which keys its position)
    is dropped, and so is the unusable rest of a folder replica's LTX files (a remote
    replica's stay: the fresh snapshot is what restores and readers start from)."""
    import shutil
    log.warning("the replica at %s lost its snapshot (were its files deleted?); "
                "starting a fresh generation", lost)
    shutil.rmtree(litestream.shadow_dir(db), ignore_errors=True)
    if "://" not in lost:
        shutil.rmtree(Path(lost) / "ltx", ignore_errors=True)


def drop_v03_copies(db: Path) -> str | None:
    """Litestream 0.3's WAL copies beside the database (they hold old text; 0.5 neither
    reads nor removes them), deleted with replication paused; their folder, if any."""
    import shutil
    old = litestream.shadow_dir(db) / "generations"
    if not old.is_dir():
        return None
    with paused(db):
        shutil.rmtree(old)
    return str(old)


def remove(db: Path) -> tuple[litestream.Destination, list[str]]:
    """Replication of ``db`` switched off: Litestream paused, then its config and its
    local WAL copies (they hold old text) deleted. The replica itself is kept: it is the
    user's history. Returns the replica it named and what was removed."""
    import shutil
    dest = litestream.read_destination(db)
    if dest is None:
        raise ReplicationError(f"no replica is set up for {db}")
    removed = []
    with paused(db):
        for path in (litestream.config_path(db), litestream.shadow_dir(db), error_path(db)):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
            else:
                continue
            removed.append(str(path))
    lock_path(db).unlink(missing_ok=True)
    return dest, removed
