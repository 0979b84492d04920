"""The HTTP server as a real process for the tests: starting and stopping it, a static
token's client, and the owner at the consent page with the SDK's OAuth client."""

from __future__ import annotations

import asyncio
import re
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from personal_memory import MemoryStore
from support import MEMORY, run_memory, user_env

PASSPHRASE = "correct horse battery staple"


def remember_roles(store) -> None:
    """The two revisions of "role" the MCP tests ask about (test_mcp_http.REQUESTS)."""
    store.remember("role", "I prefer equity research.", namespace="notes",
                   known_at="2025-01-10", source="journal.md")
    store.remember("role", "I now prefer quantitative trading.", namespace="notes",
                   known_at="2025-03-15", source="journal.md")


@pytest.fixture(scope="module")
def notes_db_made(tmp_path_factory):
    """The notes and the owner's passphrase, set as a user sets it, once for a test file:
    the passphrase's slow hash in a process of its own takes a second or two."""
    db = str(tmp_path_factory.mktemp("notes") / "memory.db")
    with MemoryStore.open(db, embedder="none") as s:
        s.remember("secret", "the private plan to prefer", namespace="private",
                   known_at="2025-01-01")
        remember_roles(s)
    assert run_memory("--db", db, "http", "passphrase", input=PASSPHRASE + "\n"
                      ).returncode == 0
    return db


def copy_notes(made: str, db: str) -> str:
    """A copy of the notes database ``made`` and its access file, at ``db``."""
    made = Path(made)
    for file in made.parent.glob(made.name + "*"):  # the database and memory.db.access
        shutil.copy2(file, db + file.name[len(made.name):])
    return db


@pytest.fixture
def notes_db(notes_db_made, db_path):
    """Each test's own copy of the notes and their access file: what its clients register,
    grant or revoke is no other test's."""
    return copy_notes(notes_db_made, db_path)


class Served:
    def __init__(self, proc: subprocess.Popen, log: Path, url: str, db: str):
        self.proc, self.log, self.url, self.db = proc, log, url, db
        self.base = url.removesuffix("/mcp")

    def token(self, name: str, *extra: str) -> str:
        p = run_memory("--db", self.db, "tokens", "add", name, *extra)
        assert p.returncode == 0, p.stderr
        return p.stdout.splitlines()[0]

    def log_text(self) -> str:
        return self.log.read_text()


def start(db: str, tmp_path: Path, *extra: str, env=None) -> Served:
    log = tmp_path / f"serve-{secrets.token_hex(3)}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(MEMORY + ["--db", db, "serve", "--http", "--port", "0",
                                          *extra], stdout=subprocess.DEVNULL, stderr=out,
                                env=user_env(env))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"serving MCP at (\S+)", log.read_text())
        if found:
            served = Served(proc, log, found.group(1), db)
            _wait_ready(served)
            return served
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text()}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the server did not start: " + log.read_text())


def _wait_ready(served: Served) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx2.get(served.base + "/.well-known/oauth-authorization-server",
                          timeout=2).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("the server does not answer: " + served.log_text())


def stop(served: Served) -> None:
    if served.proc.poll() is None:
        served.proc.send_signal(signal.SIGTERM)
        try:
            served.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            served.proc.kill()
            raise


@pytest.fixture
def server(notes_db, tmp_path):
    served = start(notes_db, tmp_path)
    yield served
    stop(served)


def with_token(url: str, token: str, mode: str = "legacy") -> Client:
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=client), mode=mode)




class Browser:
    """The owner at the consent page: follows the client's authorization URL, answers with
    a passphrase, and hands the code back to the client."""

    def __init__(self, passphrases: list[str]):
        self.passphrases = passphrases
        self.pages: list[httpx2.Response] = []
        self.code: asyncio.Future | None = None

    async def redirect(self, url: str) -> None:
        self.code = asyncio.get_running_loop().create_future()
        async with httpx2.AsyncClient(follow_redirects=False, timeout=60) as web:
            page = await web.get(url)
            assert page.status_code == 302, page.text
            consent = page.headers["location"]
            page = await web.get(consent)
            self.pages.append(page)
            key = parse_qs(urlsplit(consent).query)["request"][0]
            for phrase in self.passphrases:
                answer = await web.post(consent.split("?")[0], data={
                    "request": key, "passphrase": phrase, "decision": "allow"},
                    headers={"Origin": f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"})
                self.pages.append(answer)
                if answer.status_code == 302:
                    query = parse_qs(urlsplit(answer.headers["location"]).query)
                    self.code.set_result(AuthorizationCodeResult(
                        code=query["code"][0], state=query.get("state", [None])[0]))
                    return
        self.code.set_exception(AssertionError("no code"))

    async def callback(self) -> AuthorizationCodeResult:
        return await self.code


class Memory:
    """The client's token storage."""

    def __init__(self):
        self.tokens = self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        self.client = info


def oauth(url: str, browser: Browser, storage: Memory) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=url, storage=storage, redirect_handler=browser.redirect,
        callback_handler=browser.callback,
        client_metadata=OAuthClientMetadata(client_name="Test assistant",
                                            redirect_uris=["http://127.0.0.1:9/callback"],
                                            grant_types=["authorization_code",
                                                         "refresh_token"]))

