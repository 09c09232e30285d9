"""The AG-UI team view followed fact by fact (:class:`TeamView`) against the full view.

The reference is :func:`team_view`, the whole view computed from the state. A client that
applies the snapshot and then every delta must hold exactly ``team_view(state)`` after every
fact: checked on a real fan-out's log with generated team, chat and session actions slipped in
(the reducer's odd corners: an approval requested again, a member joining twice, a run started
twice), and on real team runs through the projector (interrupts and resumes included). Every
patch is applied by an independent RFC 6902 implementation (``jsonpatch``), which refuses an
operation on a path that is not there. And the work per fact does not grow with the team.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

import attrs
import jsonpatch
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.ahp.actions import SessionChatAddedAction, UnknownAction
from orchestrator.core import Fact, TaskCreated, TeamState
from orchestrator.protocols import AguiProjector, AguiRunStatus, Event, TeamView, team_view
from orchestrator.spec import load_team
from tests.support.agui import run_team, team, team_runs
from tests.support.examples import examples
from tests.support.paths import TEAMS
from tests.support.runtime import Harness
from tests.support.strategies import chat_summaries, state_actions, team_actions
from tests.support.team_state import fanout_facts

_OPS = {"add", "remove", "replace"}


def apply_checked(client: Any, ops: list[dict[str, Any]]) -> Any:
    """``ops`` applied to ``client`` by jsonpatch, each op checked for RFC 6902's shape."""
    for op in ops:
        assert op["op"] in _OPS, op
        assert isinstance(op["path"], str), op
        assert op["path"].startswith("/"), op
        assert set(op) == ({"op", "path", "value"} if op["op"] != "remove" else {"op", "path"})
    assert json.loads(json.dumps(ops)) == ops, "not plain JSON"
    return jsonpatch.apply_patch(client, ops)


def follow(state: TeamState, view: TeamView, client: Any, fact: Fact) -> Any:
    """Fold ``fact``; the client after the view's patch, checked against the full view."""
    try:
        state.apply(fact)
    except Exception:  # a chat reducer may refuse a generated action; the state is unchanged
        return client
    client = apply_checked(client, view.update(state, fact))
    assert client == team_view(state), fact
    return client


# ── generated logs ───────────────────────────────────────────────────────────


@st.composite
def logs(draw: st.DrawFn) -> tuple[int, list[Fact]]:
    """A three-worker fan-out's log with generated actions slipped in anywhere, and where the
    view starts following it: team actions about its tasks, chats and approvals (and new
    ones), any state action on the session or a chat, and chats added to the catalog."""
    facts = list(fanout_facts())
    session = facts[0].session
    chats = sorted({f.channel for f in facts if f.channel.startswith("ahp-chat:")})
    tasks = sorted({f.action.task for f in facts if isinstance(f.action, TaskCreated)})
    new_chat = "ahp-chat:/new"
    channels = st.sampled_from([session, *chats, new_chat])
    team_action = team_actions(
        tasks=["task-1", *tasks, "task-new"], chats=[*chats, new_chat, "ahp-chat:/no-such-chat"]
    )
    chat_added = chat_summaries().map(
        lambda summary: SessionChatAddedAction(summary=attrs.evolve(summary, resource=new_chat))
    )
    unknown_team = st.just(UnknownAction(raw={"type": "team/unheardOf"}))
    actions: st.SearchStrategy[Any] = st.one_of(
        team_action, team_action, team_action, state_actions(), chat_added, unknown_team
    )
    inserted = draw(st.lists(st.tuples(st.integers(0, len(facts)), channels, actions), max_size=12))
    for position, channel, action in sorted(inserted, key=lambda t: t[0], reverse=True):
        on_session = isinstance(action, SessionChatAddedAction)
        neighbour = facts[min(position, len(facts) - 1)]
        fact = Fact(
            sequence=0,
            session=session,
            channel=session if on_session else channel,
            at=neighbour.at,
            action=action,
        )
        facts.insert(position, fact)
    renumbered = [attrs.evolve(f, sequence=n) for n, f in enumerate(facts, start=1)]
    return draw(st.integers(0, len(renumbered))), renumbered


class TestTeamView:
    @settings(
        max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(case=logs())
    def test_the_deltas_keep_the_client_equal_to_the_full_view(
        self, case: tuple[int, list[Fact]]
    ) -> None:
        """Built at any point of a log, then after every fact: the snapshot with every patch
        applied is the full view of the state."""
        start, facts = case
        state = TeamState(facts[0].session)
        for fact in facts[:start]:
            try:
                state.apply(fact)
            except Exception:  # refused, as in follow()
                continue
        view = TeamView(state)
        client = team_view(state)
        for fact in facts[start:]:
            client = follow(state, view, client, fact)

    def test_a_fan_out_changes_one_entry_at_a_time(self) -> None:
        """On a real log, each fact's patch names only what it changed: no delta rewrites the
        whole view, and most are one operation."""
        facts = fanout_facts()
        state = TeamState(facts[0].session)
        view = TeamView(state)
        client = team_view(state)
        patches = []
        for fact in facts:
            state.apply(fact)
            ops = view.update(state, fact)
            client = apply_checked(client, ops)
            patches.append(ops)
        assert client == team_view(state)
        assert max(len(ops) for ops in patches) <= 3, max(patches, key=len)
        assert {op["path"].split("/")[1] for ops in patches for op in ops} == {
            "team",
            "members",
            "tasks",
        }

    def test_a_shrunken_state_falls_back_to_the_whole_diff(self) -> None:
        """An entry dropped under the view (no reducer does): the patch is the full diff, and
        the view follows the state from there."""
        facts = fanout_facts()
        state = TeamState.fold(facts[0].session, facts)
        view = TeamView(state)
        client = team_view(state)
        dropped = next(reversed(state.members))
        state.members.pop(dropped)
        last = facts[-1]
        ops = view.update(state, last)
        assert {"op": "remove", "path": f"/members/{len(state.members)}"} in ops
        assert apply_checked(client, ops) == team_view(state)


# ── real runs, through the projector ─────────────────────────────────────────


def replay(facts: Sequence[Fact]) -> Iterator[tuple[Fact, AguiProjector, list[Event]]]:
    """A projector started before the first fact, fed ``facts``; each interrupt is resumed at
    once (answering its approvals). Yields each fact, the projector, and its events."""
    projector = AguiProjector(facts[0].session, thread_id="thread", run_id="run-1")
    runs = 1
    events = projector.start()
    for fact in facts:
        events += projector.feed(fact)
        if projector.status is AguiRunStatus.INTERRUPTED:
            runs += 1
            events += projector.resume(f"run-{runs}", answering=projector.interrupts)
        yield fact, projector, events
        events = []


class TestProjectorState:
    @settings(
        max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(case=team_runs())
    def test_after_every_fact_the_client_holds_the_full_view(
        self, case: tuple[str, list[bool], float]
    ) -> None:
        """Whatever the team does (approvals, nested workers, failures, a budget that queues):
        after every fact of the run, the client that applied each snapshot and delta holds
        ``team_view`` of the projector's state, and its review lane (``view()``)."""
        text, decisions, delay = case

        def decide(approval: str) -> bool:
            return decisions[(int(approval.rsplit("-", 1)[1]) - 1) % len(decisions)]

        session = trio.run(
            lambda: run_team(team(text), decide=decide, delay=delay),
            clock=trio.testing.MockClock(autojump_threshold=0),
        )
        client: Any = None
        deltas = 0
        for fact, projector, events in replay(session.facts):
            for event in events:
                if event["type"] == "STATE_SNAPSHOT":
                    client = copy.deepcopy(event["snapshot"])
                elif event["type"] == "STATE_DELTA":
                    deltas += 1
                    client = apply_checked(client, event["delta"])
            if projector.status is not AguiRunStatus.RUNNING:
                break  # the run is over: nothing more is sent
            assert client == projector.view(), fact
            assert {k: v for k, v in client.items() if k != "reviews"} == team_view(projector.state)
        assert deltas > 0


def fan_out(workers: int) -> str:
    names = ", ".join(f'{{ agent = "worker", task = "job {i}" }}' for i in range(workers))
    return f"""
[team]
name = "wide"
coordinator = "lead"
parallel_budget = {workers}
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ {{ delegate = [ {names} ] }}, {{ say = "{{outcomes}}" }} ]
[agents.worker]
role = "worker"
[[agents.worker.turns]]
steps = [ {{ say = "done", chunks = 2 }} ]
"""


class TestWorkPerFact:
    @pytest.mark.parametrize("workers", [3, 40])
    def test_no_fact_asks_more_than_a_few_member_statuses(
        self, workers: int, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The projector asks the status of the members a fact touches, not of the whole
        team: at most 3 per fact (the fact's member, the coordinator before and after),
        with 3 workers as with 40. Diffing whole views asked every member's, every fact."""
        session = trio.run(
            lambda: run_team(team(fan_out(workers))),
            clock=trio.testing.MockClock(autojump_threshold=0),
        )
        asked = 0
        original = TeamState.member_status

        def counted(self: TeamState, chat: str) -> Any:
            nonlocal asked
            asked += 1
            return original(self, chat)

        monkeypatch.setattr(TeamState, "member_status", counted)
        most = 0
        for _fact, projector, _events in replay(session.facts):
            most, asked = max(most, asked), 0
            if projector.status is not AguiRunStatus.RUNNING:
                break
        assert 1 <= most <= 3, most

    def test_the_projectors_own_work_per_worker_does_not_grow_with_the_team(self) -> None:
        """Lines of the projector's modules run per worker (traced, so no clock): a fan-out of
        120 workers costs no more per worker than one of 3 (less: the run's own lines are
        shared by more workers). A pass over every subagent or tool call of the session at
        each worker's end, or over the whole view at each fact, costs more per worker the
        more workers there are (diffing whole views: 6 times as much at 60 as at 3)."""

        def lines_per_worker(workers: int) -> float:
            session = trio.run(
                lambda: run_team(team(fan_out(workers))),
                clock=trio.testing.MockClock(autojump_threshold=0),
            )
            ours = {"_project_agui.py", "_agui_events.py", "_agui_state.py"}
            lines = 0

            def local(frame: FrameType, event: str, arg: Any) -> Any:
                nonlocal lines
                lines += event == "line"
                return local

            def calls(frame: FrameType, event: str, arg: Any) -> Any:
                return local if frame.f_code.co_filename.rsplit("/", 1)[-1] in ours else None

            # The tracer before ours (coverage's, under --cov) is put back after: with
            # settrace(None) every later test in this process went unmeasured.
            previous = sys.gettrace()
            sys.settrace(calls)
            try:
                for _fact, projector, _events in replay(session.facts):
                    if projector.status is not AguiRunStatus.RUNNING:
                        break
            finally:
                sys.settrace(previous)
            return lines / workers

        few, many = lines_per_worker(3), lines_per_worker(120)
        assert many <= few, (few, many)


class TestBoardInTheView:
    async def test_the_board_s_deltas_keep_the_client_equal_to_the_full_view(self) -> None:
        """The shipped board team: from the snapshot before its first fact, every patch (board
        items added, their statuses changed) leaves the client equal to the full view."""
        h = Harness(load_team(TEAMS / "board.toml"))
        with trio.fail_after(60):
            await h.runtime.run("Ship it")
        state = TeamState(h.runtime.session)
        view = TeamView(state)
        client: Any = team_view(state)
        for fact in h.facts:
            client = follow(state, view, client, fact)
        assert [(i["id"], i["status"]) for i in client["board"]] == [
            ("notes", "done"),
            ("draft", "done"),
            ("approve", "open"),
            ("publish", "open"),
        ]
