"""What every command shares (``cli/_conventions``): exit statuses, the one format of stderr,
the journal's default place."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from orchestrator.cli._conventions import (
    EXIT_STATUSES,
    Exit,
    Reporter,
    default_db,
    logs_as_json,
)


class TestDefaults:
    def test_the_parser_s_default_port_is_the_daemon_s(self) -> None:
        from orchestrator.cli._conventions import DEFAULT_PORT
        from orchestrator.server import DEFAULT_PORT as DAEMON_PORT

        assert DEFAULT_PORT == DAEMON_PORT

    def test_the_journal_is_under_the_xdg_state_directory(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
        assert default_db() == tmp_path / "orchestrator" / "journal.db"
        monkeypatch.setenv("XDG_STATE_HOME", "")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert (
            default_db() == tmp_path / "home" / ".local" / "state" / "orchestrator" / "journal.db"
        )

    def test_the_exit_statuses_are_the_ones_help_lists(self) -> None:
        for status in Exit:
            assert f"{int(status)} " in EXIT_STATUSES
        assert [int(s) for s in Exit] == [0, 1, 2, 3]


class _Stream(io.StringIO):
    def __init__(self, *, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class TestLogsAsJson:
    @pytest.mark.parametrize(
        ("log_format", "tty", "as_json"),
        [
            ("auto", True, False),
            ("auto", False, True),
            ("console", False, False),
            ("json", True, True),
        ],
    )
    def test_auto_means_json_unless_a_person_reads(
        self, log_format: str, tty: bool, as_json: bool
    ) -> None:
        assert logs_as_json(log_format, _Stream(tty=tty)) is as_json


class TestReporter:
    def test_for_a_person_each_line_is_prefixed_and_progress_is_as_is(self) -> None:
        stream = io.StringIO()
        reporter = Reporter(as_json=False, stream=stream)
        reporter.say("session ahp-session:/s", session="ahp-session:/s")
        reporter.progress("lead: thinking", agent="lead")
        reporter.error("the run failed: gave up", status="failed")
        assert stream.getvalue() == (
            "orchestrator: session ahp-session:/s\n"
            "lead: thinking\n"
            "orchestrator: the run failed: gave up\n"
        )

    def test_as_json_each_line_is_a_log_record_with_its_fields(self) -> None:
        stream = io.StringIO()
        reporter = Reporter(as_json=True, stream=stream)
        reporter.say("session ahp-session:/s", session="ahp-session:/s")
        reporter.progress_lines([("one", {"n": 1}), ("two", {"n": 2})])
        reporter.error("the run failed", status="failed", path=Path("/x"))
        records = [json.loads(line) for line in stream.getvalue().splitlines()]
        assert [{k: v for k, v in record.items() if k != "timestamp"} for record in records] == [
            {
                "level": "info",
                "logger": "orchestrator.cli",
                "event": "session ahp-session:/s",
                "session": "ahp-session:/s",
            },
            {"level": "info", "logger": "orchestrator.console", "event": "one", "n": 1},
            {"level": "info", "logger": "orchestrator.console", "event": "two", "n": 2},
            {
                "level": "error",
                "logger": "orchestrator.cli",
                "event": "the run failed",
                "status": "failed",
                "path": "/x",
            },
        ]
        assert all(r["timestamp"].endswith("Z") for r in records)

    @pytest.mark.parametrize("as_json", [True, False])
    def test_a_password_in_a_line_or_a_field_never_shows(self, as_json: bool) -> None:
        stream = io.StringIO()
        url = "postgresql://alice:hunter2-secret@db.internal/journal"
        Reporter(as_json=as_json, stream=stream).error(f"cannot reach {url}", db=url)
        assert "hunter2-secret" not in stream.getvalue()
        assert "alice" in stream.getvalue()
