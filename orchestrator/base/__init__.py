"""What every layer stands on: the errors, the clock, immutable updates, keyed vectors,
the input gate every JSON from outside passes, and compact JSON.

Pure: no trio, no IO.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._by_class import *  # noqa: F403
    from ._clock import *  # noqa: F403
    from ._compact_json import *  # noqa: F403
    from ._errors import *  # noqa: F403
    from ._evolve import *  # noqa: F403
    from ._exception_groups import *  # noqa: F403
    from ._input_gate import *  # noqa: F403
    from ._keyed import *  # noqa: F403
    from ._lazy import *  # noqa: F403
    from ._redact import *  # noqa: F403
else:
    from ._lazy import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "ConfigError": "._errors",
            "FactLogError": "._errors",
            "IllegalTransitionError": "._errors",
            "JSON_LIMITS": "._input_gate",
            "JsonLimits": "._input_gate",
            "KeyedVector": "._keyed",
            "LocalProtocolError": "._errors",
            "MIN_SECRET_CHARS": "._redact",
            "ModelError": "._errors",
            "ModelRequestError": "._errors",
            "ModelStreamError": "._errors",
            "OrchestratorError": "._errors",
            "OutputSchemaError": "._errors",
            "PeerProtocolError": "._errors",
            "ProtocolError": "._errors",
            "REDACTED": "._redact",
            "RemoteAgentError": "._errors",
            "RpcError": "._errors",
            "RunError": "._errors",
            "RunInputError": "._errors",
            "SENSITIVE_HEADERS": "._redact",
            "SENSITIVE_KEYS": "._redact",
            "ScheduleError": "._errors",
            "SessionExistsError": "._errors",
            "SessionLimitError": "._errors",
            "TeamFileError": "._errors",
            "UnavailableError": "._errors",
            "clean_text": "._input_gate",
            "compact_dumps": "._compact_json",
            "evolve": "._evolve",
            "forget_secrets": "._redact",
            "lazy_facade": "._lazy",
            "leaf_exceptions": "._exception_groups",
            "now_timestamp": "._clock",
            "parse_json": "._input_gate",
            "parse_json_counted": "._input_gate",
            "parse_timestamp": "._clock",
            "redact_text": "._redact",
            "register_secret": "._redact",
            "registered_secrets": "._redact",
            "registrar": "._by_class",
            "resolve_subclass": "._by_class",
            "slot_init": "._evolve",
            "text_problem": "._input_gate",
            "timestamp": "._clock",
            "utc_now": "._clock",
        },
    )
