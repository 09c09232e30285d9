"""The team state's records, and the overlays a batch writes through: a read sees the batch's
own writes, then those of the batches in flight before it, then the committed store; a
recorded batch hands out what each of its actions wrote."""

from __future__ import annotations

from collections import ChainMap
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core import Member, TaskStarted, Transition
from orchestrator.core._team_records import Overlay, StoreKind
from tests.support.examples import examples

keys = st.sampled_from("abcd")
stores = st.dictionaries(keys, st.integers(0, 9), max_size=4)


@settings(max_examples=examples(100))
@given(base=stores, pending=stores, writes=st.lists(st.tuples(keys, st.integers(10, 19))))
def test_a_read_sees_the_newest_write(
    base: dict[str, int], pending: dict[str, int], writes: list[tuple[str, int]]
) -> None:
    overlay: Overlay[str, int] = Overlay(dict(base), dict(pending))
    for key, value in writes:
        overlay[key] = value
    newest = ChainMap(dict(writes), pending, base)
    assert {key: overlay.get(key) for key in "abcde"} == {key: newest.get(key) for key in "abcde"}


def test_writes_stay_in_the_overlay() -> None:
    base, pending = {"a": 1}, {"b": 2}
    overlay: Overlay[str, int] = Overlay(base, pending)
    overlay["a"] = 3
    assert (base, pending, overlay.writes) == ({"a": 1}, {"b": 2}, {"a": 3})


def test_a_shared_log_takes_every_write_in_order_with_its_store() -> None:
    log: list[tuple[StoreKind, Any, Any]] = []
    chats: Overlay[str, int] = Overlay({}, {}, kind="chat", log=log)
    tasks: Overlay[str, int] = Overlay({}, {}, kind="task", log=log)
    chats["c"] = 1
    tasks["t"] = 2
    chats["c"] = 3
    assert log == [("chat", "c", 1), ("task", "t", 2), ("chat", "c", 3)]
    assert chats.writes == {"c": 3}


def transition(*, record: bool) -> Transition:
    log: list[tuple[StoreKind, Any, Any]] | None = [] if record else None
    return Transition(
        actions=[],
        session=None,
        run=None,
        chats=Overlay({}, {}, kind="chat", log=log),
        members=Overlay({}, {}, kind="member", log=log),
        tasks=Overlay({}, {}, kind="task", log=log),
        approvals=Overlay({}, {}, kind="approval", log=log),
    )


def test_a_recorded_batch_hands_out_each_action_s_writes() -> None:
    batch = transition(record=True)
    assert batch.recorded
    writer = Member(chat="ahp-chat:/w", agent="writer", role="worker", task="task-1")
    editor = Member(chat="ahp-chat:/e", agent="editor", role="worker", task="task-2")
    batch.actions = [("s", TaskStarted(task=f"task-{i}", chat="ahp-chat:/w")) for i in range(3)]
    batch.members[writer.chat] = writer
    batch.step()
    batch.step()  # an action that wrote nothing
    batch.members[editor.chat] = editor
    batch.members[writer.chat] = editor
    batch.step()
    changes = batch.changes()
    assert [change.writes for change in changes] == [
        (("member", writer.chat, writer),),
        (),
        (("member", editor.chat, editor), ("member", writer.chat, editor)),
    ]
    assert all(change.session is None and change.run is None for change in changes)


def test_a_batch_prepared_without_record_notes_nothing() -> None:
    batch = transition(record=False)
    assert not batch.recorded
    batch.members["ahp-chat:/w"] = Member(chat="ahp-chat:/w", agent="a", role="worker", task="t")
    assert batch.members.log is None
