"""The one exception tree of the orchestrator.

Every error the package raises on purpose derives from :class:`OrchestratorError`::

    OrchestratorError
    ├── ProtocolError                 bad wire data
    │   ├── PeerProtocolError         the peer sent it (a client, a team file's JSON, a fixture)
    │   │   └── RunInputError         an AG-UI RunAgentInput we cannot run (also a ValueError)
    │   └── LocalProtocolError        we were about to send it (a bug on our side)
    ├── IllegalTransitionError        an action that the current state refuses
    ├── RpcError                      a JSON-RPC request refused, with the code for the peer
    ├── TeamFileError                 a team definition that cannot be used
    ├── ScheduleError                 a schedule, time zone or duration that cannot be used
    ├── ConfigError                   a daemon configuration that cannot be used
    ├── FactLogError                  a fact log (file or journal) that cannot be read or written
    └── RunError                      a run that cannot start or continue
        ├── SessionExistsError        a session or chat id that is taken (live or journaled)
        ├── SessionLimitError         a session refused by a limit (per token, per daemon)
        └── ModelError                a model backend that could not produce a round
            ├── ModelRequestError     the server refused the request (or never answered)
            ├── ModelStreamError      the response stream broke off or made no sense
            ├── OutputSchemaError     a final answer that did not fit the agent's output_schema
            └── RemoteAgentError      a remote teammate (an A2A agent) that could not do its task

Each carries the structured fields a caller needs to report it (wire path,
channel URI, tool call id, file and key path) and a message that says what was
wrong and where. Third-party errors are mapped once, at the boundary that
caught them, with ``raise ... from exc``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ConfigError",
    "FactLogError",
    "IllegalTransitionError",
    "LocalProtocolError",
    "ModelError",
    "ModelRequestError",
    "ModelStreamError",
    "OrchestratorError",
    "OutputSchemaError",
    "PeerProtocolError",
    "ProtocolError",
    "RemoteAgentError",
    "RpcError",
    "RunError",
    "RunInputError",
    "ScheduleError",
    "SessionExistsError",
    "SessionLimitError",
    "TeamFileError",
    "UnavailableError",
]


class OrchestratorError(Exception):
    """Root of every error the orchestrator raises on purpose."""


class ProtocolError(OrchestratorError):
    """Wire data that does not match the protocol.

    ``path`` names where, in wire names (``$.activeTurn.responseParts[2].kind``),
    ``protocol`` which protocol (``"ahp"``, ``"agent-ui"``, ...).
    """

    def __init__(self, message: str, *, path: str = "$", protocol: str = "ahp") -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.protocol = protocol

    def __str__(self) -> str:
        return f"{self.protocol}: {self.path}: {self.message}"


class PeerProtocolError(ProtocolError):
    """The peer sent data that breaks the protocol: it is their fault, answer with an error."""


class RunInputError(PeerProtocolError, ValueError):
    """An AG-UI ``RunAgentInput`` body that cannot be run: ``path`` names the field
    (``$.resume[0].payload.approved``). A :class:`ValueError` too, for callers that only
    ask whether the input was bad."""

    def __init__(self, message: str, *, path: str = "$") -> None:
        super().__init__(message, path=path, protocol="ag-ui")


class LocalProtocolError(ProtocolError):
    """We were about to emit data that breaks the protocol: it is our bug."""


class IllegalTransitionError(OrchestratorError):
    """An action the current state refuses: an illegal transition or a no-op.

    Raised by validation before anything is appended; the state is untouched.
    ``reason`` is the text sent back as the AHP ``rejectionReason``.
    """

    def __init__(
        self,
        reason: str,
        *,
        action_type: str,
        channel: str,
        state: str,
        tool_call_id: str | None = None,
    ) -> None:
        where = f"{channel}"
        if tool_call_id is not None:
            where += f" tool call {tool_call_id!r}"
        super().__init__(f"{action_type} refused on {where} (state: {state}): {reason}")
        self.reason = reason
        self.action_type = action_type
        self.channel = channel
        self.state = state
        self.tool_call_id = tool_call_id


class RpcError(OrchestratorError):
    """A JSON-RPC request (an AHP command) refused: ``code`` (a JSON-RPC or AHP error code),
    ``message`` and ``data`` go back to the peer in the error response to request ``id``
    (None: the id could not be read, or there was none)."""

    def __init__(
        self, code: int, message: str, *, data: object = None, id: str | int | None = None
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data
        self.id = id


class TeamFileError(OrchestratorError):
    """A team file that cannot be used; names the file, the key path and the problem.

    One error may stand for several: :meth:`of` gathers the problems found in different
    parts of a file (one per agent, say), and :attr:`problems` lists them, one per line.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str,
        key_path: str = "",
        problems: Sequence[TeamFileError] = (),
    ) -> None:
        location = f"{file}: {key_path}" if key_path else file
        text = "\n".join(str(p) for p in problems) if problems else f"{location}: {message}"
        super().__init__(text)
        self.message = message
        self.file = file
        self.key_path = key_path
        self.problems: tuple[TeamFileError, ...] = tuple(problems) or (self,)

    @classmethod
    def of(cls, problems: Sequence[TeamFileError]) -> TeamFileError:
        """One error for ``problems`` (at least one): the problem itself when it is alone."""
        if len(problems) == 1:
            return problems[0]
        first = problems[0]
        return cls(f"{len(problems)} problems", file=first.file, problems=problems)


class ScheduleError(OrchestratorError, ValueError):
    """A cron expression, time zone or duration that cannot be used; ``message`` says what is
    wrong and what is expected, without saying where (the team file adds its key path).
    A :class:`ValueError` too, for callers that only ask whether the value was bad."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(OrchestratorError):
    """A daemon configuration (file or command line) that cannot be used; names the file,
    the key path and the problem."""

    def __init__(self, message: str, *, file: str, key_path: str = "") -> None:
        location = f"{file}: {key_path}" if key_path else file
        super().__init__(f"{location}: {message}")
        self.message = message
        self.file = file
        self.key_path = key_path


class FactLogError(OrchestratorError):
    """A fact log that cannot be read or written; names the file and the line or sequence."""

    def __init__(self, message: str, *, source: str, line: int | None = None) -> None:
        location = source if line is None else f"{source}:{line}"
        super().__init__(f"{location}: {message}")
        self.message = message
        self.source = source
        self.line = line


class UnavailableError(OrchestratorError):
    """A service a command needs (the daemon, say) cannot be reached or did not answer in
    time: nothing is wrong with the request, try again later (the CLI exits 3)."""


class RunError(OrchestratorError):
    """A run that cannot start or go on (unknown agent, exhausted budget, bad prompt...)."""


class SessionExistsError(RunError):
    """A session or chat a client named that exists or existed: ``uri`` is its URI,
    ``ended`` whether it is over (only in the journal) rather than live or being opened.
    Nothing was written for the request that got it."""

    def __init__(self, message: str, *, uri: str, ended: bool) -> None:
        super().__init__(message)
        self.uri = uri
        self.ended = ended


class SessionLimitError(RunError):
    """A session not opened because of a limit: ``limit`` is its key in the daemon's
    ``[limits]`` (``max_sessions``, ``max_unprompted_per_token``), ``per_principal``
    whether it counts the client's own sessions (try later) or the daemon's (busy)."""

    def __init__(self, message: str, *, limit: str, per_principal: bool) -> None:
        super().__init__(message)
        self.limit = limit
        self.per_principal = per_principal


class ModelError(RunError):
    """A model backend could not produce a round; the turn ends with this message.

    Its class name becomes the turn's ``errorType``, so a UI can tell a provider's refusal
    from a broken stream.
    """


class ModelRequestError(ModelError):
    """The model server refused the request, or could not be reached, for good.

    ``status`` is the HTTP status (None when no response came); ``retry_after`` the seconds
    the server asked to wait before trying again, when it said.
    """

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class ModelStreamError(ModelError):
    """The response stream broke off, or sent something that is not a chat completion chunk.

    Whatever the round had streamed stays recorded; a tool call whose input was still
    streaming is never run.
    """


class OutputSchemaError(ModelError):
    """An agent's final answer did not fit its ``output_schema``, after the one retry too.

    ``agent`` is the agent's name; ``path`` and ``problem`` say where the second answer did not
    fit and what was wrong there. Its text stays recorded as the turn's answer parts.
    """

    def __init__(self, message: str, *, agent: str, path: str, problem: str) -> None:
        super().__init__(message)
        self.agent = agent
        self.path = path
        self.problem = problem


class RemoteAgentError(ModelError):
    """A remote teammate (an A2A agent) could not do its task: its card could not be read,
    a request failed, an answer made no sense, its stream stopped, or its task failed.

    The message names the agent and what happened; the delegation that reached it ends with
    it, and the team goes on.
    """
