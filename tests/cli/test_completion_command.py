"""``orchestrator completion``: the scripts, sourced by a real shell."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.command_line import orchestrator

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


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
