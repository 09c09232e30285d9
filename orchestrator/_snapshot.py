"""Snapshots: the whole state of a session at one sequence, as JSON-ready data and back.

A snapshot lets a session be opened as snapshot + the facts after it instead of a fold from
the first fact. It is a cache of a fold, never a source of truth: a snapshot that cannot be
read (an older format, a damaged row) is ignored and the session is folded from the log.

Shape (``SNAPSHOT_FORMAT`` bumps when it changes)::

    {"format": 1, "session": "ahp-session:/...", "sequence": 5000,
     "sessionState": {AHP SessionState}, "run": {...},
     "chats": {uri: {AHP ChatState}}, "members": {uri: {...}},
     "tasks": {id: {...}}, "approvals": {id: {"request": {team/approvalRequested}, ...}}}

AHP states use the AHP converter; the team records a converter configured the same way
(camelCase, absent optionals left out). Pure: no IO, no trio.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.json import make_converter

from . import _ahp_wire
from ._ahp_state import ChatState, SessionState
from ._errors import PeerProtocolError
from ._team_actions import ApprovalRequested
from ._team_state import ApprovalRecord, Member, RunRecord, TaskRecord, TeamState

__all__ = ["SNAPSHOT_FORMAT", "decode_state", "encode_state"]

SNAPSHOT_FORMAT: Final = 1

_RECORDS: Final = (RunRecord, Member, TaskRecord, ApprovalRecord, ApprovalRequested)

_records = make_converter(forbid_extra_keys=False)
for _cls in _RECORDS:
    _names: dict[str, Any] = {
        a.name: override(rename=_ahp_wire.wire_name(_cls, a.name), omit_if_default=True)
        for a in attrs.fields(_cls)
        if a.init
    }
    _records.register_unstructure_hook(
        _cls,
        make_dict_unstructure_fn(_cls, _records, _cattrs_include_init_false=True, **_names),
    )
    _records.register_structure_hook(_cls, make_dict_structure_fn(_cls, _records, **_names))


def encode_state(state: TeamState) -> dict[str, Any]:
    """``state`` (its committed part) as JSON-ready data."""
    return {
        "format": SNAPSHOT_FORMAT,
        "session": state.session_uri,
        "sequence": state.last_sequence,
        "sessionState": None if state.session is None else _ahp_wire.unstructure(state.session),
        "run": None if state.run is None else _records.unstructure(state.run),
        "chats": {uri: _ahp_wire.unstructure(chat) for uri, chat in state.chats.items()},
        "members": {uri: _records.unstructure(m) for uri, m in state.members.items()},
        "tasks": {task: _records.unstructure(t) for task, t in state.tasks.items()},
        "approvals": {a: _records.unstructure(r) for a, r in state.approvals.items()},
    }


def decode_state(data: object) -> TeamState:
    """A state from :func:`encode_state`'s data; :class:`PeerProtocolError` if it is not one."""
    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise PeerProtocolError(
            f"not a snapshot of format {SNAPSHOT_FORMAT} (found {found!r})",
            path="$.format",
            protocol="snapshot",
        )
    try:
        session_state = data["sessionState"]
        run = data["run"]
        return TeamState.restore(
            data["session"],
            last_sequence=data["sequence"],
            session=None
            if session_state is None
            else _ahp_wire.structure(session_state, SessionState),
            run=None if run is None else _records.structure(run, RunRecord),
            chats={uri: _ahp_wire.structure(c, ChatState) for uri, c in data["chats"].items()},
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
