"""The library's logging when the program configured none: structlog's events go to the
standard library's ``orchestrator.*`` loggers (filtered by level, ``key=value`` lines), a
``NullHandler`` keeps them silent until the program configures logging, and nothing is
written to stdout. A program's own structlog configuration is kept."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog

from orchestrator.runtime import library_logging


@pytest.fixture(autouse=True)
def unconfigured_structlog() -> Iterator[None]:
    """structlog as a program that never configured it finds it; the suite's put back after."""
    was_configured = structlog.is_configured()
    config = structlog.get_config()
    root = logging.getLogger("orchestrator")
    handlers, level = list(root.handlers), root.level
    structlog.reset_defaults()
    try:
        yield
    finally:
        structlog.reset_defaults()
        if was_configured:
            structlog.configure(**config)
        root.handlers[:] = handlers
        root.setLevel(level)


def null_handlers() -> list[logging.Handler]:
    return [
        h for h in logging.getLogger("orchestrator").handlers if isinstance(h, logging.NullHandler)
    ]


def test_events_reach_the_standard_library_as_key_value_lines(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    library_logging()
    with caplog.at_level(logging.INFO, logger="orchestrator"):
        structlog.get_logger("orchestrator.runtime").warning("run started", team="t", n=2)
    [record] = caplog.records
    assert (record.name, record.levelno) == ("orchestrator.runtime", logging.WARNING)
    assert record.getMessage() == "event='run started' n=2 team='t'"
    assert capsys.readouterr().out == ""


def test_a_level_the_program_leaves_out_is_not_rendered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    library_logging()
    with caplog.at_level(logging.WARNING, logger="orchestrator"):
        structlog.get_logger("orchestrator.runtime").debug("chatty", x=1)
        structlog.get_logger("orchestrator.runtime").info("chatty", x=1)
    assert caplog.records == []


def test_the_orchestrator_logger_gets_one_null_handler_however_often_it_is_called() -> None:
    library_logging()
    library_logging()
    assert len(null_handlers()) == 1


def test_an_unconfigured_program_sees_nothing_on_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Left unconfigured, structlog would print every event to stdout."""
    library_logging()
    structlog.get_logger("orchestrator.runtime").error("it broke", why="disk")
    captured = capsys.readouterr()
    assert captured.out == ""


def test_a_program_s_own_configuration_is_kept() -> None:
    processors = [structlog.processors.JSONRenderer()]
    structlog.configure(processors=processors)
    library_logging()
    assert structlog.get_config()["processors"] == processors
    assert len(null_handlers()) == 1
