"""``memory serve --http`` as a real process: the SDK's Streamable HTTP client with its
OAuth client provider through the whole flow, static tokens, the same answers as stdio,
and every refusal (tokens, Host and Origin, bodies, floods, OAuth mistakes)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import ssl
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from http_harness import (PASSPHRASE, Browser, Memory, _wait_ready, copy_notes,  # noqa: F401
                          notes_db, notes_db_made, oauth, server, start, stop, with_token)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from personal_memory import MemoryStore
from personal_memory.access.store import AccessStore
from support import MEMORY, run_memory, user_env, wait_for

INSPECTOR = (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
             / "personal-memory-tests" / "inspector-2.12.0" / "node_modules" / ".bin"
             / "mcp-inspector")


def stdio(db: str, mode: str = "legacy") -> Client:
    from mcp.client.stdio import StdioServerParameters
    return Client(StdioServerParameters(command=sys.executable, args=[
        "-m", "personal_memory", "--db", db, "serve"], env=user_env()), mode=mode)


REQUESTS = [
    ("memory_search", {"query": "prefer", "as_of": "2025-02-01"}),
    ("memory_search", {"query": "prefer", "as_of": "2025-06-01", "detail": "full"}),
    ("memory_history", {"memory_id": "role"}),
    ("memory_changes", {"since": "2025-01-01", "until": "2025-04-01"}),
    ("memory_search", {"query": ""}),  # bad arguments: an error, the same on both
    ("memory_read", {"note": "nowhere/none.md"}),
]


async def answers(client: Client) -> list[str]:
    out = []
    async with client as c:
        for name, args in REQUESTS:
            r = await c.call_tool(name, args)
            out.append(json.dumps([r.is_error, [x.text for x in r.content],
                                   r.structured_content], sort_keys=True))
    return out


def test_static_token_sessions_answer_exactly_as_stdio(server, notes_db):
    token = server.token("script")

    async def go():
        alone = await answers(stdio(notes_db))
        together = await asyncio.gather(*(answers(with_token(server.url, token, mode))
                                          for mode in ("legacy", "auto", "legacy", "auto")))
        async with with_token(server.url, token) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
        async with stdio(notes_db) as c:
            local = {t.name: t for t in (await c.list_tools()).tools}
        return alone, together, tools, local

    alone, together, tools, local = asyncio.run(go())
    for each in together:
        assert each == alone
    assert json.loads(alone[0])[2]["results"][0]["snippet"] == "I **prefer** equity research."
    assert json.loads(alone[4])[0] is True  # the bad request is an error, on both
    assert {n: t.model_dump() for n, t in tools.items()} == \
        {n: t.model_dump() for n, t in local.items()}
    assert all(t.annotations.read_only_hint for t in tools.values())


def test_a_token_reads_only_its_namespaces(server):
    private = server.token("private-only", "--namespace", "private")

    async def go(url):
        async with with_token(url, private) as c:
            return await c.call_tool("memory_search", {"query": "prefer"})
    r = asyncio.run(go(server.url))
    assert [x["memory_id"] for x in r.structured_content["results"]] == ["secret"]
    refused = httpx2.post(server.url + "?namespace=notes", json={},
                          headers={"Authorization": f"Bearer {private}"})
    assert refused.status_code == 403
    assert "does not read the namespace 'notes'" in refused.json()["error"]["message"]
    assert 'scope="notes"' in refused.headers["www-authenticate"]

    async def other(url):  # a real client says why, not "Server returned an error"
        async with with_token(url + "?namespace=notes", private) as c:
            await c.call_tool("memory_search", {"query": "prefer"})
    with pytest.raises(Exception) as refusal:
        asyncio.run(other(server.url))
    assert "does not read the namespace 'notes'" in repr(refusal.value), refusal.value
    # A namespace the memory does not hold: no consent could grant it, so it is said.
    typo = httpx2.post(server.url + "?namespace=privat", json={},
                       headers={"Authorization": f"Bearer {private}"})
    assert typo.status_code == 404, typo.text
    assert typo.json()["error"]["message"] == "this memory has no namespace 'privat'"
    assert "www-authenticate" not in typo.headers
    odd = httpx2.post(server.url + "?namespace=a%0d%0aX-Evil:%201", json={},
                      headers={"Authorization": f"Bearer {private}"})
    assert odd.status_code == 404 and "x-evil" not in odd.headers



def test_the_whole_oauth_flow_with_the_sdk_client(server, notes_db):
    browser, storage = Browser(["wrong guess at it", PASSPHRASE]), Memory()

    async def go():
        client = httpx2.AsyncClient(auth=oauth(server.url, browser, storage), timeout=60)
        async with Client(streamable_http_client(server.url, http_client=client)) as c:
            return await c.call_tool("memory_search", {"query": "prefer",
                                                        "as_of": "2025-02-01"})
    r = asyncio.run(go())
    assert r.structured_content["results"][0]["memory_id"] == "role"
    first, wrong, right = browser.pages
    assert "Test assistant" in first.text and "<code>notes</code>" in first.text
    assert first.headers["x-frame-options"] == "DENY"
    assert wrong.status_code == 403 and "not right" in wrong.text
    assert "location" not in wrong.headers and "code=" not in wrong.text
    assert right.status_code == 302
    tokens = storage.tokens
    assert tokens.access_token.startswith("pm_at_") and tokens.refresh_token

    # Refresh: a new pair; the old refresh token is spent, and coming back it ends the grant.
    token_url = server.base + "/token"
    form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token,
            "client_id": storage.client.client_id}
    if storage.client.client_secret:
        form["client_secret"] = storage.client.client_secret
    fresh = httpx2.post(token_url, data=form)
    assert fresh.status_code == 200, fresh.text
    pair = fresh.json()
    assert pair["refresh_token"] != tokens.refresh_token
    ok = httpx2.post(server.url, json={}, headers={
        "Authorization": f"Bearer {pair['access_token']}"})
    assert ok.status_code != 401
    again = httpx2.post(token_url, data=form)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"

    # The grant is listed under the client's name, and revoking it ends every token.
    listed = json.loads(run_memory("--db", notes_db, "--json", "tokens", "list").stdout)
    grant = next(g for g in listed if g["kind"] == "oauth")
    assert grant["name"].startswith("Test-assistant") and grant["state"] == "revoked"
    assert grant["namespaces"] == ["notes"]
    late = httpx2.post(server.url, json={}, headers={
        "Authorization": f"Bearer {pair['access_token']}"})
    assert late.status_code == 401
    assert "revoked" in late.json()["error"]["message"]


def test_revoking_a_client_by_name_stops_it_at_the_next_request(server, notes_db):
    browser, storage, answered = Browser([PASSPHRASE]), Memory(), []

    async def go():
        client = httpx2.AsyncClient(auth=oauth(server.url, browser, storage), timeout=60)
        async with Client(streamable_http_client(server.url, http_client=client)) as c:
            answered.append(await c.call_tool("memory_status", {}))
            browser.passphrases = []  # asked again, the owner does not approve
            revoked = run_memory("--db", notes_db, "tokens", "revoke", "Test-assistant")
            assert revoked.returncode == 0, revoked.stderr
            answered.append(await c.call_tool("memory_status", {}))
    with pytest.raises(BaseException):
        asyncio.run(go())
    assert len(answered) == 1 and not answered[0].is_error
    assert "the token was revoked" in server.log_text()
    refused = httpx2.post(server.url, json={}, headers={
        "Authorization": f"Bearer {storage.tokens.access_token}"})
    assert refused.status_code == 401


def _refusal(response) -> str:
    assert response.status_code == 401, response.text
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer ") and 'resource_metadata="' in header
    return response.json()["error"]["message"]


def test_each_bad_token_is_refused_with_its_reason(server, notes_db):
    url = server.url
    assert _refusal(httpx2.post(url, json={})) == "no bearer token given"
    assert "not a Bearer" in _refusal(httpx2.post(url, json={}, headers={
        "Authorization": "Basic dXNlcjpwYXNz"}))
    assert _refusal(httpx2.post(url, json={}, headers={
        "Authorization": "Bearer not-a-token"})) == "the token is malformed"
    assert _refusal(httpx2.post(url, json={}, headers={
        "Authorization": "Bearer pm_st_" + "A" * 43})) == "the token is unknown"
    soon = server.token("soon", "--expires", "1s")
    time.sleep(1.5)
    assert _refusal(httpx2.post(url, json={}, headers={
        "Authorization": f"Bearer {soon}"})) == "the token expired"
    gone = server.token("gone")
    assert run_memory("--db", notes_db, "tokens", "revoke", "gone").returncode == 0
    assert _refusal(httpx2.post(url, json={}, headers={
        "Authorization": f"Bearer {gone}"})) == "the token was revoked"
    # An access token another server (another URL) was given is not for this one.
    with AccessStore.open(notes_db) as access:
        code = access.issue_code(client_id="elsewhere", client_name="other", namespaces=[
            "notes"], redirect_uri="http://127.0.0.1:9/cb", redirect_uri_explicit=True,
            code_challenge="x" * 43, resource="https://other.example/mcp")
        foreign = access.exchange_code(access.load_code(code, "elsewhere")).access
        assert _refusal(httpx2.post(url, json={}, headers={
            "Authorization": f"Bearer {foreign}"})) == "the token was issued for another server"
        # A code works once; presented again it ends the grant it made (it leaked).
        assert access.load_code(code, "elsewhere") is None
    assert _refusal(httpx2.post(url, json={}, headers={
        "Authorization": f"Bearer {foreign}"})) == "the token was revoked"
    # A refresh token is not an access token.
    assert "not an access token" in _refusal(httpx2.post(url, json={}, headers={
        "Authorization": "Bearer pm_rt_" + "A" * 43}))
    log = server.log_text()
    assert log.count("refused POST /mcp") >= 7


def test_host_origin_body_and_json_rpc_refusals(server):
    token = server.token("checks")
    auth = {"Authorization": f"Bearer {token}"}
    netloc = urlsplit(server.url).netloc
    # DNS rebinding: a page on another name that resolves here.
    r = httpx2.post(server.url, json={}, headers=auth | {"Host": "evil.example"})
    assert r.status_code == 421
    r = httpx2.post(server.url, json={}, headers=auth | {"Origin": "http://evil.example"})
    assert r.status_code == 403 and "may not call" in r.json()["error"]["message"]
    r = httpx2.get(server.base + "/.well-known/oauth-authorization-server",
                   headers={"Host": "evil.example"})
    assert r.status_code == 421
    # No CORS unless configured.
    r = httpx2.options(server.url, headers={"Origin": f"http://{netloc}",
                                            "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in r.headers
    # Bodies are bounded, at /mcp and at the OAuth endpoints.
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * 2_000_000 + b'"}}'
    r = httpx2.post(server.url, content=big, headers=auth | {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    assert r.status_code == 413 and "larger than" in r.json()["error"]["message"]
    r = httpx2.post(server.base + "/register", content=b"{" + b" " * 100_000 + b"}",
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 413

    def chunks():  # no length announced: cut off at the limit all the same
        for _ in range(100):
            yield b" " * 1000
    r = httpx2.post(server.base + "/token", content=chunks(),
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413
    # A malformed JSON-RPC body gets a JSON-RPC error.
    r = httpx2.post(server.url, content=b"{not json", headers=auth | {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32700


def test_a_flood_of_requests_is_slowed_with_retry_after(server):
    token = server.token("flood")
    auth = {"Authorization": f"Bearer {token}"}
    statuses, retry = [], None
    with httpx2.Client(timeout=10) as web:
        for _ in range(200):  # the burst is 120
            r = web.get(server.url, headers=auth)
            statuses.append(r.status_code)
            if r.status_code == 429:
                retry = r.headers["retry-after"]
                break
    assert statuses[-1] == 429 and int(retry) >= 1
    # Other tokens are not slowed by it.
    other = server.token("calm")
    assert httpx2.get(server.url, headers={"Authorization": f"Bearer {other}"}
                      ).status_code != 429
    # Guessing tokens from one address is slowed too.
    with httpx2.Client(timeout=10) as web:
        codes = [web.post(server.url, json={}, headers={
            "Authorization": "Bearer pm_st_" + secrets.token_urlsafe(32)}).status_code
            for _ in range(70)]
    assert codes[0] == 401 and codes[-1] == 429


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()
                                         ).decode().rstrip("=")
    return verifier, challenge


def test_oauth_mistakes_are_refused_and_logged(server):
    base = server.base
    reg = httpx2.post(base + "/register", json={
        "client_name": "Probe", "redirect_uris": ["http://127.0.0.1:9/cb"],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none"})
    assert reg.status_code == 201, reg.text
    client_id = reg.json()["client_id"]
    verifier, challenge = _pkce()
    query = {"response_type": "code", "client_id": client_id, "code_challenge": challenge,
             "code_challenge_method": "S256", "redirect_uri": "http://127.0.0.1:9/cb",
             "state": "s1"}
    # Unknown client, unregistered redirect URI, plain PKCE: refused, no consent page.
    r = httpx2.get(base + "/authorize", params=query | {"client_id": "nobody"})
    assert r.status_code == 400
    r = httpx2.get(base + "/authorize", params=query | {"redirect_uri": "http://127.0.0.1:9/x"})
    assert r.status_code == 400
    r = httpx2.get(base + "/authorize", params=query | {"code_challenge_method": "plain"})
    assert "consent" not in r.headers.get("location", "")
    # A plain-http redirect to another machine cannot even register.
    r = httpx2.post(base + "/register", json={"redirect_uris": ["http://evil.example/cb"]})
    assert r.status_code == 400
    # The right request reaches the consent page; the owner allows.
    r = httpx2.get(base + "/authorize", params=query)
    consent = r.headers["location"]
    key = parse_qs(urlsplit(consent).query)["request"][0]
    r = httpx2.post(base + "/consent", data={"request": key, "passphrase": PASSPHRASE,
                                              "decision": "allow"})
    code = parse_qs(urlsplit(r.headers["location"]).query)["code"][0]
    token = {"grant_type": "authorization_code", "code": code, "client_id": client_id,
             "redirect_uri": "http://127.0.0.1:9/cb"}
    r = httpx2.post(base + "/token", data=token | {"code_verifier": "w" * 50})
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    r = httpx2.post(base + "/token", data=token)
    assert r.status_code == 400  # no verifier at all
    r = httpx2.post(base + "/token", data=token | {"code_verifier": verifier})
    assert r.status_code == 200, r.text
    # The code is spent: used again, it fails and ends the grant it made.
    r2 = httpx2.post(base + "/token", data=token | {"code_verifier": verifier})
    assert r2.status_code == 400
    refused = httpx2.post(server.url, json={}, headers={
        "Authorization": f"Bearer {r.json()['access_token']}"})
    assert refused.status_code == 401
    log = server.log_text()
    assert "refused GET /authorize" in log and "refused POST /token" in log
    assert "incorrect code_verifier" in log


def test_deny_and_an_expired_request_never_give_a_code(server):
    reg = httpx2.post(server.base + "/register", json={
        "client_name": "Probe <b>bold</b>", "redirect_uris": ["http://127.0.0.1:9/cb"],
        "token_endpoint_auth_method": "none"}).json()
    _, challenge = _pkce()
    r = httpx2.get(server.base + "/authorize", params={
        "response_type": "code", "client_id": reg["client_id"], "code_challenge": challenge,
        "code_challenge_method": "S256", "redirect_uri": "http://127.0.0.1:9/cb",
        "state": "s2"})
    consent = r.headers["location"]
    page = httpx2.get(consent)
    assert "Probe &lt;b&gt;bold&lt;/b&gt;" in page.text  # the client's name is escaped
    key = parse_qs(urlsplit(consent).query)["request"][0]
    r = httpx2.post(server.base + "/consent", data={"request": key, "decision": "deny"})
    assert r.status_code == 302
    assert parse_qs(urlsplit(r.headers["location"]).query)["error"] == ["access_denied"]
    r = httpx2.post(server.base + "/consent", data={"request": key, "passphrase": PASSPHRASE,
                                                     "decision": "allow"})
    assert r.status_code == 400 and "location" not in r.headers


def test_the_notes_database_is_not_written(server, notes_db):
    before = hashlib.sha256(Path(notes_db).read_bytes()).hexdigest()
    token = server.token("reader")

    async def go():
        async with with_token(server.url, token) as c:
            for _ in range(3):
                await c.call_tool("memory_search", {"query": "prefer"})
            return await c.call_tool("memory_remember", {"memory_id": "x", "content": "y"})
    assert asyncio.run(go()).is_error  # no such tool over HTTP
    assert hashlib.sha256(Path(notes_db).read_bytes()).hexdigest() == before
    with MemoryStore.open(notes_db, read_only=True, embedder="none") as s:
        assert s.stats().counts.revisions == 3


@pytest.mark.parametrize("args, fragment", [
    (["--host", "0.0.0.0"], "in the clear"),
    (["--host", "0.0.0.0", "--behind-proxy"], "--public-url"),
    (["--behind-proxy", "--public-url", "http://memory.example.org"], "needs https://"),
    (["--tls-cert", "/nonexistent.pem"], "go together"),
    (["--enable-writes"], "nothing is ever writable over HTTP"),
    (["--port", "70000"], "not a port"),
    (["--allow-origin", "example.org"], "not an origin"),
    # a loopback address OAuth takes no plain-HTTP issuer at: refused before it serves
    (["--host", "127.0.0.2", "--port", "0"], "localhost, 127.0.0.1 or ::1 only"),
])
def test_unsafe_or_wrong_options_refuse_to_start(notes_db, args, fragment):
    p = run_memory("--db", notes_db, "serve", "--http", *args, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], p.stderr


def test_tokens_commands(notes_db):
    p = run_memory("--db", notes_db, "tokens", "add", "bad name")
    assert p.returncode == 2 and "not a token name" in p.stderr
    token = run_memory("--db", notes_db, "tokens", "add", "ci", "-n", "notes", "-n",
                       "private", "--expires", "2w").stdout.splitlines()[0]
    assert token.startswith("pm_st_")
    p = run_memory("--db", notes_db, "tokens", "add", "ci")
    assert p.returncode == 2 and "exists" in p.stderr
    listing = run_memory("--db", notes_db, "tokens", "list").stdout
    assert re.search(r"ci\s+token\s+notes,private\s+until ", listing)
    assert token not in listing
    assert token.encode() not in Path(str(notes_db) + ".access").read_bytes()
    assert oct(os.stat(str(notes_db) + ".access").st_mode & 0o777) == "0o600"
    p = run_memory("--db", notes_db, "tokens", "revoke", "nobody")
    assert p.returncode == 2 and "no active token" in p.stderr
    # an expiry past the last time a time can name: refused in one line, nothing stored
    p = run_memory("--db", notes_db, "tokens", "add", "far", "--expires", "99999999d")
    assert p.returncode == 2 and "would expire after 9999-12-31" in p.stderr, p.stderr
    assert "far" not in run_memory("--db", notes_db, "tokens", "list").stdout
    # one an earlier version stored reads as that last time, and can be revoked
    import sqlite3
    with sqlite3.connect(str(notes_db) + ".access") as conn:
        conn.execute("INSERT INTO grants(name, kind, client_id, namespaces, created_at, "
                     "expires_at) VALUES ('old', 'static', 'token:old', '[\"notes\"]', 0, "
                     "8639999999999)")
    p = run_memory("--db", notes_db, "tokens", "list")
    assert p.returncode == 0 and "until 9999-12-31T23:59:59" in p.stdout, p.stderr
    assert run_memory("--db", notes_db, "tokens", "revoke", "old").returncode == 0
    p = run_memory("--db", notes_db, "http", "passphrase", input="short\n")
    assert p.returncode == 2 and "characters" in p.stderr
    stored = Path(str(notes_db) + ".access").read_bytes()
    assert PASSPHRASE.encode() not in stored and b"scrypt$" in stored


def test_a_purge_restarts_the_server_on_the_same_address(server, notes_db):
    token = server.token("after-purge")

    async def search():
        async with with_token(server.url, token) as c:
            return await c.call_tool("memory_search", {"query": "equity",
                                                        "as_of": "2025-02-01"})
    assert asyncio.run(search()).structured_content["count"] == 1
    p = run_memory("--db", notes_db, "purge", "--matching", "equity", "--yes")
    assert p.returncode == 0, p.stderr
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if "a fresh server takes over" in server.log_text():
            break
        time.sleep(0.2)
    _wait_ready(server)
    assert asyncio.run(search()).structured_content["count"] == 0
    assert server.proc.poll() is None


def test_ctrl_c_stops_the_server(notes_db, tmp_path):
    served = start(notes_db, tmp_path)
    served.proc.send_signal(signal.SIGINT)
    assert served.proc.wait(timeout=20) == 0
    with pytest.raises(httpx2.TransportError):
        httpx2.get(served.base + "/.well-known/oauth-authorization-server", timeout=2)


def test_stopping_the_server_ends_open_streams_cleanly(notes_db, tmp_path):
    """A service restart while an assistant listens for changes: the streams end at once
    (the client sees them end), the server exits 0, and the log holds no traceback (it
    waited out its 5 s of graceful shutdown, then cancelled each stream with one)."""
    import threading
    from contextlib import AsyncExitStack

    served = start(notes_db, tmp_path)
    token = served.token("listening")
    opened, ended = threading.Event(), threading.Event()

    async def listen():
        async with with_token(served.url, token, mode="auto") as c, AsyncExitStack() as held:
            for _ in range(3):
                await held.enter_async_context(c.listen(
                    resource_subscriptions=["note://recent"]))
            opened.set()
            await asyncio.sleep(60)

    def client():
        try:
            asyncio.run(listen())
        except BaseException:  # the streams ending may end the client's listens
            pass
        ended.set()
    threading.Thread(target=client, daemon=True).start()
    assert opened.wait(30)
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(timeout=20) == 0
    assert "Traceback" not in served.log_text() and "ASGI" not in served.log_text(), \
        served.log_text()


@pytest.mark.skipif(not INSPECTOR.exists(), reason="the MCP Inspector is not installed "
                    "(scripts/get-inspector.sh installs it from npm; .ci/run does)")
def test_the_mcp_inspector_cli_with_a_static_token(server):
    token = server.token("inspector")
    p = subprocess.run([str(INSPECTOR), "--cli", server.url, "--transport", "http",
                        "--header", f"Authorization: Bearer {token}", "--method",
                        "tools/call", "--tool-name", "memory_search", "--tool-arg",
                        "query=prefer", "--tool-arg", "as_of=2025-02-01"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, HOME=str(Path(server.db).parent)))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["structuredContent"]["results"][0]["snippet"] == "I **prefer** equity research."
    p = subprocess.run([str(INSPECTOR), "--cli", server.url, "--transport", "http",
                        "--method", "tools/list"], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, HOME=str(Path(server.db).parent)))
    assert p.returncode != 0 and "auth_required" in (p.stdout + p.stderr)  # it met a 401


def test_a_listening_client_hears_changes_over_http(server, notes_db, tmp_path):
    import anyio

    from personal_memory.notes.folders import Folder
    token = server.token("listener")
    vault = tmp_path / "vault"
    vault.mkdir()

    async def go():
        async with with_token(server.url, token, mode="auto") as c:
            uri = "note://recent"
            async with c.listen(resource_subscriptions=[uri]) as sub:
                (vault / "fresh.md").write_text("# Fresh\n\na fresh thought\n")
                with MemoryStore.open(notes_db, embedder="none") as writer:
                    writer.sync([Folder.of(vault)])
                with anyio.fail_after(20):
                    async for event in sub:
                        return event
    event = asyncio.run(go())
    assert getattr(event, "uri", None) == "note://recent"


def test_one_token_cannot_hold_every_connection_with_open_streams(server):
    """Each listen is a request that stays open: one token held 1,020 of them and the
    server's every connection. It holds HTTP_OPEN_PER_GRANT at most (the next is refused
    with 429), another token is still served, and a closed stream frees its place."""
    from contextlib import AsyncExitStack

    import anyio
    from personal_memory.limits import HTTP_OPEN_PER_GRANT
    greedy, other = server.token("streams"), server.token("bystander")

    async def go():
        async with with_token(server.url, greedy, mode="auto") as c, AsyncExitStack() as held:
            for _ in range(HTTP_OPEN_PER_GRANT):
                with anyio.fail_after(20):
                    await held.enter_async_context(c.listen(
                        resource_subscriptions=["note://recent"]))
            with pytest.raises(BaseException) as refused:
                with anyio.fail_after(20):
                    async with c.listen(resource_subscriptions=["note://recent"]):
                        pass
            async with with_token(server.url, other, mode="auto") as c2:
                status = await c2.call_tool("memory_status", {})
            await held.aclose()
            # the server frees a place once it sees its stream's connection end: soon
            with anyio.fail_after(20):
                while True:
                    try:
                        async with c.listen(resource_subscriptions=["note://recent"]):
                            break
                    except Exception as exc:  # noqa: BLE001 (the SDK's MCPError, by text)
                        assert "requests or streams open" in str(exc), exc
                        await anyio.sleep(0.2)
            return refused.value, status
    refused, status = asyncio.run(go())
    assert not isinstance(refused, (KeyboardInterrupt, TimeoutError)), refused
    assert not status.is_error
    assert f"{HTTP_OPEN_PER_GRANT} under way (open streams among them)" in server.log_text()


def test_tls_served_directly(notes_db, tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (it makes the test's certificate)")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                    str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    log = tmp_path / "tls.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(MEMORY + ["--db", notes_db, "serve", "--http", "--port", "0",
                                          "--tls-cert", str(cert), "--tls-key", str(key)],
                                stdout=subprocess.DEVNULL, stderr=out, env=user_env())
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"serving MCP at (\S+)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        url = found.group(1)
        assert url.startswith("https://127.0.0.1:")
        base = url.removesuffix("/mcp")
        for _ in range(600):
            try:
                meta = httpx2.get(base + "/.well-known/oauth-authorization-server",
                                  verify=ssl.create_default_context(cafile=str(cert)))
                break
            except httpx2.TransportError:
                time.sleep(0.1)
        assert meta.json()["issuer"] == base
        with pytest.raises(httpx2.TransportError):  # no plain HTTP on the TLS port
            httpx2.get(base.replace("https://", "http://") + "/.well-known/oauth-"
                       "authorization-server", timeout=5).raise_for_status()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_a_code_or_refresh_token_used_twice_ends_its_grant(tmp_path):
    """Even when both uses passed the lookup (two token requests at the same moment):
    one gets tokens, the other nothing, and the grant ends (someone else holds it)."""
    from personal_memory.access.store import TokenRefused
    db = tmp_path / "m.db"
    MemoryStore.open(db, embedder="none").close()
    with AccessStore.open(db) as access:
        def code():
            secret = access.issue_code(client_id="c", client_name="twice",
                                       namespaces=["notes"], resource=None,
                                       redirect_uri="http://127.0.0.1:9/cb",
                                       redirect_uri_explicit=True, code_challenge="x" * 43)
            return access.load_code(secret, "c")
        first = code()
        pair = access.exchange_code(first)
        with pytest.raises(TokenRefused):
            access.exchange_code(first)
        with pytest.raises(TokenRefused, match="revoked"):
            access.check(pair.access)
        second = access.exchange_code(code())
        held = access.load_refresh(second.refresh, "c")
        newer = access.rotate(second.refresh, held)
        with pytest.raises(TokenRefused):
            access.rotate(second.refresh, held)
        with pytest.raises(TokenRefused, match="revoked"):
            access.check(newer.access)
        assert [g.state for g in access.grants()] == ["revoked", "revoked"]


def test_a_revoked_token_hears_no_more_changes(server, notes_db, tmp_path):
    """Revoking a token ends its open stream: the changes written afterwards reach it no
    more, and its next call is refused."""
    import anyio

    from personal_memory.notes.folders import Folder
    token = server.token("listener")
    vault = tmp_path / "vault"
    vault.mkdir()

    async def go():
        heard = []
        async with with_token(server.url, token, mode="auto") as c:
            async with c.listen(resource_subscriptions=["note://recent"]) as sub:
                assert run_memory("--db", notes_db, "tokens", "revoke",
                                  "listener").returncode == 0
                for n in range(3):  # changes, written after the revocation
                    (vault / f"after{n}.md").write_text(f"# After {n}\n\nwords {n}\n")
                    with MemoryStore.open(notes_db, embedder="none") as writer:
                        writer.sync([Folder.of(vault)])
                    await anyio.sleep(1.5)
                with anyio.move_on_after(8):
                    async for event in sub:
                        heard.append(event)
            return heard
    try:
        heard = asyncio.run(go())
    except BaseException as ended:  # the stream ending may end the client's listen
        heard = []
        assert not isinstance(ended, (KeyboardInterrupt, AssertionError)), ended
    # at most what was sent before the first recheck (HTTP_RECHECK_SECONDS) got through
    assert len(heard) <= 1, heard
    refused = httpx2.post(server.url, json={}, headers={"Authorization": f"Bearer {token}"})
    assert refused.status_code == 401 and "revoked" in refused.text
    assert "ended: " in server.log_text()


def test_one_token_cannot_take_every_session(server):
    """A token holds at most HTTP_SESSIONS_PER_GRANT sessions. A client that never ends
    its sessions (a one-shot command line) is not locked out: a new one ends the token's
    least recently used idle session, whose next request gets 404 (start another), and
    the token still holds no more; another token opens its own."""
    from personal_memory.limits import HTTP_SESSIONS_PER_GRANT
    greedy, other = server.token("greedy"), server.token("other")
    opening = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}})
    accept = {"Content-Type": "application/json",
              "Accept": "application/json, text/event-stream"}

    def initialize(token: str):
        return httpx2.post(server.url, content=opening, headers=accept | {
            "Authorization": f"Bearer {token}"}, timeout=30)
    held = [initialize(greedy) for _ in range(HTTP_SESSIONS_PER_GRANT)]
    assert all(r.status_code == 200 for r in held)

    def ping(session):
        return httpx2.post(server.url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                           headers=accept | {"Authorization": f"Bearer {greedy}",
                                             "Mcp-Session-Id": session.headers["mcp-session-id"],
                                             "MCP-Protocol-Version": "2025-06-18"}, timeout=30)
    assert ping(held[0]).status_code == 200  # used lately: held[1] is now the idlest
    more = [initialize(greedy) for _ in range(3)]
    assert all(r.status_code == 200 for r in more), [r.text for r in more]
    assert [ping(r).status_code for r in held[:5]] == [200, 404, 404, 404, 200]
    assert ping(more[-1]).status_code == 200 and initialize(other).status_code == 200
    assert "the least recently used idle one ended" in server.log_text()


def test_a_refused_opening_request_names_no_session(server):
    """A request without a session that the server refuses (no initialize first, or an
    Accept header without JSON) opens none: its answer carries no session id to use."""
    token = server.token("refused")
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for accept in ("application/json, text/event-stream", "text/plain"):
        r = httpx2.post(server.url, json=ping, headers=auth | {"Accept": accept}, timeout=30)
        assert r.status_code >= 400, r.text
        assert "mcp-session-id" not in r.headers, (accept, r.status_code, r.headers)


def test_a_client_is_not_refused_for_how_it_spells_what_it_sends(server):
    """A Host in capitals (host names are case-blind) and a token after two spaces (RFC
    6750's 1*SP) are accepted; a request with no token at all gets a challenge without an
    error code (RFC 6750 3.1)."""
    token = server.token("spelling")
    port = server.base.rsplit(":", 1)[1]
    meta = httpx2.get(server.base + "/.well-known/oauth-protected-resource/mcp",
                      headers={"Host": f"LOCALHOST:{port}"})
    assert meta.status_code == 200 and meta.json()["resource"].startswith("http://localhost")
    r = httpx2.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={"Authorization": f"Bearer  {token}", "Host": f"LOCALHOST:{port}",
                             "Accept": "application/json, text/event-stream"})
    assert r.status_code != 401 and r.status_code != 421, r.text
    bare = httpx2.post(server.url, json={})
    assert bare.status_code == 401
    assert "error=" not in bare.headers["www-authenticate"]
    assert bare.headers["www-authenticate"].startswith('Bearer scope="notes", '
                                                       'resource_metadata=')


def test_a_public_address_with_its_scheme_s_port_is_the_address_without_it(notes_db,
                                                                             tmp_path):
    """``--public-url https://name:443`` is https://name, which is what clients send as
    Host and find in the metadata; the first line names where the proxy must forward."""
    log = tmp_path / "proxied.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(MEMORY + ["--db", notes_db, "serve", "--http", "--port", "0",
                                          "--behind-proxy", "--public-url",
                                          "https://memory.example.org:443"],
                                stdout=subprocess.DEVNULL, stderr=out, env=user_env())
    try:
        found = wait_for(lambda: re.search(r"serving MCP at (\S+) \(the proxy forwards to "
                                           r"(http://127\.0\.0\.1:\d+)\)", log.read_text()),
                         60, what="the first line")
        assert found.group(1) == "https://memory.example.org/mcp"

        def metadata():
            try:
                return httpx2.get(found.group(2) + "/.well-known/oauth-protected-resource/mcp",
                                  headers={"Host": "memory.example.org"}, timeout=2)
            except httpx2.TransportError:
                return None
        meta = wait_for(metadata, 60, what="the server")
        assert meta.status_code == 200, meta.text
        assert meta.json()["resource"] == "https://memory.example.org/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def shapes_server(notes_db_made, tmp_path_factory):
    """One server and token for the bodies below: each is refused before it reaches a
    tool, and leaves the server as it found it."""
    tmp = tmp_path_factory.mktemp("shapes")
    served = start(copy_notes(notes_db_made, str(tmp / "memory.db")), tmp)
    try:
        yield served, served.token("shapes")
    finally:
        stop(served)


@pytest.mark.parametrize("body, says", [
    (b"[]", "one JSON-RPC message, an object"),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', "this server takes no batches"),
    (b"42", "an object"),
    (b'{"id": 1, "method": "ping"}', '"jsonrpc" must be "2.0"'),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', '"method" must be a string'),
    (b'{"jsonrpc": "2.0", "id": 1}', 'names its "method"'),
    (b"[" * 100_000 + b"]" * 100_000, "nests its arrays or objects too deep"),
    # a tool call the SDK refuses as "Invalid request parameters" alone
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}',
     'tools/call needs "name"'),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
     b'"memory_search", "arguments": "wifi"}}', '"arguments" must be an object'),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}',
     '"params" must be an object'),
])
def test_a_body_that_is_no_json_rpc_message_gets_one_line(shapes_server, body, says):
    server, token = shapes_server
    r = httpx2.post(server.url, content=body, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == -32600 and says in error["message"]
    assert "\n" not in error["message"]


def test_an_approval_whose_code_was_never_exchanged_lists_as_unclaimed(tmp_path):
    """The owner approved, the client never came for its tokens: once the code has
    expired the grant lists as unclaimed, not as a device that may read."""
    db = tmp_path / "m.db"
    MemoryStore.open(db, embedder="none").close()
    with AccessStore.open(db) as access:
        def state(name):
            return {g.name: g.state for g in access.grants()}[name]
        for client in ("lost", "kept"):
            access.issue_code(client_id=client, client_name=client, namespaces=["notes"],
                              redirect_uri="http://127.0.0.1:9/cb", redirect_uri_explicit=True,
                              code_challenge="x" * 43, resource=None)
        assert state("lost") == state("kept") == "active"  # the codes are still good
        kept = [g for g in access.grants() if g.name == "kept"][0]
        access._write("UPDATE tokens SET expires_at = 1 WHERE kind = 'code'")
        assert state("lost") == "unclaimed"
        code = access._token(kept.id, "code", None, 2**40, {"redirect_uri": "x", "explicit": True,
                                                          "code_challenge": "x" * 43})
        access.exchange_code(access.load_code(code, "kept"))
        assert state("kept") == "active" and state("lost") == "unclaimed"
    p = run_memory("--db", db, "tokens", "list")
    assert p.returncode == 0 and re.search(r"lost\s+client\s+notes\s+unclaimed", p.stdout), \
        p.stdout
