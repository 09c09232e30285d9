"""The daemon's domain: which sessions it runs, takes up, follows and forwards, and what
they hold. The daemon and its live sessions, sessions other nodes or processes run (followed,
their commands forwarded), the cluster of nodes on one PostgreSQL journal, the root channel,
the background teammates' scheduler, the sessions' folds and team logs, and the limits.

Below the server: the transport (sockets, endpoints, auth, the web view) reaches a session
through here, and nothing here knows how a client is connected.
"""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._cluster import (
        Cluster,
    )
    from ._daemon import (
        Companion,
        Daemon,
        DaemonStatistics,
        default_node,
    )
    from ._expected_action import (
        ExpectedAction,
        decode_origin,
        encode_origin,
    )
    from ._finding import (
        SessionFinder,
        SessionLocks,
    )
    from ._followed import (
        CommandRoute,
        FollowedRuntime,
        Refusal,
        follow_session,
    )
    from ._forwarding import (
        Command,
        CommandServer,
        Forwarder,
        carry_out,
        decode_command,
        decode_error,
        encode_error,
    )
    from ._idle_sessions import (
        IdleSessions,
    )
    from ._limits import (
        Limits,
    )
    from ._live_session import (
        CHAT_PREFIX,
        SESSION_PREFIX,
        LiveSession,
        SessionRecorder,
        SessionRuntime,
        ahp_envelopes,
        session_id,
        session_uri,
    )
    from ._opening import (
        SessionOpener,
    )
    from ._reclaim import (
        Reclaimer,
        ReclaimStatistics,
    )
    from ._root_channel import (
        RootChannel,
        RootSubscription,
        session_channel_state,
    )
    from ._runs import (
        SessionRuns,
    )
    from ._scheduler import (
        Scheduler,
        Teammate,
        Watch,
        describe_schedule,
    )
    from ._session_folds import (
        EnvelopeCache,
        EnvelopeFold,
        GraphCache,
        SessionFolds,
    )
    from ._shared_text import (
        SharedText,
    )
    from ._sqlite_following import (
        SqliteFollowing,
    )
    from ._team_log import (
        ReadFacts,
        TeamLog,
        team_frame,
    )
    from ._team_runtimes import (
        TeamRuntimes,
    )
    from ._teams import (
        TeamCatalog,
        TeamFiles,
        load_teams,
    )

__all__ = [
    "CHAT_PREFIX",
    "SESSION_PREFIX",
    "Cluster",
    "Command",
    "CommandRoute",
    "CommandServer",
    "Companion",
    "Daemon",
    "DaemonStatistics",
    "EnvelopeCache",
    "EnvelopeFold",
    "ExpectedAction",
    "FollowedRuntime",
    "Forwarder",
    "GraphCache",
    "IdleSessions",
    "Limits",
    "LiveSession",
    "ReadFacts",
    "ReclaimStatistics",
    "Reclaimer",
    "Refusal",
    "RootChannel",
    "RootSubscription",
    "Scheduler",
    "SessionFinder",
    "SessionFolds",
    "SessionLocks",
    "SessionOpener",
    "SessionRecorder",
    "SessionRuns",
    "SessionRuntime",
    "SharedText",
    "SqliteFollowing",
    "TeamCatalog",
    "TeamFiles",
    "TeamLog",
    "TeamRuntimes",
    "Teammate",
    "Watch",
    "ahp_envelopes",
    "carry_out",
    "decode_command",
    "decode_error",
    "decode_origin",
    "default_node",
    "describe_schedule",
    "encode_error",
    "encode_origin",
    "follow_session",
    "load_teams",
    "session_channel_state",
    "session_id",
    "session_uri",
    "team_frame",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "._cluster": ("Cluster",),
            "._daemon": (
                "Companion",
                "Daemon",
                "DaemonStatistics",
                "default_node",
            ),
            "._expected_action": (
                "ExpectedAction",
                "decode_origin",
                "encode_origin",
            ),
            "._finding": (
                "SessionFinder",
                "SessionLocks",
            ),
            "._followed": (
                "CommandRoute",
                "FollowedRuntime",
                "Refusal",
                "follow_session",
            ),
            "._forwarding": (
                "Command",
                "CommandServer",
                "Forwarder",
                "carry_out",
                "decode_command",
                "decode_error",
                "encode_error",
            ),
            "._idle_sessions": ("IdleSessions",),
            "._limits": ("Limits",),
            "._live_session": (
                "CHAT_PREFIX",
                "SESSION_PREFIX",
                "LiveSession",
                "SessionRecorder",
                "SessionRuntime",
                "ahp_envelopes",
                "session_id",
                "session_uri",
            ),
            "._opening": ("SessionOpener",),
            "._reclaim": (
                "ReclaimStatistics",
                "Reclaimer",
            ),
            "._root_channel": (
                "RootChannel",
                "RootSubscription",
                "session_channel_state",
            ),
            "._runs": ("SessionRuns",),
            "._scheduler": (
                "Scheduler",
                "Teammate",
                "Watch",
                "describe_schedule",
            ),
            "._session_folds": (
                "EnvelopeCache",
                "EnvelopeFold",
                "GraphCache",
                "SessionFolds",
            ),
            "._shared_text": ("SharedText",),
            "._sqlite_following": ("SqliteFollowing",),
            "._team_log": (
                "ReadFacts",
                "TeamLog",
                "team_frame",
            ),
            "._team_runtimes": ("TeamRuntimes",),
            "._teams": (
                "TeamCatalog",
                "TeamFiles",
                "load_teams",
            ),
        },
    )
