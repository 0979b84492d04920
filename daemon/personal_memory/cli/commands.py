"""The commands over the store's knowledge: each a few lines over one API call."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .. import render
from ..limits import EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEM
from . import output
from .context import CommandError, command, emit, note, open_store, replica_note, settings


@command
def cmd_init(args: argparse.Namespace) -> int:
    with open_store(args, read_only=False) as store:
        emit(args, {"path": os.path.abspath(store.path), "vector_backend": store.vector_backend,
                    "semantic": store.embedder_note},
             lambda d: f"Database ready at {d['path']} ({d['semantic']}).")
    return EXIT_OK


@command
def cmd_remember(args: argparse.Namespace) -> int:
    content = sys.stdin.read() if args.content == "-" else args.content
    embedding = settings(args).embedder != "none"
    done = None
    try:
        with open_store(args, read_only=False, embedder="none") as store:
            done = store.remember(args.memory_id, content,
                                  namespace=settings(args).namespace, title=args.title,
                                  source=args.source, known_at=args.known_at,
                                  valid_from=args.valid_from, valid_to=args.valid_to)
        emit(args, done, output.write)
        if done.created and embedding:
            _embed_written(args, done.revision.revision_id)
    except KeyboardInterrupt:
        if done is None:
            raise  # nothing was committed: the usual Ctrl-C
        # Once committed, a Ctrl-C at any moment (even while the line above prints)
        # leaves a saved memory, and says so.
        note(args, "Saved; its vector was not made (interrupted): the daemon or "
             "'memory reembed' makes it." if done.created and embedding else "Saved.")
        return EXIT_INTERRUPTED
    return EXIT_OK


def _embed_written(args: argparse.Namespace, revision_id: int) -> None:
    """The memory just committed gets its vector now, so that searches rank it by meaning
    at once. It is the newest revision at or below its id without one. Ctrl-C leaves it
    for the daemon or 'memory reembed'; the memory itself is already saved."""
    with open_store(args, read_only=False) as store:
        if store.embedder is not None:
            store.embed_pending(max_rows=1, below=revision_id + 1)


@command
def cmd_forget(args: argparse.Namespace) -> int:
    with open_store(args, read_only=False, embedder="none", create=False) as store:
        done = store.forget(args.memory_id, namespace=settings(args).namespace,
                            known_at=args.known_at, valid_from=args.valid_from,
                            valid_to=args.valid_to)
    emit(args, done, output.write)
    return EXIT_OK


@command
def cmd_search(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    if not query.strip() and not args.tag:
        raise CommandError("give words to search for, or --tag TAG to list the notes with "
                           "a tag")
    from ..memory import MemoryStore
    alone = MemoryStore.tags_alone(query)
    if alone or (args.tag and not query.strip()):  # no word to rank by: the tagged notes
        with open_store(args, read_only=True, embedder="none") as store:
            listing = store.tagged([*(args.tag or ()), *alone],
                                   namespace=settings(args).namespace, as_of=args.as_of,
                                   valid_at=args.valid_at, limit=args.limit)
            up_to = store.known_up_to()
        emit(args, listing, render.tagged)
        replica_note(args, up_to, listing.as_of)
        return EXIT_OK
    with open_store(args, read_only=True) as store:
        found = store.search(query, namespace=settings(args).namespace, as_of=args.as_of,
                             valid_at=args.valid_at, limit=args.limit, tags=args.tag,
                             snippets=not args.full,
                             group="section" if args.sections else "note")
    emit(args, found, lambda _: output.results(found) if args.full or not found
         else render.hits(found, query))
    for line in found.warnings:
        note(args, f"Note: {line}.")
    replica_note(args, found.known_up_to, found.as_of)
    if found.no_answer:
        note(args, f"Nothing matched: {found.no_answer}.")
    if found.missing and (args.json or args.full):  # else the first line says it
        note(args, f"Note: no result holds {render.either(found.missing)}.")
    if found.left_out:
        note(args, f"{render.no_more()}.")
    if found.unembedded:
        note(args, f"{found.unembedded} visible memories have no vector yet and were ranked "
             "by keywords alone (the daemon embeds them; or run 'memory reembed', which "
             "embeds every memory without a vector, synced or remembered).")
    return EXIT_OK


@command
def cmd_read(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True, embedder="none") as store:
        view, lines = render.cited(lambda n: store.read(
            n, namespace=settings(args).namespace, as_of=args.as_of), args.note, args.lines)
        up_to = store.known_up_to()
    replica_note(args, up_to, view.as_of)
    if args.section or lines:
        first, last, text = render.note_part(view, args.section, lines)
        emit(args, {"note": view.note, "as_of": view.as_of, "line_start": first,
                    "line_end": last, "text": text}, lambda d: render.numbered(first, text))
        return EXIT_OK
    emit(args, view, output.note)
    return EXIT_OK


@command
def cmd_links(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True, embedder="none") as store:
        found = render.by_name(lambda n: store.links(n, namespace=settings(args).namespace,
                                               as_of=args.as_of), args.note)
        up_to = store.known_up_to()
    emit(args, found, render.links)
    replica_note(args, up_to, args.as_of)
    return EXIT_OK


@command
def cmd_changes(args: argparse.Namespace) -> int:
    # a query given blank is refused by the library, as search refuses it; none given: none
    words = " ".join(args.query) if args.query else None
    with open_store(args, read_only=True, embedder=None if words else "none") as store:
        found = store.changes(namespace=settings(args).namespace, since=args.since,
                              until=args.until, query=words, limit=args.limit)
        up_to = store.known_up_to()
    emit(args, found, output.changes)
    replica_note(args, up_to, found.until)
    return EXIT_OK


@command
def cmd_history(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True, embedder="none") as store:
        revisions = render.by_name(lambda m: store.history(m, namespace=settings(args).namespace,
                                                     as_of=args.as_of), args.memory_id)
        up_to = store.known_up_to()
    emit(args, revisions, output.history)
    replica_note(args, up_to, args.as_of)
    return EXIT_OK


@command
def cmd_export(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True, embedder="none") as store:
        if args.file == "-":
            doc = store.export_document(namespace=args.namespace, as_of=args.as_of)
            sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
            return EXIT_OK
        count = store.export_to(args.file, namespace=args.namespace, as_of=args.as_of)
    emit(args, {"file": args.file, "revisions": count},
         lambda d: f"Exported {d['revisions']} revisions to {d['file']}.")
    return EXIT_OK


@command
def cmd_purge(args: argparse.Namespace) -> int:
    chosen = [x for x in (args.id, args.note, args.matching) if x is not None]
    if len(chosen) != (0 if args.resume else 1):
        raise CommandError("purge: give exactly one of --id, --note, --matching, or "
                           "--resume alone")
    selection = dict(namespace=settings(args).namespace, memory_id=args.id, note=args.note,
                     matching=args.matching, known_before=args.known_before,
                     reason=args.reason)
    with open_store(args, read_only=False, embedder="none", create=False) as store:
        preview = store.purge(**selection, dry_run=True)
        if args.dry_run or not (preview.revision_ids or preview.unfinished):
            emit(args, preview, output.purge)
            return EXIT_OK
        if preview.revision_ids and not args.yes:
            if not sys.stdin.isatty():
                raise CommandError("purge: erases for good; confirm with --yes (no terminal "
                                   "to ask on)")
            print(output.purge(preview), file=sys.stderr)
            answer = input("Erase these revisions for good? This cannot be undone [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("Nothing purged.", file=sys.stderr)
                return EXIT_PROBLEM
        replicas = args.replicas
        if (not replicas and not args.yes and sys.stdin.isatty()
                and store.replication().state != "absent"):
            answer = input("The replica holds the text too. Make it forget (a fresh "
                           "generation, the older ones deleted)? [Y/n] ")
            replicas = answer.strip().lower() in ("", "y", "yes")
        report = store.purge(**selection, replicas=replicas)
    emit(args, report, output.purge)
    replica_failed = report.replica is not None and not report.replica.verified
    left = args.resume and bool(report.unfinished)  # asked to finish, and it did not
    return EXIT_OK if report.advice is None and not replica_failed and not left \
        else EXIT_PROBLEM


@command
def cmd_repair_clock(args: argparse.Namespace) -> int:
    with open_store(args, read_only=False, embedder="none", create=False) as store:
        emit(args, store.repair_clock(), output.clock_repair)
    return EXIT_OK


@command
def cmd_stats(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True) as store:
        emit(args, store.stats(args.namespace), output.stats)
    return EXIT_OK


@command
def cmd_backup(args: argparse.Namespace) -> int:
    if args.file == "-":  # export's standard output: a backup is a database file
        raise CommandError("backup: '-' is no file; a backup is a database file, give its "
                           "path (for JSON on standard output: 'memory export -')")
    with open_store(args, read_only=True, embedder="none") as store:
        store.backup(args.file)
    emit(args, {"file": args.file}, lambda d: f"Backed up to {d['file']}.")
    return EXIT_OK
