"""What ``orchestrator run`` shows: the team tree, plain lines, and answers at the prompt."""

from __future__ import annotations

import io

import pytest
import trio
import trio.testing
from rich.console import Console

from orchestrator.cli import ApprovalMode, TeamConsole, describe_fact, render_tree
from orchestrator.core import ApprovalRequested, ApprovalResolved, RunStatus, TeamState
from orchestrator.runtime import Ids, MemoryFactLog, RunOutcome, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import TeamSpec, load_team, parse_team

from .conftest import PROJECT_ROOT

DELIVERY = PROJECT_ROOT / "teams" / "delivery.toml"
HANDOFF = PROJECT_ROOT / "teams" / "handoff.toml"


def runtime_for(team: TeamSpec) -> tuple[TeamRuntime, MemoryFactLog]:
    log = MemoryFactLog()
    runtime = TeamRuntime(team, backends=ScriptedBackend, factlog=log, ids=Ids(deterministic=True))
    return runtime, log


def drawn(state: TeamState, width: int = 200) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(render_tree(state))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text


async def run_with_console(
    team: TeamSpec, *, mode: ApprovalMode, stdin: str = "", live: bool = False
) -> tuple[RunOutcome, str, TeamRuntime, MemoryFactLog]:
    runtime, log = runtime_for(team)
    out = io.StringIO()
    console = TeamConsole(runtime, mode=mode, stream=out, stdin=io.StringIO(stdin), live=live)
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            await nursery.start(console.serve)
            outcome = await runtime.run("Ship the release notes")
            runtime.bus.close()
    return outcome, out.getvalue(), runtime, log


class TestTree:
    async def test_workers_hang_under_the_coordinator(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """After the delivery run: the lead at the root, three researchers under it, done."""
        outcome, _, runtime, log = await run_with_console(
            load_team(DELIVERY), mode=ApprovalMode.AUTO
        )
        assert outcome.status is RunStatus.COMPLETED
        lines = drawn(TeamState.fold(runtime.session, log.facts)).splitlines()
        assert lines[0] == "team delivery — Ship the release notes"
        assert "lead" in lines[1]
        researchers = [line for line in lines[2:] if "researcher" in line]
        assert len(researchers) == 3
        assert all("completed" in line for line in researchers)
        # Indented one level deeper than the coordinator: they are its children.
        indent = len(lines[1]) - len(lines[1].lstrip("│├└─ "))
        assert all(len(r) - len(r.lstrip("│├└─ ")) > indent for r in researchers)

    async def test_a_pending_approval_shows_on_its_worker(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        runtime, log = runtime_for(load_team(DELIVERY))
        subscription = runtime.bus.subscribe("test")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.run, "Ship the release notes")
            async for fact in subscription:
                if isinstance(fact.action, ApprovalRequested):
                    request = fact.action
                    break
            text = drawn(TeamState.fold(runtime.session, log.facts))
            assert "needs approval  — Publish the release notes" in text
            await runtime.resolve_approval(request.approval, approved=True)

    async def test_a_specialist_hangs_under_who_handed_off(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        _, _, runtime, log = await run_with_console(load_team(HANDOFF), mode=ApprovalMode.AUTO)
        lines = drawn(TeamState.fold(runtime.session, log.facts)).splitlines()
        assert "triage" in lines[1]
        assert "billing" in lines[2]

    def test_a_team_that_has_not_started(self) -> None:
        assert drawn(TeamState("ahp-session:/x")).strip() == "team (starting)"


class TestPlainLines:
    async def test_one_line_per_notable_fact(self, autojump_clock: trio.testing.MockClock) -> None:
        """Members joining, the approval and its decision, workers finishing."""
        _, text, _, _ = await run_with_console(load_team(DELIVERY), mode=ApprovalMode.AUTO)
        lines = text.splitlines()
        assert lines[0].startswith("+ lead joined (coordinator) as ahp-chat:/")
        assert sum(line.startswith("+ researcher joined") for line in lines) == 3
        assert any(
            "researcher asks to run publish(target=release page) — routed to you" in line
            for line in lines
        )
        assert "  approval-1 approved by you" in lines
        assert sum(line.startswith("✔ researcher completed") for line in lines) == 3
        assert lines[-1].startswith("✔ researcher completed")  # the run's end: said by `run`

    async def test_stream_noise_prints_nothing(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        _, _, runtime, log = await run_with_console(load_team(DELIVERY), mode=ApprovalMode.AUTO)
        state = TeamState(runtime.session)
        quiet = []
        for fact in log.facts:
            state.apply(fact)
            if fact.type.startswith("chat/") and describe_fact(state, fact) is None:
                quiet.append(fact.type)
        assert "chat/delta" in quiet or "chat/responsePart" in quiet


@pytest.fixture
def thread_safe_clock() -> trio.testing.MockClock:
    """Virtual time that jumps only once tasks have been idle for 50 ms of real time.

    The prompt reads stdin in a worker thread; with a zero threshold the clock would jump
    while the thread runs and fire the researchers' 120 s timeout instead.
    """
    return trio.testing.MockClock(autojump_threshold=0.05)


class TestAnswers:
    async def test_yes_at_the_prompt_approves(
        self, thread_safe_clock: trio.testing.MockClock
    ) -> None:
        outcome, text, _, log = await run_with_console(
            load_team(DELIVERY), mode=ApprovalMode.ASK, stdin="y\n"
        )
        assert "Approve? [y/N]" in text
        (resolved,) = [f.action for f in log.facts if isinstance(f.action, ApprovalResolved)]
        assert resolved.decision == "approved"
        assert "published to https://example.invalid" in outcome.result

    async def test_end_of_input_denies(self, thread_safe_clock: trio.testing.MockClock) -> None:
        _, text, _, log = await run_with_console(
            load_team(DELIVERY), mode=ApprovalMode.ASK, stdin=""
        )
        assert "(no input: treated as no)" in text
        (resolved,) = [f.action for f in log.facts if isinstance(f.action, ApprovalResolved)]
        assert resolved.decision == "denied"

    async def test_an_answer_the_question_cannot_take_is_asked_again(
        self, thread_safe_clock: trio.testing.MockClock
    ) -> None:
        """The prompt says what the question expects, names what was wrong, and asks again."""
        team = parse_team(
            '[team]\nname = "t"\ncoordinator = "lead"\n'
            '[agents.lead]\nrole = "coordinator"\ntools = ["ask"]\n'
            "[[agents.lead.turns]]\n"
            'steps = [ { ask = "Ship now?", kind = "boolean" }, { say = "answer: {outcomes}" } ]\n',
            file="t.toml",
        )
        outcome, text, _, _ = await run_with_console(
            team, mode=ApprovalMode.ASK, stdin="maybe\nyes\n"
        )
        assert text.count("lead asks: Ship now? [y/n]") == 2
        assert "input-00000000-t0-r0-c0: answer yes or no, not 'maybe'" in text
        assert outcome.result == "answer: yes"

    async def test_the_live_tree_ends_drawn_on_a_terminal(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """With a live view the final tree is left on the screen, with every member done."""
        outcome, text, _, _ = await run_with_console(
            load_team(DELIVERY), mode=ApprovalMode.AUTO, live=True
        )
        assert outcome.status is RunStatus.COMPLETED
        final = text.rsplit("team delivery", 1)[-1]
        assert final.count("completed") == 4  # the lead and its three researchers
