"""A remote task's states in the taxonomy's words, and the parts that record them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp.state import MarkdownResponsePart, SystemNotificationResponsePart
from orchestrator.core import (
    ARTIFACT_META,
    REMOTE_STATES,
    REMOTE_TASK_META,
    artifact_of,
    artifact_words,
    remote_state,
    remote_task_of,
    remote_task_words,
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


class TestWords:
    """A remote task's state and an artifact said in words, never as raw JSON."""

    @pytest.mark.parametrize(
        ("state", "message", "said"),
        [
            ("submitted", "", "glossary (remote) took the task"),
            ("working", "stale text", "glossary (remote) is working on it"),
            ("input_required", "Which term?", "glossary (remote) needs input: Which term?"),
            ("auth_required", "Sign in", "glossary (remote) needs authentication: Sign in"),
            ("completed", "done", "glossary (remote) completed its task: done"),
            ("failed", "the disk is full", "glossary (remote) failed: the disk is full"),
            ("canceled", "", "glossary (remote) stopped: its task was canceled"),
            ("rejected", "no", "glossary (remote) rejected the task: no"),
            ("unknown", "", "glossary (remote): its task is TASK_STATE_PAUSED"),
        ],
    )
    def test_each_state(self, state: str, message: str, said: str) -> None:
        remote = {
            "agent": "glossary",
            "state": state,
            "rawState": "TASK_STATE_PAUSED",
            "message": message,
        }
        assert remote_task_words(remote) == said

    def test_an_artifact_s_text_data_and_url(self) -> None:
        assert (
            artifact_words(
                {
                    "name": "rows",
                    "mediaType": "application/json",
                    "parts": [{"data": {"rows": 3, "ok": True, "by": None, "cols": [1, 2]}}],
                }
            )
            == "Artifact rows (application/json): "
            "rows = 3, ok = yes, by = nothing, cols = (2 items)"
        )
        assert artifact_words({"artifactId": "a-1", "parts": [{"url": "https://x/y"}]}) == (
            "Artifact a-1: https://x/y"
        )
        assert artifact_words({"name": "n", "append": True, "parts": [{"text": "more"}]}) == (
            "More of artifact n: more"
        )
        long = artifact_words({"name": "n", "parts": [{"text": "x" * 1000}]})
        assert len(long) < 400
        assert long.endswith("…")

    @settings(max_examples=examples(300))
    @given(
        st.dictionaries(
            st.text(alphabet="abcdefgh", min_size=1, max_size=5),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(alphabet="xyz", max_size=5),
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(alphabet="ab", max_size=3), inner, max_size=3)
                ),
                max_leaves=8,
            ),
            max_size=4,
        )
    )
    def test_data_is_never_said_as_json(self, data: dict[str, Any]) -> None:
        said = artifact_words({"name": "d", "parts": [{"data": data}]})
        assert "{" not in said
        assert '"' not in said
