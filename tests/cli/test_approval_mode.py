"""How ``orchestrator run`` decides approvals routed to the user (``cli/_approval_mode``): the
parser offers exactly these modes, and a mode is its command-line word."""

from __future__ import annotations

import pytest

from orchestrator.cli import ApprovalMode
from orchestrator.cli._main import build_parser


@pytest.mark.parametrize("command", ["run", "resume"])
def test_the_parser_offers_the_modes_and_asks_by_default(command: str) -> None:
    parser = build_parser()
    given = ["run", "team.toml", "go"] if command == "run" else ["resume", "ahp-session:/s"]
    assert ApprovalMode(parser.parse_args(given).approve) is ApprovalMode.ASK
    for mode in ApprovalMode:
        assert ApprovalMode(parser.parse_args([*given, "--approve", mode.value]).approve) is mode


def test_a_word_that_is_no_mode_is_refused_by_the_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["run", "team.toml", "go", "--approve", "sometimes"])
    assert exited.value.code == 2
    said = capsys.readouterr().err
    assert "argument --approve: invalid choice: 'sometimes'" in said
    assert all(mode.value in said.rsplit("choose from", 1)[1] for mode in ApprovalMode)


def test_a_mode_is_its_word() -> None:
    assert [str(mode) for mode in ApprovalMode] == ["ask", "auto", "deny"]
    assert ApprovalMode("deny") == "deny"
