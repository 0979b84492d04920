"""The OAuth routes this server serves in place of the SDK's: the metadata (RFC 8414 and
RFC 9728) of the address a request came by, so a client that knows the server as
``localhost`` is told ``localhost`` (the SDK serves one fixed URL, and its client refuses
a resource that is not the one it asked for); the resource metadata at the root too, where
clients of the earlier MCP authorization spec look; ``/token`` with client secrets checked
against the hash the access file keeps; and ``/revoke`` for public clients, which RFC 7009
lets revoke with their ``client_id`` alone."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from urllib.parse import unquote, urlencode

from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import build_metadata, cors_middleware
from mcp.server.auth.settings import AuthSettings
from mcp.shared.auth import OAuthClientInformationFull, ProtectedResourceMetadata
from pydantic import AnyUrl, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..access import hashing
from .oauth import GRANT_TYPES, OwnerAuthorization, same_url

log = logging.getLogger("personal_memory.http")

AUTHORIZATION_METADATA = "/.well-known/oauth-authorization-server"
RESOURCE_METADATA = "/.well-known/oauth-protected-resource"
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class HashedSecrets(ClientAuthenticator):
    """The SDK's client authentication (RFC 6749 2.3), with the secret compared to the
    hash the access file keeps instead of to a secret kept in clear."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        basic = _basic(request.headers.get("Authorization", ""))
        client_id = form.get("client_id")
        if (not isinstance(client_id, str) or not client_id) and basic:
            client_id = basic[0]  # RFC 6749 2.3.1: the header alone may name the client
        if not isinstance(client_id, str) or not client_id:
            raise AuthenticationError("Missing client_id")
        client = await self.provider.get_client(client_id)
        if client is None:
            raise AuthenticationError("Invalid client_id")
        given: str | None = None
        method = client.token_endpoint_auth_method
        if method in ("client_secret_basic", "client_secret_post"):
            # either way, whichever it registered: RFC 7591 makes Basic the default, the
            # SDK registers a client that names none for the form
            secret = form.get("client_secret")
            if basic is not None:
                if basic[0] != client_id:
                    raise AuthenticationError("Client ID mismatch in Basic auth")
                given = basic[1]
            elif isinstance(secret, str):
                given = secret
        elif method != "none":
            raise AuthenticationError(f"Unsupported auth method: {method}")
        if method != "none" and not client.client_secret:
            raise AuthenticationError("Client is registered for a secret but has none")
        if client.client_secret:
            if not given:
                raise AuthenticationError("Client secret is required")
            if not hashing.client_secret_matches(given, client.client_secret):
                raise AuthenticationError("Invalid client_secret")
            if client.client_secret_expires_at and \
                    client.client_secret_expires_at < int(time.time()):
                raise AuthenticationError("Client secret has expired")
        return client


def _basic(header: str) -> tuple[str, str] | None:
    """The client ID and secret of an ``Authorization: Basic`` header (each form-encoded,
    RFC 6749 2.3.1), or None when there is none or it is malformed."""
    if not header.startswith("Basic "):
        return None
    try:
        pair = base64.b64decode(header[6:], validate=True).decode()
        client_id, secret = pair.split(":", 1)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        return None
    return unquote(client_id), unquote(secret)


def _with_form(request: Request, body: bytes) -> Request:
    """The same request with another urlencoded body."""
    headers = [(k, v) for k, v in request.scope["headers"]
               if k not in (b"content-length", b"content-type")]
    headers += [(b"content-type", b"application/x-www-form-urlencoded"),
                (b"content-length", str(len(body)).encode())]

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}
    return Request(request.scope | {"headers": headers}, receive)


# Public clients (no secret) authenticate by their client ID alone, as they registered.
AUTH_METHODS = ["client_secret_post", "client_secret_basic", "none"]


class Routes:
    """Handlers for the routes replaced; the metadata of each base URL, made once."""

    def __init__(self, owner: OwnerAuthorization, auth: AuthSettings, bases: list[str]):
        self.owner = owner
        self.authenticator = HashedSecrets(owner)
        self.token_handler = TokenHandler(owner, self.authenticator)
        each = {b: AuthSettings(issuer_url=b, resource_server_url=b + owner.mcp_path,
                                validate_token_resource=True) for b in bases}
        # The scope offered is the server's namespace: a client that asks for none of its
        # own then asks for it, not for its defaults ("openid email profile"). The other
        # namespaces are not listed: the metadata is public, and their names are not.
        scopes = [owner.default_namespace]
        self._authorization = {b: build_metadata(
            s.issuer_url, None, auth.client_registration_options, auth.revocation_options
        ).model_copy(update={"token_endpoint_auth_methods_supported": AUTH_METHODS,
                             "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
                             "scopes_supported": scopes})
            for b, s in each.items()}
        self._resource = {b: ProtectedResourceMetadata(
            resource=s.resource_server_url, authorization_servers=[s.issuer_url],
            scopes_supported=scopes) for b, s in each.items()}

    def _base(self) -> str:
        return self.owner.here()

    async def authorization_metadata(self, request: Request) -> Response:
        return PydanticJSONResponse(self._authorization[self._base()],
                                    headers={"Cache-Control": "no-store"})

    async def resource_metadata(self, request: Request) -> Response:
        return PydanticJSONResponse(self._resource[self._base()],
                                    headers={"Cache-Control": "no-store"})

    async def token(self, request: Request) -> Response:
        """The SDK's ``/token``, which reads the client ID from the form alone: a client
        that names itself in its Basic header only (RFC 6749 2.3.1) has it added there.
        A token for another server (``resource``, RFC 8707) is refused first."""
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":  # RFC 6749 3.2
            return JSONResponse({"error": "invalid_request", "error_description":
                                 "the body must be application/x-www-form-urlencoded"},
                                status_code=400, headers=_NO_STORE)
        form = await request.form()
        grant = form.get("grant_type")
        if grant is None:
            return JSONResponse({"error": "invalid_request", "error_description":
                                 "grant_type is required"}, status_code=400,
                                headers=_NO_STORE)
        if grant not in GRANT_TYPES:
            return JSONResponse({"error": "unsupported_grant_type", "error_description":
                                 f"grant_type {str(grant)[:100]!r}: this server grants "
                                 f"{' and '.join(GRANT_TYPES)}"},
                                status_code=400, headers=_NO_STORE)  # RFC 6749 5.2
        resource = form.get("resource")
        if resource is not None and not self.owner.ours(str(resource)):
            return JSONResponse({"error": "invalid_target", "error_description":
                                 f"resource {str(resource)[:200]!r} is not this server"},
                                status_code=400, headers=_NO_STORE)  # RFC 8707
        basic = _basic(request.headers.get("Authorization", ""))
        bound = self._bound_to(form, basic) if resource is not None else None
        if bound is not None and not same_url(bound, str(resource)):
            return JSONResponse({"error": "invalid_target", "error_description":
                                 f"this grant is for {bound}, not {str(resource)[:200]}"},
                                status_code=400, headers=_NO_STORE)  # RFC 8707 2.2
        if basic and not form.get("client_id"):
            body = urlencode([*((k, str(v)) for k, v in form.multi_items()),
                              ("client_id", basic[0])]).encode()
            request = _with_form(request, body)
        answer = await self.token_handler.handle(request)
        if answer.status_code == 400 and grant == "authorization_code" and (
                other := self._other_redirect(answer, form, basic)) is not None:
            return JSONResponse({"error": "invalid_grant", "error_description":
                                 f"redirect_uri {other[:200]!r} is not the one the code "
                                 "was issued for"},
                                status_code=400, headers=_NO_STORE)  # RFC 6749 5.2
        return _challenged(answer, basic)

    def _other_redirect(self, answer: Response, form,
                        basic: tuple[str, str] | None) -> str | None:
        """The redirect URI of a code request the SDK refused as ``invalid_request`` (its
        client authenticated) when it is not the one the authorization request named:
        RFC 6749 5.2 calls that invalid_grant. None for anything else: a missing one
        stays invalid_request (a required parameter). Looked up on this refusal only."""
        given, client_id = form.get("redirect_uri"), _client_id(form, basic)
        if not isinstance(given, str) or not given or client_id is None \
                or json.loads(answer.body).get("error") != "invalid_request":
            return None
        try:
            given_url = str(AnyUrl(given))
        except ValidationError:
            return None
        code = self.owner.store.load_code(str(form.get("code", "")), client_id)
        if code is None or not code.redirect_uri_explicit or code.redirect_uri == given_url:
            return None
        return given

    def _bound_to(self, form, basic: tuple[str, str] | None) -> str | None:
        """The server address the code or refresh token of a token request was issued for
        (the other loopback name of this server is not it: its token would be refused
        there)."""
        client_id = _client_id(form, basic)
        if client_id is None:
            return None
        if form.get("grant_type") == "refresh_token":
            held = self.owner.store.load_refresh(str(form.get("refresh_token", "")), client_id)
            return held.resource if held else None
        code = self.owner.store.load_code(str(form.get("code", "")), client_id)
        return code.resource if code else None

    async def revoke(self, request: Request) -> Response:
        """RFC 7009: the client authenticates as it registered (a public client by its
        ``client_id`` alone); a token that is not its own, or unknown, changes nothing
        and still gets 200."""
        try:
            client = await self.authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            return _challenged(JSONResponse(
                {"error": "invalid_client", "error_description": exc.message},
                status_code=401, headers=_NO_STORE),
                _basic(request.headers.get("Authorization", "")))
        token = (await request.form()).get("token")
        if not isinstance(token, str) or not token:
            return JSONResponse({"error": "invalid_request", "error_description":
                                 "token: the token to revoke is required"},
                                status_code=400, headers=_NO_STORE)
        if self.owner.store.revoke_token(token, client.client_id):
            log.info("client %s revoked its grant", client.client_id)
        return Response(status_code=200, headers=_NO_STORE)


def _client_id(form, basic: tuple[str, str] | None) -> str | None:
    """The client a token request names, in its form or its Basic header alone."""
    client_id = form.get("client_id") or (basic[0] if basic else None)
    return client_id if isinstance(client_id, str) else None


def _challenged(response: Response, basic: tuple[str, str] | None) -> Response:
    """RFC 6749 5.2: a client refused after authenticating with a Basic header is told
    the scheme to use again."""
    if basic is not None and response.status_code == 401:
        response.headers["WWW-Authenticate"] = 'Basic realm="personal-memory"'
    return response


def install(app: Starlette, owner: OwnerAuthorization, auth: AuthSettings,
            bases: list[str]) -> None:
    """Put this module's routes in place of the SDK's at the same paths (and add the
    resource metadata at the root)."""
    routes = Routes(owner, auth, bases)
    get, post = ["GET", "OPTIONS"], ["POST", "OPTIONS"]
    mine = {
        AUTHORIZATION_METADATA: (cors_middleware(routes.authorization_metadata, get), get),
        RESOURCE_METADATA + owner.mcp_path: (cors_middleware(routes.resource_metadata, get),
                                             get),
        RESOURCE_METADATA: (cors_middleware(routes.resource_metadata, get), get),
        "/token": (cors_middleware(routes.token, post), post),
        "/revoke": (cors_middleware(routes.revoke, post), post),
    }
    kept = [r for r in app.router.routes if getattr(r, "path", None) not in mine]
    app.router.routes[:] = [Route(path, endpoint=endpoint, methods=methods)
                            for path, (endpoint, methods) in mine.items()] + kept
