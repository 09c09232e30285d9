"""Who may do what: bearer tokens with roles (viewer, operator, tool).

- ``viewer`` reads: subscribes to sessions, channels and envelopes.
- ``operator`` reads and acts: prompts, approves and rejects, aborts, answers questions.
- ``tool`` only posts view updates to ``/callback``.

With no token configured the daemon binds loopback only, and every local client acts as the
principal ``local`` with every permission. Tokens are compared in constant time and never
logged: a principal is known by its token's name. Pure.
"""

from __future__ import annotations

import enum
import hmac
from collections.abc import Sequence
from typing import Final

import attrs

__all__ = [
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


class Authenticator:
    def __init__(self, tokens: Sequence[Token]) -> None:
        self._tokens = [(t.secret.encode("utf-8"), t) for t in tokens]

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
