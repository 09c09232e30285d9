"""Hypothesis strategies for the AHP types and the team actions, shared by the tests.

:func:`ahp_values` builds any AHP model class or union alias from its type hints: optional
fields are sometimes ``None``, sequences are short tuples, free-form JSON (``_meta``, config
values) is small nested JSON. The named strategies below are the ones most tests want.

Values are valid by type, not by meaning: ids need not be unique, a tool call's status need
not match its turn. Reducer tests that need coherent histories should compose these with
their own rules.
"""

from __future__ import annotations

import enum
import functools
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from orchestrator.ahp import ToolCallAction, UnknownVariant, part_id
from orchestrator.ahp.actions import (
    ActionEnvelope,
    ChatAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatResponsePartAction,
    ChatTurnStartedAction,
    SessionAction,
    StateAction,
    UnknownAction,
)
from orchestrator.ahp.state import (
    ChatCatalog,
    ChatInputBooleanQuestion,
    ChatInputRequest,
    ChatInputSkipped,
    ChatOrigin,
    ChatState,
    ChatSummary,
    ConfigPropertySchema,
    InputRequestResponsePart,
    MarkdownResponsePart,
    Message,
    ReasoningResponsePart,
    ResponsePart,
    ResponseParts,
    SessionState,
    SessionStatus,
    SessionSummary,
    ToolCallResponsePart,
    ToolCallState,
    ToolDefinition,
    ToolResultContent,
)
from orchestrator.core import (
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    HandoffRecorded,
    MemberJoined,
    RunFinished,
    RunResumed,
    RunStarted,
    RunStatus,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamAction,
    ViewUpdated,
)

__all__ = [
    "action_envelopes",
    "ahp_values",
    "chat_actions",
    "chat_origins",
    "chat_states",
    "chat_summaries",
    "config_property_schemas",
    "json_values",
    "known_state_actions",
    "messages",
    "response_parts",
    "session_actions",
    "session_states",
    "session_statuses",
    "session_summaries",
    "state_actions",
    "team_actions",
    "tool_call_states",
    "tool_result_contents",
    "unknown_actions",
    "unknown_variants",
    "with_unknown_keys",
]

MAX_ITEMS = 2
"""Longest generated sequence or mapping: keeps nested states small and tests fast."""

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=MAX_ITEMS)
        | st.dictionaries(st.text(max_size=8), inner, max_size=MAX_ITEMS)
    ),
    max_leaves=6,
)
"""Any JSON value as :func:`json.loads` returns it."""

session_statuses = st.integers(min_value=0, max_value=2**32 - 1).map(SessionStatus)
"""Any 32-bit status bitset, named bits or not."""

unknown_actions = st.builds(
    lambda name, payload: UnknownAction(raw={**payload, "type": f"future/{name}"}),
    st.from_regex(r"[a-zA-Z]{1,12}", fullmatch=True),
    st.dictionaries(st.text(max_size=8), json_values, max_size=MAX_ITEMS),
)
"""Actions of a ``type`` the project does not model (never a ``chat/`` or ``session/`` one)."""

unknown_keys = st.from_regex(r"future[A-Z][a-zA-Z]{0,8}", fullmatch=True)
"""Object keys no protocol we speak uses yet: a newer peer's."""


def with_unknown_keys(value: Any) -> st.SearchStrategy[Any]:
    """``value`` (decoded JSON) with keys of :data:`unknown_keys` added to some of its objects,
    at any depth, as a peer speaking a newer version of the protocol would send it."""
    if isinstance(value, list):
        return st.tuples(*(with_unknown_keys(item) for item in value)).map(list)
    if not isinstance(value, dict):
        return st.just(value)
    known = st.fixed_dictionaries({key: with_unknown_keys(item) for key, item in value.items()})
    added = st.dictionaries(unknown_keys, json_values, max_size=MAX_ITEMS)
    return st.builds(lambda fields, extra: {**extra, **fields}, known, added)


def unknown_variants(cls: type[UnknownVariant]) -> st.SearchStrategy[Any]:
    """Variants of an open union of a kind the project does not model (tag ``future-...``)."""
    return st.builds(
        lambda name, payload: cls(raw={**payload, cls.TAG: f"future-{name}"}),
        st.from_regex(r"[a-zA-Z]{1,12}", fullmatch=True),
        st.dictionaries(st.text(max_size=8), json_values, max_size=MAX_ITEMS),
    )


def ahp_values(tp: Any) -> st.SearchStrategy[Any]:
    """Values of an AHP class, union alias, enum or field type."""
    if tp is UnknownAction:
        return unknown_actions
    if _unknown(tp):
        return unknown_variants(tp)
    if tp is SessionStatus:
        return session_statuses
    if tp is Any:
        return json_values
    if tp is str:
        return st.text(max_size=12)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(min_value=-(2**53), max_value=2**53)
    if tp is float:
        return st.integers(min_value=-(2**20), max_value=2**20) | st.floats(
            allow_nan=False, allow_infinity=False
        )
    origin: Any = typing.get_origin(tp)
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        # The known variants (and UnknownAction); unknown variants of the other open unions
        # are injected at the JSON level by the forward-compatibility tests.
        return st.one_of([ahp_values(arg) for arg in typing.get_args(tp) if not _unknown(arg)])
    if origin is tuple:
        (item, _) = typing.get_args(tp)
        return st.lists(ahp_values(item), max_size=MAX_ITEMS).map(tuple)
    if origin is Mapping:
        _, value = typing.get_args(tp)
        return st.dictionaries(st.text(max_size=8), ahp_values(value), max_size=MAX_ITEMS)
    if tp is type(None):
        return st.none()
    if tp is ResponseParts:
        return st.lists(ahp_values(ResponsePart), max_size=MAX_ITEMS).map(ResponseParts)
    if tp is ChatCatalog:
        return st.lists(ahp_values(ChatSummary), max_size=MAX_ITEMS).map(ChatCatalog)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(tp)
    if isinstance(tp, type) and attrs.has(tp):
        return _models(tp)
    raise TypeError(f"no strategy for {tp!r}")


tool_schemas = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={
        "properties": st.dictionaries(
            st.text(max_size=8),
            st.dictionaries(st.text(max_size=8), json_values, max_size=MAX_ITEMS),
            max_size=MAX_ITEMS,
        ),
        "required": st.lists(st.text(max_size=8), max_size=MAX_ITEMS),
        "additionalProperties": st.booleans(),
    },
)
"""JSON Schema documents of tool inputs and outputs (``{"type": "object", ...}``)."""

FIELD_VALUES: Mapping[tuple[type, str], st.SearchStrategy[Any]] = {
    (ToolDefinition, "input_schema"): st.none() | tool_schemas,
    (ToolDefinition, "output_schema"): st.none() | tool_schemas,
}
"""Fields whose type says less than the schema: free-form by type, constrained on the wire."""


def _unknown(tp: Any) -> bool:
    """Whether ``tp`` is an unknown variant other than :class:`UnknownAction`."""
    return isinstance(tp, type) and issubclass(tp, UnknownVariant) and tp is not UnknownAction


def _builds(cls: type, fields: Mapping[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """``cls`` from its type hints, with the strategies in ``fields`` for those fields.

    ``unknown_fields`` keeps its default (none): the keys it holds must not be wire names of
    ``cls``, which only the forward-compatibility tests take care to draw.
    """
    hints = typing.get_type_hints(cls)
    return st.builds(
        cls,
        **{
            f.name: fields[f.name] if f.name in fields else ahp_values(hints[f.name])
            for f in attrs.fields(cls)
            if f.name != "unknown_fields"
        },
    )


@functools.cache
def _models(cls: type) -> st.SearchStrategy[Any]:
    if cls is ConfigPropertySchema:
        return config_property_schemas
    overrides = {name: values for (owner, name), values in FIELD_VALUES.items() if owner is cls}
    # Deferred: the strategies of a class's fields are built when first drawn from.
    return st.deferred(lambda: _builds(cls, overrides))


_NESTED_PROPERTIES = ("items", "properties", "additional_properties")
_leaf_config_property_schemas = st.deferred(
    lambda: _builds(ConfigPropertySchema, dict.fromkeys(_NESTED_PROPERTIES, st.none()))
)
config_property_schemas: st.SearchStrategy[ConfigPropertySchema] = st.recursive(
    _leaf_config_property_schemas,
    lambda inner: st.builds(
        attrs.evolve,
        _leaf_config_property_schemas,
        items=st.none() | inner,
        properties=st.none() | st.dictionaries(st.text(max_size=8), inner, max_size=MAX_ITEMS),
        additional_properties=st.none() | inner,
    ),
    max_leaves=4,
)
"""Config property schemas, nested a few levels at most (the type is recursive)."""


def chat_states() -> st.SearchStrategy[ChatState]:
    """Full chat channel states."""
    return ahp_values(ChatState)


def chat_summaries() -> st.SearchStrategy[ChatSummary]:
    """Chat catalog entries."""
    return ahp_values(ChatSummary)


def chat_origins() -> st.SearchStrategy[ChatOrigin]:
    """Any :data:`ChatOrigin` variant."""
    return ahp_values(ChatOrigin)


def messages() -> st.SearchStrategy[Message]:
    """Messages with any attachments."""
    return ahp_values(Message)


def response_parts() -> st.SearchStrategy[ResponsePart]:
    """Any response part, tool calls in any state included."""
    return ahp_values(ResponsePart)


def tool_call_states() -> st.SearchStrategy[ToolCallState]:
    """Any tool-call state."""
    return ahp_values(ToolCallState)


def tool_result_contents() -> st.SearchStrategy[ToolResultContent]:
    """Any tool result content block, subagent references included."""
    return ahp_values(ToolResultContent)


def session_states() -> st.SearchStrategy[SessionState]:
    """Full session channel states."""
    return ahp_values(SessionState)


def session_summaries() -> st.SearchStrategy[SessionSummary]:
    """Session catalog entries."""
    return ahp_values(SessionSummary)


def chat_actions() -> st.SearchStrategy[ChatAction]:
    """Any ``chat/*`` action."""
    return ahp_values(ChatAction)


def session_actions() -> st.SearchStrategy[SessionAction]:
    """Any ``session/*`` action."""
    return ahp_values(SessionAction)


def state_actions() -> st.SearchStrategy[StateAction]:
    """Any state action, unknown ones included."""
    return ahp_values(StateAction)


def known_state_actions() -> st.SearchStrategy[StateAction]:
    """Any state action of a type we model (built without the unknown variant, not filtered:
    rejecting draws from a strategy this large is slow and makes hypothesis render it)."""
    members = [tp for tp in typing.get_args(StateAction) if tp is not UnknownAction]
    return st.one_of([ahp_values(tp) for tp in members])


def action_envelopes() -> st.SearchStrategy[ActionEnvelope]:
    """Envelopes around any state action."""
    return ahp_values(ActionEnvelope)


def team_actions(
    *,
    tasks: Sequence[str] = ("task-1", "task-2", "task-3"),
    chats: Sequence[str] = ("ahp-chat:/a", "ahp-chat:/b"),
    approvals: Sequence[str] = ("approval-1", "approval-2"),
) -> st.SearchStrategy[TeamAction]:
    """Any ``team/*`` action, its ids drawn from small pools so that actions meet each other
    (a task created twice, started before it exists, an approval resolved twice)."""
    task = st.sampled_from(tasks)
    chat = st.sampled_from(chats)
    approval = st.sampled_from(approvals)
    text = st.text(max_size=6)
    count = st.integers(min_value=0, max_value=3)
    return st.one_of(
        st.builds(
            RunStarted,
            run=text,
            team=text,
            topology=text,
            parallel_budget=count,
            coordinator=text,
            prompt=st.text(max_size=100),
            task=task,
            background=st.none() | text,
            model=st.none() | text,
        ),
        st.builds(
            RunResumed,
            run=text,
            restart=count,
            policy=text,
            interrupted=st.lists(chat, max_size=MAX_ITEMS).map(tuple),
        ),
        st.builds(
            MemberJoined,
            chat=chat,
            agent=text,
            role=text,
            task=task,
            # A side chat's recorded context: (role, text) pairs.
            context=st.none()
            | st.lists(st.tuples(st.sampled_from(("user", "assistant")), text), max_size=3).map(
                tuple
            ),
        ),
        st.builds(
            TaskCreated,
            task=task,
            title=text,
            agent=text,
            requested_by=chat,
            tool_call_id=text,
            parent_task=task,
            status=st.sampled_from(TaskStatus),
        ),
        # A conversation's next prompt: a root task, with no delegation.
        st.builds(
            TaskCreated, task=task, title=text, agent=text, status=st.sampled_from(TaskStatus)
        ),
        st.builds(TaskStarted, task=task, chat=chat),
        st.builds(
            TaskFinished,
            task=task,
            status=st.sampled_from(TaskStatus),
            summary=text,
            duration_ms=count,
            input_tokens=count,
            output_tokens=count,
            chat=st.none() | chat,
        ),
        st.builds(
            HandoffRecorded,
            task=task,
            from_chat=chat,
            to_chat=chat,
            to_agent=text,
            reason=text,
            resume_target=text,
            tool_call_id=text,
        ),
        st.builds(
            ApprovalRequested,
            approval=approval,
            chat=chat,
            turn_id=text,
            tool_call_id=text,
            tool_name=text,
            requested_by=text,
            routed_to=st.just("user") | chat,
            policy_scope=text,
            summary=text,
        ),
        st.builds(
            ApprovalResolved,
            approval=approval,
            decision=st.sampled_from(ApprovalDecision),
            resolved_by=st.just("user") | chat,
            principal=st.none() | text,
        ),
        st.builds(
            RunFinished, run=text, status=st.sampled_from(RunStatus), result=text, error=text
        ),
        st.builds(
            ViewUpdated,
            view_type=st.sampled_from(["plan", "files"]),
            content=st.dictionaries(st.text(max_size=4), json_values, max_size=MAX_ITEMS),
        ),
    )


CHANNEL = "ahp-chat:/00000000-0000-4000-8000-000000000002"


NOW = "2025-01-01T00:00:10.000Z"


CHAT_ACTION_CLASSES: tuple[type, ...] = typing.get_args(ChatAction)


TOOL_CALL_ACTION_CLASSES: tuple[type, ...] = typing.get_args(ToolCallAction)


@st.composite
def pooled_actions(
    draw: st.DrawFn,
    classes: tuple[type, ...] = CHAT_ACTION_CLASSES + 3 * TOOL_CALL_ACTION_CLASSES,
    live: ChatState | None = None,
) -> Any:
    """A chat action of one of ``classes`` whose ids come from the small pools, and mostly
    from the ids ``live`` holds (its active turn, tool calls, parts, requests...).

    Tool-call actions are drawn more often, and a new turn half the time ``live`` has none,
    so that sequences spend their length inside turns, moving tool calls along."""
    choice = st.sampled_from(classes)
    if live is not None and live.active_turn is None:
        choice = choice | st.just(ChatTurnStartedAction)
    cls = draw(choice)
    action = draw(ahp_values(cls))
    names = attrs.fields_dict(cls)
    current = live_ids(live)
    changes: dict[str, Any] = {}
    for name, pool in POOLS.items():
        if name in names and getattr(action, name) is not None:
            ids = pick(pool)
            if current.get(name):
                # Mostly the live ones: a stale or unknown id is a no-op worth trying, not often.
                ids = st.one_of(*[pick(current[name])] * 3, ids)
            changes[name] = draw(ids)
    if isinstance(action, ChatTurnStartedAction):
        changes["queued_message_id"] = draw(st.none() | pick(MESSAGE_IDS))
    if "order" in names:
        changes["order"] = tuple(draw(st.lists(pick(MESSAGE_IDS), max_size=3)))
    if isinstance(action, ChatResponsePartAction):
        changes["part"] = with_pooled_id(action.part, draw(pick(PART_IDS)))
    if isinstance(action, ChatInputRequestedAction):
        changes["request"] = draw(input_requests())
    if isinstance(action, ChatInputCompletedAction):
        changes["answers"] = draw(answers())
    return attrs.evolve(action, **changes)


def empty_chats() -> st.SearchStrategy[ChatState]:
    """A new chat: no turns, no active turn, any status bits."""
    return st.builds(
        ChatState,
        resource=st.just(CHANNEL),
        title=st.just("Chat"),
        status=session_statuses,
        modified_at=st.just("2025-01-01T00:00:00.000Z"),
        turns=st.just(()),
    )


PART_IDS = ("md-1", "rs-1", "tc-1")  # one namespace with tool calls, as deltas address them


MESSAGE_IDS = ("m-1", "m-2")
TURN_IDS = ("turn-1", "turn-2")
TOOL_CALL_IDS = ("tc-1", "tc-2")
REQUEST_IDS = ("r-1", "r-2")
QUESTION_IDS = ("q-1", "q-2")


def pick(pool: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from(pool)


def answers() -> st.SearchStrategy[dict[str, Any] | None]:
    return st.none() | st.dictionaries(pick(QUESTION_IDS), st.just(ChatInputSkipped()), max_size=2)


def input_requests() -> st.SearchStrategy[ChatInputRequest]:
    questions = st.lists(pick(QUESTION_IDS), unique=True, max_size=2).map(
        lambda ids: tuple(ChatInputBooleanQuestion(id=i, message=i) for i in ids) or None
    )
    return st.builds(ChatInputRequest, id=pick(REQUEST_IDS), questions=questions, answers=answers())


def with_pooled_id(part: ResponsePart, new_id: str) -> ResponsePart:
    if isinstance(part, MarkdownResponsePart | ReasoningResponsePart):
        return attrs.evolve(part, id=new_id)
    if isinstance(part, ToolCallResponsePart):
        return ToolCallResponsePart(tool_call=attrs.evolve(part.tool_call, tool_call_id=new_id))
    return part


def live_ids(state: ChatState | None) -> dict[str, tuple[str, ...]]:
    """The ids ``state`` holds now, by the action field that addresses them."""
    if state is None:
        return {}
    turn = state.active_turn
    parts = () if turn is None else turn.response_parts
    pending = (state.steering_message, *(state.queued_messages or ()))
    return {
        "turn_id": () if turn is None else (turn.id,),
        "tool_call_id": tuple(
            p.tool_call.tool_call_id for p in parts if isinstance(p, ToolCallResponsePart)
        ),
        "part_id": tuple(i for i in map(part_id, parts) if i is not None),
        "request_id": tuple(
            p.request.id
            for p in parts
            if isinstance(p, InputRequestResponsePart) and p.response is None
        ),
        "id": tuple(m.id for m in pending if m is not None),
    }


POOLS = {
    "turn_id": TURN_IDS,
    "tool_call_id": TOOL_CALL_IDS,
    "part_id": PART_IDS,
    "request_id": REQUEST_IDS,
    "question_id": QUESTION_IDS,
    "id": MESSAGE_IDS,
}
