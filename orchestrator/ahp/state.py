"""AHP state types of the root, session and chat channels.

The chat channel is ``ahp-chat:/<uuid>``, the session channel ``ahp-session:/<uuid>``, the root
channel ``ahp-root://``.

Plain frozen data, named after the ``$defs`` of ``state.schema.json``; the wire format (camelCase
keys, ``_meta``, discriminators, absent optionals) lives in :mod:`orchestrator.ahp._wire` and
nowhere else. What is here, top-down:

* **Chat channel**: :class:`ChatState` (full state) and :class:`ChatSummary` (its catalog entry);
  :data:`ChatOrigin` (user / fork / side-chat / tool); :class:`PendingMessage` (steering and
  queued); :class:`Turn` and :class:`ActiveTurn`; :class:`Message` and its
  :data:`MessageAttachment` kinds; :data:`ResponsePart` kinds; the tool-call state machine
  :data:`ToolCallState` (streaming → pending-confirmation → running ⇄ auth-required →
  pending-result-confirmation → completed, or cancelled), whose variants repeat their shared fields
  the way the schema flattens them; :data:`ToolResultContent` kinds, including
  :class:`ToolResultSubagentContent`; the input-request (elicitation) questions and answers.
* **Session channel**: :class:`SessionState` and :class:`SessionSummary`; active clients and tool
  definitions; :data:`Customization` (plugins, directories, MCP servers and their children) with
  :data:`McpServerState`; configuration schema and values; :data:`SessionInputRequest` (what the
  session is blocked on); changeset catalogue entries.
* **Root channel** (``ahp-root://``): :class:`RootState`, its :class:`AgentInfo` providers with
  their :class:`SessionModelInfo` models and :class:`AgentCapabilities`, :class:`TerminalInfo`
  entries and :class:`RootConfigState`.
* **Shared leaves**: :class:`SessionStatus` (an int bitset: unknown bits are kept),
  :data:`StringOrMarkdown`, :class:`ContentRef`, :class:`FileEdit`, :class:`UsageInfo`,
  :class:`ErrorInfo`, text positions and ranges.

Conventions:

- every optional field defaults to ``None`` (absent on the wire);
- sequences are tuples, except the two that grow with a team (an active turn's parts, the
  session's chats), which are :class:`~orchestrator.base._keyed.KeyedVector` values that compare
  equal to tuples;
- JSON objects of free form (``_meta``, config values) are ``Mapping[str, Any]`` and must not be
  mutated;
- a discriminated variant carries its tag as a ``Literal`` field with a default, so
  ``MarkdownResponsePart(id=..., content=...)`` is complete.

A JSON ``number`` that may be fractional is typed ``float`` and keeps the int a peer sent, so it
re-encodes unchanged.

Forward compatibility (:mod:`._unknown`): every model is a :class:`WireObject` and keeps the keys
it does not name in ``unknown_fields``; every open union lists an ``Unknown...`` variant (e.g.
:class:`UnknownResponsePart`) that keeps an object of a kind we do not model;
:class:`ToolCallRiskAssessmentKind` and :class:`ChildCustomizationType` are open enums. The
tool-call states are a closed union: their ``status`` is the lifecycle the reducers own.
:func:`known_questions` gives the questions a reader can show or answer.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeAlias

import attrs

from orchestrator.base import KeyedVector

from ._unknown import OpenStrEnum, UnknownVariant, WireObject

__all__ = [
    "ActiveTurn",
    "AgentCapabilities",
    "AgentCustomization",
    "AgentInfo",
    "AgentSelection",
    "AhpMcpUiHostCapabilities",
    "AhpMcpUiListChangedCapability",
    "AhpMcpUiSamplingCapability",
    "AnnotationsSummary",
    "ChangesSummary",
    "Changeset",
    "ChangesetCapabilities",
    "ChatCatalog",
    "ChatInputAnswer",
    "ChatInputAnswerValue",
    "ChatInputAnswered",
    "ChatInputBooleanAnswerValue",
    "ChatInputBooleanQuestion",
    "ChatInputMultiSelectQuestion",
    "ChatInputNumberAnswerValue",
    "ChatInputNumberQuestion",
    "ChatInputOption",
    "ChatInputQuestion",
    "ChatInputRequest",
    "ChatInputResponseKind",
    "ChatInputSelectedAnswerValue",
    "ChatInputSelectedManyAnswerValue",
    "ChatInputSingleSelectQuestion",
    "ChatInputSkipped",
    "ChatInputTextAnswerValue",
    "ChatInputTextQuestion",
    "ChatInteractivity",
    "ChatOrigin",
    "ChatState",
    "ChatSummary",
    "ChildCustomization",
    "ChildCustomizationType",
    "ClientPluginCustomization",
    "ConfigPropertySchema",
    "ConfigSchema",
    "ConfirmationOption",
    "ConfirmationOptionKind",
    "ContentRef",
    "Customization",
    "CustomizationDegradedState",
    "CustomizationErrorState",
    "CustomizationLoadState",
    "CustomizationLoadedState",
    "CustomizationLoadingState",
    "DirectoryCustomization",
    "ErrorInfo",
    "FileEdit",
    "FileEditCollection",
    "FileEditDiffStats",
    "FileEditSide",
    "ForkChatOrigin",
    "HookCustomization",
    "Icon",
    "InputRequestResponsePart",
    "JsonPrimitive",
    "KnownChatInputQuestion",
    "MarkdownResponsePart",
    "MarkdownString",
    "McpAuthRequiredReason",
    "McpAuthRequirement",
    "McpOAuthClient",
    "McpServerAuthRequiredState",
    "McpServerCustomization",
    "McpServerCustomizationApps",
    "McpServerErrorState",
    "McpServerReadyState",
    "McpServerStartingState",
    "McpServerState",
    "McpServerStoppedState",
    "Message",
    "MessageAnnotationsAttachment",
    "MessageAttachment",
    "MessageChatAttachment",
    "MessageEmbeddedResourceAttachment",
    "MessageKind",
    "MessageOrigin",
    "MessageResourceAttachment",
    "ModelSelection",
    "MultipleChatsCapability",
    "MultipleWorkingDirectoriesCapability",
    "PendingMessage",
    "PendingMessageKind",
    "PluginCustomization",
    "PolicyState",
    "ProjectInfo",
    "PromptCustomization",
    "ProtectedResourceMetadata",
    "ReasoningResponsePart",
    "ResourceResponsePart",
    "ResponsePart",
    "ResponseParts",
    "RootConfigState",
    "RootState",
    "RuleCustomization",
    "SessionActiveClient",
    "SessionChatInputRequest",
    "SessionConfigPropertySchema",
    "SessionConfigSchema",
    "SessionConfigState",
    "SessionInputRequest",
    "SessionLifecycle",
    "SessionModelInfo",
    "SessionState",
    "SessionStatus",
    "SessionSummary",
    "SessionToolAuthenticationRequest",
    "SessionToolClientExecutionRequest",
    "SessionToolConfirmationRequest",
    "SideChatOrigin",
    "SideChatSelection",
    "SimpleMessageAttachment",
    "SkillCustomization",
    "StringOrMarkdown",
    "SystemNotificationResponsePart",
    "TerminalClaim",
    "TerminalClientClaim",
    "TerminalCommandResult",
    "TerminalInfo",
    "TerminalSessionClaim",
    "TextPosition",
    "TextRange",
    "TextSelection",
    "ToolAnnotations",
    "ToolCallAuthRequiredState",
    "ToolCallCancellationReason",
    "ToolCallCancelledState",
    "ToolCallClientContributor",
    "ToolCallCompletedState",
    "ToolCallConfirmationReason",
    "ToolCallConfirmationState",
    "ToolCallContributor",
    "ToolCallMcpContributor",
    "ToolCallPendingConfirmationState",
    "ToolCallPendingResultConfirmationState",
    "ToolCallResponsePart",
    "ToolCallResult",
    "ToolCallResultError",
    "ToolCallRiskAssessment",
    "ToolCallRiskAssessmentCompleteState",
    "ToolCallRiskAssessmentKind",
    "ToolCallRiskAssessmentLoadingState",
    "ToolCallRunningState",
    "ToolCallState",
    "ToolCallStreamingState",
    "ToolChatOrigin",
    "ToolDefinition",
    "ToolInput",
    "ToolResultContent",
    "ToolResultEmbeddedResourceContent",
    "ToolResultFileEditContent",
    "ToolResultResourceContent",
    "ToolResultSubagentContent",
    "ToolResultTerminalContent",
    "ToolResultTextContent",
    "Turn",
    "TurnState",
    "UnknownChatInputAnswer",
    "UnknownChatInputAnswerValue",
    "UnknownChatInputQuestion",
    "UnknownChatOrigin",
    "UnknownChildCustomization",
    "UnknownCustomization",
    "UnknownCustomizationLoadState",
    "UnknownMcpServerState",
    "UnknownMessageAttachment",
    "UnknownResponsePart",
    "UnknownSessionInputRequest",
    "UnknownToolCallContributor",
    "UnknownToolCallRiskAssessment",
    "UnknownToolResultContent",
    "UsageInfo",
    "UserChatOrigin",
    "known_questions",
]

# ─── Enumerations ────────────────────────────────────────────────────────────


class SessionStatus(enum.IntFlag):
    """Bitset of session (and chat) status flags; test with ``&``, never ``==``.

    ``INPUT_NEEDED`` includes the ``IN_PROGRESS`` bit, so ``status & IN_PROGRESS`` matches a turn
    that is paused for input too. Bits this enum does not name (forward compatibility) are kept
    as they are and re-encode unchanged; ``0`` is a valid value (no flag set).
    """

    IDLE = 1
    ERROR = 1 << 1
    IN_PROGRESS = 1 << 3
    INPUT_NEEDED = (1 << 3) | (1 << 4)
    IS_READ = 1 << 5
    IS_ARCHIVED = 1 << 6


class SessionLifecycle(enum.StrEnum):
    """Session initialization state."""

    CREATING = "creating"
    READY = "ready"
    CREATION_FAILED = "creationFailed"


class ChatInteractivity(enum.StrEnum):
    """How a user can interact with a chat; absence means ``FULL``."""

    FULL = "full"
    READ_ONLY = "read-only"
    HIDDEN = "hidden"


class PendingMessageKind(enum.StrEnum):
    """Whether a pending message steers the current turn or waits for the next one."""

    STEERING = "steering"
    QUEUED = "queued"


class TurnState(enum.StrEnum):
    """How a completed turn ended."""

    COMPLETE = "complete"
    CANCELLED = "cancelled"
    ERROR = "error"


class MessageKind(enum.StrEnum):
    """Who produced a message."""

    USER = "user"
    AGENT = "agent"
    TOOL = "tool"
    SYSTEM_NOTIFICATION = "systemNotification"


class ChatInputResponseKind(enum.StrEnum):
    """How a client completed an input request."""

    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


class ToolCallRiskAssessmentKind(OpenStrEnum):
    """The source of a confirmation requirement (a model judge); open: a newer peer may name
    another source, which is kept."""

    JUDGE = "judge"


class ConfirmationOptionKind(enum.StrEnum):
    """Whether a confirmation option approves or denies."""

    APPROVE = "approve"
    DENY = "deny"


class ToolCallConfirmationReason(enum.StrEnum):
    """How a tool call was confirmed for execution."""

    NOT_NEEDED = "not-needed"
    USER_ACTION = "user-action"
    SETTING = "setting"


class ToolCallCancellationReason(enum.StrEnum):
    """Why a tool call was cancelled."""

    DENIED = "denied"
    SKIPPED = "skipped"
    RESULT_DENIED = "result-denied"


class McpAuthRequiredReason(enum.StrEnum):
    """Why an MCP server needs (re-)authentication."""

    REQUIRED = "required"
    EXPIRED = "expired"
    INSUFFICIENT_SCOPE = "insufficientScope"


class ChildCustomizationType(OpenStrEnum):
    """The kinds of customization that live inside a plugin or directory; open, as
    :data:`ChildCustomization` is (a directory of a newer kind names it in ``contents``)."""

    AGENT = "agent"
    SKILL = "skill"
    PROMPT = "prompt"
    RULE = "rule"
    HOOK = "hook"
    MCP_SERVER = "mcpServer"


# ─── Common leaves ───────────────────────────────────────────────────────────

JsonPrimitive: TypeAlias = str | int | float | bool | None
"""A JSON string, number, boolean or ``null``."""


@attrs.frozen(kw_only=True)
class MarkdownString(WireObject):
    """Text to render as Markdown (the object form of :data:`StringOrMarkdown`)."""

    markdown: str


StringOrMarkdown: TypeAlias = str | MarkdownString
"""Plain text (a bare JSON string) or ``{"markdown": ...}``."""


@attrs.frozen(kw_only=True)
class Icon(WireObject):
    """An optionally sized icon for display."""

    src: str
    content_type: str | None = None
    sizes: tuple[str, ...] | None = None
    theme: Literal["light", "dark"] | None = None


@attrs.frozen(kw_only=True)
class ProtectedResourceMetadata(WireObject):
    """RFC 9728 protected-resource metadata (its wire keys are snake_case, as in the RFC)."""

    resource: str
    resource_name: str | None = None
    authorization_servers: tuple[str, ...] | None = None
    jwks_uri: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    bearer_methods_supported: tuple[str, ...] | None = None
    resource_signing_alg_values_supported: tuple[str, ...] | None = None
    resource_documentation: str | None = None
    resource_policy_uri: str | None = None
    resource_tos_uri: str | None = None
    required: bool | None = None


@attrs.frozen(kw_only=True)
class ConfigPropertySchema(WireObject):
    """A JSON-Schema-like property descriptor with display extensions."""

    type: Literal["string", "number", "boolean", "array", "object"]
    title: str
    description: str | None = None
    default: Any = None
    enum: tuple[JsonPrimitive, ...] | None = None
    # Invariant: len(self.enum_labels) == len(self.enum) (parallel arrays), same for descriptions
    enum_labels: tuple[str, ...] | None = None
    enum_descriptions: tuple[str, ...] | None = None
    read_only: bool | None = None
    items: ConfigPropertySchema | None = None
    properties: Mapping[str, ConfigPropertySchema] | None = None
    required: tuple[str, ...] | None = None
    additional_properties: ConfigPropertySchema | None = None


@attrs.frozen(kw_only=True)
class ConfigSchema(WireObject):
    """A JSON-Schema object describing configuration properties."""

    type: Literal["object"] = "object"
    properties: Mapping[str, ConfigPropertySchema]
    required: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class TextPosition(WireObject):
    """A zero-based line and character position in a text document."""

    line: int
    character: int


@attrs.frozen(kw_only=True)
class TextRange(WireObject):
    """A range in a text document."""

    start: TextPosition
    end: TextPosition


@attrs.frozen(kw_only=True)
class TextSelection(WireObject):
    """A selection within a textual resource."""

    range: TextRange


@attrs.frozen(kw_only=True)
class ContentRef(WireObject):
    """A reference to content stored outside the state tree."""

    uri: str
    size_hint: int | None = None
    content_type: str | None = None
    nonce: str | None = None


ToolInput: TypeAlias = str | ContentRef
"""Tool input, inline (a JSON string) or by reference."""


@attrs.frozen(kw_only=True)
class FileEditSide(WireObject):
    """One side (before or after) of a file edit."""

    uri: str
    content: ContentRef


@attrs.frozen(kw_only=True)
class FileEditDiffStats(WireObject):
    """Diff display counts of a file edit."""

    added: int | None = None
    removed: int | None = None


@attrs.frozen(kw_only=True)
class FileEdit(WireObject):
    """A file creation (only ``after``), deletion (only ``before``), move or edit."""

    before: FileEditSide | None = None
    after: FileEditSide | None = None
    diff: FileEditDiffStats | None = None


@attrs.frozen(kw_only=True)
class FileEditCollection(WireObject):
    """File edits a tool call will perform, wrapped for forward compatibility."""

    items: tuple[FileEdit, ...]


@attrs.frozen(kw_only=True)
class UsageInfo(WireObject):
    """Token usage of a turn."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    cache_read_tokens: int | None = None
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ErrorInfo(WireObject):
    """An error: type identifier, message, optional stack."""

    error_type: str
    message: str
    stack: str | None = None
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ModelSelection(WireObject):
    """A chosen model id with model-specific configuration values."""

    id: str
    config: Mapping[str, JsonPrimitive] | None = None


@attrs.frozen(kw_only=True)
class AgentSelection(WireObject):
    """A selected custom agent (an :class:`AgentCustomization` ``uri``)."""

    uri: str


# ─── Chat input (elicitation) ────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class ChatInputOption(WireObject):
    """A choice in a select question."""

    id: str
    label: str
    description: str | None = None
    recommended: bool | None = None


@attrs.frozen(kw_only=True)
class ChatInputTextQuestion(WireObject):
    """A free-text question (``min``/``max`` bound the length)."""

    kind: Literal["text"] = "text"
    id: str
    title: str | None = None
    message: str
    required: bool | None = None
    format: str | None = None
    min: int | None = None
    max: int | None = None
    default_value: str | None = None


@attrs.frozen(kw_only=True)
class ChatInputNumberQuestion(WireObject):
    """A numeric question; ``kind`` ``"integer"`` asks for a whole number."""

    kind: Literal["number", "integer"] = "number"
    id: str
    title: str | None = None
    message: str
    required: bool | None = None
    min: float | None = None
    max: float | None = None
    default_value: float | None = None


@attrs.frozen(kw_only=True)
class ChatInputBooleanQuestion(WireObject):
    """A yes/no question."""

    kind: Literal["boolean"] = "boolean"
    id: str
    title: str | None = None
    message: str
    required: bool | None = None
    default_value: bool | None = None


@attrs.frozen(kw_only=True)
class ChatInputSingleSelectQuestion(WireObject):
    """Pick one option (or type one, if ``allow_freeform_input``)."""

    kind: Literal["single-select"] = "single-select"
    id: str
    title: str | None = None
    message: str
    required: bool | None = None
    options: tuple[ChatInputOption, ...]
    allow_freeform_input: bool | None = None


@attrs.frozen(kw_only=True)
class ChatInputMultiSelectQuestion(WireObject):
    """Pick several options (``min``/``max`` bound the count)."""

    kind: Literal["multi-select"] = "multi-select"
    id: str
    title: str | None = None
    message: str
    required: bool | None = None
    options: tuple[ChatInputOption, ...]
    allow_freeform_input: bool | None = None
    min: int | None = None
    max: int | None = None


@attrs.frozen(kw_only=True)
class UnknownChatInputQuestion(UnknownVariant):
    """A question of a ``kind`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "kind"

    @property
    def kind(self) -> str:
        """The ``kind`` as sent."""
        return self.tag


ChatInputQuestion: TypeAlias = (
    ChatInputTextQuestion
    | ChatInputNumberQuestion
    | ChatInputBooleanQuestion
    | ChatInputSingleSelectQuestion
    | ChatInputMultiSelectQuestion
    | UnknownChatInputQuestion
)
"""One question of an input request, discriminated on ``kind``."""

KnownChatInputQuestion: TypeAlias = (
    ChatInputTextQuestion
    | ChatInputNumberQuestion
    | ChatInputBooleanQuestion
    | ChatInputSingleSelectQuestion
    | ChatInputMultiSelectQuestion
)
"""A question of a kind this project models."""


def known_questions(questions: Iterable[ChatInputQuestion] | None) -> list[KnownChatInputQuestion]:
    """The questions of a kind this project models, in order: what a reader can show or answer
    (one of a newer kind is passed over, and stays in the request)."""
    return [q for q in questions or () if not isinstance(q, UnknownChatInputQuestion)]


@attrs.frozen(kw_only=True)
class ChatInputTextAnswerValue(WireObject):
    """A text answer."""

    kind: Literal["text"] = "text"
    value: str


@attrs.frozen(kw_only=True)
class ChatInputNumberAnswerValue(WireObject):
    """A numeric answer."""

    kind: Literal["number"] = "number"
    value: float


@attrs.frozen(kw_only=True)
class ChatInputBooleanAnswerValue(WireObject):
    """A boolean answer."""

    kind: Literal["boolean"] = "boolean"
    value: bool


@attrs.frozen(kw_only=True)
class ChatInputSelectedAnswerValue(WireObject):
    """The id of the selected option, plus any free-form text."""

    kind: Literal["selected"] = "selected"
    value: str
    freeform_values: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class ChatInputSelectedManyAnswerValue(WireObject):
    """The ids of the selected options, plus any free-form text."""

    kind: Literal["selected-many"] = "selected-many"
    value: tuple[str, ...]
    freeform_values: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class UnknownChatInputAnswerValue(UnknownVariant):
    """An answer value of a ``kind`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "kind"

    @property
    def kind(self) -> str:
        """The ``kind`` as sent."""
        return self.tag


ChatInputAnswerValue: TypeAlias = (
    ChatInputTextAnswerValue
    | ChatInputNumberAnswerValue
    | ChatInputBooleanAnswerValue
    | ChatInputSelectedAnswerValue
    | ChatInputSelectedManyAnswerValue
    | UnknownChatInputAnswerValue
)
"""The value of one answer, discriminated on ``kind``."""


@attrs.frozen(kw_only=True)
class ChatInputAnswered(WireObject):
    """A draft or submitted answer."""

    state: Literal["draft", "submitted"]
    value: ChatInputAnswerValue


@attrs.frozen(kw_only=True)
class ChatInputSkipped(WireObject):
    """A skipped question, with any free-form reason."""

    state: Literal["skipped"] = "skipped"
    freeform_values: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class UnknownChatInputAnswer(UnknownVariant):
    """An answer in a ``state`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "state"

    @property
    def state(self) -> str:
        """The ``state`` as sent."""
        return self.tag


ChatInputAnswer: TypeAlias = ChatInputAnswered | ChatInputSkipped | UnknownChatInputAnswer
"""Draft, submitted or skipped answer, discriminated on ``state``."""


@attrs.frozen(kw_only=True)
class ChatInputRequest(WireObject):
    """A request for user input: questions and their current answers."""

    id: str
    message: str | None = None
    url: str | None = None
    questions: tuple[ChatInputQuestion, ...] | None = None
    # Invariant: set(self.answers or {}) <= {q.id for q in self.questions or ()}
    answers: Mapping[str, ChatInputAnswer] | None = None


# ─── Messages and attachments ────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class MessageOrigin(WireObject):
    """Who produced a message."""

    kind: MessageKind


@attrs.frozen(kw_only=True)
class SimpleMessageAttachment(WireObject):
    """An opaque attachment described by its producer."""

    type: Literal["simple"] = "simple"
    label: str
    range: TextRange | None = None
    display_kind: str | None = None
    meta: Mapping[str, Any] | None = None
    model_representation: str | None = None


@attrs.frozen(kw_only=True)
class MessageEmbeddedResourceAttachment(WireObject):
    """An attachment whose data is embedded as base64."""

    type: Literal["embeddedResource"] = "embeddedResource"
    label: str
    range: TextRange | None = None
    display_kind: str | None = None
    meta: Mapping[str, Any] | None = None
    data: str
    content_type: str
    selection: TextSelection | None = None


@attrs.frozen(kw_only=True)
class MessageResourceAttachment(WireObject):
    """An attachment that references a resource by URI."""

    type: Literal["resource"] = "resource"
    label: str
    range: TextRange | None = None
    display_kind: str | None = None
    meta: Mapping[str, Any] | None = None
    uri: str
    size_hint: int | None = None
    content_type: str | None = None
    nonce: str | None = None
    selection: TextSelection | None = None


@attrs.frozen(kw_only=True)
class MessageAnnotationsAttachment(WireObject):
    """An attachment that references annotations (all, or the listed ids)."""

    type: Literal["annotations"] = "annotations"
    label: str
    range: TextRange | None = None
    display_kind: str | None = None
    meta: Mapping[str, Any] | None = None
    resource: str
    annotation_ids: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class MessageChatAttachment(WireObject):
    """An attachment that references another chat's transcript up to ``end_turn``."""

    type: Literal["chat"] = "chat"
    label: str
    range: TextRange | None = None
    display_kind: str | None = None
    meta: Mapping[str, Any] | None = None
    resource: str
    end_turn: str | None = None


@attrs.frozen(kw_only=True)
class UnknownMessageAttachment(UnknownVariant):
    """An attachment of a ``type`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "type"

    @property
    def type(self) -> str:
        """The ``type`` as sent."""
        return self.tag


MessageAttachment: TypeAlias = (
    SimpleMessageAttachment
    | MessageEmbeddedResourceAttachment
    | MessageResourceAttachment
    | MessageAnnotationsAttachment
    | MessageChatAttachment
    | UnknownMessageAttachment
)
"""An attachment of a message, discriminated on ``type``."""


@attrs.frozen(kw_only=True)
class Message(WireObject):
    """A message that starts or steers a turn."""

    text: str
    origin: MessageOrigin
    attachments: tuple[MessageAttachment, ...] | None = None
    model: ModelSelection | None = None
    agent: AgentSelection | None = None
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class PendingMessage(WireObject):
    """A steering or queued message waiting to be delivered."""

    id: str
    message: Message


# ─── Tool calls ──────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class ToolCallClientContributor(WireObject):
    """The tool is provided by a connected client."""

    kind: Literal["client"] = "client"
    client_id: str


@attrs.frozen(kw_only=True)
class ToolCallMcpContributor(WireObject):
    """The tool is provided by an MCP server customization."""

    kind: Literal["mcp"] = "mcp"
    # Invariant: customization_id names a McpServerCustomization in SessionState.customizations
    customization_id: str


@attrs.frozen(kw_only=True)
class UnknownToolCallContributor(UnknownVariant):
    """A tool contributor of a ``kind`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "kind"

    @property
    def kind(self) -> str:
        """The ``kind`` as sent."""
        return self.tag


ToolCallContributor: TypeAlias = (
    ToolCallClientContributor | ToolCallMcpContributor | UnknownToolCallContributor
)
"""Who contributed the tool being called, discriminated on ``kind``."""


@attrs.frozen(kw_only=True)
class ToolCallRiskAssessmentLoadingState(WireObject):
    """The model judge is still evaluating the tool call."""

    kind: ToolCallRiskAssessmentKind = ToolCallRiskAssessmentKind.JUDGE
    status: Literal["loading"] = "loading"


@attrs.frozen(kw_only=True)
class ToolCallRiskAssessmentCompleteState(WireObject):
    """The model judge's verdict: a reason and a safety score (0 unsafe … 1 safe)."""

    kind: ToolCallRiskAssessmentKind = ToolCallRiskAssessmentKind.JUDGE
    status: Literal["complete"] = "complete"
    reason: StringOrMarkdown
    safety: float


@attrs.frozen(kw_only=True)
class UnknownToolCallRiskAssessment(UnknownVariant):
    """A risk assessment in a ``status`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "status"

    @property
    def status(self) -> str:
        """The ``status`` as sent."""
        return self.tag


ToolCallRiskAssessment: TypeAlias = (
    ToolCallRiskAssessmentLoadingState
    | ToolCallRiskAssessmentCompleteState
    | UnknownToolCallRiskAssessment
)
"""A risk assessment, discriminated on ``status``."""


@attrs.frozen(kw_only=True)
class ConfirmationOption(WireObject):
    """An approve or deny choice the server offers for a pending confirmation."""

    id: str
    label: str
    kind: ConfirmationOptionKind
    group: int | None = None


@attrs.frozen(kw_only=True)
class TerminalCommandResult(WireObject):
    """Outcome of a command run in a terminal-style tool."""

    exit_code: int | None = None
    preview: str | None = None
    truncated: bool | None = None


@attrs.frozen(kw_only=True)
class ToolResultTextContent(WireObject):
    """Text in a tool result."""

    type: Literal["text"] = "text"
    text: str


@attrs.frozen(kw_only=True)
class ToolResultEmbeddedResourceContent(WireObject):
    """Base64 data embedded in a tool result."""

    type: Literal["embeddedResource"] = "embeddedResource"
    data: str
    content_type: str


@attrs.frozen(kw_only=True)
class ToolResultResourceContent(WireObject):
    """A reference to a resource stored outside the tool result."""

    type: Literal["resource"] = "resource"
    uri: str
    size_hint: int | None = None
    content_type: str | None = None
    nonce: str | None = None


@attrs.frozen(kw_only=True)
class ToolResultFileEditContent(WireObject):
    """A file modification performed by a tool."""

    type: Literal["fileEdit"] = "fileEdit"
    before: FileEditSide | None = None
    after: FileEditSide | None = None
    diff: FileEditDiffStats | None = None


@attrs.frozen(kw_only=True)
class ToolResultTerminalContent(WireObject):
    """A terminal whose output belongs to this tool result."""

    type: Literal["terminal"] = "terminal"
    resource: str
    title: str
    is_pty: bool | None = None
    result: TerminalCommandResult | None = None


@attrs.frozen(kw_only=True)
class ToolResultSubagentContent(WireObject):
    """The worker chat a tool call spawned, seen from the parent chat's side."""

    type: Literal["subagent"] = "subagent"
    # Invariant: worker_chat_state(self.resource).origin == ToolChatOrigin(
    #     chat=<the chat holding this tool call>, tool_call_id=<this tool call's id>)
    resource: str
    title: str
    agent_name: str | None = None
    description: str | None = None


@attrs.frozen(kw_only=True)
class UnknownToolResultContent(UnknownVariant):
    """Tool result content of a ``type`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "type"

    @property
    def type(self) -> str:
        """The ``type`` as sent."""
        return self.tag


ToolResultContent: TypeAlias = (
    ToolResultTextContent
    | ToolResultEmbeddedResourceContent
    | ToolResultResourceContent
    | ToolResultFileEditContent
    | ToolResultTerminalContent
    | ToolResultSubagentContent
    | UnknownToolResultContent
)
"""A content block of a tool result, discriminated on ``type``."""


@attrs.frozen(kw_only=True)
class ToolCallResultError(WireObject):
    """Why a tool failed."""

    message: str
    code: str | None = None


@attrs.frozen(kw_only=True)
class ToolCallResult(WireObject):
    """A tool's execution result (carried by ``chat/toolCallComplete``)."""

    success: bool
    past_tense_message: StringOrMarkdown
    content: tuple[ToolResultContent, ...] | None = None
    structured_content: Mapping[str, Any] | None = None
    error: ToolCallResultError | None = None


@attrs.frozen(kw_only=True)
class McpOAuthClient(WireObject):
    """A pre-registered OAuth client to use instead of dynamic registration."""

    client_id: str
    client_secret: str | None = None


@attrs.frozen(kw_only=True)
class McpAuthRequirement(WireObject):
    """An MCP authentication challenge (RFC 9728 discovery info)."""

    reason: McpAuthRequiredReason
    oauth_client: McpOAuthClient | None = None
    resource: ProtectedResourceMetadata
    required_scopes: tuple[str, ...] | None = None
    description: str | None = None


# The seven tool-call states repeat the schema's shared groups of fields:
#   common:            tool_call_id, tool_name, display_name, intention, contributor, meta
#   parameters known:  invocation_message, tool_input           (all but streaming)
#   after confirming:  confirmed, selected_option              (running and later)
#   result:            success, past_tense_message, content, structured_content, error
# Invariant (every state): tool_call_id is unique within its turn and never changes.


@attrs.frozen(kw_only=True)
class ToolCallStreamingState(WireObject):
    """The model is still streaming the call's parameters."""

    status: Literal["streaming"] = "streaming"
    tool_call_id: str
    tool_name: str
    display_name: str
    intention: str | None = None
    contributor: ToolCallContributor | None = None
    meta: Mapping[str, Any] | None = None
    partial_input: str | None = None
    invocation_message: StringOrMarkdown | None = None


@attrs.frozen(kw_only=True)
class ToolCallPendingConfirmationState(WireObject):
    """Parameters are complete (or a running tool asks again); waiting for the client to confirm."""

    status: Literal["pending-confirmation"] = "pending-confirmation"
    tool_call_id: str
    tool_name: str
    display_name: str
    intention: str | None = None
    contributor: ToolCallContributor | None = None
    meta: Mapping[str, Any] | None = None
    invocation_message: StringOrMarkdown
    tool_input: ToolInput | None = None
    confirmation_title: StringOrMarkdown | None = None
    risk_assessment: ToolCallRiskAssessment | None = None
    edits: FileEditCollection | None = None
    editable: bool | None = None
    options: tuple[ConfirmationOption, ...] | None = None


@attrs.frozen(kw_only=True)
class ToolCallRunningState(WireObject):
    """The tool is executing; ``content`` is its partial output so far."""

    status: Literal["running"] = "running"
    tool_call_id: str
    tool_name: str
    display_name: str
    intention: str | None = None
    contributor: ToolCallContributor | None = None
    meta: Mapping[str, Any] | None = None
    invocation_message: StringOrMarkdown
    tool_input: ToolInput | None = None
    confirmed: ToolCallConfirmationReason
    selected_option: ConfirmationOption | None = None
    content: tuple[ToolResultContent, ...] | None = None


@attrs.frozen(kw_only=True)
class ToolCallAuthRequiredState(WireObject):
    """A running call paused until its MCP server is authenticated."""

    status: Literal["auth-required"] = "auth-required"
    tool_call_id: str
    tool_name: str
    display_name: str
    intention: str | None = None
    # Invariant: an auth-required call always comes from an MCP server, never a client tool
    contributor: ToolCallMcpContributor
    meta: Mapping[str, Any] | None = None
    invocation_message: StringOrMarkdown
    tool_input: ToolInput | None = None
    confirmed: ToolCallConfirmationReason
    selected_option: ConfirmationOption | None = None
    auth: McpAuthRequirement
    content: tuple[ToolResultContent, ...] | None = None


@attrs.frozen(kw_only=True)
class ToolCallPendingResultConfirmationState(WireObject):
    """The tool finished; waiting for the client to approve its result."""

    status: Literal["pending-result-confirmation"] = "pending-result-confirmation"
    tool_call_id: str
    tool_name: str
    display_name: str
    intention: str | None = None
    contributor: ToolCallContributor | None = None
    meta: Mapping[str, Any] | None = None
    invocation_message: StringOrMarkdown
    tool_input: ToolInput | None = None
    confirmed: ToolCallConfirmationReason
    selected_option: ConfirmationOption | None = None
    success: bool
    past_tense_message: StringOrMarkdown
    content: tuple[ToolResultContent, ...] | None = None
    structured_content: Mapping[str, Any] | None = None
    error: ToolCallResultError | None = None


@attrs.frozen(kw_only=True)
class ToolCallCompletedState(WireObject):
    """The tool finished, successfully or not (``success``)."""

    status: Literal["completed"] = "completed"
    tool_call_id: str
    tool_name: str
    display_name: str
    intention: str | None = None
    contributor: ToolCallContributor | None = None
    meta: Mapping[str, Any] | None = None
    invocation_message: StringOrMarkdown
    tool_input: ToolInput | None = None
    confirmed: ToolCallConfirmationReason
    selected_option: ConfirmationOption | None = None
    success: bool
    past_tense_message: StringOrMarkdown
    content: tuple[ToolResultContent, ...] | None = None
    structured_content: Mapping[str, Any] | None = None
    error: ToolCallResultError | None = None


@attrs.frozen(kw_only=True)
class ToolCallCancelledState(WireObject):
    """The call was denied, skipped, or its result was denied."""

    status: Literal["cancelled"] = "cancelled"
    tool_call_id: str
    tool_name: str
    display_name: str
    intention: str | None = None
    contributor: ToolCallContributor | None = None
    meta: Mapping[str, Any] | None = None
    invocation_message: StringOrMarkdown
    tool_input: ToolInput | None = None
    reason: ToolCallCancellationReason
    reason_message: StringOrMarkdown | None = None
    user_suggestion: Message | None = None
    selected_option: ConfirmationOption | None = None


ToolCallState: TypeAlias = (
    ToolCallStreamingState
    | ToolCallPendingConfirmationState
    | ToolCallRunningState
    | ToolCallAuthRequiredState
    | ToolCallPendingResultConfirmationState
    | ToolCallCompletedState
    | ToolCallCancelledState
)
"""A tool call's lifecycle state, discriminated on ``status``."""

ToolCallConfirmationState: TypeAlias = (
    ToolCallPendingConfirmationState | ToolCallPendingResultConfirmationState
)
"""The two tool-call states that wait for a client's confirmation."""


# ─── Response parts and turns ────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class MarkdownResponsePart(WireObject):
    """Markdown text of the response; ``chat/delta`` appends to it by ``id``."""

    kind: Literal["markdown"] = "markdown"
    id: str
    content: str


@attrs.frozen(kw_only=True)
class ResourceResponsePart(WireObject):
    """A reference to large response content stored outside the state tree."""

    kind: Literal["contentRef"] = "contentRef"
    uri: str
    size_hint: int | None = None
    content_type: str | None = None
    nonce: str | None = None


@attrs.frozen(kw_only=True)
class ToolCallResponsePart(WireObject):
    """A tool call in the response stream (``tool_call.tool_call_id`` is the part's id)."""

    kind: Literal["toolCall"] = "toolCall"
    tool_call: ToolCallState


@attrs.frozen(kw_only=True)
class ReasoningResponsePart(WireObject):
    """Reasoning text of the model; ``chat/reasoning`` appends to it by ``id``."""

    kind: Literal["reasoning"] = "reasoning"
    id: str
    content: str


@attrs.frozen(kw_only=True)
class InputRequestResponsePart(WireObject):
    """A live or resolved input request; ``response`` is absent until completed."""

    kind: Literal["inputRequest"] = "inputRequest"
    request: ChatInputRequest
    response: ChatInputResponseKind | None = None


@attrs.frozen(kw_only=True)
class SystemNotificationResponsePart(WireObject):
    """A system notification in the response stream (e.g. a worker reporting back)."""

    kind: Literal["systemNotification"] = "systemNotification"
    content: StringOrMarkdown
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class UnknownResponsePart(UnknownVariant):
    """A response part of a ``kind`` this project does not model, kept as its JSON object.

    Reducers never address it (it has no id they know), and carry it along unchanged.
    """

    TAG: ClassVar[str] = "kind"

    @property
    def kind(self) -> str:
        """The ``kind`` as sent."""
        return self.tag


ResponsePart: TypeAlias = (
    MarkdownResponsePart
    | ResourceResponsePart
    | ToolCallResponsePart
    | ReasoningResponsePart
    | SystemNotificationResponsePart
    | InputRequestResponsePart
    | UnknownResponsePart
)
"""One part of a turn's response, discriminated on ``kind``."""


class ResponseParts(KeyedVector[ResponsePart]):
    """The parts of an active turn, in order (a coordinator's turn can hold thousands).

    Found by :meth:`find` under ``("part", id)`` (markdown and reasoning ids, tool call ids),
    ``("tool", tool call id)`` and, while unanswered, ``("input", request id)``; tallied by
    what they wait for: ``("tool", status, tool name)`` for tool calls and ``("input",)`` for
    an open input request. A part of a kind we do not model (:class:`UnknownResponsePart`) is
    neither found nor tallied: no action can address it.
    """

    __slots__ = ()

    @staticmethod
    def keys_of(part: ResponsePart) -> tuple[Hashable, ...]:
        # One isinstance per class, not one on the union: this runs for every new part.
        if isinstance(part, ToolCallResponsePart):
            tool_call_id = part.tool_call.tool_call_id
            return (("part", tool_call_id), ("tool", tool_call_id))
        if isinstance(part, MarkdownResponsePart) or isinstance(part, ReasoningResponsePart):  # noqa: SIM101
            return (("part", part.id),)
        if isinstance(part, InputRequestResponsePart) and part.response is None:
            return (("input", part.request.id),)
        return ()

    @staticmethod
    def tally_of(part: ResponsePart) -> Hashable | None:
        if isinstance(part, ToolCallResponsePart):
            return ("tool", part.tool_call.status, part.tool_call.tool_name)
        if isinstance(part, InputRequestResponsePart) and part.response is None:
            return ("input",)
        return None


def _response_parts(parts: Iterable[ResponsePart]) -> ResponseParts:
    return ResponseParts.of(parts)


@attrs.frozen(kw_only=True)
class Turn(WireObject):
    """A completed request/response cycle."""

    id: str
    started_at: str | None = None
    duration: float | None = None
    message: Message
    response_parts: tuple[ResponsePart, ...]
    usage: UsageInfo | None = None
    state: TurnState
    # Invariant: (self.error is not None) <= (self.state is TurnState.ERROR)
    error: ErrorInfo | None = None


@attrs.frozen(kw_only=True)
class ActiveTurn(WireObject):
    """The turn in progress: the assistant is streaming."""

    id: str
    started_at: str
    message: Message
    response_parts: ResponseParts = attrs.field(converter=_response_parts)
    usage: UsageInfo | None = None


# ─── Chat state ──────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class UserChatOrigin(WireObject):
    """The user created the chat."""

    kind: Literal["user"] = "user"


@attrs.frozen(kw_only=True)
class ForkChatOrigin(WireObject):
    """The chat was forked from ``chat`` at turn ``turn_id``."""

    kind: Literal["fork"] = "fork"
    chat: str
    turn_id: str


@attrs.frozen(kw_only=True)
class SideChatSelection(WireObject):
    """Text selected when a side chat was created (a snapshot; ``response_part_id`` is advisory)."""

    text: str
    response_part_id: str | None = None


@attrs.frozen(kw_only=True)
class SideChatOrigin(WireObject):
    """The chat is a side conversation started from ``chat`` at turn ``turn_id``."""

    kind: Literal["sideChat"] = "sideChat"
    chat: str
    turn_id: str
    selection: SideChatSelection | None = None


@attrs.frozen(kw_only=True)
class ToolChatOrigin(WireObject):
    """The chat is a worker spawned by tool call ``tool_call_id`` in chat ``chat``.

    This is the canonical record of the delegation edge; the parent's tool call mirrors it.
    """

    kind: Literal["tool"] = "tool"
    # Invariant: any(isinstance(c, ToolResultSubagentContent) and c.resource == <this chat's URI>
    #                for c in tool_call(self.chat, self.tool_call_id).content or ())
    chat: str
    tool_call_id: str


@attrs.frozen(kw_only=True)
class UnknownChatOrigin(UnknownVariant):
    """A chat origin of a ``kind`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "kind"

    @property
    def kind(self) -> str:
        """The ``kind`` as sent."""
        return self.tag


ChatOrigin: TypeAlias = (
    UserChatOrigin | ForkChatOrigin | SideChatOrigin | ToolChatOrigin | UnknownChatOrigin
)
"""How a chat came into existence, discriminated on ``kind``."""


@attrs.frozen(kw_only=True)
class ChatSummary(WireObject):
    """A chat's catalog entry in :attr:`SessionState.chats`."""

    resource: str
    title: str
    status: SessionStatus
    activity: str | None = None
    modified_at: str
    origin: ChatOrigin | None = None
    interactivity: ChatInteractivity | None = None
    # Invariant: set(self.working_directories or ()) <= set(session.working_directories or ())
    working_directories: tuple[str, ...] | None = None


class ChatCatalog(KeyedVector[ChatSummary]):
    """The session's chats, in the order they were added; found by resource URI."""

    __slots__ = ()

    @staticmethod
    def keys_of(summary: ChatSummary) -> tuple[Hashable, ...]:
        return (summary.resource,)


def _chat_catalog(summaries: Iterable[ChatSummary]) -> ChatCatalog:
    return ChatCatalog.of(summaries)


@attrs.frozen(kw_only=True)
class ChatState(WireObject):
    """Full state of one chat channel; it inlines every :class:`ChatSummary` field."""

    # Invariant: the summary fields (resource .. working_directories) equal those of this
    # chat's entry in SessionState.chats once session/chatUpdated has been applied.
    resource: str
    title: str
    status: SessionStatus
    activity: str | None = None
    modified_at: str
    origin: ChatOrigin | None = None
    interactivity: ChatInteractivity | None = None
    working_directories: tuple[str, ...] | None = None
    turns: tuple[Turn, ...]
    turns_next_cursor: str | None = None
    # Invariant: self.active_turn is None or self.active_turn.id not in {t.id for t in self.turns}
    active_turn: ActiveTurn | None = None
    steering_message: PendingMessage | None = None
    # Invariant: len({m.id for m in self.queued_messages or ()}) == len(self.queued_messages or ())
    queued_messages: tuple[PendingMessage, ...] | None = None
    draft: Message | None = None
    meta: Mapping[str, Any] | None = None


# ─── Session state ───────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class ProjectInfo(WireObject):
    """The server-owned project of a session."""

    uri: str
    display_name: str


@attrs.frozen(kw_only=True)
class AnnotationsSummary(WireObject):
    """Counts of a session's annotations channel."""

    resource: str
    annotation_count: int
    entry_count: int


@attrs.frozen(kw_only=True)
class ChangesSummary(WireObject):
    """Aggregate counts of a session's file changes."""

    additions: int | None = None
    deletions: int | None = None
    files: int | None = None


@attrs.frozen(kw_only=True)
class SessionSummary(WireObject):
    """A session's catalog entry."""

    resource: str
    provider: str
    title: str
    status: SessionStatus
    activity: str | None = None
    project: ProjectInfo | None = None
    working_directories: tuple[str, ...] | None = None
    annotations: AnnotationsSummary | None = None
    created_at: str
    modified_at: str
    changes: ChangesSummary | None = None
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ToolAnnotations(WireObject):
    """Advisory behaviour hints of a tool."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


@attrs.frozen(kw_only=True)
class ToolDefinition(WireObject):
    """A tool offered to a session by the server or a client.

    ``input_schema`` and ``output_schema`` are JSON Schema documents (``{"type": "object", ...}``),
    kept whole because a schema may use any JSON Schema keyword.
    """

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class SessionConfigPropertySchema(WireObject):
    """A session configuration property: a :class:`ConfigPropertySchema` plus session flags."""

    type: Literal["string", "number", "boolean", "array", "object"]
    title: str
    description: str | None = None
    default: Any = None
    enum: tuple[JsonPrimitive, ...] | None = None
    enum_labels: tuple[str, ...] | None = None
    enum_descriptions: tuple[str, ...] | None = None
    read_only: bool | None = None
    items: ConfigPropertySchema | None = None
    properties: Mapping[str, ConfigPropertySchema] | None = None
    required: tuple[str, ...] | None = None
    additional_properties: ConfigPropertySchema | None = None
    enum_dynamic: bool | None = None
    session_mutable: bool | None = None


@attrs.frozen(kw_only=True)
class SessionConfigSchema(WireObject):
    """The session's configuration properties."""

    type: Literal["object"] = "object"
    properties: Mapping[str, SessionConfigPropertySchema]
    required: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class SessionConfigState(WireObject):
    """Session configuration: its schema and current values."""

    schema: SessionConfigSchema
    values: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class CustomizationLoadingState(WireObject):
    """The host is loading the container."""

    kind: Literal["loading"] = "loading"


@attrs.frozen(kw_only=True)
class CustomizationLoadedState(WireObject):
    """The container loaded."""

    kind: Literal["loaded"] = "loaded"


@attrs.frozen(kw_only=True)
class CustomizationDegradedState(WireObject):
    """The container loaded with warnings."""

    kind: Literal["degraded"] = "degraded"
    message: str


@attrs.frozen(kw_only=True)
class CustomizationErrorState(WireObject):
    """The container failed to load."""

    kind: Literal["error"] = "error"
    message: str


@attrs.frozen(kw_only=True)
class UnknownCustomizationLoadState(UnknownVariant):
    """A load state of a ``kind`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "kind"

    @property
    def kind(self) -> str:
        """The ``kind`` as sent."""
        return self.tag


CustomizationLoadState: TypeAlias = (
    CustomizationLoadingState
    | CustomizationLoadedState
    | CustomizationDegradedState
    | CustomizationErrorState
    | UnknownCustomizationLoadState
)
"""A container's load state, discriminated on ``kind``."""


@attrs.frozen(kw_only=True)
class McpServerStartingState(WireObject):
    """The MCP server is registered but not started yet."""

    kind: Literal["starting"] = "starting"


@attrs.frozen(kw_only=True)
class McpServerReadyState(WireObject):
    """The MCP server is serving requests."""

    kind: Literal["ready"] = "ready"


@attrs.frozen(kw_only=True)
class McpServerAuthRequiredState(WireObject):
    """The MCP server needs the client to authenticate."""

    kind: Literal["authRequired"] = "authRequired"
    reason: McpAuthRequiredReason
    oauth_client: McpOAuthClient | None = None
    resource: ProtectedResourceMetadata
    required_scopes: tuple[str, ...] | None = None
    description: str | None = None


@attrs.frozen(kw_only=True)
class McpServerErrorState(WireObject):
    """The MCP server failed or crashed."""

    kind: Literal["error"] = "error"
    error: ErrorInfo


@attrs.frozen(kw_only=True)
class McpServerStoppedState(WireObject):
    """The MCP server has been shut down."""

    kind: Literal["stopped"] = "stopped"


@attrs.frozen(kw_only=True)
class UnknownMcpServerState(UnknownVariant):
    """An MCP server state of a ``kind`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "kind"

    @property
    def kind(self) -> str:
        """The ``kind`` as sent."""
        return self.tag


McpServerState: TypeAlias = (
    McpServerStartingState
    | McpServerReadyState
    | McpServerAuthRequiredState
    | McpServerErrorState
    | McpServerStoppedState
    | UnknownMcpServerState
)
"""An MCP server's lifecycle state, discriminated on ``kind``."""


@attrs.frozen(kw_only=True)
class AhpMcpUiListChangedCapability(WireObject):
    """A proxied MCP list capability."""

    list_changed: bool | None = None


@attrs.frozen(kw_only=True)
class AhpMcpUiSamplingCapability(WireObject):
    """The producer serves ``sampling/createMessage`` for MCP Apps."""

    tools: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class AhpMcpUiHostCapabilities(WireObject):
    """The MCP App host capabilities the producer offers."""

    server_tools: AhpMcpUiListChangedCapability | None = None
    server_resources: AhpMcpUiListChangedCapability | None = None
    logging: Mapping[str, Any] | None = None
    sampling: AhpMcpUiSamplingCapability | None = None


@attrs.frozen(kw_only=True)
class McpServerCustomizationApps(WireObject):
    """What a client needs to render MCP Apps of this server."""

    capabilities: AhpMcpUiHostCapabilities


@attrs.frozen(kw_only=True)
class AgentCustomization(WireObject):
    """A custom agent contributed by a plugin or directory."""

    type: Literal["agent"] = "agent"
    id: str
    uri: str
    name: str
    icons: tuple[Icon, ...] | None = None
    range: TextRange | None = None
    meta: Mapping[str, Any] | None = None
    enabled: bool | None = None
    description: str | None = None
    model: str | None = None
    tools: tuple[str, ...] | None = None
    disable_model_invocation: bool | None = None
    disable_user_invocation: bool | None = None


@attrs.frozen(kw_only=True)
class SkillCustomization(WireObject):
    """A skill contributed by a plugin or directory."""

    type: Literal["skill"] = "skill"
    id: str
    uri: str
    name: str
    icons: tuple[Icon, ...] | None = None
    range: TextRange | None = None
    meta: Mapping[str, Any] | None = None
    enabled: bool | None = None
    description: str | None = None
    disable_model_invocation: bool | None = None
    disable_user_invocation: bool | None = None


@attrs.frozen(kw_only=True)
class PromptCustomization(WireObject):
    """A prompt contributed by a plugin or directory."""

    type: Literal["prompt"] = "prompt"
    id: str
    uri: str
    name: str
    icons: tuple[Icon, ...] | None = None
    range: TextRange | None = None
    meta: Mapping[str, Any] | None = None
    enabled: bool | None = None
    description: str | None = None


@attrs.frozen(kw_only=True)
class RuleCustomization(WireObject):
    """A rule contributed by a plugin or directory."""

    type: Literal["rule"] = "rule"
    id: str
    uri: str
    name: str
    icons: tuple[Icon, ...] | None = None
    range: TextRange | None = None
    meta: Mapping[str, Any] | None = None
    enabled: bool | None = None
    description: str | None = None
    always_apply: bool | None = None
    globs: tuple[str, ...] | None = None


@attrs.frozen(kw_only=True)
class HookCustomization(WireObject):
    """A hook manifest contributed by a plugin or directory."""

    type: Literal["hook"] = "hook"
    id: str
    uri: str
    name: str
    icons: tuple[Icon, ...] | None = None
    range: TextRange | None = None
    meta: Mapping[str, Any] | None = None
    enabled: bool | None = None


@attrs.frozen(kw_only=True)
class McpServerCustomization(WireObject):
    """An MCP server, top-level or inside a plugin or directory."""

    type: Literal["mcpServer"] = "mcpServer"
    id: str
    uri: str
    name: str
    icons: tuple[Icon, ...] | None = None
    range: TextRange | None = None
    meta: Mapping[str, Any] | None = None
    enabled: bool
    state: McpServerState
    channel: str | None = None
    mcp_app: McpServerCustomizationApps | None = None


@attrs.frozen(kw_only=True)
class UnknownChildCustomization(UnknownVariant):
    """A child customization of a ``type`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "type"

    @property
    def type(self) -> str:
        """The ``type`` as sent."""
        return self.tag


ChildCustomization: TypeAlias = (
    AgentCustomization
    | SkillCustomization
    | PromptCustomization
    | RuleCustomization
    | HookCustomization
    | McpServerCustomization
    | UnknownChildCustomization
)
"""A customization inside a plugin or directory, discriminated on ``type``."""


@attrs.frozen(kw_only=True)
class PluginCustomization(WireObject):
    """An Open Plugins plugin."""

    type: Literal["plugin"] = "plugin"
    id: str
    uri: str
    name: str
    icons: tuple[Icon, ...] | None = None
    range: TextRange | None = None
    meta: Mapping[str, Any] | None = None
    enabled: bool
    client_id: str | None = None
    load: CustomizationLoadState | None = None
    children: tuple[ChildCustomization, ...] | None = None
    version: str | None = None


@attrs.frozen(kw_only=True)
class ClientPluginCustomization(WireObject):
    """A plugin as published by a client, with a version token."""

    type: Literal["plugin"] = "plugin"
    id: str
    uri: str
    name: str
    icons: tuple[Icon, ...] | None = None
    range: TextRange | None = None
    meta: Mapping[str, Any] | None = None
    enabled: bool
    client_id: str | None = None
    load: CustomizationLoadState | None = None
    children: tuple[ChildCustomization, ...] | None = None
    version: str | None = None
    nonce: str | None = None


@attrs.frozen(kw_only=True)
class DirectoryCustomization(WireObject):
    """A directory the host watches for customizations of one type."""

    type: Literal["directory"] = "directory"
    id: str
    uri: str
    name: str
    icons: tuple[Icon, ...] | None = None
    range: TextRange | None = None
    meta: Mapping[str, Any] | None = None
    enabled: bool
    client_id: str | None = None
    load: CustomizationLoadState | None = None
    # Invariant: all(c.type == self.contents for c in self.children or ())
    children: tuple[ChildCustomization, ...] | None = None
    contents: ChildCustomizationType
    writable: bool


@attrs.frozen(kw_only=True)
class UnknownCustomization(UnknownVariant):
    """A customization of a ``type`` this project does not model, kept as its JSON object."""

    TAG: ClassVar[str] = "type"

    @property
    def type(self) -> str:
        """The ``type`` as sent."""
        return self.tag


Customization: TypeAlias = (
    PluginCustomization | DirectoryCustomization | McpServerCustomization | UnknownCustomization
)
"""A top-level customization, discriminated on ``type``."""


@attrs.frozen(kw_only=True)
class SessionActiveClient(WireObject):
    """A client providing tools and interactive capabilities to the session."""

    client_id: str
    display_name: str | None = None
    tools: tuple[ToolDefinition, ...]
    customizations: tuple[ClientPluginCustomization, ...] | None = None


@attrs.frozen(kw_only=True)
class SessionChatInputRequest(WireObject):
    """An input request of one of the session's chats, mirrored at session level."""

    kind: Literal["chatInput"] = "chatInput"
    id: str
    chat: str
    request: ChatInputRequest


@attrs.frozen(kw_only=True)
class SessionToolConfirmationRequest(WireObject):
    """A tool call in one of the session's chats, blocked on confirmation."""

    kind: Literal["toolConfirmation"] = "toolConfirmation"
    id: str
    chat: str
    turn_id: str
    tool_call: ToolCallConfirmationState


@attrs.frozen(kw_only=True)
class SessionToolClientExecutionRequest(WireObject):
    """A running tool call that an active client (``client_id``) is expected to execute."""

    kind: Literal["toolClientExecution"] = "toolClientExecution"
    id: str
    chat: str
    turn_id: str
    client_id: str
    tool_call: ToolCallState


@attrs.frozen(kw_only=True)
class SessionToolAuthenticationRequest(WireObject):
    """A tool call in one of the session's chats, blocked on MCP authentication."""

    kind: Literal["toolAuthentication"] = "toolAuthentication"
    id: str
    chat: str
    turn_id: str
    tool_call: ToolCallAuthRequiredState


@attrs.frozen(kw_only=True)
class UnknownSessionInputRequest(UnknownVariant):
    """A session input request of a ``kind`` this project does not model, kept as JSON."""

    TAG: ClassVar[str] = "kind"

    @property
    def kind(self) -> str:
        """The ``kind`` as sent."""
        return self.tag


SessionInputRequest: TypeAlias = (
    SessionChatInputRequest
    | SessionToolConfirmationRequest
    | SessionToolClientExecutionRequest
    | SessionToolAuthenticationRequest
    | UnknownSessionInputRequest
)
"""Input a session is blocked on, discriminated on ``kind``."""


@attrs.frozen(kw_only=True)
class ChangesetCapabilities(WireObject):
    """Optional capabilities of a changeset (``review`` enables per-file review)."""

    review: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class Changeset(WireObject):
    """A catalogue entry for a changeset the server can produce (``change_kind`` is open)."""

    label: str
    uri_template: str
    description: str | None = None
    change_kind: str
    capabilities: ChangesetCapabilities | None = None


@attrs.frozen(kw_only=True)
class SessionState(WireObject):
    """Full state of one session channel."""

    provider: str
    title: str
    status: SessionStatus
    activity: str | None = None
    project: ProjectInfo | None = None
    working_directories: tuple[str, ...] | None = None
    annotations: AnnotationsSummary | None = None
    lifecycle: SessionLifecycle
    # Invariant: (self.creation_error is not None) <= (self.lifecycle is CREATION_FAILED)
    creation_error: ErrorInfo | None = None
    server_tools: tuple[ToolDefinition, ...] | None = None
    active_clients: tuple[SessionActiveClient, ...]
    chats: ChatCatalog = attrs.field(converter=_chat_catalog)
    # Invariant: self.default_chat is None or self.default_chat in {c.resource for c in self.chats}
    default_chat: str | None = None
    config: SessionConfigState | None = None
    customizations: tuple[Customization, ...] | None = None
    changesets: tuple[Changeset, ...] | None = None
    # Invariant: every entry's chat is in {c.resource for c in self.chats}; ids are unique
    input_needed: tuple[SessionInputRequest, ...] | None = None
    meta: Mapping[str, Any] | None = None


# ─── Root channel ────────────────────────────────────────────────────────────


class PolicyState(enum.StrEnum):
    """Whether a model is enabled by policy."""

    ENABLED = "enabled"
    DISABLED = "disabled"
    UNCONFIGURED = "unconfigured"


@attrs.frozen(kw_only=True)
class SessionModelInfo(WireObject):
    """A model an agent offers."""

    id: str
    provider: str
    name: str
    max_context_window: int | None = None
    max_output_tokens: int | None = None
    max_prompt_tokens: int | None = None
    supports_vision: bool | None = None
    policy_state: PolicyState | None = None
    config_schema: ConfigSchema | None = None
    meta: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class MultipleChatsCapability(WireObject):
    """The agent runs several chats in one session (and may fork, open side chats)."""

    fork: bool | None = None
    side_chat: bool | None = None


@attrs.frozen(kw_only=True)
class MultipleWorkingDirectoriesCapability(WireObject):
    """The agent works in several directories (the first one fixed, if immutable)."""

    immutable_primary: bool | None = None


@attrs.frozen(kw_only=True)
class AgentCapabilities(WireObject):
    """What an agent supports; an absent capability is unsupported."""

    multiple_chats: MultipleChatsCapability | None = None
    multiple_working_directories: MultipleWorkingDirectoriesCapability | None = None


@attrs.frozen(kw_only=True)
class AgentInfo(WireObject):
    """An agent provider of the root state; this host's providers are its teams."""

    provider: str
    display_name: str
    description: str
    models: tuple[SessionModelInfo, ...]
    protected_resources: tuple[ProtectedResourceMetadata, ...] | None = None
    customizations: tuple[Customization, ...] | None = None
    capabilities: AgentCapabilities | None = None


@attrs.frozen(kw_only=True)
class TerminalClientClaim(WireObject):
    """A terminal held by a connected client."""

    kind: Literal["client"] = "client"
    client_id: str


@attrs.frozen(kw_only=True)
class TerminalSessionClaim(WireObject):
    """A terminal held by a session (a turn or a tool call of it, when given)."""

    kind: Literal["session"] = "session"
    session: str
    turn_id: str | None = None
    tool_call_id: str | None = None


TerminalClaim: TypeAlias = TerminalClientClaim | TerminalSessionClaim
"""Who holds a terminal, discriminated on ``kind``."""


@attrs.frozen(kw_only=True)
class TerminalInfo(WireObject):
    """A terminal as the root state lists it (its own channel has the rest)."""

    resource: str
    title: str
    claim: TerminalClaim
    exit_code: int | None = None


@attrs.frozen(kw_only=True)
class RootConfigState(WireObject):
    """The agent host's configuration: its schema and current values."""

    schema: ConfigSchema
    values: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class RootState(WireObject):
    """The state of ``ahp-root://``: the providers, how many sessions are active, terminals
    and the host's configuration (this host has neither of the last two)."""

    agents: tuple[AgentInfo, ...]
    active_sessions: int | None = None
    terminals: tuple[TerminalInfo, ...] | None = None
    config: RootConfigState | None = None
    meta: Mapping[str, Any] | None = None
