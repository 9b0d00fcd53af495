"""Security defaults for every route: an optional bearer token and a request body size limit.

Both are plain ASGI middleware so streaming responses (watches, SSE) pass through untouched.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kss_sim.cluster.api.responses import error_response
from kss_sim.cluster.errors import RequestEntityTooLarge, Unauthorized

# Probes stay open so orchestrators can check a protected server (kube-apiserver allows them anonymously too).
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/livez"})
TOKEN_COOKIE = "kss_token"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


class TokenAuthMiddleware:
    """With a token set, every request but the probes needs ``Authorization: Bearer <token>`` (401 otherwise).

    A browser cannot add that header, so the web UI also accepts the ``kss_token`` cookie, which opening any
    page once with ``?token=<token>`` sets (the redirect drops the token from the address bar and history).
    """

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token or None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if _same(headers.get("authorization", ""), f"Bearer {self.token}"):
            await self.app(scope, receive, send)
            return
        cookie = SimpleCookie()
        cookie.load(headers.get("cookie", ""))
        if TOKEN_COOKIE in cookie and _same(cookie[TOKEN_COOKIE].value, self.token):
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if scope["type"] == "http" and scope["method"] == "GET" and given and _same(given[0], self.token):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            redirect = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), status_code=303)
            redirect.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
            await redirect(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        response = error_response(Unauthorized("Unauthorized"))
        response.headers["www-authenticate"] = 'Bearer realm="kss"'
        await response(scope, receive, send)


class BodyLimitMiddleware:
    """Refuse request bodies above the limit with a 413 Status, whether or not Content-Length is given."""

    def __init__(self, app: ASGIApp, limit: int, limit_for: Callable[[str], int | None] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        limit = (self.limit_for(scope["path"]) if self.limit_for else None) or self.limit
        length = Headers(scope=scope).get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await error_response(RequestEntityTooLarge(limit))(scope, receive, send)
            return
        size = 0

        async def counted() -> Message:
            nonlocal size
            message = await receive()
            if message["type"] == "http.request":
                size += len(message.get("body", b""))
                if size > limit:
                    # An ApiError: the application's handler answers it with the 413 Status.
                    raise RequestEntityTooLarge(limit)
            return message

        await self.app(scope, counted, send)
