"""``orchestrator --version`` (``cli/_version``): the installed distribution's version, read
only when asked."""

from __future__ import annotations

from importlib import metadata

import pytest

import orchestrator
from orchestrator.cli._main import build_parser


def test_version_prints_the_program_and_the_distribution_s_version_and_exits_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--version"])
    assert exited.value.code in (0, None)
    said = capsys.readouterr()
    assert said.out == f"orchestrator {orchestrator.__version__}\n"
    assert said.err == ""
    assert orchestrator.__version__ == metadata.version("team-orchestrator")


def test_version_wins_over_a_missing_command(capsys: pytest.CaptureFixture[str]) -> None:
    """``--version`` alone is a whole command line: no subcommand is asked for."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version", "--log-level", "debug"])
    assert capsys.readouterr().out.startswith("orchestrator ")


def test_building_the_parser_reads_no_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """The version is looked up when ``--version`` is given, not when the parser is built
    (``--help`` and every command start without reading the package metadata): the
    package's ``__version__`` is looked up on first use and kept, and is not there after."""
    monkeypatch.delitem(vars(orchestrator), "__version__", raising=False)
    build_parser().parse_args(["sessions"])
    assert "__version__" not in vars(orchestrator)
