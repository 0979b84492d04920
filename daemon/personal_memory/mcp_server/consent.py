"""The consent page: where the owner sees which client asks to read which namespaces, and
answers with the passphrase (``memory http passphrase``). A wrong passphrase costs its
source (the address it came from) a delay that doubles with each wrong try, and after a
few the request itself; it never yields a code. The tries on one request are taken one
at a time, and a wrong one holds only its own request while it waits out the delay: the
owner's own request (its key is in the owner's browser alone) never waits behind a
guesser's, even from the same address (every local program is on loopback)."""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from urllib.parse import urlsplit

import anyio
from jinja2 import Environment
from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..access.store import grant_name
from .guard import rate_source
from .oauth import MAX_CONSENT_TRIES, OwnerAuthorization

log = logging.getLogger("personal_memory.http")

WRONG_PASSPHRASE_DELAY = 2.0  # seconds, doubled with each wrong try from the same source
MAX_DELAY = 32.0
FORGIVEN_AFTER = 900.0  # seconds without a wrong try: the source starts afresh
MAX_SOURCES = 10_000  # sources remembered; the least recently seen go first
PASSPHRASE_CHECKS = 2  # scrypt checks at once (about 32 MB each)
MAX_FORM_FIELD_CHARS = 2048
_HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY",
            # same-origin, not no-referrer: a browser sends "Origin: null" with a form posted
            # from a page that sends no referrer, which the guard refuses
            "Referrer-Policy": "same-origin", "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
            "form-action 'self'; frame-ancestors 'none'"}

_PAGE = Environment(autoescape=True).from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Allow access to your memory?</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}
code{background:#eee;padding:0 .2em}.error{color:#a00}button{font-size:1rem;margin-right:.5rem}
input{font-size:1rem;width:100%;box-sizing:border-box;margin:.3rem 0 1rem}</style></head>
<body><h1>Allow access to your memory?</h1>
{% if gone %}<p class="error">{{ gone }}</p>{% else %}
<p><strong>{{ client }}</strong> asks to read your notes in
{% for n in namespaces %}<code>{{ n }}</code>{% if not loop.last %}, {% endif %}{% endfor %},
as of any time, through <code>{{ resource }}</code>. It can search and read them; it can
never change them. You can revoke it at any time with
<code>memory tokens revoke {{ grant }}</code> (<code>memory tokens list</code> names every client).</p>
<p>It will come back to <code>{{ redirect }}</code>.</p>
{% if error %}<p class="error" role="alert">{{ error }}</p>{% endif %}
{% if no_passphrase %}<p class="error">No passphrase is set for this memory yet: run
<code>memory http passphrase</code>, then reload this page.</p>{% else %}
<form method="post"><input type="hidden" name="request" value="{{ key }}">
<label for="passphrase">Your passphrase</label>
<input id="passphrase" name="passphrase" type="password" autocomplete="current-password" autofocus>
<button name="decision" value="allow">Allow</button>
<button name="decision" value="deny">Deny</button></form>{% endif %}{% endif %}
</body></html>""")


_SOURCE = re.compile(r"[a-z][a-z0-9+.-]*:(//[a-z0-9.\-:]+)?")


def _csp_source(uri: str) -> str | None:
    """A Content-Security-Policy source for a redirect URI: its origin (``http://127.0.0.1:
    8123``), or its scheme alone for an app's own (``cursor:``); None if it cannot be
    written as one."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    # CSP's host sources cannot name an IPv6 address (Chromium drops http://[::1]:8123 as
    # invalid, and the redirect to it is blocked): its scheme alone, for those.
    source = f"{scheme}://{parts.netloc.lower()}" if scheme in ("http", "https") \
        and "[" not in parts.netloc else f"{scheme}:"
    return source if _SOURCE.fullmatch(source) else None


class Source:
    """Where answers come from: its wrong tries, and when the last one came."""

    def __init__(self):
        self.wrong = 0
        self.last = 0.0


class Consent:
    def __init__(self, owner: OwnerAuthorization):
        self.owner = owner
        self._sources: OrderedDict[str, Source] = OrderedDict()
        self._checks = anyio.CapacityLimiter(PASSPHRASE_CHECKS)
        self._requests: dict[str, anyio.Lock] = {}  # a pending request's tries, in turn

    def _source(self, address: str) -> Source:
        source = self._sources.pop(address, None) or Source()
        self._sources[address] = source
        while len(self._sources) > MAX_SOURCES:
            self._sources.popitem(last=False)
        return source

    def _turn(self, key: str) -> anyio.Lock:
        """The lock of one pending request (the locks of requests gone are dropped)."""
        for old in [k for k, lock in self._requests.items()
                    if not lock.locked() and self.owner.pending(k) is None]:
            del self._requests[old]
        return self._requests.setdefault(key, anyio.Lock())

    def _page(self, key: str, status: int = 200, error: str | None = None,
              gone: str | None = None) -> Response:
        held = self.owner.pending(key) if not gone else None
        if held is None and not gone:
            gone = ("This request is unknown or has expired. Start again from the "
                    "assistant.")
            status = 400
            log.warning("refused the consent page: its request is unknown or has expired")
        context = {"gone": gone, "error": error, "key": key}
        if held is not None:
            context |= {"client": held.client.client_name or held.client.client_id,
                        "grant": grant_name(held.client.client_name or "client"),
                        "namespaces": held.namespaces,
                        "resource": held.resource,
                        "redirect": str(held.params.redirect_uri),
                        "no_passphrase": not self.owner.store.has_passphrase()}
        headers = _HEADERS
        if held is not None:  # the answer is a redirect to the client, which the form may
            # follow only if the policy names it (browsers check form-action on redirects)
            to = _csp_source(str(held.params.redirect_uri))
            if to:
                headers = _HEADERS | {"Content-Security-Policy": _HEADERS[
                    "Content-Security-Policy"].replace("form-action 'self'",
                                                       f"form-action 'self' {to}")}
        return HTMLResponse(_PAGE.render(**context), status_code=status, headers=headers)

    async def show(self, request: Request) -> Response:
        return self._page(request.query_params.get("request", "")[:MAX_FORM_FIELD_CHARS])

    async def answer(self, request: Request) -> Response:
        form = await request.form(max_files=0, max_fields=8)
        key = str(form.get("request", ""))[:MAX_FORM_FIELD_CHARS]
        passphrase = str(form.get("passphrase", ""))[:MAX_FORM_FIELD_CHARS]
        held = self.owner.pending(key)
        if held is None:
            return self._page(key)
        if form.get("decision") == "deny":
            self.owner.forget(key)
            log.info("the owner denied %r", held.client.client_name)
            return self._redirect(str(held.params.redirect_uri), error="access_denied",
                                  state=held.params.state)
        address = request.client.host if request.client else "?"
        source = self._source(rate_source(address))
        async with self._turn(key):  # this request's tries, one at a time
            if time.monotonic() - source.last > FORGIVEN_AFTER:
                source.wrong = 0
            async with self._checks:
                good = await anyio.to_thread.run_sync(self.owner.store.passphrase_matches,
                                                      passphrase)
            if not good:
                tries = self.owner.tries[key] = self.owner.tries.get(key, 0) + 1
                source.wrong, source.last = source.wrong + 1, time.monotonic()
                log.warning("wrong passphrase on the consent page for %r from %s (try %d)",
                            held.client.client_name, address, source.wrong)
                # held while it waits: the next try on this request waits too
                await anyio.sleep(min(MAX_DELAY,
                                      WRONG_PASSPHRASE_DELAY * 2 ** (source.wrong - 1)))
        if not good:
            if tries >= MAX_CONSENT_TRIES:
                self.owner.forget(key)
                return self._page(key, 403, gone="Too many wrong passphrases: this request "
                                  "is cancelled. Start again from the assistant.")
            return self._page(key, 403, error="That passphrase is not right. Try again.")
        if self.owner.pending(key) is None:  # answered or expired meanwhile
            return self._page(key)
        code = self.owner.approve(key)
        log.info("the owner allowed %r to read %s", held.client.client_name,
                 ", ".join(held.namespaces))
        return self._redirect(str(held.params.redirect_uri), code=code,
                              state=held.params.state)

    @staticmethod
    def _redirect(uri: str, **params: str | None) -> Response:
        return RedirectResponse(construct_redirect_uri(uri, **params), status_code=302,
                                headers={"Cache-Control": "no-store"})
