"""The remote teammate backend against real A2A agents on loopback (``a2a-sdk``'s own server,
tests/support/a2a_peers.py): what a delegation to one records, in order, with its ids."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatResponsePartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
)
from orchestrator.ahp.state import MarkdownResponsePart, SystemNotificationResponsePart
from orchestrator.base import RunError
from orchestrator.core import (
    USER,
    ApprovalRequested,
    ApprovalResolved,
    EdgeKind,
    HandoffRecorded,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamState,
    artifact_of,
    build_graph,
    parse_traceparent,
    remote_task_of,
)
from orchestrator.journal import open_journal, open_reader
from orchestrator.protocols import project_facts
from orchestrator.runtime import Ids, TeamRuntime, Tracing, TracingSettings, install_tracing
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.spec import TeamSpec, parse_team
from tests.support.a2a_peers import (
    AUTH_SECRET,
    A2APeers,
    AuthOnceAgent,
    ConfirmAgent,
    EchoAgent,
    a2a_app,
    broken_app,
    serve_a2a_app_in_thread,
    serve_peers,
)
from tests.support.agentui import check_remote_teammate
from tests.support.paths import PROJECT_ROOT
from tests.support.runtime import Harness, wait_for
from tests.support.teams import remote, remote_approvals

pytestmark = pytest.mark.daemon

ENV = {"REMOTE_TOKEN": "s3cret-token"}


@pytest.fixture(scope="module")
def peers() -> Iterator[A2APeers]:
    with serve_peers() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def harness(team: TeamSpec, http: httpx.AsyncClient) -> Harness:
    return Harness(team, backends=backend_factory(team, client=http, environ=ENV))


def team_of(peers: A2APeers, *names: str, local: bool = False, **tasks: str) -> TeamSpec:
    urls = {name: peers.url[name] for name in names}
    return parse_team(remote(urls, tasks=tasks, local=local), file="remote.toml")


def chat_of(h: Harness, agent: str) -> str:
    """The chat of the task delegated to ``agent``."""
    agents = {a.task: a.agent for a in h.actions(TaskCreated)}
    return next(a.chat for a in h.actions(TaskStarted) if agents[a.task] == agent)


def parts_of(h: Harness, chat: str) -> list[Any]:
    return [
        f.action.part
        for f in h.facts
        if f.channel == chat and isinstance(f.action, ChatResponsePartAction)
    ]


def states_of(h: Harness, chat: str) -> list[str]:
    return [
        meta["state"] for part in parts_of(h, chat) if (meta := remote_task_of(part)) is not None
    ]


def finished_of(h: Harness, chat: str) -> TaskFinished:
    return next(a for a in h.actions(TaskFinished) if a.chat == chat)


class TestDelegation:
    async def test_two_remote_agents_and_a_local_worker_run_in_parallel(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        """A streaming agent, a polled one and a local worker: each outcome is the
        coordinator's, and each remote task's states are facts of its worker's chat."""
        h = harness(team_of(peers, "echo", "echo_polled", local=True), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed", outcome
        assert "[echo, completed] (task: hello echo) echo: hello echo" in outcome.result
        assert "[echo_polled, completed] (task: hello echo_polled) echo: hello" in outcome.result
        assert "[helper, completed] (task: tidy up) tidied tidy up" in outcome.result
        for agent in ("echo", "echo_polled"):
            chat = chat_of(h, agent)
            # The remote truth, in order: sent, then the peer's own states.
            states = states_of(h, chat)
            assert states[0] == "sending"
            assert states[-1] == "completed"
            # A stream shows every state; polling shows those it happens to see, in order.
            order = ["sending", "submitted", "working", "completed"]
            assert states == sorted(states, key=order.index)
            if agent == "echo":
                assert "working" in states
            metas = [m for p in parts_of(h, chat) if (m := remote_task_of(p)) is not None]
            task_ids = {m["remoteTaskId"] for m in metas[1:]}
            assert len(task_ids) == 1
            assert "" not in task_ids
            assert metas[-1]["rawState"] == "TASK_STATE_COMPLETED"
            assert metas[-1]["card"] == {"name": agent, "version": "1.2.3", "skills": [agent]}
            assert metas[-1]["url"] == peers.url[agent]
            artifacts = [a for p in parts_of(h, chat) if (a := artifact_of(p)) is not None]
            assert [a["name"] for a in artifacts] == ["echo.txt"]
            assert artifacts[0]["remoteTaskId"] in task_ids
            # The answer is the turn's text, after every notice, and the task's summary.
            last = parts_of(h, chat)[-1]
            assert isinstance(last, MarkdownResponsePart)
            assert last.content.startswith(f"echo: hello {agent}")
            assert "[artifact echo.txt]" in last.content
            assert finished_of(h, chat).status is TaskStatus.COMPLETED
        # No credential in any fact.
        assert all("s3cret" not in repr(f) for f in h.facts)

    async def test_three_artifact_chunks_are_three_facts_and_one_artifact(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "chunks"), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        chat = chat_of(h, "chunks")
        chunks = [a for p in parts_of(h, chat) if (a := artifact_of(p)) is not None]
        assert [(c["artifactId"], c["append"], c["lastChunk"]) for c in chunks] == [
            ("report-1", False, False),
            ("report-1", True, False),
            ("report-1", True, True),
        ]
        assert [c["parts"] for c in chunks] == [
            [{"text": "alpha "}],
            [{"text": "beta "}],
            [{"text": "gamma"}],
        ]
        assert "report written\n\n[artifact report.md]\nalpha beta gamma" in outcome.result
        # The chunks came between working and completed.
        kinds = [
            "artifact" if artifact_of(p) else (remote_task_of(p) or {}).get("state", p.kind)
            for p in parts_of(h, chat)
        ]
        assert kinds == [
            "sending",
            "submitted",
            "working",
            *["artifact"] * 3,
            "completed",
            "markdown",
        ]


class TestFailures:
    async def test_a_failed_remote_task_ends_its_delegation_and_the_team_goes_on(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "failing", local=True), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        chat = chat_of(h, "failing")
        finished = finished_of(h, chat)
        assert finished.status is TaskStatus.FAILED
        assert finished.summary.startswith(f"remote agent failing ({peers.url['failing']}): task ")
        assert finished.summary.endswith("failed (TASK_STATE_FAILED): the disk is full")
        errors = [
            f.action for f in h.facts if f.channel == chat and isinstance(f.action, ChatErrorAction)
        ]
        assert [e.error.error_type for e in errors] == ["RemoteAgentError"]
        assert "[helper, completed]" in outcome.result

    async def test_an_unreachable_agent_ends_its_delegation_naming_it(
        self, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        with serve_peers("echo") as gone:
            url = gone.url["echo"]
        team = parse_team(remote({"echo": url}, local=True), file="remote.toml")
        h = harness(team, http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        summary = finished_of(h, chat_of(h, "echo")).summary
        assert summary.startswith(f"remote agent echo ({url}): its agent card could not be read")
        assert "[helper, completed]" in outcome.result

    @pytest.mark.parametrize(
        ("mode", "said"),
        [
            ("http_error", "HTTP Error 503"),
            pytest.param(
                "malformed",
                "Invalid JSON-RPC response in SSE stream",
                # The SDK raises from inside its SSE parser without closing it, nor httpx's
                # line iterators under it: trio closes them when they are collected (at
                # once), and warns. The connection is closed all the same.
                marks=pytest.mark.filterwarnings("ignore:Async generator:ResourceWarning"),
            ),
            ("stream_stops", "stopped before the task ended (last state: working)"),
        ],
    )
    async def test_a_broken_peer_ends_its_delegation_naming_it_and_what_happened(
        self, mode: str, said: str, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        with serve_a2a_app_in_thread(broken_app(mode)) as url:
            team = parse_team(remote({"broken": url}, local=True), file="remote.toml")
            h = harness(team, http)
            with trio.fail_after(30):
                outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        chat = chat_of(h, "broken")
        finished = finished_of(h, chat)
        assert finished.status is TaskStatus.FAILED
        assert finished.summary.startswith(f"remote agent broken ({url}): ")
        assert said in finished.summary
        assert "[helper, completed]" in outcome.result
        assert "[broken, failed]" in outcome.result


class TestInputAndCancel:
    async def test_input_required_is_a_question_and_the_answer_goes_back(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "ask"), http)
        async with trio.open_nursery() as nursery:
            outcomes: list[Any] = []

            async def run() -> None:
                outcomes.append(await h.runtime.run("Go"))

            nursery.start_soon(run)
            with trio.fail_after(30):
                asked = await wait_for(h, lambda f: isinstance(f.action, ChatInputRequestedAction))
            assert isinstance(asked.action, ChatInputRequestedAction)
            assert asked.action.request.message == "Which colour?"
            await h.runtime.answer_input(asked.channel, asked.action.request.id, "blue")
        outcome = outcomes[0]
        assert outcome.status == "completed"
        assert "[ask, completed] (task: hello ask) painted it blue" in outcome.result
        chat = chat_of(h, "ask")
        assert asked.channel == chat
        metas = [m for p in parts_of(h, chat) if (m := remote_task_of(p)) is not None]
        # One remote task throughout: the answer went to the same task, not a new one.
        assert len({m["remoteTaskId"] for m in metas[1:]}) == 1
        assert [m["state"] for m in metas] == [
            "sending",
            "submitted",
            "working",
            "input_required",
            "working",
            "completed",
        ]

    async def test_cancelling_the_run_cancels_the_remote_task(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "hanging"), http)
        hanging = peers.executor["hanging"]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.runtime.run, "Go")
            with trio.fail_after(30):
                await wait_for(
                    h,
                    lambda f: (
                        isinstance(f.action, ChatResponsePartAction)
                        and (remote_task_of(f.action.part) or {}).get("state") == "working"
                    ),
                )
            nursery.cancel_scope.cancel()
        chat = chat_of(h, "hanging")
        remote_id = states_and_ids(h, chat)[-1][1]
        assert remote_id in hanging.cancelled  # type: ignore[attr-defined]
        assert any(
            f.channel == chat and isinstance(f.action, ChatTurnCancelledAction) for f in h.facts
        )


class TestRestart:
    """A stop of the process leaves the remote task running; the next start takes it up by
    its id (tasks/get, then resubscribe or polling) and does not send it again."""

    # slow_late: the task ends between tasks/get (working) and the resubscribe, which the
    # peer then refuses (a task in a terminal state): its end is read with tasks/get. The
    # SDK's client leaves its inner HTTP stream to the garbage collector when the peer
    # refuses (a ResourceWarning, its code not ours: it has no aclosing around it).
    @pytest.mark.parametrize(
        "agent",
        [
            "slow",
            "slow_polled",
            pytest.param(
                "slow_late",
                marks=[
                    pytest.mark.filterwarnings("ignore::ResourceWarning"),
                    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
                ],
            ),
        ],
    )
    async def test_a_remote_task_is_taken_up_by_its_id_not_sent_again(
        self, agent: str, peers: A2APeers, http: httpx.AsyncClient
    ) -> None:
        team = team_of(peers, agent)
        h = harness(team, http)
        slow = peers.executor[agent]
        started_before = list(slow.started)  # type: ignore[attr-defined]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.runtime.run, "Go")
            with trio.fail_after(30):
                await wait_for(
                    h,
                    lambda f: (
                        isinstance(f.action, ChatResponsePartAction)
                        and (remote_task_of(f.action.part) or {}).get("remoteTaskId", "") != ""
                    ),
                )
            h.runtime.stop()
        chat = chat_of(h, agent)
        remote_id = states_and_ids(h, chat)[-1][1]
        assert remote_id not in slow.cancelled  # type: ignore[attr-defined]
        state = TeamState.fold(h.runtime.session, h.facts)
        resumed = TeamRuntime(
            team,
            backends=backend_factory(team, client=http, environ=ENV),  # a new process's view
            factlog=h.log,
            ids=Ids(deterministic=True, restart=1),
            clock=lambda: "2026-11-22T00:00:00.000Z",
            state=state,
        )
        with trio.fail_after(30):
            outcome = await resumed.resume()
        assert outcome.status == "completed", outcome
        assert "[" + agent + ", completed] (task: hello " + agent + ") slow done" in outcome.result
        assert "[artifact slow.txt]\nslow work" in outcome.result
        # Sent once: the peer started one task for this run, the one taken up.
        assert [t for t in slow.started if t not in started_before] == [remote_id]  # type: ignore[attr-defined]
        ids = {i for _, i in states_and_ids(h, chat) if i}
        assert ids == {remote_id}
        assert states_and_ids(h, chat)[-1] == ("completed", remote_id)
        h.runtime = resumed
        h.finished()


def states_and_ids(h: Harness, chat: str) -> list[tuple[str, str]]:
    return [
        (m["state"], m["remoteTaskId"])
        for p in parts_of(h, chat)
        if (m := remote_task_of(p)) is not None
    ]


# Kept imported: the facts these tests read.
_ = (ChatDeltaAction, ChatTurnCompleteAction, SystemNotificationResponsePart)


class TestAuthRequired:
    """``auth_required``: a question routed like any other; the answer names an environment
    variable, whose credential goes to the task's next request and never into a fact."""

    async def ask_auth(self, h: Harness, answer: str) -> tuple[Any, Any]:
        outcomes: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                outcomes.append(await h.runtime.run("Go"))

            nursery.start_soon(run)
            with trio.fail_after(30):
                asked = await wait_for(h, lambda f: isinstance(f.action, ChatInputRequestedAction))
            assert isinstance(asked.action, ChatInputRequestedAction)
            await h.runtime.answer_input(asked.channel, asked.action.request.id, answer)
        return asked, outcomes[0]

    async def test_the_operator_names_the_credential_and_the_task_goes_on(
        self,
        peers: A2APeers,
        http: httpx.AsyncClient,
        capsys: pytest.CaptureFixture[str],
        every_scenario_is_checked: None,
    ) -> None:
        peer = peers.executor["auth"]
        assert isinstance(peer, AuthOnceAgent)
        before = len(peer.authorized)
        team = team_of(peers, "auth")
        h = Harness(
            team,
            backends=backend_factory(
                team, client=http, environ={**ENV, "A2A_PAINT_TOKEN": AUTH_SECRET}
            ),
        )
        asked, outcome = await self.ask_auth(h, "env:A2A_PAINT_TOKEN")
        assert isinstance(asked.action, ChatInputRequestedAction)
        question = str(asked.action.request.message)
        assert question.startswith("auth needs authentication for task ")
        assert "(Sign in to the paint shop)" in question
        assert "Answer env:A2A_NAME" in question
        assert outcome.status == "completed", outcome
        assert "[auth, completed] (task: hello auth) signed in: painted" in outcome.result
        # The first message went with the team file's header, the task's next one with the
        # credential the operator named in its place.
        assert peer.authorized[before:] == [ENV["REMOTE_TOKEN"], AUTH_SECRET]
        chat = chat_of(h, "auth")
        assert states_of(h, chat) == [
            "sending",
            "submitted",
            "working",
            "auth_required",
            "working",
            "completed",
        ]
        metas = [m for p in parts_of(h, chat) if (m := remote_task_of(p)) is not None]
        assert len({m["remoteTaskId"] for m in metas[1:]}) == 1  # one task throughout
        # The credential is in no fact and no log line; only the variable's name is.
        assert AUTH_SECRET not in repr(h.facts)
        assert "A2A_PAINT_TOKEN" in repr(h.facts)
        captured = capsys.readouterr()
        assert AUTH_SECRET not in captured.out + captured.err
        # Agent UI: an action.required of the external task, needing auth.
        envelopes = project_facts(h.runtime.session, h.facts)
        check_remote_teammate(envelopes)
        required = [e for e in envelopes if e.type == "action.required"]
        assert [(e.payload or {})["runtimeEntity"] for e in required] == ["external_task"]
        assert [(e.payload or {})["needs"] for e in required] == ["auth"]

    @pytest.mark.parametrize(
        ("answer", "why"),
        [
            (AUTH_SECRET, "the answer does not name a variable of the orchestrator's environment"),
            ("env:A2A_NOT_SET", "the environment variable A2A_NOT_SET is not set"),
            # Another secret of the orchestrator's (the team file's header, here) is refused.
            ("env:REMOTE_TOKEN", "only a variable named A2A_... may hold"),
        ],
    )
    async def test_an_answer_that_names_no_credential_fails_the_delegation(
        self, peers: A2APeers, http: httpx.AsyncClient, answer: str, why: str
    ) -> None:
        h = harness(team_of(peers, "auth"), http)
        _, outcome = await self.ask_auth(h, answer)
        assert outcome.status == "completed"  # the team goes on
        finished = finished_of(h, chat_of(h, "auth"))
        assert why in finished.summary
        assert "s3cret" not in finished.summary  # a pasted secret is not repeated


class TestApprovalsAcross:
    """Two remote teammates and a local worker each wait for an approval at once; the user
    answers them in an order of their own, and each answer reaches its own task."""

    async def test_three_approvals_at_once_each_answer_reaches_its_task(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        deployer, mailer = peers.executor["deployer"], peers.executor["mailer"]
        assert isinstance(deployer, ConfirmAgent)
        assert isinstance(mailer, ConfirmAgent)
        before = (len(deployer.answers), len(mailer.answers))
        urls = {"deployer": peers.url["deployer"], "mailer": peers.url["mailer"]}
        team = parse_team(remote_approvals(urls), file="remote-approvals.toml")
        h = harness(team, http)
        outcomes: list[Any] = []
        decided: list[str] = []

        def pending(f: Any) -> bool:
            return isinstance(f.action, (ChatInputRequestedAction, ApprovalRequested))

        def answered(request_id: str) -> Callable[[Any], bool]:
            return lambda f: (
                isinstance(f.action, ChatInputCompletedAction) and f.action.request_id == request_id
            )

        async with trio.open_nursery() as nursery:

            async def run() -> None:
                outcomes.append(await h.runtime.run("Go"))

            nursery.start_soon(run)
            with trio.fail_after(30):
                await wait_for(h, lambda _: len([f for f in h.facts if pending(f)]) == 3)
            # All three wait at once: nothing was answered before the last was asked.
            asked = [f for f in h.facts if pending(f)]
            assert not any(
                isinstance(f.action, (ChatInputCompletedAction, ApprovalResolved)) for f in h.facts
            )
            questions = {
                f.channel: f.action for f in asked if isinstance(f.action, ChatInputRequestedAction)
            }
            approval = next(f.action for f in asked if isinstance(f.action, ApprovalRequested))
            deployer_chat, mailer_chat = chat_of(h, "deployer"), chat_of(h, "mailer")
            publisher_chat = chat_of(h, "publisher")
            assert set(questions) == {deployer_chat, mailer_chat}
            assert questions[deployer_chat].request.message == "May I deploy v2? (yes or no)"
            assert questions[mailer_chat].request.message == "May I mail the team? (yes or no)"
            assert (approval.chat, approval.requested_by, approval.routed_to) == (
                publisher_chat,
                "publisher",
                USER,
            )
            # Answered neither in the order asked nor in the team file's: the mailer is
            # denied first, then the local publish approved, then the deployer approved.
            mail_q, deploy_q = questions[mailer_chat], questions[deployer_chat]
            # Each answer is waited for until it is recorded (resolve_approval returns then).
            await h.runtime.answer_input(mailer_chat, mail_q.request.id, "no")
            await wait_for(h, answered(mail_q.request.id))
            decided.append("mailer")
            await h.runtime.resolve_approval(approval.approval, approved=True)
            decided.append("publisher")
            await h.runtime.answer_input(deployer_chat, deploy_q.request.id, "yes")
            await wait_for(h, answered(deploy_q.request.id))
            decided.append("deployer")
        outcome = outcomes[0]
        assert outcome.status == "completed", outcome
        assert decided == ["mailer", "publisher", "deployer"]

        # Each answer is recorded on its own chat, in the order given.
        answers = [
            (f.channel, f.action.request_id)
            if isinstance(f.action, ChatInputCompletedAction)
            else (f.action.approval, f.action.decision.value)
            for f in h.facts
            if isinstance(f.action, (ChatInputCompletedAction, ApprovalResolved))
        ]
        assert answers == [
            (mailer_chat, mail_q.request.id),
            (approval.approval, "approved"),
            (deployer_chat, deploy_q.request.id),
        ]
        # Each peer got its own answer, on the remote task that asked.
        deploy_ids = {i for _, i in states_and_ids(h, deployer_chat) if i}
        mail_ids = {i for _, i in states_and_ids(h, mailer_chat) if i}
        assert len(deploy_ids) == len(mail_ids) == 1
        assert deploy_ids.isdisjoint(mail_ids)
        assert deployer.answers[before[0] :] == [(*deploy_ids, "yes")]
        assert mailer.answers[before[1] :] == [(*mail_ids, "no")]
        # The outcomes: the approved ones did their work, the denied one was rejected.
        assert finished_of(h, deployer_chat).status is TaskStatus.COMPLETED
        assert finished_of(h, publisher_chat).status is TaskStatus.COMPLETED
        mailed = finished_of(h, mailer_chat)
        assert mailed.status is TaskStatus.FAILED
        assert "rejected (TASK_STATE_REJECTED): not approved (no)" in mailed.summary
        assert "[deployer, completed] (task: deploy v2) done, as approved" in outcome.result
        assert "[publisher, completed] (task: publish the notes) after: published" in (
            outcome.result
        )
        assert "[mailer, failed]" in outcome.result
        assert states_of(h, deployer_chat) == [
            "sending",
            "submitted",
            "working",
            "input_required",
            "working",
            "completed",
        ]
        # The mailer is polled: it shows the states it happens to see, in order.
        mailed_states = states_of(h, mailer_chat)
        assert mailed_states[0] == "sending"
        assert mailed_states[-1] == "rejected"
        assert mailed_states.count("input_required") == 1
        assert mailed_states.index("input_required") < len(mailed_states) - 1

        # The delegation graph, both ways: each worker was spawned by the lead's delegate
        # call (origin) and that call's subagent content names it; each question is a tool
        # call of its own chat; the approval was requested by, and gates, the publisher.
        graph = build_graph(h.facts)
        assert graph.check() == []
        lead = h.runtime.state.coordinator_chat()
        assert lead is not None
        workers = {deployer_chat, mailer_chat, publisher_chat}
        spawned = {(u, v) for u, v, _ in graph.edges_of_kind(EdgeKind.SPAWNED)}
        assert spawned == {(lead, w) for w in workers}
        subagent = {(u, v) for u, v, _ in graph.edges_of_kind(EdgeKind.SUBAGENT)}
        assert {v for _, v in subagent} == workers
        assert {u.partition("#")[0] for u, _ in subagent} == {lead}
        invoked = {(u, v) for u, v, _ in graph.edges_of_kind(EdgeKind.INVOKED)}
        for chat, question in ((deployer_chat, deploy_q), (mailer_chat, mail_q)):
            call = question.request.id.removeprefix("input-")
            assert (chat, f"{chat}#{call}") in invoked
        edges = {
            (kind, v)
            for kind in (EdgeKind.REQUESTED_BY, EdgeKind.ROUTED_TO, EdgeKind.RESOLVED_BY)
            for u, v, _ in graph.edges_of_kind(kind)
            if u == approval.approval
        }
        assert edges == {
            (EdgeKind.REQUESTED_BY, publisher_chat),
            (EdgeKind.ROUTED_TO, USER),
            (EdgeKind.RESOLVED_BY, USER),
        }
        assert [v for u, v, _ in graph.edges_of_kind(EdgeKind.GATES) if u == approval.approval] == [
            f"{publisher_chat}#{approval.tool_call_id}"
        ]
        remote = {(u, v) for u, v, _ in graph.edges_of_kind(EdgeKind.REMOTE)}
        assert remote == {
            (deployer_chat, f"{peers.url['deployer']}#task/{next(iter(deploy_ids))}"),
            (mailer_chat, f"{peers.url['mailer']}#task/{next(iter(mail_ids))}"),
        }


class TestAgentUi:
    """The runs above, projected: the remote_teammate topology's envelopes pass the checker."""

    async def test_a_streamed_run_projects_external_tasks_and_artifacts(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "chunks", "ask", local=True), http)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.runtime.run, "Go")
            with trio.fail_after(30):
                asked = await wait_for(h, lambda f: isinstance(f.action, ChatInputRequestedAction))
            assert isinstance(asked.action, ChatInputRequestedAction)
            await h.runtime.answer_input(asked.channel, asked.action.request.id, "red")
        envelopes = project_facts(h.runtime.session, h.facts)
        external = check_remote_teammate(envelopes)
        by_agent: dict[str, list[str]] = {}
        for e in external:
            if e.type == "task.changed":
                by_agent.setdefault((e.payload or {})["agentName"], []).append(
                    (e.payload or {})["runtimeStatus"]
                )
        assert by_agent == {
            "chunks": ["submitted", "working", "completed"],
            "ask": ["submitted", "working", "input_required", "working", "completed"],
        }
        artifacts = [e for e in external if e.type == "artifact.changed"]
        assert [(e.artifact_id, (e.payload or {})["lastChunk"]) for e in artifacts] == [
            ("report-1", False),
            ("report-1", False),
            ("report-1", True),
        ]
        # The question of the remote agent is an action.required naming the remote teammate.
        required = [e for e in envelopes if e.type == "action.required"]
        assert [(e.payload or {})["runtimeEntity"] for e in required] == ["external_task"]
        assert [(e.payload or {})["needs"] for e in required] == ["input"]
        assert [e.agent_id for e in required] == [
            next(e.agent_id for e in external if (e.payload or {})["agentName"] == "ask")
        ]
        # The local helper stays a subagent turn.
        helper = [
            e
            for e in envelopes
            if e.type == "agent.spawned" and (e.payload or {}).get("agentName") == "helper"
        ]
        assert [(e.payload or {})["runtimeEntity"] for e in helper] == ["subagent_turn"]

    async def test_a_failed_remote_task_is_projected_failed(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "failing"), http)
        with trio.fail_after(30):
            await h.runtime.run("Go")
        external = check_remote_teammate(project_facts(h.runtime.session, h.facts))
        statuses = [
            (e.payload or {})["runtimeStatus"] for e in external if e.type == "task.changed"
        ]
        assert statuses == ["submitted", "working", "failed"]
        assert [e.phase for e in external if e.type == "task.changed"][-1] == "failed"


class TestShippedExample:
    """teams/remote.toml against the A2A agent shipped beside it (teams/servers/
    glossary_agent.py), started as its README says, on a free port."""

    async def test_the_glossary_agent_defines_and_asks(
        self, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        agent = PROJECT_ROOT / "teams" / "servers" / "glossary_agent.py"
        async with trio.open_nursery() as nursery:
            process = await nursery.start(
                partial(
                    trio.run_process,
                    [sys.executable, str(agent), "--port", "0"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    check=False,
                )
            )
            try:
                assert process.stdout is not None
                with trio.fail_after(30):
                    first = b""
                    while not first.endswith(b"\n"):
                        first += await process.stdout.receive_some(1)
                url = first.decode().strip()
                text = (PROJECT_ROOT / "teams" / "remote.toml").read_text()
                team = parse_team(text.replace("http://127.0.0.1:8765/", url), file="remote.toml")
                h = harness(team, http)
                with trio.fail_after(30):
                    outcome = await h.runtime.run("Explain the release terms")
                assert outcome.status == "completed"
                assert "Defined 3 terms: changelog, release candidate, semver." in outcome.result
                assert "- **semver**: Versions as MAJOR.MINOR.PATCH" in outcome.result
                assert "[writer, completed]" in outcome.result
                chat = chat_of(h, "glossary")
                chunks = [a for p in parts_of(h, chat) if (a := artifact_of(p)) is not None]
                assert [(c["name"], c["append"], c["lastChunk"]) for c in chunks] == [
                    ("definitions.md", False, False),
                    ("definitions.md", True, False),
                    ("definitions.md", True, True),
                ]
                assert {c["mediaType"] for c in chunks} == {"text/markdown"}
                # A task that names no term it knows: it asks, and the answer goes back.
                ask = parse_team(
                    text.replace("http://127.0.0.1:8765/", url).replace(
                        "Define changelog, semver and release candidate", "Define the jargon"
                    ),
                    file="remote.toml",
                )
                h2 = harness(ask, http)
                async with trio.open_nursery() as inner:
                    results: list[Any] = []

                    async def run() -> None:
                        results.append(await h2.runtime.run("Go"))

                    inner.start_soon(run)
                    with trio.fail_after(30):
                        asked = await wait_for(
                            h2, lambda f: isinstance(f.action, ChatInputRequestedAction)
                        )
                    assert isinstance(asked.action, ChatInputRequestedAction)
                    assert str(asked.action.request.message).startswith("Which term should I")
                    await h2.runtime.answer_input(asked.channel, asked.action.request.id, "hotfix")
                assert "- **hotfix**: A patch release" in results[0].result
            finally:
                process.terminate()


class TestTimeoutAndHandoff:
    async def test_a_remote_teammate_past_its_timeout_is_stopped_and_its_task_cancelled(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        """The agent's timeout applies as to a local worker: its delegation fails, the
        remote task is cancelled at the peer, and the team goes on."""
        url = peers.url["hanging"]
        text = remote({"hanging": url}, local=True).replace(
            f'a2a = "{url}"', f'a2a = "{url}"\ntimeout = 1'
        )
        h = harness(parse_team(text, file="remote.toml"), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        chat = chat_of(h, "hanging")
        finished = finished_of(h, chat)
        assert finished.status is TaskStatus.FAILED
        assert "timed out" in finished.summary
        remote_id = states_and_ids(h, chat)[-1][1]
        assert remote_id in peers.executor["hanging"].cancelled  # type: ignore[attr-defined]
        assert "[helper, completed]" in outcome.result

    async def test_a_handoff_reaches_a_remote_teammate_and_comes_back(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        text = f"""
[team]
name = "desk"
coordinator = "triage"
[agents.triage]
role = "coordinator"
tools = ["handoff"]
delegates_to = ["echo"]
[[agents.triage.turns]]
steps = [
  {{ handoff = "echo", reason = "the echo desk answers this", resume = "triage" }},
  {{ say = "back from echo: {{outcomes}}" }},
]
[agents.echo]
role = "a remote echo desk"
a2a = "{peers.url["echo"]}"
"""
        h = harness(parse_team(text, file="desk.toml"), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Where is my parcel?")
        assert outcome.status == "completed", outcome
        assert "back from echo:" in outcome.result
        assert "echo: " in outcome.result
        to_echo, back = h.actions(HandoffRecorded)
        assert (to_echo.to_agent, back.to_agent) == ("echo", "triage")
        assert states_of(h, to_echo.to_chat)[-1] == "completed"


class TestTraceContext:
    async def test_the_peer_gets_the_traceparent_of_the_workers_round(self) -> None:
        """The run's shared HTTP client (backends.http_client) carries the current span's
        traceparent on the a2a-sdk client's requests too: every request a streaming and a
        polled peer get names the worker's round span (under its invoke_agent span, under
        the coordinator's delegate call), in the run's trace."""
        exporter = InMemorySpanExporter()
        tracing = Tracing(TracingSettings(enabled=True), processor=SimpleSpanProcessor(exporter))
        seen: dict[str, list[str | None]] = {"echo": [], "echo_polled": []}
        urls: dict[str, str] = {}
        with contextlib.ExitStack() as stack:
            for name, streams in (("echo", True), ("echo_polled", False)):
                app = a2a_app(
                    EchoAgent(), name=name, description="Echo.", streaming=streams, skills=[name]
                )
                app.add_middleware(_NoteTraceparent, seen=seen[name])
                urls[name] = stack.enter_context(serve_a2a_app_in_thread(app))
            team = parse_team(remote(urls, local=False), file="remote.toml")
            before = install_tracing(tracing)
            try:
                async with http_client() as http:
                    h = harness(team, http)
                    with trio.fail_after(30):
                        outcome = await h.runtime.run("Go")
            finally:
                install_tracing(before)
        assert outcome.status == "completed", outcome
        spans = exporter.get_finished_spans()
        name_of = {s.context.span_id: s.name for s in spans}
        parent_of = {s.context.span_id: 0 if s.parent is None else s.parent.span_id for s in spans}
        agent_of = {s.context.span_id: (s.attributes or {}).get("gen_ai.agent.id") for s in spans}
        (trace,) = {s.context.trace_id for s in spans}
        for name in urls:
            chat = chat_of(h, name)
            assert seen[name], f"{name}: no JSON-RPC request came"
            assert None not in seen[name], f"{name}: a request without traceparent"
            rounds = {
                span
                for span, span_name in name_of.items()
                if span_name.startswith("chat ") and agent_of[parent_of[span]] == chat
            }
            for header in seen[name]:
                sent = parse_traceparent(header)
                assert sent is not None
                assert sent.trace_id == trace
                assert sent.span_id in rounds
                worker = parent_of[sent.span_id]
                assert name_of[worker] == f"invoke_agent {name}"
                assert name_of[parent_of[worker]] == "execute_tool delegate"


class _NoteTraceparent:
    """ASGI middleware: the traceparent of each JSON-RPC request (a POST) the peer gets."""

    def __init__(self, app: Any, seen: list[str | None]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            value = headers.get(b"traceparent")
            self.seen.append(None if value is None else value.decode())
        await self.app(scope, receive, send)


class TestAcrossARealRestart:
    """The remote task's question outlives the process: a real SQLite journal is closed
    and opened again by a new runtime, which takes the remote task up by its id."""

    async def test_auth_required_is_answered_after_a_restart_with_the_same_task(
        self, peers: A2APeers, http: httpx.AsyncClient, tmp_path: Path
    ) -> None:
        peer = peers.executor["auth"]
        assert isinstance(peer, AuthOnceAgent)
        before = len(peer.authorized)
        team = team_of(peers, "auth")
        environ = {**ENV, "A2A_PAINT_TOKEN": AUTH_SECRET}
        db = tmp_path / "journal.db"

        # The first process: the task is sent, the agent asks for authentication; it stops.
        journal = open_journal(db)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            first = TeamRuntime(
                team, backends=backend_factory(team, client=http, environ=environ), factlog=journal
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(first.run, "Go")
                recorded = first.bus.subscribe("test")
                with trio.fail_after(30):
                    async for fact in recorded:
                        if isinstance(fact.action, ChatInputRequestedAction):
                            asked = fact
                            break
                first.stop()
            services.cancel_scope.cancel()
        session = first.session
        assert isinstance(asked.action, ChatInputRequestedAction)
        assert "needs authentication" in str(asked.action.request.message)
        reader = open_reader(db)
        remote_ids = {
            m["remoteTaskId"]
            for f in reader.facts(session)
            if isinstance(f.action, ChatResponsePartAction)
            and (m := remote_task_of(f.action.part)) is not None
            and m["remoteTaskId"]
        }
        assert len(remote_ids) == 1
        (remote_id,) = remote_ids

        # The second process: the journal reopened; the question is still open, and its
        # answer (a variable's name) goes to the same remote task, with the credential.
        state = reader.open(session)
        journal = open_journal(db)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            second = TeamRuntime(
                team,
                backends=backend_factory(team, client=http, environ=environ),
                factlog=journal,
                ids=Ids(restart=1),
                state=state,
            )
            outcomes: list[Any] = []
            async with trio.open_nursery() as nursery:

                async def resume() -> None:
                    outcomes.append(await second.resume())

                nursery.start_soon(resume)
                with trio.fail_after(30):
                    while True:  # the resumed run waits on the same question again
                        try:
                            await second.answer_input(
                                asked.channel, asked.action.request.id, "env:A2A_PAINT_TOKEN"
                            )
                            break
                        except RunError:
                            await trio.sleep(0.01)
            services.cancel_scope.cancel()
        (outcome,) = outcomes
        assert outcome.status == "completed", outcome
        assert "[auth, completed] (task: hello auth) signed in: painted" in outcome.result
        # Sent once, answered once: the first message with the file's header, the next
        # (after the restart) with the credential the operator named.
        assert peer.authorized[before:] == [ENV["REMOTE_TOKEN"], AUTH_SECRET]
        facts = open_reader(db).facts(session)
        chat = asked.channel
        states = [
            (m["state"], m["remoteTaskId"])
            for f in facts
            if f.channel == chat
            and isinstance(f.action, ChatResponsePartAction)
            and (m := remote_task_of(f.action.part)) is not None
        ]
        assert {i for _, i in states if i} == {remote_id}  # one task throughout
        assert [s for s, _ in states][-2:] == ["working", "completed"]
        assert "auth_required" in [s for s, _ in states]
        assert len([f for f in facts if isinstance(f.action, ChatInputRequestedAction)]) == 1
        # The credential is nowhere in the journal's file; the variable's name is.
        raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("journal"))
        assert AUTH_SECRET.encode() not in raw
        assert b"A2A_PAINT_TOKEN" in raw
        assert build_graph(facts).check() == []
