"""Backend plugins: ``backend = "module:factory"`` and ``orchestrator.backends`` entry points,
in a team file, through the API and through the CLI (``run``, ``teams check``).

The plugin is a package written to a temporary directory with an ``*.dist-info`` beside it
(``METADATA`` and ``entry_points.txt``): on ``sys.path`` (or ``PYTHONPATH``), that is an
installed distribution as far as :mod:`importlib.metadata` is concerned, without pip.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import orchestrator
from orchestrator.base import RunError
from orchestrator.runtime.backends import backend_factory, backend_problems, http_client
from tests.support.daemon import connect, running_daemon
from tests.support.paths import PROJECT_ROOT

PLUGIN = '''
"""A plugin: a backend that says its settings' greeting and the prompt."""

from orchestrator import BackendSetup, TextDelta


class Greeter:
    def __init__(self, greeting):
        self.greeting = greeting

    async def stream_round(self, context):
        said = next((t for role, t in reversed(context.history) if role == "user"), "")
        yield TextDelta(text=f"{self.greeting}, {said}")


def make(setup: BackendSetup):
    if "greeting" not in setup.settings:
        raise ValueError("settings.greeting is not set")
    return Greeter(setup.settings["greeting"])


def make_nothing(setup):
    return 42


def make_keyed(setup):
    key = setup.environ["GREETER_KEY"]
    raise ValueError(f"the greeting service refused the key {key}")


class Crash(BaseException):
    """Not an Exception: nothing on the way catches it, and the process ends with it."""


def make_exit(setup):
    raise SystemExit("no greeting today")


def make_crash(setup):
    raise Crash(f"crashed holding {setup.environ['GREETER_KEY']}")
'''


def team_toml(backend: str, settings: str = 'greeting = "hello"') -> str:
    return textwrap.dedent(
        f"""
        [team]
        name = "plugged"
        topology = "solo_run"
        coordinator = "lead"

        [agents.lead]
        role = "coordinator"
        backend = "{backend}"

        [agents.lead.settings]
        {settings}
        """
    )


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """A directory holding the package ``greeter_plugin`` and its distribution metadata."""
    root = tmp_path / "site"
    package = root / "greeter_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN)
    (root / "broken_plugin.py").write_text("raise ImportError('a dependency is missing')\n")
    (root / "exiting_plugin.py").write_text("import sys\nsys.exit(3)\n")
    info = root / "greeter_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: greeter-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[orchestrator.backends]\ngreeter = greeter_plugin:make\n"
    )
    return root


@pytest.fixture
def installed(plugin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(plugin_dir))
    yield plugin_dir
    for name in ("greeter_plugin", "broken_plugin", "exiting_plugin"):
        sys.modules.pop(name, None)


def parse(text: str) -> orchestrator.TeamSpec:
    return orchestrator.parse_team(text, file="plugged.toml")


class TestTeamFile:
    def test_a_plugin_name_and_its_settings_are_recorded_as_written(self) -> None:
        for name in ("greeter", "mypkg.backends:make", "my-backend.v2"):
            agent = parse(team_toml(name)).agent("lead")
            assert agent.backend == name
            assert agent.settings == {"greeting": "hello"}

    def test_settings_belong_to_plugins(self) -> None:
        with pytest.raises(orchestrator.TeamFileError) as caught:
            parse(team_toml("scripted"))
        assert caught.value.key_path == "agents.lead.settings"
        assert "the scripted backend takes none" in caught.value.message

    def test_turns_belong_to_the_scripted_backend(self) -> None:
        text = team_toml("greeter") + '\n[[agents.lead.turns]]\nsteps = [ { say = "x" } ]\n'
        with pytest.raises(orchestrator.TeamFileError) as caught:
            parse(text)
        assert caught.value.key_path == "agents.lead.turns"

    @pytest.mark.parametrize("name", ["scriptd", "with space", "mod:", ":make", "a:b:c"])
    def test_a_typo_or_a_malformed_name_is_refused(self, name: str) -> None:
        with pytest.raises(orchestrator.TeamFileError) as caught:
            parse(team_toml(name))
        assert caught.value.key_path == "agents.lead.backend"
        assert "module:factory" in caught.value.message


class TestResolution:
    async def test_an_entry_point_backend_runs_through_the_api(self, installed: Path) -> None:
        outcome = await orchestrator.run_team(parse(team_toml("greeter")), "world")
        assert outcome.result == "hello, world"

    async def test_a_module_factory_backend_runs_through_the_api(self, installed: Path) -> None:
        team = parse(team_toml("greeter_plugin:make", 'greeting = "hi"'))
        outcome = await orchestrator.run_team(team, "there")
        assert outcome.result == "hi, there"

    @pytest.mark.parametrize(
        ("backend", "settings", "message"),
        [
            ("nobody", 'greeting = "x"', "unknown backend 'nobody': no built-in backend and no "),
            ("no_such_module:make", 'greeting = "x"', "cannot import 'no_such_module'"),
            ("broken_plugin:make", 'greeting = "x"', "ImportError: a dependency is missing"),
            ("greeter_plugin:absent", 'greeting = "x"', "has no 'absent'"),
            ("greeter_plugin:Greeter.x", 'greeting = "x"', "has no 'Greeter.x'"),
            (
                "greeter_plugin:make",
                "other = 1",
                "the factory of backend 'greeter_plugin:make' raised ValueError: "
                "settings.greeting is not set",
            ),
            (
                "greeter_plugin:make_nothing",
                "other = 1",
                "returned int, which has no stream_round method (not a Backend)",
            ),
        ],
    )
    async def test_each_problem_names_the_agent_and_the_key(
        self, installed: Path, backend: str, settings: str, message: str
    ) -> None:
        team = parse(team_toml(backend, settings))
        async with http_client() as client:
            with pytest.raises(RunError) as caught:
                backend_factory(team, client=client, environ={})
        assert str(caught.value).startswith("plugged.toml: agents.lead.backend: ")
        assert message in str(caught.value)

    def test_the_unknown_name_lists_the_installed_ones(self, installed: Path) -> None:
        [problem] = backend_problems(parse(team_toml("nobody")))
        assert "(known: greeter, openai, scripted;" in problem

    def test_checking_imports_but_calls_no_factory(self, installed: Path) -> None:
        # make() would raise without a greeting: a check does not call it.
        assert backend_problems(parse(team_toml("greeter", "other = 1"))) == []
        [problem] = backend_problems(parse(team_toml("broken_plugin:make")))
        assert "cannot import 'broken_plugin'" in problem


@pytest.mark.daemon
class TestCommandLine:
    def orchestrator(self, plugin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), str(PROJECT_ROOT)])},
            timeout=120,
        )

    def test_run_and_teams_check_use_an_installed_plugin(
        self, plugin_dir: Path, tmp_path: Path
    ) -> None:
        team = tmp_path / "plugged.toml"
        team.write_text(team_toml("greeter"))
        checked = self.orchestrator(plugin_dir, "teams", "check", str(team))
        assert checked.returncode == 0, checked.stdout + checked.stderr
        ran = self.orchestrator(
            plugin_dir, "run", str(team), "world", "--plain", "--db", str(tmp_path / "j.db")
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.splitlines()[-1] == "hello, world"

    @pytest.mark.parametrize("log_format", ["json", "console"])
    def test_a_key_in_a_factory_s_error_is_redacted(
        self, plugin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_format: str
    ) -> None:
        """The factory's exception is quoted in the run's one error line, its key not."""
        key = "sk-proj-" + "Zq7" * 12
        monkeypatch.setenv("GREETER_KEY", key)
        team = tmp_path / "plugged.toml"
        team.write_text(team_toml("greeter_plugin:make_keyed"))
        ran = self.orchestrator(
            plugin_dir, "run", str(team), "hi", "--db", str(tmp_path / "j.db"),
            "--log-format", log_format,
        )  # fmt: skip
        assert ran.returncode == 2, ran.stderr
        assert "the greeting service refused the key [redacted]" in ran.stderr
        assert key not in ran.stderr + ran.stdout

    def test_a_key_in_a_crash_s_traceback_is_redacted(
        self, plugin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A crash (a BaseException nothing catches) prints Python's traceback, redacted."""
        key = "sk-proj-" + "Zq7" * 12
        monkeypatch.setenv("GREETER_KEY", key)
        team = tmp_path / "plugged.toml"
        team.write_text(team_toml("greeter_plugin:make_crash"))
        ran = self.orchestrator(plugin_dir, "run", str(team), "hi", "--db", str(tmp_path / "j"))
        assert ran.returncode == 1, ran.stderr
        assert "greeter_plugin.Crash: crashed holding [redacted]" in ran.stderr
        assert key not in ran.stderr + ran.stdout

    @pytest.mark.parametrize(
        ("backend", "said"),
        [
            (
                "exiting_plugin:make",
                "agents.lead.backend: cannot import 'exiting_plugin' for backend "
                "'exiting_plugin:make': SystemExit(3) (the plugin tried to end the process)",
            ),
            (
                "greeter_plugin:make_exit",
                "agents.lead.backend: the factory of backend 'greeter_plugin:make_exit' raised "
                "SystemExit('no greeting today') (the plugin tried to end the process)",
            ),
        ],
    )
    def test_a_plugin_that_exits_is_a_plugin_error(
        self, plugin_dir: Path, tmp_path: Path, backend: str, said: str
    ) -> None:
        """``sys.exit()`` in a plugin's module or factory does not end ``run`` with the
        plugin's status and no word: the run fails as for any plugin error, in one line
        naming the plugin (exit 2)."""
        team = tmp_path / "plugged.toml"
        team.write_text(team_toml(backend))
        ran = self.orchestrator(
            plugin_dir, "run", str(team), "hi", "--db", str(tmp_path / "j.db"),
            "--log-format", "console",
        )  # fmt: skip
        assert ran.returncode == 2, ran.stderr
        assert ran.stderr == f"orchestrator: {team}: {said}\n"

    def test_teams_check_reports_a_plugin_that_exits_on_import(
        self, plugin_dir: Path, tmp_path: Path
    ) -> None:
        team = tmp_path / "plugged.toml"
        team.write_text(team_toml("exiting_plugin:make"))
        checked = self.orchestrator(plugin_dir, "teams", "check", str(team))
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert "cannot import 'exiting_plugin'" in checked.stdout
        assert "SystemExit(3)" in checked.stdout

    def test_teams_check_reports_a_plugin_it_cannot_find(
        self, plugin_dir: Path, tmp_path: Path
    ) -> None:
        team = tmp_path / "plugged.toml"
        team.write_text(team_toml("greeter_plugin:absent"))
        checked = self.orchestrator(plugin_dir, "teams", "check", str(team))
        assert checked.returncode != 0
        assert f"{team}: agents.lead.backend: module 'greeter_plugin' has no 'absent'" in (
            checked.stdout
        )


@pytest.mark.daemon
class TestDaemon:
    async def test_serve_answers_with_a_plugin_backend(
        self, installed: Path, tmp_path: Path
    ) -> None:
        async with (
            running_daemon(tmp_path, teams={"plugged": team_toml("greeter")}) as daemon,
            connect(daemon) as client,
        ):
            init = await client.until_type("init")
            assert init["team"] == "plugged"
            await client.send({"channel": "agent", "type": "prompt", "prompt": "daemon"})
            result = await client.until_type("result")
        assert result["summary"] == "hello, daemon"
