"""The commands that run things: syncing and watching folders, the vectors, the service,
the MCP server, status and checks."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..errors import DiskFull, SyncError
from ..limits import EXIT_INTERRUPTED, EXIT_LOCKED, EXIT_OK, EXIT_PROBLEM, EXIT_USAGE
from . import output
from .context import (CommandError, Interrupt, command, emit, open_store, progress_bar,
                      settings)


@contextmanager
def _sync_store(args: argparse.Namespace):
    """The store a sync writes to; for a dry run against a database that does not exist
    yet, a throwaway one (a dry run creates nothing, not even the file)."""
    config = settings(args)
    if not (args.dry_run and not config.replica and not Path(config.db).exists()):
        with open_store(args, read_only=False) as store:
            yield store
        return
    from ..memory import MemoryStore
    with tempfile.TemporaryDirectory(prefix="memory-dry-run-") as scratch, \
            MemoryStore.open(Path(scratch) / "m.db", embedder="none") as store:
        yield store


@command
def cmd_sync(args: argparse.Namespace) -> int:
    folders = settings(args).folders(args.folders, collection=args.collection,
                                     namespace=args.namespace)
    with _sync_store(args) as store, Interrupt() as interrupt:
        bar, update = progress_bar("file", "importing")
        try:
            with bar:
                report = store.sync(folders, dry_run=args.dry_run, full=args.full,
                                    allow_mass_delete=args.allow_mass_delete,
                                    allow_emptied=args.allow_mass_delete,
                                    known_at=args.known_at, progress=update,
                                    cancel=interrupt)
        except SyncError as exc:  # one folder refused: say what the others' sync did
            done = exc.report
            if done is not None and len(folders) > 1 and not args.json:
                print(output.sync(done, None, "The other folders were synced; one was "
                                  "refused:"), flush=True)
            raise
        embedded, remark, shown, failed = None, None, False, False
        if interrupt.requested:
            remark = "Import interrupted; the next sync (or the daemon) continues."
        elif not args.dry_run and not args.no_embed and store.embedder is not None:
            daemon = store.sync_status()
            if daemon.daemon_running:
                remark = (f"The daemon (pid {daemon.daemon_pid}) gives the new memories their "
                          "vectors; 'memory status' shows how far it is."
                          if report.chunks_added or report.chunks_changed else None)
            else:
                if not args.json:  # what is ready first: the import, searchable by words
                    print(output.sync(report, None, "Searchable by words now; embedding "
                                      "for search by meaning (Ctrl-C stops it, keeping "
                                      "what is done)..."), flush=True)
                    shown = True
                bar, update = progress_bar("section", "embedding", store.embedding_eta)
                try:
                    with bar:
                        embedded = store.embed_pending(progress=update, cancel=interrupt)
                except DiskFull:  # the import is committed; only vectors are missing
                    remark = ("Embedding stopped: the disk is full. The import is kept and "
                              "searchable by words; free some space, then run 'memory "
                              "reembed'.")
                    failed = True
                if embedded is not None and embedded.interrupted:
                    remark = (f"Embedding interrupted; {embedded.remaining} memories still "
                              "without a vector (searched by keywords; run again or let the "
                              "daemon finish).")
    data = report.to_dict() | {"folders": [str(f.root) for f in folders],
                               "vectors": embedded.to_dict() if embedded else None,
                               "note": remark}
    after = [output.embedding(embedded)] if embedded else []
    emit(args, data, lambda _: "\n".join(after + ([remark] if remark else []))
         if shown else output.sync(report, embedded, remark))
    return EXIT_INTERRUPTED if interrupt.requested else EXIT_PROBLEM if failed else EXIT_OK


@command
def cmd_reembed(args: argparse.Namespace) -> int:
    with open_store(args, read_only=False) as store, Interrupt() as interrupt:
        bar, update = progress_bar("memory", "embedding", store.embedding_eta)
        with bar:
            run = store.reembed(everything=args.everything, progress=update, cancel=interrupt)
    emit(args, run, output.embedding)
    if run.interrupted:
        print(f"Embedding interrupted; {run.remaining} memories still without a vector (they "
              "are searched by keywords; run again or let the daemon finish).",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


@command
def cmd_watch(args: argparse.Namespace) -> int:
    from ..errors import LockedError, PersonalMemoryError
    from ..watch.daemon import run_daemon
    s = settings(args)
    folders = s.folders(args.folders, collection=args.collection, namespace=args.namespace)
    settle_ms, rescan = s.watch_options(settle_ms=args.settle_ms,
                                        rescan_interval=args.rescan_interval)
    try:
        return run_daemon(s.db, folders, settle_ms=settle_ms, rescan_interval=rescan,
                          allow_mass_delete=args.allow_mass_delete,
                          vector_backend=s.vector_backend, embedder=s.embedder,
                          new_database=args.new_database)
    except LockedError as exc:
        print(f"memory: error: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except PersonalMemoryError:
        raise  # a setup problem: exit code 2, which the service does not restart
    except Exception as exc:  # a runtime failure: exit 1, so the service restarts us
        logging.getLogger("personal_memory.watch").exception("stopped by an error: %s", exc)
        return EXIT_PROBLEM


@command
def cmd_status(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True) as store:
        emit(args, store.status(replica_max_lag=settings(args).replica_max_lag),
             output.status)
    return EXIT_OK


@command
def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import run_checks
    s = settings(args)
    checks = run_checks(str(s.db), s.vector_backend, s.embedder, s.replica_max_lag)
    failed = any(c.status == "fail" for c in checks)
    emit(args, {"ok": not failed, "checks": [c.to_dict() for c in checks]},
         lambda d: output.checks(d["checks"]))
    return EXIT_PROBLEM if failed else EXIT_OK


@command
def cmd_service(args: argparse.Namespace) -> int:
    from ..service import units as service
    s = settings(args)
    kind = "launchd" if args.launchd else "systemd" if args.systemd else service.default_kind()
    if args.action == "install":  # before any folder is added to the config
        service.refuse_foreign(kind)
    if args.http:
        return _http_service(args, kind, s.db, s.replica)
    if args.system:
        if kind != "systemd" or not args.user:
            raise CommandError("--system makes a systemd system unit; name the user it runs "
                               "as with --user NAME")
        explicit_db = Path(args.db) if args.db or os.environ.get("MEMORY_DB") else None
        spec = service.ServiceSpec.for_system_user(
            args.user, s.db if explicit_db else None,
            s.config_path if args.config or os.environ.get("MEMORY_CONFIG") else None)
    elif args.user:
        raise CommandError("--user NAME goes with --system")
    else:
        spec = service.ServiceSpec.for_this_machine(s.db, s.config_path)
    if args.action == "print":
        print(service.render(kind, spec), end="")
        return EXIT_OK
    if args.action == "install":
        added = []
        if args.folders:
            from .. import config
            added = config.add_folders(spec.config, s.folders(
                args.folders, collection=args.collection, namespace=args.namespace))
        outcome = service.install(kind, spec, [f"added {f.root} to {spec.config}"
                                               for f in added])
    else:
        outcome = service.uninstall(kind, system=args.system)
        from ..service import replication
        if replication.path(kind).exists():
            outcome.messages.append(f"the replication service ({replication.path(kind)}) "
                                    "stays; 'memory replicate remove' removes it")
    emit(args, outcome, lambda d: "\n".join(d.messages))
    if outcome.error:
        print(f"memory: error: {outcome.error}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _http_service(args: argparse.Namespace, kind: str, db: Path, replica: str | None) -> int:
    from ..service import http
    if args.system or args.user or args.folders:
        raise CommandError("--http installs the HTTP server for this user; it takes no "
                           "FOLDER, --system or --user")
    db = db.expanduser().absolute()
    if replica:  # checked now: a wrong address would only show in the journal
        from ..replication import replica as replicas
        replica = replicas.replica_url(replica)
        replicas.check_replica(replica)
        if args.action == "install":
            db.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # the access file's
    if args.action == "print":
        print(http.render(kind, db, replica), end="")
        return EXIT_OK
    if args.action == "install" and not db.exists() and not replica:
        raise CommandError(f"no database at {db}: install the sync daemon's service first "
                           "(memory service install FOLDER)")
    outcome = (http.install(kind, db, replica) if args.action == "install"
               else http.uninstall(kind))
    emit(args, outcome, lambda d: "\n".join(d.messages))
    if outcome.error:
        print(f"memory: error: {outcome.error}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


@command
def cmd_serve(args: argparse.Namespace) -> int:
    from .context import replica_process
    if settings(args).replica:  # the server and its workers read the replica
        if settings(args).enable_writes:
            raise CommandError("--enable-writes: a replica is read-only; serve writes from "
                               "the database itself")
        os.environ["MEMORY_REPLICA"] = replica_process(settings(args).replica)
    if not args.http:
        from ..mcp_server.server import run
        return run(settings(args))
    from ..mcp_server import streamable
    options = streamable.options_from_environment() or streamable.HttpOptions(
        host=args.host, port=args.port, public_url=args.public_url,
        tls_cert=_absolute(args.tls_cert), tls_key=_absolute(args.tls_key),
        behind_proxy=args.behind_proxy, allow_origins=tuple(args.allow_origin),
        rate_limit=args.rate_limit)
    return streamable.run(settings(args), options)


def _absolute(path: str | None) -> str | None:
    return str(Path(path).expanduser().absolute()) if path else None


@command
def cmd_ui(args: argparse.Namespace) -> int:
    from ..web.server import run
    return run(settings(args), port=args.port, open_browser=not args.no_open)


@command
def cmd_client_config(args: argparse.Namespace) -> int:
    """Print MCP client settings with this machine's absolute paths."""
    from ..paths import memory_executable
    s = settings(args)
    if args.http:
        url = args.http.rstrip("/").removesuffix("/mcp") + "/mcp"
        emit(args, {"url": url, "claude_code": f"claude mcp add --transport http "
                    f"personal-memory {url}"},
             lambda d: f"Server URL (desktop and web assistants' connector settings):\n"
             f"{d['url']}\n\nClaude Code:\n{d['claude_code']}\n\nThe first connection "
             "opens the consent page; a script uses 'memory tokens add NAME' and sends "
             "'Authorization: Bearer <token>'.")
        return EXIT_OK
    exe = str(memory_executable())
    db = os.path.abspath(s.db)
    env = {"MEMORY_DB": db, "MEMORY_NAMESPACE": s.namespace}
    desktop = {"mcpServers": {"personal-memory": {"command": exe, "args": ["serve"],
                                                  "env": env}}}
    claude = (f"claude mcp add personal-memory --env MEMORY_DB={db} "
              f"--env MEMORY_NAMESPACE={s.namespace} -- {exe} serve")
    emit(args, {"claude_desktop": desktop, "claude_code": claude},
         lambda d: "Claude Desktop (claude_desktop_config.json):\n"
         + json.dumps(d["claude_desktop"], indent=2) + "\n\nClaude Code:\n" + d["claude_code"])
    return EXIT_OK


@command
def cmd_demo(args: argparse.Namespace) -> int:
    import tempfile
    from ..memory import MemoryStore
    from .demo import run_demo
    if args.db:
        with open_store(args, read_only=False) as store:
            data = run_demo(store)
    else:  # never put fictional notes into the user's real database ($MEMORY_DB too)
        s = settings(args)
        with tempfile.TemporaryDirectory() as tmp, \
                MemoryStore.open(os.path.join(tmp, "demo.db"), vector_backend=s.vector_backend,
                                 embedder=s.embedder) as store:
            data = run_demo(store)
    emit(args, data, lambda d: d["text"])
    return EXIT_OK
