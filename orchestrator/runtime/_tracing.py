"""The tracing shell: a session's spans, from its facts, handed to the OpenTelemetry SDK.

Theory of operation
-------------------
Spans are derived from the facts as they are recorded (:class:`~orchestrator.core.SpanFold`,
pure): the runtime's bus calls an observer with every durable batch, the fold turns the facts
into the spans they ended, and :meth:`Tracing.emit` hands each to the SDK's span processor (a
batch processor by default: a queue, exported by its own thread). A CLI run, the daemon's
sessions and a resumed run all go through :class:`~orchestrator.runtime.TeamRuntime`, so all
are traced from this one place, with the facts' timestamps and ids.

Span ids are derived from the facts' ids, so the runtime names the span it is in without
asking anyone: :func:`in_span` makes it the OpenTelemetry *current* span of the task (API
only, no SDK), so a model request's ``traceparent``, a command tool's ``TRACEPARENT`` and the
JSON log lines written inside it name that span.

Off (the default), nothing here runs: no observer, no context, no import of the SDK. Tracing
is on when the standard ``OTEL_*`` variables ask for an exporter or daemon.toml's ``[tracing]``
table says ``enabled = true`` (:class:`TracingSettings`); the SDK and its OTLP/HTTP exporter
come with the ``[otel]`` extra.
"""

from __future__ import annotations

import contextvars
import datetime
import importlib.metadata
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Final

import attrs
import structlog

from orchestrator.base import ConfigError, parse_timestamp
from orchestrator.core import Fact, SpanFold, SpanRecord, TeamState, span_id_of
from orchestrator.spec import TeamSpec

from ._bus import FactBus

if TYPE_CHECKING:
    # The API is imported when tracing is on, never before: it costs a process ~90 ms.
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.sdk.trace.sampling import Sampler

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "EXPORTERS",
    "SAMPLERS",
    "Tracing",
    "TracingSettings",
    "add_trace_ids",
    "in_span",
    "install_tracing",
    "installed_tracing",
    "prompt_traceparent",
    "prompted_from",
    "ratio",
    "traced",
    "traceparent_headers",
]

log = structlog.get_logger("orchestrator.tracing")

#: The GenAI conventions' opt-in for prompts, answers and tool inputs/outputs on spans.
CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

#: The service name when neither ``OTEL_SERVICE_NAME`` nor daemon.toml names one.
DEFAULT_SERVICE_NAME: Final = "team-orchestrator"

SAMPLERS: Final = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)
EXPORTERS: Final = ("otlp", "console", "none")
#: Where a ConfigError says an OTEL_* variable came from.
ENVIRONMENT: Final = "the environment"
_TRUE: Final = frozenset({"1", "true", "yes", "on"})


@attrs.frozen(kw_only=True)
class TracingSettings:
    """Whether and where spans go: daemon.toml's ``[tracing]``, then the ``OTEL_*``
    variables, which win (what an operator sets for one process overrides the file)."""

    enabled: bool = False
    exporter: str = "otlp"  # one of EXPORTERS
    endpoint: str | None = None  # None: the exporter's own (OTEL_EXPORTER_OTLP_*, localhost)
    service_name: str = DEFAULT_SERVICE_NAME
    sampler: str = "parentbased_always_on"
    sampler_arg: float = 1.0
    capture_content: bool = False
    # Batch spans (the SDK's BatchSpanProcessor); False sends each as it ends (tests, CLI).
    batch: bool = True
    # The trace UI's URL of a span, with {trace_id} and {span_id} (32 and 16 hex digits):
    # the web view links each agent and tool call to it. None: no links.
    trace_url: str | None = None

    @classmethod
    def from_environ(
        cls, environ: Mapping[str, str], base: TracingSettings | None = None
    ) -> TracingSettings:
        """``base`` (daemon.toml's) with what the standard variables say on top."""
        settings = base or cls()
        changes: dict[str, Any] = {}
        exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
        endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        )
        if exporter:
            first = exporter.split(",")[0].strip()
            if first not in EXPORTERS:
                raise ConfigError(
                    f"{first!r} is not one of {', '.join(EXPORTERS)}",
                    file=ENVIRONMENT,
                    key_path="OTEL_TRACES_EXPORTER",
                )
            changes["exporter"] = first
            changes["enabled"] = first != "none"
        elif endpoint:
            changes["enabled"] = True
        if endpoint:
            changes["endpoint"] = None  # the exporter reads the variables itself
        if environ.get("OTEL_SDK_DISABLED", "").strip().lower() in _TRUE:
            changes["enabled"] = False
        if environ.get("OTEL_SERVICE_NAME"):
            changes["service_name"] = environ["OTEL_SERVICE_NAME"]
        sampler = environ.get("OTEL_TRACES_SAMPLER", "").strip().lower()
        if sampler:
            if sampler not in SAMPLERS:
                raise ConfigError(
                    f"{sampler!r} is not one of {', '.join(SAMPLERS)}",
                    file=ENVIRONMENT,
                    key_path="OTEL_TRACES_SAMPLER",
                )
            changes["sampler"] = sampler
        arg = environ.get("OTEL_TRACES_SAMPLER_ARG")
        if arg:
            changes["sampler_arg"] = ratio(
                arg, file=ENVIRONMENT, key_path="OTEL_TRACES_SAMPLER_ARG"
            )
        if CAPTURE_CONTENT_ENV in environ:
            changes["capture_content"] = environ[CAPTURE_CONTENT_ENV].strip().lower() in _TRUE
        return attrs.evolve(settings, **changes)


def ratio(text: str | float, *, file: str, key_path: str) -> float:
    """A sampler's ratio: a number from 0 to 1, or :class:`ConfigError` naming where."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{text!r} is not a number from 0 to 1", file=file, key_path=key_path)
    return value


class Tracing:
    """The process's tracing: the SDK's sampler, resource and span processor, and an
    observer of each runtime's bus (see the module docstring)."""

    def __init__(
        self, settings: TracingSettings, *, processor: SpanProcessor | None = None
    ) -> None:
        try:
            from opentelemetry.sdk.resources import SERVICE_NAME, Resource
            from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        except ImportError:  # pragma: no cover - the [otel] extra is in [dev]
            raise ConfigError(
                "tracing needs the OpenTelemetry SDK: pip install 'team-orchestrator[otel]'",
                file="tracing",
            ) from None
        self.settings = settings
        self.resource = Resource.create({SERVICE_NAME: settings.service_name})
        self.scope = InstrumentationScope(
            "orchestrator", _version(), "https://opentelemetry.io/schemas/1.44.0"
        )
        self.sampler = _sampler(settings)
        self.processor = processor if processor is not None else _processor(settings)
        self._sampled: dict[int, bool] = {}
        self.emitted = 0

    def observe(self, bus: FactBus, team: TeamSpec, session: str, state: TeamState) -> SpanFold:
        """Trace the session whose facts ``bus`` publishes; return the fold, for the
        runtime to ask which trace a chat is in.

        Args:
            bus: The session's bus (its observer folds each durable batch).
            team: The team (its tools' kinds go on their spans).
            session: The session's URI.
            state: The session's state: an unfinished run's, when it is resumed, whose open
                spans the fold then knows.
        """
        fold = SpanFold(
            session,
            tool_kinds=_tool_kinds(team),
            capture_content=self.settings.capture_content,
        )
        failed = False
        if state.run is not None:
            try:
                fold.take_up(state)
            except Exception:  # a trace is never worth a run: say so, trace the rest
                log.exception("tracing: the resumed run's spans could not be placed")

        def spans_of(facts: Sequence[Fact]) -> None:
            nonlocal failed
            if failed:
                return
            try:
                for fact in facts:
                    ended = fold.apply(fact)
                    if ended:
                        self.emit(ended)
            except Exception:
                # An error barrier: this runs inside the recorder's commit, which must not
                # fail. The session's tracing stops; its run goes on.
                failed = True
                log.exception("tracing stopped for the session", session=session)

        bus.observe(spans_of)
        return fold

    def sampled(self, trace_id: int, parent_sampled: bool | None = None) -> bool:
        """Whether the trace is sampled: the sampler's word on its root, asked once."""
        known = self._sampled.get(trace_id)
        if known is not None:
            return known
        from opentelemetry import trace as otel_trace
        from opentelemetry.sdk.trace.sampling import Decision

        parent = None
        if parent_sampled is not None:
            flags = otel_trace.TraceFlags(0x01 if parent_sampled else 0x00)
            remote = otel_trace.SpanContext(trace_id, 1, is_remote=True, trace_flags=flags)
            parent = otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(remote))
        result = self.sampler.should_sample(parent, trace_id, "invoke_workflow")
        decided = result.decision is Decision.RECORD_AND_SAMPLE
        if len(self._sampled) > 10_000:
            self._sampled.clear()
        self._sampled[trace_id] = decided
        return decided

    def emit(self, records: Sequence[SpanRecord]) -> None:
        """Hand finished spans to the span processor (sampled ones; quick: it queues)."""
        from opentelemetry import trace as otel_trace
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.trace import Link, SpanKind, Status, StatusCode

        for record in records:
            if not record.trace_id:
                continue  # a span of a chat the fold never placed: nothing to hang it on
            if not self.sampled(record.trace_id, True if record.remote_parent else None):
                continue
            flags = otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED)
            context = otel_trace.SpanContext(
                record.trace_id, record.span_id, is_remote=False, trace_flags=flags
            )
            parent = None
            if record.parent_id is not None:
                parent = otel_trace.SpanContext(
                    record.trace_id,
                    record.parent_id,
                    is_remote=record.remote_parent,
                    trace_flags=flags,
                )
            status = (
                Status(StatusCode.ERROR, record.error)
                if record.error is not None
                else Status(StatusCode.UNSET)
            )
            span = ReadableSpan(
                name=record.name,
                context=context,
                parent=parent,
                resource=self.resource,
                attributes=dict(record.attributes),
                events=[
                    Event(e.name, dict(e.attributes), timestamp=_nanos(e.at)) for e in record.events
                ],
                links=[
                    Link(otel_trace.SpanContext(link.trace_id, link.span_id, is_remote=False))
                    for link in record.links
                ],
                kind=SpanKind.CLIENT if record.kind == "client" else SpanKind.INTERNAL,
                status=status,
                start_time=_nanos(record.start),
                end_time=max(_nanos(record.end), _nanos(record.start)),
                instrumentation_scope=self.scope,
            )
            self.processor.on_end(span)
            self.emitted += 1

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export what is queued (blocking: call it in a thread from trio)."""
        return self.processor.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Export what is queued and stop the exporter (blocking: call it in a thread)."""
        self.processor.shutdown()


def _version() -> str:
    try:
        return importlib.metadata.version("team-orchestrator")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - run from a clone
        return "0"


def _nanos(at: str) -> int:
    instant = parse_timestamp(at)
    delta = instant - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _tool_kinds(team: TeamSpec) -> dict[str, str]:
    kinds = {tool.name: "command" for tool in team.command_tools}
    kinds.update({tool.name: "python" for tool in team.python_tools})
    return kinds


def _sampler(settings: TracingSettings) -> Sampler:
    from opentelemetry.sdk.trace import sampling

    name, ratio = settings.sampler, settings.sampler_arg
    base: Sampler
    if name.endswith("always_off"):
        base = sampling.ALWAYS_OFF
    elif name.endswith("traceidratio"):
        base = sampling.TraceIdRatioBased(ratio)
    else:
        base = sampling.ALWAYS_ON
    return sampling.ParentBased(base) if name.startswith("parentbased_") else base


def _processor(settings: TracingSettings) -> SpanProcessor:
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
        SpanExporter,
    )

    exporter: SpanExporter
    if settings.exporter == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=settings.endpoint)
    return BatchSpanProcessor(exporter) if settings.batch else SimpleSpanProcessor(exporter)


# ── the process's tracing ────────────────────────────────────────────────────

_installed: Tracing | None = None


def install_tracing(tracing: Tracing | None) -> Tracing | None:
    """Make ``tracing`` the process's (None: tracing off); return the one it replaces."""
    global _installed
    before, _installed = _installed, tracing
    return before


def installed_tracing() -> Tracing | None:
    """The process's tracing, if it is on."""
    return _installed


@contextmanager
def traced(settings: TracingSettings) -> Iterator[Tracing | None]:
    """The process's tracing for the block, as ``settings`` say (nothing when they say
    off); at its end, what is queued is exported (blocking: wrap ``trio.run``, or call
    it from a thread)."""
    if not settings.enabled:
        yield None
        return
    tracing = Tracing(settings)
    before = install_tracing(tracing)
    try:
        yield tracing
    finally:
        install_tracing(before)
        tracing.shutdown()


# ── the trace a prompt came from ─────────────────────────────────────────────

#: The ``traceparent`` of the request whose prompt this task serves (an app's trace): a run
#: started, or a prompt queued, in it records it (see :func:`prompted_from`).
_prompted_from: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "prompted_from", default=None
)


@contextmanager
def prompted_from(traceparent: str | None) -> Iterator[None]:
    """Prompts given in the block came with ``traceparent`` (an incoming request's header):
    the run they start or the turn they queue continues that trace. A task spawned in the
    block (the daemon's run of a session) inherits it, as trio tasks inherit context."""
    token = _prompted_from.set(traceparent)
    try:
        yield
    finally:
        _prompted_from.reset(token)


def prompt_traceparent() -> str | None:
    """The traceparent the prompt being given came with (see :func:`prompted_from`)."""
    return _prompted_from.get()


# ── the span a task is in ────────────────────────────────────────────────────


def in_span(fold: SpanFold | None, chat: str, *parts: str) -> AbstractContextManager[None]:
    """Make the span ``parts`` name (``"turn", chat, turn_id``...) the current span of this
    task for the block, so ``traceparent`` headers and log lines name it. Nothing when
    tracing is off (``fold`` None) or the fold does not know the chat."""
    tracing = _installed
    trace_id = None if fold is None else fold.trace_of_chat(chat)
    if tracing is None or fold is None or trace_id is None:
        return _NOTHING  # off: no generator, no context (bench/peers, tracing off)
    return _current_span(tracing, fold, chat, trace_id, parts)


_NOTHING: Final = nullcontext()


@contextmanager
def _current_span(
    tracing: Tracing, fold: SpanFold, chat: str, trace_id: int, parts: tuple[str, ...]
) -> Iterator[None]:
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace

    parent = fold.sampled_parent(chat)
    sampled = tracing.sampled(trace_id, None if parent is None else parent.sampled)
    flags = otel_trace.TraceFlags(0x01 if sampled else 0x00)
    span = otel_trace.NonRecordingSpan(
        otel_trace.SpanContext(trace_id, span_id_of(*parts), is_remote=False, trace_flags=flags)
    )
    token = otel_context.attach(otel_trace.set_span_in_context(span))
    try:
        yield
    finally:
        otel_context.detach(token)


def traceparent_headers(headers: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """``headers`` with the current span's ``traceparent`` (W3C), if there is one."""
    carrier: dict[str, str] = dict(headers or {})
    if _installed is not None:
        from opentelemetry.propagate import inject

        inject(carrier)
    return carrier


def add_trace_ids(_: object, __: str, event_dict: MutableMapping[str, Any]) -> Any:
    """A structlog processor: the current span's ``trace_id`` and ``span_id`` (hex) on each
    line written inside one."""
    if _installed is None:
        return event_dict
    from opentelemetry import trace as otel_trace

    context = otel_trace.get_current_span().get_span_context()
    if context.is_valid:
        event_dict.setdefault("trace_id", otel_trace.format_trace_id(context.trace_id))
        event_dict.setdefault("span_id", otel_trace.format_span_id(context.span_id))
    return event_dict
