"""Redaction: registered secrets and what looks like a credential become ``[redacted]``, and
the words around them stay, so a line still says what happened."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import (
    MIN_SECRET_CHARS,
    REDACTED,
    forget_secrets,
    redact_text,
    register_secret,
    registered_secrets,
)
from tests.support.examples import examples


@pytest.fixture(autouse=True)
def no_secrets() -> Iterator[None]:
    """The registered secrets are process-global: each test starts and ends without any."""
    forget_secrets()
    yield
    forget_secrets()


class TestRegisteredSecrets:
    def test_a_secret_is_redacted_wherever_it_is(self) -> None:
        register_secret("tok-0123456789")
        assert redact_text("sent tok-0123456789 to x/tok-0123456789") == (
            f"sent {REDACTED} to x/{REDACTED}"
        )

    def test_a_short_value_is_not_a_secret(self) -> None:
        """Redacting a short word everywhere would garble every line and protect nothing."""
        short = "o" * (MIN_SECRET_CHARS - 1)
        register_secret(short)
        assert registered_secrets() == ()
        assert redact_text(f"key {short}") == f"key {short}"
        register_secret("o" * MIN_SECRET_CHARS)
        assert redact_text("o" * MIN_SECRET_CHARS) == REDACTED

    def test_the_forms_a_repr_or_json_gives_it_are_redacted_too(self) -> None:
        secret = 'pa"ss\\wörd'
        register_secret(secret)
        assert redact_text(repr(secret)) == f"'{REDACTED}'"
        assert redact_text(repr(secret.encode())) == f"b'{REDACTED}'"
        for ensure_ascii in (True, False):
            line = json.dumps({"key": secret}, ensure_ascii=ensure_ascii)
            assert redact_text(line) == f'{{"key": "{REDACTED}"}}'

    def test_a_secret_containing_another_is_redacted_whole(self) -> None:
        register_secret("abcdefgh")
        register_secret("abcdefgh-ijkl")
        assert registered_secrets()[0] == "abcdefgh-ijkl"
        assert redact_text("x abcdefgh-ijkl y") == f"x {REDACTED} y"

    def test_forgetting_them(self) -> None:
        register_secret("tok-0123456789")
        forget_secrets()
        assert registered_secrets() == ()
        assert redact_text("tok-0123456789") == "tok-0123456789"

    @settings(max_examples=examples(100))
    @given(
        secret=st.text(alphabet="ABCDEFGHIJ0123456789", min_size=MIN_SECRET_CHARS, max_size=20),
        before=st.text(max_size=20),
        after=st.text(max_size=20),
    )
    def test_no_line_keeps_a_registered_secret(self, secret: str, before: str, after: str) -> None:
        forget_secrets()
        register_secret(secret)
        assert secret not in redact_text(before + secret + after)


class TestCredentialsByTheirLooks:
    @pytest.mark.parametrize(
        ("text", "redacted"),
        [
            ("Authorization: Bearer abc.def", f"Authorization: {REDACTED}"),
            ("authorization=bXYZ0123", f"authorization={REDACTED}"),
            ("authorization: b'XYZ0123'", f"authorization: b'{REDACTED}'"),
            ("{'authorization': 'Basic dXNlcjpwdw=='}", f"{{'authorization': '{REDACTED}'}}"),
            ("(b'authorization', b'Bearer abc')", f"(b'authorization', b'{REDACTED}')"),
            ("sent bearer abc.def, then", f"sent bearer {REDACTED}, then"),
            ("GET /ws?token=abc123&x=1", f"GET /ws?token={REDACTED}&x=1"),
            ("dsn ?sslpassword=hunter2 ok", f"dsn ?sslpassword={REDACTED} ok"),
            ("postgresql://app:hunter2@db/x", f"postgresql://app:{REDACTED}@db/x"),
            ("key sk-abcdefghijklmnop1234 used", f"key {REDACTED} used"),
        ],
    )
    def test_each_kind_keeps_its_prefix(self, text: str, redacted: str) -> None:
        assert redact_text(text) == redacted

    @pytest.mark.parametrize(
        "text",
        [
            "a basic question, no credentials",
            "sk-short",
            "x=1 and a@b",
            "postgresql://app@db/x",
            "postgresql://app:***@db/x",
        ],
    )
    def test_what_only_resembles_one_is_kept(self, text: str) -> None:
        assert redact_text(text) == text

    @settings(max_examples=examples(100))
    @given(
        st.lists(
            st.sampled_from(
                [
                    "Authorization",
                    "authorization",
                    ":",
                    "=",
                    " ",
                    "Bearer",
                    "basic",
                    "Basic",
                    "?",
                    "&",
                    "token",
                    "password",
                    "sk-",
                    "abcdefghijklmnopqrst",
                    "@",
                    "://",
                    "pg",
                    "'",
                    '"',
                    "b'",
                    "[",
                    "]",
                    ",",
                    "(",
                    ")",
                    "x",
                ]
            ),
            max_size=12,
        ).map("".join)
    )
    def test_redacting_twice_is_redacting_once(self, text: str) -> None:
        """The marker is never taken for a credential, so a redacted line is left alone."""
        once = redact_text(text)
        assert redact_text(once) == once
