"""OAuth at ``memory serve --http`` from any client, as a real process: every loopback
name of the server, revocation by a public client, the redirect URIs registration
refuses, client secrets kept hashed, the consent page's delays, the rates the docs
promise, the metadata where older clients look, and a script's plain JSON-RPC."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import apsw
import httpx2
import pytest
from http_harness import (PASSPHRASE, Browser, Memory, copy_notes, notes_db,  # noqa: F401
                          notes_db_made, oauth, server, start, stop)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from personal_memory.access.store import AccessStore
from support import ROOT, wait_for
from test_web import browser, needs_browser  # noqa: F401  (the page's real browser)

CALLBACK = "http://127.0.0.1:9/cb"


def _kept(db: str) -> bytes:
    """The access file as it is on disk, its write-ahead log included."""
    return b"".join(p.read_bytes() for p in Path(db).parent.glob(Path(db).name + ".access*"))


def _pkce() -> tuple[str, str]:
    verifier = "v" * 50
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()
                                         ).decode().rstrip("=")
    return verifier, challenge


def _oauth_search(url: str):
    browser, storage = Browser([PASSPHRASE]), Memory()

    async def go():
        client = httpx2.AsyncClient(auth=oauth(url, browser, storage), timeout=60)
        async with Client(streamable_http_client(url, http_client=client)) as c:
            return await c.call_tool("memory_search", {"query": "prefer",
                                                        "as_of": "2025-02-01"})
    return asyncio.run(go()), storage


def _refusal(response) -> str:
    assert response.status_code == 401, response.text
    assert 'resource_metadata="' in response.headers["www-authenticate"]
    return response.json()["error"]["message"]


def test_oauth_through_localhost_and_bound_to_that_address(server):
    url = server.url.replace("127.0.0.1", "localhost")
    base = url.removesuffix("/mcp")
    answer, storage = _oauth_search(url)
    assert answer.structured_content["results"][0]["memory_id"] == "role"
    resource = httpx2.get(base + "/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == url
    assert [s.rstrip("/") for s in resource["authorization_servers"]] == [base]
    issuer = httpx2.get(base + "/.well-known/oauth-authorization-server").json()
    assert issuer["issuer"].rstrip("/") == base and issuer["token_endpoint"] == base + "/token"
    refused = httpx2.post(url, json={})
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' \
        in refused.headers["www-authenticate"]
    # The token's audience is the address it was issued for.
    token = {"Authorization": f"Bearer {storage.tokens.access_token}"}
    assert httpx2.post(url, json={}, headers=token).status_code != 401
    assert _refusal(httpx2.post(server.url, json={}, headers=token)) == \
        "the token was issued for another server"
    # 127.0.0.1 still gets its own.
    here = httpx2.get(server.base + "/.well-known/oauth-protected-resource/mcp").json()
    assert here["resource"] == server.url


def test_oauth_through_ipv6_loopback(notes_db, tmp_path):
    served = start(notes_db, tmp_path, "--host", "::1")
    try:
        assert served.url.startswith("http://[::1]:")
        answer, _ = _oauth_search(served.url)
        assert answer.structured_content["results"][0]["memory_id"] == "role"
    finally:
        stop(served)


def test_the_resource_metadata_at_the_root_for_earlier_clients(server):
    r = httpx2.get(server.base + "/.well-known/oauth-protected-resource")
    assert r.status_code == 200
    assert r.json()["resource"] == server.url
    r = httpx2.get(server.base + "/.well-known/oauth-protected-resource",
                   headers={"Host": "evil.example"})
    assert r.status_code == 421


def _register(base: str, **extra) -> httpx2.Response:
    return httpx2.post(base + "/register", json={
        "client_name": "Probe", "redirect_uris": [CALLBACK],
        "grant_types": ["authorization_code", "refresh_token"]} | extra)


def test_the_scopes_offered_are_the_namespaces_and_others_are_ignored(server):
    """A client that asks for no scope of ours asks for its own defaults (mcp-remote:
    "openid email profile"): the metadata and the 401 name the namespaces, a scope that
    names none is ignored (the grant reads the default namespace, not an empty one), and
    a client registered for one namespace may ask for another when a 403 names it."""
    for path in ("/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-authorization-server"):  # public: no other's name
        assert httpx2.get(server.base + path).json()["scopes_supported"] == ["notes"]
    assert 'scope="notes"' in httpx2.post(server.url, json={}).headers["www-authenticate"]
    assert 'scope="private"' in httpx2.post(server.url + "?namespace=private", json={}
                                            ).headers["www-authenticate"]
    client = _register(server.base, scope="openid email profile").json()
    pair = _tokens(server.base, client, scope="openid email profile")
    assert pair["scope"] == "notes"
    bearer = {"Authorization": f"Bearer {pair['access_token']}"}
    assert httpx2.post(server.url, json={}, headers=bearer).status_code != 401
    client = _register(server.base).json()  # registered for the default namespace
    assert _tokens(server.base, client, scope="private")["scope"] == "private"
    assert _tokens(server.base, client, scope="private notes")["scope"] == "private notes"


def test_the_consent_page_names_the_command_that_revokes_the_client(server):
    client = _register(server.base).json()
    verifier, challenge = _pkce()
    r = httpx2.get(server.base + "/authorize", params={
        "response_type": "code", "client_id": client["client_id"], "code_challenge":
        challenge, "code_challenge_method": "S256", "redirect_uri": CALLBACK, "state": "s"})
    page = httpx2.get(urljoin(server.base, r.headers["location"])).text
    assert "<code>memory tokens revoke Probe</code>" in page, page
    spaced = _register(server.base, client_name="My Desk Assistant").json()
    r = httpx2.get(server.base + "/authorize", params={
        "response_type": "code", "client_id": spaced["client_id"], "code_challenge":
        challenge, "code_challenge_method": "S256", "redirect_uri": CALLBACK, "state": "s"})
    page = httpx2.get(urljoin(server.base, r.headers["location"])).text
    assert "<code>memory tokens revoke My-Desk-Assistant</code>" in page, page  # as listed


def _basic(client: dict) -> dict:
    pair = f"{client['client_id']}:{client['client_secret']}".encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


def _tokens(base: str, client: dict, redirect: str = CALLBACK, basic: bool = False,
            scope: str | None = None) -> dict:
    """Authorize, consent and exchange the code: the token response. ``basic``: the
    client names itself in the Authorization header alone (RFC 6749 2.3.1)."""
    code, verifier = _code(base, client, redirect, scope)
    form = {"grant_type": "authorization_code", "code": code, "client_id":
            client["client_id"], "redirect_uri": redirect, "code_verifier": verifier}
    headers = {}
    if basic:
        del form["client_id"]
        headers = _basic(client)
    elif client.get("client_secret"):
        form["client_secret"] = client["client_secret"]
    r = httpx2.post(base + "/token", data=form, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def _code(base: str, client: dict, redirect: str = CALLBACK,
          scope: str | None = None) -> tuple[str, str]:
    """Authorize and consent: the code and its PKCE verifier."""
    verifier, challenge = _pkce()
    r = httpx2.get(base + "/authorize", params={
        "response_type": "code", "client_id": client["client_id"], "code_challenge":
        challenge, "code_challenge_method": "S256", "redirect_uri": redirect, "state": "s"}
        | ({"scope": scope} if scope else {}))
    key = parse_qs(urlsplit(r.headers["location"]).query)["request"][0]
    r = httpx2.post(base + "/consent", data={"request": key, "passphrase": PASSPHRASE,
                                              "decision": "allow"})
    assert r.headers["location"].startswith(redirect + "?")
    return parse_qs(urlsplit(r.headers["location"]).query)["code"][0], verifier


def test_token_errors_are_those_of_rfc_6749(server):
    """5.2: a redirect URI other than the authorization request's is invalid_grant, a
    missing one invalid_request; 5.1: a client that did not register the refresh_token
    grant gets no refresh token."""
    client = _register(server.base, token_endpoint_auth_method="none",
                       grant_types=["authorization_code"]).json()
    code, verifier = _code(server.base, client)
    form = {"grant_type": "authorization_code", "code": code,
            "client_id": client["client_id"], "code_verifier": verifier}
    r = httpx2.post(server.base + "/token", data=form | {
        "redirect_uri": "http://127.0.0.1:9/elsewhere"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant", r.text
    assert "not the one the code was issued for" in r.json()["error_description"]
    r = httpx2.post(server.base + "/token", data=form)
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", r.text
    r = httpx2.post(server.base + "/token", data=form | {"redirect_uri": CALLBACK})
    assert r.status_code == 200, r.text
    assert r.json()["access_token"] and "refresh_token" not in r.json(), r.text
    both = _register(server.base, token_endpoint_auth_method="none").json()
    assert _tokens(server.base, both)["refresh_token"]


def test_an_authorization_sent_back_with_an_error_is_logged(server):
    """No PKCE challenge, a plain one, the implicit grant: the client is sent back with
    the OAuth error, and the log says why, as for every other refusal."""
    client = _register(server.base).json()
    base = {"client_id": client["client_id"], "redirect_uri": CALLBACK, "state": "s"}
    _, challenge = _pkce()
    for params in ({"response_type": "code"},
                   {"response_type": "code", "code_challenge": challenge,
                    "code_challenge_method": "plain"},
                   {"response_type": "token", "code_challenge": challenge,
                    "code_challenge_method": "S256"},
                   # no verifier could redeem its code: refused before the consent page
                   {"response_type": "code", "code_challenge": "",
                    "code_challenge_method": "S256"},
                   {"response_type": "code", "code_challenge": "short",
                    "code_challenge_method": "S256"}):
        before = server.log_text().count("refused GET /authorize")
        r = httpx2.get(server.base + "/authorize", params=base | params)
        assert r.status_code in (302, 303) and "error=" in r.headers["location"], r.text
        wait_for(lambda: server.log_text().count("refused GET /authorize") > before,
                 timeout=5, what=f"a log line for {params}")


def test_a_loopback_redirect_may_name_any_port(server):
    """RFC 8252 7.3: a native app registers its loopback callback and listens on whatever
    port is free when it asks."""
    client = _register(server.base, redirect_uris=["http://127.0.0.1/cb"],
                       token_endpoint_auth_method="none").json()
    pair = _tokens(server.base, client, redirect="http://127.0.0.1:5555/cb")
    bearer = {"Authorization": f"Bearer {pair['access_token']}"}
    assert httpx2.post(server.url, json={}, headers=bearer).status_code != 401
    _, challenge = _pkce()
    for other in ("http://127.0.0.1:5555/elsewhere", "http://localhost:5555/cb",
                  "http://127.0.0.1:5555/cb?x=1"):
        r = httpx2.get(server.base + "/authorize", params={
            "response_type": "code", "client_id": client["client_id"], "code_challenge":
            challenge, "code_challenge_method": "S256", "redirect_uri": other})
        assert r.status_code == 400 and "not registered" in r.text, (other, r.text)
    app = _register(server.base, redirect_uris=["https://app.example/cb"],
                    token_endpoint_auth_method="none").json()
    r = httpx2.get(server.base + "/authorize", params={
        "response_type": "code", "client_id": app["client_id"], "code_challenge":
        challenge, "code_challenge_method": "S256",
        "redirect_uri": "https://app.example:8443/cb"})
    assert r.status_code == 400, r.text  # only loopback ports are free


def test_a_client_may_name_itself_in_the_basic_header_alone(server):
    issuer = httpx2.get(server.base + "/.well-known/oauth-authorization-server").json()
    assert {"client_secret_basic", "client_secret_post", "none"} <= \
        set(issuer["token_endpoint_auth_methods_supported"])
    assert "none" in issuer["revocation_endpoint_auth_methods_supported"]
    client = _register(server.base, token_endpoint_auth_method="client_secret_basic").json()
    pair = _tokens(server.base, client, basic=True)
    refresh = {"grant_type": "refresh_token", "refresh_token": pair["refresh_token"]}
    r = httpx2.post(server.base + "/token", headers=_basic(client),
                    data=refresh | {"resource": "https://evil.example/mcp"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_target", r.text
    # this server's other loopback name is not the one the grant is for (RFC 8707 2.2)
    r = httpx2.post(server.base + "/token", headers=_basic(client),
                    data=refresh | {"resource": server.url.replace("127.0.0.1", "localhost")})
    assert r.status_code == 400 and r.json()["error"] == "invalid_target", r.text
    assert "this grant is for " + server.url in r.json()["error_description"]
    wrong = _basic(client | {"client_secret": "not-it"})
    r = httpx2.post(server.base + "/token", data=refresh, headers=wrong)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client", r.text
    assert r.headers["www-authenticate"].startswith("Basic ")  # RFC 6749 5.2
    r = httpx2.post(server.base + "/revoke", data={"token": "x"}, headers=wrong)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Basic ")
    r = httpx2.post(server.base + "/token", data=refresh, headers=_basic(client))
    assert r.status_code == 200, r.text
    other = httpx2.post(server.base + "/token", headers=_basic(client),
                        data={"grant_type": "client_credentials"})
    assert other.status_code == 400, other.text
    assert other.json()["error"] == "unsupported_grant_type", other.text
    bare = httpx2.post(server.base + "/token", headers=_basic(client), data={"scope": "notes"})
    assert bare.json()["error_description"] == "grant_type is required", bare.text
    as_json = httpx2.post(server.base + "/token", headers=_basic(client), json=refresh)
    assert as_json.status_code == 400 and "x-www-form-urlencoded" in as_json.text
    # A client that named no method (RFC 7591's default is Basic) may use either too.
    unnamed = _register(server.base).json()
    assert _tokens(server.base, unnamed, basic=True)["access_token"]
    assert _tokens(server.base, unnamed)["access_token"]  # its secret in the form
    fresh = r.json()["access_token"]
    r = httpx2.post(server.base + "/revoke", data={"token": fresh}, headers=_basic(client))
    assert r.status_code == 200, r.text
    assert _refusal(httpx2.post(server.url, json={}, headers={
        "Authorization": f"Bearer {fresh}"})) == "the token was revoked"


def test_a_public_client_revokes_its_token_as_rfc_7009_says(server):
    client = _register(server.base, token_endpoint_auth_method="none").json()
    assert "client_secret" not in client or client["client_secret"] is None
    pair = _tokens(server.base, client)
    bearer = {"Authorization": f"Bearer {pair['access_token']}"}
    assert httpx2.post(server.url, json={}, headers=bearer).status_code != 401
    r = httpx2.post(server.base + "/revoke", data={"token": pair["access_token"],
                                                    "client_id": client["client_id"]})
    assert r.status_code == 200, r.text
    assert _refusal(httpx2.post(server.url, json={}, headers=bearer)) == \
        "the token was revoked"
    # Another client cannot revoke it, nor anyone without a client id.
    other = _register(server.base, token_endpoint_auth_method="none").json()
    second = _tokens(server.base, other)
    r = httpx2.post(server.base + "/revoke", data={"token": second["access_token"],
                                                    "client_id": client["client_id"]})
    assert r.status_code == 200  # RFC 7009: no telling whose it is
    r = httpx2.post(server.base + "/revoke", data={"token": second["access_token"]})
    assert r.status_code in (400, 401)
    assert httpx2.post(server.url, json={}, headers={
        "Authorization": f"Bearer {second['access_token']}"}).status_code != 401


@pytest.fixture(scope="module")
def registrar(notes_db_made, tmp_path_factory):
    """One server for the redirect URIs below: a refused registration registers nothing,
    so each URI finds the server as it was."""
    tmp = tmp_path_factory.mktemp("registrar")
    served = start(copy_notes(notes_db_made, str(tmp / "memory.db")), tmp)
    try:
        yield served
    finally:
        stop(served)


@pytest.mark.parametrize("uri", [
    "javascript:alert(document.cookie)", "JavaScript://%0aalert(1)", "data:text/html,<b>x",
    "file:///etc/passwd", "vbscript:msgbox(1)", "blob:https://evil.example/uuid",
    "about:blank", "http://127.0.0.1:9/cb#fragment"])
def test_registration_refuses_dangerous_redirect_uris(registrar, uri):
    r = _register(registrar.base, redirect_uris=[uri])
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "invalid_redirect_uri"


def test_registration_refuses_a_grant_type_the_server_does_not_grant(server):
    r = _register(server.base, grant_types=["authorization_code", "client_credentials"])
    assert r.status_code == 400 and r.json()["error"] == "invalid_client_metadata", r.text
    assert "'client_credentials'" in r.json()["error_description"]


def test_registration_keeps_the_redirect_uris_apps_use(server):
    for uri in ("http://127.0.0.1:9/cb", "http://localhost:33418/callback",
                "http://[::1]:5000/cb", "https://app.example.org/oauth/cb",
                "com.example.app:/cb", "cursor://anysphere.cursor-mcp/oauth/callback"):
        r = _register(server.base, redirect_uris=[uri])
        assert r.status_code == 201, (uri, r.text)


def test_client_secrets_are_kept_hashed(server, notes_db):
    client = _register(server.base, token_endpoint_auth_method="client_secret_post").json()
    secret = client["client_secret"]
    assert secret.encode() not in _kept(notes_db)
    pair = _tokens(server.base, client)
    assert pair["access_token"].startswith("pm_at_")
    form = {"grant_type": "refresh_token", "refresh_token": pair["refresh_token"],
            "client_id": client["client_id"]}
    r = httpx2.post(server.base + "/token", data=form | {"client_secret": "0" * 64})
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    r = httpx2.post(server.base + "/token", data=form)
    assert r.status_code == 401
    r = httpx2.post(server.base + "/token", data=form | {"client_secret": secret})
    assert r.status_code == 200, r.text


def test_a_secret_kept_in_clear_by_an_earlier_version_is_hashed_when_opened(notes_db,
                                                                             tmp_path):
    secret = "a" * 64
    info = {"client_id": "old-client", "client_secret": secret, "client_name": "Old",
            "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "client_secret_post",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "scope": "notes", "client_id_issued_at": 1}
    AccessStore.open(notes_db).close()
    conn = apsw.Connection(str(notes_db) + ".access")
    conn.execute("INSERT INTO clients VALUES (?, ?, ?)", ("old-client", json.dumps(info), 1))
    conn.close()
    served = start(notes_db, tmp_path)
    try:
        assert secret.encode() not in _kept(notes_db)
        pair = _tokens(served.base, info)  # the secret still works
        assert pair["access_token"].startswith("pm_at_")
    finally:
        stop(served)


def _consent_key(base: str, client: dict) -> str:
    _, challenge = _pkce()
    r = httpx2.get(base + "/authorize", params={
        "response_type": "code", "client_id": client["client_id"], "code_challenge":
        challenge, "code_challenge_method": "S256", "redirect_uri": CALLBACK})
    return parse_qs(urlsplit(r.headers["location"]).query)["request"][0]


@pytest.mark.parametrize("guesser_address", ["127.0.0.1", "127.0.0.2"])
def test_a_guesser_is_slowed_but_never_holds_up_the_owner(server, guesser_address):
    """A guesser, on the owner's own loopback address or another, has a wrong try waiting
    out its penalty; the owner's right passphrase, sent meanwhile, is answered first."""
    client = _register(server.base, token_endpoint_auth_method="none").json()
    guessing, owning = _consent_key(server.base, client), _consent_key(server.base, client)
    elsewhere = httpx2.HTTPTransport(local_address=guesser_address)
    done: list[str] = []

    def guess(n: int) -> None:
        with httpx2.Client(transport=elsewhere, timeout=120) as web:
            for _ in range(n):
                r = web.post(server.base + "/consent", data={
                    "request": guessing, "passphrase": "not the passphrase",
                    "decision": "allow"})
                assert r.status_code == 403
        done.append("guesser")

    guess(2)  # two wrong tries: the third waits out a longer penalty
    guesser = threading.Thread(target=guess, args=(1,))
    guesser.start()
    time.sleep(0.5)
    r = httpx2.post(server.base + "/consent", data={
        "request": owning, "passphrase": PASSPHRASE, "decision": "allow"}, timeout=120)
    done.append("owner")
    guesser.join()
    assert r.status_code == 302 and "code=" in r.headers["location"]
    assert done == ["guesser", "owner", "guesser"]
    assert server.log_text().count("wrong passphrase") == 3
    assert "refused POST /consent" not in server.log_text()  # each said once, with why


def test_a_consent_request_unknown_or_expired_is_refused_and_logged(server):
    r = httpx2.post(server.base + "/consent", data={
        "request": "no-such-request", "passphrase": PASSPHRASE, "decision": "allow"})
    assert r.status_code == 400 and "unknown or has expired" in r.text
    wait_for(lambda: "consent page: its request is unknown or has expired"
             in server.log_text(), timeout=5, what="the refusal's log line")


def test_a_guesser_gains_nothing_by_sending_from_other_loopback_addresses(server):
    """Any program here may send from any of 127.0.0.0/8: they are one source, whose
    penalty doubles with each wrong try, whichever address it came from."""
    from personal_memory.mcp_server.consent import WRONG_PASSPHRASE_DELAY
    client = _register(server.base, token_endpoint_auth_method="none").json()
    took = []
    for last in (2, 3, 4):
        key = _consent_key(server.base, client)  # a fresh request each time, too
        with httpx2.Client(transport=httpx2.HTTPTransport(local_address=f"127.0.0.{last}"),
                           timeout=120) as web:
            started = time.monotonic()
            r = web.post(server.base + "/consent", data={
                "request": key, "passphrase": "not the passphrase", "decision": "allow"})
            took.append(time.monotonic() - started)
        assert r.status_code == 403
    assert took[2] >= 4 * WRONG_PASSPHRASE_DELAY, took  # its third try: the third penalty


def test_unauthenticated_requests_have_the_burst_the_docs_state(server):
    docs = (ROOT / "docs" / "http.md").read_text()
    found = re.search(r"more than (\d+) a minute from one address without a valid token "
                      r"\(bursts of (\d+)\)", docs)
    assert found, "docs/http.md states the per-address rate and burst"
    burst = int(found.group(2))
    statuses = []
    with httpx2.Client(timeout=10) as web:
        while len(statuses) < 3 * burst and (not statuses or statuses[-1] != 429):
            statuses.append(web.post(server.url, json={}).status_code)
    refused = statuses.count(401)
    assert statuses[-1] == 429
    # The bucket refills at its rate while the loop runs, and the start-up probe used some.
    assert burst - 10 <= refused <= burst + 10, refused


def _doc_script() -> str:
    docs = (ROOT / "docs" / "http.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", docs, re.S)
    return next(b for b in blocks if "notifications/initialized" in b)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed (the "
                    "docs' example is curl commands)")
def test_the_docs_curl_example_works_as_written(server):
    token = server.token("curl-script")
    script = _doc_script()
    script = re.sub(r"^TOKEN=.*$", f"TOKEN={token}", script, flags=re.M)
    script = re.sub(r"^URL=.*$", f"URL={server.url}", script, flags=re.M)
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    data = [json.loads(line[5:]) for line in p.stdout.splitlines()
            if line.startswith("data:")]
    answer = data[-1]["result"]["structuredContent"]
    assert answer["results"][0]["memory_id"] == "role"


def test_an_unsafe_redirect_kept_from_before_is_never_used(server, notes_db):
    """A client registered by an earlier version with a javascript: redirect URI: the
    authorization is refused without sending the browser there."""
    info = {"client_id": "old-js", "client_name": "Old", "token_endpoint_auth_method":
            "none", "redirect_uris": ["javascript:alert(1)", CALLBACK],
            "grant_types": ["authorization_code"], "response_types": ["code"]}
    with AccessStore.open(notes_db) as access:
        access.register_client("old-js", json.dumps(info))
    _, challenge = _pkce()
    query = {"response_type": "code", "client_id": "old-js", "code_challenge": challenge,
             "code_challenge_method": "S256", "state": "s"}
    r = httpx2.get(server.base + "/authorize", params=query | {
        "redirect_uri": "javascript:alert(1)"})
    assert r.status_code == 400 and "location" not in r.headers
    r = httpx2.get(server.base + "/authorize", params=query | {"redirect_uri": CALLBACK})
    assert r.status_code == 302 and "/consent?request=" in r.headers["location"]


def test_a_flood_of_requests_pushes_out_a_guessers_request_before_the_owners(tmp_path):
    """With every pending slot taken, a new request pushes out one that had a wrong try
    before the oldest (the owner's, opened first and still unanswered)."""
    from mcp.server.auth.provider import AuthorizationParams
    from mcp.shared.auth import OAuthClientInformationFull

    from personal_memory.mcp_server.oauth import MAX_PENDING, OwnerAuthorization
    client = OAuthClientInformationFull(client_id="c", redirect_uris=[CALLBACK])
    params = AuthorizationParams(state=None, scopes=None, code_challenge="x" * 43,
                                 redirect_uri=CALLBACK, redirect_uri_provided_explicitly=True)
    with AccessStore.open(tmp_path / "m.db") as access:
        owner = OwnerAuthorization(access, "http://127.0.0.1:1", "notes")

        def key() -> str:
            url = asyncio.run(owner.authorize(client, params))
            return parse_qs(urlsplit(url).query)["request"][0]
        owners = key()
        keys = [key() for _ in range(MAX_PENDING - 1)]
        owner.tries[keys[10]] = 1  # a guesser's request
        key()
        assert owner.pending(owners) is not None and owner.pending(keys[10]) is None
        key()  # no wrong try left anywhere: the oldest goes
        assert owner.pending(owners) is None


@needs_browser
@pytest.mark.parametrize("callback", [CALLBACK, "http://[::1]:9/cb"])
def test_the_owner_allows_a_client_in_a_real_browser(server, browser, callback):
    """The consent page as the owner meets it: a real browser posts the form (its Origin
    header as the browser sets it), and Allow sends it on to the client with a code that
    the client exchanges; Deny says no to the client. An IPv6 loopback callback too (RFC
    8252 7.3), which a page's Content-Security-Policy cannot name by its address."""
    from selenium.webdriver.common.by import By
    CALLBACK = callback  # noqa: N806  (the module's, or the IPv6 one)
    client = _register(server.base, token_endpoint_auth_method="none",
                       redirect_uris=[callback]).json()
    verifier, challenge = _pkce()
    for decision in ("deny", "allow"):
        r = httpx2.get(server.base + "/authorize", params={
            "response_type": "code", "client_id": client["client_id"], "code_challenge":
            challenge, "code_challenge_method": "S256", "redirect_uri": CALLBACK,
            "state": decision})
        browser.get(r.headers["location"] if r.headers["location"].startswith("http")
                    else server.base + r.headers["location"])
        browser.find_element(By.ID, "passphrase").send_keys(PASSPHRASE)
        browser.find_element(By.CSS_SELECTOR, f"button[value={decision}]").click()
        # the callback does not answer (port 9): where the browser was sent is enough
        sent = wait_for(lambda: browser.current_url if browser.current_url.startswith(
            CALLBACK) else None, what="the browser sent on to the client")
        answer = parse_qs(urlsplit(sent).query)
        assert answer["state"] == [decision]
        if decision == "deny":
            assert answer["error"] == ["access_denied"]
    r = httpx2.post(server.base + "/token", data={
        "grant_type": "authorization_code", "code": answer["code"][0], "client_id":
        client["client_id"], "redirect_uri": CALLBACK, "code_verifier": verifier})
    assert r.status_code == 200 and r.json()["access_token"], r.text
