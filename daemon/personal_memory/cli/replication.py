"""``memory replicate`` (setup, status, run, remove) and ``memory restore``."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from ..limits import EXIT_OK, EXIT_PROBLEM, EXIT_USAGE
from . import output
from .context import CommandError, command, emit, open_store, settings


@command
def cmd_replicate(args: argparse.Namespace) -> int:
    from ..paths import real_database
    from ..replication import control, litestream
    db = real_database(settings(args).db)
    if args.action == "setup":
        if not args.destination:
            raise CommandError("replicate setup: give the replica: a folder, "
                               "sftp://HOST/PATH or s3://BUCKET/PATH")
        litestream.binary()  # says how to get it when missing
        with open_store(args, read_only=True, embedder="none"):
            pass  # the database must exist and be ours
        dest = litestream.Destination.parse(args.destination, args.ssh_key)
        if dest.scheme == "file":
            try:
                Path(dest.location).mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                raise CommandError(f"replicate setup: cannot make the replica folder "
                                   f"{dest.location} ({exc.strerror}); nothing was "
                                   "changed") from None
        path = litestream.write_config(db, dest)  # a remote one is reached first
        messages = [f"wrote {path} (replica {dest.url})"]
        old = control.drop_v03_copies(db)
        if old:
            messages.append(f"removed {old}: Litestream 0.3's local WAL copies (0.5 keeps "
                            "its own); a 0.3 replica's generations stay restorable")
        if dest.scheme == "sftp":
            messages.append("note: Litestream does not check an SFTP server's host key; "
                            "replicate over sftp only on a network you trust")
        if args.no_service:
            messages.append(f"run 'memory --db {db} replicate run' to start replicating")
            emit(args, {"messages": messages}, lambda d: "\n".join(d["messages"]))
            return EXIT_OK
        from ..service import replication as unit
        outcome = unit.install(unit.kind(args), db, dest, messages)
        emit(args, outcome, lambda d: "\n".join(d.messages))
        if outcome.error:
            print(f"memory: error: {outcome.error}", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    if args.action == "remove":
        if litestream.read_destination(db) is None:
            raise CommandError(f"replicate remove: no replica is set up for {db}")
        from ..service import replication as unit
        messages, kind = [], unit.kind(args)
        # the service stopped first, or it would restart Litestream; another database's
        # is left alone
        other = unit.another_database(kind, db)
        if other is not None:
            messages.append(f"the replication service ({unit.path(kind)}) streams another "
                            f"database, {other}: left as it is")
        elif not args.no_service and unit.path(kind).exists():
            outcome = unit.uninstall(kind)
            if outcome.error:
                raise CommandError(f"replicate remove: {outcome.error}; nothing else changed "
                                   "(with no service manager to ask, 'replicate remove "
                                   "--no-service' removes the config and leaves the unit "
                                   "file)")
            messages += outcome.messages
        dest, removed = control.remove(db)
        messages += [f"removed {p}" for p in removed]
        messages.append(f"kept the replica at {dest.url}: it holds the history (and any "
                        "text purged since it was written); delete it yourself when it is "
                        "no longer wanted")
        emit(args, {"messages": messages, "replica": dest.url},
             lambda d: "\n".join(d["messages"]))
        return EXIT_OK
    if args.action == "run":
        stopping = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stopping.append(True))
        return control.supervise(db, lambda: bool(stopping))
    with open_store(args, read_only=True, embedder="none") as store:
        found = store.replication(settings(args).replica_max_lag)
    emit(args, found, output.replication)
    return EXIT_OK if found.state in ("absent", "healthy") else EXIT_PROBLEM


@command
def cmd_restore(args: argparse.Namespace) -> int:
    from ..memory import MemoryStore
    restored = MemoryStore.restore(args.source, args.to, at=args.at, ssh_key=args.ssh_key)
    emit(args, restored, output.restored)
    return EXIT_OK if restored.ok else EXIT_PROBLEM
