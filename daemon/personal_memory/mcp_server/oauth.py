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
from typing import NamedTuple
from urllib.parse import urlsplit

from mcp.server.auth.provider import (AccessToken, AuthorizationCode, AuthorizationParams,
                                      AuthorizeError, RefreshToken, RegistrationError,
                                      TokenError)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from ..access.store import AccessStore, TokenRefused

log = logging.getLogger("personal_memory.http")

PENDING_SECONDS = 600  # a consent page left open longer must be started again
MAX_PENDING = 64
MAX_CONSENT_TRIES = 5
# A scope is a namespace's name; only such names are echoed in a header.
NAMESPACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


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


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


class OwnerAuthorization:
    def __init__(self, store: AccessStore, base_url: str, resource_url: str,
                 default_namespace: str):
        self.store = store
        self.base_url = base_url.rstrip("/")
        self.resource_url = resource_url
        self.default_namespace = default_namespace
        self._pending: dict[str, Pending] = {}
        self.tries: dict[str, int] = {}

    # -- clients ---------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        info = self.store.client(client_id)
        return OAuthClientInformationFull.model_validate_json(info) if info else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or ():
            parts = urlsplit(str(uri))
            if parts.scheme == "http" and not _loopback(parts.hostname):
                raise RegistrationError("invalid_redirect_uri", "a redirect URI over plain "
                                        "http must be on this machine (OAuth 2.1)")
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
        if params.resource is not None and not same_url(params.resource, self.resource_url):
            raise AuthorizeError("invalid_target", f"this server is {self.resource_url}")
        namespaces = tuple(dict.fromkeys(params.scopes or (client.scope or "").split()
                                         or [self.default_namespace]))
        now = time.monotonic()
        for key, held in list(self._pending.items()):
            if now - held.started > PENDING_SECONDS:
                self.forget(key)
        while len(self._pending) >= MAX_PENDING:
            self.forget(next(iter(self._pending)))
        key = secrets.token_urlsafe(24)
        self._pending[key] = Pending(client, params, namespaces, now)
        return f"{self.base_url}/consent?request={key}"

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
            resource=held.params.resource or self.resource_url)

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
        pair = _spent(self.store.exchange_code, code, "the code was already used")
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
        return AccessToken(token=token, client_id=held.grant.client_id,
                           scopes=list(held.grant.namespaces), expires_at=held.expires_at,
                           # a static token reads this database through any URL of its server
                           resource=held.resource or self.resource_url)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.store.revoke_token(token.token)
