"""Who may do what: bearer tokens with roles (viewer, operator, tool).

- ``viewer`` reads: subscribes to sessions, channels and envelopes.
- ``operator`` reads and acts: prompts, approves and rejects, aborts, answers questions.
- ``tool`` only posts view updates to ``/callback``.

With no token configured the daemon binds loopback only, and every local client acts as the
principal ``local`` with every permission. Tokens are compared in constant time and never
logged: a principal is known by its token's name.

The web view signs in once per browser: the token is posted once. The browser is given a
cookie that is not the token but a credential derived from it. The credential holds the token's
name, an expiry, and an HMAC of both keyed by the token's secret. So the token is never stored
by the page or put in a URL. A cookie lasts :data:`COOKIE_LIFETIME`, survives a daemon restart,
and stops working when its token is removed or changed in the config. Pure
(the caller says what time it is).
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
from collections.abc import Sequence
from typing import Final

import attrs

__all__ = [
    "COOKIE_LIFETIME",
    "COOKIE_NAME",
    "LOCAL",
    "Authenticator",
    "Permission",
    "Role",
    "Token",
]


class Role(enum.StrEnum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    TOOL = "tool"


class Permission(enum.StrEnum):
    READ = "read"
    OPERATE = "operate"
    CALLBACK = "callback"


_GRANTS: Final = {
    Role.VIEWER: frozenset({Permission.READ}),
    Role.OPERATOR: frozenset({Permission.READ, Permission.OPERATE}),
    Role.TOOL: frozenset({Permission.CALLBACK}),
}


@attrs.frozen(kw_only=True)
class Token:
    name: str
    role: Role
    secret: str = attrs.field(repr=False)  # never in a repr, a log line or an error


@attrs.frozen(kw_only=True)
class Principal:
    """An authenticated client: its token's name and what it may do."""

    name: str
    permissions: frozenset[Permission]

    def may(self, permission: Permission) -> bool:
        return permission in self.permissions


#: Every client when no token is configured (the daemon then listens on loopback only).
LOCAL: Final = Principal(name="local", permissions=frozenset(Permission))


#: The web view's sign-in cookie.
COOKIE_NAME: Final = "orchestrator_session"
#: Seconds a sign-in lasts: a browser signs in again after a month.
COOKIE_LIFETIME: Final = 30 * 24 * 3600
_COOKIE_VERSION: Final = "v1"
_COOKIE_PURPOSE: Final = b"orchestrator web sign-in\x00"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Authenticator:
    def __init__(self, tokens: Sequence[Token]) -> None:
        self._tokens = [(t.secret.encode("utf-8"), t) for t in tokens]
        self._by_name = {t.name: t for t in tokens}

    def sign_in_cookie(self, principal: Principal, *, now: float) -> str:
        """The cookie value that stands for ``principal`` (a token's holder) until
        ``now`` + :data:`COOKIE_LIFETIME`. Not the token: an HMAC keyed by it."""
        expires = int(now) + COOKIE_LIFETIME
        name = _b64(principal.name.encode("utf-8"))
        token = self._by_name[principal.name]
        return f"{_COOKIE_VERSION}.{name}.{expires}.{_b64(self._mac(token, name, expires))}"

    def from_cookie(self, value: str | None, *, now: float) -> Principal | None:
        """The principal a sign-in cookie stands for; None if it is malformed, expired, or
        its token is no longer configured as it was."""
        if self.open:
            return LOCAL
        if not value:
            return None
        version, _, rest = value.partition(".")
        name, _, rest = rest.partition(".")
        expires_text, _, mac_text = rest.partition(".")
        if version != _COOKIE_VERSION or not expires_text.isdigit() or len(expires_text) > 12:
            return None
        expires = int(expires_text)
        try:
            token = self._by_name.get(_unb64(name).decode("utf-8"))
            mac = _unb64(mac_text)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        if token is None or expires <= now:
            return None
        if not hmac.compare_digest(mac, self._mac(token, name, expires)):
            return None
        return Principal(name=token.name, permissions=_GRANTS[token.role])

    @staticmethod
    def _mac(token: Token, name: str, expires: int) -> bytes:
        message = _COOKIE_PURPOSE + f"{name}.{expires}".encode("ascii")
        return hmac.new(token.secret.encode("utf-8"), message, hashlib.sha256).digest()

    @property
    def open(self) -> bool:
        """No tokens: every client is :data:`LOCAL`."""
        return not self._tokens

    def authenticate(
        self, authorization: str | None, query_token: str | None = None
    ) -> Principal | None:
        """The principal an ``Authorization: Bearer`` header (or, for browser WebSockets,
        which cannot set headers, a ``token`` query parameter) names; None if none does."""
        if self.open:
            return LOCAL
        presented = None
        if authorization is not None:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() == "bearer" and value.strip():
                presented = value.strip()
        if presented is None:
            presented = query_token
        if not presented:
            return None
        candidate = presented.encode("utf-8")
        found: Token | None = None
        for secret, token in self._tokens:
            # Compare with every token, whatever matched: the time taken says nothing.
            if hmac.compare_digest(secret, candidate):
                found = token
        if found is None:
            return None
        return Principal(name=found.name, permissions=_GRANTS[found.role])
