"""``base.evolve``: the same instance as ``attrs.evolve`` makes, by either of its two paths;
``base.slot_init``: the same instance as the class's ``__init__`` makes."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.ahp.state import ActiveTurn, ChatState, SessionState
from orchestrator.base import evolve, slot_init
from orchestrator.base._evolve import _init_only_stores
from orchestrator.core import Fact
from tests.support.strategies import chat_states, session_states


@attrs.frozen
class Plain:
    a: int
    b: str = "b"


@attrs.frozen
class Converted:
    a: int = attrs.field(converter=int)


@attrs.frozen
class Validated:
    a: int = attrs.field(validator=attrs.validators.instance_of(int))


@attrs.frozen
class PostInit:
    a: int

    def __attrs_post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("negative")


@attrs.frozen(cache_hash=True)
class CachedHash:
    a: int


@attrs.define(slots=False, frozen=True)
class Unslotted:
    a: int


@attrs.frozen
class Private:
    _a: int


def _int_of(value: Any, instance: Any) -> int:
    return int(value)


@attrs.frozen
class TakesSelf:
    a: int = attrs.field(converter=attrs.Converter(_int_of, takes_self=True))  # type: ignore[misc]


@attrs.frozen
class Defaults:
    a: int
    b: str = attrs.field(default="7", converter=int)
    c: tuple[int, ...] = ()
    d: str = attrs.field(default="d", kw_only=True)


@attrs.frozen
class WithFactory:
    a: list[int] = attrs.field(factory=list)


def test_the_slot_copy_is_used_only_where_init_only_stores() -> None:
    stores: tuple[type, ...] = (
        Plain,
        ChatState,
        Private,
        Converted,
        Defaults,
        ActiveTurn,
        SessionState,
        Fact,
    )
    for cls in stores:
        assert _init_only_stores(cls), cls
    for other in (Validated, PostInit, CachedHash, Unslotted, TakesSelf):
        assert not _init_only_stores(other), other


@pytest.mark.parametrize(
    ("instance", "changes"),
    [
        (Plain(a=1), {"b": "c"}),
        (Plain(a=1), {}),
        (Converted(a=1), {"a": "2"}),  # the converter runs
        (Converted(a=1), {}),  # on the values kept too, as attrs.evolve runs it
        (Defaults(1), {"b": "8", "d": "e"}),
        (TakesSelf(a=1), {"a": "2"}),
        (PostInit(a=1), {"a": 2}),
        (CachedHash(a=1), {"a": 2}),
        (Unslotted(a=1), {"a": 2}),
    ],
)
def test_as_attrs_evolve(instance: Any, changes: dict[str, Any]) -> None:
    evolved = evolve(instance, **changes)
    expected = attrs.evolve(instance, **changes)
    assert type(evolved) is type(expected)
    assert evolved == expected
    assert hash(evolved) == hash(expected)


def test_the_validator_and_the_post_init_run() -> None:
    with pytest.raises(TypeError):
        evolve(Validated(a=1), a="not an int")
    with pytest.raises(ValueError, match="negative"):
        evolve(PostInit(a=1), a=-1)


@pytest.mark.parametrize("instance", [Plain(a=1), Converted(a=1)])
def test_an_unknown_field_is_a_type_error(instance: Any) -> None:
    with pytest.raises(TypeError, match="has no field"):
        evolve(instance, nope=1)


def test_a_copied_instance_is_still_frozen() -> None:
    copied = evolve(Plain(a=1), a=2)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        copied.a = 3  # type: ignore[misc]


@given(chat_states(), chat_states())
def test_chat_states_as_attrs_evolve(chat: ChatState, other: ChatState) -> None:
    """Every field of one generated chat taken over by another, one field at a time."""
    for field in attrs.fields(ChatState):
        changes: dict[str, Any] = {field.name: getattr(other, field.name)}
        evolved = evolve(chat, **changes)
        assert evolved == attrs.evolve(chat, **changes)
        assert attrs.asdict(evolved, recurse=False) == {
            **attrs.asdict(chat, recurse=False),
            **changes,
        }


@given(session_states(), st.data())
def test_session_states_as_attrs_evolve(session: SessionState, data: st.DataObject) -> None:
    other = data.draw(session_states())
    changes: dict[str, Any] = {"chats": other.chats, "title": other.title}
    assert evolve(session, **changes) == attrs.evolve(session, **changes)


@given(chat_states(), chat_states())
def test_active_turns_as_attrs_evolve(chat: ChatState, other: ChatState) -> None:
    """An active turn (whose parts are converted) given another's parts, or its own again."""
    if chat.active_turn is None:
        return
    turn = chat.active_turn
    for parts in (tuple(other.active_turn.response_parts if other.active_turn else ()), ()):
        evolved = evolve(turn, response_parts=parts)
        expected = attrs.evolve(turn, response_parts=parts)
        assert type(evolved.response_parts) is type(expected.response_parts)
        assert evolved == expected
    assert evolve(turn, id="other") == attrs.evolve(turn, id="other")


# ─── slot_init ───────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("cls", "args", "kwargs"),
    [
        (Plain, (1,), {}),
        (Plain, (1, "c"), {}),
        (Plain, (), {"a": 1, "b": "c"}),
        (Converted, ("2",), {}),  # the converter runs
        (Defaults, (1,), {}),  # on a default too
        (Defaults, (1, "8", (2,)), {"d": "e"}),
        (Private, (3,), {}),
        (Validated, (1,), {}),
        (PostInit, (1,), {}),
        (WithFactory, (), {}),
    ],
)
def test_slot_init_makes_what_init_makes(
    cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    made = slot_init(cls)(*args, **kwargs)
    expected = cls(*args, **kwargs)
    assert type(made) is cls
    assert made == expected
    assert attrs.asdict(made, recurse=False) == attrs.asdict(expected, recurse=False)


def test_slot_init_is_the_class_where_init_does_more() -> None:
    for cls in (Validated, PostInit, CachedHash, Unslotted, TakesSelf, WithFactory):
        assert slot_init(cls) is cls, cls
    with pytest.raises(TypeError):
        slot_init(Validated)(a="not an int")


def test_slot_init_takes_the_same_parameters() -> None:
    init = slot_init(Defaults)
    with pytest.raises(TypeError):
        init()  # a is required
    with pytest.raises(TypeError):
        init(1, "8", (), "e")  # d is keyword-only
    with pytest.raises(TypeError):
        init(1, nope=2)
    made = slot_init(Plain)(a=1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.a = 3  # type: ignore[misc]


@given(chat_states(), session_states())
def test_slot_init_of_protocol_values(chat: ChatState, session: SessionState) -> None:
    """A chat, a session, an active turn and a fact rebuilt from their fields by slot_init."""
    values: list[Any] = [chat, session, chat.active_turn]
    values.append(
        Fact(sequence=1, session="ahp-session:/s", channel=chat.resource, at="t", action=None)  # type: ignore[arg-type]
    )
    for value in values:
        if value is None:
            continue
        fields = {f.alias: getattr(value, f.name) for f in attrs.fields(type(value))}
        made = slot_init(type(value))(**fields)
        assert made == value
        assert attrs.asdict(made, recurse=False) == attrs.asdict(value, recurse=False)
