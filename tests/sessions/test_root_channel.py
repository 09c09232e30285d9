"""The root channel ``ahp-root://`` as an independent AHP client sees it, over a real WebSocket
on loopback: sessions announced as they come, change and go, a root state that changes only by
the actions it is sent, and summaries that mirror each session's own state."""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio_websocket import ConnectionClosed, wrap_client_stream

from orchestrator.ahp import reduce_root, session_status, structure_action, structure_as
from orchestrator.ahp.commands import (
    SessionAddedParams,
    SessionRemovedParams,
    SessionSummaryChangedParams,
)
from orchestrator.ahp.state import (
    ChatSummary,
    RootState,
    SessionLifecycle,
    SessionState,
    SessionStatus,
)
from orchestrator.base import evolve
from orchestrator.core import Fact, TeamState
from orchestrator.server import ServeConfig, _outbox
from orchestrator.sessions import Limits
from orchestrator.sessions._root_channel import (
    RootChannel,
    RootFrame,
    RootSubscription,
    session_channel_state,
    session_summary,
)
from tests.support import strategies
from tests.support.ahp_client import ROOT, AhpClient, connect_ahp, user_message
from tests.support.daemon import TEAMS, RunningDaemon, connect, running_daemon, websocket
from tests.support.examples import examples
from tests.support.teammates import slow_team
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

SEED: Final = int(os.environ.get("ROOT_SEED", "20261126"))

NOTIFICATION_PARAMS: Final[dict[str, type]] = {
    "root/sessionAdded": SessionAddedParams,
    "root/sessionRemoved": SessionRemovedParams,
    "root/sessionSummaryChanged": SessionSummaryChangedParams,
}
IDENTITY: Final = {"resource", "provider", "createdAt"}


def new_session() -> str:
    return f"ahp-session:/{uuid.uuid4()}"


def new_chat() -> str:
    return f"ahp-chat:/{uuid.uuid4()}"


def config(**limits: Any) -> ServeConfig:
    """Limits for a client that sends as fast as it can (and opens many sessions)."""
    relaxed = Limits(
        shutdown_grace=0.5,
        messages_per_second=1e6,
        burst=1_000_000,
        max_sessions=256,
        max_unprompted_per_token=256,
    )
    return ServeConfig(limits=attrs.evolve(relaxed, **limits))


class RootFollower:
    """A root subscriber that keeps the root state by folding the root actions it is sent
    over its snapshot (with its own reducer), and a session list by folding the root
    notifications over ``listSessions``."""

    def __init__(self, client: AhpClient) -> None:
        self.client = client
        self.state = RootState(agents=())
        self.seq = 0
        self.summaries: dict[str, dict[str, Any]] = {}
        self.events: list[tuple[str, dict[str, Any]]] = []  # root notifications, in order
        self._actions = 0
        self._notifications = 0
        self.checks = 0

    async def start(self, client_id: str = "root-follower") -> None:
        result = await self.client.initialize(client_id=client_id, subscriptions=(ROOT,))
        (snapshot,) = result["snapshots"]
        self._adopt(snapshot)
        listed = await self.client.request("listSessions", {"channel": ROOT})
        self.fold()
        self.summaries = {s["resource"]: s for s in listed["items"]}

    def _adopt(self, snapshot: dict[str, Any]) -> None:
        assert snapshot["resource"] == ROOT
        self.state = structure_as(snapshot["state"], RootState)
        self.seq = snapshot["fromSeq"]

    def fold(self) -> None:
        """Fold what was received since the last fold, in order."""
        for envelope in self.client.actions[self._actions :]:
            if envelope["channel"] != ROOT:
                continue
            assert "origin" not in envelope  # the host's own
            assert envelope["serverSeq"] == self.seq + 1, "root actions come numbered in turn"
            self.seq = envelope["serverSeq"]
            self.state = reduce_root(self.state, structure_action(envelope["action"]))
        self._actions = len(self.client.actions)
        for message in self.client.notifications[self._notifications :]:
            method, params = message["method"], message["params"]
            structure_as(params, NOTIFICATION_PARAMS[method])  # the params are well formed
            assert params["channel"] == ROOT
            self.events.append((method, params))
            if method == "root/sessionAdded":
                self.summaries[params["summary"]["resource"]] = params["summary"]
            elif method == "root/sessionRemoved":
                del self.summaries[params["session"]]
            else:
                assert not IDENTITY & params["changes"].keys()
                assert params["changes"], "a change that changes nothing"
                self.summaries[params["session"]].update(params["changes"])
        self._notifications = len(self.client.notifications)

    async def check(self) -> list[dict[str, Any]]:
        """A fresh root snapshot equals the folded state, and ``listSessions`` the folded
        session list; the listed summaries."""
        result = await self.client.request("subscribe", {"channel": ROOT})
        self.fold()
        snapshot = result["snapshot"]
        assert structure_as(snapshot["state"], RootState) == self.state
        assert snapshot["fromSeq"] == self.seq
        listed = await self.client.request("listSessions", {"channel": ROOT})
        self.fold()
        assert {s["resource"]: s for s in listed["items"]} == self.summaries
        assert self.state.active_sessions == len(self.summaries)
        self.checks += 1
        items: list[dict[str, Any]] = listed["items"]
        return items

    def of_session(self, session: str) -> list[str]:
        """The methods of the notifications about ``session``, in order."""
        return [
            method
            for method, params in self.events
            if session in (params.get("session"), params.get("summary", {}).get("resource"))
        ]

    def added_by(self, provider: str) -> list[str]:
        return [
            params["summary"]["resource"]
            for method, params in self.events
            if method == "root/sessionAdded" and params["summary"]["provider"] == provider
        ]


@asynccontextmanager
async def root_follower(daemon: RunningDaemon, client_id: str) -> AsyncIterator[RootFollower]:
    async with connect_ahp(daemon) as client:
        follower = RootFollower(client)
        await follower.start(client_id)
        yield follower


async def check_mirrors(client: AhpClient, summaries: list[dict[str, Any]]) -> None:
    """Each summary says what its session's own channel says (at a quiet moment)."""
    for summary in summaries:
        session = summary["resource"]
        state = (await client.request("subscribe", {"channel": session}))["snapshot"]["state"]
        await client.request("unsubscribe", {"channel": session})
        for key in ("provider", "title", "status", "activity", "workingDirectories"):
            assert summary.get(key) == state.get(key), (session, key)
        chats = [c["modifiedAt"] for c in state["chats"]]
        assert summary["modifiedAt"] == max(chats, default=summary["createdAt"]), session


def assert_lifecycle(methods: list[str], *, removed: bool) -> None:
    """Added first, then changes, then (if it went) removed last."""
    assert methods[0] == "root/sessionAdded", methods
    if removed:
        assert methods[-1] == "root/sessionRemoved", methods
        middle = methods[1:-1]
    else:
        assert "root/sessionRemoved" not in methods, methods
        middle = methods[1:]
    assert set(middle) <= {"root/sessionSummaryChanged", "root/sessionAdded"}, methods


async def ahp_run(client: AhpClient, provider: str, text: str) -> str:
    """createSession, createChat with ``text``, until the turn completes: the session."""
    session, chat = new_session(), new_chat()
    await client.request("createSession", {"channel": session, "provider": provider})
    await client.request(
        "createChat", {"channel": session, "chat": chat, "initialMessage": user_message(text)}
    )
    await client.request("subscribe", {"channel": chat})
    await client.until_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnComplete"
    )
    await client.request("unsubscribe", {"channel": chat})
    return session


AGUI_THREAD: Final = "root-channel-thread"
QUICK: Final = slow_team(minutes=0, background='every = "1d"')


class TestEveryWayASessionIsMade:
    async def test_each_is_added_changed_and_removed_in_order(self, tmp_path: Path) -> None:
        """createSession + createChat, a /ws prompt, an AG-UI run and a background
        teammate's run: a root subscriber hears each session added (provider: its team),
        its summary change as it runs, and removed as it is disposed or ends; at each quiet
        point its folded state and list equal fresh ones, and each summary mirrors its
        session's own state."""
        teams = {"echo": ECHO, "slow": QUICK}
        with trio.fail_after(60):
            async with (
                running_daemon(tmp_path, teams=teams, config=config()) as daemon,
                root_follower(daemon, "watcher") as root,
                connect_ahp(daemon) as actor,
            ):
                await actor.initialize(client_id="actor")
                # AHP: createSession, createChat; then disposeSession.
                made = await ahp_run(actor, "echo", "hello over ahp")
                await check_mirrors(root.client, await root.check())
                assert root.summaries[made]["title"] == "hello over ahp"
                assert root.summaries[made]["provider"] == "echo"
                await actor.request("disposeSession", {"channel": made})
                await root.check()
                assert made not in root.summaries
                assert_lifecycle(root.of_session(made), removed=True)
                # /ws: a session per connection, its run started by a prompt.
                async with connect(daemon, "team=echo") as ws:
                    init = await ws.until_type("init")
                    on_ws = "ahp-session:/" + init["sessionId"]
                    await ws.send({"channel": "agent", "type": "prompt", "prompt": "hi from ws"})
                    await ws.until_type("done")
                    await check_mirrors(root.client, await root.check())
                assert root.summaries[on_ws]["title"] == "hi from ws"
                assert_lifecycle(root.of_session(on_ws), removed=False)
                # AG-UI: the thread is the session.
                body = {
                    "threadId": AGUI_THREAD,
                    "runId": "run-1",
                    "messages": [{"id": "m-1", "role": "user", "content": "hi from ag-ui"}],
                    "tools": [],
                    "context": [],
                    "state": {},
                    "forwardedProps": {},
                }
                async with httpx.AsyncClient(base_url=daemon.url, timeout=30) as http:
                    answer = await http.post("/agui?team=echo", json=body)
                    assert answer.status_code == 200
                on_agui = "ahp-session:/" + AGUI_THREAD
                await check_mirrors(root.client, await root.check())
                assert root.summaries[on_agui]["title"] == "hi from ag-ui"
                # A background teammate's run: its own session, which ends with the run.
                await trigger(daemon, "poller")
                while not ended(root, root.added_by("slow")):
                    await root.client.receive()
                    root.fold()
                (teammate,) = root.added_by("slow")
                assert_lifecycle(root.of_session(teammate), removed=True)
                await check_mirrors(root.client, await root.check())
        for session in (made, on_ws, on_agui, teammate):
            changes = [
                params["changes"]
                for method, params in root.events
                if method == "root/sessionSummaryChanged" and params["session"] == session
            ]
            assert any("title" in c for c in changes), session
            # The status follows the chats (the schema's rule): in progress while the first
            # turn runs, then what the chats end in.
            statuses = [c["status"] for c in changes if "status" in c]
            assert statuses, session
            assert statuses[0] & int(SessionStatus.IN_PROGRESS), session


def ended(root: RootFollower, sessions: list[str]) -> bool:
    return any(root.of_session(s)[-1:] == ["root/sessionRemoved"] for s in sessions)


async def trigger(daemon: RunningDaemon, teammate: str) -> None:
    async with websocket(f"{daemon.ws_url}/teammates") as ws:
        await ws.send_message(json.dumps({"type": "trigger", "name": teammate, "id": 1}))
        with trio.fail_after(10):
            while json.loads(await ws.get_message()).get("id") != 1:
                pass


class TestFoldEqualsSnapshot:
    async def test_at_random_points_of_runs(self, tmp_path: Path) -> None:
        """Sessions are created, run, prompted again and disposed in a seeded random order
        while a root subscriber folds what it is sent; at random points (in the middle of
        runs too) a fresh root snapshot equals its fold, and listSessions its list."""
        rng = random.Random(SEED)
        delivery = (TEAMS / "delivery.toml").read_text(encoding="utf-8")
        teams = {"echo": ECHO, "delivery": delivery}
        with trio.fail_after(90):
            async with (
                running_daemon(tmp_path, teams=teams, config=config()) as daemon,
                root_follower(daemon, "watcher") as root,
                connect_ahp(daemon) as actor,
            ):
                await actor.initialize(client_id="actor")
                sessions: list[str] = []
                for _ in range(60):
                    step = rng.choice(["create", "run", "run", "dispose", "check", "check"])
                    if step == "create" or (step == "run" and not sessions):
                        session = new_session()
                        provider = rng.choice(sorted(teams))
                        await actor.request(
                            "createSession", {"channel": session, "provider": provider}
                        )
                        sessions.append(session)
                    elif step == "run":
                        session = rng.choice(sessions)
                        await start_or_prompt(actor, session, f"task {rng.randrange(1000)}")
                    elif step == "dispose" and sessions:
                        session = sessions.pop(rng.randrange(len(sessions)))
                        await actor.request("disposeSession", {"channel": session})
                    else:
                        await root.check()
                await root.check()
                for session in sessions:
                    await actor.request("disposeSession", {"channel": session})
                await root.check()
        assert root.checks > 10
        assert not root.summaries
        assert root.state.active_sessions == 0


async def start_or_prompt(client: AhpClient, session: str, text: str) -> None:
    """Start the session's run with ``text``, or queue it for its coordinator (a refusal,
    say of a session whose run ended, is as good a step as any)."""
    snapshot = (await client.request("subscribe", {"channel": session}))["snapshot"]
    await client.request("unsubscribe", {"channel": session})
    chats = snapshot["state"]["chats"]
    if not chats:
        await client.call(
            "createChat",
            {"channel": session, "chat": new_chat(), "initialMessage": user_message(text)},
        )
        return
    coordinator = chats[0]["resource"]
    await client.dispatch(
        coordinator,
        {
            "type": "chat/pendingMessageSet",
            "kind": "queued",
            "id": f"queued-{uuid.uuid4()}",
            "message": user_message(text),
        },
    )


# ─── slow subscribers ────────────────────────────────────────────────────────


@asynccontextmanager
async def stalled_root_subscriber(daemon: RunningDaemon) -> AsyncIterator[AhpClient]:
    """A root subscriber with a 4 KB receive buffer, so that it stops taking data from the
    socket soon after it stops asking trio-websocket for messages."""
    host, port = daemon.url.removeprefix("http://").split(":")
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, 4_096)
    await sock.connect((host, int(port)))
    stream = trio.SocketStream(sock)
    async with stream, trio.open_nursery() as nursery:
        connection = await wrap_client_stream(nursery, stream, host, "/ahp")
        try:
            client = AhpClient(connection)
            await client.initialize(client_id="stalled", subscriptions=(ROOT,))
            yield client
        finally:
            await connection.aclose()


class TestSlowRootSubscriber:
    async def test_is_dropped_with_1008_and_nobody_else_waits(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With room for 20 frames per client, a root subscriber that stops reading is
        closed with 1008 ("fell behind"); the client making sessions is answered throughout
        and another root subscriber hears every session come and go."""
        monkeypatch.setattr(_outbox, "CLOSE_TIMEOUT", 60.0)  # it reads again only at the end
        limits = config(subscriber_buffer=20)
        cycles = 150
        with trio.fail_after(60):
            async with (
                running_daemon(tmp_path, teams={"echo": ECHO}, config=limits) as daemon,
                root_follower(daemon, "reader") as reader,
                connect_ahp(daemon) as actor,
                stalled_root_subscriber(daemon) as stalled,
            ):
                await actor.initialize(client_id="actor")
                made = []
                for _ in range(cycles):
                    session = new_session()
                    await actor.request("createSession", {"channel": session, "provider": "echo"})
                    await actor.request("disposeSession", {"channel": session})
                    made.append(session)
                    if len(reader.client.notifications) < 2 * len(made) - 10:
                        # The reader keeps up (its outbox holds 20 frames).
                        await reader.check()
                await reader.check()
                with pytest.raises(ConnectionClosed) as closed:
                    await read_to_the_end(stalled)
        assert closed.value.reason is not None
        assert closed.value.reason.code == 1008
        assert "fell behind" in (closed.value.reason.reason or "")
        heard = [
            params["session"] for method, params in reader.events if method == "root/sessionRemoved"
        ]
        assert heard == made
        assert len(stalled.notifications) < 2 * cycles


async def read_to_the_end(client: AhpClient) -> None:
    while True:
        await client.receive()


class TestRootSubscription:
    def test_a_full_buffer_drops_the_subscriber_and_never_waits(self) -> None:
        subscription = RootSubscription("slow", buffer_size=2)
        assert subscription.put(RootFrame("a"))
        assert subscription.put(RootFrame("b", seq=1))
        assert not subscription.put(RootFrame("c"))
        assert subscription.closed
        assert subscription.dropped_reason == (
            "root subscriber 'slow' fell behind: its buffer of 2 notifications was full"
        )
        assert subscription.drain() == []  # its connection is closing: nothing more goes out

    def test_drain_takes_what_waits_in_order(self) -> None:
        subscription = RootSubscription("ok", buffer_size=5)
        frames = [RootFrame("a"), RootFrame("b", seq=3)]
        for frame in frames:
            subscription.put(frame)
        assert subscription.drain() == frames
        assert subscription.drain() == []


class TestClientsCannotActOnTheRoot:
    async def test_a_root_action_dispatched_is_refused_and_changes_nothing(
        self, tmp_path: Path
    ) -> None:
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=config()) as daemon,
            root_follower(daemon, "meddler") as root,
        ):
            await root.client.dispatch(
                ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 99}
            )
            refused = await root.client.until_action(lambda e: "rejectionReason" in e)
            assert refused["channel"] == ROOT
            assert "root channel is the host's" in refused["rejectionReason"]
            root.client.actions.remove(refused)  # an echo, not a root action
            await root.check()
            assert root.state.active_sessions == 0


# ─── the channel alone: coalescing, a summary made from the state ────────────


class FakeSession:
    """A live session as the root channel reads it; the test publishes its batches."""

    def __init__(self, uri: str, state: TeamState) -> None:
        self.uri = uri
        self.team_name = "team"
        self.state = state
        self.observers: list[Callable[[Sequence[Fact]], None]] = []

    def observe(self, observer: Callable[[Sequence[Fact]], None]) -> None:
        self.observers.append(observer)

    def publish(self, **session_changes: Any) -> None:
        """The session's state changes (its facts are published)."""
        session = self.state.session
        assert session is not None
        self.state = team_state(self.uri, evolve(session, **session_changes))
        for observer in self.observers:
            observer([])


def team_state(uri: str, session: SessionState) -> TeamState:
    return TeamState.restore(
        uri,
        last_sequence=1,
        session=session,
        run=None,
        chats={},
        members={},
        tasks={},
        approvals={},
    )


def chat_at(modified_at: str, status: SessionStatus = SessionStatus.IN_PROGRESS) -> ChatSummary:
    return ChatSummary(resource="ahp-chat:/c", title="c", status=status, modified_at=modified_at)


def frames(subscription: RootSubscription) -> list[tuple[str, Any]]:
    return [
        (message["method"], message["params"])
        for message in (json.loads(frame.text) for frame in subscription.drain())
    ]


T0, T1, T2 = "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z", "2026-01-01T00:00:02.000Z"


class TestRootChannel:
    async def test_modified_at_alone_waits_a_second_other_changes_go_at_once(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        uri = "ahp-session:/s"
        session = SessionState(
            provider="orchestrator",
            title="t",
            status=SessionStatus.IN_PROGRESS,
            lifecycle=SessionLifecycle.READY,
            active_clients=(),
            chats=(chat_at(T0),),
        )
        fake = FakeSession(uri, team_state(uri, session))
        channel = RootChannel((), buffer_size=100, coalesce=1.0)
        async with trio.open_nursery() as nursery:
            await nursery.start(channel.serve)
            subscription = channel.subscribe("test")
            channel.session_added(fake)
            added, counted = frames(subscription)
            assert added[0] == "root/sessionAdded"
            assert added[1]["summary"]["provider"] == "team"  # the team, not the state's
            assert added[1]["summary"]["modifiedAt"] == T0
            assert counted[1]["action"] == {
                "type": "root/activeSessionsChanged",
                "activeSessions": 1,
            }
            fake.publish(chats=(chat_at(T1),))
            await trio.sleep(0.5)
            fake.publish(chats=(chat_at(T2),))
            await trio.sleep(0.4)
            assert frames(subscription) == []  # held back
            await trio.sleep(0.2)
            assert frames(subscription) == [
                (
                    "root/sessionSummaryChanged",
                    {"channel": ROOT, "session": uri, "changes": {"modifiedAt": T2}},
                )
            ]
            assert trio.current_time() == pytest.approx(1.1)
            # The session's status follows its chats (the schema's rule): the chat goes idle.
            fake.publish(chats=(chat_at(T2, SessionStatus.IDLE),))
            assert frames(subscription) == [
                (
                    "root/sessionSummaryChanged",
                    {"channel": ROOT, "session": uri, "changes": {"status": 1}},
                )
            ]
            nursery.cancel_scope.cancel()

    async def test_list_sessions_sends_what_is_held_back_first(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        uri = "ahp-session:/s"
        session = SessionState(
            provider="team",
            title="t",
            status=SessionStatus.IN_PROGRESS,
            lifecycle=SessionLifecycle.READY,
            active_clients=(),
            chats=(chat_at(T0),),
            activity="thinking",
        )
        fake = FakeSession(uri, team_state(uri, session))
        channel = RootChannel((), buffer_size=100)
        subscription = channel.subscribe("test")
        channel.session_added(fake)
        frames(subscription)
        fake.publish(chats=(chat_at(T1),))
        assert frames(subscription) == []
        (summary,) = channel.summaries()
        assert summary.modified_at == T1
        assert [method for method, _ in frames(subscription)] == ["root/sessionSummaryChanged"]
        # A cleared field cannot be said by a partial summary: the whole one again.
        fake.publish(activity=None)
        ((method, params),) = frames(subscription)
        assert method == "root/sessionAdded"
        assert "activity" not in params["summary"]
        channel.session_removed(fake)
        assert [method for method, _ in frames(subscription)] == [
            "root/sessionRemoved",
            "action",
        ]
        assert channel.snapshot() == (RootState(agents=(), active_sessions=0), 2)

    def test_a_slow_subscriber_is_dropped_and_the_others_go_on(self) -> None:
        channel = RootChannel((), buffer_size=3)
        slow, quick = channel.subscribe("slow"), channel.subscribe("quick")
        for index in range(4):
            uri = f"ahp-session:/{index}"
            session = SessionState(
                provider="team",
                title="t",
                status=SessionStatus.IDLE,
                lifecycle=SessionLifecycle.READY,
                active_clients=(),
                chats=(),
            )
            channel.session_added(FakeSession(uri, team_state(uri, session)))
            assert len(frames(quick)) == 2
        assert slow.closed
        assert slow.dropped_reason is not None
        assert channel.subscribers == 1
        assert channel.dropped == 1


class TestSessionSummary:
    @settings(
        max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(session=strategies.session_states(), provider=st.text(min_size=1, max_size=8))
    def test_says_what_the_session_channel_says(self, session: SessionState, provider: str) -> None:
        """Made from the state as it is, the summary has the fields of the session channel's
        snapshot (hidden chats left out, the provider the session runs)."""
        uri = "ahp-session:/s"
        state = team_state(uri, session)
        summary = session_summary(uri, state, provider=provider, created_at=T0)
        channel = session_channel_state(state, provider)
        for name in ("title", "activity", "project", "working_directories"):
            assert getattr(summary, name) == getattr(channel, name), name
        # The status by the schema's rule across the session's chats (hidden ones too).
        assert summary.status == session_status(state.session or channel)
        assert summary.provider == channel.provider == provider
        assert summary.modified_at == max((c.modified_at for c in channel.chats), default=T0)


class TestReconnect:
    async def test_the_root_gets_a_snapshot_unless_its_cursor_is_current(
        self, tmp_path: Path
    ) -> None:
        """Root actions are not replayed: a reconnect gives the root a fresh snapshot,
        unless the client's cursor of the root is the root's last action."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=config()) as daemon,
            root_follower(daemon, "re") as root,
            connect_ahp(daemon) as actor,
        ):
            await actor.initialize(client_id="actor")
            await actor.request("createSession", {"channel": new_session(), "provider": "echo"})
            await root.check()
            assert root.seq == 1

            async def reconnect(**extra: Any) -> dict[str, Any]:
                async with connect_ahp(daemon) as again:
                    params = {
                        "channel": ROOT,
                        "clientId": "re",
                        "lastSeenServerSeq": 1,
                        "subscriptions": [ROOT],
                        **extra,
                    }
                    result: dict[str, Any] = await again.request("reconnect", params)
                    return result

            current = await reconnect(cursors={ROOT: 1})
            assert current == {"type": "replay", "actions": [], "missing": [], "snapshots": []}
            behind = await reconnect(cursors={ROOT: 0})
            assert [s["fromSeq"] for s in behind["snapshots"]] == [1]
            plain = await reconnect()
            assert plain["type"] == "snapshot"
            (snapshot,) = plain["snapshots"]
            assert snapshot["state"]["activeSessions"] == 1
