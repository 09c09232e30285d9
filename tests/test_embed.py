"""The public API (``import orchestrator``): running a team from a program, watching it,
deciding its approvals and answering its questions; the example; a quiet library."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
import trio

import orchestrator
from orchestrator.ahp.actions import ChatTurnStartedAction
from orchestrator.ahp.state import ForkChatOrigin
from orchestrator.core import (
    ApprovalResolved,
    EdgeKind,
    TaskFinished,
    build_graph,
    fact_to_json,
    task_started,
)
from orchestrator.journal import open_reader
from tests.support import code_first
from tests.support.paths import PROJECT_ROOT
from tests.support.teams import ASK, approvals, fan_team

SOLO = """
[team]
name = "solo"
topology = "solo_run"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "done" } ]
"""


class Echo:
    """Answers with the last user message."""

    async def stream_round(
        self, context: orchestrator.RoundContext
    ) -> AsyncGenerator[orchestrator.ModelEvent, None]:
        said = next((text for role, text in reversed(context.history) if role == "user"), "")
        yield orchestrator.TextDelta(text=f"echo: {said}")


def team(text: str) -> orchestrator.TeamSpec:
    return orchestrator.parse_team(text, file="t.toml")


class TestFacade:
    def test_every_listed_name_resolves(self) -> None:
        for name in orchestrator.__all__:
            assert getattr(orchestrator, name) is not None, name
        assert set(orchestrator.__all__) <= set(dir(orchestrator))

    @pytest.mark.daemon
    def test_importing_the_package_loads_nothing_heavy(self) -> None:
        code = (
            "import sys, orchestrator\n"
            "print(sorted(m for m in ('trio', 'structlog', 'sqlite3', 'networkx', 'httpx') "
            "if m in sys.modules))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == "[]"

    def test_version_is_the_installed_distributions(self) -> None:
        from importlib.metadata import version

        assert orchestrator.__version__ == version("team-orchestrator")

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
            _ = orchestrator.nothing_here  # type: ignore[attr-defined]


class TestOpenRun:
    async def test_updates_are_every_fact_in_order_with_envelopes(self) -> None:
        async with orchestrator.open_run(team(SOLO), "go") as run:
            updates = [u async for u in run.updates()]
            outcome = await run.outcome()
        assert outcome.status is orchestrator.RunStatus.COMPLETED
        assert outcome.result == "done"
        assert outcome.session == run.session
        assert [u.fact.sequence for u in updates] == list(range(1, len(updates) + 1))
        assert updates[0].fact.type == "team/runStarted"
        assert updates[-1].fact.type == "team/runFinished"
        assert "run.finished" in [e.type for e in updates[-1].envelopes]
        with pytest.raises(RuntimeError, match="iterated once"):
            run.updates()

    async def test_a_backend_given_answers_every_agent(self) -> None:
        outcome = await orchestrator.run_team(team(SOLO), "hello there", backends=Echo())
        assert outcome.result == "echo: hello there"

    async def test_backends_by_agent_name_and_by_factory(self) -> None:
        by_name = await orchestrator.run_team(team(SOLO), "x", backends={"lead": Echo()})
        assert by_name.result == "echo: x"
        made: list[str] = []

        def factory(agent: orchestrator.AgentSpec) -> orchestrator.Backend:
            made.append(agent.name)
            return Echo()

        by_factory = await orchestrator.run_team(team(SOLO), "y", backends=factory)
        assert by_factory.result == "echo: y"
        assert made == ["lead"]

    async def test_a_backend_for_an_agent_the_team_lacks_is_refused(self) -> None:
        with pytest.raises(ValueError, match="does not have: ghost"):
            await orchestrator.run_team(team(SOLO), "x", backends={"ghost": Echo()})

    async def test_an_empty_prompt_is_refused_before_anything_runs(self) -> None:
        with pytest.raises(orchestrator.RunError, match="prompt is empty"):
            async with orchestrator.open_run(team(SOLO), "  "):
                pass  # pragma: no cover

    async def test_the_block_approves_what_it_is_asked(self) -> None:
        async with orchestrator.open_run(team(approvals()), "ship") as run:
            async for update in run.updates():
                if update.approval is not None:
                    assert update.approval.tool_name == "publish"
                    assert update.approval.requested_by == "worker"
                    assert run.pending_approvals() == [update.approval]
                    await run.approve(update.approval.approval)
            outcome = await run.outcome()
        assert outcome.status is orchestrator.RunStatus.COMPLETED
        assert outcome.result == "[worker, completed] (task: publish it) after: published"

    async def test_unattended_runs_deny_approvals(self) -> None:
        decisions: list[str] = []

        def collect(update: orchestrator.RunUpdate) -> None:
            if isinstance(update.fact.action, ApprovalResolved):
                decisions.append(str(update.fact.action.decision))

        outcome = await orchestrator.run_team(team(approvals()), "ship", on_update=collect)
        assert decisions == ["denied"]
        assert outcome.result == (
            "[worker, completed, 1 call denied] (task: publish it) after: publish was denied "
            "by user"
        )

    async def test_an_async_callback_approves(self) -> None:
        async def approve(request: orchestrator.ApprovalRequested) -> bool:
            await trio.lowlevel.checkpoint()
            return request.tool_name == "publish"

        outcome = await orchestrator.run_team(team(approvals()), "ship", on_approval=approve)
        assert outcome.result == "[worker, completed] (task: publish it) after: published"

    async def test_questions_are_answered_by_the_callback_or_declined(self) -> None:
        asked: list[orchestrator.Question] = []

        def answer(question: orchestrator.Question) -> str:
            asked.append(question)
            return "2.0"

        answered = await orchestrator.run_team(team(ASK), "release", on_question=answer)
        assert answered.result == "Releasing 2.0"
        assert [(q.agent, q.message) for q in asked] == [("lead", "Which version?")]
        # Who asks, as every other client names it, and the task it works on.
        assert asked[0].name == "lead #1"
        assert asked[0].asked_by is not None
        assert (asked[0].asked_by.number, asked[0].asked_by.task) == (1, "task-1")
        declined = await orchestrator.run_team(team(ASK), "release")
        assert declined.result == "Releasing the user chose to decline"

    async def test_the_block_answers_an_open_question(self) -> None:
        async with orchestrator.open_run(team(ASK), "release") as run:
            async for update in run.updates():
                if update.question is not None:
                    assert run.open_questions() == [update.question]
                    await run.answer(update.question, "3.1")
            outcome = await run.outcome()
        assert outcome.result == "Releasing 3.1"

    async def test_an_error_in_the_block_cancels_the_run(self) -> None:
        with pytest.raises(KeyError):
            async with orchestrator.open_run(team(approvals()), "ship") as run:
                raise KeyError("the program gave up")
        assert run.runtime.state.run is not None
        assert str(run.runtime.state.run.status) == "cancelled"

    async def test_an_error_in_the_block_comes_out_as_it_was_with_a_journal_too(
        self, tmp_path: Path
    ) -> None:
        """The journal's nursery, outside the run's, does not wrap it in a group either."""
        with pytest.raises(KeyError, match="the program gave up"):
            async with orchestrator.open_run(team(approvals()), "ship", journal=tmp_path / "r.db"):
                raise KeyError("the program gave up")
        [info] = open_reader(tmp_path / "r.db").sessions()
        assert info.status == "cancelled"

    async def test_a_callback_that_raises_ends_the_run_with_its_error(self) -> None:
        def broken(request: orchestrator.ApprovalRequested) -> bool:
            raise ValueError("the callback broke")

        with pytest.raises(ValueError, match="the callback broke"):
            await orchestrator.run_team(team(approvals()), "ship", on_approval=broken)

    async def test_the_outcome_of_a_run_that_was_cut_off_names_why(self) -> None:
        """No status to give: ``outcome()`` raises RunError naming the cause, not an
        AssertionError from inside the package."""
        with pytest.raises(KeyError):
            async with orchestrator.open_run(team(approvals()), "ship") as run:
                raise KeyError("the program gave up")
        with pytest.raises(orchestrator.RunError, match="ended without an outcome") as caught:
            await run.outcome()
        assert caught.value.__cause__ is not None

    async def test_a_journal_path_keeps_the_run(self, journal_db: Path | str) -> None:
        """``journal=`` a SQLite file's path or a ``postgresql://`` URL."""
        db = journal_db
        outcome = await orchestrator.run_team(team(SOLO), "go", journal=db)
        reader = open_reader(db)
        [info] = reader.sessions()
        assert (info.session, info.status) == (outcome.session, "completed")
        assert reader.facts(outcome.session)[-1].type == "team/runFinished"

    def test_run_team_sync_runs_trio_itself(self) -> None:
        seen: list[str] = []
        outcome = orchestrator.run_team_sync(
            team(SOLO), "go", on_update=lambda u: seen.append(u.fact.type)
        )
        assert outcome.status is orchestrator.RunStatus.COMPLETED
        assert seen[0] == "team/runStarted"
        assert seen[-1] == "team/runFinished"

    async def test_the_shipped_structured_team_gives_structured_values(self) -> None:
        """teams/structured.toml (the Python guide's example): the reviewer is asked again
        once, its value reaches the editor as JSON, the editor's is the run's result_value."""
        async with orchestrator.open_run(
            PROJECT_ROOT / "teams" / "structured.toml", "notes"
        ) as run:
            facts = [u.fact async for u in run.updates()]
            outcome = await run.outcome()
        assert outcome.result_value == {"ship": True, "reason": "the reviewer scored it 4 of 5"}
        [task] = [f.action for f in facts if isinstance(f.action, TaskFinished)]
        assert task.value == {"score": 4, "fixes": ["spell out the breaking change"]}
        retries = [f for f in facts if "outputRetry" in fact_to_json(f)]
        assert len(retries) == 1


def run_python(code: str, *, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        timeout=120,
    )


@pytest.mark.daemon
class TestQuietLibrary:
    PROGRAM = """
        import logging, sys
        import orchestrator
        {setup}
        team = orchestrator.parse_team('''{team}''', file="t.toml")
        outcome = orchestrator.run_team_sync(team, "ship")
        # written to a file, not stdout: stdout must hold nothing the library wrote
        open("outcome.txt", "w").write(str(outcome.status))
    """

    def test_an_embedding_program_writes_nothing_it_did_not_write(self, tmp_path: Path) -> None:
        # The run logs (run started, run finished at info) and the denied approval: with
        # structlog left as it was, those lines went to stdout.
        done = run_python(
            textwrap.dedent(self.PROGRAM).format(setup="", team=approvals()), cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "outcome.txt").read_text() == "completed"
        assert done.stdout == ""
        assert done.stderr == ""

    def test_the_programs_logging_configuration_shows_the_librarys_lines(
        self, tmp_path: Path
    ) -> None:
        setup = "logging.basicConfig(level=logging.INFO, stream=sys.stderr)"
        done = run_python(
            textwrap.dedent(self.PROGRAM).format(setup=setup, team=approvals()), cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == ""
        assert "INFO:orchestrator.runtime:event='run started'" in done.stderr


@pytest.mark.daemon
class TestExample:
    def test_embed_py_runs_a_team_with_its_own_backend(self, tmp_path: Path) -> None:
        done = subprocess.run(
            [sys.executable, str(PROJECT_ROOT / "examples" / "embed.py"), "make it loud"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0].split() == ["1", "team/runStarted"]
        assert "      → run.finished" in lines
        assert lines[-1] == "completed: MAKE IT LOUD "
        assert done.stderr == ""


#: A chat's or session's id, and the chat-id prefix of a tool call's id (``5b97fdcc-t0-r0-c0``).
_ID_RE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{8}(?=-t\d)"
)
_MODIFIED_RE = re.compile(r',?"modifiedAt":"<time>"|(?<="duration":)[0-9.]+|(?<="durationMs":)\d+')
_TIME_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def without_ids(facts: list[orchestrator.Fact]) -> list[str]:
    """The facts' JSON lines with each id numbered in order of first use, and no times or
    durations."""
    numbered: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return numbered.setdefault(match[0], f"id-{len(numbered)}")

    # Times aside: a turn's duration, and a chat's modifiedAt (written when the clock moved
    # since the chat's last change).
    return [
        _MODIFIED_RE.sub(
            "", _TIME_RE.sub("<time>", _ID_RE.sub(number, orchestrator.fact_to_json(fact)))
        )
        for fact in facts
    ]


class TestCodeFirstTeams:
    """A team defined in Python (Agent, Team, @tool) runs as its team file does."""

    async def run(self, team: orchestrator.Team | orchestrator.TeamSpec) -> list[str]:
        code_first.CALLS.clear()
        decided: list[str] = []

        def approve(request: orchestrator.ApprovalRequested) -> bool:
            decided.append(request.tool_name)
            return True

        async with orchestrator.open_run(team, "three little words", on_approval=approve) as run:
            facts = [update.fact async for update in run.updates()]
            outcome = await run.outcome()
        assert outcome.status is orchestrator.RunStatus.COMPLETED
        assert decided == ["publish"]
        return without_ids(facts)

    async def test_the_decorated_functions_are_called_and_the_facts_equal_the_file_s(
        self,
    ) -> None:
        from_python = await self.run(code_first.WORDS)
        calls = list(code_first.CALLS)
        from_file = await self.run(orchestrator.parse_team(code_first.WORDS_TOML, file="t.toml"))
        assert calls == [
            ("count_words", {"text": "three little words"}),
            ("publish", {"text": "three little words", "draft": False}),
        ]
        assert calls == code_first.CALLS  # the file imported the same functions
        assert from_python == from_file
        assert any('"published: three little words"' in line for line in from_python)
        assert any('"3"' in line for line in from_python)


def _raw_facts(db: Path | str, session: str) -> list[str]:
    """A session's stored facts, as the journal keeps them."""
    return [fact_to_json(f) for f in open_reader(db).facts(session)]


def big_fan(workers: int) -> str:
    """A coordinator that delegates ``workers`` tasks in one round, on each of two prompts."""
    delegations = ", ".join(f'{{ agent = "worker", task = "task {i}" }}' for i in range(workers))
    turn = f"""
[[agents.lead.turns]]
steps = [{{ delegate = [{delegations}] }}, {{ say = "collected" }}]
"""
    return (
        f"""
[team]
name = "big"
coordinator = "lead"
parallel_budget = {workers}
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[agents.worker]
role = "worker"
[[agents.worker.turns]]
steps = [{{ say = "done: {{task}}" }}]
"""
        + turn * 2
    )


#: fan_team's coordinator, whose workers are now "helper"s: no agent "worker" any more.
WITHOUT_WORKER = """
[team]
name = "fan"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["helper"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "helper", task = "one" } ] }, { say = "alone: {outcomes}" } ]
[agents.helper]
role = "helps"
"""


class TestFork:
    """``orchestrator.fork``: a session forked at a turn or a fact, run on as a TeamRun."""

    async def test_a_fork_runs_on_with_another_prompt(self, journal_db: Path | str) -> None:
        """The fork copies the source up to its coordinator's turn, takes the new prompt as
        the coordinator's next message, and runs it to the end; the source is untouched."""
        db = journal_db
        source = await orchestrator.run_team(team(fan_team(2)), "first", journal=db)
        before = _raw_facts(db, source.session)
        reader = open_reader(db)
        facts = reader.facts(source.session)
        lead = facts[1].action.summary.resource  # type: ignore[union-attr]
        turn = next(f.action.turn_id for f in facts if isinstance(f.action, ChatTurnStartedAction))
        async with orchestrator.fork(
            source.session, journal=db, at_turn=turn, prompt="and again"
        ) as run:
            outcome = await run.outcome()
        assert outcome.status is orchestrator.RunStatus.COMPLETED
        assert outcome.result.startswith("done: ")
        assert _raw_facts(db, source.session) == before
        forked = reader.facts(run.session)
        lineage = next(f for f in forked if f.type == "team/sessionForked")
        assert lineage.action.source == source.session  # type: ignore[union-attr]
        assert lineage.action.turn_id == turn  # type: ignore[union-attr]
        assert lineage.sequence == lineage.action.sequence + 1  # type: ignore[union-attr]
        # The copies come first, then the lineage, the recovery and the new prompt's turn.
        copied = facts[: lineage.sequence - 1]
        assert [f.type for f in forked[: lineage.sequence - 1]] == [f.type for f in copied]
        assert forked[lineage.sequence].type == "team/runResumed"
        state = reader.open(run.session)
        assert state.run is not None
        assert state.run.forked_from is not None
        assert state.run.forked_from.session == source.session
        coordinator = state.chats[state.coordinator_chat() or ""]
        assert [t.message.text for t in coordinator.turns][-1] == "and again"
        assert coordinator.origin == ForkChatOrigin(chat=lead, turn_id=turn)
        assert sum(1 for t in state.tasks.values() if t.requested_by is not None) == 6
        graph = build_graph(forked)
        assert graph.check() == []
        assert (lead, coordinator.resource) in {
            (u, v) for u, v, _ in graph.edges_of_kind(EdgeKind.FORKED)
        }
        listed = {s.session: s.status for s in reader.sessions()}
        assert listed == {source.session: "completed", run.session: "completed"}

    async def test_a_fork_mid_run_with_a_team_that_lacks_an_agent(self, tmp_path: Path) -> None:
        """Forked while the workers run, with a team file without them: their work is
        cancelled, each task reported killed with the reason, and the run ends."""
        db = tmp_path / "j.db"
        source = await orchestrator.run_team(team(fan_team(1)), "first", journal=db)
        facts = open_reader(db).facts(source.session)
        # The spawn: its memberJoined starts the worker's task (issue 35).
        at = next(f.sequence for f in facts if task_started(f.action) is not None)
        without = team(WITHOUT_WORKER)
        async with orchestrator.fork(source.session, journal=db, at=at, team=without) as run:
            outcome = await run.outcome()
        assert outcome.status is orchestrator.RunStatus.COMPLETED
        state = open_reader(db).open(run.session)
        assert outcome.result.startswith("alone: ")
        assert "killed" in outcome.result
        killed = [t for t in state.tasks.values() if t.requested_by is not None]
        assert killed
        assert all(t.status == "killed" for t in killed)
        assert all("no agent 'worker'" in t.summary for t in killed)
        assert build_graph(open_reader(db).facts(run.session)).check() == []

    async def test_a_fork_of_a_thousand_worker_run_at_its_middle_runs_on(
        self, tmp_path: Path
    ) -> None:
        """Forked halfway through a 1,000-worker fan-out, with another prompt: the workers
        in flight are taken up by the recovery rules, the new prompt runs as the next turn,
        the run completes, and the fork's graph check is clean."""
        db = tmp_path / "j.db"
        big = team(big_fan(1000))
        source = await orchestrator.run_team(big, "first", journal=db)
        facts = open_reader(db).facts(source.session)
        middle = len(facts) // 2
        async with orchestrator.fork(source.session, journal=db, at=middle, prompt="again") as run:
            outcome = await run.outcome()
        assert outcome.status is orchestrator.RunStatus.COMPLETED
        forked = open_reader(db).facts(run.session)
        assert build_graph(forked).check() == []
        state = open_reader(db).open(run.session)
        delegated = [t for t in state.tasks.values() if t.requested_by is not None]
        assert len(delegated) == 2000  # the first prompt's thousand, then the second's
        assert all(t.status == "completed" for t in delegated)
        coordinator = state.chats[state.coordinator_chat() or ""]
        assert [t.message.text for t in coordinator.turns] == ["first", "again"]

    async def test_a_fork_point_the_source_lacks_is_refused(self, tmp_path: Path) -> None:
        db = tmp_path / "j.db"
        source = await orchestrator.run_team(team(SOLO), "go", journal=db)
        with pytest.raises(orchestrator.RunError, match="no turn 'nope' ended"):
            async with orchestrator.fork(source.session, journal=db, at_turn="nope"):
                pass
        assert [s.session for s in open_reader(db).sessions()] == [source.session]


class TestRunBoard:
    async def test_a_person_works_the_board_from_python(self, tmp_path: Path) -> None:
        """``run.board``: each change is recorded attributed to the person named, a refusal
        says why and records nothing, and the journal keeps every item's history."""
        journal = tmp_path / "board.db"
        shipped = PROJECT_ROOT / "teams" / "board.toml"
        async with orchestrator.open_run(shipped, "Ship it", journal=journal) as run:
            board = run.board
            after = await board.claim("approve", by="alice")
            assert after.items["approve"].claimed_by == "alice"
            with pytest.raises(orchestrator.BoardRefusedError) as refused:
                await board.claim("approve", by="bob")
            assert str(refused.value) == "item 'approve' is already claimed by person 'alice'"
            with pytest.raises(orchestrator.BoardRefusedError, match="depends on 'draft'"):
                await board.done("approve", by="alice")
            await board.comment("approve", "I'll read it tonight", by="alice")
            outcome = await run.outcome()
        assert outcome.status == "completed"
        assert [(c.by, c.text) for c in run.board.items["approve"].comments] == [
            ("alice", "I'll read it tonight")
        ]
        state = open_reader(journal).open(run.session)
        assert state.run is not None
        approve = state.run.board.items["approve"]
        assert [(e.event, e.by, e.by_kind) for e in approve.history] == [
            ("create", "board", "team"),
            ("claim", "alice", "person"),
            ("comment", "alice", "person"),
        ]

    async def test_a_team_without_a_board_says_so(self) -> None:
        async with orchestrator.open_run(team(ASK), "go") as run:
            with pytest.raises(orchestrator.RunError, match=r"declares no \[board\]"):
                run.board  # noqa: B018
            run.cancel()
