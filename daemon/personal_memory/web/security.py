"""What stands between the page and everything else on the machine: only the loopback
address and port as Host (a web page elsewhere cannot rebind a name to us), only requests
that carry this run's secret (in the URL once, then in a cookie: the address with it is
answered by a redirect to the same page without it, so the secret stays out of the address
bar and the browser's history), no cross-origin access, and a Content-Security-Policy that
lets no note run script or load from elsewhere."""

from __future__ import annotations

import hmac
import time
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, quote, unquote_plus

# Browsers keep cookies per host, not per port: each page's cookie is named after its
# port, so a second `memory ui` on the machine does not overwrite the first one's secret.
COOKIE = "pm_ui_{port}"
HEADERS = [
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     b"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class Guard:
    """ASGI middleware: refuse (403) a foreign Host or a request without the secret; on
    the first request with ``?token=`` set the cookie; add the safety headers and the
    time the page took (Server-Timing)."""

    def __init__(self, app, token: str, port: int):
        self.app = app
        self.token = token
        self.cookie = COOKIE.format(port=port)
        self.hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        headers = dict(scope.get("headers", []))
        if headers.get(b"host", b"").lower() not in self.hosts:  # names are case-blind
            return await _refuse(send, "this page answers on its loopback address only")
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0]
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get(b"cookie", b"").decode("latin-1"))
        except CookieError:  # a malformed Cookie header holds no secret
            cookie = SimpleCookie()
        held = cookie[self.cookie].value if self.cookie in cookie else ""
        by_url, by_cookie = self._matches(given), self._matches(held)
        if not (by_url or by_cookie):
            return await _refuse(send, "open the address memory ui printed (it holds this "
                                 "run's secret)")
        set_cookie = by_url and not by_cookie
        if by_url and scope.get("method") in ("GET", "HEAD"):
            return await _redirect(send, _without_token(scope), self._cookie())

        async def guarded(message):
            if message["type"] == "http.response.start":
                # the page's own time (benchmarks/ui.py reads it; so can the browser)
                spent = (time.perf_counter() - started) * 1000
                extra = [*HEADERS, (b"server-timing", f"app;dur={spent:.1f}".encode())]
                if set_cookie:
                    extra.append((b"set-cookie", self._cookie()))
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)
        return await self.app(scope, receive, guarded)


    def _cookie(self) -> bytes:
        return (f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict").encode()

    def _matches(self, given: str) -> bool:
        """``given`` is this run's secret (compared as bytes: any text may come in)."""
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"),
                                   self.token.encode())


def _without_token(scope) -> bytes:
    """The request's path and query as they came, without ``token``; always a path of this
    page (``//host/`` would send the browser elsewhere, and so would ``/\\host/``: browsers
    read a backslash as a slash)."""
    raw_path = scope.get("raw_path") or quote(scope.get("path") or "/").encode()
    path = b"/" + raw_path.replace(b"\\", b"%5C").lstrip(b"/")
    raw = scope.get("query_string", b"").split(b"&")
    rest = b"&".join(p for p in raw if p and unquote_plus(
        p.split(b"=", 1)[0].decode("latin-1")) != "token")  # as parse_qs reads the key
    return path + (b"?" + rest if rest else b"")


async def _redirect(send, location: bytes, cookie: bytes) -> None:
    """303 to ``location`` with the secret's cookie (the browser keeps it for the page)."""
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location),
                            (b"content-length", b"0"), (b"set-cookie", cookie), *HEADERS]})
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send, why: str) -> None:
    body = f"403 Forbidden: {why}\n".encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *HEADERS]})
    await send({"type": "http.response.body", "body": body})
