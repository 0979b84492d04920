"""The authorization server of ``memory serve --http``, for its one owner, as the SDK's
``OAuthAuthorizationServerProvider``: the SDK serves the metadata (RFC 8414), dynamic
registration (RFC 7591), ``/authorize``, ``/token`` (PKCE S256 checked there) and
``/revoke``; this class keeps clients, codes and tokens in the access file (hashed), and
sends every authorization to the consent page, where the owner's passphrase decides.

Scopes are namespaces: a client asks for the namespaces it wants to read (the server's
own namespace when it asks for none), the owner sees them on the consent page, and every
token of the grant reads only those."""

from __future__ import annotations

import ipaddress
import logging
import re
import secrets
import time
from contextvars import ContextVar
from typing import Callable, Iterable, NamedTuple
from urllib.parse import urlsplit

from mcp.server.auth.provider import (AccessToken, AuthorizationCode, AuthorizationParams,
                                      AuthorizeError, RefreshToken, RegistrationError,
                                      TokenError)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from ..access.store import AccessStore, TokenRefused

# An S256 PKCE challenge: the base64url SHA-256 of the verifier, unpadded (RFC 7636 4.2)
S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
log = logging.getLogger("personal_memory.http")

PENDING_SECONDS = 600  # a consent page left open longer must be started again
MAX_PENDING = 64
MAX_CONSENT_TRIES = 5
# A scope is a namespace's name; only such names are echoed in a header.
NAMESPACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Schemes a browser runs, reads or shows itself rather than handing to an app: never a
# place to send a code (or a denial) to.
UNSAFE_SCHEMES = frozenset({"javascript", "vbscript", "data", "file", "blob", "about",
                            "filesystem", "view-source", "jar", "mhtml", "ws", "wss"})
# The base URL (scheme://host:port) the current request reached this server by, set by
# the guard from its checked Host: metadata, the consent page and token audiences follow it.
REQUEST_BASE: ContextVar[str | None] = ContextVar("request_base", default=None)


GRANT_TYPES = ("authorization_code", "refresh_token")


def _spent(exchange, held, used: str):
    """A new token pair for a code or refresh token still held, or invalid_grant."""
    try:
        if held is not None:
            return exchange(held)
    except TokenRefused:
        pass
    raise TokenError("invalid_grant", used)


def same_url(a: str | None, b: str) -> bool:
    return a is not None and a.rstrip("/").lower() == b.rstrip("/").lower()


class Pending(NamedTuple):
    """An authorization the owner has not answered yet."""
    client: OAuthClientInformationFull
    params: AuthorizationParams
    namespaces: tuple[str, ...]
    started: float
    resource: str  # the audience of its tokens: this server as the client reached it


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def redirect_refusal(uri: str) -> str | None:
    """Why a redirect URI may not be registered (RFC 7591 invalid_redirect_uri), or None:
    http on loopback, https, and an app's own scheme (com.example.app:/cb) are kept."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme in UNSAFE_SCHEMES:
        return f"a {scheme}: URI is not a place to send a client back to"
    if parts.fragment or "#" in uri:
        return "a redirect URI has no fragment (RFC 6749)"
    if scheme == "http" and not _loopback(parts.hostname):
        return "a redirect URI over plain http must be on this machine (OAuth 2.1)"
    return None


class Client(OAuthClientInformationFull):
    """A registered client, whose loopback redirect URI may name any port when it asks
    (RFC 8252 7.3, OAuth 2.1): a native app listens on whichever port is free, and one
    that keeps its registration gets another port the next time it starts."""

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        """Any scope may be asked for: the owner's consent decides, and scopes that name
        no namespace are ignored (RFC 6749 3.3), so that a client registered for one
        namespace (or with its own defaults, "openid email profile") can ask for another
        when a 403 names it."""
        return requested_scope.split() if requested_scope else None

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        registered = self.redirect_uris or ()
        if redirect_uri is not None and any(
                _same_but_port(str(redirect_uri), str(u)) for u in registered):
            return redirect_uri
        return super().validate_redirect_uri(redirect_uri)


def _same_but_port(asked: str, registered: str) -> bool:
    """Two http loopback URIs that differ in their port alone."""
    a, r = urlsplit(asked), urlsplit(registered)
    return (a.scheme.lower() == r.scheme.lower() == "http" and _loopback(a.hostname)
            and a.hostname == r.hostname and a.path == r.path and a.query == r.query
            and not a.fragment and not a.username and not a.password)


class OwnerAuthorization:
    def __init__(self, store: AccessStore, base_url: str, default_namespace: str, *,
                 bases: Iterable[str] = (), mcp_path: str = "/mcp"):
        self.store = store
        self.base_url = base_url.rstrip("/")
        self.mcp_path = mcp_path
        self.resource_url = self.base_url + mcp_path
        # Every address this server answers as: a token for any of them is this server's.
        self.resources = frozenset(b.rstrip("/").lower() + mcp_path
                                   for b in (self.base_url, *bases))
        self.default_namespace = default_namespace
        # The namespaces the memory holds (set by the server that reads it).
        self.namespaces: Callable[[], Iterable[str]] = lambda: ()
        self._pending: dict[str, Pending] = {}
        self.tries: dict[str, int] = {}

    def here(self) -> str:
        """The base URL the current request came through (the public one by default)."""
        return REQUEST_BASE.get() or self.base_url

    def ours(self, resource: str | None) -> bool:
        return resource is not None and resource.rstrip("/").lower() in self.resources

    # -- clients ---------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        info = self.store.client(client_id)
        if not info:
            return None
        client = Client.model_validate_json(info)
        # A registration kept from before these were refused never sends a browser there.
        safe = [u for u in client.redirect_uris or () if not redirect_refusal(str(u))]
        if client.redirect_uris and len(safe) < len(client.redirect_uris):
            if not safe:
                return None
            client = client.model_copy(update={"redirect_uris": safe})
        return client

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or ():
            refusal = redirect_refusal(str(uri))
            if refusal:
                raise RegistrationError("invalid_redirect_uri", refusal)
        other = [g for g in client_info.grant_types or () if g not in GRANT_TYPES]
        if other:  # RFC 7591 2: what the token endpoint would refuse is not registered
            raise RegistrationError("invalid_client_metadata", f"grant_types {other!r}: "
                                    f"this server grants {' and '.join(GRANT_TYPES)}")
        for scope in (client_info.scope or "").split():
            if not NAMESPACE_NAME.fullmatch(scope):
                raise RegistrationError("invalid_client_metadata", f"scope {scope!r} is "
                                        "not a namespace name")
        self.store.register_client(client_info.client_id, client_info.model_dump_json())
        log.info("registered client %r (%s)", client_info.client_name or "unnamed",
                 client_info.client_id)

    # -- authorization: the consent page decides -------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        if not S256_CHALLENGE.fullmatch(params.code_challenge or ""):
            # no verifier could redeem the code: refused before the owner is asked
            raise AuthorizeError("invalid_request", f"code_challenge: "
                                 f"{len(params.code_challenge or '')} characters, not an S256 "
                                 "challenge (43 base64url characters, RFC 7636)")
        resource = self.here() + self.mcp_path
        if params.resource is not None and not same_url(params.resource, resource):
            raise AuthorizeError("invalid_target", f"this server is {resource}")
        namespaces = self.granted(params.scopes or (client.scope or "").split())
        now = time.monotonic()
        for key, held in list(self._pending.items()):
            if now - held.started > PENDING_SECONDS:
                self.forget(key)
        while len(self._pending) >= MAX_PENDING:  # a guesser's (wrong tries) go first
            self.forget(max(self._pending, key=lambda k: self.tries.get(k, 0) > 0))
        key = secrets.token_urlsafe(24)
        self._pending[key] = Pending(client, params, namespaces, now,
                                     params.resource or resource)
        return f"{self.here()}/consent?request={key}"

    def known(self) -> list[str]:
        """The namespaces a grant may read: the default one and those that hold
        memories."""
        return list(dict.fromkeys([self.default_namespace, *sorted(self.namespaces())]))

    def granted(self, asked: Iterable[str]) -> tuple[str, ...]:
        """The namespaces a grant asked with these scopes reads: those known, in the order
        asked; the default one when none is (scopes that name no namespace are ignored)."""
        known = set(self.known())
        return tuple(dict.fromkeys(s for s in asked if s in known)) or (
            self.default_namespace,)

    def pending(self, key: str) -> Pending | None:
        held = self._pending.get(key)
        if held is None or time.monotonic() - held.started > PENDING_SECONDS:
            return None
        return held

    def forget(self, key: str) -> None:
        self._pending.pop(key, None)
        self.tries.pop(key, None)

    def approve(self, key: str) -> str:
        """The owner said yes: a code for the client (the pending request is used up)."""
        held = self._pending.pop(key)
        self.tries.pop(key, None)
        return self.store.issue_code(
            client_id=held.client.client_id,
            client_name=held.client.client_name or "client", namespaces=list(held.namespaces),
            redirect_uri=str(held.params.redirect_uri),
            redirect_uri_explicit=held.params.redirect_uri_provided_explicitly,
            code_challenge=held.params.code_challenge,
            resource=held.resource)

    # -- codes and tokens ------------------------------------------------------------------

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        code = self.store.load_code(authorization_code, client.client_id)
        if code is None:
            log.warning("refused a token request of %s: unknown, spent or foreign code",
                        client.client_id)
            return None
        return AuthorizationCode(code=code.code, scopes=list(code.grant.namespaces),
                                 expires_at=code.expires_at, client_id=client.client_id,
                                 code_challenge=code.code_challenge,
                                 redirect_uri=AnyUrl(code.redirect_uri),
                                 redirect_uri_provided_explicitly=code.redirect_uri_explicit,
                                 resource=code.resource)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        code = self.store.load_code(authorization_code.code, client.client_id)
        refresh = "refresh_token" in (client.grant_types or ())
        pair = _spent(lambda c: self.store.exchange_code(c, refresh), code,
                      "the code was already used")
        log.info("issued tokens to %r (grant %s)", client.client_name, code.grant.name)
        return OAuthToken(access_token=pair.access, refresh_token=pair.refresh,
                          expires_in=pair.expires_in, scope=" ".join(code.grant.namespaces))

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        held = self.store.load_refresh(refresh_token, client.client_id)
        if held is None:
            log.warning("refused a refresh of %s: unknown, spent or revoked token",
                        client.client_id)
            return None
        return RefreshToken(token=refresh_token, client_id=client.client_id,
                            scopes=list(held.grant.namespaces), expires_at=held.expires_at,
                            resource=held.resource)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        held = self.store.load_refresh(refresh_token.token, client.client_id)
        pair = _spent(lambda h: self.store.rotate(refresh_token.token, h), held,
                      "the refresh token was already used")
        return OAuthToken(access_token=pair.access, refresh_token=pair.refresh,
                          expires_in=pair.expires_in, scope=" ".join(held.grant.namespaces))

    async def load_access_token(self, token: str) -> AccessToken | None:
        try:
            held = self.store.check(token)
        except TokenRefused:
            return None
        # A static token reads this database through any URL of its server; the guard has
        # held an OAuth token to the address the request came by, so the SDK's own check
        # (against one URL) is given that one for any of this server's addresses.
        ours = held.resource is None or self.ours(held.resource)
        return AccessToken(token=token, client_id=held.grant.client_id,
                           scopes=list(held.grant.namespaces), expires_at=held.expires_at,
                           resource=self.resource_url if ours else held.resource)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.store.revoke_token(token.token, token.client_id)
