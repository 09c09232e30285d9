"""The package as it is installed: the wheel's files and metadata, the bundled teams,
``orchestrator init``, ``--version``, declared dependencies, the bounded hypercorn seam."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
import structlog

import orchestrator
from orchestrator.server import ServeConfig, _app, _hypercorn_ws
from tests.support.paths import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "orchestrator"
PYPROJECT = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
STARTER = ("README.md", "nightly.toml", "offline.toml", "openai.toml")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        timeout=120,
    )


class TestBundledTeams:
    def test_the_top_level_teams_directory_is_the_packages(self) -> None:
        # One source: the README's `teams/...` commands read the files the wheel ships.
        top = PROJECT_ROOT / "teams"
        assert top.is_symlink()
        assert top.resolve() == (PACKAGE / "teams").resolve()
        assert sorted(p.name for p in (PACKAGE / "teams").glob("*.toml")) == [
            "board.toml",
            "delivery.toml",
            "handoff.toml",
            "nightly.toml",
            "openai-delivery.toml",
            "remote.toml",
            "review.toml",
            "structured.toml",
            "tools.toml",
        ]

    def test_every_team_the_readme_names_exists(self) -> None:
        readme = (PROJECT_ROOT / "README.md").read_text()
        named = set(re.findall(r"(?<![\w/-])teams/[\w-]+\.toml", readme))
        assert named
        for path in sorted(named):
            assert (PROJECT_ROOT / path).is_file(), path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel, built from a copy of the sources (a build writes build/ and egg-info)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(PROJECT_ROOT / name, source / name)
    shutil.copytree(PACKAGE, source / "orchestrator", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"),
            *("--no-index", "--quiet", "--wheel-dir", str(out), str(source)),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [built] = out.glob("team_orchestrator-*.whl")
    return zipfile.ZipFile(built)


class TestWheel:
    def test_it_ships_the_teams_the_starter_py_typed_and_the_licence(
        self, wheel: zipfile.ZipFile
    ) -> None:
        names = set(wheel.namelist())
        for team in (PACKAGE / "teams").glob("*.toml"):
            assert f"orchestrator/teams/{team.name}" in names
        # The example MCP server teams/tools.toml starts, beside it.
        assert "orchestrator/teams/servers/notes.py" in names
        # The example A2A agent teams/remote.toml reaches, beside it.
        assert "orchestrator/teams/servers/glossary_agent.py" in names
        for starter in STARTER:
            assert f"orchestrator/cli/starter/{starter}" in names
        assert "orchestrator/py.typed" in names
        # The web view: its page, and every asset with the vendored libraries' licences.
        web = PACKAGE / "server" / "web"
        shipped = {p.relative_to(PACKAGE).as_posix() for p in web.rglob("*") if p.is_file()}
        assert "server/web/index.html" in shipped
        for path in shipped:
            assert f"orchestrator/{path}" in names
        [licence] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert wheel.read(licence) == (PROJECT_ROOT / "LICENSE").read_bytes()

    def test_its_metadata_has_the_licence_classifiers_urls_and_entry_point(
        self, wheel: zipfile.ZipFile
    ) -> None:
        [metadata_name] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(wheel.read(metadata_name).decode())
        assert metadata["License-Expression"] == "MIT"
        assert metadata.get_all("License-File") == ["LICENSE"]
        classifiers = metadata.get_all("Classifier") or []
        for wanted in (
            "Typing :: Typed",
            "Framework :: Trio",
            "Programming Language :: Python :: 3.11",
            "Programming Language :: Python :: 3.13",
        ):
            assert wanted in classifiers
        urls = metadata.get_all("Project-URL") or []
        assert "Source, https://github.com/team-orchestrator/team-orchestrator" in urls
        requires = metadata.get_all("Requires-Dist") or []
        assert "hypercorn<0.19,>=0.17" in requires
        assert any(r.startswith("wsproto") for r in requires)
        [entry_points] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = wheel.read(entry_points).decode()
        assert "[console_scripts]\norchestrator = orchestrator.cli:main" in text


def third_party_imports() -> set[str]:
    """The top-level modules the package imports that are neither ours nor the stdlib's."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "orchestrator"}


class TestDependencies:
    def test_every_imported_package_is_declared(self) -> None:
        """A dependency, or one of a feature's optional extra (not dev's: the tests')."""
        extras = PYPROJECT["project"]["optional-dependencies"]
        declared = {
            re.split(r"[<>=\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")
            for requirement in [
                *PYPROJECT["project"]["dependencies"],
                *(r for name, extra in extras.items() if name != "dev" for r in extra),
            ]
        }
        distributions = importlib.metadata.packages_distributions()
        for module in sorted(third_party_imports()):
            names = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
            assert names & declared, f"{module} is imported but not a declared dependency"

    def test_every_dependency_is_pinned_in_the_constraints(self) -> None:
        pinned = {
            line.split("==")[0].lower().replace("_", "-")
            for line in (PROJECT_ROOT / "constraints.txt").read_text().splitlines()
            if "==" in line
        }
        requirements = [
            *PYPROJECT["project"]["dependencies"],
            *PYPROJECT["project"]["optional-dependencies"]["dev"],
        ]
        for requirement in requirements:
            name = re.split(r"[<>=\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")
            assert name in pinned, f"{name} is not pinned in constraints.txt"


class TestVersion:
    @pytest.mark.daemon
    def test_version_flag_prints_the_installed_version(self) -> None:
        done = cli("--version")
        assert done.returncode == 0
        assert done.stdout == f"orchestrator {importlib.metadata.version('team-orchestrator')}\n"

    def test_a_tree_that_is_not_installed_says_so(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def missing(name: str) -> str:
            raise importlib.metadata.PackageNotFoundError(name)

        monkeypatch.setattr(importlib.metadata, "version", missing)
        assert orchestrator._installed_version() == "0+unknown"


@pytest.mark.daemon
class TestInit:
    def test_it_writes_a_starter_directory_that_checks_and_runs(self, tmp_path: Path) -> None:
        target = tmp_path / "my-teams"
        done = cli("init", str(target))
        assert done.returncode == 0, done.stderr
        assert sorted(p.name for p in target.iterdir()) == list(STARTER)
        for name in STARTER:
            assert f"wrote {target / name}" in done.stdout
            text = (target / name).read_text()
            assert text == (PACKAGE / "cli" / "starter" / name).read_text()
            if name.endswith(".toml"):
                assert text.startswith("# ")  # commented for whoever edits it
        checked = cli("teams", "check", str(target))
        assert checked.returncode == 0, checked.stdout
        assert checked.stdout.count("ok: ") == 3
        offline = orchestrator.run_team_sync(
            target / "offline.toml", "Write the release notes", on_approval=lambda r: True
        )
        assert offline.status is orchestrator.RunStatus.COMPLETED
        assert "published to the changelog" in offline.result
        nightly = orchestrator.run_team_sync(target / "nightly.toml", "Check the build")
        assert nightly.result == "Hourly check: green: 214 tests passed"

    def test_it_overwrites_nothing_and_names_what_is_in_the_way(self, tmp_path: Path) -> None:
        (tmp_path / "offline.toml").write_text("mine")
        done = cli("init", str(tmp_path))
        assert done.returncode == 2
        assert f"not overwriting {tmp_path / 'offline.toml'}: move it away" in done.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["offline.toml"]
        assert (tmp_path / "offline.toml").read_text() == "mine"

    def test_the_default_directory_is_teams(self, tmp_path: Path) -> None:
        done = cli("init", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "teams" / "offline.toml").is_file()


class TestHypercornSeam:
    def test_the_installed_hypercorn_has_the_seam(self) -> None:
        assert _hypercorn_ws.seam_problem() is None

    def test_a_hypercorn_without_it_is_named(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(_hypercorn_ws, "WSStream", None)
        assert _hypercorn_ws.seam_problem() == (
            "hypercorn has none of the protocol modules the seam uses"
        )
        monkeypatch.undo()
        monkeypatch.delattr(_hypercorn_ws.TCPServer, "protocol_send")  # type: ignore[attr-defined]
        assert _hypercorn_ws.seam_problem() == "hypercorn's TCPServer has no protocol_send"

    async def test_the_daemon_warns_at_startup_when_it_falls_back(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.setattr(_app, "seam_problem", lambda: "no seam here")
        config = ServeConfig(teams=tmp_path / "none")  # stops the start right after
        with (
            structlog.testing.capture_logs() as logs,
            pytest.raises(orchestrator.OrchestratorError),
        ):
            await _app.serve(config, db=tmp_path / "j.db", handle_signals=False)
        [warning] = [entry for entry in logs if entry["log_level"] == "warning"]
        assert warning["event"].startswith("hypercorn seam unavailable")
        assert warning["reason"] == "no seam here"


@pytest.mark.daemon
class TestDemoScript:
    """``./scripts/demo`` installs the project only when what it installs from changed."""

    def test_pip_runs_only_when_pyproject_or_constraints_changed(self, tmp_path: Path) -> None:
        """In a copy of the project whose venv's python logs each pip call (and runs the
        rest), and whose ``orchestrator`` says what it was asked: the first demo installs,
        the second does not, an edited constraints.txt installs again."""
        project = tmp_path / "project"
        (project / "scripts").mkdir(parents=True)
        shutil.copy(PROJECT_ROOT / "scripts" / "demo", project / "scripts" / "demo")
        for name in ("pyproject.toml", "constraints.txt"):
            shutil.copy(PROJECT_ROOT / name, project / name)
        bin_ = project / ".venv" / "bin"
        bin_.mkdir(parents=True)
        log = tmp_path / "pip.log"
        (bin_ / "python").write_text(
            "#!/bin/sh\n"
            f'if [ "$1 $2" = "-m pip" ]; then echo "$*" >> {log}; exit 0; fi\n'
            f'exec {sys.executable} "$@"\n'
        )
        (bin_ / "orchestrator").write_text('#!/bin/sh\necho "orchestrator $*"\n')
        for program in bin_.iterdir():
            program.chmod(0o755)

        def demo() -> list[str]:
            done = subprocess.run(
                [str(project / "scripts" / "demo"), "--plain"],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            assert done.stdout == (
                "orchestrator run teams/delivery.toml Ship the release notes --plain\n"
            )
            return log.read_text().splitlines() if log.exists() else []

        install = "-m pip install --quiet --disable-pip-version-check -c constraints.txt -e ."
        assert demo() == [install]
        assert demo() == [install]  # current: pip not run
        with (project / "constraints.txt").open("a") as constraints:
            constraints.write("# changed\n")
        assert demo() == [install, install]
        assert demo() == [install, install]
