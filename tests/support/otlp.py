"""A real OTLP/HTTP trace receiver on loopback: what a collector does with our exports.

It serves ``POST /v1/traces`` in a thread (the SDK's exporter sends from its own thread, a
CLI subprocess from its own process), decodes each body as an ``ExportTraceServiceRequest``
with the official ``opentelemetry-proto`` package, and keeps the spans, flattened to
:class:`ReceivedSpan` values the tests compare.
"""

from __future__ import annotations

import gzip
import http.server
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status


@attrs.frozen(kw_only=True)
class ReceivedSpan:
    """One exported span, as the receiver decoded it (ids in hex, as trace UIs show them)."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root
    kind: int
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    events: tuple[tuple[str, int], ...]
    links: tuple[tuple[str, str], ...]
    error: str | None  # the status message when the status is ERROR
    service: str
    scope: str


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    if kind is None:
        return None
    return getattr(value, kind)


class OtlpReceiver:
    """The receiver's spans, and the URL to export them to (``endpoint``)."""

    def __init__(self, port: int) -> None:
        self.endpoint = f"http://127.0.0.1:{port}/v1/traces"
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.traceparents: list[str] = []  # traceparent headers the exports came with
        self._lock = threading.Lock()

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans: list[ReceivedSpan] = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                spans.extend(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        events=tuple((e.name, e.time_unix_nano) for e in span.events),
                        links=tuple(
                            (link.trace_id.hex(), link.span_id.hex()) for link in span.links
                        ),
                        error=(
                            span.status.message
                            if span.status.code == Status.STATUS_CODE_ERROR
                            else None
                        ),
                        service=str(resource.get("service.name", "")),
                        scope=scope_spans.scope.name,
                    )
                    for span in scope_spans.spans
                )
        with self._lock:
            self.requests += 1
            self.spans.extend(spans)

    def wait_for(self, count: int, timeout: float = 30.0) -> list[ReceivedSpan]:
        """The spans once at least ``count`` came (a thread's export: polled, bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if len(self.spans) >= count:
                    return list(self.spans)
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.spans)} spans came, not {count}")
            time.sleep(0.01)

    def received(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)


@contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """A receiver serving on 127.0.0.1, port 0, for the block."""
    receiver: OtlpReceiver | None = None

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            assert receiver is not None
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            receiver.take(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = OtlpReceiver(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def otel_environment(receiver: OtlpReceiver, **more: str) -> dict[str, str]:
    """The standard variables that send a process's spans to ``receiver``, at once."""
    return {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "orchestrator-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        **more,
    }


def tree(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    """Each span's children, by the parent's span id ("" for the roots)."""
    children: dict[str, list[ReceivedSpan]] = {}
    for span in sorted(spans, key=lambda s: (s.start_ns, s.name)):
        children.setdefault(span.parent_id, []).append(span)
    return children


def draw(spans: list[ReceivedSpan]) -> str:
    """The spans as an indented text tree, with durations: what a trace UI draws."""
    children = tree(spans)
    ids = {span.span_id for span in spans}
    lines: list[str] = []

    def walk(span: ReceivedSpan, depth: int) -> None:
        ms = (span.end_ns - span.start_ns) / 1e6
        status = f"  ERROR: {span.error}" if span.error else ""
        lines.append(f"{'  ' * depth}{span.name}  {ms:.0f} ms{status}")
        for child in children.get(span.span_id, []):
            walk(child, depth + 1)

    for span in sorted(spans, key=lambda s: s.start_ns):
        if span.parent_id not in ids:
            walk(span, 0)
    return "\n".join(lines)
