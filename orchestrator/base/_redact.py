"""Secrets out of every line the project writes: the exact values registered (the daemon's
tokens, the model backends' API keys) and what looks like a credential wherever it is.

Pure: a function of the text and the registered values (process-global, as logging is), so
the command line can redact its own lines without loading the logging libraries.
"""

from __future__ import annotations

import json as jsonlib
import re
import threading
from typing import Final

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "SENSITIVE_HEADERS",
    "SENSITIVE_KEYS",
    "forget_secrets",
    "redact_text",
    "register_secret",
    "registered_secrets",
]

#: Registered secrets shorter than this are not redacted: redacting a short word everywhere
#: garbles every line, and such a value protects nothing (a local server's placeholder key
#: such as ``ollama``). The daemon's tokens have at least 16 characters.
MIN_SECRET_CHARS: Final = 8

REDACTED: Final = "[redacted]"

#: Header names whose value is never shown, in a mapping or an ASGI ``(name, value)`` pair.
SENSITIVE_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"}
)
#: Keys of a mapping whose value is never shown, whatever it looks like (in lower case).
SENSITIVE_KEYS: Final = SENSITIVE_HEADERS | {
    "api_key",
    "api-key",
    "apikey",
    "password",
    "secret",
    "token",
    "access_token",
}

# A credential's characters: anything but blanks, quotes, separators and closing brackets,
# so the match ends where a repr, a header or a URL puts the next thing. Never "[", so the
# marker itself is not redacted again.
_CRED: Final = r"""[^\s'"\\,;)\]}>\[]+"""
_PATTERNS: Final = re.compile(
    rf"""
    # "Authorization: ...", "authorization=...", {{'authorization': '...'}}
      (?P<header>\b(?:proxy-)?authorization\b['"]?\s*[:=]\s*(?:b?['"])?)(?!\[)[^'"\r\n]+
    # an ASGI header pair: (b'authorization', b'Bearer ...')
    | (?P<pair>\b(?:proxy-)?authorization['"]\s*,\s*b?['"])(?!\[)[^'"\r\n]+
    # a credential after its scheme, wherever it is
    | (?P<scheme>\bbearer\s+|\b(?-i:Basic)\s+){_CRED}
    # a token or key in a URL's query (libpq takes ?password= and ?sslpassword= too)
    | (?P<query>[?&](?:token|access_token|api_key|apikey|key|(?:ssl)?password)=)[^&#\s'"\[]+
    # the password of a URL's user: scheme://user:PASSWORD@host
    | (?P<userinfo>\b[a-z][a-z0-9+.-]{{0,31}}://[^\s/?#@:'"]*:)(?!\[|\*\*\*@)[^\s/?#@'"]+(?=@)
    # an OpenAI-style API key
    | \bsk-[A-Za-z0-9_-]{{16,}}
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _keep_prefix(match: re.Match[str]) -> str:
    prefix = match.group("header") or match.group("pair") or match.group("scheme")
    return (prefix or match.group("query") or match.group("userinfo") or "") + REDACTED


class _Secrets:
    """The exact values redacted wherever they appear (process-global, like logging)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Swapped whole, so a reader sees the values and their pattern together.
        self.current: tuple[tuple[str, ...], re.Pattern[str] | None] = ((), None)

    def add(self, secret: str) -> None:
        if len(secret) < MIN_SECRET_CHARS:
            return
        # The value as it reads in a repr of a str or of bytes, and in JSON text.
        forms = {secret, repr(secret)[1:-1], repr(secret.encode())[2:-1]}
        forms.add(jsonlib.dumps(secret)[1:-1])
        forms.add(jsonlib.dumps(secret, ensure_ascii=False)[1:-1])  # compact_dumps's JSON
        with self._lock:
            values = set(self.current[0])
            if forms <= values:
                return
            # Longest first, so a secret that contains another is redacted whole.
            ordered = tuple(sorted(values | forms, key=lambda v: (-len(v), v)))
            self.current = (ordered, re.compile("|".join(map(re.escape, ordered))))

    def clear(self) -> None:
        with self._lock:
            self.current = ((), None)


_SECRETS: Final = _Secrets()


def register_secret(secret: str) -> None:
    """Redact ``secret`` (a token, an API key) from every line logged from now on.

    Values shorter than :data:`MIN_SECRET_CHARS` are ignored.
    """
    _SECRETS.add(secret)


def redact_text(text: str) -> str:
    """``text`` with registered secrets, credentials after ``Bearer`` / ``Basic``,
    ``Authorization`` values, tokens in URL queries and ``sk-...`` keys replaced by
    ``[redacted]``. Linear in the length of ``text`` (times the number of secrets).

    Secrets go first, in a pass of their own: a pattern's match might end inside one.
    Plain substring tests (C speed) spare most strings both regular expressions.
    """
    values, pattern = _SECRETS.current
    if pattern is not None:
        for value in values:
            if value in text:
                text = pattern.sub(REDACTED, text)
                break
    lowered = text.lower()
    # What each match of _PATTERNS contains (spelled out: a generator costs more than the
    # tests on a typical short string).
    if (
        "=" in text
        or "@" in text
        or "sk-" in lowered
        or "bearer" in lowered
        or "basic" in lowered
        or "authorization" in lowered
    ):
        text = _PATTERNS.sub(_keep_prefix, text)
    return text


def registered_secrets() -> tuple[str, ...]:
    """The values :func:`register_secret` took, in each form they are redacted in, longest
    first."""
    return _SECRETS.current[0]


def forget_secrets() -> None:
    """Forget every registered secret (tests that register their own)."""
    _SECRETS.clear()
