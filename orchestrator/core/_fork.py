"""Forking a session: the facts of a new session that starts where another stood.

Theory of operation
-------------------
A fork copies (DESIGN, decision 4). The source's facts up to the fork point are re-recorded as
the new session's own facts, numbered from 1, so the new session opens, replays and resumes
like any other: its fold at its last copied fact is the source's fold at the fork point. The
source's log is only read.

What changes in the copy:

- every URI: the session's, and each chat's (a chat URI names one chat of one session), by
  :func:`fork_facts`'s ``new_chat``;
- the origin of each copied root chat (a person's chat: the coordinator, a teammate), which
  becomes ``{kind: "fork", chat: <source chat>, turnId: <its last turn at the fork point>}``.
  Workers keep their tool origin (naming their copied parent), so the spawn edge's two views
  (origin and subagent content) still agree in the copy.

One fact follows the copies: ``team/sessionForked`` (:class:`SessionForked`), the lineage.
It says which session and sequence the copy came from, and maps each source chat to its copy.
The run's record then carries ``forked_from``, and the delegation graph a ``forked`` edge from
each source chat to its copy.

Work in flight at the fork point (a turn mid-stream, a running tool, a pending approval, a
queued delegation) is copied as it stood, exactly as a stop of the process would have left it.
Running the fork on is then a resume after a crash (:mod:`._recovery`), with the same rules.

Pure: facts in, facts out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatResponsePartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    ChatUsageAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    ChatState,
    ForkChatOrigin,
    MarkdownResponsePart,
    ResponsePart,
    SideChatSelection,
    ToolCallResponsePart,
    ToolResultSubagentContent,
    Turn,
    TurnState,
    UserChatOrigin,
)
from orchestrator.base import RunError, compact_dumps, evolve

from ._facts import Action, Fact
from ._facts_wire import decode_action, encode_action, fact_from_json, fact_to_json
from ._queries import conversation
from ._team_actions import RunFinished, RunStarted, SessionForked

__all__ = [
    "Fork",
    "ForkRows",
    "StoredFact",
    "before_run_end",
    "chat_fork_actions",
    "fork_facts",
    "fork_point",
    "fork_rows",
    "fork_sequence",
    "side_chat_context",
]

# Actions whose fields never name a chat or a session: copied with their fact's channel and
# session renamed only (most of a log: the stream's deltas).
_NO_URIS: Final = frozenset(
    {
        "chat/delta",
        "chat/reasoning",
        "chat/toolCallStart",
        "chat/toolCallDelta",
        "chat/usage",
        "chat/turnComplete",
        "chat/turnCancelled",
        "chat/error",
        "chat/activityChanged",
    }
)
_TURN_ENDS: Final = (ChatTurnCompleteAction, ChatTurnCancelledAction, ChatErrorAction)


@attrs.frozen(kw_only=True)
class Fork:
    """A fork's facts (the copies, then the lineage) and what they were made of."""

    session: str  # the new session's URI
    source: str
    sequence: int  # the source's last fact copied
    turn_id: str | None
    chats: Mapping[str, str]  # source chat -> its copy
    facts: tuple[Fact, ...]


def fork_sequence(
    facts: Iterable[Fact], *, turn_id: str | None = None, sequence: int | None = None
) -> int:
    """The source's last fact a fork copies: ``sequence``, or the end of turn ``turn_id``
    (the fact that completed, cancelled or failed it); with neither, the last fact.

    :class:`RunError` names a turn that did not end in ``facts``, or a sequence they do not
    have.
    """
    if turn_id is not None and sequence is not None:
        raise RunError("fork at a turn or at a sequence, not both")
    last = 0
    for fact in facts:
        last = fact.sequence
        action = fact.action
        if turn_id is not None and isinstance(action, _TURN_ENDS) and action.turn_id == turn_id:
            return fact.sequence
    if turn_id is not None:
        raise RunError(f"no turn {turn_id!r} ended in this session: fork at a turn that ended")
    if sequence is None:
        return last
    if not 1 <= sequence <= last:
        raise RunError(f"no fact {sequence} to fork at: the session has facts 1 to {last}")
    return sequence


def before_run_end(facts: Sequence[Fact], sequence: int) -> int:
    """``sequence``, or the one before the run's end when that is the fact it names: a fork
    that runs on takes up the run, so it does not copy the run's end."""
    if sequence >= 1 and isinstance(facts[sequence - 1].action, RunFinished):
        return sequence - 1
    return sequence


def fork_facts(
    facts: Sequence[Fact],
    *,
    session: str,
    new_chat: Callable[[], str],
    now: str,
    sequence: int,
    turn_id: str | None = None,
) -> Fork:
    """The facts of a fork of the session whose log is ``facts`` (from sequence 1) at
    ``sequence``.

    Args:
        facts: The source's facts, in order; those after ``sequence`` are not read.
        session: The new session's URI.
        new_chat: Makes a new chat URI, one per chat of the source.
        now: The lineage fact's time (the copies keep their own).
        sequence: The last fact copied (see :func:`fork_sequence`).
        turn_id: The turn the fork was asked at, recorded in the lineage.
    """
    copied = facts[:sequence]
    if not copied:
        raise RunError("nothing to fork: the source has no facts up to there")
    source = copied[0].session
    names: dict[str, str] = {source: session}
    chats: dict[str, str] = {}
    last_turn: dict[str, str] = {}
    for fact in copied:
        action = fact.action
        if isinstance(action, SessionChatAddedAction):
            chat = action.summary.resource
            if chat not in chats:
                chats[chat] = names[chat] = new_chat()
        elif isinstance(action, ChatTurnStartedAction):
            last_turn[fact.channel] = action.turn_id
    out: list[Fact] = []
    for fact in copied:
        action = fact.action
        if action.type not in _NO_URIS:
            action = _renamed(action, names)
            if isinstance(action, SessionChatAddedAction):
                action = _root_forked(action, chats, last_turn)
        out.append(
            Fact(
                sequence=fact.sequence,
                session=session,
                channel=names.get(fact.channel, fact.channel),
                at=fact.at,
                action=action,
                origin=fact.origin,
            )
        )
    lineage = SessionForked(source=source, sequence=sequence, turn_id=turn_id, chats=chats)
    out.append(
        Fact(sequence=sequence + 1, session=session, channel=session, at=now, action=lineage)
    )
    return Fork(
        session=session,
        source=source,
        sequence=sequence,
        turn_id=turn_id,
        chats=chats,
        facts=tuple(out),
    )


def _root_forked(
    action: SessionChatAddedAction, chats: Mapping[str, str], last_turn: Mapping[str, str]
) -> SessionChatAddedAction:
    """A copied root chat's ``chatAdded``, its origin the source chat at its last turn (one
    that had no turn yet keeps its origin: there is nothing of it to fork)."""
    summary = action.summary
    if summary.origin is not None and not isinstance(summary.origin, UserChatOrigin):
        return action
    source = next((s for s, c in chats.items() if c == summary.resource), None)
    turn = last_turn.get(source or "")
    if source is None or turn is None:
        return action
    origin = ForkChatOrigin(chat=source, turn_id=turn)
    return evolve(action, summary=evolve(summary, origin=origin))


def _renamed(action: Action, names: Mapping[str, str]) -> Action:
    """``action`` with every string that is one of ``names`` (whole) replaced."""
    encoded = encode_action(action)
    renamed = _rename(encoded, names)
    return action if renamed is encoded else decode_action(renamed)


def _rename(value: Any, names: Mapping[str, str]) -> Any:
    """``value`` (JSON) with ``names`` replaced; the very same object when nothing was."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        changed = False
        out = {}
        for key, item in value.items():
            new_key = names.get(key, key)
            new = _rename(item, names)
            changed = changed or new is not item or new_key != key
            out[new_key] = new
        return out if changed else value
    if isinstance(value, list):
        items = [_rename(item, names) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    return value


# ── the same fork, on the stored text ───────────────────────────────────────

#: A stored fact as a journal keeps it: ``(sequence, channel, at, type, text)``.
StoredFact = tuple[int, str, str, str, str]

# A JSON string that is a whole session or chat URI (an unescaped quote on each side).
_URI_STRING: Final = re.compile(r'(?<!\\)"(ahp-(?:chat|session):/[^"\\]*(?:\\.[^"\\]*)*)"')


_TURN_END_TYPES: Final = frozenset({"chat/turnComplete", "chat/turnCancelled", "chat/error"})


def fork_point(
    rows: Sequence[StoredFact],
    *,
    turn_id: str | None = None,
    sequence: int | None = None,
    runs_on: bool = False,
) -> int:
    """:func:`fork_sequence` (then, with ``runs_on``, :func:`before_run_end`) over a
    session's stored facts, ``rows``: only the turns' ends are decoded, to find ``turn_id``.

    A point inside a batch of facts recorded together moves to that batch's end (one clock
    reading stamps a batch: the facts after the point with its time are taken along).
    """
    if turn_id is not None and sequence is not None:
        raise RunError("fork at a turn or at a sequence, not both")
    last = rows[-1][0] if rows else 0
    if turn_id is not None:
        found = (
            number
            for number, _channel, _at, kind, text in rows
            if kind in _TURN_END_TYPES and json.loads(text)["action"].get("turnId") == turn_id
        )
        at = next(found, None)
        if at is None:
            raise RunError(f"no turn {turn_id!r} ended in this session: fork at a turn that ended")
    elif sequence is None:
        at = last
    elif not 1 <= sequence <= last:
        raise RunError(f"no fact {sequence} to fork at: the session has facts 1 to {last}")
    else:
        at = sequence
    # The facts of one append share their time, and are never split: a point inside such a
    # batch (a spawn's worker and its parent's subagent content, say) moves to its end.
    while at < len(rows) and rows[at][2] == rows[at - 1][2] and rows[at][0] == at + 1:
        at += 1
    if runs_on and at >= 1 and rows[at - 1][3] == "team/runFinished":
        return at - 1
    return at


@attrs.frozen(kw_only=True)
class ForkRows:
    """A fork's stored facts, renamed as :func:`fork_facts` renames them, and what the
    journal's session row needs of them."""

    session: str
    source: str
    sequence: int
    turn_id: str | None
    chats: Mapping[str, str]
    rows: tuple[StoredFact, ...]
    created: tuple[str, str, str] | None  # (team, title, created_at): a run's start copied
    status: str | None  # the run's end, when a copied fact ended it


def fork_rows(
    rows: Sequence[StoredFact],
    *,
    source: str,
    session: str,
    new_chat: Callable[[], str],
    now: str,
    turn_id: str | None = None,
) -> ForkRows:
    """:func:`fork_facts` on the stored text of the facts to copy (``rows``, from sequence 1
    to the fork point): the same facts, byte for byte, without decoding most of them.

    Only a root chat's addition (whose origin changes) and a run's start and end are
    decoded; a worker's addition and a turn's start are read as JSON, to learn the chats and
    their last turns. Every other fact is its
    text with the URIs renamed: a JSON string that is a whole URI is one the fork renames.
    """
    if not rows:
        raise RunError("nothing to fork: the source has no facts up to there")
    names: dict[str, str] = {source: session}
    chats: dict[str, str] = {}
    last_turn: dict[str, str] = {}
    added: dict[int, Fact] = {}
    created: tuple[str, str, str] | None = None
    status: str | None = None
    for sequence, channel, at, kind, text in rows:
        if kind == "session/chatAdded":
            summary = json.loads(text)["action"]["summary"]
            chat = summary["resource"]
            if chat not in chats:
                chats[chat] = names[chat] = new_chat()
            # Only a root chat's addition changes (its origin becomes the fork's): decoded.
            # A worker's is renamed in its text, as any other fact.
            origin = summary.get("origin")
            if origin is None or origin.get("kind") == "user":
                fact = fact_from_json(text)
                assert isinstance(fact.action, SessionChatAddedAction)
                added[sequence] = fact
        elif kind == "chat/turnStarted":
            turn = json.loads(text)["action"].get("turnId")
            if isinstance(turn, str):
                last_turn[channel] = turn
        elif kind == "team/runStarted":
            started = fact_from_json(text).action
            assert isinstance(started, RunStarted)
            prompt = started.prompt.strip().splitlines()
            created = (started.team, prompt[0][:80] if prompt else "", at)
        elif kind == "team/runFinished":
            finished = fact_from_json(text).action
            assert isinstance(finished, RunFinished)
            status = finished.status.value

    texts = _renamed_texts(rows, source, session, names)
    out: list[StoredFact] = [
        (sequence, names.get(channel, channel), at, kind, text)
        for (sequence, channel, at, kind, _), text in zip(rows, texts, strict=True)
    ]
    # A root chat's addition, its origin changed: decoded, renamed and encoded again.
    for index, (sequence, channel, at, kind, _) in enumerate(rows):
        chat_added = added.get(sequence)
        if chat_added is None:
            continue
        renamed = _renamed(chat_added.action, names)
        assert isinstance(renamed, SessionChatAddedAction)
        copy = Fact(
            sequence=sequence,
            session=session,
            channel=names.get(channel, channel),
            at=at,
            action=_root_forked(renamed, chats, last_turn),
            origin=chat_added.origin,
        )
        out[index] = (sequence, copy.channel, at, kind, fact_to_json(copy))
    last = rows[-1][0]
    lineage = Fact(
        sequence=last + 1,
        session=session,
        channel=session,
        at=now,
        action=SessionForked(source=source, sequence=last, turn_id=turn_id, chats=chats),
    )
    out.append((last + 1, session, now, lineage.type, fact_to_json(lineage)))
    return ForkRows(
        session=session,
        source=source,
        sequence=last,
        turn_id=turn_id,
        chats=chats,
        rows=tuple(out),
        created=created,
        status=status,
    )


# ── a chat forked inside its session (AHP createChat with a source) ─────────


def chat_fork_actions(source: ChatState, turn_id: str, *, now: str) -> tuple[Action, ...]:
    """The actions that give a new chat ``source``'s turns through ``turn_id``, as its own.

    Each turn is started, given its response parts as they ended, and ended as it ended.
    A copied tool call that spawned a worker keeps its result but not its subagent content:
    the worker stays its source call's (an origin names one call, and the graph checks it).

    :class:`RunError` if ``turn_id`` is not a turn ``source`` completed (a fork targets one).
    """
    turns = _turns_through(source, turn_id, completed=True)
    actions: list[Action] = []
    for turn in turns:
        actions.append(
            ChatTurnStartedAction(
                turn_id=turn.id, started_at=turn.started_at or now, message=turn.message
            )
        )
        actions += [
            ChatResponsePartAction(turn_id=turn.id, part=_without_subagents(part))
            for part in turn.response_parts
        ]
        if turn.usage is not None:
            actions.append(ChatUsageAction(turn_id=turn.id, usage=turn.usage))
        duration = turn.duration or 0.0
        if turn.state is TurnState.COMPLETE:
            actions.append(ChatTurnCompleteAction(turn_id=turn.id, duration=duration))
        elif turn.state is TurnState.ERROR and turn.error is not None:
            actions.append(ChatErrorAction(turn_id=turn.id, duration=duration, error=turn.error))
        else:
            actions.append(ChatTurnCancelledAction(turn_id=turn.id, duration=duration))
    return tuple(actions)


def side_chat_context(
    source: ChatState, turn_id: str, selection: SideChatSelection | None = None
) -> tuple[tuple[str, str], ...]:
    """What a side chat of ``source`` at ``turn_id`` is given as context, as (role, text) pairs.

    It is ``source``'s conversation through that turn (the turn running now: its message and
    the answer streamed so far), then the selected text when there is one. A side chat's
    model reads these before its own turns; they are not its history.

    :class:`RunError` if ``source`` has no turn ``turn_id``.
    """
    through = evolve(source, turns=_turns_through(source, turn_id), active_turn=None)
    pairs = list(conversation(through))
    active = source.active_turn
    if active is not None and active.id == turn_id:
        pairs.append(("user", active.message.text))
        parts = active.response_parts
        text = "".join(p.content for p in parts if isinstance(p, MarkdownResponsePart))
        if text:
            pairs.append(("assistant", text))
    if selection is not None:
        pairs.append(("user", f"About this part of the conversation:\n\n{selection.text}"))
    return tuple(pairs)


def _turns_through(source: ChatState, turn_id: str, *, completed: bool = False) -> tuple[Turn, ...]:
    """``source``'s finished turns through ``turn_id`` (none of them when it is the running
    turn, unless ``completed`` asks for a completed one: then :class:`RunError`)."""
    for index, turn in enumerate(source.turns):
        if turn.id == turn_id:
            if completed and turn.state is not TurnState.COMPLETE:
                raise RunError(
                    f"turn {turn_id!r} of {source.resource} {turn.state}: fork at a completed turn"
                )
            return tuple(source.turns[: index + 1])
    active = source.active_turn
    if active is not None and active.id == turn_id:
        if completed:
            raise RunError(
                f"turn {turn_id!r} of {source.resource} is still running: fork at a completed turn"
            )
        return tuple(source.turns)
    raise RunError(f"{source.resource} has no turn {turn_id!r}")


def _without_subagents(part: ResponsePart) -> ResponsePart:
    if not isinstance(part, ToolCallResponsePart):
        return part
    call = part.tool_call
    content = getattr(call, "content", None)
    if not content or not any(isinstance(c, ToolResultSubagentContent) for c in content):
        return part
    kept = tuple(c for c in content if not isinstance(c, ToolResultSubagentContent))
    return evolve(part, tool_call=evolve(call, content=kept or None))


# A JSON string that is a whole session or chat URI. It starts with a literal, which the
# regex engine looks for at C speed (:data:`_URI_STRING`'s look-behind first makes it try
# every position of the text); a match right after a backslash is in a string (see below).
_QUOTED_URI: Final = re.compile(r'"(ahp-(?:chat|session):/[^"\\]*(?:\\.[^"\\]*)*)"')


def _unquoted(text: str) -> str:
    """A JSON string's text as written between its quotes, as the string it stands for (a
    URI chosen by a client may hold a quote, a backslash or a control character)."""
    if "\\" not in text:
        return text
    unquoted: str = json.loads(f'"{text}"')
    return unquoted


def _renamed_texts(
    rows: Sequence[StoredFact], source: str, session: str, names: Mapping[str, str]
) -> list[str]:
    """The texts of ``rows`` renamed as :func:`fork_facts` renames their facts.

    Each fact's envelope (its session and channel, as the encoder writes them) is replaced
    as a whole, with one ``str.replace``; a fact whose action names no chat
    (:data:`_NO_URIS`, a stream's deltas) is then done. So is one with no other URI-like
    string (counted at C speed): most session facts. The rest of the others is searched
    for the JSON strings that are whole URIs, each looked up in ``names``. A ``"ahp-`` right
    after a backslash is a quote inside a string, not a URI: left as written. A fact not in
    its envelope as the encoder writes it is searched whole (:data:`_URI_STRING`).
    """

    def rename(match: re.Match[str]) -> str:
        start = match.start()
        if start and match.string[start - 1] == "\\":
            return match.group(0)  # inside a string: an escaped quote, then ahp-...
        new = names.get(_unquoted(match.group(1)))
        return match.group(0) if new is None else compact_dumps(new)

    def rename_whole(match: re.Match[str]) -> str:
        new = names.get(_unquoted(match.group(1)))
        return match.group(0) if new is None else compact_dumps(new)

    out: list[str] = []
    append = out.append
    envelopes: dict[str, tuple[str, str]] = {}  # channel -> its envelope, then the copy's
    quoted_source = compact_dumps(source)
    for sequence, channel, _at, kind, text in rows:
        envelope = envelopes.get(channel)
        if envelope is None:
            copy_channel = names.get(channel, channel)
            # As the facts' encoder writes them (non-ASCII kept, a quote escaped).
            old = f',"session":{quoted_source},"channel":{compact_dumps(channel)},'
            envelope = envelopes[channel] = (
                old,
                f',"session":{compact_dumps(session)},"channel":{compact_dumps(copy_channel)},',
            )
        number = f'{{"sequence":{sequence}'
        head = len(number)
        if not (text.startswith(number) and text.startswith(envelope[0], head)):
            append(_URI_STRING.sub(rename_whole, text))
            continue
        end = head + len(envelope[0])
        if kind in _NO_URIS or text.count('"ahp-', end) == 0:
            # The envelope is the first place its text is found (startswith said so).
            append(text.replace(envelope[0], envelope[1], 1))
        else:
            append(text[:head] + envelope[1] + _QUOTED_URI.sub(rename, text[end:]))
    return out
