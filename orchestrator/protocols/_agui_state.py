"""The team state AG-UI clients see: ``STATE_SNAPSHOT`` and ``STATE_DELTA`` (RFC 6902).

:func:`team_view` is the small JSON view of a :class:`~orchestrator.core._team_state.TeamState`
that :class:`~orchestrator.protocols._project_agui.AguiProjector` sends whole at each run's start;
after a fact that changes it, the projector sends :func:`json_patch` of the view the client has
to the new one. Both are plain functions of their inputs.

The module is pure: no trio, no IO.
"""

from __future__ import annotations

from typing import Any

from orchestrator.core import TeamState

__all__ = ["json_patch", "team_view"]


def team_view(state: TeamState) -> dict[str, Any]:
    """The small team state of ``STATE_SNAPSHOT`` / ``STATE_DELTA``.

    ``{"team", "members": [{chat, agent, status}], "tasks": [{id, agent, status}],
    "pendingApprovals": [{id, chat, agent, tool, summary, routedTo}]}``, members in join order,
    tasks in creation order.
    """
    run = state.run
    return {
        "team": run.team if run is not None else None,
        "members": [
            {"chat": chat, "agent": member.agent, "status": state.member_status(chat).value}
            for chat, member in state.members.items()
        ],
        "tasks": [
            {"id": task.task, "agent": task.agent, "status": task.status.value}
            for task in state.tasks.values()
        ],
        "pendingApprovals": [
            {
                "id": record.request.approval,
                "chat": record.request.chat,
                "agent": record.request.requested_by,
                "tool": record.request.tool_name,
                "summary": record.request.summary,
                "routedTo": record.request.routed_to,
            }
            for record in state.pending_approvals()
        ],
    }


def json_patch(old: Any, new: Any) -> list[dict[str, Any]]:
    """An RFC 6902 patch that turns JSON value ``old`` into ``new`` (``[]`` when equal).

    Objects are diffed key by key, arrays index by index (extra items added at their index or
    removed from the end), anything else replaced. Operations apply in order.
    """
    ops: list[dict[str, Any]] = []
    _diff(old, new, "", ops)
    return ops


def _diff(old: Any, new: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        ops.extend(
            {"op": "remove", "path": f"{path}/{_escape(key)}"} for key in old if key not in new
        )
        for key, value in new.items():
            if key in old:
                _diff(old[key], value, f"{path}/{_escape(key)}", ops)
            else:
                ops.append({"op": "add", "path": f"{path}/{_escape(key)}", "value": value})
    elif isinstance(old, list) and isinstance(new, list):
        for index in range(min(len(old), len(new))):
            _diff(old[index], new[index], f"{path}/{index}", ops)
        ops.extend(
            {"op": "add", "path": f"{path}/{index}", "value": new[index]}
            for index in range(len(old), len(new))
        )
        ops.extend(
            {"op": "remove", "path": f"{path}/{index}"}
            for index in reversed(range(len(new), len(old)))
        )
    elif not _same(old, new):
        ops.append({"op": "replace", "path": path, "value": new})


def _same(old: Any, new: Any) -> bool:
    """JSON equality: ``True`` is not ``1`` and ``1`` is not ``1.0`` once on the wire."""
    if type(old) is not type(new):
        return False
    if isinstance(old, dict):
        return old.keys() == new.keys() and all(_same(old[k], new[k]) for k in old)
    if isinstance(old, list):
        return len(old) == len(new) and all(_same(a, b) for a, b in zip(old, new, strict=True))
    return bool(old == new)


def _escape(key: str) -> str:
    """A JSON Pointer reference token (RFC 6901): ``~`` → ``~0``, ``/`` → ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")
