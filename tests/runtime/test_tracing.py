"""The tracing shell (runtime/_tracing.py): settings, the SDK's spans of a run, the span a
task is in (its traceparent, its log lines)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestrator.base import ConfigError
from orchestrator.core import (
    ModelEvent,
    RoundContext,
    TextDelta,
    UsageReport,
    parse_traceparent,
    span_id_of,
    trace_id_of,
)
from orchestrator.runtime import (
    Tracing,
    TracingSettings,
    add_trace_ids,
    in_span,
    install_tracing,
    prompted_from,
    traceparent_headers,
)
from orchestrator.runtime.tools import command_environment
from orchestrator.spec import CommandTool, load_team, parse_team
from tests.support.examples import examples
from tests.support.runtime import Harness, run_to_end
from tests.support.traces import (
    DELIVERY,
    delegation_tree,
    delivery_run,
    fold_in_a_turn,
    span_delegations,
)

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

SOLO = """
[team]
name = "solo"
coordinator = "lead"

[agents.lead]
role = "coordinator"
"""


class TestSettings:
    def test_off_unless_asked(self) -> None:
        assert not TracingSettings.from_environ({}).enabled

    @pytest.mark.parametrize(
        ("environ", "enabled", "exporter"),
        [
            ({"OTEL_TRACES_EXPORTER": "otlp"}, True, "otlp"),
            ({"OTEL_TRACES_EXPORTER": "console"}, True, "console"),
            ({"OTEL_TRACES_EXPORTER": "none"}, False, "none"),
            ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True, "otlp"),
            ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True, "otlp"),
            ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, False, "otlp"),
        ],
    )
    def test_the_standard_variables(
        self, environ: dict[str, str], enabled: bool, exporter: str
    ) -> None:
        settings = TracingSettings.from_environ(environ)
        assert (settings.enabled, settings.exporter) == (enabled, exporter)

    def test_the_variables_override_the_file(self) -> None:
        base = TracingSettings(enabled=True, service_name="from-file", sampler_arg=0.5)
        settings = TracingSettings.from_environ(
            {
                "OTEL_SERVICE_NAME": "from-env",
                "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                "OTEL_TRACES_SAMPLER_ARG": "0.25",
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
            },
            base,
        )
        assert settings == TracingSettings(
            enabled=True,
            service_name="from-env",
            sampler="parentbased_traceidratio",
            sampler_arg=0.25,
            capture_content=True,
        )

    @given(
        environ=st.dictionaries(
            st.sampled_from(
                [
                    "OTEL_TRACES_EXPORTER",
                    "OTEL_EXPORTER_OTLP_ENDPOINT",
                    "OTEL_SDK_DISABLED",
                    "OTEL_SERVICE_NAME",
                    "OTEL_TRACES_SAMPLER",
                    "OTEL_TRACES_SAMPLER_ARG",
                    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                ]
            ),
            st.one_of(st.text(max_size=12), st.sampled_from(["otlp", "none", "0.5", "true"])),
        )
    )
    @settings(max_examples=examples(200))
    def test_any_environment_gives_settings_or_names_the_variable(
        self, environ: dict[str, str]
    ) -> None:
        """Whatever the variables hold: usable settings, or a ConfigError naming one of
        them; never another exception."""
        refused: ConfigError | None = None
        try:
            got = TracingSettings.from_environ(environ)
        except ConfigError as error:
            refused = error
        if refused is not None:
            assert refused.key_path in environ
            assert refused.file == "the environment"
            return
        assert got.exporter in ("otlp", "console", "none")
        assert 0.0 <= got.sampler_arg <= 1.0
        if environ.get("OTEL_SDK_DISABLED", "").strip().lower() in ("1", "true", "yes", "on"):
            assert not got.enabled

    @pytest.mark.parametrize(
        ("environ", "named"),
        [
            ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"),
            ({"OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER"),
            ({"OTEL_TRACES_SAMPLER_ARG": "2"}, "OTEL_TRACES_SAMPLER_ARG"),
            ({"OTEL_TRACES_SAMPLER_ARG": "half"}, "OTEL_TRACES_SAMPLER_ARG"),
        ],
    )
    def test_a_bad_variable_is_named(self, environ: dict[str, str], named: str) -> None:
        with pytest.raises(ConfigError, match=f"the environment: {named}: "):
            TracingSettings.from_environ(environ)


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    """Tracing on for the test, its spans kept in the SDK's own in-memory exporter."""
    exporter = InMemorySpanExporter()
    tracing = Tracing(TracingSettings(enabled=True), processor=SimpleSpanProcessor(exporter))
    before = install_tracing(tracing)
    try:
        yield exporter
    finally:
        install_tracing(before)


class TestSpansOfARun:
    async def test_the_sdk_gets_the_delegation_tree(self, exported: InMemorySpanExporter) -> None:
        harness = await delivery_run(Harness(load_team(DELIVERY)))
        spans = exported.get_finished_spans()

        class Span:
            def __init__(self, span: object) -> None:
                self.name = span.name  # type: ignore[attr-defined]
                self.span_id = span.context.span_id  # type: ignore[attr-defined]
                parent = span.parent  # type: ignore[attr-defined]
                self.parent_id = None if parent is None else parent.span_id
                self.attributes = dict(span.attributes)  # type: ignore[attr-defined]

        assert span_delegations([Span(s) for s in spans]) == delegation_tree(harness.facts)
        assert {s.resource.attributes["service.name"] for s in spans} == {"team-orchestrator"}
        assert {s.instrumentation_scope.name for s in spans if s.instrumentation_scope} == {
            "orchestrator"
        }

    async def test_a_run_that_is_not_sampled_sends_nothing(self) -> None:
        exporter = InMemorySpanExporter()
        settings = TracingSettings(enabled=True, sampler="parentbased_always_off")
        before = install_tracing(Tracing(settings, processor=SimpleSpanProcessor(exporter)))
        try:
            await delivery_run()
        finally:
            install_tracing(before)
        assert exporter.get_finished_spans() == ()

    async def test_off_no_observer(self) -> None:
        """Tracing off: the runtime adds nothing to the bus, and keeps no fold."""
        harness = Harness(parse_team(SOLO, file="solo.toml"))
        assert harness.runtime._context.spans is None
        assert harness.runtime.bus._observers == []


class _Asking:
    """A model that notes the traceparent its request would carry, and logs a line."""

    def __init__(self, seen: list[dict[str, str]]) -> None:
        self.seen = seen

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        self.seen.append(traceparent_headers({"user-agent": "test"}))
        structlog.get_logger("test").info("asking the model")
        yield TextDelta(text="done")
        yield UsageReport(input_tokens=1, output_tokens=1)


class TestTheCurrentSpan:
    async def test_a_model_request_carries_its_rounds_span(
        self, exported: InMemorySpanExporter
    ) -> None:
        """Inside a round, the traceparent names the round's chat span, in the run's trace;
        a log line written there carries the same ids."""
        seen: list[dict[str, str]] = []
        harness = Harness(parse_team(SOLO, file="solo.toml"), backends=lambda _: _Asking(seen))
        with (
            structlog.testing.capture_logs(processors=[add_trace_ids]) as logs,
            prompted_from(PARENT),
        ):
            await run_to_end(harness, "hello")
        (headers,) = seen
        assert headers["user-agent"] == "test"
        sent = parse_traceparent(headers["traceparent"])
        assert sent is not None
        (chat_span,) = [s for s in exported.get_finished_spans() if s.name == "chat scripted"]
        assert sent.span_id == chat_span.context.span_id
        parent = parse_traceparent(PARENT)
        assert parent is not None
        assert sent.trace_id == chat_span.context.trace_id == parent.trace_id
        (line,) = [entry for entry in logs if entry["event"] == "asking the model"]
        assert line["trace_id"] == f"{sent.trace_id:032x}"
        assert line["span_id"] == f"{sent.span_id:016x}"
        chat = harness.runtime.state.coordinator_chat()
        assert chat is not None
        turn = next(iter(harness.runtime.state.chats[chat].turns)).id
        assert sent.span_id == span_id_of("round", chat, turn, "0")

    def test_outside_a_span_no_header(self, exported: InMemorySpanExporter) -> None:
        assert traceparent_headers({"a": "b"}) == {"a": "b"}

    def test_tracing_off_no_header(self) -> None:
        assert traceparent_headers() == {}
        assert add_trace_ids(None, "info", {"event": "x"}) == {"event": "x"}


class TestCommandTools:
    def test_a_command_tool_gets_its_calls_span_as_traceparent(
        self, exported: InMemorySpanExporter
    ) -> None:
        """A command tool's program is told its call's span (``TRACEPARENT``, the
        OpenTelemetry convention for a child process's environment); untraced, nothing."""
        session, chat, call = "ahp-session:/s", "ahp-chat:/c", "call-1"
        tool = CommandTool(name="t", command=("true",))
        untraced = command_environment({}, tool, session=session, tool_call_id=call, callback=None)
        assert "TRACEPARENT" not in untraced
        fold = fold_in_a_turn(session, chat)
        with in_span(fold, chat, "tool", chat, call):
            traced = command_environment(
                {}, tool, session=session, tool_call_id=call, callback=None
            )
        sent = parse_traceparent(traced["TRACEPARENT"])
        assert sent is not None
        assert (sent.trace_id, sent.span_id) == (
            trace_id_of(session, "task-1"),
            span_id_of("tool", chat, call),
        )


class _Failing(SimpleSpanProcessor):
    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("the exporter broke")


class TestErrorBarrier:
    async def test_a_fault_in_tracing_stops_its_tracing_never_the_run(self) -> None:
        tracing = Tracing(TracingSettings(enabled=True), processor=_Failing(InMemorySpanExporter()))
        before = install_tracing(tracing)
        try:
            with structlog.testing.capture_logs() as logs:
                harness = await delivery_run()
        finally:
            install_tracing(before)
        assert harness.runtime.state.run is not None
        assert harness.runtime.state.run.status == "completed"
        assert [e["event"] for e in logs if e["log_level"] == "error"] == [
            "tracing stopped for the session"
        ]
