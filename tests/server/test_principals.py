"""Who a request comes from (``server/_principals``): a bearer token wherever it comes from;
the sign-in cookie and a token-less daemon's openness only for the daemon's own page (the
routes on a real daemon: tests/server/test_web.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import HTTPConnection

from orchestrator.server import (
    COOKIE_NAME,
    LOCAL,
    AccessRefusedError,
    Authenticator,
    Permission,
    Principals,
    Role,
    Token,
)
from tests.support.examples import examples

HOST = "daemon.example:8765"
OPERATOR = Token(name="olivia", role=Role.OPERATOR, secret="operator-secret-0123456789")
VIEWER = Token(name="victor", role=Role.VIEWER, secret="viewer-secret-0123456789ab")
NOW = 1_000_000.0
SIGN_IN = "sign in first"


def connection(
    headers: dict[str, str] | None = None, *, query: str = "", host: str = HOST
) -> HTTPConnection:
    """A request as Starlette hands it to a route: ``Host`` and ``headers``, ``query``."""
    raw = [(b"host", host.encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {"type": "http", "headers": raw, "query_string": query.encode(), "path": "/"}
    return HTTPConnection(scope)


def with_tokens() -> Principals:
    return Principals(Authenticator([OPERATOR, VIEWER]), clock=lambda: NOW)


def cookie_of(token: Token) -> str:
    auth = Authenticator([OPERATOR, VIEWER])
    principal = auth.authenticate(f"Bearer {token.secret}")
    assert principal is not None
    return f"{COOKIE_NAME}={auth.sign_in_cookie(principal, now=NOW)}"


class TestWithoutTokens:
    def test_every_local_client_is_local(self) -> None:
        principals = Principals(Authenticator(()))
        assert principals.of(connection()) is LOCAL
        assert principals.require(connection(), Permission.OPERATE, sign_in=SIGN_IN) is LOCAL

    @pytest.mark.parametrize(
        "origin", ["http://localhost:5173", "http://127.0.0.1:3000", "http://[::1]:8080"]
    )
    def test_a_page_on_another_loopback_origin_is_let_in(self, origin: str) -> None:
        """A UI under development on localhost is inside the trust boundary already."""
        principals = Principals(Authenticator(()))
        request = connection({"origin": origin}, host="127.0.0.1:8765")
        assert principals.require(request, Permission.OPERATE, sign_in=SIGN_IN) is LOCAL

    @pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://10.0.0.5:8765"])
    def test_a_page_of_another_site_is_refused_403(self, origin: str) -> None:
        """A DNS-rebinding page presents its own name as the origin: refused."""
        principals = Principals(Authenticator(()))
        request = connection({"origin": origin}, host="127.0.0.1:8765")
        with pytest.raises(AccessRefusedError) as refused:
            principals.require(request, Permission.READ, sign_in=SIGN_IN)
        assert (refused.value.status, refused.value.message) == (
            403,
            "a request from another site's page is refused",
        )


class TestWithTokens:
    def test_a_bearer_token_is_taken_from_any_origin(self) -> None:
        principals = with_tokens()
        for request in (
            connection({"authorization": f"Bearer {OPERATOR.secret}"}),
            connection({"authorization": f"Bearer {OPERATOR.secret}", "origin": "https://x.io"}),
            connection({"origin": "https://x.io"}, query=f"token={OPERATOR.secret}"),
        ):
            found = principals.require(request, Permission.OPERATE, sign_in=SIGN_IN)
            assert found.name == "olivia"

    def test_no_credential_is_401_with_how_to_sign_in(self) -> None:
        with pytest.raises(AccessRefusedError) as refused:
            with_tokens().require(connection(), Permission.READ, sign_in=SIGN_IN)
        assert (refused.value.status, refused.value.message) == (401, SIGN_IN)

    def test_a_wrong_token_is_nobody_even_with_a_good_cookie(self) -> None:
        """A request that brings a token is judged by it alone."""
        request = connection({"authorization": "Bearer wrong", "cookie": cookie_of(OPERATOR)})
        assert with_tokens().of(request) is None

    def test_a_principal_without_the_permission_is_403_naming_it(self) -> None:
        request = connection({"authorization": f"Bearer {VIEWER.secret}"})
        with pytest.raises(AccessRefusedError) as refused:
            with_tokens().require(request, Permission.OPERATE, sign_in=SIGN_IN)
        assert (refused.value.status, refused.value.message) == (
            403,
            "this token may not operate",
        )

    def test_the_cookie_counts_from_the_daemon_s_own_page_or_no_page(self) -> None:
        principals = with_tokens()
        cookie = cookie_of(VIEWER)
        for request in (
            connection({"cookie": cookie}),
            connection({"cookie": cookie, "origin": f"https://{HOST}"}),  # behind a TLS proxy
            connection({"cookie": cookie, "origin": f"http://{HOST}"}),
        ):
            found = principals.of(request)
            assert found is not None
            assert found.name == "victor"

    @pytest.mark.parametrize(
        "origin",
        ["http://daemon.example:9999", "http://other.example:8765", "null", "http://[bad"],
    )
    def test_the_cookie_from_another_page_is_refused(self, origin: str) -> None:
        principals = with_tokens()
        request = connection({"cookie": cookie_of(OPERATOR), "origin": origin})
        assert principals.of(request) is None
        with pytest.raises(AccessRefusedError) as refused:
            principals.require(request, Permission.READ, sign_in=SIGN_IN)
        assert refused.value.status == 403

    def test_with_tokens_another_loopback_page_is_another_site(self) -> None:
        """Only a token-less daemon trusts every page on loopback: with tokens, a page on
        another local port may not use the browser's cookie."""
        request = connection(
            {"cookie": cookie_of(OPERATOR), "origin": "http://127.0.0.1:5173"},
            host="127.0.0.1:8765",
        )
        assert with_tokens().of(request) is None
        same = connection(
            {"cookie": cookie_of(OPERATOR), "origin": "http://127.0.0.1:8765"},
            host="127.0.0.1:8765",
        )
        assert with_tokens().of(same) is not None

    def test_the_cookie_ends_with_its_lifetime_on_the_principals_clock(self) -> None:
        cookie = cookie_of(OPERATOR)
        later = Principals(Authenticator([OPERATOR, VIEWER]), clock=lambda: NOW + 31 * 86400)
        assert later.of(connection({"cookie": cookie})) is None

    @settings(max_examples=examples(80))
    @given(
        st.sampled_from(["http", "https"]),
        st.just("daemon.example") | st.from_regex(r"[a-z]{1,8}\.example", fullmatch=True),
        st.just(8765) | st.integers(min_value=1, max_value=65535),
    )
    def test_a_cookie_counts_exactly_when_the_origin_is_the_host(
        self, scheme: str, name: str, port: int
    ) -> None:
        origin = f"{scheme}://{name}:{port}"
        request = connection({"cookie": cookie_of(OPERATOR), "origin": origin})
        same = f"{name}:{port}" == HOST
        assert (with_tokens().of(request) is not None) is same
