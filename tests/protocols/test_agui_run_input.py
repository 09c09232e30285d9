"""Reading an AG-UI ``RunAgentInput``: the request it comes to, and the errors that name
the field at fault."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.base import RunInputError
from orchestrator.protocols import ResumeDecision, parse_run_input
from tests.support import strategies
from tests.support.paths import PROTOCOLS

FIXTURES = PROTOCOLS / "ag-ui" / "draft" / "fixtures" / "RunAgentInput"


def body(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "Ship it"}],
    }
    base.update(fields)
    return base


class TestParseRunInput:
    @pytest.mark.parametrize(
        "path", sorted((FIXTURES / "valid").glob("*.json")), ids=lambda p: p.stem
    )
    def test_every_valid_fixture_is_read(self, path: Any) -> None:
        request = parse_run_input(json.loads(path.read_text()))
        assert request.thread_id == "t1"

    def test_the_full_fixture(self) -> None:
        request = parse_run_input(json.loads((FIXTURES / "valid" / "full.json").read_text()))
        assert (request.run_id, request.parent_run_id) == ("r2", "r1")
        assert (request.user_message, request.user_message_id) == ("hello", "3")
        assert request.new_user_message is False  # the conversation ends with reasoning
        assert request.resume == (ResumeDecision(approval="i1", approved=True),)

    @pytest.mark.parametrize(
        ("name", "path"),
        [
            ("messages-missing", "$.messages"),
            ("messages-item-not-a-message", "$.messages[0]"),
            ("resume-item-not-a-resume-entry", "$.resume[0]"),
        ],
    )
    def test_invalid_fixtures_name_the_field(self, name: str, path: str) -> None:
        with pytest.raises(RunInputError) as caught:
            parse_run_input(json.loads((FIXTURES / "invalid" / f"{name}.json").read_text()))
        assert caught.value.path == path
        assert isinstance(caught.value, ValueError)
        assert str(caught.value).startswith(f"ag-ui: {path}: ")

    def test_a_new_user_message(self) -> None:
        request = parse_run_input(body())
        assert (request.user_message, request.new_user_message, request.resume) == (
            "Ship it",
            True,
            (),
        )

    def test_a_message_of_a_role_it_does_not_know_is_skipped(self) -> None:
        """A newer client's role is no user message, and not an error."""
        user = {"id": "m1", "role": "user", "content": "Ship it"}
        hologram = {"id": "m2", "role": "hologram", "content": {"beam": 3}}
        request = parse_run_input(body(messages=[user, hologram]))
        assert (request.user_message, request.user_message_id, request.new_user_message) == (
            "Ship it",
            "m1",
            False,
        )

    @given(data=st.data())
    def test_keys_it_does_not_know_change_nothing(self, data: st.DataObject) -> None:
        """A newer client's keys, at any depth, are read past: the request is the same."""
        content = [{"type": "text", "text": "look"}, {"type": "image", "source": {"x": 1}}]
        original = body(
            messages=[
                {"id": "m0", "role": "assistant", "content": "hi"},
                {"id": "m1", "role": "user", "content": content},
            ],
            resume=[
                {"interruptId": "a", "status": "resolved", "payload": {"approved": True}},
                {"interruptId": "b", "status": "cancelled"},
            ],
        )
        extended = data.draw(strategies.with_unknown_keys(original))
        assert parse_run_input(extended) == parse_run_input(original)

    def test_text_parts_are_joined_and_media_skipped(self) -> None:
        content = [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "url", "value": "https://x.invalid/a.png"}},
            {"type": "text", "text": "here"},
        ]
        request = parse_run_input(body(messages=[{"id": "m", "role": "user", "content": content}]))
        assert request.user_message == "look\nhere"

    @pytest.mark.parametrize(
        ("entry", "decision"),
        [
            ({"status": "resolved", "payload": True}, ResumeDecision(approval="a", approved=True)),
            (
                {"status": "resolved", "payload": {"approved": False, "reason": "no"}},
                ResumeDecision(approval="a", approved=False, reason="no"),
            ),
            (
                {"status": "cancelled"},
                ResumeDecision(approval="a", approved=False, reason="cancelled by the user"),
            ),
        ],
    )
    def test_resume_decisions(self, entry: dict[str, Any], decision: ResumeDecision) -> None:
        request = parse_run_input(body(resume=[{"interruptId": "a", **entry}]))
        assert request.resume == (decision,)

    @pytest.mark.parametrize(
        ("fields", "path", "message"),
        [
            ({"threadId": 3}, "$.threadId", "expected a string, got a number"),
            ({"runId": ""}, "$.runId", "must not be empty"),
            (
                {"messages": [{"id": "m", "role": 7}]},
                "$.messages[0].role",
                "expected a string, got a number",
            ),
            (
                {"messages": [{"id": "m", "role": "user", "content": 7}]},
                "$.messages[0].content",
                "expected a string or an array",
            ),
            (
                {"messages": [{"id": "m", "role": "user", "content": [{"type": "text"}]}]},
                "$.messages[0].content[0].text",
                "missing",
            ),
            ({"resume": {}}, "$.resume", "expected an array"),
            (
                {"resume": [{"interruptId": "a", "status": "expired"}]},
                "$.resume[0].status",
                'expected "resolved" or "cancelled"',
            ),
            (
                {"resume": [{"interruptId": "a", "status": "resolved"}]},
                "$.resume[0].payload",
                "missing",
            ),
            (
                {"resume": [{"interruptId": "a", "status": "resolved", "payload": "yes"}]},
                "$.resume[0].payload",
                "expected true, false",
            ),
            (
                {
                    "resume": [
                        {"interruptId": "a", "status": "resolved", "payload": {"approved": "yes"}}
                    ]
                },
                "$.resume[0].payload.approved",
                "expected true or false",
            ),
            (
                {
                    "resume": [
                        {
                            "interruptId": "a",
                            "status": "resolved",
                            "payload": {"approved": True, "reason": 1},
                        }
                    ]
                },
                "$.resume[0].payload.reason",
                "expected a string",
            ),
            (
                {
                    "resume": [
                        {"interruptId": "a", "status": "cancelled"},
                        {"interruptId": "a", "status": "cancelled"},
                    ]
                },
                "$.resume[1].interruptId",
                "answered twice",
            ),
        ],
    )
    def test_bad_fields_are_named(self, fields: dict[str, Any], path: str, message: str) -> None:
        with pytest.raises(RunInputError) as caught:
            parse_run_input(body(**fields))
        assert caught.value.path == path
        assert message in caught.value.message

    @settings(suppress_health_check=[HealthCheck.too_slow])
    @given(
        value=st.recursive(
            st.none()
            | st.booleans()
            | st.integers()
            | st.text(max_size=3)
            | st.sampled_from(["user", "resolved", "cancelled", "text"]),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(
                        [
                            "threadId",
                            "runId",
                            "messages",
                            "id",
                            "role",
                            "content",
                            "type",
                            "text",
                            "resume",
                            "interruptId",
                            "status",
                            "payload",
                            "approved",
                            "reason",
                        ]
                    ),
                    inner,
                    max_size=6,
                )
            ),
            max_leaves=20,
        )
    )
    def test_any_json_is_read_or_refused_clearly(self, value: Any) -> None:
        """Whatever the body, the result is a request or a RunInputError naming a path."""
        error: RunInputError | None = None
        try:
            parse_run_input(value)
        except RunInputError as exc:
            error = exc
        if error is not None:
            assert error.path.startswith("$")
            assert error.message

    @given(
        field=st.sampled_from(["threadId", "runId", "messages", "resume"]),
        junk=st.sampled_from([None, 1, 1.5, True, "x", [], {}]),
    )
    def test_a_broken_field_is_the_one_named(self, field: str, junk: Any) -> None:
        bad = body(resume=[])
        bad[field] = junk
        ok_values = {"threadId": ("x",), "runId": ("x",), "messages": ([],), "resume": ([], None)}
        if any(type(junk) is type(ok) and junk == ok for ok in ok_values[field]):
            parse_run_input(bad)
            return
        with pytest.raises(RunInputError) as caught:
            parse_run_input(bad)
        assert caught.value.path == f"$.{field}"
