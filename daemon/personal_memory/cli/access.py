"""The commands of the HTTP server's access: its tokens and the owner's passphrase."""

from __future__ import annotations

import argparse
import getpass
import sys

from ..limits import EXIT_OK
from .context import CommandError, command, emit, settings


def _access(args: argparse.Namespace):
    from ..access.store import AccessStore
    from ..paths import access_path
    db = settings(args).db
    # a server reading a replica has no database, only its access file beside --db
    if not db.exists() and not access_path(db).exists():
        raise CommandError(f"no database at {db} (the tokens are kept beside it; a server "
                           "that reads a replica makes its access file when it starts)")
    return AccessStore.open(db)


@command
def cmd_tokens(args: argparse.Namespace) -> int:
    if args.action != "list" and not args.name:
        raise CommandError(f"tokens {args.action}: give the token's NAME")
    if args.action != "add" and (args.namespaces or args.expires):
        raise CommandError("--namespace and --expires go with 'tokens add'")
    with _access(args) as access:
        if args.action == "add":
            expires = _span(args.expires) if args.expires else None
            namespaces = list(dict.fromkeys(args.namespaces or [settings(args).namespace]))
            grant, token = access.add_static(args.name, namespaces, expires)
            emit(args, grant.to_dict() | {"token": token}, lambda d: (
                f"{d['token']}\n\nThe token of {d['name']!r}, shown once: it reads "
                f"{', '.join(d['namespaces'])}"
                + (f" until {d['expires_at']}" if d["expires_at"] else "")
                + ". Send it as 'Authorization: Bearer <token>'; revoke it with 'memory "
                f"tokens revoke {d['name']}'."))
        elif args.action == "list":
            emit(args, access.grants(), _listing)
        else:
            grant = access.revoke(args.name)
            emit(args, grant, lambda g: f"Revoked {g.name!r}: its tokens no longer work "
                 "(a connected client is refused at its next request).")
    return EXIT_OK


def _span(text: str) -> int:
    from ..times import parse_span
    span = parse_span(text, "--expires")
    if not span:
        raise CommandError(f"--expires: {text!r} is not a span such as 12h, 30d or 2w")
    return span // 1_000_000


def _listing(grants) -> str:
    if not grants:
        return "No tokens yet ('memory tokens add NAME', or connect a client over HTTP)."
    rows = [("NAME", "KIND", "READS", "STATE", "CREATED", "LAST USED")]
    rows += [(g.name, "token" if g.kind == "static" else "client", ",".join(g.namespaces),
              g.state if g.state != "active" or not g.expires_at else f"until {g.expires_at}",
              g.created_at[:16], (g.last_used_at or "never")[:16]) for g in grants]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


@command
def cmd_http(args: argparse.Namespace) -> int:
    with _access(args) as access:
        if sys.stdin.isatty():
            first = getpass.getpass("New passphrase for the consent page: ")
            if getpass.getpass("Again: ") != first:
                raise CommandError("the two passphrases differ; nothing changed")
        else:
            first = sys.stdin.readline().rstrip("\r\n")
        access.set_passphrase(first)
    emit(args, {"passphrase": "set"}, lambda _: "Passphrase set (only a slow hash of it is "
         "kept). The consent page asks for it whenever a client connects.")
    return EXIT_OK
