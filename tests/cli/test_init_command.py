"""``orchestrator init [DIR]`` (``cli/_init_command``): the starter teams written from the
package's data, never over a file that is there."""

from __future__ import annotations

import io
from importlib import resources
from pathlib import Path

import pytest

from orchestrator.base import OrchestratorError
from orchestrator.cli._init_command import init
from orchestrator.cli._main import build_parser
from orchestrator.server import ServeConfig
from orchestrator.spec import load_team

STARTER = resources.files("orchestrator.cli").joinpath("starter")
STARTER_FILES = sorted(entry.name for entry in STARTER.iterdir() if entry.is_file())


def init_in(directory: Path) -> str:
    out = io.StringIO()
    assert init(build_parser().parse_args(["init", str(directory)]), out) == 0
    return out.getvalue()


def test_the_starter_files_are_written_as_shipped_and_said_with_what_to_do_next(
    tmp_path: Path,
) -> None:
    target = tmp_path / "new" / "teams"
    said = init_in(target)
    assert sorted(path.name for path in target.iterdir()) == STARTER_FILES
    for name in STARTER_FILES:
        shipped = STARTER.joinpath(name).read_text(encoding="utf-8")
        assert (target / name).read_text(encoding="utf-8") == shipped
    assert said.splitlines()[: len(STARTER_FILES)] == [f"wrote {target / n}" for n in STARTER_FILES]
    assert f"orchestrator teams check {target}\n" in said
    assert f'orchestrator run {target / "offline.toml"} "Write the release notes"' in said


def test_every_starter_team_is_a_team_the_parser_takes(tmp_path: Path) -> None:
    init_in(tmp_path)
    teams = sorted(tmp_path.glob("*.toml"))
    assert [path.name for path in teams] == ["nightly.toml", "offline.toml", "openai.toml"]
    for path in teams:
        load_team(path)


def test_teams_is_the_default_directory() -> None:
    """Where ``orchestrator serve`` looks for team files when not told."""
    assert build_parser().parse_args(["init"]).directory == ServeConfig().teams == Path("teams")


@pytest.mark.parametrize("present", [["offline.toml"], ["README.md", "openai.toml"]])
def test_nothing_is_written_when_a_file_to_write_is_there(
    tmp_path: Path, present: list[str]
) -> None:
    """Every file in the way is named; the ones there are left as they were and no other is
    written."""
    for name in present:
        (tmp_path / name).write_text("mine")
    with pytest.raises(OrchestratorError) as refused:
        init_in(tmp_path)
    named = ", ".join(str(tmp_path / name) for name in sorted(present))
    pronoun = "it" if len(present) == 1 else "them"
    assert str(refused.value) == (
        f"not overwriting {named}: move {pronoun} away or choose another directory"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(present)
    assert all((tmp_path / name).read_text() == "mine" for name in present)


def test_a_directory_that_cannot_be_made_is_named(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    with pytest.raises(OrchestratorError, match=r"cannot write to .*a-file/teams: "):
        init_in(tmp_path / "a-file" / "teams")
