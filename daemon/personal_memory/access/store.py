"""The access file beside a database (``<db>.access``): the owner's passphrase (scrypt),
the OAuth clients that registered, and grants with their tokens, every token and code
kept only as a hash. A grant is one device or script: a name, the namespaces it may read,
and its tokens (a static one, or OAuth access and rotating refresh tokens); revoking it
ends all of them. The notes database itself is never written by anything here."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path
from typing import NamedTuple

import apsw

from ..errors import InvalidArgument, NotFound, PersonalMemoryError
from ..paths import access_path, real_database
from ..times import MAX_US, format_time
from . import hashing

ACCESS_TOKEN_SECONDS = 3600
REFRESH_TOKEN_SECONDS = 30 * 86400
CODE_SECONDS = 300
MAX_CLIENTS = 200  # registrations are open to anyone who can reach the server
MAX_NAME_CHARS = 64
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clients(client_id TEXT PRIMARY KEY, info TEXT NOT NULL,
                                   created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS grants(id INTEGER PRIMARY KEY, name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('static', 'oauth')), client_id TEXT NOT NULL,
    namespaces TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER,
    revoked_at INTEGER, last_used_at INTEGER);
CREATE UNIQUE INDEX IF NOT EXISTS grants_live_name ON grants(name) WHERE revoked_at IS NULL;
CREATE TABLE IF NOT EXISTS tokens(hash TEXT PRIMARY KEY, grant_id INTEGER NOT NULL,
    kind TEXT NOT NULL, resource TEXT, expires_at INTEGER, spent_at INTEGER, data TEXT);
CREATE INDEX IF NOT EXISTS tokens_grant ON tokens(grant_id);
"""


def access_file(db: str | os.PathLike) -> Path:
    """The access file of a database, beside the real file (not beside a symlink)."""
    return access_path(real_database(db))


class TokenRefused(PersonalMemoryError):
    """A bearer token that does not give access; ``reason`` says which way, in words that
    tell its holder what to do and nobody else anything new."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Grant(NamedTuple):
    """One device or script allowed to read: its tokens live and die with it."""
    id: int
    name: str
    kind: str  # static | oauth
    client_id: str
    namespaces: tuple[str, ...]
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    last_used_at: str | None
    # an OAuth grant whose code expired unexchanged: approved, and no token ever came of it
    unclaimed: bool = False

    @property
    def state(self) -> str:
        if self.revoked_at:
            return "revoked"
        if self.unclaimed:
            return "unclaimed"
        if self.expires_at and self.expires_at < format_time(time.time_ns() // 1000):
            return "expired"
        return "active"

    def to_dict(self) -> dict:
        return self._asdict() | {"namespaces": list(self.namespaces), "state": self.state}


class TokenGrant(NamedTuple):
    """What a valid token carries: its grant, the resource (server URL) it was issued for
    (None for a static token: it is bound to this database, whatever the server's URL),
    and when it expires."""
    grant: Grant
    kind: str
    resource: str | None
    expires_at: int | None


class Code(NamedTuple):
    grant: Grant
    code: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    resource: str | None
    expires_at: int


class Pair(NamedTuple):
    access: str
    refresh: str | None  # None for a client that may not refresh
    expires_in: int


def _iso(seconds: int | None) -> str | None:
    """A stored time in seconds as the API writes times; one past the last a time can
    name (a grant an earlier version stored) as that last time."""
    return format_time(min(seconds * 1_000_000, MAX_US)) if seconds is not None else None


def check_name(name: str) -> str:
    if not (0 < len(name) <= MAX_NAME_CHARS and _NAME.fullmatch(name)):
        raise InvalidArgument(f"name: {name!r} is not a token name (1 to {MAX_NAME_CHARS} "
                              "letters, digits, '.', '_' or '-', starting with a letter or "
                              "digit)")
    return name


def _secret_hashed(info: str) -> str:
    """A client's registration as kept: its secret replaced by the secret's hash."""
    data = json.loads(info)
    secret = data.get("client_secret")
    if not secret or secret.startswith(hashing.CLIENT_SECRET_PREFIX):
        return info
    return json.dumps(data | {"client_secret": hashing.hash_client_secret(secret)})


def _hash_kept_client_secrets(conn: apsw.Connection) -> int:
    """Files written before secrets were hashed kept them in clear: hash them now (how
    many were)."""
    hashed = 0
    for client_id, info in list(conn.execute("SELECT client_id, info FROM clients WHERE "
                                             "info LIKE '%client_secret%'")):
        kept = _secret_hashed(info)
        if kept != info:
            conn.execute("UPDATE clients SET info = ? WHERE client_id = ?", (kept, client_id))
            hashed += 1
    return hashed


def grant_name(client_name: str) -> str:
    """The name a client's grant is listed and revoked by (``memory tokens``): its own name,
    in letters, digits, dots, dashes and underscores."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", client_name).strip("-._")[:40] or "client"


class AccessStore:
    """The access file. Safe to share between threads; the command line and the server
    may have it open at once (SQLite's locking, a busy timeout)."""

    def __init__(self, path: Path, conn: apsw.Connection):
        self.path = path
        self._conn = conn
        self._lock = threading.RLock()
        self._touched: dict[int, float] = {}

    @classmethod
    def open(cls, db: str | os.PathLike) -> AccessStore:
        path = access_file(db)
        if not path.parent.is_dir():
            raise NotFound(f"{path.parent}: no such folder (the database's folder)")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            os.close(fd)
            conn = apsw.Connection(str(path))
            conn.set_busy_timeout(5000)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA secure_delete=ON")  # a replaced secret leaves no trace
            with conn:
                conn.execute(SCHEMA)
                hashed = _hash_kept_client_secrets(conn)
            if hashed:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except (OSError, apsw.Error) as exc:
            raise PersonalMemoryError(f"{path}: cannot open the access file ({exc})") from None
        return cls(path, conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> AccessStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _rows(self, sql: str, *args) -> list[tuple]:
        with self._lock:
            return list(self._conn.execute(sql, args))

    def _write(self, sql: str, *args) -> None:
        with self._lock, self._conn:
            self._conn.execute(sql, args)

    # -- the owner's passphrase ------------------------------------------------------------

    def set_passphrase(self, passphrase: str) -> None:
        if not (hashing.MIN_PASSPHRASE_CHARS <= len(passphrase)
                <= hashing.MAX_PASSPHRASE_CHARS):
            raise InvalidArgument(f"passphrase: {hashing.MIN_PASSPHRASE_CHARS} to "
                                  f"{hashing.MAX_PASSPHRASE_CHARS} characters, please")
        self._write("INSERT OR REPLACE INTO meta(key, value) VALUES ('passphrase', ?)",
                    hashing.hash_passphrase(passphrase))

    def has_passphrase(self) -> bool:
        return bool(self._rows("SELECT 1 FROM meta WHERE key = 'passphrase'"))

    def passphrase_matches(self, passphrase: str) -> bool:
        rows = self._rows("SELECT value FROM meta WHERE key = 'passphrase'")
        return bool(rows) and hashing.passphrase_matches(passphrase, rows[0][0])

    # -- clients (dynamic registration) ---------------------------------------------------

    def register_client(self, client_id: str, info: str) -> None:
        """Keep a registration (its secret, if any, as a hash); beyond MAX_CLIENTS the
        oldest one no grant uses goes."""
        with self._lock, self._conn:
            self._conn.execute("INSERT INTO clients VALUES (?, ?, ?)",
                               (client_id, _secret_hashed(info), int(time.time())))
            self._conn.execute(
                "DELETE FROM clients WHERE client_id IN (SELECT client_id FROM clients "
                "WHERE client_id NOT IN (SELECT client_id FROM grants WHERE revoked_at IS "
                "NULL) ORDER BY created_at DESC LIMIT -1 OFFSET ?)", (MAX_CLIENTS,))

    def client(self, client_id: str) -> str | None:
        rows = self._rows("SELECT info FROM clients WHERE client_id = ?", client_id)
        return rows[0][0] if rows else None

    # -- grants ----------------------------------------------------------------------------

    # An OAuth grant with no token but codes past their time was never claimed.
    _UNCLAIMED = ("(kind = 'oauth' AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = "
                  "grants.id AND (t.kind != 'code' OR t.expires_at > CAST(strftime('%s', "
                  "'now') AS INTEGER))))")
    _GRANT = ("SELECT id, name, kind, client_id, namespaces, created_at, expires_at, "
              f"revoked_at, last_used_at, {_UNCLAIMED} FROM grants")

    @staticmethod
    def _grant(row: tuple) -> Grant:
        return Grant(row[0], row[1], row[2], row[3], tuple(json.loads(row[4])), _iso(row[5]),
                     _iso(row[6]), _iso(row[7]), _iso(row[8]), bool(row[9]))

    def grants(self) -> list[Grant]:
        return [self._grant(r) for r in self._rows(self._GRANT + " ORDER BY id")]

    def _grant_by_id(self, grant_id: int) -> Grant:
        return self._grant(self._rows(self._GRANT + " WHERE id = ?", grant_id)[0])

    def _new_grant(self, name: str, kind: str, client_id: str, namespaces: list[str],
                   expires_at: int | None) -> int:
        if not namespaces:
            raise InvalidArgument("namespaces: a grant reads at least one namespace")
        taken = {r[0] for r in self._conn.execute(
            "SELECT name FROM grants WHERE revoked_at IS NULL")}
        if kind == "static" and name in taken:
            raise InvalidArgument(f"name: a token named {name!r} exists; revoke it first or "
                                  "choose another name")
        base, n = name, 2
        while name in taken:  # a client that connects twice gets "name-2"
            name, n = f"{base}-{n}", n + 1
        self._conn.execute(
            "INSERT INTO grants(name, kind, client_id, namespaces, created_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?)", (name, kind, client_id, json.dumps(namespaces),
                                          int(time.time()), expires_at))
        return self._conn.last_insert_rowid()

    def _token(self, grant_id: int, kind: str, resource: str | None,
               expires_at: int | None, data: dict | None = None) -> str:
        secret = hashing.new_secret(kind)
        self._conn.execute("INSERT INTO tokens(hash, grant_id, kind, resource, expires_at, "
                           "data) VALUES (?, ?, ?, ?, ?, ?)",
                           (hashing.digest(secret), grant_id, kind, resource, expires_at,
                            json.dumps(data) if data else None))
        return secret

    def add_static(self, name: str, namespaces: list[str],
                   expires_in: int | None = None) -> tuple[Grant, str]:
        """A token for a script: printed once, kept as a hash."""
        check_name(name)
        expires_at = int(time.time()) + expires_in if expires_in else None
        if expires_at is not None and expires_at * 1_000_000 > MAX_US:
            raise InvalidArgument(f"expires: the token would expire after "
                                  f"{format_time(MAX_US)[:10]}; leave it out for a token "
                                  "that does not expire")
        with self._lock, self._conn:
            grant_id = self._new_grant(name, "static", f"token:{name}", namespaces,
                                       expires_at)
            token = self._token(grant_id, "static", None, expires_at)
        return self._grant_by_id(grant_id), token

    def revoke(self, name: str) -> Grant:
        """End a grant by its name (as ``grants()`` lists it), and every token of it."""
        rows = self._rows("SELECT id FROM grants WHERE name = ? AND revoked_at IS NULL", name)
        if not rows:
            raise NotFound(f"no active token or client named {name!r} ('memory tokens "
                           "list' shows them)")
        self._write("UPDATE grants SET revoked_at = ? WHERE id = ?", int(time.time()),
                    rows[0][0])
        return self._grant_by_id(rows[0][0])

    def _revoke_grant(self, grant_id: int) -> None:
        self._conn.execute("UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS "
                           "NULL", (int(time.time()), grant_id))

    # -- OAuth: codes and token pairs -------------------------------------------------------

    def issue_code(self, *, client_id: str, client_name: str, namespaces: list[str],
                   redirect_uri: str, redirect_uri_explicit: bool, code_challenge: str,
                   resource: str | None) -> str:
        """After the owner approved on the consent page: a new grant for the client and a
        single-use code for it."""
        name = grant_name(client_name)
        with self._lock, self._conn:
            grant_id = self._new_grant(name, "oauth", client_id, namespaces, None)
            return self._token(grant_id, "code", resource, int(time.time()) + CODE_SECONDS,
                               {"redirect_uri": redirect_uri,
                                "explicit": redirect_uri_explicit,
                                "code_challenge": code_challenge})

    def _lookup(self, secret: str, kind: str) -> tuple | None:
        if not hashing.well_formed(secret) or hashing.kind_of(secret) != kind:
            return None
        rows = self._rows("SELECT grant_id, resource, expires_at, spent_at, data FROM tokens "
                          "WHERE hash = ? AND kind = ?", hashing.digest(secret), kind)
        return rows[0] if rows else None

    def _unspent(self, secret: str, kind: str, client_id: str) -> tuple[tuple, Grant] | None:
        """The row and live grant of a code or refresh token of this client, or None. One
        that comes back after it was used has leaked: its grant ends."""
        row = self._lookup(secret, kind)
        if row is None:
            return None
        grant = self._grant_by_id(row[0])
        if grant.client_id != client_id or grant.revoked_at:
            return None
        if row[3] is not None:
            with self._lock, self._conn:
                self._revoke_grant(grant.id)
            return None
        return row, grant

    def load_code(self, code: str, client_id: str) -> Code | None:
        found = self._unspent(code, "code", client_id)
        if found is None:
            return None
        row, grant = found
        data = json.loads(row[4])
        return Code(grant, code, data["redirect_uri"], data["explicit"],
                    data["code_challenge"], row[1], row[2])

    def _spend(self, secret: str, grant_id: int, resource: str | None,
               refresh: bool = True) -> Pair:
        """A new pair for a code or refresh token, which is used up: a second use, even
        at the same moment, ends the grant and gets nothing."""
        with self._lock:
            with self._conn:
                self._conn.execute("UPDATE tokens SET spent_at = ? WHERE hash = ? AND "
                                   "spent_at IS NULL", (int(time.time()),
                                                        hashing.digest(secret)))
                if self._conn.changes() == 1:
                    return self._pair(grant_id, resource, refresh)
            with self._conn:
                self._revoke_grant(grant_id)
        raise TokenRefused("already used")

    def exchange_code(self, code: Code, refresh: bool = True) -> Pair:
        """The pair for a code; no refresh token for a client that did not register the
        refresh_token grant (RFC 6749 5.1: it could not use one)."""
        return self._spend(code.code, code.grant.id, code.resource, refresh)

    def _pair(self, grant_id: int, resource: str | None, refresh: bool = True) -> Pair:
        now = int(time.time())
        return Pair(self._token(grant_id, "access", resource, now + ACCESS_TOKEN_SECONDS),
                    self._token(grant_id, "refresh", resource, now + REFRESH_TOKEN_SECONDS)
                    if refresh else None,
                    ACCESS_TOKEN_SECONDS)

    def load_refresh(self, token: str, client_id: str) -> TokenGrant | None:
        found = self._unspent(token, "refresh", client_id)
        if found is None:
            return None
        row, grant = found
        return TokenGrant(grant, "refresh", row[1], row[2])

    def rotate(self, token: str, held: TokenGrant) -> Pair:
        """A new pair for a refresh token, which is spent: it never works again."""
        return self._spend(token, held.grant.id, held.resource)

    def revoke_token(self, token: str, client_id: str) -> bool:
        """RFC 7009: a client revokes its own access or refresh token, which ends the
        whole grant; another client's token, or none, is left alone (False)."""
        kind = hashing.kind_of(token) if hashing.well_formed(token) else None
        row = self._lookup(token, kind) if kind in ("access", "refresh") else None
        if row is None or self._grant_by_id(row[0]).client_id != client_id:
            return False
        with self._lock, self._conn:
            self._revoke_grant(row[0])
        return True

    # -- checking a bearer token ---------------------------------------------------------

    def check(self, token: str) -> TokenGrant:
        """The grant behind a bearer token, or TokenRefused saying why not."""
        if not hashing.well_formed(token):
            raise TokenRefused("the token is malformed")
        kind = hashing.kind_of(token)
        if kind not in ("access", "static"):
            raise TokenRefused(f"a {kind} token is not an access token")
        row = self._lookup(token, kind)
        if row is None:
            raise TokenRefused("the token is unknown")
        grant = self._grant_by_id(row[0])
        if grant.revoked_at:
            raise TokenRefused("the token was revoked")
        if row[2] is not None and row[2] < time.time():
            raise TokenRefused("the token expired")
        self._touch(grant.id)
        return TokenGrant(grant, kind, row[1], row[2])

    def _touch(self, grant_id: int, every: float = 60.0) -> None:
        """Remember when a grant was last used, at most once a minute (a write per
        request would serialise every reader on the file)."""
        now = time.monotonic()
        if now - self._touched.get(grant_id, -every) < every:
            return
        self._touched[grant_id] = now
        try:
            self._write("UPDATE grants SET last_used_at = ? WHERE id = ?", int(time.time()),
                        grant_id)
        except apsw.BusyError:
            pass  # the command line is writing; the next use records it
