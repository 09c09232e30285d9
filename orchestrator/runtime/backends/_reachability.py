"""Why a request could not reach a model server, and whether trying again can help.

Theory of operation: httpx reports every failure to connect as a ``ConnectError`` whose causes
hold the operating system's words (``ConnectionRefusedError`` in an exception group of trio's
connection attempts, ``socket.gaierror`` from the resolver). :func:`why_unreachable` walks those
causes and says what they mean for a model server, in one phrase ("nothing listens on
127.0.0.1:11434: is Ollama running?"). :func:`worth_retrying` is the rule the backend retries
by. A connection refused by a loopback address is not retried: nothing listens on this machine,
and nothing will within the seconds a retry waits. A name that does not resolve is not retried
either. A remote host that refuses may be restarting behind its address, so that is retried.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

import httpx

__all__ = ["why_unreachable", "worth_retrying"]

#: Local model servers by their default port: a hint when nothing listens there.
LOCAL_SERVERS: Final[Mapping[int, str]] = {11434: "Ollama", 1234: "LM Studio"}

#: Transport failures before any byte of a response: the request can safely go again.
RETRYABLE_TRANSPORT: Final = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)
# Not retried: a read timeout waiting for the answer (the server has the request and may be
# working on it; sending it again doubles the bill), any error once the stream started.

# The resolver's "this name does not exist" (not "try again later").
_NO_SUCH_NAME: Final = frozenset(
    code for code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None)) if code is not None
)


def why_unreachable(url: str, exc: httpx.TransportError, *, timeout: float) -> str:
    """What ``exc`` (raised sending a request to ``url``) means, in one phrase.

    ``timeout``: the seconds the request's connect and read timeouts allowed, named when one
    ran out.
    """
    where = host_port(url)
    causes = list(_causes(exc))
    if _refused(causes):
        server = LOCAL_SERVERS.get(httpx.URL(url).port or 0)
        return f"nothing listens on {where}" + (f": is {server} running?" if server else "")
    resolver = next((c for c in causes if isinstance(c, socket.gaierror)), None)
    if resolver is not None:
        host = httpx.URL(url).host
        if resolver.errno in _NO_SUCH_NAME:
            return f"the name {host} does not resolve"
        return f"the name {host} could not be looked up ({resolver.strerror or resolver})"
    if isinstance(exc, httpx.ConnectTimeout):
        return f"{where} did not take the connection within {timeout:g} s"
    if isinstance(exc, httpx.ReadTimeout):
        return f"{where} took the connection but did not answer within {timeout:g} s"
    if isinstance(exc, httpx.TimeoutException):
        return f"{where}: {type(exc).__name__}"
    tls = next((c for c in causes if isinstance(c, ssl.SSLError)), None)
    if tls is not None:
        if "WRONG_VERSION" in str(tls):  # a plain HTTP answer to a TLS hello
            return f"TLS with {where} failed ({tls.reason}): does it speak http://, not https://?"
        return f"TLS with {where} failed: {tls.reason or tls}"
    return str(exc) or type(exc).__name__


def worth_retrying(url: str, exc: httpx.TransportError) -> bool:
    """Whether sending the request to ``url`` again may succeed (see the module docstring)."""
    if not isinstance(exc, RETRYABLE_TRANSPORT):
        return False
    causes = list(_causes(exc))
    if _refused(causes) and _is_loopback(httpx.URL(url).host):
        return False
    return not any(isinstance(c, socket.gaierror) and c.errno in _NO_SUCH_NAME for c in causes)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, its causes and contexts, and the members of any exception group among them."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(c for c in (current.__cause__, current.__context__) if c is not None)


def _refused(causes: Sequence[BaseException]) -> bool:
    """Every address tried refused the connection (trio tries each address of a name)."""
    failures = [c for c in causes if isinstance(c, OSError) and c.errno is not None]
    return bool(failures) and all(isinstance(c, ConnectionRefusedError) for c in failures)


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_port(url: str) -> str:
    """``host:port`` of ``url`` (the scheme's port when it names none)."""
    parsed = httpx.URL(url)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return f"{host}:{port}"
