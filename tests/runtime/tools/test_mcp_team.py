"""MCP tools in a team's runs: the shipped example, approval gating, a model that reads a
refused input and retries, and the tools offered as they are listed.

The server is the shipped notebook (``teams/servers/notes.py``, written with the SDK's
``MCPServer``), run over stdio as a real program; the model, where there is one, is the
local fake of the OpenAI-compatible API (``tests/support/fake_openai.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from orchestrator.ahp.actions import (
    ChatToolCallCompleteAction,
    ChatToolCallDeniedAction,
    ChatToolCallStartAction,
)
from orchestrator.ahp.state import ToolResultTextContent
from orchestrator.core import ApprovalRequested, RunStatus
from orchestrator.runtime import RunOutcome
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.spec import TeamSpec, load_team, parse_team
from tests.support.daemon import connect, running_daemon
from tests.support.fake_openai import (
    Answer,
    Stream,
    fake_openai,
    rounds_done,
    text,
    tool_calls,
    tool_results,
)
from tests.support.mcp_servers import STDIO_SERVER
from tests.support.paths import PROJECT_ROOT
from tests.support.runtime import Harness, run_to_end, wait_for

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


async def run_into(harness: Harness, outcomes: list[RunOutcome]) -> None:
    outcomes.append(await run_to_end(harness))


TOOLS_TEAM = PROJECT_ROOT / "teams" / "tools.toml"
NOTES = PROJECT_ROOT / "orchestrator" / "teams" / "servers" / "notes.py"
ENV = {"FAKE_KEY": "sk-test"}


def results(h: Harness) -> dict[str, tuple[bool, str]]:
    """Each completed call's (success, text), by tool name then position: ``name#n``."""
    # Tool call ids are a chat's own: two chats may use the same one.
    names = {
        (f.channel, f.action.tool_call_id): f.action.tool_name
        for f in h.facts_of(ChatToolCallStartAction)
    }
    seen: dict[str, int] = {}
    found: dict[str, tuple[bool, str]] = {}
    for fact in h.facts_of(ChatToolCallCompleteAction):
        action = fact.action
        name = names[fact.channel, action.tool_call_id]
        seen[name] = seen.get(name, 0) + 1
        content = action.result.content or ()
        texts = [c.text for c in content if isinstance(c, ToolResultTextContent)]
        found[f"{name}#{seen[name]}"] = (action.result.success, "\n".join(texts).strip())
    return found


def notes_team(*, scribe_extra: str = "", scribe_steps: str) -> TeamSpec:
    return parse_team(
        f"""
[team]
name = "notes"
coordinator = "scribe"

[mcp.notes]
command = {json.dumps([sys.executable, str(NOTES)])}
timeout = "60s"

[agents.scribe]
role = "scribe"
tools = ["mcp.notes/*"]
{scribe_extra}

[[agents.scribe.turns]]
steps = [{scribe_steps}]
""",
        file="notes.toml",
    )


class TestShippedTeam:
    async def test_tools_toml_counts_notes_and_reads_back(self) -> None:
        h = Harness(load_team(TOOLS_TEAM))
        outcome = await run_to_end(h, "Summarise the release notes")
        assert outcome.status is RunStatus.COMPLETED, outcome.error
        found = results(h)
        assert found["word_count#1"] == (True, "4")
        success, added = found["mcp.notes/add_note#1"]
        assert success
        assert added == (
            "added note 'task' in the notebook of tools-team (6 words)"
        )  # NOTES_OWNER came from the table's env
        assert found["mcp.notes/list_notes#1"] == (True, "task")
        assert found["mcp.notes/read_note#1"] == (True, "Note down: Summarise the release notes")
        assert "Note down: Summarise the release notes" in outcome.result
        h.finished()

    def test_it_runs_from_the_command_line(self, tmp_path: Path) -> None:
        """As the README says: offline, the scripted team, the journal on SQLite."""
        done = subprocess.run(
            [
                *(sys.executable, "-m", "orchestrator", "run", "--plain"),
                *("--db", str(tmp_path / "j.db"), str(TOOLS_TEAM), "Summarise the notes"),
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,  # the server's cwd is the team file's directory, not ours
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "Note down: Summarise the notes" in done.stdout


class TestApprovals:
    async def test_a_denied_call_never_reaches_the_server(self) -> None:
        team = notes_team(
            scribe_extra='needs_approval = ["mcp.notes/add_note"]',
            scribe_steps=(
                '{ tool = "mcp.notes/add_note", input = { title = "t", text = "x" } }, '
                '{ tool = "mcp.notes/list_notes" }, { say = "{outcomes}" }'
            ),
        )
        h = Harness(team)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            fact = await wait_for(h, lambda f: isinstance(f.action, ApprovalRequested))
            assert isinstance(fact.action, ApprovalRequested)
            assert fact.action.tool_name == "mcp.notes/add_note"
            await h.runtime.resolve_approval(fact.action.approval, approved=False)
        (denied,) = h.actions(ChatToolCallDeniedAction)
        assert denied.tool_call_id == fact.action.tool_call_id
        found = results(h)
        assert "mcp.notes/add_note#1" not in found  # it never ran
        assert found["mcp.notes/list_notes#1"] == (True, "no notes yet")  # nothing was written
        h.finished()

    async def test_an_approved_call_runs(self) -> None:
        team = notes_team(
            scribe_extra='needs_approval = ["mcp.notes/*"]',
            scribe_steps='{ tool = "mcp.notes/add_note", input = { title = "t", text = "x y" } }',
        )
        h = Harness(team)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            fact = await wait_for(h, lambda f: isinstance(f.action, ApprovalRequested))
            assert isinstance(fact.action, ApprovalRequested)
            await h.runtime.resolve_approval(fact.action.approval, approved=True)
        assert results(h)["mcp.notes/add_note#1"] == (
            True,
            "added note 't' in the notebook of the team (2 words)",
        )
        h.finished()


class TestScriptedInput:
    async def test_input_the_server_s_schema_refuses_fails_before_the_call(self) -> None:
        """Checked against the listed schema: the server never sees it."""
        team = notes_team(
            scribe_steps=(
                '{ tool = "mcp.notes/add_note", input = { title = "" } }, '
                '{ tool = "mcp.notes/list_notes" }'
            )
        )
        h = Harness(team)
        await run_to_end(h)
        found = results(h)
        success, message = found["mcp.notes/add_note#1"]
        assert not success
        assert message.startswith("invalid input for mcp.notes/add_note: ")
        assert "'text' is a required property" in message
        assert found["mcp.notes/list_notes#1"] == (True, "no notes yet")

    async def test_a_tool_error_fails_the_call_with_the_server_s_message(self) -> None:
        team = notes_team(scribe_steps='{ tool = "mcp.notes/read_note", input = { title = "x" } }')
        h = Harness(team)
        await run_to_end(h)
        success, message = results(h)["mcp.notes/read_note#1"]
        assert not success
        assert "no note 'x' (notes: none)" in message


MODEL_TEAM = """
[team]
name = "model-notes"
coordinator = "lead"

[openai]
model = "fake-model"
base_url = "{url}"
api_key_env = "FAKE_KEY"
max_retries = 0

[tools.word_count]
command = {word_count}
parameters = {{ type = "object", required = ["text"], additionalProperties = false, \
properties = {{ text = {{ type = "string", minLength = 1 }} }} }}

[mcp.notes]
command = {notes}

[agents.lead]
role = "coordinator"
backend = "openai"
tools = ["word_count", "mcp.notes/*"]
"""


class TestModel:
    # The OpenAI backend stops reading a response at [DONE]: see test_backend_openai.
    pytestmark = pytest.mark.filterwarnings(
        r"ignore:Async generator '(httpx|httpcore|httpx_sse)\.[^']*' was garbage collected"
        ":ResourceWarning"
    )

    async def test_the_model_reads_refused_input_and_retries(self) -> None:
        """Round 1: two calls whose input does not fit; round 2: the same, fixed; round 3:
        the answer. The offered names are the function names; facts keep the team's."""
        offered: list[list[str]] = []

        def answer(request: dict[str, Any]) -> Answer:
            offered.append([t["function"]["name"] for t in request.get("tools", ())])
            done = rounds_done(request)
            if done == 0:
                return Stream(
                    tool_calls(
                        ("call_1", "word_count", {"txt": "a b"}),
                        ("call_2", "notes__add_note", {"title": "t"}),
                    )
                )
            if done == 1:
                return Stream(
                    tool_calls(
                        ("call_3", "word_count", {"text": "a b c"}),
                        ("call_4", "notes__add_note", {"title": "t", "text": "a b c"}),
                    )
                )
            return Stream(text(" | ".join(tool_results(request))))

        async with fake_openai(answer) as server, http_client() as http:
            team = parse_team(
                MODEL_TEAM.format(
                    url=server.url,
                    word_count=json.dumps(
                        [
                            sys.executable,
                            "-c",
                            "import json, sys; print(len(json.load(sys.stdin)['text'].split()))",
                        ]
                    ),
                    notes=json.dumps([sys.executable, str(NOTES)]),
                ),
                file="model-notes.toml",
            )
            h = Harness(team, backends=backend_factory(team, client=http, environ=ENV))
            outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED, outcome.error
        assert offered[0] == [
            "word_count",
            "notes__add_note",
            "notes__list_notes",
            "notes__read_note",
        ]
        found = results(h)
        assert not found["word_count#1"][0]
        assert "invalid input for word_count" in found["word_count#1"][1]
        assert not found["mcp.notes/add_note#1"][0]
        assert "'text' is a required property" in found["mcp.notes/add_note#1"][1]
        assert found["word_count#2"] == (True, "3")
        assert found["mcp.notes/add_note#2"][0]
        # The model read both refusals in its second round, and both results in its third.
        second = tool_results(server.requests[1])
        assert any("invalid input for word_count" in r for r in second)
        assert any("'text' is a required property" in r for r in second)
        assert outcome.result.endswith(
            " | 3\n | added note 't' in the notebook of the team (3 words)"
        )
        h.finished()


def probe_team(tool: str, steps: str) -> str:
    """A team whose coordinator has the probe server's ``tool`` and plays ``steps``."""
    return f"""
[team]
name = "probe"
coordinator = "lead"

[mcp.probe]
command = {json.dumps(list(STDIO_SERVER))}

[agents.lead]
role = "coordinator"
tools = ["mcp.probe/{tool}"]

[[agents.lead.turns]]
steps = [{steps}]
"""


PID_STEPS = '{ tool = "mcp.probe/pid" }, { say = "{outcomes}" }'


class TestDaemon:
    async def test_the_sessions_of_a_team_share_one_connection_per_server(
        self, tmp_path: Path
    ) -> None:
        """Two sessions, two prompts: one server program answers both."""
        pids = []
        async with running_daemon(
            tmp_path, teams={"probe": probe_team("pid", PID_STEPS)}
        ) as daemon:
            for _ in range(2):
                async with connect(daemon) as client:
                    await client.until_type("init")
                    await client.send(
                        {"channel": "agent", "type": "prompt", "prompt": "pid?", "taskId": "t"}
                    )
                    result = await client.until_type("result")
                    pids.append(int(result["summary"]))
            async with daemon.http() as http:
                health = (await http.get("/healthz")).json()
        assert pids[0] == pids[1]
        assert health["mcp_servers"] == {"probe": {"probe": "connected"}}


class TestCancel:
    async def test_cancelling_the_run_cancels_the_request_on_the_server(
        self, tmp_path: Path
    ) -> None:
        """The turn's cancellation reaches the server (notifications/cancelled: its handler
        is cancelled), and the call is recorded as cancelled with the turn."""
        marker = tmp_path / "marker"
        where = json.dumps(str(marker))  # a TOML string
        steps = f'{{ tool = "mcp.probe/slow", input = {{ seconds = 60, marker = {where} }} }}'
        team = parse_team(probe_team("slow", steps), file="probe.toml")
        h = Harness(team)
        outcomes: list[RunOutcome] = []
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_into, h, outcomes)
                while not marker.exists():  # noqa: ASYNC110 (the server writes it)
                    await trio.sleep(0.01)
                h.runtime.cancel()
            while marker.read_text() != "cancelled":  # noqa: ASYNC110
                await trio.sleep(0.01)
        assert outcomes[0].status is RunStatus.CANCELLED
        assert "mcp.probe/slow#1" not in results(h)  # never completed: cancelled with its turn
        h.finished()
