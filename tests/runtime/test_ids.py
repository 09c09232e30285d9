"""The ids of one run."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.usefixtures("every_scenario_is_checked")


@given(st.binary(min_size=16, max_size=16))
def test_uuid4_text_is_the_text_of_a_version_4_uuid(random: bytes) -> None:
    """The ids of sessions, chats and runs: the text uuid.UUID makes of the same bytes."""
    import uuid

    from orchestrator.runtime._ids import uuid4_text

    assert uuid4_text(random) == str(uuid.UUID(bytes=random, version=4))
    assert uuid.UUID(uuid4_text(random)).version == 4
