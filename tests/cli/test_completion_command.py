"""``orchestrator completion`` (``cli/_completion_command``): the scripts, made in process and
sourced by a real shell."""

from __future__ import annotations

import argparse
import io
import re
import subprocess
from pathlib import Path

import pytest

from orchestrator.cli._completion_command import completion
from orchestrator.cli._main import build_parser
from tests.support.command_line import orchestrator


@pytest.mark.daemon
class TestCompletion:
    def test_bash_completes_commands_options_and_files(self, tmp_path: Path) -> None:
        """The script bash gets completes subcommands and a run's team file: it is sourced
        in a real bash and asked, as a user pressing Tab would."""
        done = orchestrator("completion", "bash")
        assert done.returncode == 0, done.stderr
        script = tmp_path / "orchestrator.bash"
        script.write_text(done.stdout)
        (tmp_path / "team.toml").write_text("")

        def complete(*words: str) -> list[str]:
            line = " ".join(("orchestrator", *words))
            probe = (
                f"source {script}\n"
                f"COMP_WORDS=({line})\nCOMP_CWORD={len(words)}\n"
                f'COMP_LINE="{line}"\nCOMP_POINT=${{#COMP_LINE}}\n'
                "_shtab_orchestrator\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
            )
            shell = subprocess.run(
                ["bash", "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True
            )
            return shell.stdout.split()

        assert {"run", "sessions", "prune", "teams", "completion"} <= set(complete("''"))
        assert complete("sessions", "--st") == ["--status"]
        assert "team.toml" in complete("run", "te")

    @pytest.mark.parametrize("shell", ["zsh", "tcsh"])
    def test_other_shells_get_a_script(self, shell: str) -> None:
        done = orchestrator("completion", shell)
        assert done.returncode == 0
        assert "prune" in done.stdout


def script(shell: str) -> str:
    out = io.StringIO()
    assert completion(build_parser().parse_args(["completion", shell]), out) == 0
    return out.getvalue()


def path_options(parser: argparse.ArgumentParser, prefix: str) -> list[str]:
    """Where each argument that takes a path is, as shtab names it in bash
    (``orchestrator_run_pos_0``, ``orchestrator_run___facts``)."""
    found = []
    positional = 0
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                found += path_options(command, f"{prefix}_{name}")
        elif not action.option_strings:
            if action.type is Path:
                found.append(f"{prefix}_pos_{positional}")
            positional += 1
        elif action.type is Path:
            option = max(action.option_strings, key=len).replace("-", "_")
            found.append(f"{prefix}_{option}")
    return found


def test_every_path_argument_completes_as_a_file_name() -> None:
    """In process: the bash script names the file completion for each argument that takes a
    path, in every command, and for nothing else."""
    bash = script("bash")
    completed = set(re.findall(r"^_shtab_(\w+)_COMPGEN=_shtab_compgen_files$", bash, re.M))
    expected = set(path_options(build_parser(), "orchestrator"))
    assert {"orchestrator_run_pos_0", "orchestrator_graph___facts"} <= expected
    assert completed == expected


@pytest.mark.parametrize("shell", ["bash", "zsh", "tcsh"])
def test_each_shell_s_script_names_every_command(shell: str) -> None:
    said = script(shell)
    for command in ("run", "resume", "sessions", "prune", "serve", "teams", "init", "end"):
        assert command in said
