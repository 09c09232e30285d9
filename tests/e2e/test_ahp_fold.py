"""An independent AHP client's view of real runs: a channel's snapshot plus the actions that
follow it always equals a fresh snapshot of that channel, and a client's action carries the
same origin for every subscriber.

A *watcher* connection subscribes to the session channel and to every chat channel it learns
of, at random (seeded) points of a run driven by a *driver* connection (delegation to
workers, an approval, a failed worker, a hidden worker, cancelled turns, a queued message).
The watcher folds every action it gets with the AHP reducers (``reduce_chat``,
``reduce_session``), as any client would with its own copy, decoding through
``structure_as``, and keeps its state of each channel after every action. A *checker*
connection takes fresh snapshots of random channels during the run; afterwards each one is
compared with the watcher's state at the snapshot's ``fromSeq``, and at the end every
channel with a last snapshot (a second subscription) and a ``reconnect``'s snapshots.

The one field a client cannot get from the host is a chat's ``modifiedAt``: the chat reducer
stamps the folding side's clock on it (the upstream reducer's ``Date.now()``), and no chat
action carries the host's. The watcher folds with a clock of its own (:data:`CLIENT_CLOCK`):
where its state holds that stamp, the host's time is taken; anywhere else the values must
be equal. The session catalog's copy of each chat's ``modifiedAt`` does come by action (the
``session/chatUpdated`` the host derives from each chat fact, at that fact's ``serverSeq``:
issue 35) and is compared as it is.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any, cast

import attrs
import pytest
import trio

from orchestrator.ahp import (
    reduce_chat,
    reduce_session,
    structure_action,
    structure_as,
    unstructure,
)
from orchestrator.ahp.actions import StateAction
from orchestrator.ahp.state import ChatState, SessionState
from orchestrator.core import Fact, TeamState, summary_updates
from orchestrator.journal import JournalReader
from orchestrator.protocols import channel_envelopes
from tests.support.ahp_client import ROOT, AhpClient, connect_ahp, user_message
from tests.support.daemon import running_daemon

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

#: The time the watcher's reducers stamp (a client's own clock, never the host's).
CLIENT_CLOCK = "1999-01-01T00:00:00.000Z"

MIXED = """
[team]
name = "mixed"
coordinator = "lead"
parallel_budget = 3

[agents.lead]
role = "coordinator"
tools = ["delegate", "ask"]
delegates_to = ["writer", "breaker", "scout"]

[[agents.lead.turns]]
steps = [
  { think = "Four pieces of work." },
  { say = "Splitting the work.", chunks = 2 },
  { delegate = [
      { agent = "writer", task = "publish the notes" },
      { agent = "breaker", task = "build it" },
      { agent = "scout", task = "look it up" },
      { agent = "writer", task = "publish the draft" },
  ] },
  { say = "What came back:\\n{outcomes}", chunks = 3 },
]

[[agents.lead.turns]]
steps = [ { ask = "Which colour?", kind = "text" }, { say = "noted" } ]

[[agents.lead.turns]]
steps = [ { say = "third", chunks = 2 } ]

[[agents.lead.turns]]
steps = [ { say = "fourth" } ]

[agents.writer]
role = "writer"
interactivity = "read-only"
tools = ["publish"]
needs_approval = ["publish"]

[[agents.writer.turns]]
steps = [ { tool = "publish", input = { text = "notes" } }, { say = "done: {outcomes}" } ]

[agents.breaker]
role = "breaker"
interactivity = "read-only"

[[agents.breaker.turns]]
steps = [ { say = "building", chunks = 2 }, { fail = "the build broke" } ]

[agents.scout]
role = "scout"
interactivity = "hidden"

[[agents.scout.turns]]
steps = [ { say = "found it" } ]
"""

SESSION_PREFIX = "ahp-session:/"


def _pending_confirmation(envelope: dict[str, Any]) -> bool:
    action = envelope["action"]
    return action["type"] == "chat/toolCallReady" and "confirmed" not in action


def _pending_in(state: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The tool calls of a chat snapshot that wait for a confirmation."""
    turn = state.get("activeTurn")
    if turn is None:
        return []
    return [
        (state["resource"], turn["id"], part["toolCall"]["toolCallId"])
        for part in turn["responseParts"]
        if part.get("kind") == "toolCall" and part["toolCall"]["status"] == "pending-confirmation"
    ]


def _reduce(state: Any, action: StateAction) -> Any:
    """A client's fold of one action, stamping the client's own clock."""
    if isinstance(state, SessionState):
        return reduce_session(state, action, now=CLIENT_CLOCK)
    return reduce_chat(state, cast(Any, action), now=CLIENT_CLOCK)


def _state_type(channel: str) -> type[ChatState] | type[SessionState]:
    return SessionState if channel.startswith(SESSION_PREFIX) else ChatState


@attrs.define
class _Folded:
    """The watcher's state of one channel, and its encoding after each action."""

    state: Any
    from_seq: int
    history: list[tuple[int, Any]]  # (serverSeq, encoding), the snapshot's first

    def at(self, seq: int) -> Any | None:
        """The encoding after every action up to ``seq`` (None: subscribed after it)."""
        if seq < self.from_seq:
            return None
        return [encoded for at, encoded in self.history if at <= seq][-1]


class Watcher:
    """Subscribes at random points and folds every action it receives."""

    def __init__(self, client: AhpClient, rng: random.Random) -> None:
        self.client = client
        self.rng = rng
        self.known: list[str] = []  # channels heard of, in order
        self.folded: dict[str, _Folded] = {}
        self._applied = 0  # of client.actions

    async def subscribe(self, channel: str) -> None:
        result = await self.client.request("subscribe", {"channel": channel})
        snapshot = result["snapshot"]
        for entry in snapshot["state"].get("chats", ()):
            self.hear_of(entry["resource"])  # a session's catalog
        state = structure_as(snapshot["state"], _state_type(channel))
        self.folded[channel] = _Folded(
            state=state,
            from_seq=snapshot["fromSeq"],
            history=[(snapshot["fromSeq"], unstructure(state))],
        )
        self.fold_received()

    def hear_of(self, channel: str) -> None:
        if channel not in self.known:
            self.known.append(channel)

    def fold_received(self) -> None:
        for envelope in self.client.actions[self._applied :]:
            self._applied += 1
            if "rejectionReason" in envelope:
                continue
            channel = envelope["channel"]
            folded = self.folded.get(channel)
            action = envelope["action"]
            if action["type"] == "session/chatAdded":
                self.hear_of(action["summary"]["resource"])
            assert folded is not None, ("an action of a channel not subscribed to", envelope)
            seq = envelope["serverSeq"]
            assert seq > folded.from_seq, ("an action the snapshot had", envelope)
            assert seq > folded.history[-1][0], ("out of order", envelope)
            folded.state = _reduce(folded.state, structure_action(action))
            folded.history.append((seq, unstructure(folded.state)))

    async def step(self) -> None:
        """Take one message; maybe subscribe to a channel heard of and not subscribed to."""
        await self.client.receive()
        self.fold_received()
        waiting = [c for c in self.known if c not in self.folded]
        if waiting and self.rng.random() < 0.2:
            # Shielded: a subscription the host made must be one the watcher knows of.
            with trio.CancelScope(shield=True):
                await self.subscribe(self.rng.choice(waiting))


def _last_sent(session: str, facts: list[Fact], channel: str) -> int:
    """The ``serverSeq`` of the last action the host sends ``channel`` for ``facts``."""
    state = TeamState.fold(session, facts)
    title = state.session.title if state.session is not None else ""
    # The session channel's catalog updates are derived from the chat facts (issue 35).
    summaries = summary_updates(session, facts)

    def hidden(chat: str) -> bool:
        found = state.chats.get(chat)
        return found is not None and str(found.interactivity) == "hidden"

    return max(
        (
            envelope.server_seq
            for fact in facts
            for envelope in channel_envelopes(
                fact,
                channel,
                session_title=title,
                is_hidden=hidden,
                summary=summaries.get(fact.sequence),
            )
        ),
        default=0,
    )


def _agree(host: Any, folded: Any, where: str) -> None:
    """``folded`` (the watcher's encoding) equals ``host`` (a fresh snapshot's state), but
    for a chat's ``modifiedAt`` that the watcher's own clock stamped."""
    if folded.get("modifiedAt") == CLIENT_CLOCK and "turns" in folded:
        folded = {**folded, "modifiedAt": host["modifiedAt"]}
    assert folded == host, where


class Driver:
    """Runs the mixed team: approves the first publish, cancels the worker of the second,
    cancels the coordinator's question turn, queues a message on its third."""

    def __init__(self, client: AhpClient) -> None:
        self.client = client
        self.dispatched: dict[int, str] = {}  # clientSeq -> channel

    async def dispatch(self, channel: str, action: dict[str, Any]) -> None:
        seq = await self.client.dispatch(channel, action)
        self.dispatched[seq] = channel

    async def start(self, session: str, chat: str) -> None:
        client = self.client
        await client.request("subscribe", {"channel": session})
        await client.request(
            "createChat",
            {"channel": session, "chat": chat, "initialMessage": user_message("Ship it")},
        )
        await client.request("subscribe", {"channel": chat})

    async def run(self, chat: str) -> None:
        client = self.client
        confirmations = 0
        while confirmations < 2:
            envelope = await client.until_action(
                lambda e: e["action"]["type"] == "session/chatAdded" or _pending_confirmation(e)
            )
            pending: list[tuple[str, str, str]] = []  # (chat, turnId, toolCallId)
            if envelope["action"]["type"] == "session/chatAdded":
                worker = envelope["action"]["summary"]["resource"]
                if worker != chat:
                    subscribed = await client.request("subscribe", {"channel": worker})
                    pending += _pending_in(subscribed["snapshot"]["state"])
            else:
                action = envelope["action"]
                pending.append((envelope["channel"], action["turnId"], action["toolCallId"]))
            for worker, turn_id, tool_call_id in pending:
                confirmations += 1
                if confirmations == 1:
                    await self.dispatch(
                        worker,
                        {
                            "type": "chat/toolCallConfirmed",
                            "turnId": turn_id,
                            "toolCallId": tool_call_id,
                            "approved": True,
                            "confirmed": "user-action",
                        },
                    )
                else:
                    await self.dispatch(
                        worker, {"type": "chat/turnCancelled", "turnId": turn_id, "duration": 0}
                    )
        await self._turn_completed(chat)
        # The second turn asks a question: cancel it while it waits for the answer.
        await self.dispatch(chat, self._turn_started("Pick a colour"))
        started = await client.until_action(
            lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnStarted"
        )
        await client.until_action(
            lambda e: e["channel"] == chat and e["action"]["type"] == "chat/inputRequested"
        )
        await self.dispatch(
            chat,
            {"type": "chat/turnCancelled", "turnId": started["action"]["turnId"], "duration": 0},
        )
        await client.until_action(
            lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnCancelled"
        )
        # The third turn, and a message queued while it runs: the fourth.
        await self.dispatch(chat, self._turn_started("Third"))
        await self.dispatch(
            chat,
            {
                "type": "chat/pendingMessageSet",
                "kind": "queued",
                "id": f"queued-{uuid.uuid4()}",
                "message": user_message("Fourth"),
            },
        )
        await self._turn_completed(chat)
        await self._turn_completed(chat)

    async def _turn_completed(self, chat: str) -> None:
        await self.client.until_action(
            lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnComplete"
        )

    @staticmethod
    def _turn_started(text: str) -> dict[str, Any]:
        return {
            "type": "chat/turnStarted",
            "turnId": f"client-{uuid.uuid4()}",
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": user_message(text),
        }


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_snapshot_plus_actions_is_a_fresh_snapshot(tmp_path: Path, seed: int) -> None:
    """Every channel a client folds equals the host's fresh snapshot at the same point, at
    random points of a run and at its end; every subscriber of a channel sees a client's
    action with the origin its echo has, a replay from the journal too, and no other action
    has an origin."""
    rng = random.Random(seed)
    session, chat = f"{SESSION_PREFIX}{uuid.uuid4()}", f"ahp-chat:/{uuid.uuid4()}"
    checks: list[tuple[str, int, Any]] = []  # (channel, fromSeq, fresh state)
    with trio.fail_after(120):
        async with (
            running_daemon(tmp_path, teams={"mixed": MIXED}) as daemon,
            connect_ahp(daemon) as driving,
            connect_ahp(daemon) as watching,
            connect_ahp(daemon) as checking,
        ):
            await driving.initialize(client_id="driver")
            await watching.initialize(client_id="watcher")
            await checking.initialize(client_id="checker")
            await driving.request("createSession", {"channel": session, "provider": "mixed"})
            watcher = Watcher(watching, rng)
            watcher.hear_of(session)
            watcher.hear_of(chat)
            if rng.random() < 0.5:
                await watcher.subscribe(session)  # before the run: the pre-run state
            driver = Driver(driving)

            async def watch() -> None:
                while True:
                    await watcher.step()
                    if rng.random() < 0.1:
                        channel = rng.choice(watcher.known)
                        with_snapshot = await checking.request("subscribe", {"channel": channel})
                        snapshot = with_snapshot["snapshot"]
                        checks.append((channel, snapshot["fromSeq"], snapshot["state"]))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch)
                await driver.start(session, chat)
                await checking.request("subscribe", {"channel": chat})
                await driver.run(chat)
                nursery.cancel_scope.cancel()
            for channel in watcher.known:
                if channel not in watcher.folded:
                    await watcher.subscribe(channel)
            # The end: every channel's last action (as the journal has it) has arrived.
            facts = JournalReader(daemon.db).facts(session)
            last = facts[-1].sequence
            for channel in watcher.known:
                final = await checking.request("subscribe", {"channel": channel})
                assert final["snapshot"]["fromSeq"] == last, "the run is over"
                checks.append((channel, last, final["snapshot"]["state"]))
            for channel, folded in watcher.folded.items():
                last_sent = _last_sent(session, facts, channel)
                while folded.history[-1][0] < last_sent:
                    await watcher.step()
            async with connect_ahp(daemon) as again:
                # A reconnect replays, from the journal, what followed each first snapshot.
                resumed = await again.request(
                    "reconnect",
                    {
                        "channel": ROOT,
                        "clientId": "watcher",
                        "lastSeenServerSeq": 0,
                        "subscriptions": list(watcher.folded),
                        "cursors": {c: f.from_seq for c, f in watcher.folded.items()},
                    },
                )
                replayed = await again.request(
                    "reconnect",
                    {
                        "channel": ROOT,
                        "clientId": "watcher",
                        "lastSeenServerSeq": 0,
                        "subscriptions": watcher.known,
                        "cursors": dict.fromkeys(watcher.known, 0),
                    },
                )

    assert resumed["type"] == "replay"
    assert resumed["snapshots"] == []
    final = {channel: state for channel, seq, state in checks if seq == last}
    for channel, folded in watcher.folded.items():
        state = structure_as(folded.history[0][1], _state_type(channel))
        for envelope in resumed["actions"]:
            if envelope["channel"] == channel:
                state = _reduce(state, structure_action(envelope["action"]))
        host = unstructure(structure_as(final[channel], _state_type(channel)))
        _agree(host, unstructure(state), f"{channel} replayed (seed {seed})")

    compared = 0
    for channel, seq, state in checks:
        then = watcher.folded[channel].at(seq)
        if then is None:
            continue  # the watcher subscribed after this snapshot
        host = unstructure(structure_as(state, _state_type(channel)))
        _agree(host, then, f"{channel} at {seq} (seed {seed})")
        compared += 1
    assert compared >= len(watcher.known)
    hidden = [
        f.action.summary.resource  # type: ignore[union-attr]
        for f in facts
        if f.type == "session/chatAdded" and str(f.action.summary.interactivity) == "hidden"  # type: ignore[union-attr]
    ]
    assert hidden, "the scout ran"
    assert not set(hidden) & set(watcher.known), "the scout is hidden"

    # Origins: the driver's echo, the watcher's copy and the replay agree, by serverSeq.
    def origins(envelopes: list[dict[str, Any]]) -> dict[tuple[str, int], Any]:
        return {
            (e["channel"], e["serverSeq"]): e.get("origin")
            for e in envelopes
            if "rejectionReason" not in e
        }

    echoed = {k: o for k, o in origins(driving.actions).items() if o is not None}
    assert sorted(o["clientSeq"] for o in echoed.values()) == sorted(driver.dispatched)
    assert all(o["clientId"] == "driver" for o in echoed.values())
    seen = origins(watching.actions) | origins(checking.actions)
    replay = origins(replayed["actions"])
    for key, origin in echoed.items():
        if key in seen:
            assert seen[key] == origin, key
        assert replay[key] == origin, key
    assert {k: o for k, o in seen.items() if o is not None}.keys() <= echoed.keys()
    assert {k: o for k, o in replay.items() if o is not None}.keys() == echoed.keys()
    assert any(seen.get(key) is not None for key in echoed), (
        "the watcher saw a client's action of another connection"
    )
