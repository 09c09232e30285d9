"""AHP actions of the root, session and chat channels, and the envelope that carries them.

One frozen class per ``$defs`` entry of ``actions.schema.json``, each with its ``type`` as a
``Literal`` field, so ``action.type`` works on every action. The unions:

* :data:`ChatAction`: every ``chat/*`` action. ``chat/toolCallConfirmed`` has two classes,
  :class:`ChatToolCallApprovedAction` and :class:`ChatToolCallDeniedAction`, told apart by
  ``approved`` (:data:`ChatToolCallConfirmedAction`).
* :data:`SessionAction`: every ``session/*`` action.
* :data:`RootAction`: every ``root/*`` action (the root channel's, see
  :mod:`orchestrator.ahp._root_reducer`).
* :data:`StateAction`: all three, plus :class:`UnknownAction`, which keeps the JSON object of
  any ``type`` this project does not model (terminal, changeset, annotations and
  resource-watch actions, and actions of later protocol versions), so that it decodes without
  error and re-encodes verbatim. Reducers treat it as a no-op.

:class:`ActionEnvelope` wraps a state action with its channel and server sequence. The wire
format lives in :mod:`orchestrator.ahp._wire`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeAlias

import attrs

from ._unknown import UnknownVariant, WireObject
from .state import (
    AgentInfo,
    Changeset,
    ChatInputAnswer,
    ChatInputRequest,
    ChatInputResponseKind,
    ChatInteractivity,
    ChatOrigin,
    ChatSummary,
    ConfirmationOption,
    Customization,
    ErrorInfo,
    FileEditCollection,
    McpAuthRequirement,
    McpServerState,
    Message,
    PendingMessageKind,
    ResponsePart,
    SessionActiveClient,
    SessionInputRequest,
    SessionStatus,
    StringOrMarkdown,
    TerminalInfo,
    ToolCallCancellationReason,
    ToolCallConfirmationReason,
    ToolCallContributor,
    ToolCallResult,
    ToolCallRiskAssessment,
    ToolDefinition,
    ToolInput,
    ToolResultContent,
    Turn,
    UsageInfo,
)

__all__ = [
    "ActionEnvelope",
    "ActionOrigin",
    "ChatAction",
    "ChatActivityChangedAction",
    "ChatDeltaAction",
    "ChatDraftChangedAction",
    "ChatErrorAction",
    "ChatInputAnswerChangedAction",
    "ChatInputCompletedAction",
    "ChatInputRequestedAction",
    "ChatPendingMessageRemovedAction",
    "ChatPendingMessageSetAction",
    "ChatQueuedMessagesReorderedAction",
    "ChatReasoningAction",
    "ChatResponsePartAction",
    "ChatSummaryChanges",
    "ChatToolCallApprovedAction",
    "ChatToolCallAuthRequiredAction",
    "ChatToolCallAuthResolvedAction",
    "ChatToolCallCompleteAction",
    "ChatToolCallConfirmedAction",
    "ChatToolCallContentChangedAction",
    "ChatToolCallDeltaAction",
    "ChatToolCallDeniedAction",
    "ChatToolCallReadyAction",
    "ChatToolCallResultConfirmedAction",
    "ChatToolCallStartAction",
    "ChatTruncatedAction",
    "ChatTurnCancelledAction",
    "ChatTurnCompleteAction",
    "ChatTurnStartedAction",
    "ChatTurnsLoadedAction",
    "ChatUsageAction",
    "ChatWorkingDirectoryRemovedAction",
    "ChatWorkingDirectorySetAction",
    "RootAction",
    "RootActiveSessionsChangedAction",
    "RootAgentsChangedAction",
    "RootConfigChangedAction",
    "RootTerminalsChangedAction",
    "SessionAction",
    "SessionActiveClientRemovedAction",
    "SessionActiveClientSetAction",
    "SessionActivityChangedAction",
    "SessionChangesetsChangedAction",
    "SessionChatAddedAction",
    "SessionChatRemovedAction",
    "SessionChatUpdatedAction",
    "SessionConfigChangedAction",
    "SessionCreationFailedAction",
    "SessionCustomizationRemovedAction",
    "SessionCustomizationToggledAction",
    "SessionCustomizationUpdatedAction",
    "SessionCustomizationsChangedAction",
    "SessionDefaultChatChangedAction",
    "SessionInputNeededRemovedAction",
    "SessionInputNeededSetAction",
    "SessionIsArchivedChangedAction",
    "SessionIsReadChangedAction",
    "SessionMcpServerStartRequestedAction",
    "SessionMcpServerStateChangedAction",
    "SessionMcpServerStopRequestedAction",
    "SessionMetaChangedAction",
    "SessionReadyAction",
    "SessionServerToolsChangedAction",
    "SessionTitleChangedAction",
    "SessionWorkingDirectoryRemovedAction",
    "SessionWorkingDirectorySetAction",
    "StateAction",
    "UnknownAction",
]

# ─── Session actions ─────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class SessionReadyAction(WireObject):
    """The session backend initialized."""

    type: Literal["session/ready"] = "session/ready"


@attrs.frozen(kw_only=True)
class SessionCreationFailedAction(WireObject):
    """The session backend failed to initialize."""

    type: Literal["session/creationFailed"] = "session/creationFailed"
    error: ErrorInfo


@attrs.frozen(kw_only=True)
class SessionChatAddedAction(WireObject):
    """A chat joined the session's catalog (upsert by ``summary.resource``)."""

    type: Literal["session/chatAdded"] = "session/chatAdded"
    summary: ChatSummary


@attrs.frozen(kw_only=True)
class SessionChatRemovedAction(WireObject):
    """A chat left the session's catalog."""

    type: Literal["session/chatRemoved"] = "session/chatRemoved"
    chat: str


@attrs.frozen(kw_only=True)
class ChatSummaryChanges(WireObject):
    """The changed fields of a :class:`ChatSummary`; ``None`` means unchanged."""

    # Invariant: self.resource is None (identity never changes; receivers ignore it)
    resource: str | None = None
    title: str | None = None
    status: SessionStatus | None = None
    activity: str | None = None
    modified_at: str | None = None
    origin: ChatOrigin | None = None
    interactivity: ChatInteractivity | None = None
    working_directories: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class SessionChatUpdatedAction(WireObject):
    """Some summary fields of one chat changed (no-op for an unknown chat)."""

    type: Literal["session/chatUpdated"] = "session/chatUpdated"
    chat: str
    changes: ChatSummaryChanges


@attrs.frozen(kw_only=True)
class SessionDefaultChatChangedAction(WireObject):
    """The chat that receives session-addressed input changed (``None`` clears it)."""

    type: Literal["session/defaultChatChanged"] = "session/defaultChatChanged"
    default_chat: str | None = None


@attrs.frozen(kw_only=True)
class SessionTitleChangedAction(WireObject):
    """The session title changed."""

    type: Literal["session/titleChanged"] = "session/titleChanged"
    title: str


@attrs.frozen(kw_only=True)
class SessionIsReadChangedAction(WireObject):
    """The session's read flag changed."""

    type: Literal["session/isReadChanged"] = "session/isReadChanged"
    is_read: bool


@attrs.frozen(kw_only=True)
class SessionIsArchivedChangedAction(WireObject):
    """The session's archived flag changed."""

    type: Literal["session/isArchivedChanged"] = "session/isArchivedChanged"
    is_archived: bool


@attrs.frozen(kw_only=True)
class SessionActivityChangedAction(WireObject):
    """The session's activity text changed (``None`` clears it)."""

    type: Literal["session/activityChanged"] = "session/activityChanged"
    activity: str | None = None


@attrs.frozen(kw_only=True)
class SessionChangesetsChangedAction(WireObject):
    """The changeset catalogue changed (``None`` clears it)."""

    type: Literal["session/changesetsChanged"] = "session/changesetsChanged"
    changesets: tuple[Changeset, ...] | None = None


@attrs.frozen(kw_only=True)
class SessionServerToolsChangedAction(WireObject):
    """The server's tools changed (full replacement)."""

    type: Literal["session/serverToolsChanged"] = "session/serverToolsChanged"
    tools: tuple[ToolDefinition, ...]


@attrs.frozen(kw_only=True)
class SessionActiveClientSetAction(WireObject):
    """An active client was added or updated (matched by ``client_id``)."""

    type: Literal["session/activeClientSet"] = "session/activeClientSet"
    active_client: SessionActiveClient


@attrs.frozen(kw_only=True)
class SessionActiveClientRemovedAction(WireObject):
    """An active client left the session."""

    type: Literal["session/activeClientRemoved"] = "session/activeClientRemoved"
    client_id: str


@attrs.frozen(kw_only=True)
class SessionWorkingDirectorySetAction(WireObject):
    """A working directory was granted to the session's agent."""

    type: Literal["session/workingDirectorySet"] = "session/workingDirectorySet"
    directory: str


@attrs.frozen(kw_only=True)
class SessionWorkingDirectoryRemovedAction(WireObject):
    """A working directory was revoked from the session's agent."""

    type: Literal["session/workingDirectoryRemoved"] = "session/workingDirectoryRemoved"
    directory: str


@attrs.frozen(kw_only=True)
class SessionInputNeededSetAction(WireObject):
    """A session-level input request was added or updated (matched by ``id``)."""

    type: Literal["session/inputNeededSet"] = "session/inputNeededSet"
    request: SessionInputRequest


@attrs.frozen(kw_only=True)
class SessionInputNeededRemovedAction(WireObject):
    """A session-level input request was removed."""

    type: Literal["session/inputNeededRemoved"] = "session/inputNeededRemoved"
    id: str


@attrs.frozen(kw_only=True)
class SessionCustomizationsChangedAction(WireObject):
    """The session's customizations changed (full replacement)."""

    type: Literal["session/customizationsChanged"] = "session/customizationsChanged"
    customizations: tuple[Customization, ...]


@attrs.frozen(kw_only=True)
class SessionCustomizationToggledAction(WireObject):
    """A container or child customization was enabled or disabled."""

    type: Literal["session/customizationToggled"] = "session/customizationToggled"
    id: str
    enabled: bool


@attrs.frozen(kw_only=True)
class SessionCustomizationUpdatedAction(WireObject):
    """A top-level customization was upserted (matched by id)."""

    type: Literal["session/customizationUpdated"] = "session/customizationUpdated"
    customization: Customization


@attrs.frozen(kw_only=True)
class SessionCustomizationRemovedAction(WireObject):
    """A customization was removed by id."""

    type: Literal["session/customizationRemoved"] = "session/customizationRemoved"
    id: str


@attrs.frozen(kw_only=True)
class SessionMcpServerStateChangedAction(WireObject):
    """An MCP server customization changed state (``channel`` is replaced, ``None`` clears)."""

    type: Literal["session/mcpServerStateChanged"] = "session/mcpServerStateChanged"
    id: str
    state: McpServerState
    channel: str | None = None


@attrs.frozen(kw_only=True)
class SessionMcpServerStartRequestedAction(WireObject):
    """A client asks the host to start or restart an MCP server."""

    type: Literal["session/mcpServerStartRequested"] = "session/mcpServerStartRequested"
    id: str


@attrs.frozen(kw_only=True)
class SessionMcpServerStopRequestedAction(WireObject):
    """A client asks the host to stop an MCP server."""

    type: Literal["session/mcpServerStopRequested"] = "session/mcpServerStopRequested"
    id: str


@attrs.frozen(kw_only=True)
class SessionConfigChangedAction(WireObject):
    """Config values changed: merged, or replacing all when ``replace``."""

    type: Literal["session/configChanged"] = "session/configChanged"
    config: Mapping[str, Any]
    replace: bool | None = None


@attrs.frozen(kw_only=True)
class SessionMetaChangedAction(WireObject):
    """The session's ``_meta`` was replaced (``None`` clears it)."""

    type: Literal["session/metaChanged"] = "session/metaChanged"
    meta: Mapping[str, Any] | None = None


SessionAction: TypeAlias = (
    SessionReadyAction
    | SessionCreationFailedAction
    | SessionChatAddedAction
    | SessionChatRemovedAction
    | SessionChatUpdatedAction
    | SessionDefaultChatChangedAction
    | SessionTitleChangedAction
    | SessionIsReadChangedAction
    | SessionIsArchivedChangedAction
    | SessionActivityChangedAction
    | SessionChangesetsChangedAction
    | SessionServerToolsChangedAction
    | SessionActiveClientSetAction
    | SessionActiveClientRemovedAction
    | SessionWorkingDirectorySetAction
    | SessionWorkingDirectoryRemovedAction
    | SessionInputNeededSetAction
    | SessionInputNeededRemovedAction
    | SessionCustomizationsChangedAction
    | SessionCustomizationToggledAction
    | SessionCustomizationUpdatedAction
    | SessionCustomizationRemovedAction
    | SessionMcpServerStateChangedAction
    | SessionMcpServerStartRequestedAction
    | SessionMcpServerStopRequestedAction
    | SessionConfigChangedAction
    | SessionMetaChangedAction
)
"""Every ``session/*`` action, discriminated on ``type``."""


# ─── Chat actions ────────────────────────────────────────────────────────────
# Tool-call actions all carry turn_id and tool_call_id (the schema's ToolCallActionBase) and
# are no-ops when no tool call with that id exists in the active turn.


@attrs.frozen(kw_only=True)
class ChatTurnStartedAction(WireObject):
    """A message was sent and a new turn starts."""

    type: Literal["chat/turnStarted"] = "chat/turnStarted"
    turn_id: str
    started_at: str
    message: Message
    # Invariant: when set, it names the steering message or a queued message, which is removed
    queued_message_id: str | None = None
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ChatDeltaAction(WireObject):
    """A chunk of text appended to the markdown part ``part_id``."""

    type: Literal["chat/delta"] = "chat/delta"
    turn_id: str
    part_id: str
    content: str
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ChatResponsePartAction(WireObject):
    """A response part appended to the active turn."""

    type: Literal["chat/responsePart"] = "chat/responsePart"
    turn_id: str
    part: ResponsePart
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ChatToolCallStartAction(WireObject):
    """A tool call begins; its parameters are streaming (state ``streaming``)."""

    type: Literal["chat/toolCallStart"] = "chat/toolCallStart"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None
    tool_name: str
    display_name: str
    intention: str | None = None
    contributor: ToolCallContributor | None = None


@attrs.frozen(kw_only=True)
class ChatToolCallDeltaAction(WireObject):
    """More streamed parameters (``content``) or a new progress message."""

    type: Literal["chat/toolCallDelta"] = "chat/toolCallDelta"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None
    content: str | None = None
    invocation_message: StringOrMarkdown | None = None


@attrs.frozen(kw_only=True)
class ChatToolCallReadyAction(WireObject):
    """Parameters are complete, or a running tool needs re-confirmation.

    With ``confirmed`` set the call was auto-confirmed and goes straight to ``running``;
    otherwise it waits in ``pending-confirmation``.
    """

    type: Literal["chat/toolCallReady"] = "chat/toolCallReady"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None
    contributor: ToolCallContributor | None = None
    intention: str | None = None
    invocation_message: StringOrMarkdown
    tool_input: ToolInput | None = None
    confirmation_title: StringOrMarkdown | None = None
    risk_assessment: ToolCallRiskAssessment | None = None
    edits: FileEditCollection | None = None
    editable: bool | None = None
    confirmed: ToolCallConfirmationReason | None = None
    options: tuple[ConfirmationOption, ...] | None = None


@attrs.frozen(kw_only=True)
class ChatToolCallApprovedAction(WireObject):
    """The client approved a pending tool call (``chat/toolCallConfirmed``, approved)."""

    type: Literal["chat/toolCallConfirmed"] = "chat/toolCallConfirmed"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None
    approved: Literal[True] = True
    confirmed: ToolCallConfirmationReason
    edited_tool_input: str | None = None
    selected_option_id: str | None = None


@attrs.frozen(kw_only=True)
class ChatToolCallDeniedAction(WireObject):
    """The client denied a pending tool call (``chat/toolCallConfirmed``, not approved)."""

    type: Literal["chat/toolCallConfirmed"] = "chat/toolCallConfirmed"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None
    approved: Literal[False] = False
    reason: Literal[ToolCallCancellationReason.DENIED, ToolCallCancellationReason.SKIPPED]
    user_suggestion: Message | None = None
    reason_message: StringOrMarkdown | None = None
    selected_option_id: str | None = None


ChatToolCallConfirmedAction: TypeAlias = ChatToolCallApprovedAction | ChatToolCallDeniedAction
"""``chat/toolCallConfirmed``, discriminated on ``approved``."""


@attrs.frozen(kw_only=True)
class ChatToolCallCompleteAction(WireObject):
    """The tool finished: ``completed``, or ``pending-result-confirmation`` if requested."""

    type: Literal["chat/toolCallComplete"] = "chat/toolCallComplete"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None
    result: ToolCallResult
    requires_result_confirmation: bool | None = None


@attrs.frozen(kw_only=True)
class ChatToolCallResultConfirmedAction(WireObject):
    """The client approved or denied a tool's result."""

    type: Literal["chat/toolCallResultConfirmed"] = "chat/toolCallResultConfirmed"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None
    approved: bool


@attrs.frozen(kw_only=True)
class ChatToolCallContentChangedAction(WireObject):
    """Partial content of a running tool call (replaces the previous partial content)."""

    type: Literal["chat/toolCallContentChanged"] = "chat/toolCallContentChanged"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None
    content: tuple[ToolResultContent, ...]


@attrs.frozen(kw_only=True)
class ChatToolCallAuthRequiredAction(WireObject):
    """A running MCP tool call pauses until authentication (state ``auth-required``)."""

    type: Literal["chat/toolCallAuthRequired"] = "chat/toolCallAuthRequired"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None
    auth: McpAuthRequirement


@attrs.frozen(kw_only=True)
class ChatToolCallAuthResolvedAction(WireObject):
    """The authentication blocking a tool call was resolved; it runs again."""

    type: Literal["chat/toolCallAuthResolved"] = "chat/toolCallAuthResolved"
    turn_id: str
    tool_call_id: str
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ChatTurnCompleteAction(WireObject):
    """The turn finished; the assistant is idle."""

    type: Literal["chat/turnComplete"] = "chat/turnComplete"
    turn_id: str
    duration: float
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ChatTurnCancelledAction(WireObject):
    """The turn was aborted."""

    type: Literal["chat/turnCancelled"] = "chat/turnCancelled"
    turn_id: str
    duration: float
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ChatErrorAction(WireObject):
    """The turn failed with an error."""

    type: Literal["chat/error"] = "chat/error"
    turn_id: str
    duration: float
    error: ErrorInfo
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ChatActivityChangedAction(WireObject):
    """The chat's activity text changed (``None`` clears it)."""

    type: Literal["chat/activityChanged"] = "chat/activityChanged"
    activity: str | None = None


@attrs.frozen(kw_only=True)
class ChatWorkingDirectorySetAction(WireObject):
    """A working directory was added to the chat's subset."""

    type: Literal["chat/workingDirectorySet"] = "chat/workingDirectorySet"
    directory: str


@attrs.frozen(kw_only=True)
class ChatWorkingDirectoryRemovedAction(WireObject):
    """A working directory was removed from the chat's subset."""

    type: Literal["chat/workingDirectoryRemoved"] = "chat/workingDirectoryRemoved"
    directory: str


@attrs.frozen(kw_only=True)
class ChatUsageAction(WireObject):
    """Token usage of the turn."""

    type: Literal["chat/usage"] = "chat/usage"
    turn_id: str
    usage: UsageInfo
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ChatReasoningAction(WireObject):
    """A chunk of reasoning appended to the reasoning part ``part_id``."""

    type: Literal["chat/reasoning"] = "chat/reasoning"
    turn_id: str
    part_id: str
    content: str
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ChatTruncatedAction(WireObject):
    """History is cut after ``turn_id`` (all turns when ``None``); the active turn is dropped."""

    type: Literal["chat/truncated"] = "chat/truncated"
    turn_id: str | None = None


@attrs.frozen(kw_only=True)
class ChatTurnsLoadedAction(WireObject):
    """Older completed turns, oldest first, prepended to the chat's turns."""

    type: Literal["chat/turnsLoaded"] = "chat/turnsLoaded"
    turns: tuple[Turn, ...]
    turns_next_cursor: str | None = None


@attrs.frozen(kw_only=True)
class ChatPendingMessageSetAction(WireObject):
    """A steering or queued message was created or replaced."""

    type: Literal["chat/pendingMessageSet"] = "chat/pendingMessageSet"
    kind: PendingMessageKind
    id: str
    message: Message


@attrs.frozen(kw_only=True)
class ChatPendingMessageRemovedAction(WireObject):
    """A steering or queued message was removed."""

    type: Literal["chat/pendingMessageRemoved"] = "chat/pendingMessageRemoved"
    kind: PendingMessageKind
    id: str


@attrs.frozen(kw_only=True)
class ChatQueuedMessagesReorderedAction(WireObject):
    """Queued messages reordered; ids not listed keep their order after the listed ones."""

    type: Literal["chat/queuedMessagesReordered"] = "chat/queuedMessagesReordered"
    order: tuple[str, ...]


@attrs.frozen(kw_only=True)
class ChatDraftChangedAction(WireObject):
    """The chat's draft input changed (``None`` clears it)."""

    type: Literal["chat/draftChanged"] = "chat/draftChanged"
    draft: Message | None = None


@attrs.frozen(kw_only=True)
class ChatInputRequestedAction(WireObject):
    """An input request was created or replaced."""

    type: Literal["chat/inputRequested"] = "chat/inputRequested"
    request: ChatInputRequest


@attrs.frozen(kw_only=True)
class ChatInputAnswerChangedAction(WireObject):
    """One answer of an input request changed (``None`` clears the draft)."""

    type: Literal["chat/inputAnswerChanged"] = "chat/inputAnswerChanged"
    request_id: str
    question_id: str
    answer: ChatInputAnswer | None = None


@attrs.frozen(kw_only=True)
class ChatInputCompletedAction(WireObject):
    """An input request was accepted, declined or cancelled."""

    type: Literal["chat/inputCompleted"] = "chat/inputCompleted"
    request_id: str
    response: ChatInputResponseKind
    answers: Mapping[str, ChatInputAnswer] | None = None


ChatAction: TypeAlias = (
    ChatTurnStartedAction
    | ChatDeltaAction
    | ChatResponsePartAction
    | ChatToolCallStartAction
    | ChatToolCallDeltaAction
    | ChatToolCallReadyAction
    | ChatToolCallApprovedAction
    | ChatToolCallDeniedAction
    | ChatToolCallCompleteAction
    | ChatToolCallResultConfirmedAction
    | ChatToolCallContentChangedAction
    | ChatToolCallAuthRequiredAction
    | ChatToolCallAuthResolvedAction
    | ChatTurnCompleteAction
    | ChatTurnCancelledAction
    | ChatErrorAction
    | ChatActivityChangedAction
    | ChatWorkingDirectorySetAction
    | ChatWorkingDirectoryRemovedAction
    | ChatUsageAction
    | ChatReasoningAction
    | ChatTruncatedAction
    | ChatTurnsLoadedAction
    | ChatPendingMessageSetAction
    | ChatPendingMessageRemovedAction
    | ChatQueuedMessagesReorderedAction
    | ChatDraftChangedAction
    | ChatInputRequestedAction
    | ChatInputAnswerChangedAction
    | ChatInputCompletedAction
)
"""Every ``chat/*`` action, discriminated on ``type`` (and ``approved``)."""


# ─── Root actions ────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class RootAgentsChangedAction(WireObject):
    """The agent providers (or their models) changed: ``agents`` replaces the list."""

    type: Literal["root/agentsChanged"] = "root/agentsChanged"
    agents: tuple[AgentInfo, ...]


@attrs.frozen(kw_only=True)
class RootActiveSessionsChangedAction(WireObject):
    """The number of active sessions changed."""

    type: Literal["root/activeSessionsChanged"] = "root/activeSessionsChanged"
    active_sessions: int


@attrs.frozen(kw_only=True)
class RootTerminalsChangedAction(WireObject):
    """The known terminals changed: ``terminals`` replaces the list."""

    type: Literal["root/terminalsChanged"] = "root/terminalsChanged"
    terminals: tuple[TerminalInfo, ...]


@attrs.frozen(kw_only=True)
class RootConfigChangedAction(WireObject):
    """Configuration values changed: merged into the current ones, or replacing them."""

    type: Literal["root/configChanged"] = "root/configChanged"
    config: Mapping[str, Any]
    replace: bool | None = None


RootAction: TypeAlias = (
    RootAgentsChangedAction
    | RootActiveSessionsChangedAction
    | RootTerminalsChangedAction
    | RootConfigChangedAction
)
"""Every ``root/*`` action, discriminated on ``type``."""


# ─── State actions and their envelope ────────────────────────────────────────


@attrs.frozen(kw_only=True)
class UnknownAction(UnknownVariant):
    """An action of a ``type`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "type"

    @property
    def type(self) -> str:
        """The action's ``type`` as sent."""
        return self.tag


StateAction: TypeAlias = ChatAction | SessionAction | RootAction | UnknownAction
"""Any action of a state channel; types we do not model decode as :class:`UnknownAction`."""


@attrs.frozen(kw_only=True)
class ActionOrigin(WireObject):
    """The client that dispatched an action, with its own sequence number."""

    client_id: str
    client_seq: int


@attrs.frozen(kw_only=True)
class ActionEnvelope(WireObject):
    """A state action as broadcast on ``channel``, numbered by the server.

    ``origin`` is absent for server-originated actions; ``rejection_reason`` is set when the
    server refused a client's action (the state is then unchanged).
    """

    channel: str
    action: StateAction
    server_seq: int
    origin: ActionOrigin | None = None
    rejection_reason: str | None = None
