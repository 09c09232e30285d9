"""The team state AG-UI clients see: ``STATE_SNAPSHOT`` and ``STATE_DELTA`` (RFC 6902).

:func:`team_view` is the small JSON view of a :class:`~orchestrator.core._team_state.TeamState`
that :class:`~orchestrator.protocols._project_agui.AguiProjector` sends whole at each run's start
(the snapshot, and the reference every delta is checked against in the tests).

After each fact, the projector sends the patch :meth:`TeamView.update` returns: the changes of
that fact alone, as RFC 6902 operations on the paths it touched. A :class:`TeamView` is built from
the state at the snapshot and then follows it fact by fact. It remembers what the client holds:
each member's and task's place and fields, the pending approvals in order. For one fact, it
looks only at the entries the fact can change. Which entries those are is read off the fact,
as the team reducer (:mod:`orchestrator.core._team_reducer`) writes them:

* a ``chat/*`` fact changes that chat, so at most its member's ``status``;
  ``session/chatAdded`` creates a chat (its member's status again); other ``session/*`` facts
  change nothing the view shows;
* a ``team/*`` fact may append members, tasks and approvals (the state's dicts keep insertion
  order and never drop an entry, so the new ones are the last ``k`` of each, appended to the
  view's lists), change the run (``team``, and the coordinator, whose status depends on it),
  and change the entry it names: ``memberJoined`` its member, ``task*`` / ``handoff`` /
  ``runStarted`` its task and ``runFinished`` the root task (and the status of every member
  working on that task), ``approval*`` its approval (its place among the pending ones).

So a fact costs the same whatever the team's size, where diffing two whole views cost one pass
over every member, task and approval per fact. Should the state ever shrink under a view (an
entry dropped: no reducer does), the next ``team/*`` fact's :meth:`TeamView.update` falls back
to :func:`json_patch` of the whole views.

:func:`json_patch` is the general diff of two JSON values (that fallback, and a reference).

The module is pure: no trio, no IO.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from typing import Any

import attrs

from orchestrator.ahp.actions import SessionChatAddedAction
from orchestrator.core import (
    ApprovalRecord,
    ApprovalRequested,
    ApprovalResolved,
    BoardAction,
    Fact,
    HandoffRecorded,
    MemberJoined,
    ReviewRecord,
    Reviews,
    RunFinished,
    RunStarted,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TeamState,
    party_name,
)

__all__ = ["TeamView", "board_entries", "json_patch", "review_entry", "review_ops", "team_view"]

#: A JSON Patch operation (RFC 6902).
Op = dict[str, Any]


def team_view(state: TeamState) -> dict[str, Any]:
    """The small team state of ``STATE_SNAPSHOT`` / ``STATE_DELTA``.

    ``{"team", "members": [{chat, agent, status}], "tasks": [{id, agent, status}],
    "pendingApprovals": [{id, chat, agent, requestedByName, tool, summary, routedTo,
    routedToName}]}``, members in join order, tasks in creation order.
    """
    run = state.run
    view = {
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
            _approval_entry(state, record) for record in state.pending_approvals()
        ],
    }
    board = board_entries(state)
    if board is not None:
        view["board"] = board
    return view


def board_entries(state: TeamState) -> list[dict[str, Any]] | None:
    """A board's items as the view lists them (None: the run has no board): ``{id, title,
    status, priority, assignee, assigneeKind, claimedBy, waitingFor, dependsOn}``."""
    run = state.run
    if run is None or not run.board.items:
        return None
    return [
        {
            "id": item.id,
            "title": item.title,
            "status": item.status.value,
            "priority": item.priority,
            "assignee": item.assignee,
            "assigneeKind": item.assignee_kind,
            "claimedBy": item.claimed_by,
            "waitingFor": item.waiting_for,
            "dependsOn": list(item.depends_on),
        }
        for item in run.board.items.values()
    ]


def review_entry(record: ReviewRecord) -> dict[str, Any]:
    """A review as the state's ``reviews`` lane lists it: the round, the reviewer and its
    target, the review teammate status and, once done, the verdict's fixes and evidence."""
    return {
        "id": record.review,
        "task": record.task,
        "round": record.round,
        "reviewer": record.reviewer,
        "reviewerChat": record.chat,
        "workerChat": record.worker_chat,
        "status": record.status.value,
        "summary": record.summary,
        "fixes": list(record.fixes),
        "evidence": [
            {"kind": e.kind, "text": e.text, **({"ref": e.ref} if e.ref is not None else {})}
            for e in record.evidence
        ],
        "error": record.error,
    }


def review_ops(reviews: Reviews, record: ReviewRecord) -> list[Op]:
    """The patch of the review lane after ``record`` changed: appended if it is new (the
    last of the fold's reviews), else replaced at its place."""
    place = list(reviews.records).index(record.review)
    if place == len(reviews.records) - 1 and record.status.value == "requested":
        return [{"op": "add", "path": "/reviews/-", "value": review_entry(record)}]
    return [{"op": "replace", "path": f"/reviews/{place}", "value": review_entry(record)}]


def _approval_entry(state: TeamState, record: ApprovalRecord) -> dict[str, Any]:
    """A pending approval as the client lists it: who asks and who decides by the names people
    are shown (``researcher #3``, ``boss #1``, ``user``), as the Agent UI cards name them."""
    request = record.request
    return {
        "id": request.approval,
        "chat": request.chat,
        "agent": request.requested_by,
        "requestedByName": party_name(state, request.chat),
        "tool": request.tool_name,
        "summary": request.summary,
        "routedTo": request.routed_to,
        "routedToName": party_name(state, request.routed_to),
    }


def _board_json(board: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {} if board is None else {"board": board}


@attrs.define
class _Row:
    """A member or task as the client has it: its place in its list and its fields."""

    index: int
    agent: str
    status: str
    task: str = ""  # a member's task (the tasks whose change can change its status)


def _last(entries: dict[str, Any], count: int) -> Iterator[str]:
    """The last ``count`` keys of ``entries``, oldest first (without a pass over the rest)."""
    return reversed(list(itertools.islice(reversed(entries.keys()), count)))


class TeamView:
    """:func:`team_view` of a state, followed fact by fact (see the module docstring).

    ``TeamView(state)`` holds what a client given ``team_view(state)`` holds; after each fact
    folded into that state, ``update(state, fact)`` returns the operations that bring the
    client to ``team_view(state)`` again (``[]`` when the fact changed nothing it shows).
    Every fact must be passed, in order: a view that missed one is stale (build a new one).
    """

    def __init__(self, state: TeamState) -> None:
        self._team: str | None = None
        self._coordinator: str | None = None
        self._members: dict[str, _Row] = {}
        # Invariant: self._working_on[t] == {c for c, row in self._members.items() if row.task == t}
        self._working_on: dict[str, set[str]] = {}
        self._tasks: dict[str, _Row] = {}
        self._approval_place: dict[str, int] = {}  # every approval -> its place in the state's
        # The pending approvals as the client lists them: (place, id), sorted; and their entries.
        self._pending: list[tuple[int, str]] = []
        self._pending_entries: dict[str, dict[str, Any]] = {}
        # The board's items as the client has them (None: no board yet).
        self._board: list[dict[str, Any]] | None = None
        self._reset(state)

    def update(self, state: TeamState, fact: Fact) -> list[Op]:
        """The patch of ``fact``, just folded into ``state``; the view now holds the new state."""
        ops: list[Op] = []
        action = fact.action
        kind = action.type
        if kind.startswith("chat/"):
            self._refresh_member(state, fact.channel, ops)
            return ops
        if isinstance(action, SessionChatAddedAction):
            self._refresh_member(state, action.summary.resource, ops)
            return ops
        if not kind.startswith("team/"):
            return ops
        if isinstance(action, BoardAction):
            # A board fact changes the board alone: its entries diffed (a board is small).
            board = board_entries(state)
            ops = json_patch(_board_json(self._board), _board_json(board))
            self._board = board
            return ops
        if (
            len(state.members) < len(self._members)
            or len(state.tasks) < len(self._tasks)
            or len(state.approvals) < len(self._approval_place)
        ):
            return self._rebuild(state)
        run = state.run
        team = run.team if run is not None else None
        if team != self._team:
            ops.append({"op": "replace", "path": "/team", "value": team})
            self._team = team
        self._add_new(state, ops)
        coordinator = state.coordinator_chat()
        if coordinator != self._coordinator:
            # Whether a member owns the root task depends on being the coordinator.
            former, self._coordinator = self._coordinator, coordinator
            for chat in (former, coordinator):
                if chat is not None:
                    self._refresh_member(state, chat, ops)
        match action:
            case MemberJoined():
                self._refresh_member(state, action.chat, ops)
                if action.starts:  # also its task's start (issue 35)
                    self._refresh_task(state, action.task, ops)
            case TaskCreated() | TaskStarted() | TaskFinished() | HandoffRecorded() | RunStarted():
                self._refresh_task(state, action.task, ops)
            case RunFinished() if run is not None:
                self._refresh_task(state, run.task, ops)
            case ApprovalRequested() | ApprovalResolved():
                self._refresh_approval(state, action.approval, ops)
        if isinstance(action, MemberJoined | HandoffRecorded):
            # A member's name (its agent and number) is known, or changed: the pending
            # approvals name their asker and decider by it (few are pending at once).
            for _, approval in list(self._pending):
                self._refresh_approval(state, approval, ops)
        if isinstance(action, TaskCreated) and action.requested_by is None and coordinator:
            # A conversation's next prompt: the coordinator works on its root task now.
            self._refresh_member(state, coordinator, ops)
        elif isinstance(action, RunStarted | RunFinished):
            # Whether the run goes on decides between idle and a prompt's end for whoever
            # owns a finished root task (once a run: every member is asked).
            for chat in list(self._members):
                self._refresh_member(state, chat, ops)
        return ops

    # ── building ───────────────────────────────────────────────────────────

    def _reset(self, state: TeamState) -> None:
        run = state.run
        self._team = run.team if run is not None else None
        self._coordinator = state.coordinator_chat()
        self._members.clear()
        self._working_on.clear()
        self._tasks.clear()
        self._approval_place.clear()
        self._pending.clear()
        self._pending_entries.clear()
        self._board = board_entries(state)
        self._add_new(state, [])

    def _rebuild(self, state: TeamState) -> list[Op]:
        """The fallback: the whole views diffed, and the view built again from ``state``."""
        ops = json_patch(self._as_json(), team_view(state))
        self._reset(state)
        return ops

    def _as_json(self) -> dict[str, Any]:
        """What the client holds, whole (for the fallback)."""
        return {
            "team": self._team,
            "members": [
                {"chat": chat, "agent": row.agent, "status": row.status}
                for chat, row in self._members.items()
            ],
            "tasks": [
                {"id": task, "agent": row.agent, "status": row.status}
                for task, row in self._tasks.items()
            ],
            "pendingApprovals": [dict(self._pending_entries[id_]) for _, id_ in self._pending],
            **_board_json(self._board),
        }

    def _add_new(self, state: TeamState, ops: list[Op]) -> None:
        """Append the members, tasks and approvals the state has and the view has not yet."""
        for chat in _last(state.members, len(state.members) - len(self._members)):
            member = state.members[chat]
            row = _Row(
                len(self._members), member.agent, state.member_status(chat).value, member.task
            )
            self._members[chat] = row
            self._working_on.setdefault(member.task, set()).add(chat)
            value = {"chat": chat, "agent": row.agent, "status": row.status}
            ops.append({"op": "add", "path": f"/members/{row.index}", "value": value})
        for task_id in _last(state.tasks, len(state.tasks) - len(self._tasks)):
            task = state.tasks[task_id]
            row = _Row(len(self._tasks), task.agent, task.status.value)
            self._tasks[task_id] = row
            value = {"id": task_id, "agent": row.agent, "status": row.status}
            ops.append({"op": "add", "path": f"/tasks/{row.index}", "value": value})
        for approval in _last(state.approvals, len(state.approvals) - len(self._approval_place)):
            self._approval_place[approval] = len(self._approval_place)
            self._refresh_approval(state, approval, ops)

    # ── one entry ──────────────────────────────────────────────────────────

    def _refresh_member(self, state: TeamState, chat: str, ops: list[Op]) -> None:
        row = self._members.get(chat)
        member = state.members.get(chat)
        if row is None or member is None:
            return  # not on the team (yet): its memberJoined adds it
        if member.task != row.task:
            self._working_on[row.task].discard(chat)
            self._working_on.setdefault(member.task, set()).add(chat)
            row.task = member.task
        if member.agent != row.agent:
            row.agent = member.agent
            ops.append({"op": "replace", "path": f"/members/{row.index}/agent", "value": row.agent})
        status = state.member_status(chat).value
        if status != row.status:
            row.status = status
            ops.append({"op": "replace", "path": f"/members/{row.index}/status", "value": status})

    def _refresh_task(self, state: TeamState, task_id: str, ops: list[Op]) -> None:
        row = self._tasks.get(task_id)
        if row is None:
            return  # no such task: the fact changed nothing
        task = state.tasks[task_id]
        if task.agent != row.agent:
            row.agent = task.agent
            ops.append({"op": "replace", "path": f"/tasks/{row.index}/agent", "value": row.agent})
        if task.status.value != row.status:
            row.status = task.status.value
            ops.append({"op": "replace", "path": f"/tasks/{row.index}/status", "value": row.status})
        # A member's status follows the task it works on (its end, once recorded).
        for chat in sorted(self._working_on.get(task_id, ()), key=self._member_index):
            self._refresh_member(state, chat, ops)

    def _member_index(self, chat: str) -> int:
        return self._members[chat].index

    def _refresh_approval(self, state: TeamState, approval: str, ops: list[Op]) -> None:
        place = self._approval_place.get(approval)
        if place is None:
            return  # no such approval: the fact changed nothing
        record = state.approvals[approval]
        key = (place, approval)
        at = bisect.bisect_left(self._pending, key)
        listed = at < len(self._pending) and self._pending[at] == key
        if record.decision is not None:
            if listed:
                del self._pending[at]
                del self._pending_entries[approval]
                ops.append({"op": "remove", "path": f"/pendingApprovals/{at}"})
            return
        entry = _approval_entry(state, record)
        if not listed:
            self._pending.insert(at, key)
            self._pending_entries[approval] = entry
            ops.append({"op": "add", "path": f"/pendingApprovals/{at}", "value": dict(entry)})
            return
        before = self._pending_entries[approval]
        for field, value in entry.items():
            if before[field] != value:
                ops.append(
                    {"op": "replace", "path": f"/pendingApprovals/{at}/{field}", "value": value}
                )
        self._pending_entries[approval] = entry


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
