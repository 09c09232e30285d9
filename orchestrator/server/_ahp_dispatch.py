"""AHP ``dispatchAction``: a client's actions on a chat, carried out on its live session.

``dispatchAction`` (the mapping of client actions onto the live session):

=============================================  ==============================================
client action (chat channel)                   carried out as
=============================================  ==============================================
``chat/turnStarted`` (coordinator, idle)       :meth:`LiveSession.prompt` (queued, taken up
                                               at once)
``chat/pendingMessageSet`` queued / steering   :meth:`LiveSession.queue` / ``steer``
``chat/toolCallConfirmed`` approve / deny      :meth:`LiveSession.decide` of the approval of
                                               that tool call
``chat/inputCompleted``                        :meth:`LiveSession.answer_input`
``chat/turnCancelled``                         ``cancel_turn`` (coordinator, forked chat,
                                               side chat) / ``cancel_worker`` (a worker)
=============================================  ==============================================

Each is first checked:

- the client may act (operator);
- the chat is live and not hidden;
- messages are user messages and go to a chat whose interactivity is ``full``;
- the chat's validator (:func:`~orchestrator.ahp._validate.validate_chat_action`) accepts the
  action.

A refusal is echoed as the client's envelope with ``rejectionReason``. A ``dispatchAction``
sent with an id also gets an error response. An accepted action's effect comes as the facts the
runtime records. Before carrying the action out, the dispatcher tells the live session which fact
will carry it (:meth:`LiveSession.expect_origin`: the turn started, the tool call confirmed...).
That fact is recorded with the client's ``origin``. So every subscriber of the chat, and a replay
from the journal, sees the same origin.

An action for a channel that does not exist is ignored: no echo, no rejection. A channel does
not exist when no live session or chat has that URI, or the journal knows no session of that URI.
A hidden chat counts as not existing. A ``dispatchAction`` sent with an id still gets its error
response, as every JSON-RPC request gets an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

import attrs
import trio

from orchestrator.ahp import validate_chat_action
from orchestrator.ahp.actions import (
    ActionEnvelope,
    ActionOrigin,
    ChatInputCompletedAction,
    ChatPendingMessageSetAction,
    ChatToolCallApprovedAction,
    ChatToolCallDeniedAction,
    ChatTurnCancelledAction,
    ChatTurnStartedAction,
    StateAction,
)
from orchestrator.ahp.commands import ROOT, DispatchActionParams, ErrorCode
from orchestrator.ahp.state import (
    ChatInputAnswered,
    ChatInputBooleanAnswerValue,
    ChatInputSelectedAnswerValue,
    ChatInputSelectedManyAnswerValue,
    ChatInputTextAnswerValue,
    ChatInteractivity,
    ChatState,
    MessageKind,
    UnknownChatInputAnswerValue,
    known_questions,
)
from orchestrator.base import IllegalTransitionError, RpcError, RunError
from orchestrator.core import TeamState, is_forked_chat, open_questions
from orchestrator.protocols import notification_frame
from orchestrator.sessions import CHAT_PREFIX, SESSION_PREFIX, ExpectedAction, LiveSession

from ._auth import Permission, Principal

__all__: list[str] = []

#: Seconds a confirmation waits for the approval request of its tool call to be recorded.
APPROVAL_WAIT: Final = 5.0


class _UnknownChannelError(Exception):
    """A dispatched action names a channel that does not exist: it is ignored."""

    def __init__(self, reason: str, code: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


class _RefusedError(Exception):
    """A dispatched action refused: ``reason`` for the echo, ``code`` for a request's error."""

    def __init__(self, reason: str, code: int = ErrorCode.INVALID_PARAMS) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


class DispatchHost(Protocol):
    """What dispatching a client's action asks of the daemon: the session it is for."""

    def live(self, session: str) -> LiveSession | None: ...

    async def journal_knows(self, session: str) -> bool: ...


class ActionDispatcher:
    """``dispatchAction`` for one connection: checks a client's action and carries it out on
    its live session, which records the client's origin with the fact that carries it."""

    def __init__(
        self,
        daemon: DispatchHost,
        principal: Principal,
        *,
        emit: Callable[[str], None],
        live_channel: Callable[[str], tuple[LiveSession | None, bool]],
    ) -> None:
        """``emit``: queue a frame for the client; ``live_channel``: the live session of a
        session or chat URI, and whether it is a chat's (see ``AhpSocket._live_channel``)."""
        self.daemon = daemon
        self.principal = principal
        self._emit = emit
        self._live_channel = live_channel

    async def dispatch(
        self, params: DispatchActionParams, *, client_id: str, as_request: bool
    ) -> None:
        """Carry out a client's ``dispatchAction``.

        A refusal is echoed to the client with its ``rejectionReason``. For a request, it is
        also raised as an :class:`RpcError`. An action for a channel that does not exist is
        ignored. For a request, that raises an :class:`RpcError`, with no echo.
        """
        origin = ActionOrigin(client_id=client_id, client_seq=params.client_seq)
        live: LiveSession | None = None
        try:
            live = await self._dispatch_target(params.channel)
            if not self.principal.may(Permission.OPERATE):
                raise _RefusedError(
                    f"{self.principal.name} may watch, not act (an operator token may)",
                    ErrorCode.PERMISSION_DENIED,
                )
            await self._carry_out(live, params.channel, params.action, origin)
        except _UnknownChannelError as unknown:
            if as_request:
                raise RpcError(unknown.code, unknown.reason) from None
        except _RefusedError as refusal:
            seq = live.state.last_sequence if live is not None else 0
            echo = ActionEnvelope(
                channel=params.channel,
                action=params.action,
                server_seq=seq,
                origin=origin,
                rejection_reason=refusal.reason,
            )
            self._emit(notification_frame("action", echo))
            if as_request:
                data: dict[str, object] | None = (
                    {} if refusal.code == ErrorCode.PERMISSION_DENIED else None
                )
                raise RpcError(refusal.code, refusal.reason, data=data) from None

    async def _dispatch_target(self, channel: str) -> LiveSession:
        """The live session of the chat ``channel``; :class:`_UnknownChannelError` if there
        is no such channel, :class:`_RefusedError` if it takes no client actions."""
        if channel == ROOT:
            raise _RefusedError(
                "the root channel is the host's: it changes as sessions come and go, and "
                "takes no root actions from clients"
            )
        if channel.startswith(SESSION_PREFIX):
            if self.daemon.live(channel) is None and not await self.daemon.journal_knows(channel):
                raise _UnknownChannelError(f"no session {channel}", ErrorCode.SESSION_NOT_FOUND)
            if self.daemon.live(channel) is None:
                raise _RefusedError(
                    f"session {channel} has ended: it takes no actions",
                    ErrorCode.SESSION_NOT_FOUND,
                )
            raise _RefusedError(
                "session actions are not taken from clients on this host: the team's runtime "
                "keeps the session channel"
            )
        if channel == ROOT:
            raise _RefusedError("root actions are not taken from clients on this host")
        live, _ = self._live_channel(channel) if channel.startswith(CHAT_PREFIX) else (None, 0)
        if live is None:
            # A hidden chat, or a chat of a session that has ended, is not a channel a client
            # can subscribe to either: as if it did not exist.
            raise _UnknownChannelError(f"no chat {channel} in a live session", ErrorCode.NOT_FOUND)
        return live

    async def _carry_out(
        self, live: LiveSession, chat: str, action: StateAction, origin: ActionOrigin
    ) -> None:
        state = live.state.chats[chat]
        coordinator = live.state.coordinator_chat()
        forked = is_forked_chat(live.state, chat)  # a client's message is its next turn
        if isinstance(action, ChatTurnStartedAction | ChatPendingMessageSetAction):
            _check_user_message(state, action)
        try:
            if isinstance(action, _DISPATCHABLE):
                validate_chat_action(state, action, channel=chat)
        except IllegalTransitionError as exc:
            code = (
                ErrorCode.TURN_IN_PROGRESS
                if isinstance(action, ChatTurnStartedAction) and state.active_turn is not None
                else ErrorCode.INVALID_PARAMS
            )
            raise _RefusedError(exc.reason, code) from None
        try:
            match action:
                case ChatTurnStartedAction(message=message) if forked:
                    live.expect_origin(chat, ExpectedAction(kind="turn", key=message.text), origin)
                    await live.prompt_chat(chat, message.text)
                case ChatPendingMessageSetAction(kind="queued", message=message) if forked:
                    live.expect_origin(
                        chat,
                        ExpectedAction(kind="pending", key=message.text, pending="queued"),
                        origin,
                    )
                    await live.prompt_chat(chat, message.text)
                case ChatTurnStartedAction(message=message):
                    if chat != coordinator:
                        raise _RefusedError(
                            "a new turn starts only in the coordinator chat; a worker takes "
                            "messages while it runs (chat/pendingMessageSet)"
                        )
                    live.expect_origin(chat, ExpectedAction(kind="turn", key=message.text), origin)
                    await live.prompt(message.text, task_id=None)
                case ChatPendingMessageSetAction(kind=kind, message=message):
                    live.expect_origin(
                        chat,
                        ExpectedAction(kind="pending", key=message.text, pending=kind),
                        origin,
                    )
                    if kind == "queued" and chat == coordinator:
                        await live.prompt(message.text, task_id=None)
                    elif kind == "queued":
                        await live.queue(chat, message.text)
                    else:
                        await live.steer(chat, message.text, principal=self.principal.name)
                case ChatToolCallApprovedAction() | ChatToolCallDeniedAction():
                    approval = await _approval_of(live, chat, action.tool_call_id)
                    live.expect_origin(
                        chat, ExpectedAction(kind="confirmation", key=action.tool_call_id), origin
                    )
                    await live.decide(
                        approval,
                        approved=isinstance(action, ChatToolCallApprovedAction),
                        principal=self.principal.name,
                    )
                case ChatInputCompletedAction():
                    text = _answer_text(live.state, chat, action)
                    live.expect_origin(
                        chat, ExpectedAction(kind="completion", key=action.request_id), origin
                    )
                    await live.answer_input(chat, action.request_id, text, response=action.response)
                case ChatTurnCancelledAction(turn_id=turn_id):
                    live.expect_origin(
                        chat, ExpectedAction(kind="cancellation", key=turn_id), origin
                    )
                    if chat == coordinator or forked:
                        # A forked chat's or side chat's turn ends alone; its chat goes on.
                        await live.cancel_turn(chat)
                    else:
                        await live.cancel_worker(chat)
                case _:
                    raise _RefusedError(
                        f"{action.type} is not taken from clients; they may dispatch "
                        f"{', '.join(sorted(_DISPATCHABLE_TYPES))}"
                    )
        except RunError as exc:
            live.forget_origin(origin)
            raise _RefusedError(str(exc)) from None
        except _RefusedError:
            live.forget_origin(origin)
            raise


_DISPATCHABLE: Final = (
    ChatTurnStartedAction,
    ChatPendingMessageSetAction,
    ChatToolCallApprovedAction,
    ChatToolCallDeniedAction,
    ChatInputCompletedAction,
    ChatTurnCancelledAction,
)
_DISPATCHABLE_TYPES: Final = frozenset(
    str(attrs.fields_dict(cls)["type"].default) for cls in _DISPATCHABLE
)


def _check_user_message(
    state: ChatState, action: ChatTurnStartedAction | ChatPendingMessageSetAction
) -> None:
    """User messages only, and only to a chat that takes them."""
    if action.message.origin.kind is not MessageKind.USER:
        raise _RefusedError(
            f"message.origin.kind: clients send user messages only, not "
            f"{action.message.origin.kind}"
        )
    interactivity = state.interactivity or ChatInteractivity.FULL
    if interactivity is not ChatInteractivity.FULL:
        raise _RefusedError(f"{state.resource} is {interactivity}: it takes no user messages")


async def _approval_of(live: LiveSession, chat: str, tool_call_id: str) -> str:
    """The pending approval of a tool call the validator found waiting for confirmation.

    The runtime records the approval request in the batch after the call's
    ``chat/toolCallReady``, and a client may answer as soon as it sees the latter: wait for
    the request (briefly; it is on its way).
    """
    with trio.move_on_after(APPROVAL_WAIT):
        while True:
            for record in live.state.pending_approvals():
                request = record.request
                if request.chat == chat and request.tool_call_id == tool_call_id:
                    return request.approval
            await trio.sleep(0.01)
    raise _RefusedError(f"tool call {tool_call_id!r} of {chat} waits for no approval")


def _answer_text(state: TeamState, chat: str, action: ChatInputCompletedAction) -> str:
    """The answer the runtime reads (as typed at a prompt) from a completed input request."""
    request = next(
        (r for c, r in open_questions(state) if c == chat and r.id == action.request_id), None
    )
    if request is None:
        raise _RefusedError(f"no open input request {action.request_id!r} in {chat}")
    if action.response != "accept":
        return ""
    answers = dict(request.answers or {}) | dict(action.answers or {})
    # The runtime asks one question of a kind it models (runtime._approvals).
    question = next(iter(known_questions(request.questions)), None)
    answer = answers.get(question.id) if question is not None else None
    if not isinstance(answer, ChatInputAnswered):
        raise _RefusedError(f"answers: no answer to question {question.id if question else '?'!r}")
    match answer.value:
        case ChatInputBooleanAnswerValue(value=flag):
            return "yes" if flag else "no"
        case ChatInputSelectedManyAnswerValue(value=chosen):
            return ", ".join(chosen)
        case ChatInputTextAnswerValue(value=text) | ChatInputSelectedAnswerValue(value=text):
            return text
        case UnknownChatInputAnswerValue(kind=kind):
            raise _RefusedError(f"answers: an answer of kind {kind!r} is not one we can read")
        case other:
            return str(other.value)
