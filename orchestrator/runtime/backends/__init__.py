"""Where model rounds come from.

- The backend contract, defined with the model round in :mod:`orchestrator.core`.
- The scripted backend.
- The OpenAI-compatible backend, with its wire form and transcript.
- Backend plugins.
- The factory that makes each agent's backend from its team file.
"""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._a2a import *  # noqa: F403
    from ._contract import *  # noqa: F403
    from ._factory import *  # noqa: F403
    from ._openai import *  # noqa: F403
    from ._openai_wire import *  # noqa: F403
    from ._plugins import *  # noqa: F403
    from ._probe import *  # noqa: F403
    from ._reachability import *  # noqa: F403
    from ._replay import *  # noqa: F403
    from ._scripted import *  # noqa: F403
    from ._transcript import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "A2ABackend": "._a2a",
            "AssistantMessage": "._transcript",
            "AssistantToolCall": "._transcript",
            "Backend": "._contract",
            "BackendSetup": "._plugins",
            "ChunkAssembler": "._openai_wire",
            "ENTRY_POINT_GROUP": "._plugins",
            "FINAL_ANSWER": "._openai_wire",
            "HOSTED_API": "._openai",
            "ModelEvent": "._contract",
            "ModelServer": "._probe",
            "Notice": "._contract",
            "OpenAIBackend": "._openai",
            "OutputRequest": "._openai_wire",
            "PROBE_TIMEOUT": "._probe",
            "PluginFactory": "._plugins",
            "ReasoningDelta": "._contract",
            "RemoteBackend": "._contract",
            "ReplayBackend": "._replay",
            "RoundContext": "._contract",
            "ScriptedBackend": "._scripted",
            "ScriptedFailure": "._scripted",
            "TextDelta": "._contract",
            "ToolCallInputDelta": "._contract",
            "ToolCallRequest": "._contract",
            "ToolCallStarted": "._contract",
            "ToolMessage": "._transcript",
            "ToolOutcome": "._contract",
            "TranscriptMessage": "._transcript",
            "UsageReport": "._contract",
            "UserMessage": "._transcript",
            "backend_factory": "._factory",
            "backend_problems": "._plugins",
            "base_url_of": "._openai",
            "chunk_text": "._scripted",
            "final_answer_text": "._openai_wire",
            "http_client": "._openai",
            "key_headers": "._openai",
            "make_plugin_backend": "._plugins",
            "missing_key": "._openai",
            "model_servers": "._probe",
            "output_request": "._openai_wire",
            "probe_model_servers": "._probe",
            "provider_message": "._openai_wire",
            "render_json": "._scripted",
            "render_text": "._scripted",
            "request_body": "._openai_wire",
            "resolve_plugin": "._plugins",
            "retry_after_seconds": "._openai_wire",
            "served_models": "._openai_wire",
            "serves_model": "._openai_wire",
            "tool_call_id": "._scripted",
            "tool_call_ids": "._transcript",
            "transcript": "._transcript",
            "turn_index_of": "._scripted",
            "why_unreachable": "._reachability",
            "worth_retrying": "._reachability",
        },
    )
