"""The fact log's wire format: one JSON object per fact, one fact per line.

AHP actions are encoded by the AHP converter (:mod:`orchestrator.ahp._wire`);
``team/*`` actions by a converter configured here the same way (camelCase
names, absent optionals omitted). Decoding dispatches on the action's
``type``: ``team/...`` to a team action, anything else to the AHP decoder,
where an unknown type is kept verbatim as :class:`UnknownAction`. A fact's
``origin`` (a client's dispatched action) is written only when it has one and
read when present: facts written before origins were kept have none.
"""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.json import make_converter

from orchestrator import ahp
from orchestrator.ahp.actions import ActionOrigin
from orchestrator.base import PeerProtocolError, compact_dumps, parse_json

from ._board_actions import BOARD_ACTION_TYPES
from ._facts import Action, Fact
from ._review_actions import REVIEW_ACTION_TYPES
from ._team_actions import TEAM_ACTION_TYPES
from ._teammate_actions import TEAMMATE_ACTION_TYPES

__all__ = ["decode_fact", "encode_fact", "fact_from_json", "fact_to_json"]


#: Every ``team/*`` action by wire type: a team run's and a background teammate's.
_TEAM_TYPES: dict[str, type[Any]] = {
    **TEAM_ACTION_TYPES,
    **TEAMMATE_ACTION_TYPES,
    **BOARD_ACTION_TYPES,
    **REVIEW_ACTION_TYPES,
}

#: Fields added to a team action after journals were written with it: written only when set,
#: so a fact without one encodes as it always did (and an older version reads it unchanged).
_OMITTED_WHEN_DEFAULT: frozenset[tuple[str, str]] = frozenset(
    {
        ("team/taskFinished", "value"),
        ("team/runFinished", "value"),
        ("team/runStarted", "trace_parent"),
        ("team/runStarted", "model"),
        ("team/taskCreated", "trace_parent"),
        ("team/memberJoined", "remote"),
        ("team/memberJoined", "context"),
        ("team/memberJoined", "starts"),
    }
)

_team = make_converter(forbid_extra_keys=True)
for _type, _cls in _TEAM_TYPES.items():
    _fields = attrs.fields(_cls)
    # Typed as Any: mypy checks ``**`` of a dict against the generators' boolean parameters.
    _renames: dict[str, Any] = {
        a.name: override(
            rename=ahp.wire_name(_cls, a.name),
            omit_if_default=True if (_type, a.name) in _OMITTED_WHEN_DEFAULT else None,
        )
        for a in _fields
    }
    _team.register_unstructure_hook(
        _cls,
        make_dict_unstructure_fn(
            _cls, _team, _cattrs_omit_if_default=False, _cattrs_include_init_false=True, **_renames
        ),
    )
    _inputs: dict[str, Any] = {name: o for name, o in _renames.items() if name != "type"}
    _team.register_structure_hook(
        _cls, make_dict_structure_fn(_cls, _team, _cattrs_forbid_extra_keys=False, **_inputs)
    )


#: Each team action's generated hook, looked up by class: what ``_team.unstructure`` would
#: dispatch to, without its dispatch (every fact is encoded).
_TEAM_HOOKS: dict[type[Any], Any] = {
    cls: _team.get_unstructure_hook(cls) for cls in _TEAM_TYPES.values()
}


def encode_action(action: Action) -> dict[str, Any]:
    team = _TEAM_HOOKS.get(action.__class__)
    if team is not None or action.type.startswith("team/"):
        # ``type`` first, like the AHP actions, so a log reads well.
        encoded: dict[str, Any] = {"type": action.type}
        encoded.update(_team.unstructure(action) if team is None else team(action))
        return encoded
    wire: dict[str, Any] = ahp.unstructure(action)
    return wire


def decode_action(data: object, *, path: str = "$.action") -> Action:
    if not isinstance(data, dict):
        raise PeerProtocolError("expected a JSON object for the action", path=path)
    action_type = data.get("type")
    if not isinstance(action_type, str):
        raise PeerProtocolError("missing or non-string action type", path=f"{path}.type")
    if action_type.startswith("team/"):
        cls = _TEAM_TYPES.get(action_type)
        if cls is None:
            raise PeerProtocolError(
                f"unknown team action type {action_type!r}", path=f"{path}.type"
            )
        try:
            action: Action = _team.structure(data, cls)
            return action
        except cattrs.ClassValidationError as exc:
            problems = cattrs.transform_error(exc, path=path)
            raise PeerProtocolError("; ".join(problems), path=path) from exc
    try:
        return ahp.structure_action(data)
    except PeerProtocolError as exc:
        raise PeerProtocolError(exc.message, path=path + exc.path.removeprefix("$")) from exc


def encode_fact(fact: Fact) -> dict[str, Any]:
    encoded = {
        "sequence": fact.sequence,
        "session": fact.session,
        "channel": fact.channel,
        "at": fact.at,
        "action": encode_action(fact.action),
    }
    if fact.origin is not None:
        encoded["origin"] = ahp.unstructure(fact.origin)
    return encoded


def decode_fact(data: object) -> Fact:
    """Decode one fact; :class:`PeerProtocolError` names the bad field's path."""
    if not isinstance(data, dict):
        raise PeerProtocolError("expected a JSON object for a fact")
    for key, kind in (("sequence", int), ("session", str), ("channel", str), ("at", str)):
        value = data.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise PeerProtocolError(
                f"missing or wrong type (expected {kind.__name__})", path=f"$.{key}"
            )
    if "action" not in data:
        raise PeerProtocolError("missing the action", path="$.action")
    origin = data.get("origin")
    return Fact(
        sequence=data["sequence"],
        session=data["session"],
        channel=data["channel"],
        at=data["at"],
        action=decode_action(data["action"]),
        origin=None if origin is None else _decode_origin(origin),
    )


def _decode_origin(data: object) -> ActionOrigin:
    try:
        return ahp.structure(data, ActionOrigin)
    except PeerProtocolError as exc:
        raise PeerProtocolError(exc.message, path="$.origin" + exc.path.removeprefix("$")) from exc


def fact_to_json(fact: Fact) -> str:
    """One compact JSON line (no newline)."""
    return compact_dumps(encode_fact(fact))


def fact_from_json(line: str) -> Fact:
    return decode_fact(parse_json(line, protocol="ahp"))
