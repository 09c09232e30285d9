"""Logging, configured once: console lines on a terminal, JSON under systemd.

Theory of operation: every line, ours (structlog) or a library's (stdlib logging: hypercorn,
trio-websocket, httpx), goes through the same steps before it is rendered:

1. context and metadata: the task's context variables, the current span's ``trace_id`` and
   ``span_id`` when tracing is on (:mod:`orchestrator.runtime._tracing`), the level, the
   logger, a timestamp;
2. the repeat limit (:class:`RepeatLimiter`): an error or warning seen more than
   :data:`REPEAT_LIMIT` times in :data:`REPEAT_WINDOW` seconds is dropped. One line says later
   how many were. It runs before the traceback is formatted, so a dropped repeat costs nothing
   more;
3. the exception, formatted with at most :data:`MAX_FRAMES` frames a stack and never with
   frame locals (they hold ASGI scopes, headers, tokens);
4. :func:`sanitize`: secrets redacted wherever they appear, the rendered traceback included,
   then every value cut to a bounded size. Values are cut after redaction, so a secret that
   straddles the cut is never half shown.

Our events run these steps as structlog processors; a library's records run them in the
``ProcessorFormatter``'s ``foreign_pre_chain`` (the repeat limit as a filter on the handler:
a formatter cannot drop a record). Before the repeat limit, a library's line that repeats one
of ours in other words (stamina's retry line) is dropped, in structlog's chain and by a filter
on the handler, as the repeat limit is. Tasks bind their ids (chat, agent, session) with
``structlog.contextvars.bound_contextvars``, or :class:`bound_log_context` where one is
entered per worker.

The secrets redacted by their exact value are the daemon's tokens and the model backends'
API keys: whoever holds one calls :func:`orchestrator.base.register_secret` when it starts
(see :mod:`orchestrator.base._redact`).
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TextIO

import attrs
import structlog
from structlog.typing import EventDict, ExcInfo, Processor, WrappedLogger

from orchestrator.base import (
    REDACTED,
    SENSITIVE_HEADERS,
    SENSITIVE_KEYS,
    redact_text,
    register_secret,
    registered_secrets,
)

__all__ = [
    "MAX_EVENT_CHARS",
    "MAX_FRAMES",
    "MAX_TRACEBACK_CHARS",
    "MAX_VALUE_CHARS",
    "REPEAT_LIMIT",
    "REPEAT_WINDOW",
    "RepeatKey",
    "RepeatLimiter",
    "bound_log_context",
    "configure_logging",
]


class bound_log_context:  # noqa: N801  # named as the structlog function it stands for
    """``structlog.contextvars.bound_contextvars(**fields)`` for the hot path.

    A fan-out binds a worker's chat and agent once per worker. This resets each variable by
    the token its binding returned. structlog's reads the whole context first (a copy of every
    context variable) and binds the saved values again after. Either way, inside the block
    each key has its value, and after it the value it had before (or none)."""

    __slots__ = ("_fields", "_tokens")

    def __init__(self, **fields: Any) -> None:
        self._fields = fields
        self._tokens: Mapping[str, Any] = {}

    def __enter__(self) -> None:
        self._tokens = structlog.contextvars.bind_contextvars(**self._fields)

    def __exit__(self, *exc_info: object) -> None:
        structlog.contextvars.reset_contextvars(**self._tokens)


#: Frames kept of each stack of a traceback, half from each end: the frames nearest the
#: caller and nearest the failure are the ones read; a stack much deeper is a recursion,
#: whose middle repeats itself (a RecursionError has ~1,000 frames).
MAX_FRAMES: Final = 20
#: Characters kept of one string value: a line shows the start of a long prompt or provider
#: message; the journal, not the log, keeps content.
MAX_VALUE_CHARS: Final = 4_096
#: Characters kept of a traceback (text on a terminal, all its strings together in JSON):
#: MAX_FRAMES frames with their source lines take 2-4 KiB, which leaves room for the
#: exceptions chained to it (cause, context, a group's members) and their messages.
MAX_TRACEBACK_CHARS: Final = 16_384
#: Characters of all an event's values together, its traceback and message aside. With
#: those (16 + 4 KiB) a line of ASCII text stays under journald's default LineMax (48 KiB),
#: past which it splits a line in several entries that no longer parse as JSON.
MAX_EVENT_CHARS: Final = 24_576
#: Containers nested deeper than this in a value are shown as a note: a value built by
#: recursion (or holding itself) cannot make the renderer recurse without end.
MAX_DEPTH: Final = 12
#: An integer with more bits is shown as a note: ``str()`` of an int past 4,300 digits raises.
MAX_INT_BITS: Final = 1_024
#: The same warning or error is logged this many times a window, the rest counted and
#: summed up in one line when the window ends: a client repeating a failing request cannot
#: fill the disk or take the CPU with tracebacks.
REPEAT_LIMIT: Final = 10
REPEAT_WINDOW: Final = 60.0
#: Distinct warnings and errors tracked at once; past it, the oldest window ends early (and
#: is summed up), so a flood of distinct errors takes bounded memory and a repeat amid it is
#: still limited.
MAX_REPEAT_KEYS: Final = 1_000
#: Characters of the event and error text that make two events "the same".
REPEAT_KEY_CHARS: Final = 200
# ─── bounds ───────────────────────────────────────────────────────────────────


@attrs.define
class _Budget:
    """Characters an event's values may still take, about as rendered (quotes and
    separators included)."""

    left: int


def _cut(text: str, limit: int, budget: _Budget, length: int | None = None) -> str:
    """``text`` cut to what ``limit`` and ``budget`` allow, with a note of how much of
    ``length`` (the text before redaction) was left out."""
    if len(text) <= limit and len(text) <= budget.left and length is None:
        budget.left -= len(text) + 4
        return text
    keep = max(0, min(limit, budget.left))
    budget.left -= min(len(text), keep) + 4
    length = len(text) if length is None else length
    if length <= keep:
        return text
    return f"{text[:keep]}… [{length - keep:,} characters cut]"


def _shown(text: str, limit: int, budget: _Budget) -> str:
    """``text`` redacted, then cut.

    A long text is cut to a prefix first: redaction is linear, but a megabyte dense with
    credentials takes ~200 ms. Whatever ends that prefix and begins a registered secret is
    dropped with the rest. So a secret across the cut is never half shown."""
    longest = max(limit, 0) + _SLACK
    if len(text) <= longest:
        return _cut(redact_text(text), limit, budget)
    prefix = text[:longest]
    for value in registered_secrets():
        for size in range(min(len(value), len(prefix)) - 1, 0, -1):
            if prefix.endswith(value[:size]):
                prefix = prefix[:-size]
                break
    return _cut(redact_text(prefix), limit, budget, length=len(text))


#: Characters past a value's limit that redaction still sees: enough for a credential to
#: be recognised whole where the cut falls, with room for redaction to shorten the text.
_SLACK: Final = 1_024


def _repr(value: object) -> str:
    try:
        return repr(value)
    except Exception:  # a broken __repr__ must not break the line
        return f"<{type(value).__qualname__} without a repr>"


def _clean(value: object, limit: int, budget: _Budget, depth: int) -> object:
    """``value`` redacted and bounded, as the renderers can show it: strings, numbers,
    None, lists, tuples and dicts with string keys; anything else becomes its repr."""
    if value is None or isinstance(value, bool):
        budget.left -= 6
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            return _cut(f"<an integer of {value.bit_length():,} bits>", limit, budget)
        budget.left -= len(repr(value)) + 2
        return value
    if isinstance(value, float):
        if not math.isfinite(value):  # JSON has no NaN
            return _cut(repr(value), limit, budget)
        budget.left -= len(repr(value)) + 2
        return value
    if isinstance(value, str):
        return _shown(value, limit, budget)
    if budget.left <= 0:
        return "[cut: the event is too long]"
    if depth >= MAX_DEPTH:
        return f"[nested deeper than {MAX_DEPTH} levels]"
    budget.left -= 2
    if isinstance(value, Mapping):
        return _clean_mapping(value, limit, budget, depth)
    if isinstance(value, list | tuple):
        items: list[object] = []
        if len(value) == 2 and _is_sensitive(value[0], SENSITIVE_HEADERS):  # an ASGI header
            items = [_clean(value[0], limit, budget, depth + 1), REDACTED]
        else:
            for index, item in enumerate(value):
                if budget.left <= 0:
                    items.append(f"[{len(value) - index:,} more items cut]")
                    break
                items.append(_clean(item, limit, budget, depth + 1))
        return tuple(items) if isinstance(value, tuple) else items
    return _shown(_repr(value), limit, budget)


def _clean_mapping(
    value: Mapping[Any, Any], limit: int, budget: _Budget, depth: int
) -> dict[str, object]:
    out: dict[str, object] = {}
    for index, (key, item) in enumerate(value.items()):
        if budget.left <= 0:
            out["…"] = f"[{len(value) - index:,} more keys cut]"
            break
        name = _shown(key if isinstance(key, str) else _repr(key), limit, budget)
        out[name] = REDACTED if _is_sensitive(key) else _clean(item, limit, budget, depth + 1)
    return out


def _is_sensitive(key: object, names: frozenset[str] = SENSITIVE_KEYS) -> bool:
    if isinstance(key, bytes):
        key = key.decode("latin-1")
    return isinstance(key, str) and key.lower() in names


#: Keys of an event that ``ProcessorFormatter`` uses and removes before rendering.
_META: Final = frozenset({"_record", "_from_structlog"})
#: Keys every line keeps, whatever else it holds: each is bounded on its own.
_ESSENTIAL: Final = frozenset({"event", "level", "logger", "timestamp"})
#: Of these, the ones the processors before wrote, from the code's own words.
_OURS: Final = frozenset({"level", "logger", "timestamp"})
#: Keys holding a rendered traceback or stack: they get the traceback's own bound.
_TRACEBACKS: Final = frozenset({"exception", "stack", "stack_info"})


def sanitize(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """Processor: every key and value of the event redacted and bounded (see the module
    docstring).

    A traceback (``exception``) is bounded by :data:`MAX_TRACEBACK_CHARS`; the event, level,
    logger and timestamp by :data:`MAX_VALUE_CHARS` each; everything else together by
    :data:`MAX_EVENT_CHARS`, each string in it by :data:`MAX_VALUE_CHARS`.
    """
    budget = _Budget(MAX_EVENT_CHARS)
    out: EventDict = {}
    left_out = 0
    for key, value in event_dict.items():
        if key in _META:
            out[key] = value
        elif key in _TRACEBACKS:
            out[key] = _clean(value, MAX_TRACEBACK_CHARS, _Budget(MAX_TRACEBACK_CHARS), 0)
        elif key in _OURS and isinstance(value, str) and len(value) <= MAX_VALUE_CHARS:
            out[key] = value
        elif key in _ESSENTIAL:
            out[key] = _clean(value, MAX_VALUE_CHARS, _Budget(MAX_VALUE_CHARS), 0)
        elif budget.left <= 0:
            left_out += 1
        else:
            name = _shown(key, MAX_VALUE_CHARS, budget)
            out[name] = (
                REDACTED if _is_sensitive(key) else _clean(value, MAX_VALUE_CHARS, budget, 0)
            )
    if left_out:
        out["…"] = f"[{left_out:,} more keys cut]"
    return out


# ─── exceptions ───────────────────────────────────────────────────────────────


class _CutStack(traceback.StackSummary):
    """A stack with its middle frames left out, and a line that says so."""

    def __init__(self, frames: list[traceback.FrameSummary], cut: int) -> None:
        super().__init__(frames)
        self.at = len(frames) - len(frames) // 2  # where the cut is
        self.cut = cut

    def format(self, **kwargs: Any) -> list[str]:
        head = traceback.StackSummary.from_list(self[: self.at]).format(**kwargs)
        tail = traceback.StackSummary.from_list(self[self.at :]).format(**kwargs)
        return [*head, f"  [… {self.cut:,} frames cut …]\n", *tail]


def _cut_frames(exc: traceback.TracebackException, seen: set[int]) -> None:
    """Keep MAX_FRAMES frames of each stack in ``exc``'s chain and groups."""
    if id(exc) in seen:
        return
    seen.add(id(exc))
    stack = exc.stack
    if len(stack) > MAX_FRAMES:
        half = MAX_FRAMES // 2
        exc.stack = _CutStack(
            [*stack[: MAX_FRAMES - half], *stack[-half:]], len(stack) - MAX_FRAMES
        )
    for other in (exc.__cause__, exc.__context__, *(exc.exceptions or ())):
        if other is not None:
            _cut_frames(other, seen)


def _console_traceback(exc_info: ExcInfo) -> str:
    """A plain traceback, formatted before redaction sees it (a renderer's own formatter
    would run after every processor): no locals, MAX_FRAMES frames a stack. Plain text,
    not rich's panels: these take ~100 ms to draw and colour codes could split a token."""
    exc = traceback.TracebackException(*exc_info, lookup_lines=False)
    _cut_frames(exc, set())
    return "".join(exc.format()).rstrip("\n")


def _exception_renderer(as_json: bool) -> Processor:
    if as_json:
        return structlog.processors.ExceptionRenderer(
            structlog.tracebacks.ExceptionDictTransformer(show_locals=False, max_frames=MAX_FRAMES)
        )
    return structlog.processors.ExceptionRenderer(_console_traceback)


# ─── repeats ──────────────────────────────────────────────────────────────────

_LEVELS: Final = logging.getLevelNamesMapping()
#: A summary record carries this attribute: the filter lets it through.
_SUMMARY: Final = "orchestrator_repeat_summary"


@attrs.frozen(kw_only=True)
class RepeatKey:
    logger: str
    level: int
    event: str
    error: str


@attrs.define
class _Seen:
    started: float
    count: int = 1


def _log_summary(key: RepeatKey, dropped: int, seconds: float) -> None:
    what = f"{key.event} ({key.error})" if key.error else key.event
    logging.getLogger(key.logger).log(
        key.level,
        "%s repeated %s more times in the last %s s (not logged)",
        what,
        f"{dropped:,}",
        f"{seconds:.3g}",
        extra={_SUMMARY: True},
    )


class RepeatLimiter:
    """Drops a warning or error seen more than ``limit`` times in ``window`` seconds.

    Windows are fixed, one a key, from the key's first event; when one ends (noticed at the
    next line logged, whatever it is; or early, the oldest, when ``max_keys`` are tracked)
    and events were dropped, ``summarize(key, dropped, seconds)`` is called once.
    Thread-safe: the journal's writer thread logs too.
    """

    def __init__(
        self,
        *,
        limit: int = REPEAT_LIMIT,
        window: float = REPEAT_WINDOW,
        clock: Callable[[], float] = time.monotonic,
        summarize: Callable[[RepeatKey, int, float], None] = _log_summary,
        max_keys: int = MAX_REPEAT_KEYS,
    ) -> None:
        self.limit = limit
        self.window = window
        self.max_keys = max_keys
        self._clock = clock
        self._summarize = summarize
        self._lock = threading.Lock()
        # Insertion order is start order (one window length for all): the oldest is first.
        self._seen: dict[RepeatKey, _Seen] = {}

    def admit(self, key: RepeatKey | None) -> bool:
        """Whether to log the event of ``key`` (None: an event below warning, always
        logged, which only lets windows that ended be summed up)."""
        ended: list[tuple[RepeatKey, int, float]] = []
        with self._lock:
            now = self._clock()
            while self._seen:
                first, seen = next(iter(self._seen.items()))
                if now < seen.started + self.window:
                    break
                del self._seen[first]
                if seen.count > self.limit:
                    ended.append((first, seen.count - self.limit, self.window))
            if key is None:
                admitted = True
            elif (seen_now := self._seen.get(key)) is not None:
                seen_now.count += 1
                admitted = seen_now.count <= self.limit
            else:
                if len(self._seen) >= self.max_keys:  # the oldest window ends early
                    first, seen = next(iter(self._seen.items()))
                    del self._seen[first]
                    if seen.count > self.limit:
                        ended.append((first, seen.count - self.limit, now - seen.started))
                self._seen[key] = _Seen(now)
                admitted = True
        for ended_key, dropped, seconds in ended:
            self._summarize(ended_key, dropped, seconds)
        return admitted

    def processor(self, _logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
        """The structlog processor: raises ``DropEvent`` for a repeat over the limit."""
        level = _LEVELS.get(str(event_dict.get("level", "")).upper(), logging.NOTSET)
        key = None
        if level >= logging.WARNING:
            error = event_dict.get("error")
            key = _key(
                str(event_dict.get("logger", "")),
                level,
                str(event_dict.get("event", "")),
                _exc_text(event_dict.get("exc_info")) if error is None else _text(error),
            )
        if not self.admit(key):
            raise structlog.DropEvent
        return event_dict

    def filter(self, record: logging.LogRecord) -> bool:
        """The stdlib handler's filter, for a library's records (ours passed ``processor``)."""
        if isinstance(record.msg, dict) or getattr(record, _SUMMARY, False):
            return True
        key = None
        if record.levelno >= logging.WARNING:
            error = _exc_text(record.exc_info) if record.exc_info else ""
            key = _key(record.name, record.levelno, record.getMessage(), error)
        return self.admit(key)


def _key(logger: str, level: int, event: str, error: str) -> RepeatKey:
    return RepeatKey(
        logger=logger,
        level=level,
        event=event[:REPEAT_KEY_CHARS],
        error=error[:REPEAT_KEY_CHARS],
    )


def _text(value: object) -> str:
    try:
        return str(value)
    except Exception:
        return _repr(value)


def _exc_text(exc_info: object) -> str:
    if not exc_info:
        return ""
    if isinstance(exc_info, BaseException):
        exc: object = exc_info
    elif isinstance(exc_info, tuple) and len(exc_info) == 3:
        exc = exc_info[1]
    else:
        exc = sys.exc_info()[1]
    return "" if exc is None else f"{type(exc).__qualname__}: {_text(exc)}"


# ─── libraries' lines said in ours ────────────────────────────────────────────

#: Lines a library logs that the project logs in its own words: (logger, event). stamina's
#: retry line (``callable='<context block>'``, a repr of the exception) repeats the warning
#: the model backend writes for each retry, which names the attempt, the wait and the failure.
_SAID_IN_OUR_WORDS: Final = frozenset({("stamina", "stamina.retry_scheduled")})


def _drop_said_in_our_words(
    _logger: WrappedLogger, _method: str, event_dict: EventDict
) -> EventDict:
    """Processor: drops a library's structlog event listed in :data:`_SAID_IN_OUR_WORDS`."""
    if (event_dict.get("logger"), event_dict.get("event")) in _SAID_IN_OUR_WORDS:
        raise structlog.DropEvent
    return event_dict


def _not_said_in_our_words(record: logging.LogRecord) -> bool:
    """The stdlib handler's filter: False for a library's record listed in
    :data:`_SAID_IN_OUR_WORDS` (stamina's hook for stdlib logging, its choice where structlog
    is not installed, writes its line there). Our events (a dict) passed the processor."""
    if not isinstance(record.msg, str):
        return True
    return (record.name, record.msg) not in _SAID_IN_OUR_WORDS


# ─── configuration ────────────────────────────────────────────────────────────


class _CurrentStderr:
    """A stream that is ``sys.stderr`` as it is at each write."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _trace_ids(logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
    """The current span's ids on a line written inside one (see ``_tracing.add_trace_ids``).
    Tracing is on only once its module is loaded, so a process without it pays a lookup."""
    tracing = sys.modules.get("orchestrator.runtime._tracing")
    if tracing is None:
        return event_dict
    with_ids: EventDict = tracing.add_trace_ids(logger, method, event_dict)
    return with_ids


def configure_logging(
    *,
    json: bool | None = None,
    level: int = logging.WARNING,
    stream: TextIO | None = None,
    secrets: Iterable[str] = (),
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Route structlog and stdlib logging to ``stream`` (stderr by default).

    Args:
        json: JSON lines or a console renderer. None picks JSON when ``stream`` is not a
            terminal (systemd, CI, a file), and a console renderer otherwise.
        level: The root logger's level (default ``logging.WARNING``).
        stream: Where the lines go (stderr by default).
        secrets: Registered as by :func:`orchestrator.base.register_secret`.
        clock: Times the repeat limit's windows.
    """
    for secret in secrets:
        register_secret(secret)
    out = stream or sys.stderr
    as_json = not out.isatty() if json is None else json
    limiter = RepeatLimiter(clock=clock)
    before: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        _trace_ids,  # inside a span (tracing on): its trace_id and span_id
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    after: list[Processor] = [_exception_renderer(as_json), sanitize]
    renderer: Processor
    if as_json:
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=out.isatty())
    # The list stays the same object across calls: loggers cached on first use (and
    # ``structlog.testing.capture_logs``) hold on to it.
    processors = structlog.get_config()["processors"]
    if not isinstance(processors, list):  # configured elsewhere with a tuple, say
        processors = []
    processors[:] = [
        *before,
        _drop_said_in_our_words,
        limiter.processor,
        *after,
        structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
    ]
    structlog.configure(
        processors=processors,
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    # Without a stream of its own, the handler writes to whatever sys.stderr is when a record
    # is written: a live display that redirects stderr (the CLI's team tree) then prints the
    # logs above itself instead of being drawn over.
    handler = logging.StreamHandler(out if stream is not None else _CurrentStderr())
    handler.addFilter(_not_said_in_our_words)
    handler.addFilter(limiter.filter)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*before, *after],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
