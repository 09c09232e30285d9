"""What every command shares: its exit statuses, the one voice it speaks in on stderr, and
where the journal is by default.

Kept apart from the commands so that building the parser (and ``--help``) imports none of
them.

Stderr carries one format. A command's own lines (an error, a session id, a run's outcome)
go through :class:`Reporter`:

- when the logs are drawn for a person, it writes them as ``orchestrator: ...`` lines;
- when the logs are JSON (``--log-format json``, or stderr is not a terminal), it writes them
  as JSON records, with the log records' keys (``timestamp``, ``level``, ``logger``,
  ``event``).

A program reading a daemon's or a run's stderr never has to tell two
formats apart.
"""

from __future__ import annotations

import enum
import json
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TextIO

__all__: list[str] = []


class Exit(enum.IntEnum):
    """How a command ends (``orchestrator --help`` lists them)."""

    OK = 0
    FAILED = 1  # the run failed, or a check found problems
    BAD_INPUT = 2  # the command line, a team file, a journal or a file that cannot be used
    UNAVAILABLE = 3  # the daemon (or another service the command needs) cannot be reached


EXIT_OK: Final = Exit.OK
EXIT_FAILED: Final = Exit.FAILED
EXIT_BAD_INPUT: Final = Exit.BAD_INPUT
EXIT_UNAVAILABLE: Final = Exit.UNAVAILABLE

EXIT_STATUSES: Final = (
    "exit status: 0 ok; 1 the run failed or a check found problems; 2 bad usage or input; "
    "3 the daemon or a service it needs cannot be reached"
)

#: The variable that overrides the model of a run's OpenAI-compatible agents (``--model``).
MODEL_ENV: Final = "ORCHESTRATOR_MODEL"

#: The daemon's port when its config names none (the server's DEFAULT_PORT: a test checks
#: they agree; named here so that the parser does not load the server's config).
DEFAULT_PORT: Final = 8765

#: The variable that holds the token of the daemon's operator (or viewer).
TOKEN_ENV: Final = "ORCHESTRATOR_TOKEN"

LOG_FORMATS: Final = ("auto", "console", "json")


def default_db() -> Path:
    """The journal's default place: ``$XDG_STATE_HOME/orchestrator/journal.db``."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "orchestrator" / "journal.db"


def logs_as_json(log_format: str, stream: TextIO) -> bool:
    """Whether logs (and the command's own lines) are JSON: ``auto`` means when ``stream``
    is not a terminal (systemd, CI, a file)."""
    if log_format == "auto":
        return not stream.isatty()
    return log_format == "json"


class Reporter:
    """A command's own lines on stderr, in the format the logs use."""

    def __init__(self, *, as_json: bool, stream: TextIO | None = None) -> None:
        self.as_json = as_json
        self._stream = stream

    def say(
        self,
        message: str,
        *,
        level: str = "info",
        logger: str = "orchestrator.cli",
        **fields: object,
    ) -> None:
        """Tell the user ``message``; ``fields`` are kept as keys in JSON (a person reads
        them in ``message``)."""
        self._write(message, f"orchestrator: {message}", level, logger, fields)

    def progress(self, line: str, **fields: object) -> None:
        """A line of a run's progress (the console's plain output), as it is on a console."""
        self._write(line, line, "info", "orchestrator.console", fields)

    def progress_lines(self, lines: Sequence[tuple[str, Mapping[str, object]]]) -> None:
        """Several lines of :meth:`progress` (each with its fields), in one write."""
        self._write_all(
            [(line, line, "info", "orchestrator.console", fields) for line, fields in lines]
        )

    def _write(
        self, message: str, text: str, level: str, logger: str, fields: Mapping[str, object]
    ) -> None:
        self._write_all([(message, text, level, logger, fields)])

    def _write_all(
        self, records: Sequence[tuple[str, str, str, str, Mapping[str, object]]]
    ) -> None:
        """Each (message, text, level, logger, fields) as a line, written and flushed once.

        Every line goes through the logs' redactor first: an error quotes what it was given
        (a journal's URL with its password, a plugin's exception with its key)."""
        # Imported when a line is written: the light commands (sessions, teams check) do
        # not load the logging stack unless they have something to say.
        from orchestrator.base import redact_text

        records = [
            (
                redact_text(message),
                redact_text(text),
                level,
                logger,
                {
                    key: redact_text(value) if isinstance(value, str) else value
                    for key, value in fields.items()
                },
            )
            for message, text, level, logger, fields in records
        ]
        stream = self._stream or sys.stderr
        if self.as_json:
            timestamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
            out = [
                json.dumps(
                    {
                        "timestamp": timestamp,
                        "level": level,
                        "logger": logger,
                        "event": message,
                        **fields,
                    },
                    ensure_ascii=False,
                    default=str,
                )
                + "\n"
                for message, _, level, logger, fields in records
            ]
        else:
            out = [text + "\n" for _, text, _, _, _ in records]
        stream.write("".join(out))
        stream.flush()

    def error(self, message: str, **fields: object) -> None:
        self._write(message, f"orchestrator: {message}", "error", "orchestrator.cli", fields)
