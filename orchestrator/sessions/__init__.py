"""The daemon's domain: which sessions it runs, takes up, follows and forwards, and what
they hold. The daemon and its live sessions, sessions other nodes or processes run (followed,
their commands forwarded), the cluster of nodes on one PostgreSQL journal, the root channel,
the background teammates' scheduler, the sessions' folds and team logs, and the limits.

Below the server: the transport (sockets, endpoints, auth, the web view) reaches a session
through here, and nothing here knows how a client is connected.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._cluster import *  # noqa: F403
    from ._daemon import *  # noqa: F403
    from ._expected_action import *  # noqa: F403
    from ._finding import *  # noqa: F403
    from ._followed import *  # noqa: F403
    from ._following import *  # noqa: F403
    from ._following_for import *  # noqa: F403
    from ._forks import *  # noqa: F403
    from ._forwarding import *  # noqa: F403
    from ._idle_sessions import *  # noqa: F403
    from ._limits import *  # noqa: F403
    from ._live_session import *  # noqa: F403
    from ._opening import *  # noqa: F403
    from ._reclaim import *  # noqa: F403
    from ._root_channel import *  # noqa: F403
    from ._runs import *  # noqa: F403
    from ._scheduler import *  # noqa: F403
    from ._session_folds import *  # noqa: F403
    from ._shared_text import *  # noqa: F403
    from ._sqlite_following import *  # noqa: F403
    from ._team_log import *  # noqa: F403
    from ._team_reference import *  # noqa: F403
    from ._team_runtimes import *  # noqa: F403
    from ._teams import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "CHAT_PREFIX": "._live_session",
            "Cluster": "._cluster",
            "Command": "._forwarding",
            "CommandRoute": "._followed",
            "CommandServer": "._forwarding",
            "Companion": "._daemon",
            "Daemon": "._daemon",
            "DaemonStatistics": "._daemon",
            "EnvelopeCache": "._session_folds",
            "EnvelopeFold": "._session_folds",
            "ExpectedAction": "._expected_action",
            "FollowedRuntime": "._followed",
            "Following": "._following",
            "FollowingStatistics": "._following",
            "Forwarder": "._forwarding",
            "GraphCache": "._session_folds",
            "IdleSessions": "._idle_sessions",
            "Limits": "._limits",
            "LiveSession": "._live_session",
            "NoFollowing": "._following",
            "ReadFacts": "._team_log",
            "ReclaimStatistics": "._reclaim",
            "Reclaimer": "._reclaim",
            "Refusal": "._followed",
            "RootChannel": "._root_channel",
            "RootSubscription": "._root_channel",
            "SESSION_PREFIX": "._live_session",
            "Scheduler": "._scheduler",
            "SessionFinder": "._finding",
            "SessionFolds": "._session_folds",
            "SessionLocks": "._finding",
            "SessionOpener": "._opening",
            "SessionRecorder": "._live_session",
            "SessionRuns": "._runs",
            "SessionRuntime": "._live_session",
            "SharedText": "._shared_text",
            "SqliteFollowing": "._sqlite_following",
            "TeamCatalog": "._teams",
            "TeamFiles": "._teams",
            "TeamLog": "._team_log",
            "TeamRuntimes": "._team_runtimes",
            "Teammate": "._scheduler",
            "Watch": "._scheduler",
            "ahp_envelopes": "._live_session",
            "carry_out": "._forwarding",
            "decode_command": "._forwarding",
            "decode_error": "._forwarding",
            "decode_origin": "._expected_action",
            "decode_selection": "._forwarding",
            "default_node": "._daemon",
            "describe_schedule": "._scheduler",
            "encode_error": "._forwarding",
            "encode_origin": "._expected_action",
            "encode_selection": "._forwarding",
            "follow_session": "._followed",
            "following_for": "._following_for",
            "fork_session": "._forks",
            "is_team_reference": "._team_reference",
            "load_team_reference": "._team_reference",
            "load_teams": "._teams",
            "session_channel_state": "._root_channel",
            "session_id": "._live_session",
            "session_uri": "._live_session",
            "team_frame": "._team_log",
        },
    )
