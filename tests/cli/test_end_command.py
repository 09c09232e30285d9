"""``orchestrator end SESSION`` (``cli/_end_command``): which running session a user's words
name (ending one on a real daemon: tests/sessions/test_conversation.py)."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import RunError
from orchestrator.cli._end_command import MIN_PREFIX, end, session_named
from orchestrator.cli._main import build_parser
from tests.support.examples import examples

RUNNING = ["3f2a9c10-aaaa", "3f2a9c10-bbbb", "77e1d2c3-cccc"]


class TestSessionNamed:
    def test_an_id_names_itself(self) -> None:
        assert session_named(RUNNING, "77e1d2c3-cccc") == "77e1d2c3-cccc"

    def test_the_start_of_one_id_names_that_session(self) -> None:
        assert session_named(RUNNING, "77e1") == "77e1d2c3-cccc"
        assert session_named(RUNNING, "3f2a9c10-b") == "3f2a9c10-bbbb"

    def test_a_start_shorter_than_four_characters_names_nothing(self) -> None:
        """It is passed on as it is (the daemon then says there is no such session)."""
        assert MIN_PREFIX == 4
        assert session_named(RUNNING, "77e") == "77e"

    def test_a_start_no_running_id_has_is_passed_on(self) -> None:
        assert session_named(RUNNING, "0000-gone") == "0000-gone"
        assert session_named([], "77e1d2c3") == "77e1d2c3"

    def test_a_start_of_several_ids_is_an_error_naming_them(self) -> None:
        with pytest.raises(RunError) as ambiguous:
            session_named(RUNNING, "3f2a")
        assert str(ambiguous.value) == (
            "2 running sessions start with '3f2a' (3f2a9c10-aaaa, 3f2a9c10-bbbb): "
            "give more of the id"
        )

    def test_many_are_shown_five_and_an_ellipsis(self) -> None:
        running = [f"abcd-{n}" for n in range(7)]
        with pytest.raises(RunError, match=r"^7 running sessions start with 'abcd' \(") as many:
            session_named(running, "abcd")
        assert "(abcd-0, abcd-1, abcd-2, abcd-3, abcd-4, ...)" in str(many.value)

    @settings(max_examples=examples(80))
    @given(
        st.lists(st.text("0123456789abcdef-", min_size=1, max_size=12), unique=True, max_size=8),
        st.text("0123456789abcdef-", max_size=12),
    )
    def test_the_answer_is_the_id_itself_or_the_one_it_starts(
        self, running: list[str], wanted: str
    ) -> None:
        try:
            named = session_named(running, wanted)
        except RunError:
            starting = [s for s in running if s.startswith(wanted)]
            assert wanted not in running
            assert len(wanted) >= MIN_PREFIX
            assert len(starting) > 1
            return
        if wanted in running:
            assert named == wanted
        else:
            assert named == wanted or (named in running and named.startswith(wanted))
            assert named == wanted or len(wanted) >= MIN_PREFIX


@pytest.mark.parametrize("session", ["", "ahp-session:/"])
def test_an_empty_session_is_bad_input_before_any_daemon_is_asked(session: str) -> None:
    args = build_parser().parse_args(["end", session, "--url", "http://127.0.0.1:9"])
    with pytest.raises(RunError, match="SESSION is empty: give an id the web view"):
        end(args, io.StringIO())
