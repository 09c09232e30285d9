"""The library's logging when the program has not configured any: the standard library's.

structlog, left unconfigured, prints every event (debug included) to **stdout**: a program
that embeds the runtime would find our log lines mixed into its output. So the public API
(:mod:`orchestrator`) calls :func:`library_logging` before it runs anything. If structlog is
not configured yet, our events are routed to stdlib :mod:`logging` under the loggers
``orchestrator.*`` (levels filtered before any rendering). ``orchestrator`` gets a
:class:`logging.NullHandler`, as the logging HOWTO asks of a library. The result: nothing is
written unless the program configures logging (``logging.basicConfig`` shows our warnings as
``key=value`` lines). Nothing ever goes to stdout.

A program that configures structlog itself (before or after) keeps its configuration; the
CLI and the daemon call :func:`~orchestrator.runtime._logging.configure_logging`, which
replaces this one.
"""

from __future__ import annotations

import logging

import structlog

__all__ = ["library_logging"]


def library_logging() -> None:
    """Route the library's structlog events to stdlib logging, unless structlog is
    configured already (by the program, or by an earlier call). Idempotent."""
    logging.getLogger("orchestrator").addHandler(_NULL)  # the same handler: added once
    if structlog.is_configured():
        return
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,  # first: a disabled level costs nothing more
            structlog.contextvars.merge_contextvars,
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: a configuration made later (the program's) applies to our loggers.
        cache_logger_on_first_use=False,
    )


_NULL = logging.NullHandler()
