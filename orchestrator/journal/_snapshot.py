"""Snapshots: a session's state at one sequence, in parts that are written again only when
they change.

A snapshot lets a session be opened as snapshot + the facts after it instead of a fold from
the first fact. It is a cache of a fold, never a source of truth: a snapshot that cannot be
read (an older format, a damaged row) is ignored and the session is folded from the log.

Theory of operation
-------------------
Encoding the whole state at every snapshot costs what the whole state costs. So a session
that grows pays again and again for what did not change. That is quadratic in the end: writing
a 1M-fact session took 260 s, 6 s for 100k. Instead the state is cut into *parts*, each
holding immutable values (a chat without its turns, 256 of its finished turns, a task...).
The state's values are never changed in place, only replaced. So a part whose values are the
very objects written last time is unchanged and is not encoded again. A snapshot costs what
changed since the previous one, plus a walk over the parts.

A part is keyed by ``(kind, name, position)``:

==========  ===========  ===========================  =====================================
kind        name         position                     data
==========  ===========  ===========================  =====================================
session     ""           0                            ``{"state": SessionState without its
                                                      chats, "chats": n}``
catalog     ""           chunk number                 up to :data:`CHUNK` ChatSummary
run         ""           0                            the run record
chat        chat URI     order among the chats        ``{"state": ChatState without turns or
                                                      active parts, "turns": n, "parts": n}``
turns       chat URI     chunk number                 up to :data:`CHUNK` finished turns
parts       chat URI     chunk number                 up to :data:`CHUNK` active-turn parts
member      chat URI     order among the members      the member record
task        task id      order among the tasks        the task record
approval    approval id  order among the approvals    the approval record
==========  ===========  ===========================  =====================================

When to snapshot (:func:`snapshot_due`): a snapshot walks every part to find the changed
ones, and a fan-out changes many at once. So a fixed number of facts between snapshots makes a
large session pay for its size again and again. Take N workers moving in step (all spawned,
then all start their turns, ...). A snapshot every 5,000 facts walks ~4N parts. It re-encodes
the parts of thousands of workers that will change again before the next one: quadratic in N.
A session is therefore snapshot after ``every`` facts *and* at least one fact per entry of its
state (:func:`state_entries`). The walk and the encoding then cost at most a constant per fact
since the last snapshot. Opening folds a tail no longer than the snapshot it starts from is
large. So opening stays within a small factor of decoding the state itself.

The order of the team's dictionaries is kept (``position``), so that a session opened from a
snapshot iterates its chats, tasks and approvals as a fold would. AHP values use the AHP
converter; the team records a converter configured the same way (camelCase, absent
optionals left out). Pure: no IO, no trio.

:func:`decode_state` reads the format-1 snapshot (the whole state in one object) that
schema-3 journals hold, for the migration that converts them.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Final, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.json import make_converter

from orchestrator import ahp
from orchestrator.ahp.state import ChatState, ChatSummary, ResponsePart, SessionState, Turn
from orchestrator.base import PeerProtocolError, evolve
from orchestrator.core import (
    ApprovalRecord,
    ApprovalRequested,
    Member,
    RunRecord,
    TaskRecord,
    TeamState,
)

__all__ = [
    "CHUNK",
    "SNAPSHOT_FORMAT",
    "PartKey",
    "decode_parts",
    "decode_state",
    "encode_part",
    "encode_state",
    "same_values",
    "snapshot_due",
    "snapshot_header",
    "snapshot_parts",
    "state_entries",
]

#: The format of the snapshot header and its parts (1: the whole state in one object).
SNAPSHOT_FORMAT: Final = 2
_WHOLE_STATE_FORMAT: Final = 1
#: Items per part of the sequences that grow without bound: turns, parts, the chat catalog.
CHUNK: Final = 256

#: ``(kind, name, position)``; see the module docstring.
PartKey = tuple[str, str, int]

_RECORDS: Final = (RunRecord, Member, TaskRecord, ApprovalRecord, ApprovalRequested)

_records = make_converter(forbid_extra_keys=False)
for _cls in _RECORDS:
    _names: dict[str, Any] = {
        a.name: override(rename=ahp.wire_name(_cls, a.name), omit_if_default=True)
        for a in attrs.fields(_cls)
        if a.init
    }
    _records.register_unstructure_hook(
        _cls,
        make_dict_unstructure_fn(_cls, _records, _cattrs_include_init_false=True, **_names),
    )
    _records.register_structure_hook(_cls, make_dict_structure_fn(_cls, _records, **_names))

#: The kinds of part that hold one entry of a dictionary of the state each.
_ENTRIES: Final = frozenset({"chat", "member", "task", "approval"})

R = TypeVar("R")


# ─── When to snapshot ────────────────────────────────────────────────────────


def state_entries(state: TeamState) -> int:
    """How many entries ``state`` has (chats, members, tasks, approvals): about a quarter of
    its parts in a fan-out (a worker has a chat, a member, a task and an active turn's
    parts), counted in O(1) on the runtime's thread."""
    return len(state.chats) + len(state.members) + len(state.tasks) + len(state.approvals)


def snapshot_due(facts_since: int, entries: int, *, every: int) -> bool:
    """Whether a session ``facts_since`` facts past its last snapshot is due another: after
    ``every`` facts and at least one per entry of its state (see the module docstring)."""
    return facts_since >= max(every, entries)


# ─── Cutting a state into parts ──────────────────────────────────────────────


def _chunks(
    kind: str, name: str, items: Sequence[Any], chunk: int
) -> Iterable[tuple[PartKey, tuple[Any, ...]]]:
    values = tuple(items)
    for number, start in enumerate(range(0, len(values), chunk)):
        yield (kind, name, number), values[start : start + chunk]


def snapshot_parts(state: TeamState, *, chunk: int = CHUNK) -> dict[PartKey, tuple[Any, ...]]:
    """The parts of ``state`` (its committed part), each with the values it holds."""
    parts: dict[PartKey, tuple[Any, ...]] = {}
    if state.session is not None:
        parts["session", "", 0] = (state.session,)
        parts.update(_chunks("catalog", "", state.session.chats, chunk))
    if state.run is not None:
        parts["run", "", 0] = (state.run,)
    for position, (uri, chat) in enumerate(state.chats.items()):
        parts["chat", uri, position] = (chat,)
        parts.update(_chunks("turns", uri, chat.turns, chunk))
        if chat.active_turn is not None:
            parts.update(_chunks("parts", uri, chat.active_turn.response_parts, chunk))
    for kind, entries in (
        ("member", state.members),
        ("task", state.tasks),
        ("approval", state.approvals),
    ):
        for position, (name, entry) in enumerate(entries.items()):
            parts[kind, name, position] = (entry,)
    return parts


def same_values(before: tuple[Any, ...] | None, now: tuple[Any, ...]) -> bool:
    """Whether a part holds the very objects it held ``before`` (then it is unchanged)."""
    return before is not None and len(before) == len(now) and all(map(operator.is_, before, now))


def snapshot_header(state: TeamState) -> dict[str, Any]:
    """What says which session and sequence the parts are a snapshot of."""
    return {
        "format": SNAPSHOT_FORMAT,
        "session": state.session_uri,
        "sequence": state.last_sequence,
    }


def encode_part(key: PartKey, values: tuple[Any, ...]) -> Any:
    """One part as JSON-ready data."""
    kind = key[0]
    if kind == "session":
        (session,) = values
        return {
            "state": ahp.unstructure(evolve(session, chats=())),
            "chats": len(session.chats),
        }
    if kind == "chat":
        (chat,) = values
        active = chat.active_turn
        header = evolve(
            chat,
            turns=(),
            active_turn=None if active is None else evolve(active, response_parts=()),
        )
        return {
            "state": ahp.unstructure(header),
            "turns": len(chat.turns),
            "parts": 0 if active is None else len(active.response_parts),
        }
    if kind in ("catalog", "turns", "parts"):
        return [ahp.unstructure(value) for value in values]
    (record,) = values
    return _records.unstructure(record)


# ─── Putting a state together again ──────────────────────────────────────────


def _damaged(message: str) -> PeerProtocolError:
    return PeerProtocolError(f"a damaged snapshot: {message}", path="$", protocol="snapshot")


def _joined(chunks: dict[int, Any], expected: int, tp: Any, what: str) -> list[Any]:
    """The items of numbered chunks, checked to be all there."""
    items: list[Any] = []
    for number in range(max(chunks, default=-1) + 1):
        if number not in chunks:
            raise _damaged(f"chunk {number} of {what} is missing")
        items.extend(ahp.structure_as(chunks[number], tuple[tp, ...]))
    if len(items) != expected:
        raise _damaged(f"{what} has {len(items)} items, its header says {expected}")
    return items


def decode_parts(header: object, parts: Iterable[tuple[str, str, int, object]]) -> TeamState:
    """The state of a header and its parts (``(kind, name, position, data)``, data decoded
    from JSON); :class:`PeerProtocolError` if they are not a whole snapshot."""
    if not isinstance(header, dict) or header.get("format") != SNAPSHOT_FORMAT:
        found = header.get("format") if isinstance(header, dict) else type(header).__name__
        raise PeerProtocolError(
            f"not a snapshot of format {SNAPSHOT_FORMAT} (found {found!r})",
            path="$.format",
            protocol="snapshot",
        )
    try:
        return _decode_parts(header, parts)
    except (KeyError, TypeError, ValueError, AttributeError, cattrs.BaseValidationError) as exc:
        raise _damaged(repr(exc)) from exc


def _decode_parts(
    header: dict[str, Any], parts: Iterable[tuple[str, str, int, object]]
) -> TeamState:
    singles: dict[str, Any] = {}
    chunks: defaultdict[tuple[str, str], dict[int, Any]] = defaultdict(dict)
    entries: defaultdict[str, list[tuple[int, str, Any]]] = defaultdict(list)
    for kind, name, position, data in parts:
        if kind in ("session", "run"):
            singles[kind] = data
        elif kind in ("catalog", "turns", "parts"):
            chunks[kind, name][position] = data
        elif kind in _ENTRIES:
            entries[kind].append((position, name, data))
        else:
            raise _damaged(f"unknown part {kind!r}")
    session: SessionState | None = None
    if "session" in singles:
        data = singles["session"]
        catalog = _joined(
            chunks.pop(("catalog", ""), {}), data["chats"], ChatSummary, "the chat catalog"
        )
        session = evolve(ahp.structure(data["state"], SessionState), chats=catalog)
    run = _records.structure(singles["run"], RunRecord) if "run" in singles else None
    chats: dict[str, ChatState] = {}
    for _, uri, data in sorted(entries["chat"], key=_first):
        chat = ahp.structure(data["state"], ChatState)
        turns = _joined(chunks.pop(("turns", uri), {}), data["turns"], Turn, f"the turns of {uri}")
        active = chat.active_turn
        parts_of = _joined(
            chunks.pop(("parts", uri), {}), data["parts"], ResponsePart, f"the parts of {uri}"
        )
        if active is not None:
            active = evolve(active, response_parts=parts_of)
        chats[uri] = evolve(chat, turns=tuple(turns), active_turn=active)
    if chunks:
        raise _damaged(f"chunks of no chat: {sorted(chunks)}")
    return TeamState.restore(
        header["session"],
        last_sequence=header["sequence"],
        session=session,
        run=run,
        chats=chats,
        members=_records_of(entries["member"], Member),
        tasks=_records_of(entries["task"], TaskRecord),
        approvals=_records_of(entries["approval"], ApprovalRecord),
    )


def _records_of(entries: list[tuple[int, str, Any]], cls: type[R]) -> dict[str, R]:
    """Team records by name, in the order of their positions."""
    return {name: _records.structure(data, cls) for _, name, data in sorted(entries, key=_first)}


def _first(entry: tuple[int, str, Any]) -> int:
    return entry[0]


# ─── Format 1: the whole state in one object ──────────────────────────────────


def encode_state(state: TeamState) -> dict[str, Any]:
    """``state`` (its committed part) as one format-1 object (what schema 3 stored)."""
    return {
        "format": _WHOLE_STATE_FORMAT,
        "session": state.session_uri,
        "sequence": state.last_sequence,
        "sessionState": None if state.session is None else ahp.unstructure(state.session),
        "run": None if state.run is None else _records.unstructure(state.run),
        "chats": {uri: ahp.unstructure(chat) for uri, chat in state.chats.items()},
        "members": {uri: _records.unstructure(m) for uri, m in state.members.items()},
        "tasks": {task: _records.unstructure(t) for task, t in state.tasks.items()},
        "approvals": {a: _records.unstructure(r) for a, r in state.approvals.items()},
    }


def decode_state(data: object) -> TeamState:
    """A state from :func:`encode_state`'s data; :class:`PeerProtocolError` if it is not one."""
    if not isinstance(data, dict) or data.get("format") != _WHOLE_STATE_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise PeerProtocolError(
            f"not a snapshot of format {_WHOLE_STATE_FORMAT} (found {found!r})",
            path="$.format",
            protocol="snapshot",
        )
    try:
        session_state = data["sessionState"]
        run = data["run"]
        return TeamState.restore(
            data["session"],
            last_sequence=data["sequence"],
            session=None if session_state is None else ahp.structure(session_state, SessionState),
            run=None if run is None else _records.structure(run, RunRecord),
            chats={uri: ahp.structure(c, ChatState) for uri, c in data["chats"].items()},
            members={uri: _records.structure(m, Member) for uri, m in data["members"].items()},
            tasks={t: _records.structure(r, TaskRecord) for t, r in data["tasks"].items()},
            approvals={
                a: _records.structure(r, ApprovalRecord) for a, r in data["approvals"].items()
            },
        )
    except (KeyError, TypeError, AttributeError, cattrs.BaseValidationError) as exc:
        raise PeerProtocolError(
            f"a damaged snapshot: {exc!r}", path="$", protocol="snapshot"
        ) from exc
