"""The Agent UI envelopes of what a person is asked to act on: approvals and questions.

:class:`ActionRequests` sits between :class:`~._agentui_envelopes.EnvelopeBuilder` and
:class:`~._project_agentui.AgentUiProjector`: the projector decides when a fact asks for an
action or settles one, and this class builds the envelope that says so. An approval
(``team/approvalRequested``, routed to the user or to a teammate) and a member's question
(``chat/inputRequested``, always for the user) each raise one ``action.required`` card (scope
``action_request``, surface ``hitl``), and their decision or answer one ``action.resolved``.
The cards name the asker and the decider as people are shown them (``analyst #3``, the number
of its ``agentId``) and carry the asker's lineage, so a client can place the card under its
teammate.

A question is resolved by the answer the runtime recorded in the member's chat. So its card is
tracked per (chat, request id). A request sent again raises no second card. An answer to a card
never raised resolves nothing.

The module is pure: no trio, no IO.
"""

from __future__ import annotations

from typing import Final

from orchestrator.ahp.actions import ChatInputCompletedAction, ChatInputRequestedAction
from orchestrator.ahp.state import (
    ActiveTurn,
    ChatInputAnswered,
    ChatInputResponseKind,
    known_questions,
)
from orchestrator.core import (
    USER,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    TeamState,
    answer_text,
    remote_task_of,
)

from ._agent_channel import tool_call_of_request
from ._agentui import (
    ActionType,
    Control,
    Envelope,
    EventType,
    Owner,
    Persistence,
    Phase,
    Scope,
    Surface,
    Topology,
)
from ._agentui_envelopes import EnvelopeBuilder, card_ref, compact

__all__: list[str] = []

#: The control a decision stands for; a withdrawn request was decided by no one.
_DECISION_CONTROL: Final[dict[ApprovalDecision, Control | None]] = {
    ApprovalDecision.APPROVED: Control.APPROVE,
    ApprovalDecision.DENIED: Control.REJECT,
    ApprovalDecision.WITHDRAWN: None,
}


class ActionRequests(EnvelopeBuilder):
    """Builds the ``action.required`` and ``action.resolved`` envelopes of one session's
    approvals and questions (the projector, its subclass, says when)."""

    def __init__(self, session: str, state: TeamState | None = None) -> None:
        super().__init__(session, state)
        self._open_inputs: set[tuple[str, str]] = set()  # (chat, request id) with a card up

    # ── approvals ──────────────────────────────────────────────────────────

    def _action_required(self, fact: Fact, action: ApprovalRequested) -> Envelope:
        # Any requester but the coordinator is a delegated teammate (the spec's approval card
        # must name it), whoever the approval is routed to.
        delegated = action.chat != self.state.coordinator_chat()
        member = self.state.members.get(action.chat)
        routed_member = self.state.members.get(action.routed_to)
        parent = self._lineage.get(action.chat)
        return self._envelope(
            fact,
            EventType.ACTION_REQUIRED,
            owner=Owner.POLICY,
            scope=Scope.ACTION_REQUEST,
            phase=Phase.WAITING,
            surface=Surface.HITL,
            persistence=Persistence.SNAPSHOT,
            control=Control.APPROVE,
            thread_id=action.chat,
            turn_id=action.turn_id,
            task_id=member.task if member is not None else None,
            agent_id=self._agent_ids.get(action.chat),
            parent_session_id=self.session if parent is not None else None,
            parent_thread_id=parent[0] if parent is not None else None,
            tool_call_id=action.tool_call_id,
            action_id=action.approval,
            payload=compact(
                actionType=(
                    ActionType.DELEGATED_PERMISSION if delegated else ActionType.TOOL_APPROVAL
                ).value,
                requestedBy=action.requested_by,
                requestedByAgentId=self._agent_ids.get(action.chat),
                requestedByName=self._name_of(action.chat),
                taskTitle=self._task_title(action.chat),
                routedTo=action.routed_to,
                routedToAgent=routed_member.agent if routed_member is not None else None,
                routedToAgentId=self._agent_ids.get(action.routed_to),
                routedToName=self._party(action.routed_to),
                policyScope=action.policy_scope,
                toolName=action.tool_name,
                inputSummary=action.summary,
            ),
        )

    def _action_resolved(self, fact: Fact, action: ApprovalResolved) -> Envelope | None:
        record = self.state.approvals.get(action.approval)
        if record is None or record.decision is None:
            return None  # nothing was pending under this id: the fold ignored the fact
        request = record.request
        member = self.state.members.get(request.chat)
        approved = record.decision is ApprovalDecision.APPROVED
        control = _DECISION_CONTROL[record.decision]
        return self._envelope(
            fact,
            EventType.ACTION_RESOLVED,
            owner=Owner.POLICY,
            scope=Scope.ACTION_REQUEST,
            phase=Phase.ACTING if approved else Phase.CANCELLED,
            surface=Surface.HITL,
            persistence=Persistence.ARCHIVE,
            control=control,
            thread_id=request.chat,
            turn_id=request.turn_id,
            task_id=member.task if member is not None else None,
            agent_id=self._agent_ids.get(request.chat),
            tool_call_id=request.tool_call_id,
            action_id=action.approval,
            payload={
                "decision": record.decision.value,
                "resolvedBy": action.resolved_by,
                "resolvedByName": self._party(action.resolved_by, action.principal),
                **compact(resolvedByAgentId=self._agent_ids.get(action.resolved_by)),
                "toolName": request.tool_name,
                "requestedBy": request.requested_by,
                **compact(requestedByName=self._name_of(request.chat)),
                **({"principal": action.principal} if action.principal is not None else {}),
            },
        )

    def _name_of(self, chat: str) -> str | None:
        """A member as people are shown it: ``analyst #3``, the number of its ``agentId``."""
        member = self.state.members.get(chat)
        agent_id = self._agent_ids.get(chat)
        if member is None or agent_id is None:
            return None
        return f"{member.agent} #{agent_id.rpartition('#')[2]}"

    def _party(self, party: str, principal: str | None = None) -> str:
        """Who an approval is routed to or decided by (see :func:`party_name`)."""
        if party == USER:
            return principal or USER
        return self._name_of(party) or party

    def _task_title(self, chat: str) -> str | None:
        member = self.state.members.get(chat)
        task = self.state.tasks.get(member.task) if member is not None else None
        return task.title if task is not None else None

    # ── questions ──────────────────────────────────────────────────────────

    def _input_required(self, fact: Fact, action: ChatInputRequestedAction) -> list[Envelope]:
        """A member asks a question: ``action.required`` for the person who answers."""
        request = action.request
        key = (fact.channel, request.id)
        if key in self._open_inputs:
            return []  # re-sent: the card is up already
        self._open_inputs.add(key)
        member = self.state.members[fact.channel]
        chat_state = self.state.chats.get(fact.channel)
        turn = chat_state.active_turn if chat_state is not None else None
        parent = self._lineage.get(fact.channel)
        questions = known_questions(request.questions)  # what a client can show
        free_text = all(q.kind == "text" for q in questions)
        return [
            self._envelope(
                fact,
                EventType.ACTION_REQUIRED,
                owner=Owner.ACTION,
                scope=Scope.ACTION_REQUEST,
                phase=Phase.WAITING,
                surface=Surface.HITL,
                persistence=Persistence.SNAPSHOT,
                control=Control.ANSWER,
                thread_id=fact.channel,
                turn_id=turn.id if turn is not None else None,
                task_id=member.task,
                agent_id=self._agent_ids.get(fact.channel),
                parent_session_id=self.session if parent is not None else None,
                parent_thread_id=parent[0] if parent is not None else None,
                tool_call_id=tool_call_of_request(request.id),  # what an answer names
                action_id=request.id,
                topology=Topology.REMOTE_TEAMMATE if member.remote is not None else None,
                payload=compact(
                    actionType=(
                        ActionType.CLARIFICATION if free_text else ActionType.STRUCTURED_INPUT
                    ).value,
                    requestedBy=member.agent,
                    requestedByAgentId=self._agent_ids.get(fact.channel),
                    requestedByName=self._name_of(fact.channel),
                    taskTitle=self._task_title(fact.channel),
                    routedTo="user",
                    routedToName="user",
                    # A remote teammate's question is its remote task's input_required.
                    runtimeEntity="external_task" if member.remote is not None else None,
                    cardRef=card_ref(member.remote) if member.remote is not None else None,
                    needs=_remote_needs(turn) if member.remote is not None else None,
                    message=_text(request.message),
                    questions=[
                        compact(
                            id=q.id,
                            kind=q.kind,
                            message=_text(q.message),
                            options=[o.id for o in getattr(q, "options", None) or ()] or None,
                        )
                        for q in questions
                    ],
                ),
            )
        ]

    def _input_resolved(self, fact: Fact, action: ChatInputCompletedAction) -> list[Envelope]:
        """The answer was recorded in the member's chat: ``action.resolved``."""
        key = (fact.channel, action.request_id)
        if key not in self._open_inputs:
            return []
        self._open_inputs.discard(key)
        member = self.state.members[fact.channel]
        accepted = action.response is ChatInputResponseKind.ACCEPT
        return [
            self._envelope(
                fact,
                EventType.ACTION_RESOLVED,
                owner=Owner.ACTION,
                scope=Scope.ACTION_REQUEST,
                phase=Phase.ACTING if accepted else Phase.CANCELLED,
                surface=Surface.HITL,
                persistence=Persistence.ARCHIVE,
                control=Control.ANSWER,
                thread_id=fact.channel,
                task_id=member.task,
                agent_id=self._agent_ids.get(fact.channel),
                action_id=action.request_id,
                payload={
                    "response": action.response.value,
                    "requestedBy": member.agent,
                    **compact(
                        requestedByName=self._name_of(fact.channel),
                        answer=_answer_of(action) if accepted else None,
                    ),
                },
            )
        ]


def _text(value: object) -> str | None:
    """A StringOrMarkdown as plain text (the markdown source)."""
    if value is None or isinstance(value, str):
        return value
    markdown = getattr(value, "markdown", None)
    return markdown if isinstance(markdown, str) else str(value)


def _answer_of(action: ChatInputCompletedAction) -> str | None:
    """What was answered, as the asking model reads it (one question per request: the
    answers of several are joined)."""
    values = [
        answer_text(answer.value)
        for answer in (action.answers or {}).values()
        if isinstance(answer, ChatInputAnswered)
    ]
    return "; ".join(values) if values else None


def _remote_needs(turn: ActiveTurn | None) -> str:
    """What a remote teammate's question asks for: ``auth`` when its remote task's last
    recorded state is ``auth_required`` (the operator names a credential), else ``input``."""
    for part in reversed(turn.response_parts if turn is not None else ()):
        remote = remote_task_of(part)
        if remote is not None:
            return "auth" if remote.get("state") == "auth_required" else "input"
    return "input"
