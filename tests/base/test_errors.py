"""The package's errors: one tree under :class:`OrchestratorError`, and messages that name what
was wrong and where (the protocol and path, the file and key path, the channel and state)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import (
    ConfigError,
    FactLogError,
    IllegalTransitionError,
    LocalProtocolError,
    ModelError,
    ModelRequestError,
    ModelStreamError,
    OrchestratorError,
    OutputSchemaError,
    PeerProtocolError,
    ProtocolError,
    RemoteAgentError,
    RpcError,
    RunError,
    RunInputError,
    ScheduleError,
    SessionExistsError,
    SessionLimitError,
    TeamFileError,
    UnavailableError,
    _errors,
)
from tests.support.examples import examples


class TestTree:
    def test_every_error_is_an_orchestrator_error(self) -> None:
        """A caller that catches OrchestratorError catches every error raised on purpose."""
        classes = [getattr(_errors, name) for name in _errors.__all__]
        assert all(issubclass(cls, OrchestratorError) for cls in classes)
        assert len(classes) == 20

    @pytest.mark.parametrize(
        ("error", "bases"),
        [
            (PeerProtocolError, (ProtocolError,)),
            (LocalProtocolError, (ProtocolError,)),
            (RunInputError, (PeerProtocolError, ValueError)),
            (ScheduleError, (ValueError,)),
            (SessionExistsError, (RunError,)),
            (SessionLimitError, (RunError,)),
            (ModelRequestError, (ModelError, RunError)),
            (ModelStreamError, (ModelError, RunError)),
            (OutputSchemaError, (ModelError, RunError)),
            (RemoteAgentError, (ModelError, RunError)),
        ],
    )
    def test_where_each_error_sits(self, error: type[Exception], bases: tuple[type, ...]) -> None:
        assert all(issubclass(error, base) for base in bases)

    def test_the_two_sides_of_a_protocol_error_are_apart(self) -> None:
        """The peer's fault and ours are told apart by class, not by message."""
        assert not issubclass(PeerProtocolError, LocalProtocolError)
        assert not issubclass(LocalProtocolError, PeerProtocolError)
        assert not issubclass(UnavailableError, RunError)


class TestProtocolErrors:
    def test_the_text_names_the_protocol_and_the_path(self) -> None:
        error = PeerProtocolError("expected a string", path="$.turns[0].id")
        assert str(error) == "ahp: $.turns[0].id: expected a string"
        assert (error.message, error.path, error.protocol) == (
            "expected a string",
            "$.turns[0].id",
            "ahp",
        )

    def test_the_path_defaults_to_the_root(self) -> None:
        assert str(LocalProtocolError("bad", protocol="agent-ui")) == "agent-ui: $: bad"

    def test_a_run_input_error_is_ag_ui_s_and_a_value_error(self) -> None:
        with pytest.raises(ValueError, match=r"ag-ui: \$\.resume\[0\]: no such interrupt"):
            raise RunInputError("no such interrupt", path="$.resume[0]")


class TestIllegalTransitionError:
    def test_the_text_names_the_action_the_channel_and_the_state(self) -> None:
        error = IllegalTransitionError(
            "no active turn", action_type="chat/delta", channel="ahp-chat:/c", state="idle"
        )
        assert str(error) == "chat/delta refused on ahp-chat:/c (state: idle): no active turn"
        assert error.reason == "no active turn"
        assert error.tool_call_id is None

    def test_a_tool_call_s_id_is_named_quoted(self) -> None:
        error = IllegalTransitionError(
            "completed calls take no delta",
            action_type="chat/toolCallDelta",
            channel="ahp-chat:/c",
            state="tool call completed",
            tool_call_id="tc-1",
        )
        assert str(error) == (
            "chat/toolCallDelta refused on ahp-chat:/c tool call 'tc-1' "
            "(state: tool call completed): completed calls take no delta"
        )


def test_an_rpc_error_keeps_what_goes_back_to_the_peer() -> None:
    error = RpcError(-32602, "unknown session", data={"uri": "s"}, id=7)
    assert str(error) == "-32602: unknown session"
    assert (error.code, error.message, error.data, error.id) == (
        -32602,
        "unknown session",
        {"uri": "s"},
        7,
    )
    assert RpcError(-32700, "parse error").id is None


class TestTeamFileError:
    def test_the_text_names_the_file_and_the_key_path(self) -> None:
        error = TeamFileError("expected a string", file="t.toml", key_path="agents.lead.model")
        assert str(error) == "t.toml: agents.lead.model: expected a string"
        assert error.problems == (error,)

    def test_without_a_key_path_the_file_alone(self) -> None:
        assert str(TeamFileError("not UTF-8", file="t.toml")) == "t.toml: not UTF-8"

    def test_one_problem_is_itself(self) -> None:
        problem = TeamFileError("bad", file="t.toml", key_path="team")
        assert TeamFileError.of([problem]) is problem

    def test_several_problems_are_one_line_each(self) -> None:
        first = TeamFileError("bad", file="t.toml", key_path="team.name")
        second = TeamFileError("worse", file="t.toml", key_path="agents.a")
        error = TeamFileError.of([first, second])
        assert str(error) == "t.toml: team.name: bad\nt.toml: agents.a: worse"
        assert error.message == "2 problems"
        assert error.file == "t.toml"
        assert error.problems == (first, second)

    @settings(max_examples=examples(50))
    @given(st.lists(st.sampled_from(["team", "agents.a", "tools.x", ""]), min_size=1, max_size=5))
    def test_of_keeps_every_problem_in_order(self, paths: list[str]) -> None:
        problems = [
            TeamFileError(f"problem {i}", file="t.toml", key_path=path)
            for i, path in enumerate(paths)
        ]
        error = TeamFileError.of(problems)
        assert error.problems == tuple(problems)
        assert str(error).splitlines() == [str(p) for p in problems]


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (ConfigError("not a number", file="d.toml", key_path="limits.x"), "d.toml: limits.x: "),
        (ConfigError("not TOML", file="d.toml"), "d.toml: "),
        (FactLogError("bad checksum", source="j.db", line=12), "j.db:12: "),
        (FactLogError("gone", source="j.db"), "j.db: "),
    ],
)
def test_file_errors_name_where(error: OrchestratorError, text: str) -> None:
    assert str(error) == text + error.message  # type: ignore[attr-defined]


def test_the_run_errors_keep_their_details() -> None:
    exists = SessionExistsError("taken", uri="ahp-session:/s", ended=True)
    assert (str(exists), exists.uri, exists.ended) == ("taken", "ahp-session:/s", True)
    limit = SessionLimitError("busy", limit="max_sessions", per_principal=False)
    assert (limit.limit, limit.per_principal) == ("max_sessions", False)
    refused = ModelRequestError("rate limited", status=429, retry_after=2.5)
    assert (str(refused), refused.status, refused.retry_after) == ("rate limited", 429, 2.5)
    assert ModelRequestError("unreachable").status is None
    assert ScheduleError("bad cron").message == "bad cron"
