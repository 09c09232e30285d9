"""The examples run as their docstrings say, and the README's Python section is the
quickstart: a program written from the README alone runs."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jupyter_client.manager import start_new_kernel

from tests.support.jupyter import run_cell
from tests.support.paths import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"


def example(name: str) -> ModuleType:
    """``examples/<name>.py`` imported as a module of its own."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def readme_python_section() -> str:
    """The first Python block of the README's "In Python" section."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## In Python\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert match is not None, "the README's In Python section has no Python block"
    return match.group(1)


class TestQuickstart:
    EXPECTED = (
        "publisher asks to run publish: approved\n"
        "completed\n"
        "Both done.\n"
        "[writer, completed] (task: the 2.4 release) Drafted notes for: the 2.4 release "
        "(3 words)\n"
        "[publisher, completed] (task: publish 2.4) published on the release page\n"
    )

    def test_the_readme_s_python_section_is_the_quickstart(self) -> None:
        quickstart = (EXAMPLES / "quickstart.py").read_text(encoding="utf-8")
        assert readme_python_section() in quickstart

    @pytest.mark.daemon
    def test_the_readme_s_program_runs_under_asyncio_run(self, tmp_path: Any) -> None:
        """Written from the README alone: Agent, Team, @tool, aio.run_team under
        asyncio.run, two workers calling decorated tools, an approval decided by a callback,
        the final answer."""
        program = tmp_path / "from_the_readme.py"
        program.write_text(readme_python_section(), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(program)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == self.EXPECTED

    def test_the_team_in_code_is_the_team_its_file_would_be(self) -> None:
        from orchestrator.spec import parse_team

        team = example("quickstart").team
        assert parse_team(team.to_toml(), file=team.spec.file) == team.spec


class TestFastApiApp:
    """The app's stream, read as an AG-UI client reads it: the run interrupted by the
    publisher's approval, decided by the second endpoint, then the next AG-UI run to the end."""

    def test_a_run_streams_its_ag_ui_events_and_an_approval_decides_the_interrupt(self) -> None:
        app = example("fastapi_app").app
        events: list[dict[str, Any]] = []
        decisions: list[Any] = []
        with (
            TestClient(app) as client,
            client.stream("POST", "/runs", json={"prompt": "Ship the notes"}) as response,
        ):
            assert response.headers["content-type"].startswith("text/event-stream")
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                event = json.loads(line.removeprefix("data:"))
                events.append(event)
                outcome = event.get("outcome") or {}
                if event["type"] == "RUN_FINISHED" and outcome.get("type") == "interrupt":
                    session = events[0]["threadId"]
                    for interrupt in outcome["interrupts"]:
                        url = f"/approvals/{interrupt['id']}"
                        wrong = client.post(
                            url, json={"session": "ahp-session:/x", "approve": True}
                        )
                        assert wrong.status_code == 404
                        decided = client.post(url, json={"session": session, "approve": True})
                        decisions.append(decided.json())
                        again = client.post(url, json={"session": session, "approve": True})
                        assert again.status_code == 404  # decided: no longer waited on
        assert decisions == [{"approval": "approval-1", "decision": "approved"}]
        runs = [(e["type"], e["runId"]) for e in events if e["type"].startswith("RUN_")]
        assert runs == [
            ("RUN_STARTED", "run-1"),
            ("RUN_FINISHED", "run-1"),
            ("RUN_STARTED", "run-2"),
            ("RUN_FINISHED", "run-2"),
        ]
        assert "publish" in events[-1]["result"]
        assert {e["threadId"] for e in events if "threadId" in e} == {events[0]["threadId"]}


@pytest.mark.daemon
class TestNotebook:
    def test_its_cells_run_in_a_kernel(self) -> None:
        """Each code cell of examples/notebook.ipynb, in order, in a headless IPython kernel:
        top-level ``async with`` and ``await`` on Jupyter's own asyncio loop."""
        notebook = json.loads((EXAMPLES / "notebook.ipynb").read_text(encoding="utf-8"))
        cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
        manager, client = start_new_kernel(kernel_name="python3", cwd=str(PROJECT_ROOT))
        try:
            outputs = [run_cell(client, cell) for cell in cells]
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
        _, streamed, answered = outputs
        assert "[researcher #1] " in streamed
        assert streamed.rstrip().endswith(
            "completed In short: [researcher, completed] (task: the 2.4 changelog) "
            "Three fixes and one new flag in the 2.4 changelog."
        )
        assert "Three fixes and one new flag" in answered
