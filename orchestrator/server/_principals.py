"""Who a request or WebSocket handshake comes from: a bearer token, the web view's sign-in
cookie, or (with no tokens configured) the loopback principal ``local``.

A bearer token (``Authorization`` header, or ``?token=`` for a WebSocket that cannot set
headers) is taken wherever the request comes from: its holder chose to send it. What a
browser sends on its own is not: the sign-in cookie, and the mere fact of reaching a daemon
with no tokens on loopback. Either counts only for a request from the daemon's own page. A
request whose ``Origin`` header names another site is refused. So a page on any other origin
cannot use a signed-in browser (cross-site request forgery, cross-site WebSocket hijacking).
Nor can it drive a token-less daemon on the user's machine (a DNS-rebinding page presents its
own name as the origin). With no tokens, pages on other loopback origins (a UI under
development on ``localhost:5173``) are let in: they are inside the trust boundary already.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from ._auth import COOKIE_NAME, LOCAL, Authenticator, Permission, Principal
from ._config import is_loopback

__all__ = ["AccessRefusedError", "Principals"]


class AccessRefusedError(Exception):
    """A request refused for who sends it: 401 (no credential this daemon accepts) or 403
    (another site's page, or a principal without the permission); what to tell the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Principals:
    def __init__(self, auth: Authenticator, *, clock: Callable[[], float] = time.time) -> None:
        self.auth = auth
        self._clock = clock

    def of(self, connection: HTTPConnection) -> Principal | None:
        """The principal of ``connection``; None if it brings no credential this daemon
        accepts (or brings a cookie from a page of another origin)."""
        authorization = connection.headers.get("authorization")
        query_token = connection.query_params.get("token")
        if self._bearer(connection):
            return self.auth.authenticate(authorization, query_token)
        if self.cross_origin(connection):
            return None
        if self.auth.open:
            return LOCAL
        return self.auth.from_cookie(connection.cookies.get(COOKIE_NAME), now=self._clock())

    def require(
        self, connection: HTTPConnection, permission: Permission, *, sign_in: str
    ) -> Principal:
        """The principal of ``connection`` if it may ``permission``; else
        :class:`AccessRefusedError` (``sign_in``: how this route's clients present a credential,
        said with the 401)."""
        if self.foreign(connection):
            raise AccessRefusedError(403, "a request from another site's page is refused")
        principal = self.of(connection)
        if principal is None:
            raise AccessRefusedError(401, sign_in)
        if not principal.may(permission):
            raise AccessRefusedError(403, f"this token may not {permission}")
        return principal

    def _bearer(self, connection: HTTPConnection) -> bool:
        """Whether ``connection`` brings a token of its own (with tokens configured)."""
        return not self.auth.open and (
            "authorization" in connection.headers or "token" in connection.query_params
        )

    def foreign(self, connection: HTTPConnection) -> bool:
        """Whether ``connection`` is to be refused for its origin: it comes from a page of
        another site and would act on what the browser sends by itself (a cookie, or the
        daemon's openness), not on a token it brings."""
        return not self._bearer(connection) and self.cross_origin(connection)

    def cross_origin(self, connection: HTTPConnection) -> bool:
        """Whether ``connection`` comes from a browser page of another origin than this
        daemon (no ``Origin`` header: not a browser's cross-origin request)."""
        origin = connection.headers.get("origin")
        if origin is None:
            return False
        try:
            parts = urlsplit(origin)
            origin_host = parts.hostname
            origin_port = parts.port
        except ValueError:
            return True
        if origin_host is None:
            return True  # "null": a sandboxed frame or a file: page
        if self.auth.open and is_loopback(origin_host.strip("[]")):
            return False
        host = connection.headers.get("host", "")
        try:
            served = urlsplit(f"//{host}")
            served_host, served_port = served.hostname, served.port
        except ValueError:
            return True
        # The scheme is left out: behind a TLS proxy the page is https and the request http.
        return (origin_host, origin_port) != (served_host, served_port)
