"""What ``orchestrator run`` shows: the team tree, plain lines, and answers at the prompt."""

from __future__ import annotations

import io
import itertools
import json
import time

import pytest
import trio
import trio.testing
from rich.console import Console, RenderableType

from orchestrator.cli import ApprovalMode, TeamConsole, describe_fact, render_tree
from orchestrator.cli._console import DRAWING_SHARE, REFRESH_PER_SECOND
from orchestrator.cli._conventions import Reporter
from orchestrator.cli._run_command import ending_line
from orchestrator.core import (
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    RunStatus,
    TaskFinished,
    TaskStatus,
    TeamState,
)
from orchestrator.runtime import Ids, MemoryFactLog, RunOutcome, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import TeamSpec, load_team, parse_team
from tests.support.paths import PROJECT_ROOT

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
    team: TeamSpec,
    *,
    mode: ApprovalMode,
    stdin: str = "",
    live: bool = False,
    json_logs: bool = False,
) -> tuple[RunOutcome, str, TeamRuntime, MemoryFactLog]:
    """``json_logs``: the console's lines go through a reporter writing JSON records."""
    runtime, log = runtime_for(team)
    out = io.StringIO()
    reporter = Reporter(as_json=True, stream=out) if json_logs else None
    console = TeamConsole(
        runtime, mode=mode, stream=out, stdin=io.StringIO(stdin), live=live, reporter=reporter
    )
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
            "researcher #3 (task: Publish the release notes to the release page) asks to run "
            "publish(target=release page) — routed to you" in line
            for line in lines
        )
        assert "  approval-1 approved by you" in lines
        assert sum(line.startswith("✔ researcher completed") for line in lines) == 3
        assert lines[-1].startswith("✔ researcher completed")  # the run's end: said by `run`

    async def test_each_review_round_is_a_line(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The review team: who reviews whom, each verdict with what it asked to fix."""
        team = load_team(PROJECT_ROOT / "teams" / "review.toml")
        _, text, _, _ = await run_with_console(team, mode=ApprovalMode.AUTO)
        reviews = [line for line in text.splitlines() if line.startswith(("◇", "◆"))]
        assert reviews == [
            "◇ reviewer reviews writer's work (round 1)",
            "◆ review changes requested: The breaking change is not mentioned. "
            "Fixes: Name the breaking change: review.toml became structured.toml.",
            "◇ reviewer reviews writer's work (round 2)",
            "◆ review passed: Complete: the breaking change is named.",
        ]

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
        (resolved,) = [f.action for f in log.facts if isinstance(f.action, ApprovalResolved)]
        assert len([f for f in log.facts if isinstance(f.action, ApprovalRequested)]) == 1
        # Which of the three researchers asks: its number and its task.
        asked = (
            "researcher #3 (task: Publish the release notes to the release page) wants to "
            "run publish(target=release page)"
        )
        flat = " ".join(text.split())
        assert f"{asked}. Approve? [y/N]" in flat
        assert f"? {asked} → approved by you" in flat  # the decision stays on screen
        assert resolved.decision == "approved"
        assert "published to https://example.invalid" in outcome.result

    async def test_end_of_input_denies(self, thread_safe_clock: trio.testing.MockClock) -> None:
        _, text, _, log = await run_with_console(
            load_team(DELIVERY), mode=ApprovalMode.ASK, stdin=""
        )
        assert (
            "(no answer, input ended: treated as no. To decide without being asked, run with "
            "--approve auto or --approve deny)"
        ) in text
        (resolved,) = [f.action for f in log.facts if isinstance(f.action, ApprovalResolved)]
        assert resolved.decision == "denied"

    async def test_outcomes_name_their_task_and_count_denied_calls(
        self, thread_safe_clock: trio.testing.MockClock
    ) -> None:
        """The coordinator's ``{outcomes}``: one line per delegated task, each naming its
        task; the worker whose publish was denied completed with ``1 call denied``, and its
        progress line is marked so (⚠), not ✔."""
        outcome, text, runtime, _ = await run_with_console(
            load_team(DELIVERY), mode=ApprovalMode.ASK, stdin="n\n"
        )
        lines = [line for line in outcome.result.splitlines() if line.startswith("[")]
        assert [line.split(") ", 1)[0] + ")" for line in lines] == [
            "[researcher, completed] (task: Summarise the changelog since the last release)",
            "[researcher, completed] (task: List the known issues reported against this version)",
            "[researcher, completed, 1 call denied] (task: Publish the release notes to the "
            "release page)",
        ]
        finished = [line for line in text.splitlines() if " researcher completed" in line]
        assert sorted(line[0] for line in finished) == ["⚠", "✔", "✔"]
        assert any(line.startswith("⚠ researcher completed, 1 call denied: ") for line in finished)
        tree = [line for line in drawn(runtime.state).splitlines() if "researcher" in line]
        denied = "⚠ researcher  completed, 1 call denied  — Publish the release notes"
        assert sum(denied in line for line in tree) == 1
        assert sum("✔ researcher  completed  — " in line for line in tree) == 2

    async def test_with_json_logs_the_question_and_the_end_of_input_are_records(
        self, thread_safe_clock: trio.testing.MockClock
    ) -> None:
        """Stderr speaks one format: every line is a JSON record, the question one of its
        own (whatever its length), and the end of input a warning naming ``--approve``."""
        _, text, _, log = await run_with_console(
            load_team(DELIVERY), mode=ApprovalMode.ASK, stdin="", json_logs=True
        )
        records = [json.loads(line) for line in text.splitlines()]  # each line is JSON
        (question,) = [r for r in records if r.get("awaiting") == "stdin"]
        assert question["event"].startswith("researcher #3 (task: Publish the release notes")
        assert question["event"].endswith(
            "wants to run publish(target=release page). Approve? [y/N]"
        )
        (ended,) = [r for r in records if r["level"] == "warning"]
        assert ended["event"] == (
            "no answer, input ended: treated as no. To decide without being asked, run with "
            "--approve auto or --approve deny"
        )
        assert records.index(question) < records.index(ended)
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
        assert text.count("asks: Ship now? [y/n]") == 2
        assert ") asks: Ship now? → yes" in " ".join(text.split())  # the answer stays
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


def wide_team(quick: int, slow: int) -> TeamSpec:
    """A coordinator that delegates ``quick`` workers that answer at once and ``slow`` ones
    that take 100 s (virtual) first."""
    tasks = [f'{{ agent = "quick", task = "q{i}" }}' for i in range(quick)]
    tasks += [f'{{ agent = "slow", task = "s{i}" }}' for i in range(slow)]
    return parse_team(
        f'[team]\nname = "wide"\ncoordinator = "lead"\nparallel_budget = {quick + slow}\n'
        '[agents.lead]\nrole = "coordinator"\ntools = ["delegate"]\n'
        'delegates_to = ["quick", "slow"]\n'
        f"[[agents.lead.turns]]\nsteps = [ {{ delegate = [{', '.join(tasks)}] }} ]\n"
        '[agents.quick]\nrole = "worker"\n[[agents.quick.turns]]\nsteps = [ { say = "ok" } ]\n'
        '[agents.slow]\nrole = "worker"\n[[agents.slow.turns]]\n'
        'steps = [ { sleep = 100 }, { say = "ok" } ]\n',
        file="wide.toml",
    )


class _Terminal(io.StringIO):
    """What a terminal is to rich (so the live view draws every frame), kept as text."""

    def isatty(self) -> bool:
        return True


class TestBoundedFrames:
    async def test_a_frame_fits_the_height_and_shows_who_runs_first(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """40 quick workers done, 3 slow ones running, 10 lines: the title, the lead, the
        three running workers, as many done ones as fit, and a line counting the rest."""
        runtime, _ = runtime_for(wide_team(40, 3))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.run, "go")
            await trio.sleep(50)
            console = Console(file=io.StringIO(), width=200, color_system=None)
            console.print(render_tree(runtime.state, max_lines=10))
            lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
            nursery.cancel_scope.cancel()
        assert len(lines) == 10
        assert lines[0] == "team wide — go"
        assert "lead" in lines[1]
        assert sum("slow  running" in line for line in lines) == 3  # drawn first
        assert sum("quick  completed" in line for line in lines) == 4  # then what fits
        assert lines[-1].endswith("… 36 more teammates: 36 completed")

    def test_a_team_that_fits_is_drawn_whole(self) -> None:
        """Under the bound, the frame is the full tree."""
        state = TeamState("ahp-session:/x")
        assert render_tree(state, max_lines=3).label == render_tree(state).label

    async def test_frames_are_bounded_in_rate_and_drawn_on_change(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """At most REFRESH_PER_SECOND frames a second however fast the facts come, none
        while nothing changes, and a last frame with everyone once the run ends."""
        runtime, _ = runtime_for(wide_team(30, 1))
        out = _Terminal()
        console = TeamConsole(
            runtime, mode=ApprovalMode.AUTO, stream=out, stdin=io.StringIO(), live=True
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(console.serve)
            await trio.sleep(5)  # nothing happens: one frame, the first
            assert out.getvalue().count("team (starting)") == 1
            started = trio.current_time()
            await runtime.run("go")
            elapsed = trio.current_time() - started
            runtime.bus.close()
        text = out.getvalue()
        frames = text.count("team wide — go")
        assert 2 <= frames <= elapsed * REFRESH_PER_SECOND + 2
        final = text.rsplit("team wide — go", 1)[-1]
        assert final.count("completed") == 32  # the last frame draws everyone

    async def test_costly_frames_come_less_often(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A frame that takes 20 ms to draw is followed by at least 20 ms / DRAWING_SHARE
        without one: the live view takes a bounded share of the process, whatever the
        team's size."""
        runtime, _ = runtime_for(wide_team(30, 1))
        out = _Terminal()
        console = TeamConsole(
            runtime, mode=ApprovalMode.AUTO, stream=out, stdin=io.StringIO(), live=True
        )
        drawing = console._drawing
        frames: list[float] = []

        def slow_drawing() -> RenderableType:
            frames.append(trio.current_time())
            time.sleep(0.02)  # real time: the virtual clock stands still meanwhile
            return drawing()

        console._drawing = slow_drawing  # type: ignore[method-assign]
        async with trio.open_nursery() as nursery:
            await nursery.start(console.serve)
            await runtime.run("go")
            runtime.bus.close()
        gaps = [later - earlier for earlier, later in itertools.pairwise(frames)]
        assert gaps
        assert min(gaps) >= 0.02 / DRAWING_SHARE > 1 / REFRESH_PER_SECOND


class TestPlainLinesReported:
    async def test_every_line_in_order_with_its_fact(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Through the reporter (JSON on a pipe), lines written a batch at a time stay one
        per notable fact, in the order of the facts."""
        runtime, log = runtime_for(wide_team(20, 0))
        out = io.StringIO()
        reporter = Reporter(as_json=True, stream=out)
        console = TeamConsole(
            runtime, mode=ApprovalMode.AUTO, stream=out, stdin=io.StringIO(), reporter=reporter
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(console.serve)
            await runtime.run("go")
            runtime.bus.close()
        records = [json.loads(line) for line in out.getvalue().splitlines()]
        state = TeamState(runtime.session)
        expected = []
        for fact in log.facts:
            state.apply(fact)
            if describe_fact(state, fact) is not None:
                expected.append(fact.sequence)
        assert [r["sequence"] for r in records] == expected
        assert sum(r["event"].startswith("+ quick joined") for r in records) == 20
        assert sum(r["event"].startswith("✔ quick completed") for r in records) == 20


class TestEndingLines:
    """A killed worker and a cancelled run are said once, with the reason when there is one."""

    def _finished(self, summary: str) -> tuple[TeamState, Fact]:
        state = TeamState("ahp-session:/s")
        action = TaskFinished(
            task="t1", status=TaskStatus.KILLED, summary=summary, duration_ms=5, chat="c1"
        )
        return state, Fact(sequence=9, session="ahp-session:/s", channel="c1", at="", action=action)

    def test_a_killed_worker_says_why(self) -> None:
        state, fact = self._finished("stopped at a client's request")
        assert describe_fact(state, fact) == "✘ c1 killed: stopped at a client's request"

    def test_an_old_journal_s_bare_cancelled_is_not_repeated(self) -> None:
        """Journals before 2026-12-07 record a killed task's summary as ``cancelled``."""
        state, fact = self._finished("cancelled")
        assert describe_fact(state, fact) == "✘ c1 killed"

    @pytest.mark.parametrize(
        ("status", "error", "line"),
        [
            (RunStatus.CANCELLED, "cancelled", "the run was cancelled (session s)"),
            (
                RunStatus.CANCELLED,
                "stopped with the process: the run resumes at the next start",
                "the run was cancelled: stopped with the process: the run resumes at the next"
                " start (session s)",
            ),
            (RunStatus.FAILED, "model down", "the run failed: model down (session s)"),
            (RunStatus.COMPLETED, "", "the run completed (session s)"),
        ],
    )
    def test_the_run_s_last_line(self, status: RunStatus, error: str, line: str) -> None:
        assert ending_line(RunOutcome(session="s", status=status, error=error)) == line
