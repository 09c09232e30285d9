"""A remote task's states in the taxonomy's words, and the parts that record them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp.state import MarkdownResponsePart, SystemNotificationResponsePart
from orchestrator.core import (
    ARTIFACT_META,
    REMOTE_STATES,
    REMOTE_TASK_META,
    artifact_of,
    remote_state,
    remote_task_of,
)
from tests.support.examples import examples


class TestRemoteState:
    @pytest.mark.parametrize("word", REMOTE_STATES)
    def test_the_protobuf_name_and_the_json_name_give_the_word(self, word: str) -> None:
        assert remote_state("TASK_STATE_" + word.upper()) == word
        assert remote_state(word.replace("_", "-")) == word

    def test_the_british_spelling_is_the_same_state(self) -> None:
        assert remote_state("cancelled") == "canceled"

    @pytest.mark.parametrize("raw", ["TASK_STATE_UNSPECIFIED", "9", "TASK_STATE_PAUSED", ""])
    def test_a_state_it_does_not_name_is_unknown(self, raw: str) -> None:
        assert remote_state(raw) == "unknown"

    @settings(max_examples=examples(300))
    @given(st.text())
    def test_every_input_gives_a_word_of_the_taxonomy_or_unknown(self, raw: str) -> None:
        assert remote_state(raw) in {*REMOTE_STATES, "unknown"}


class TestParts:
    def test_a_remote_task_part_is_read_back(self) -> None:
        meta = {"remoteTaskId": "t-1", "state": "working"}
        part = SystemNotificationResponsePart(content="x", meta={REMOTE_TASK_META: meta})
        assert remote_task_of(part) == meta
        assert artifact_of(part) is None

    def test_an_artifact_part_is_read_back(self) -> None:
        meta = {"artifactId": "a-1"}
        part = SystemNotificationResponsePart(content="x", meta={ARTIFACT_META: meta})
        assert artifact_of(part) == meta
        assert remote_task_of(part) is None

    @pytest.mark.parametrize(
        "part",
        [
            MarkdownResponsePart(id="p", content="remoteTask"),
            SystemNotificationResponsePart(content="x"),
            SystemNotificationResponsePart(content="x", meta={REMOTE_TASK_META: "not a table"}),
            SystemNotificationResponsePart(content="x", meta={"steering": "m-1"}),
        ],
    )
    def test_other_parts_record_none(self, part: object) -> None:
        assert remote_task_of(part) is None  # type: ignore[arg-type]
        assert artifact_of(part) is None  # type: ignore[arg-type]
