"""Logging: no frame locals, secrets redacted, values bounded, repeated errors summed up."""

from __future__ import annotations

import io
import json
import logging
import string
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
import structlog.testing
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from stamina.instrumentation import LoggingOnRetryHook, RetryDetails, StructlogOnRetryHook

from orchestrator.base import ConfigError, forget_secrets, redact_text, register_secret
from orchestrator.cli._teammates_client import read_token
from orchestrator.core import span_id_of, trace_id_of
from orchestrator.runtime import (
    MAX_EVENT_CHARS,
    MAX_FRAMES,
    MAX_TRACEBACK_CHARS,
    MAX_VALUE_CHARS,
    REPEAT_LIMIT,
    REPEAT_WINDOW,
    RepeatKey,
    RepeatLimiter,
    Tracing,
    TracingSettings,
    _logging,
    configure_logging,
    in_span,
    install_tracing,
)
from orchestrator.server import Role, ServeConfig, Token, serve
from orchestrator.sessions import Limits
from tests.support.daemon import connect, running_daemon
from tests.support.examples import examples
from tests.support.teams import ECHO
from tests.support.traces import fold_in_a_turn

TOKEN = "tok-3f9a1c7e5b2d4068"  # a daemon token: registered, redacted by its exact value
KEY = "sk-proj-Zq8W3eR5tY7uI9oP1aS"  # an OpenAI-style key: redacted by its shape
LOCAL = "a-local-variable-value"
MODES = pytest.mark.parametrize("as_json", [True, False], ids=["json", "console"])


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@contextmanager
def configured(
    *, as_json: bool, secrets: tuple[str, ...] = (), clock: FakeClock | None = None
) -> Iterator[io.StringIO]:
    """configure_logging writing to a string, undone afterwards: logging is process-global
    (and structlog's processor list is shared with loggers cached on first use)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    config = structlog.get_config()
    processors = config["processors"]
    saved = list(processors)
    stream = io.StringIO()
    try:
        configure_logging(
            json=as_json,
            level=logging.DEBUG,
            stream=stream,
            secrets=secrets,
            clock=clock or FakeClock(),
        )
        yield stream
    finally:
        processors[:] = saved
        structlog.configure(
            processors=processors,
            logger_factory=config["logger_factory"],
            wrapper_class=config["wrapper_class"],
            context_class=config["context_class"],
            cache_logger_on_first_use=config["cache_logger_on_first_use"],
        )
        root.handlers[:] = handlers
        root.setLevel(level)
        forget_secrets()


def json_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    return [
        json.loads(line, parse_constant=no_constants) for line in stream.getvalue().splitlines()
    ]


def recurse(depth: int, scope: dict[str, Any]) -> int:
    """Recursion until Python refuses, with an ASGI scope (headers, token) in every frame."""
    local = LOCAL
    return recurse(depth + 1, scope) + len(local)


def asgi_scope() -> dict[str, Any]:
    return {
        "type": "http",
        "path": "/callback",
        "query_string": f"token={TOKEN}".encode(),
        "headers": [(b"authorization", f"Bearer {TOKEN}".encode()), (b"host", b"localhost")],
    }


class TestTraceIds:
    def test_a_json_line_written_inside_a_span_names_it(self) -> None:
        """Tracing on: a line written in a span has its trace_id and span_id (hex, as trace
        UIs show them); a line outside one, or with tracing off, has neither."""
        session, chat = "ahp-session:/s", "ahp-chat:/c"
        fold = fold_in_a_turn(session, chat)
        log = structlog.get_logger("test.trace")
        with configured(as_json=True) as stream:
            log.warning("before")
            before = install_tracing(Tracing(TracingSettings(enabled=True, exporter="console")))
            try:
                with in_span(fold, chat, "turn", chat, "turn-1"):
                    log.warning("inside")
                log.warning("outside")
            finally:
                install_tracing(before)
        lines = {line["event"]: line for line in json_lines(stream)}
        assert lines["inside"]["trace_id"] == f"{trace_id_of(session, 'task-1'):032x}"
        assert lines["inside"]["span_id"] == f"{span_id_of('turn', chat, 'turn-1'):016x}"
        for event in ("before", "outside"):
            assert "trace_id" not in lines[event]
            assert "span_id" not in lines[event]


class TestTracebacks:
    @MODES
    def test_a_recursion_error_renders_small_without_locals(self, as_json: bool) -> None:
        """A RecursionError (~1,000 frames, each holding a scope with a token) renders in a
        bounded line with none of the frames' locals. It took 15-34 s and 15-73 MB a line
        with every frame's locals."""
        with configured(as_json=as_json) as out:
            try:
                recurse(0, asgi_scope())
            except RecursionError:
                structlog.get_logger("test").exception("callback failed")
        text = out.getvalue()
        assert len(text) < 64 * 1024
        assert "RecursionError" in text
        assert LOCAL not in text
        assert TOKEN not in text
        assert "authorization" not in text

    def test_json_keeps_the_outer_and_inner_frames(self) -> None:
        with configured(as_json=True) as out:
            try:
                recurse(0, asgi_scope())
            except RecursionError:
                structlog.get_logger("test").exception("callback failed")
        [line] = json_lines(out)
        [stack] = line["exception"]
        assert stack["exc_type"] == "RecursionError"
        assert len(stack["frames"]) == MAX_FRAMES + 1  # and one that says how many were cut
        assert stack["frames"][MAX_FRAMES // 2]["name"].startswith("Skipped frames: ")
        assert stack["frames"][0]["name"] == "test_json_keeps_the_outer_and_inner_frames"
        assert stack["frames"][-1]["name"] == "recurse"
        assert all("locals" not in frame for frame in stack["frames"])

    def test_console_says_how_many_frames_were_cut(self) -> None:
        with configured(as_json=False) as out:
            try:
                recurse(0, asgi_scope())
            except RecursionError:
                structlog.get_logger("test").exception("callback failed")
        text = out.getvalue()
        assert "frames cut …]" in text
        assert text.count('File "') <= MAX_FRAMES
        assert "test_console_says_how_many_frames_were_cut" in text

    @MODES
    def test_a_chained_exception_shows_its_cause(self, as_json: bool) -> None:
        with configured(as_json=as_json) as out:
            try:
                try:
                    raise KeyError("inner")
                except KeyError as exc:
                    raise ValueError("outer") from exc
            except ValueError:
                structlog.get_logger("test").exception("failed")
        text = out.getvalue()
        assert "KeyError" in text
        assert "ValueError" in text

    @MODES
    def test_an_exception_group_of_many_errors_stays_bounded(self, as_json: bool) -> None:
        group = ExceptionGroup(
            "many", [ValueError(f"error {i} " + "x" * 100) for i in range(2_000)]
        )
        with configured(as_json=as_json) as out:
            try:
                raise group
            except ExceptionGroup:
                structlog.get_logger("test").exception("failed")
        assert len(out.getvalue()) < MAX_TRACEBACK_CHARS + MAX_EVENT_CHARS

    def test_the_old_configuration_rendered_locals(self) -> None:
        """What the tests above guard against: structlog's default dict tracebacks show
        every frame's locals, the scope's Authorization header included."""
        transformer = structlog.tracebacks.ExceptionDictTransformer()
        try:
            recurse(0, asgi_scope())
        except RecursionError:
            stacks = transformer(sys.exc_info())  # type: ignore[arg-type]
        assert TOKEN in json.dumps(stacks, default=repr)


class TestRedactText:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (f"Bearer {TOKEN}", "Bearer [redacted]"),
            (f"bad credentials: bearer {TOKEN}.", "bad credentials: bearer [redacted]"),
            ("Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Basic [redacted]"),
            (f"Authorization: Token {TOKEN}\r\nHost: x", "Authorization: [redacted]\r\nHost: x"),
            (f"{{'authorization': 'Token {TOKEN}'}}", "{'authorization': '[redacted]'}"),
            (f'{{"Authorization": "{TOKEN}"}}', '{"Authorization": "[redacted]"}'),
            (
                f"[(b'authorization', b'Token {TOKEN}'), (b'host', b'x')]",
                "[(b'authorization', b'[redacted]'), (b'host', b'x')]",
            ),
            (f"ws://h/ws?team=a&token={TOKEN}&x=1", "ws://h/ws?team=a&token=[redacted]&x=1"),
            (f"GET /ahp?token={TOKEN} HTTP/1.1", "GET /ahp?token=[redacted] HTTP/1.1"),
            (f"Incorrect API key provided: {KEY}", "Incorrect API key provided: [redacted]"),
            (
                "postgresql://u@db:5432/j?password=hunter2secret: cannot reach",
                "postgresql://u@db:5432/j?password=[redacted] cannot reach",
            ),
            (
                "postgresql://u@db/j?sslmode=require&sslpassword=hunter2secret",
                "postgresql://u@db/j?sslmode=require&sslpassword=[redacted]",
            ),
            (
                "journal postgresql://alice:hunter2secret@db.example:5432/j: refused",
                "journal postgresql://alice:[redacted]@db.example:5432/j: refused",
            ),
            ("'postgres://:hunter2@db/j'", "'postgres://:[redacted]@db/j'"),
        ],
    )
    def test_credentials_by_their_shape(self, text: str, expected: str) -> None:
        assert redact_text(text) == expected

    @pytest.mark.parametrize(
        "text",
        [
            "GET /ws?team=delivery&session=s-1",
            "the basic plan",
            "authorization refused for token alice",
            "sk-short",
            "Bearer [redacted]",
            "postgresql://alice:***@db.example:5432/j",
            "postgresql://alice@db.example/j and alice@example.com",
            "http://127.0.0.1:8765/ws",
        ],
    )
    def test_ordinary_text_is_kept(self, text: str) -> None:
        assert redact_text(text) == text

    def test_a_registered_secret_anywhere(self) -> None:
        secret = "plain-words-that-are-a-secret"
        try:
            assert redact_text(f"x{secret}y") == f"x{secret}y"
            register_secret(secret)
            assert redact_text(f"x{secret}y {secret}") == "x[redacted]y [redacted]"
            assert redact_text(repr(secret.encode())) == "b'[redacted]'"
        finally:
            forget_secrets()

    def test_a_secret_that_contains_another_is_redacted_whole(self) -> None:
        try:
            register_secret("abcdefgh-1234")
            register_secret("abcdefgh")
            assert redact_text("abcdefgh-1234 abcdefgh") == "[redacted] [redacted]"
        finally:
            forget_secrets()

    def test_a_short_secret_is_not_registered(self) -> None:
        """A local server's placeholder key ("ollama") would garble every line."""
        try:
            register_secret("ollama")
            assert redact_text("http://ollama:11434/v1") == "http://ollama:11434/v1"
        finally:
            forget_secrets()


class TestRedactedLines:
    @MODES
    def test_values_keys_and_header_pairs(self, as_json: bool) -> None:
        with configured(as_json=as_json, secrets=(TOKEN,)) as out:
            structlog.get_logger("test").warning(
                "request refused",
                scope=asgi_scope(),
                headers={"Authorization": "whatever it holds", "Cookie": "session=1"},
                url=f"ws://127.0.0.1:8765/ws?token={TOKEN}",
                note=f"the token {TOKEN} again",
                **{TOKEN: "as a key"},
            )
        text = out.getvalue()
        assert TOKEN not in text
        assert "whatever it holds" not in text
        assert "session=1" not in text
        assert "[redacted]" in text
        assert "localhost" in text  # the rest of the scope is there

    def test_only_header_pairs_count_as_header_pairs(self) -> None:
        with configured(as_json=True) as out:
            structlog.get_logger("test").warning(
                "pairs",
                headers=[(b"cookie", b"session=1"), ["Set-Cookie", "session=2"]],
                tools=["secret", "deploy"],
                limits=("token", 5),
            )
        [line] = json_lines(out)
        assert line["headers"] == [["b'cookie'", "[redacted]"], ["Set-Cookie", "[redacted]"]]
        assert line["tools"] == ["secret", "deploy"]
        assert line["limits"] == ["token", 5]

    @MODES
    def test_an_object_whose_repr_holds_a_secret(self, as_json: bool) -> None:
        class Scope:
            def __repr__(self) -> str:
                return f"<Scope headers=[('authorization', 'Bearer {TOKEN}')]>"

        with configured(as_json=as_json) as out:
            structlog.get_logger("test").warning("odd", scope=Scope())
        assert TOKEN not in out.getvalue()
        assert "<Scope headers=" in out.getvalue()

    @MODES
    def test_an_exception_message_in_the_traceback(self, as_json: bool) -> None:
        with configured(as_json=as_json, secrets=(TOKEN,)) as out:
            try:
                raise ValueError(f"refused {TOKEN}")
            except ValueError:
                structlog.get_logger("test").exception("failed", error=f"refused {TOKEN}")
        text = out.getvalue()
        assert TOKEN not in text
        assert "refused [redacted]" in text

    @MODES
    def test_a_library_record_with_its_traceback(self, as_json: bool) -> None:
        """hypercorn's records (and any stdlib logger's) are redacted like ours."""
        with configured(as_json=as_json) as out:
            try:
                raise RuntimeError(f"headers: [(b'authorization', b'Bearer {TOKEN}')]")
            except RuntimeError:
                logging.getLogger("hypercorn.error").exception(
                    "Error in ASGI Framework for %s", f"/ws?token={TOKEN}"
                )
        text = out.getvalue()
        assert TOKEN not in text
        assert "Error in ASGI Framework for /ws?token=[redacted]" in text
        assert "RuntimeError" in text
        if as_json:
            [line] = json_lines(out)
            assert line["logger"] == "hypercorn.error"
            assert line["level"] == "error"

    @settings(max_examples=examples(60), deadline=None)
    @given(
        secret=st.text(string.ascii_letters + string.digits + "-_.~+/", min_size=16, max_size=40),
        data=st.data(),
        as_json=st.booleans(),
    )
    def test_a_registered_secret_never_reaches_a_line(
        self, secret: str, data: st.DataObject, as_json: bool
    ) -> None:
        """Wherever a registered secret sits in a nested value (a key, a string, part of
        one, past the cut), the rendered line does not contain it."""
        words = st.text(string.printable, max_size=30)
        with_secret = st.builds(lambda a, b: a + secret + b, words, words)
        leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), words, with_secret)
        value = data.draw(
            st.recursive(
                leaves,
                lambda inner: (
                    st.lists(inner, max_size=4)
                    | st.dictionaries(st.one_of(words, with_secret), inner, max_size=4)
                ),
                max_leaves=30,
            )
        )
        padding = data.draw(st.integers(min_value=0, max_value=MAX_VALUE_CHARS + 1_100))
        with configured(as_json=as_json, secrets=(secret,)) as out:
            structlog.get_logger("property").warning(
                "event", value=value, long="x" * padding + secret, **{"k" + secret: 1}
            )
        text = out.getvalue()
        if as_json:
            [line] = json_lines(out)
            text = json.dumps(line, ensure_ascii=False)
        assert secret not in text


class TestBounds:
    def test_a_long_string_is_cut_with_a_note(self) -> None:
        with configured(as_json=True) as out:
            structlog.get_logger("test").warning("long", prompt="p" * 10_000)
        [line] = json_lines(out)
        cut = 10_000 - MAX_VALUE_CHARS
        assert line["prompt"] == "p" * MAX_VALUE_CHARS + f"… [{cut:,} characters cut]"

    def test_a_secret_across_the_cut_is_not_half_shown(self) -> None:
        with configured(as_json=True, secrets=(TOKEN,)) as out:
            structlog.get_logger("test").warning("long", text="p" * (MAX_VALUE_CHARS - 4) + TOKEN)
        assert TOKEN[:4] not in out.getvalue()

    @pytest.mark.parametrize("offset", range(-12, 4))
    def test_a_secret_across_where_redaction_stops_looking_is_not_half_shown(
        self, offset: int
    ) -> None:
        """A long value is redacted only as far as it can be shown (plus some slack); a
        registered secret across that point is dropped, not shown in part, even when
        redaction shortened what comes before it (here: a long bearer token)."""
        secret = "Q7zVsecret-0123456789"
        start = MAX_VALUE_CHARS + _logging._SLACK + offset
        text = "Bearer " + "t" * (start - 8) + " " + secret + "y" * 100
        with configured(as_json=True, secrets=(secret,)) as out:
            structlog.get_logger("test").warning("long", text=text)
        [line] = json_lines(out)
        assert "Q7z" not in line["text"]
        assert line["text"].endswith(f"… [{len(text) - MAX_VALUE_CHARS:,} characters cut]")

    def test_a_long_value_dense_with_credentials_is_redacted_only_as_far_as_shown(self) -> None:
        text = "Bearer abcdefghijklmnop " * 100_000  # 2.4 MB
        with configured(as_json=True) as out:
            structlog.get_logger("test").warning("long", text=text)
        [line] = json_lines(out)
        assert line["text"].startswith("Bearer [redacted] Bearer [redacted]")
        assert "abcdefghijklmnop" not in line["text"]

    def test_an_event_as_a_whole_is_bounded(self) -> None:
        values = {f"v{i}": "x" * MAX_VALUE_CHARS for i in range(100)}
        with configured(as_json=True) as out:
            structlog.get_logger("test").warning("wide", items=list(range(100_000)), **values)
        [line] = json_lines(out)
        assert len(out.getvalue()) < MAX_EVENT_CHARS + 8_192
        assert line["event"] == "wide"
        assert "more items cut]" in line["items"][-1]

    def test_a_deep_or_self_containing_value_is_shown_to_a_depth(self) -> None:
        deep: list[Any] = []
        for _ in range(5_000):
            deep = [deep]
        loop: list[Any] = [1]
        loop.append(loop)
        with configured(as_json=True) as out:
            structlog.get_logger("test").warning("deep", deep=deep, loop=loop)
        [line] = json_lines(out)
        assert "[nested deeper than 12 levels]" in json.dumps(line["deep"])
        assert "[nested deeper than 12 levels]" in json.dumps(line["loop"])

    def test_numbers_json_cannot_hold_are_notes(self) -> None:
        with configured(as_json=True) as out:
            structlog.get_logger("test").warning("n", big=10**5_000, nan=float("nan"), ok=3)
        [line] = json_lines(out)
        assert line["big"] == "<an integer of 16,610 bits>"
        assert line["nan"] == "nan"
        assert line["ok"] == 3


class TestRepeatLimiter:
    def key(self, error: str = "disk I/O error") -> RepeatKey:
        return RepeatKey(logger="orchestrator.journal", level=logging.ERROR, event="e", error=error)

    def test_repeats_over_the_limit_are_dropped_and_summed_up_once(self) -> None:
        clock, summaries = FakeClock(), []
        limiter = RepeatLimiter(clock=clock, summarize=lambda *s: summaries.append(s))
        admitted = [limiter.admit(self.key()) for _ in range(REPEAT_LIMIT + 1_234)]
        assert admitted == [True] * REPEAT_LIMIT + [False] * 1_234
        clock.now += REPEAT_WINDOW - 0.001
        assert not limiter.admit(self.key())
        assert summaries == []
        clock.now += 0.001
        assert limiter.admit(None)  # any line ends the window
        assert summaries == [(self.key(), 1_235, REPEAT_WINDOW)]
        assert limiter.admit(self.key())  # a new window
        assert summaries == [(self.key(), 1_235, REPEAT_WINDOW)]

    def test_no_summary_when_nothing_was_dropped(self) -> None:
        clock, summaries = FakeClock(), []
        limiter = RepeatLimiter(clock=clock, summarize=lambda *s: summaries.append(s))
        for _ in range(REPEAT_LIMIT):
            assert limiter.admit(self.key())
        clock.now += REPEAT_WINDOW
        assert limiter.admit(self.key())
        assert summaries == []

    def test_different_errors_are_counted_apart(self) -> None:
        limiter = RepeatLimiter(clock=FakeClock(), limit=1)
        assert limiter.admit(self.key("a"))
        assert limiter.admit(self.key("b"))
        assert not limiter.admit(self.key("a"))

    def test_past_max_keys_the_oldest_window_ends_early(self) -> None:
        clock, summaries = FakeClock(), []
        limiter = RepeatLimiter(
            clock=clock, limit=1, max_keys=2, summarize=lambda *s: summaries.append(s)
        )
        for error in ("a", "a", "a", "b"):
            limiter.admit(self.key(error))
        clock.now += 5
        assert limiter.admit(self.key("c"))  # "a" gives way
        assert summaries == [(self.key("a"), 2, 5.0)]
        assert not limiter.admit(self.key("b"))  # still limited

    def test_windows_end_in_the_order_they_started(self) -> None:
        clock, summaries = FakeClock(), []
        limiter = RepeatLimiter(clock=clock, limit=1, summarize=lambda *s: summaries.append(s))
        for error in ("a", "b"):
            limiter.admit(self.key(error))
            limiter.admit(self.key(error))
            clock.now += 10
        clock.now += REPEAT_WINDOW - 15
        limiter.admit(None)
        assert [key.error for key, _, _ in summaries] == ["a"]
        clock.now += 10
        limiter.admit(None)
        assert [key.error for key, _, _ in summaries] == ["a", "b"]


class TestRepeatedLines:
    @MODES
    def test_our_repeated_error_is_summed_up_in_one_line(self, as_json: bool) -> None:
        clock = FakeClock()
        log = structlog.get_logger("orchestrator.journal")
        with configured(as_json=as_json, clock=clock, secrets=(TOKEN,)) as out:
            for _ in range(REPEAT_LIMIT + 1_234):
                log.error("journal write failed", error=f"refused {TOKEN}")
            log.info("unrelated")
            clock.now += REPEAT_WINDOW
            log.info("later")
        lines = out.getvalue().splitlines()
        assert len(lines) == REPEAT_LIMIT + 3
        summary = lines[-2]
        assert (
            "journal write failed (refused [redacted]) repeated 1,234 more times "
            "in the last 60 s (not logged)"
        ) in summary
        assert "later" in lines[-1]
        assert TOKEN not in out.getvalue()

    def test_a_library_repeated_error_is_summed_up_too(self) -> None:
        clock = FakeClock()
        errors = logging.getLogger("hypercorn.error")
        with configured(as_json=True, clock=clock) as out:
            for _ in range(REPEAT_LIMIT + 5):
                try:
                    raise OSError("connection reset")
                except OSError:
                    errors.exception("Error in ASGI Framework")
            clock.now += REPEAT_WINDOW
            errors.info("later")
        lines = json_lines(out)
        assert len(lines) == REPEAT_LIMIT + 2
        assert lines[-2]["logger"] == "hypercorn.error"
        assert lines[-2]["level"] == "error"
        assert lines[-2]["event"] == (
            "Error in ASGI Framework (OSError: connection reset) repeated 5 more times "
            "in the last 60 s (not logged)"
        )

    def test_warnings_with_other_values_are_the_same_event(self) -> None:
        """The key is the logger, level, event and error: ids bound to the line differ."""
        with configured(as_json=True) as out:
            for i in range(REPEAT_LIMIT + 3):
                structlog.get_logger("t").warning("turn failed", chat=f"c{i}", error="timeout")
        assert len(json_lines(out)) == REPEAT_LIMIT

    def test_info_lines_are_never_limited(self) -> None:
        with configured(as_json=True) as out:
            for _ in range(REPEAT_LIMIT * 3):
                structlog.get_logger("t").info("session taken up")
        assert len(json_lines(out)) == REPEAT_LIMIT * 3


class TestConfigure:
    def test_a_terminal_gets_console_lines_and_a_pipe_json(self) -> None:
        with configured(as_json=False) as out:
            structlog.get_logger("t").warning("hello", chat="c1")
        assert "hello" in out.getvalue()
        assert "chat=c1" in out.getvalue()
        with configured(as_json=True) as out:
            structlog.get_logger("t").warning("hello", chat="c1")
        [line] = json_lines(out)
        assert (line["event"], line["chat"], line["level"], line["logger"]) == (
            "hello",
            "c1",
            "warning",
            "t",
        )

    @MODES
    def test_stamina_retry_lines_are_dropped_by_both_routes(self, as_json: bool) -> None:
        """The model backend logs each retry in its own words, so stamina's line for it is
        dropped, whether stamina writes it through structlog (its choice here) or through
        stdlib logging (its choice without structlog); other lines of those loggers stay."""
        details = RetryDetails(
            name="<context block>",
            args=(),
            kwargs={},
            retry_num=1,
            wait_for=1.5,
            waited_so_far=0.0,
            caused_by=OSError("refused"),
        )
        with configured(as_json=as_json) as out:
            StructlogOnRetryHook.hook_factory()(details)
            LoggingOnRetryHook.hook_factory()(details)
            structlog.get_logger("stamina").warning("kept from structlog")
            logging.getLogger("stamina").warning("kept from stdlib")
            structlog.get_logger("t").warning("stamina.retry_scheduled")
        text = out.getvalue()
        assert "<context block>" not in text
        lines = text.splitlines()
        assert len(lines) == 3
        for kept, line in zip(
            ["kept from structlog", "kept from stdlib", "stamina.retry_scheduled"],
            lines,
            strict=True,
        ):
            assert kept in line

    def test_capture_logs_still_works_after_configuring(self) -> None:
        """Loggers cached on first use keep structlog's processor list: configure_logging
        fills that list in place, so ``capture_logs`` (which does the same) still sees them."""
        log = structlog.get_logger("cached")
        with configured(as_json=True) as out:
            log.warning("first")
            with structlog.testing.capture_logs() as logs:
                log.warning("captured", token=TOKEN)
            log.warning("second")
        assert [e["event"] for e in logs] == ["captured"]
        assert [line["event"] for line in json_lines(out)] == ["first", "second"]


class TestRegisteredSecrets:
    async def test_serve_registers_the_tokens_before_anything_else(self, tmp_path: Path) -> None:
        """Even a daemon that does not start (here: no team files) redacts its tokens."""
        config = ServeConfig(
            teams=tmp_path / "missing",
            tokens=(Token(name="alice", role=Role.OPERATOR, secret=TOKEN),),
        )
        try:
            with pytest.raises(ConfigError, match="not a directory of team files"):
                await serve(config, db=tmp_path / "j.db", handle_signals=False)
            assert redact_text(f"x {TOKEN} y") == "x [redacted] y"
        finally:
            forget_secrets()

    @pytest.mark.parametrize("source", ["file", "environment"])
    def test_the_teammates_client_registers_its_token(self, tmp_path: Path, source: str) -> None:
        """``orchestrator teammates`` reads a token to send: its own log never shows it."""
        secret = "client-token-0123456789"
        (tmp_path / "token").write_text(secret + "\n")
        try:
            if source == "file":
                assert read_token(tmp_path / "token", {}) == secret
            else:
                assert read_token(None, {"ORCHESTRATOR_TOKEN": secret}) == secret
            assert redact_text(f"x {secret} y") == "x [redacted] y"
        finally:
            forget_secrets()


OPERATOR, TOOL = "operator-token-0123456789", "tool-token-0123456789"
TOKENS = ServeConfig(
    tokens=(
        Token(name="alice", role=Role.OPERATOR, secret=OPERATOR),
        Token(name="sandbox", role=Role.TOOL, secret=TOOL),
    ),
    limits=Limits(shutdown_grace=0.5),
)


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.daemon
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
class TestDaemonLogs:
    async def test_hostile_requests_leave_no_token_in_the_logs(self, tmp_path: Path) -> None:
        """A daemon with tokens and its clients, in one process, sent what broke it (bodies
        and frames nested ~500 deep, tokens in URLs, wrong tokens): no line shows a token
        (httpx logs each URL it requests) and none is past the bounds."""
        with configured(as_json=True) as out, trio.fail_after(60):
            async with running_daemon(tmp_path, teams={"echo": ECHO}, config=TOKENS) as daemon:
                async with daemon.http(TOOL) as http:
                    for body in (
                        b'{"type": "view_update", "group_id": "g", "view_type": "d", '
                        b'"content": {"p": ' + nested(500) + b"}}",
                        nested(500),
                        b'{"type": "view_update", "group_id": "' + TOOL.encode() + b'"}',
                    ):
                        await http.post(
                            "/callback", content=body, headers={"content-type": "application/json"}
                        )
                async with daemon.http(OPERATOR) as http:
                    await http.post(
                        f"/agui?token={OPERATOR}",
                        content=b'{"threadId": ' + nested(500) + b"}",
                        headers={"content-type": "application/json"},
                    )
                    await http.get(f"/metrics?token={OPERATOR}")
                async with daemon.http(f"{OPERATOR}-wrong") as http:
                    await http.get("/metrics")
                async with connect(daemon, f"team=echo&token={OPERATOR}") as client:
                    await client.until_type("init")
                    await client.send(
                        '{"channel": "agent", "prompt": ' + nested(500).decode() + "}"
                    )
                    await client.until_type("error")
                async with httpx.AsyncClient(base_url=daemon.url) as http:
                    await http.get(f"/ws?token={OPERATOR}")
                    await http.get(f"/ws?token={TOOL}-wrong")
        text = out.getvalue()
        assert "daemon listening" in text  # the logs were captured
        for secret in (OPERATOR, TOOL):
            assert secret not in text
        for line in text.splitlines():
            assert len(line) < MAX_EVENT_CHARS + MAX_TRACEBACK_CHARS + 4_096


# ─── bound_log_context ───────────────────────────────────────────────────────


@pytest.mark.daemon
@settings(max_examples=examples(100))
@given(
    st.lists(
        st.dictionaries(st.sampled_from(["chat", "agent", "tool_call"]), st.integers(), max_size=3),
        max_size=4,
    ),
    st.dictionaries(st.sampled_from(["chat", "agent", "tool_call"]), st.integers(), max_size=3),
)
def test_bound_log_context_binds_as_structlog_does(
    nested: list[dict[str, int]], outside: dict[str, int]
) -> None:
    """Nested blocks of bound_log_context and of structlog's bound_contextvars see the same
    context inside each block and leave the same after it (in a fresh context each)."""
    import contextvars

    from orchestrator.runtime._logging import bound_log_context

    def trace(bind: Any) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []

        def run(level: int) -> None:
            seen.append(structlog.contextvars.get_contextvars())
            if level < len(nested):
                with bind(**nested[level]):
                    run(level + 1)
                seen.append(structlog.contextvars.get_contextvars())

        def fresh() -> None:
            structlog.contextvars.clear_contextvars()
            structlog.contextvars.bind_contextvars(**outside)
            run(0)

        contextvars.copy_context().run(fresh)
        return seen

    assert trace(bound_log_context) == trace(structlog.contextvars.bound_contextvars)
