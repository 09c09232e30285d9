"""``base.evolve``: the same instance as ``attrs.evolve`` makes, by either of its two paths."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.ahp import ActiveTurn, ChatState, SessionState
from orchestrator.base import evolve
from orchestrator.base._evolve import _init_only_stores

from .strategies import chat_states, session_states


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


def test_the_slot_copy_is_used_only_where_init_only_stores() -> None:
    assert _init_only_stores(Plain)
    assert _init_only_stores(ChatState)
    assert _init_only_stores(Private)
    for cls in (Converted, Validated, PostInit, CachedHash, Unslotted, ActiveTurn, SessionState):
        assert not _init_only_stores(cls), cls


@pytest.mark.parametrize(
    ("instance", "changes"),
    [
        (Plain(a=1), {"b": "c"}),
        (Plain(a=1), {}),
        (Converted(a=1), {"a": "2"}),  # the converter runs
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
