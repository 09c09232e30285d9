"""Logging, configured once: console lines on a terminal, JSON under systemd.

The stdlib loggers of the libraries we use go through structlog's
``ProcessorFormatter``, so every line has one format. Tasks bind their ids
(chat, agent, session) with ``structlog.contextvars.bound_contextvars``.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

__all__ = ["configure_logging"]


def configure_logging(
    *, json: bool | None = None, level: int = logging.WARNING, stream: TextIO | None = None
) -> None:
    """Route structlog and stdlib logging to ``stream`` (stderr by default).

    ``json=None`` picks JSON when ``stream`` is not a terminal (systemd, CI, a
    file) and a console renderer otherwise.
    """
    out = stream or sys.stderr
    as_json = not out.isatty() if json is None else json
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor
    if as_json:
        renderer = structlog.processors.JSONRenderer()
        shared.append(structlog.processors.dict_tracebacks)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=out.isatty())
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
