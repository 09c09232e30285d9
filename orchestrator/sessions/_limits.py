"""The daemon's limits (the ``[limits]`` table of ``daemon.toml``, see
:mod:`orchestrator.server._config`): what one client may send and hold, and how long and how
many sessions stay in memory. Read once, as the daemon is made, and handed to each part that
needs some of them.
"""

from __future__ import annotations

import attrs

from orchestrator.base import JSON_LIMITS, JsonLimits

__all__ = [
    "Limits",
]


@attrs.frozen(kw_only=True)
class Limits:
    max_frame_bytes: int = 65_536
    max_body_bytes: int = 1_048_576
    messages_per_second: float = 20.0
    burst: int = 40
    subscriber_buffer: int = 2_000
    shutdown_grace: float = 5.0
    idle_session: float = 600.0
    # A day: a person comes back to a conversation the next morning; one nobody prompted
    # for a day is over (ended completed, so `prune` can remove it in time).
    idle_conversation: float = 86_400.0
    # A client opens a session and prompts it in the same breath; 30 s covers a slow one,
    # and keeps what a session nobody uses holds short (it is bounded below as well).
    unprompted_session: float = 30.0
    # A person's tabs and scripts open a few sessions at once; dozens unused are a leak or
    # abuse, and must not crowd out the other tokens.
    max_unprompted_per_token: int = 16
    # Each live session holds its state, its bus and a few tasks in memory; 500 bounds that
    # well above what one machine's model budget runs at once (idle ones are put away).
    max_sessions: int = 500
    # One socket each: with the usual 1024 open files (ulimit -n, systemd's default soft
    # limit) 512 leaves room for the journal, the model connections and command tools.
    max_connections: int = 512
    # What the input gate takes from clients: far above what the protocols send, far below
    # what costs the daemon anything (see orchestrator.base._input_gate).
    max_json_depth: int = JSON_LIMITS.max_depth
    max_json_integer_digits: int = JSON_LIMITS.max_integer_digits

    @property
    def json(self) -> JsonLimits:
        """What the input gate takes from clients (:mod:`orchestrator.base._input_gate`)."""
        return JsonLimits(
            max_depth=self.max_json_depth, max_integer_digits=self.max_json_integer_digits
        )
