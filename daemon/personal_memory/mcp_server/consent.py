"""The consent page: where the owner sees which client asks to read which namespaces, and
answers with the passphrase (``memory http passphrase``). A wrong passphrase costs a
delay (tries are taken one at a time, so guessing is slow from everywhere at once) and,
after a few, the request itself; it never yields a code."""

from __future__ import annotations

import logging

import anyio
from jinja2 import Environment
from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from .oauth import MAX_CONSENT_TRIES, OwnerAuthorization

log = logging.getLogger("personal_memory.http")

WRONG_PASSPHRASE_DELAY = 2.0  # seconds, doubled with each wrong try on the same request
MAX_FORM_FIELD_CHARS = 2048
_HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
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
never change them. You can revoke it at any time with <code>memory tokens revoke</code>.</p>
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


class Consent:
    def __init__(self, owner: OwnerAuthorization):
        self.owner = owner
        self._one_try_at_a_time = anyio.Lock()

    def _page(self, key: str, status: int = 200, error: str | None = None,
              gone: str | None = None) -> Response:
        held = self.owner.pending(key) if not gone else None
        if held is None and not gone:
            gone = ("This request is unknown or has expired. Start again from the "
                    "assistant.")
            status = 400
        context = {"gone": gone, "error": error, "key": key}
        if held is not None:
            context |= {"client": held.client.client_name or held.client.client_id,
                        "namespaces": held.namespaces,
                        "resource": held.params.resource or self.owner.resource_url,
                        "redirect": str(held.params.redirect_uri),
                        "no_passphrase": not self.owner.store.has_passphrase()}
        return HTMLResponse(_PAGE.render(**context), status_code=status, headers=_HEADERS)

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
        async with self._one_try_at_a_time:
            good = await anyio.to_thread.run_sync(self.owner.store.passphrase_matches,
                                                  passphrase)
            if not good:
                tries = self.owner.tries[key] = self.owner.tries.get(key, 0) + 1
                log.warning("wrong passphrase on the consent page for %r (try %d)",
                            held.client.client_name, tries)
                await anyio.sleep(WRONG_PASSPHRASE_DELAY * 2 ** (tries - 1))
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
