"""KeyedVector: a persistent sequence that must behave exactly like a tuple with an index."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Hashable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp.state import (
    ChatCatalog,
    ChatSummary,
    InputRequestResponsePart,
    MarkdownResponsePart,
    ResponseParts,
    SessionStatus,
    ToolCallResponsePart,
    ToolCallStreamingState,
)
from orchestrator.ahp.state import ChatInputRequest as Request
from orchestrator.ahp.state import ChatInputResponseKind as Response
from orchestrator.base import KeyedVector
from tests.support.examples import examples

Item = tuple[str, str | None]  # (key, tally key)


class Tagged(KeyedVector[Item]):
    """Items found by their first element and tallied by their second."""

    __slots__ = ()

    @staticmethod
    def keys_of(item: Item) -> tuple[Hashable, ...]:
        return (item[0],)

    @staticmethod
    def tally_of(item: Item) -> Hashable | None:
        return item[1]


items = st.tuples(st.sampled_from("abcde"), st.sampled_from([None, "x", "y"]))
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), items),
        st.tuples(st.just("set"), st.integers(0, 50), items),
        st.tuples(st.just("remove"), st.integers(0, 50)),
    ),
    max_size=40,
)


def agrees_with_model(vector: Tagged, model: tuple[Item, ...]) -> None:
    assert vector == model
    assert list(vector) == list(model)
    assert len(vector) == len(model)
    assert hash(vector) == hash(model)
    for key in "abcdef":
        expected = next((i for i, item in enumerate(model) if item[0] == key), None)
        assert vector.find(key) == expected
    assert dict(vector.tally) == dict(Counter(t for _, t in model if t is not None))


class TestAgainstATuple:
    @settings(max_examples=examples(300))
    @given(st.lists(items, max_size=10), operations)
    def test_every_operation_keeps_index_and_tally_exact(
        self, start: list[Item], ops: list[Any]
    ) -> None:
        """After any sequence of appends, replacements and removals the vector equals the
        tuple built the slow way, finds the first item of each key and tallies exactly; the
        versions it was derived from are unchanged."""
        vector, model = Tagged(start), tuple(start)
        history = [(vector, model)]
        for op in ops:
            if op[0] == "append":
                vector, model = vector.append(op[1]), (*model, op[1])
            elif not model:
                continue
            elif op[0] == "set":
                i = op[1] % len(model)
                vector, model = vector.set(i, op[2]), (*model[:i], op[2], *model[i + 1 :])
            else:
                i = op[1] % len(model)
                vector, model = vector.remove(i), model[:i] + model[i + 1 :]
            agrees_with_model(vector, model)
            history.append((vector, model))
        for old_vector, old_model in history:
            agrees_with_model(old_vector, old_model)


class TestSequenceBehaviour:
    def test_slicing_gives_a_tuple(self) -> None:
        vector = Tagged([("a", None), ("b", "x"), ("c", None)])
        assert vector[1:] == (("b", "x"), ("c", None))
        assert vector[-1] == ("c", None)

    def test_positions_count_from_the_end_as_in_a_tuple(self) -> None:
        vector = Tagged([("a", None), ("b", "x"), ("c", None)])
        assert vector.set(-1, ("d", None)) == (("a", None), ("b", "x"), ("d", None))
        assert vector.remove(-3) == (("b", "x"), ("c", None))
        assert vector[::-1] == (("c", None), ("b", "x"), ("a", None))
        for position in (3, -4):
            with pytest.raises(IndexError):
                vector[position]
            with pytest.raises(IndexError):
                vector.set(position, ("d", None))
            with pytest.raises(IndexError):
                vector.remove(position)
        with pytest.raises(TypeError):
            vector["a"]  # type: ignore[call-overload]

    def test_equality_is_by_items_and_never_with_other_types(self) -> None:
        vector = Tagged([("a", None)])
        assert vector == Tagged([("a", None)])
        assert vector == [("a", None)]
        assert vector != (("b", None),)
        assert vector != "a"

    def test_of_keeps_an_instance_and_converts_anything_else(self) -> None:
        vector = Tagged([("a", None)])
        assert Tagged.of(vector) is vector
        assert Tagged.of((("a", None),)) == vector

    def test_every_empty_tuple_is_one_empty_vector_of_each_class(self) -> None:
        empty = Tagged.of(())
        assert empty is Tagged.of(())
        assert type(empty) is Tagged
        assert empty == ()
        assert type(ResponseParts.of(())) is ResponseParts
        assert type(ChatCatalog.of(())) is ChatCatalog
        grown = empty.append(("a", "x"))
        assert empty == ()
        assert empty.find("a") is None
        assert dict(empty.tally) == {}
        assert grown == (("a", "x"),)
        assert Tagged.of(()) == ()
        assert Tagged.of([]) is not empty
        assert Tagged.of([]) == ()

    def test_setting_the_same_item_returns_the_same_vector(self) -> None:
        item: Item = ("a", "x")
        vector = Tagged([item])
        assert vector.set(0, item) is vector

    def test_a_removed_index_points_at_the_next_item_with_the_key(self) -> None:
        vector = Tagged([("a", None), ("b", None), ("a", "x")])
        assert vector.remove(0).find("a") == 1

    def test_repr_names_the_class(self) -> None:
        assert repr(Tagged([("a", None)])) == "Tagged([('a', None)])"


class TestGarbageCollectorFootprint:
    def test_no_object_of_a_large_vector_shows_the_collector_all_its_items(self) -> None:
        """Each object the cyclic collector traverses to reach a vector's items refers to at
        most 64 others (a trie node: 32 children, or 16 key/value pairs), so a new version
        costs the collection that finds it a few nodes, not a visit of every item. A fan-out
        keeps thousands of versions of 10,000-item vectors alive while their batches are in
        flight; a traversal of all items per version made young collections take seconds."""
        vector = Tagged((str(i), "x" if i % 2 else None) for i in range(10_000))
        changed = vector.append(("new", "y")).set(5_000, ("a", None))
        items = {id(item) for item in changed}
        seen: set[int] = set()
        todo: list[object] = [changed]
        widest = 0
        while todo:
            referents = gc.get_referents(todo.pop())
            widest = max(widest, len(referents))
            for referent in referents:
                if isinstance(referent, type):
                    continue  # the vector's class: the walk is about its values
                if id(referent) not in items and id(referent) not in seen:
                    seen.add(id(referent))
                    todo.append(referent)
        assert widest <= 64
        assert len(seen) > 100  # the walk went down the tries, not just around the vector


class TestResponseParts:
    def tool_call(self, tool_call_id: str) -> ToolCallResponsePart:
        return ToolCallResponsePart(
            tool_call=ToolCallStreamingState(
                tool_call_id=tool_call_id, tool_name="search", display_name="Search"
            )
        )

    def test_parts_are_found_by_part_id_and_tool_calls_by_tool_call_id(self) -> None:
        parts = ResponseParts([MarkdownResponsePart(id="md-1", content=""), self.tool_call("tc-1")])
        assert parts.find(("part", "md-1")) == 0
        assert parts.find(("part", "tc-1")) == 1
        assert parts.find(("tool", "tc-1")) == 1
        assert parts.find(("tool", "md-1")) is None

    def test_only_open_input_requests_are_keyed_and_tallied(self) -> None:
        open_request = InputRequestResponsePart(request=Request(id="r-1"))
        parts = ResponseParts([open_request])
        assert parts.find(("input", "r-1")) == 0
        assert parts.tally == {("input",): 1}
        answered = parts.set(
            0, InputRequestResponsePart(request=Request(id="r-1"), response=Response.ACCEPT)
        )
        assert answered.find(("input", "r-1")) is None
        assert answered.tally == {}

    def test_tool_calls_are_tallied_by_status_and_name(self) -> None:
        parts = ResponseParts([self.tool_call("tc-1"), self.tool_call("tc-2")])
        assert parts.tally == {("tool", "streaming", "search"): 2}


class TestChatCatalog:
    def test_entries_are_found_by_resource(self) -> None:
        summary = ChatSummary(
            resource="ahp-chat:/1", title="t", status=SessionStatus.IDLE, modified_at="x"
        )
        catalog = ChatCatalog([summary])
        assert catalog.find("ahp-chat:/1") == 0
        assert catalog.find("ahp-chat:/2") is None


@pytest.mark.parametrize("cls", [ResponseParts, ChatCatalog])
def test_an_empty_vector_equals_the_empty_tuple(cls: type[KeyedVector[Any]]) -> None:
    assert cls(()) == ()
    assert not cls(())
