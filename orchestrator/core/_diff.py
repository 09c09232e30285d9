"""Comparing two sessions: where their logs part, and what each chat did differently.

Two sessions are compared as their facts say, not as their ids: each session's URI and each
chat's URI stand for their place in it (the session; its chats in the order they joined). So
a fork and its source agree up to the fork point. So do two runs of one scripted team. The
facts' times are not compared, and neither is the origin of a root chat (a fork's names its
source). A fork's lineage (``team/sessionForked``) is left out: it says where the fork came
from, not what it did.

:func:`diff_sessions` returns the first fact where the two logs part (by position, each side's
own sequence), then per chat what differs: its turns (the message, how it ended, the answer),
its tool calls, and the task each worker ended. Pure: facts in, a report out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from orchestrator.ahp.actions import SessionChatAddedAction
from orchestrator.ahp.state import ChatState, Turn

from ._facts import Fact
from ._facts_wire import encode_action
from ._queries import calls_in, turn_text
from ._team_actions import RunStarted, SessionForked
from ._team_state import TeamState

__all__ = ["ChatDiff", "SessionDiff", "diff_sessions"]


@attrs.frozen(kw_only=True)
class ChatDiff:
    """How one chat differs between the two sessions (``a`` and ``b``: its URI in each)."""

    name: str  # the agent (and its place: "researcher #2") or "chat N"
    a: str | None
    b: str | None
    differences: tuple[str, ...]  # in words, one a line
    # The same, side by side: (what, in A, in B), as the web view's diff shows them.
    sides: tuple[tuple[str, str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "chat": self.name,
            "a": self.a,
            "b": self.b,
            "differences": list(self.differences),
            "sides": [{"what": what, "a": a, "b": b} for what, a, b in self.sides],
        }


@attrs.frozen(kw_only=True)
class SessionDiff:
    """Where two sessions part, and what differs per chat."""

    a: str
    b: str
    # The first differing fact of each side (None: that side has no fact there, it ended).
    parted_at: tuple[int | None, int | None] | None
    first_a: str | None  # that fact's type, in each session
    first_b: str | None
    chats: tuple[ChatDiff, ...]

    @property
    def same(self) -> bool:
        return self.parted_at is None and not self.chats

    def to_json(self) -> dict[str, Any]:
        parted = None
        if self.parted_at is not None:
            parted = {
                "a": {"sequence": self.parted_at[0], "type": self.first_a},
                "b": {"sequence": self.parted_at[1], "type": self.first_b},
            }
        return {
            "a": self.a,
            "b": self.b,
            "same": self.same,
            "partedAt": parted,
            "chats": [c.to_json() for c in self.chats],
        }

    def lines(self) -> list[str]:
        """The report in words, one finding a line."""
        if self.same:
            return [f"{self.a} and {self.b} did the same"]
        lines = []
        if self.parted_at is not None:
            seq_a, seq_b = self.parted_at
            where_a = "its end" if seq_a is None else f"fact {seq_a} ({self.first_a})"
            where_b = "its end" if seq_b is None else f"fact {seq_b} ({self.first_b})"
            lines.append(f"they part at A's {where_a}, B's {where_b}")
        for chat in self.chats:
            lines.append(f"{chat.name}:")
            lines.extend(f"  {difference}" for difference in chat.differences)
        return lines


def _names(facts: Sequence[Fact]) -> dict[str, str]:
    """Each URI of a session's log by its place: the session, then its chats as they joined."""
    names: dict[str, str] = {}
    for fact in facts:
        names.setdefault(fact.session, "session")
        action = fact.action
        if isinstance(action, SessionChatAddedAction) and action.summary.resource not in names:
            chats = sum(1 for name in names.values() if name.startswith("chat "))
            names[action.summary.resource] = f"chat {chats + 1}"
        elif isinstance(action, RunStarted):
            names.setdefault(action.run, "run")
    return names


#: Fields that say when, or how long: not what a session did.
_TIMES = frozenset(
    {"modifiedAt", "startedAt", "duration", "durationMs", "createdAt", "firstTokenAt"}
)


def _renamed(value: Any, names: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {names.get(k, k): _renamed(v, names) for k, v in value.items() if k not in _TIMES}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


#: Ids a session numbers as it goes (``turn-7``, ``part-12``) or a backend makes per chat:
#: compared by their order of appearance in their channel.
_NUMBERED = frozenset({"turnId", "partId", "toolCallId", "id", "queuedMessageId"})


def _numbered(value: Any, ordinals: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {
            k: (
                ordinals.setdefault(v, f"#{len(ordinals) + 1}")
                if k in _NUMBERED and isinstance(v, str)
                else _numbered(v, ordinals)
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_numbered(v, ordinals) for v in value]
    return value


def _first_of(value: Any, wanted: frozenset[str]) -> str | None:
    """The first of ``wanted`` that ``value`` (JSON) holds, depth first."""
    if isinstance(value, str):
        return value if value in wanted else None
    items = value.values() if isinstance(value, dict) else value
    if isinstance(items, list | tuple) or isinstance(value, dict):
        for item in items:
            found = _first_of(item, wanted)
            if found is not None:
                return found
    return None


def _comparables(facts: Sequence[Fact], names: Mapping[str, str]) -> list[Any]:
    """One channel's facts as compared: renamed, their numbered ids by order of appearance."""
    ordinals: dict[str, str] = {}
    return [_numbered(_comparable(fact, names), ordinals) for fact in facts]


def _comparable(fact: Fact, names: Mapping[str, str]) -> Any:
    action = _renamed(encode_action(fact.action), names)
    if isinstance(fact.action, SessionChatAddedAction):
        origin = action["summary"].get("origin")
        if isinstance(origin, dict) and origin.get("kind") in ("user", "fork"):
            del action["summary"]["origin"]
    return (names.get(fact.channel, fact.channel), action)


def _without_lineage(facts: Sequence[Fact]) -> list[Fact]:
    return [f for f in facts if not isinstance(f.action, SessionForked)]


def _parting(
    left: Sequence[Fact],
    names_a: Mapping[str, str],
    right: Sequence[Fact],
    names_b: Mapping[str, str],
) -> tuple[tuple[int | None, int | None] | None, tuple[str | None, str | None]]:
    """The first fact where the logs part, channel by channel: concurrent chats interleave
    their facts as they happen to, so each channel's facts are compared in their order, and
    the earliest mismatch (by A's sequence, else B's) is where they part."""
    by_channel_a: dict[str, list[Fact]] = {}
    by_channel_b: dict[str, list[Fact]] = {}
    for facts, names, by_channel in ((left, names_a, by_channel_a), (right, names_b, by_channel_b)):
        chats = frozenset(name for name in names.values() if name.startswith("chat "))
        for fact in facts:
            channel = names.get(fact.channel, fact.channel)
            if channel == "session":
                # The session's facts about one chat (its summary, its task) are that chat's
                # story: ordered with it, not with the other chats'.
                about = _first_of(_comparable(fact, names)[1], chats)
                channel = f"session/{about}" if about is not None else channel
            by_channel.setdefault(channel, []).append(fact)
    found: list[tuple[float, float, Fact | None, Fact | None]] = []
    for channel in set(by_channel_a) | set(by_channel_b):
        facts_a = by_channel_a.get(channel, [])
        facts_b = by_channel_b.get(channel, [])
        seen_a = _comparables(facts_a, names_a)
        seen_b = _comparables(facts_b, names_b)
        for index in range(max(len(facts_a), len(facts_b))):
            fact_a = facts_a[index] if index < len(facts_a) else None
            fact_b = facts_b[index] if index < len(facts_b) else None
            if fact_a is not None and fact_b is not None and seen_a[index] == seen_b[index]:
                continue
            key_a = fact_a.sequence if fact_a is not None else float("inf")
            key_b = fact_b.sequence if fact_b is not None else float("inf")
            found.append((key_a, key_b, fact_a, fact_b))
            break
    if not found:
        return None, (None, None)
    _, _, fact_a, fact_b = min(found, key=lambda f: (f[0], f[1]))
    return (
        (None if fact_a is None else fact_a.sequence, None if fact_b is None else fact_b.sequence),
        (None if fact_a is None else fact_a.type, None if fact_b is None else fact_b.type),
    )


def diff_sessions(a: Sequence[Fact], b: Sequence[Fact]) -> SessionDiff:
    """Compare the logs ``a`` and ``b`` (each a whole session's facts, in order)."""
    session_a = a[0].session if a else ""
    session_b = b[0].session if b else ""
    names_a, names_b = _names(a), _names(b)
    left, right = _without_lineage(a), _without_lineage(b)
    parted, first = _parting(left, names_a, right, names_b)
    chats: list[ChatDiff] = []
    names_a = {k: v for k, v in names_a.items() if v.startswith("chat ")}
    names_b = {k: v for k, v in names_b.items() if v.startswith("chat ")}
    state_a = TeamState.fold(session_a, a)
    state_b = TeamState.fold(session_b, b)
    by_place_a = {name: uri for uri, name in names_a.items() if uri in state_a.chats}
    by_place_b = {name: uri for uri, name in names_b.items() if uri in state_b.chats}
    places = sorted(set(by_place_a) | set(by_place_b), key=lambda n: int(n.split()[1]))
    for place in places:
        uri_a, uri_b = by_place_a.get(place), by_place_b.get(place)
        found = _chat_differences(state_a, uri_a, state_b, uri_b)
        if found:
            member = state_a.members.get(uri_a or "") or state_b.members.get(uri_b or "")
            name = f"{member.agent} ({place})" if member is not None else place
            chats.append(
                ChatDiff(
                    name=name,
                    a=uri_a,
                    b=uri_b,
                    differences=tuple(words for words, *_ in found),
                    sides=tuple((what.rstrip(":"), a, b) for _, what, a, b in found),
                )
            )
    return SessionDiff(
        a=session_a,
        b=session_b,
        parted_at=parted,
        first_a=first[0],
        first_b=first[1],
        chats=tuple(chats),
    )


def _short(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return repr(line if len(line) <= limit else line[: limit - 1] + "…")


def _turn_summary(turn: Turn) -> tuple[str, str, str, tuple[str, ...]]:
    calls = tuple(f"{call.tool_name} {call.status}" for _, call in calls_in(turn))
    return (turn.message.text, str(turn.state), turn_text(turn), calls)


def _chat_differences(
    state_a: TeamState, uri_a: str | None, state_b: TeamState, uri_b: str | None
) -> tuple[tuple[str, str, str, str], ...]:
    """What differs in one chat: each as ``(words, what, in A, in B)``."""
    if uri_a is None:
        return (("only in B", "chat", "-", "present"),)
    if uri_b is None:
        return (("only in A", "chat", "present", "-"),)
    chat_a: ChatState = state_a.chats[uri_a]
    chat_b: ChatState = state_b.chats[uri_b]
    out: list[tuple[str, str, str, str]] = []

    def differ(what: str, a: str, b: str) -> None:
        out.append((f"{what} {a} / {b}", what, a, b))

    turns_a, turns_b = list(chat_a.turns), list(chat_b.turns)
    for index in range(max(len(turns_a), len(turns_b))):
        turn = f"turn {index + 1}"
        if index >= len(turns_a):
            asked = _short(turns_b[index].message.text)
            out.append((f"{turn}: only in B ({asked})", f"{turn}: asked", "-", asked))
            continue
        if index >= len(turns_b):
            asked = _short(turns_a[index].message.text)
            out.append((f"{turn}: only in A ({asked})", f"{turn}: asked", asked, "-"))
            continue
        message_a, state_a_, text_a, calls_a = _turn_summary(turns_a[index])
        message_b, state_b_, text_b, calls_b = _turn_summary(turns_b[index])
        if message_a != message_b:
            differ(f"{turn}: asked", _short(message_a), _short(message_b))
        if state_a_ != state_b_:
            differ(f"{turn}: ended", state_a_, state_b_)
        if calls_a != calls_b:
            differ(
                f"{turn}: tool calls", ", ".join(calls_a) or "none", ", ".join(calls_b) or "none"
            )
        if text_a != text_b:
            differ(f"{turn}: answered", _short(text_a), _short(text_b))
    active_a, active_b = chat_a.active_turn is not None, chat_b.active_turn is not None
    if active_a != active_b:
        differ("a turn still running:", "yes" if active_a else "no", "yes" if active_b else "no")
    task_a = _task_end(state_a, uri_a)
    task_b = _task_end(state_b, uri_b)
    if task_a != task_b:
        differ("task ended", task_a, task_b)
    return tuple(out)


def _task_end(state: TeamState, chat: str) -> str:
    member = state.members.get(chat)
    task = state.tasks.get(member.task) if member is not None else None
    if task is None or member is None or task.requested_by is None:
        return "-"
    return f"{task.status}: {_short(task.summary, 40)}" if task.summary else str(task.status)
