"""``orchestrator.aio``: the runs of ``import orchestrator``, awaitable from asyncio (trio as a
guest of the asyncio loop); several at once; cancellation across the boundary both ways; the
trio and asyncio APIs each refusing the other's loop, naming the right one.

The tests are plain functions that call ``asyncio.run`` (the suite runs ``async def`` tests
under trio), each bounded by :func:`under_asyncio`'s deadline so a hang fails."""

from __future__ import annotations

import asyncio
import inspect
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import fastapi
import httpx
import pytest
import sniffio
import trio
import uvicorn
from fastapi.responses import StreamingResponse
from fastapi.testclient import TestClient
from jupyter_client.manager import start_new_kernel

import orchestrator
from orchestrator import _embed, aio
from orchestrator.core import ApprovalResolved, TaskCreated
from orchestrator.journal import open_reader
from tests.support.jupyter import run_cell
from tests.support.paths import PROJECT_ROOT
from tests.support.teams import ASK

T = TypeVar("T")

#: A coordinator that delegates to two workers; the second's ``publish`` needs the user's
#: approval; the coordinator answers with both outcomes.
TWO_WORKERS = """
[team]
name = "two"
coordinator = "lead"
parallel_budget = 2

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["writer", "publisher"]

[[agents.lead.turns]]
steps = [
  { delegate = [ { agent = "writer", task = "write it" },
                 { agent = "publisher", task = "publish it" } ] },
  { say = "final: {outcomes}" },
]

[agents.writer]
role = "writer"
[[agents.writer.turns]]
steps = [ { say = "written" } ]

[agents.publisher]
role = "publisher"
tools = ["publish"]
needs_approval = ["publish"]
[agents.publisher.tool_results]
publish = "published"
[[agents.publisher.turns]]
steps = [ { tool = "publish", input = { target = "site" } }, { say = "after: {outcomes}" } ]
"""

FINAL = (
    "final: [writer, completed] (task: write it) written\n"
    "[publisher, completed] (task: publish it) after: published"
)


def team(text: str) -> orchestrator.TeamSpec:
    return orchestrator.parse_team(text, file="t.toml")


def under_asyncio(main: Callable[[], Awaitable[T]]) -> T:
    """``main()`` under ``asyncio.run``, failing after 30 s rather than hanging (even when
    the cancellation would make ``main`` raise what a test expects); afterwards the thread
    holds no trio run (the guest has stopped)."""

    async def bounded() -> T:
        task = asyncio.current_task()
        assert task is not None
        expired: list[bool] = []

        def expire() -> None:
            expired.append(True)
            task.cancel()

        deadline = asyncio.get_running_loop().call_later(30, expire)
        try:
            return await main()
        finally:
            deadline.cancel()
            assert not expired, "hung: cancelled after 30 s"

    result = asyncio.run(bounded())
    assert not trio.lowlevel.in_trio_run(), "a trio guest run outlived asyncio.run"
    return result


class TestRunTeam:
    def test_an_asyncio_callback_decides_the_approval_and_the_answer_comes_back(self) -> None:
        decided: list[tuple[str, str, str]] = []

        async def decide(request: orchestrator.ApprovalRequested) -> bool:
            await asyncio.sleep(0)  # an asyncio await: this runs as an asyncio task
            decided.append(
                (sniffio.current_async_library(), request.tool_name, request.requested_by)
            )
            return True

        outcome = under_asyncio(lambda: aio.run_team(team(TWO_WORKERS), "go", on_approval=decide))
        assert outcome.status is orchestrator.RunStatus.COMPLETED
        assert outcome.result == FINAL
        assert decided == [("asyncio", "publish", "publisher")]

    def test_a_plain_callback_decides_too_and_updates_come_in_order(self) -> None:
        facts: list[orchestrator.Fact] = []

        async def collect(update: orchestrator.RunUpdate) -> None:
            await asyncio.sleep(0)
            facts.append(update.fact)

        outcome = under_asyncio(
            lambda: aio.run_team(
                team(TWO_WORKERS), "go", on_approval=lambda request: False, on_update=collect
            )
        )
        assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
        assert facts[0].type == "team/runStarted"
        assert facts[-1].type == "team/runFinished"
        decisions = [
            str(f.action.decision) for f in facts if isinstance(f.action, ApprovalResolved)
        ]
        assert decisions == ["denied"]
        delegated = [
            f.action.agent
            for f in facts
            if isinstance(f.action, TaskCreated) and f.action.requested_by is not None
        ]
        assert delegated == ["writer", "publisher"]
        assert outcome.result is not None
        assert "publish was denied by user" in outcome.result

    def test_unattended_it_denies_and_declines_as_the_trio_one(self) -> None:
        outcome = under_asyncio(lambda: aio.run_team(team(ASK), "release"))
        assert outcome.result == "Releasing the user chose to decline"

    def test_an_async_question_handler_answers(self) -> None:
        async def answer(question: orchestrator.Question) -> str:
            await asyncio.sleep(0)
            return f"2.0 for {question.name}"

        outcome = under_asyncio(lambda: aio.run_team(team(ASK), "release", on_question=answer))
        assert outcome.result == "Releasing 2.0 for lead #1"

    def test_a_journal_path_keeps_the_run(self, tmp_path: Path) -> None:
        db = tmp_path / "runs.db"
        outcome = under_asyncio(
            lambda: aio.run_team(team(TWO_WORKERS), "go", journal=db, on_approval=lambda r: True)
        )
        reader = open_reader(db)
        [info] = reader.sessions()
        assert (info.session, info.status) == (outcome.session, "completed")


class TestFork:
    def test_a_fork_runs_on_under_asyncio(self, tmp_path: Path) -> None:
        """``aio.fork``: orchestrator.fork's calls from asyncio. Forked before the publisher
        asked its approval, the fork asks it again, of an ``async def`` callback."""
        db = tmp_path / "runs.db"
        source = under_asyncio(
            lambda: aio.run_team(team(TWO_WORKERS), "go", journal=db, on_approval=lambda r: True)
        )
        facts = open_reader(db).facts(source.session)
        asked = next(f.sequence for f in facts if f.type == "team/approvalRequested")
        decided: list[str] = []

        async def approve(request: orchestrator.ApprovalRequested) -> bool:
            decided.append(request.tool_name)
            return True

        async def main() -> tuple[str, orchestrator.RunOutcome]:
            async with aio.fork(
                source.session, journal=db, at=asked - 1, prompt="again", on_approval=approve
            ) as run:
                return run.session, await run.outcome()

        session, outcome = under_asyncio(main)
        assert outcome.status is orchestrator.RunStatus.COMPLETED
        assert session != source.session
        state = open_reader(db).open(session)
        assert state.run is not None
        assert state.run.forked_from is not None
        assert state.run.forked_from.session == source.session
        coordinator = state.chats[state.coordinator_chat() or ""]
        assert [t.message.text for t in coordinator.turns] == ["go", "again"]
        assert decided == ["publish"]


class TestOpenRun:
    def test_the_block_reads_the_updates_and_approves(self) -> None:
        async def main() -> tuple[list[orchestrator.RunUpdate], orchestrator.RunOutcome]:
            seen: list[orchestrator.RunUpdate] = []
            async with aio.open_run(team(TWO_WORKERS), "go") as run:
                async for update in run.updates():
                    seen.append(update)
                    if update.approval is not None:
                        assert run.pending_approvals() == [update.approval]
                        await run.approve(update.approval.approval)
                outcome = await run.outcome()
            assert outcome.session == run.session
            assert run.team.name == "two"
            return seen, outcome

        seen, outcome = under_asyncio(main)
        assert outcome.result == FINAL
        assert [u.fact.sequence for u in seen] == list(range(1, len(seen) + 1))
        assert "run.finished" in [e.type for e in seen[-1].envelopes]
        assert sum(u.approval is not None for u in seen) == 1

    def test_the_block_answers_a_question_and_the_outcome_is_there_after_it(self) -> None:
        async def main() -> orchestrator.RunOutcome:
            async with aio.open_run(team(ASK), "release") as run:
                async for update in run.updates():
                    if update.question is not None:
                        assert run.open_questions() == [update.question]
                        await run.answer(update.question, "3.1")
            return await run.outcome()  # after the block: the run has ended

        assert under_asyncio(main).result == "Releasing 3.1"

    def test_the_updates_can_be_read_after_the_block_too(self) -> None:
        """In the block, one trio task reads the updates ahead for asyncio; after it, each
        step crosses on its own: both give every fact once, in order."""

        async def main() -> tuple[list[int], list[int]]:
            async with aio.open_run(team(ASK), "release", on_question=lambda q: "1") as inside:
                during = [u.fact.sequence async for u in inside.updates()]
            async with aio.open_run(team(ASK), "release", on_question=lambda q: "1") as later:
                pass
            after = [u.fact.sequence async for u in later.updates()]
            return during, after

        during, after = under_asyncio(main)
        assert during == after == list(range(1, len(during) + 1))
        assert len(during) > 5

    def test_two_tasks_reading_one_iteration_share_its_updates(self) -> None:
        """Each update goes to one of them, and both iterations end with the run."""

        async def main() -> tuple[list[int], list[int]]:
            async with aio.open_run(team(ASK), "release", on_question=lambda q: "1") as run:
                updates = run.updates()

                async def read() -> list[int]:
                    return [u.fact.sequence async for u in updates]

                first, second = await asyncio.gather(read(), read())
            return first, second

        first, second = under_asyncio(main)  # both end (neither waits for good)
        assert sorted(first + second) == list(range(1, len(first + second) + 1))
        assert len(first + second) > 5

    def test_callbacks_given_to_open_run_may_be_coroutine_functions(self) -> None:
        async def main() -> orchestrator.RunOutcome:
            async def decide(request: orchestrator.ApprovalRequested) -> bool:
                await asyncio.sleep(0)
                return True

            async with aio.open_run(team(TWO_WORKERS), "go", on_approval=decide) as run:
                return await run.outcome()

        assert under_asyncio(main).result == FINAL

    def test_problems_found_before_the_run_starts_raise_on_entering(self) -> None:
        async def main() -> None:
            async with aio.open_run(team(TWO_WORKERS), "  "):
                pass  # pragma: no cover

        with pytest.raises(orchestrator.RunError, match="prompt is empty"):
            under_asyncio(main)

    def test_an_error_in_the_block_cancels_the_run_and_comes_out_as_it_was(self) -> None:
        raised = KeyError("the program gave up")

        async def main() -> aio.TeamRun:
            with pytest.raises(KeyError) as caught:
                async with aio.open_run(team(TWO_WORKERS), "go") as run:
                    raise raised
            assert caught.value is raised
            return run

        run = under_asyncio(main)
        assert run.runtime.state.run is not None
        assert str(run.runtime.state.run.status) == "cancelled"

    def test_every_call_of_the_trio_run_is_there(self) -> None:
        """Each public method of the trio TeamRun has its asyncio counterpart: an awaitable
        one awaitable, an iterator one an async iterator (a new one is a line in aio)."""
        trio_methods = {
            name: member
            for name, member in inspect.getmembers(_embed.TeamRun)
            if not name.startswith("_")
        }
        missing = sorted(set(trio_methods) - set(dir(aio.TeamRun)))
        assert missing == []
        for name, member in trio_methods.items():
            if inspect.iscoroutinefunction(member):
                assert inspect.iscoroutinefunction(getattr(aio.TeamRun, name)), name
            assert getattr(aio.TeamRun, name).__doc__ == member.__doc__, name


class TestConcurrentRuns:
    def test_runs_at_once_in_one_loop_each_get_their_own_answer(self) -> None:
        async def one(index: int) -> tuple[str, str | None]:
            async def decide(request: orchestrator.ApprovalRequested) -> bool:
                await asyncio.sleep(0)
                return index % 2 == 0

            async with aio.open_run(team(TWO_WORKERS), f"go {index}", on_approval=decide) as run:
                outcome = await run.outcome()
            return outcome.session, outcome.result

        async def main() -> list[tuple[str, str | None]]:
            blocks = asyncio.gather(*(one(i) for i in range(4)))
            runs = asyncio.gather(
                *(aio.run_team(team(ASK), "release", on_question=lambda q: "9") for _ in range(2))
            )
            in_blocks, whole = await asyncio.gather(blocks, runs)
            return [*in_blocks, *((o.session, o.result) for o in whole)]

        results = under_asyncio(main)
        assert len({session for session, _ in results}) == 6
        assert [result for _, result in results[:4:2]] == [FINAL, FINAL]
        assert all("publish was denied" in (r or "") for _, r in results[1:4:2])
        assert [result for _, result in results[4:]] == ["Releasing 9", "Releasing 9"]

    def test_runs_one_after_another_start_a_guest_each(self) -> None:
        async def main() -> list[str | None]:
            results: list[str | None] = []
            for _ in range(3):
                outcome = await aio.run_team(team(ASK), "release", on_question=lambda q: "1")
                results.append(outcome.result)
                assert not trio.lowlevel.in_trio_run()  # stopped once the last run ended
            return results

        assert under_asyncio(main) == ["Releasing 1"] * 3

    def test_runs_starting_as_others_end_each_find_a_guest(self) -> None:
        """Runs that start while the loop's guest is stopping (its last run just ended)
        wait for it to stop, then start the next: trio holds one run per thread."""

        async def runs_in_turn(count: int) -> list[str | None]:
            results: list[str | None] = []
            for _ in range(count):
                outcome = await aio.run_team(team(ASK), "release", on_question=lambda q: "4")
                results.append(outcome.result)
                await asyncio.sleep(0)
            return results

        async def main() -> list[list[str | None]]:
            return list(await asyncio.gather(*(runs_in_turn(4) for _ in range(3))))

        assert under_asyncio(main) == [["Releasing 4"] * 4] * 3


class TestCancellation:
    def test_a_cancelled_run_team_cancels_the_trio_run_and_its_callback(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "runs.db"
        asked = asyncio.Event
        ended: list[str] = []

        async def main() -> None:
            waiting = asked()

            async def never(request: orchestrator.ApprovalRequested) -> bool:
                waiting.set()
                try:
                    await asyncio.Event().wait()
                finally:
                    ended.append("callback cancelled")
                raise AssertionError("unreachable")  # pragma: no cover

            task = asyncio.create_task(
                aio.run_team(team(TWO_WORKERS), "go", journal=db, on_approval=never)
            )
            await waiting.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        under_asyncio(main)
        assert ended == ["callback cancelled"]
        reader = open_reader(db)  # the journal was closed: its facts are all there
        [info] = reader.sessions()
        assert info.status == "cancelled"
        assert reader.facts(info.session)[-1].type == "team/runFinished"

    def test_a_cancelled_block_cancels_the_run(self) -> None:
        async def main() -> aio.TeamRun:
            holder: list[aio.TeamRun] = []

            async def block() -> None:
                async with aio.open_run(team(TWO_WORKERS), "go") as run:
                    holder.append(run)
                    async for update in run.updates():
                        if update.approval is not None:
                            asyncio.current_task().cancel()  # type: ignore[union-attr]

            with pytest.raises(asyncio.CancelledError):
                await asyncio.create_task(block())
            return holder[0]

        run = under_asyncio(main)
        assert run.runtime.state.run is not None
        assert str(run.runtime.state.run.status) == "cancelled"

    def test_a_timeout_at_the_blocks_end_cancels_the_run_which_records_it(self) -> None:
        async def main() -> aio.TeamRun:
            with pytest.raises(TimeoutError):  # noqa: PT012 (the block is what raises)
                async with asyncio.timeout(0.5):
                    async with aio.open_run(team(TWO_WORKERS), "go") as run:
                        pass  # nobody approves: leaving waits for the run, until the timeout
            return run

        run = under_asyncio(main)
        assert run.runtime.state.run is not None
        assert str(run.runtime.state.run.status) == "cancelled"


class TestTrioFailures:
    def test_a_callback_that_raises_fails_run_team_with_its_error(self) -> None:
        async def broken(request: orchestrator.ApprovalRequested) -> bool:
            await asyncio.sleep(0)
            raise ValueError("the callback broke")

        with pytest.raises(ValueError, match="the callback broke"):
            under_asyncio(lambda: aio.run_team(team(TWO_WORKERS), "go", on_approval=broken))

    def test_the_failure_cancels_the_block_waiting_on_asyncio_and_comes_out_of_it(self) -> None:
        def broken(request: orchestrator.ApprovalRequested) -> bool:
            raise ValueError("the callback broke")

        async def main() -> None:
            async with aio.open_run(team(TWO_WORKERS), "go", on_approval=broken):
                await asyncio.Event().wait()  # never set: only the run's failure ends this

        with pytest.raises(ValueError, match="the callback broke"):
            under_asyncio(main)

    def test_a_call_the_failure_cut_off_raises_it(self) -> None:
        def broken(request: orchestrator.ApprovalRequested) -> bool:
            raise ValueError("the callback broke")

        async def main() -> None:
            async with aio.open_run(team(TWO_WORKERS), "go", on_approval=broken) as run:
                await run.outcome()

        with pytest.raises(ValueError, match="the callback broke"):
            under_asyncio(main)

    def test_a_waiter_in_another_task_gets_the_failure_too(self) -> None:
        def broken(request: orchestrator.ApprovalRequested) -> bool:
            raise ValueError("the callback broke")

        async def main() -> BaseException | None:
            waiter: asyncio.Task[orchestrator.RunOutcome] | None = None
            # (PT012: the block is what raises)
            with pytest.raises(ValueError, match="the callback broke"):  # noqa: PT012
                async with aio.open_run(team(TWO_WORKERS), "go", on_approval=broken) as run:
                    waiter = asyncio.create_task(run.outcome())
                    await asyncio.Event().wait()
            assert waiter is not None
            await asyncio.wait([waiter])
            return waiter.exception()

        assert isinstance(under_asyncio(main), ValueError)

    def test_a_guest_that_goes_down_under_a_run_cancels_its_block(self) -> None:
        """When the trio run itself ends under an open run (a KeyboardInterrupt delivered in
        trio, say; here its root nursery cancelled), the block is cancelled and raises
        CancelledError: it is not told that the run ended."""

        def take_the_guest_down(request: orchestrator.ApprovalRequested) -> bool:
            guest = aio._guests[asyncio.get_running_loop()]  # (called in a trio tick)
            assert guest._nursery is not None
            guest._nursery.cancel_scope.cancel()
            return True

        async def main() -> str:
            try:
                async with aio.open_run(
                    team(TWO_WORKERS), "go", on_approval=take_the_guest_down
                ) as run:
                    await run.outcome()
            except asyncio.CancelledError:
                return "cancelled"
            return "ended"  # pragma: no cover

        assert under_asyncio(main) == "cancelled"


class TestMisuse:
    def test_the_trio_calls_under_asyncio_name_orchestrator_aio(self) -> None:
        async def main() -> list[str]:
            said = []
            with pytest.raises(RuntimeError) as opening:
                async with orchestrator.open_run(team(ASK), "x"):
                    pass  # pragma: no cover
            said.append(str(opening.value))
            with pytest.raises(RuntimeError) as running:
                await orchestrator.run_team(team(ASK), "x")
            said.append(str(running.value))
            return said

        assert under_asyncio(main) == [
            "orchestrator.open_run runs under trio, and this is asyncio: use "
            "orchestrator.aio.open_run (from orchestrator import aio), the same call for asyncio",
            "orchestrator.run_team runs under trio, and this is asyncio: use "
            "orchestrator.aio.run_team (from orchestrator import aio), the same call for asyncio",
        ]

    async def test_the_asyncio_calls_under_trio_name_the_trio_ones(self) -> None:
        with pytest.raises(RuntimeError) as opening:
            async with aio.open_run(team(ASK), "x"):
                pass  # pragma: no cover
        assert str(opening.value) == (
            "orchestrator.aio.open_run is for asyncio, and this is trio: "
            "use orchestrator.open_run, the same call for trio"
        )
        with pytest.raises(RuntimeError, match=r"use orchestrator\.run_team, the same call"):
            await aio.run_team(team(ASK), "x")


class TestFastApi:
    """An app whose endpoints run teams: one awaits the run with an asyncio approval
    callback, one streams the updates of a run it approves itself. FastAPI's TestClient
    runs the app on an asyncio loop in a thread of its own; uvicorn serves it on loopback."""

    def app(self) -> fastapi.FastAPI:
        app = fastapi.FastAPI()

        @app.post("/runs")
        async def run(prompt: str, approve: bool) -> dict[str, str | None]:
            async def decide(request: orchestrator.ApprovalRequested) -> bool:
                await asyncio.sleep(0)
                return approve

            outcome = await aio.run_team(team(TWO_WORKERS), prompt, on_approval=decide)
            return {"status": str(outcome.status), "result": outcome.result}

        @app.get("/runs/stream")
        async def stream(prompt: str) -> StreamingResponse:
            async def lines() -> AsyncIterator[str]:
                async with aio.open_run(team(TWO_WORKERS), prompt) as run:
                    async for update in run.updates():
                        yield f"{update.fact.sequence} {update.fact.type}\n"
                        if update.approval is not None:
                            await run.approve(update.approval.approval)
                    outcome = await run.outcome()
                yield f"result {outcome.result}\n"

            return StreamingResponse(lines(), media_type="text/plain")

        return app

    def test_an_endpoint_awaits_a_run_with_an_asyncio_callback(self) -> None:
        with TestClient(self.app()) as client:
            approved = client.post("/runs", params={"prompt": "go", "approve": True})
            denied = client.post("/runs", params={"prompt": "go", "approve": False})
        assert approved.status_code == 200
        assert approved.json() == {"status": "completed", "result": FINAL}
        assert "publish was denied by user" in denied.json()["result"]

    def test_an_endpoint_streams_the_updates_of_a_run(self) -> None:
        with TestClient(self.app()) as client:
            response = client.get("/runs/stream", params={"prompt": "go"})
        streamed, result = response.text.split("result ", 1)
        lines = streamed.splitlines()
        assert lines[0] == "1 team/runStarted"
        assert lines[-1].endswith(" team/runFinished")
        assert [int(line.split()[0]) for line in lines] == list(range(1, len(lines) + 1))
        assert result == f"{FINAL}\n"

    @pytest.mark.daemon
    def test_a_real_server_runs_requests_at_once_in_its_loop(self) -> None:
        """uvicorn on loopback, in the test's own asyncio loop: three requests at once, each
        a run of its own, hosted by that loop's one guest run."""

        async def main() -> list[dict[str, Any]]:
            listening = socket.socket()
            listening.bind(("127.0.0.1", 0))
            listening.listen()  # connections wait in the backlog until uvicorn accepts
            port = listening.getsockname()[1]
            config = uvicorn.Config(self.app(), log_level="warning", lifespan="off")
            server = uvicorn.Server(config)
            serving = asyncio.create_task(server.serve(sockets=[listening]))
            try:
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                    responses = await asyncio.gather(
                        *(
                            client.post("/runs", params={"prompt": f"go {i}", "approve": i != 1})
                            for i in range(3)
                        )
                    )
            finally:
                server.should_exit = True
                await serving
                listening.close()
            return [response.json() for response in responses]

        first, second, third = under_asyncio(main)
        assert first == third == {"status": "completed", "result": FINAL}
        assert "publish was denied by user" in second["result"]


@pytest.mark.daemon
class TestJupyter:
    def test_a_cell_awaits_runs_at_top_level(self) -> None:
        """A headless IPython kernel (a process of its own) runs a cell with a top-level
        ``await aio.run_team(...)`` deciding the approval with an ``async def``, and a
        second cell with ``async with aio.open_run(...)``."""
        manager, client = start_new_kernel(kernel_name="python3", cwd=str(PROJECT_ROOT))
        try:
            first = run_cell(
                client,
                f"""
import asyncio, orchestrator, sniffio
from orchestrator import aio

team = orchestrator.parse_team({TWO_WORKERS!r}, file="t.toml")

async def decide(request):
    await asyncio.sleep(0)
    return True

outcome = await aio.run_team(team, "go", on_approval=decide)
print(sniffio.current_async_library(), outcome.status, repr(outcome.result))
""",
            )
            second = run_cell(
                client,
                """
async with aio.open_run(team, "go", on_approval=lambda request: False) as run:
    print(len([update async for update in run.updates()]) > 10)
print((await run.outcome()).status)
""",
            )
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
        assert first == f"asyncio completed {FINAL!r}\n"
        assert second == "True\ncompleted\n"


class TestRunBoard:
    def test_a_person_works_the_board_from_asyncio(self) -> None:
        async def main() -> tuple[str | None, str]:
            shipped = PROJECT_ROOT / "teams" / "board.toml"
            async with aio.open_run(shipped, "Ship it") as run:
                after = await run.board.claim("approve", by="alice")
                try:
                    await run.board.claim("approve", by="bob")
                except orchestrator.BoardRefusedError as exc:
                    refused = str(exc)
                await run.outcome()
            return after.items["approve"].claimed_by, refused

        assert under_asyncio(main) == (
            "alice",
            "item 'approve' is already claimed by person 'alice'",
        )
