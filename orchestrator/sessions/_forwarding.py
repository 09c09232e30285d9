"""Commands a follower forwards to a session's owner, through the database (issue 21).

Theory of operation
-------------------
A node that follows another node's session (:mod:`orchestrator.sessions._followed`) takes
its clients' requests like any node, through the session's
:class:`~orchestrator.sessions._live_session.LiveSession`. Some requests would change the
session: queue, steer, answer an input request, decide an approval, cancel a turn, a worker or
the session, store a view update, change the board, open, prompt or dispose of a forked chat
or side chat. Each of those becomes a :class:`Command`.
The follower's :class:`Forwarder` writes it to ``session_commands``
(:class:`~orchestrator.journal.PostgresCommands`) and then waits for the answer. It waits
:data:`FORWARD_LIMIT` seconds at most. The command is then withdrawn if nobody claimed it, and
the client told which node did not answer.

The owner's :class:`CommandServer` is woken by the command's notification (or its slow
poll). It claims the open commands of the sessions it holds. It decodes each
(:func:`decode_command`): whatever a row holds is checked, and a row that is not a command is
answered with an error, never taken for one. It carries each out through its own LiveSession
(:func:`carry_out`), one at a time in the order they were written. The outcome goes back as
JSON: the result (a queued message's id) or the error (:func:`encode_error`). The follower
raises the error as the owner raised it (:func:`decode_error`). So its client reads the
owner's refusal unchanged. An AHP client's action origins travel with the command (see
:mod:`orchestrator.sessions._expected_action`): the owner expects them before it carries the
command out, so the fact that carries the action bears the client's origin.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
import structlog
import trio

from orchestrator.ahp.actions import ActionOrigin
from orchestrator.ahp.state import ChatInputResponseKind, SideChatSelection
from orchestrator.base import (
    FactLogError,
    IllegalTransitionError,
    OrchestratorError,
    PeerProtocolError,
    RunError,
    UnavailableError,
)
from orchestrator.journal import ForwardedCommand, PostgresCommands
from orchestrator.runtime import BoardRefusedError

from ._expected_action import ExpectedAction, decode_origin, encode_origin

if TYPE_CHECKING:
    from ._live_session import LiveSession

__all__ = [
    "Command",
    "CommandServer",
    "Forwarder",
    "carry_out",
    "decode_command",
    "decode_error",
    "decode_selection",
    "encode_error",
    "encode_selection",
]

log = structlog.get_logger("orchestrator.daemon")

#: Seconds a follower waits for the owner's answer to a command.
FORWARD_LIMIT: Final = 30.0
#: Seconds between looks at the table when no notification came (a lost one only delays).
COMMAND_POLL: Final = 1.0
#: Most bytes of a text field a command may carry (a prompt, a view update's content).
MAX_TEXT: Final = 1 << 20
KINDS: Final = (
    "prompt",
    "queue",
    "steer",
    "answer_input",
    "decide",
    "cancel_turn",
    "cancel_worker",
    "cancel",
    "end",
    "view",
    "board",  # a person's board request: request = the op, text = the item, content = fields
    # AHP createChat with a source: chat = the new chat, request = the source chat,
    # approval = the source's turn id, content = a side chat's selection (encode_selection)
    "fork_chat",
    "side_chat",
    "prompt_chat",  # a message to a forked chat or side chat: chat, text
    "dispose_chat",  # AHP disposeChat of a forked chat or side chat: chat
)


@attrs.frozen(kw_only=True)
class Origin:
    """A client's action the command carries: the fact on ``chat`` that ``expected``
    matches is recorded with ``origin``."""

    chat: str
    expected: ExpectedAction
    origin: ActionOrigin


@attrs.frozen(kw_only=True)
class Command:
    """A request for a session's owner; the fields its ``kind`` reads (the others stay at
    their defaults)."""

    kind: str
    chat: str = ""
    text: str = ""
    request: str = ""
    response: str = "accept"
    approval: str = ""
    approved: bool = False
    principal: str | None = None
    view_type: str = ""
    content: Mapping[str, Any] = attrs.field(factory=dict)
    message: str = ""  # a queued message's id, chosen by the follower ("": the owner's)
    origins: tuple[Origin, ...] = ()

    def payload(self) -> dict[str, Any]:
        """The command as JSON (its kind apart): what :func:`decode_command` reads."""
        return {
            "chat": self.chat,
            "text": self.text,
            "request": self.request,
            "response": self.response,
            "approval": self.approval,
            "approved": self.approved,
            "principal": self.principal,
            "view_type": self.view_type,
            "content": dict(self.content),
            "message": self.message,
            "origins": [
                {
                    "chat": o.chat,
                    "expected": o.expected.to_json(),
                    "origin": encode_origin(o.origin),
                }
                for o in self.origins
            ],
        }


def _bad(why: str) -> PeerProtocolError:
    return PeerProtocolError(f"not a forwarded command: {why}", protocol="forwarding")


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key, "")
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise _bad(f"{key} is not a text (of at most {MAX_TEXT} characters)")
    return value


def decode_command(kind: object, payload: object) -> Command:
    """The command a row holds; :class:`PeerProtocolError` for anything
    :meth:`Command.payload` does not make (a row is the sender's word, not ours)."""
    if kind not in KINDS:
        raise _bad(f"unknown kind {kind!r:.100}")
    if not isinstance(payload, Mapping):
        raise _bad("its payload is not an object")
    approved = payload.get("approved", False)
    principal = payload.get("principal")
    content = payload.get("content", {})
    origins = payload.get("origins", [])
    if not isinstance(approved, bool):
        raise _bad("approved is not a boolean")
    if principal is not None and not isinstance(principal, str):
        raise _bad("principal is not a text")
    if not isinstance(content, Mapping):
        raise _bad("content is not an object")
    if not isinstance(origins, list) or len(origins) > 256:
        raise _bad("origins is not a list")
    response = _text(payload, "response") or "accept"
    if response not in {str(kind.value) for kind in ChatInputResponseKind}:
        raise _bad(f"response {response!r:.100} is not an input response kind")
    decoded: list[Origin] = []
    for entry in origins:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("chat"), str):
            raise _bad("an origin is not an object with a chat")
        decoded.append(
            Origin(
                chat=entry["chat"],
                expected=ExpectedAction.from_json(entry.get("expected")),
                origin=decode_origin(entry.get("origin")),
            )
        )
    return Command(
        kind=str(kind),
        chat=_text(payload, "chat"),
        text=_text(payload, "text"),
        request=_text(payload, "request"),
        response=response,
        approval=_text(payload, "approval"),
        approved=approved,
        principal=principal,
        view_type=_text(payload, "view_type"),
        content=dict(content),
        message=_message_id(payload),
        origins=tuple(decoded),
    )


def _message_id(payload: Mapping[str, Any]) -> str:
    """A follower's queued message id: ``message-`` and a UUID, which no id the owner
    numbers can equal (``""``: none chosen)."""
    message = _text(payload, "message")
    if message:
        try:
            uuid.UUID(message.removeprefix("message-"))
        except ValueError:
            raise _bad(f"message {message!r:.100} is not message-UUID") from None
        if not message.startswith("message-"):
            raise _bad(f"message {message!r:.100} is not message-UUID")
    return message


async def carry_out(live: LiveSession, command: Command) -> Any:
    """Carry ``command`` out on the owner's ``live`` session; its result as JSON. Raises
    what the session raises (a refusal: :class:`RunError`, :class:`IllegalTransitionError`)."""
    for origin in command.origins:
        live.expect_origin(origin.chat, origin.expected, origin.origin)
    try:
        match command.kind:
            case "prompt":  # the first prompt of a session opened there, not started yet
                await live.prompt(command.text, task_id=None)
            case "queue":
                message = await live.queue(
                    command.chat, command.text, message_id=command.message or None
                )
                return {"message": message}
            case "steer":
                steered = await live.steer(command.chat, command.text, principal=command.principal)
                return {"message": steered}
            case "answer_input":
                await live.answer_input(
                    command.chat,
                    command.request,
                    command.text,
                    response=ChatInputResponseKind(command.response),
                )
            case "decide":
                await live.decide(
                    command.approval,
                    approved=command.approved,
                    principal=command.principal or "",
                )
            case "cancel_turn":
                await live.cancel_turn(command.chat)
            case "cancel_worker":
                await live.cancel_worker(command.chat)
            case "cancel":
                await live.cancel()
            case "end":
                await live.end()
            case "fork_chat" | "side_chat":
                await live.fork_chat(
                    command.chat,
                    source=command.request,
                    turn_id=command.approval,
                    side=command.kind == "side_chat",
                    selection=decode_selection(command.content),
                )
            case "prompt_chat":
                await live.prompt_chat(command.chat, command.text)
            case "dispose_chat":
                await live.dispose_chat(command.chat)
            case "board":
                await live.board_request(
                    command.request,
                    command.text,
                    command.content,
                    principal=command.principal or "",
                )
            case _:
                await live.update_view(command.view_type, command.content)
    except BaseException:
        for origin in command.origins:
            live.forget_origin(origin.origin)
        raise
    return None


def encode_selection(selection: SideChatSelection) -> dict[str, Any]:
    """A side chat's selection as a command's ``content`` (:func:`decode_selection`)."""
    encoded: dict[str, Any] = {"text": selection.text}
    if selection.response_part_id is not None:
        encoded["responsePartId"] = selection.response_part_id
    return encoded


def decode_selection(content: Mapping[str, Any]) -> SideChatSelection | None:
    """The selection a ``side_chat`` command's ``content`` holds (None: none);
    :class:`PeerProtocolError` for anything :func:`encode_selection` does not make."""
    if not content:
        return None
    text = _text(content, "text")
    part = content.get("responsePartId")
    if part is not None and (not isinstance(part, str) or len(part) > MAX_TEXT):
        raise _bad("responsePartId is not a text")
    return SideChatSelection(text=text, response_part_id=part)


def encode_error(exc: OrchestratorError) -> dict[str, Any]:
    """A refusal as JSON, for the follower to raise as the owner did."""
    if isinstance(exc, IllegalTransitionError):
        return {
            "type": "IllegalTransitionError",
            "reason": exc.reason,
            "action_type": exc.action_type,
            "channel": exc.channel,
            "state": exc.state,
            "tool_call_id": exc.tool_call_id,
        }
    if isinstance(exc, FactLogError):
        return {"type": "FactLogError", "message": exc.message, "source": exc.source}
    if isinstance(exc, BoardRefusedError):
        return {"type": "BoardRefusedError", "message": str(exc)}
    return {"type": "RunError", "message": str(exc)}


def decode_error(error: Any) -> OrchestratorError:
    """The exception an owner's :func:`encode_error` describes (a :class:`RunError` with
    what can be read of anything else)."""
    if not isinstance(error, Mapping):
        return RunError(f"the session's node refused: {error!r:.200}")
    fields = {k: v if isinstance(v, str) else None for k, v in error.items()}
    if error.get("type") == "IllegalTransitionError":
        return IllegalTransitionError(
            fields.get("reason") or "",
            action_type=fields.get("action_type") or "",
            channel=fields.get("channel") or "",
            state=fields.get("state") or "",
            tool_call_id=fields.get("tool_call_id"),
        )
    if error.get("type") == "FactLogError":
        return FactLogError(fields.get("message") or "", source=fields.get("source") or "")
    if error.get("type") == "BoardRefusedError":
        return BoardRefusedError(fields.get("message") or "the board refused the change")
    return RunError(fields.get("message") or f"the session's node refused: {error!r:.200}")


class Forwarder:
    """A follower's side: writes commands and waits for their answers (see the module
    docstring). :meth:`answered` is told of each answer's notification."""

    def __init__(self, commands: PostgresCommands, *, limit: float = FORWARD_LIMIT) -> None:
        self.commands = commands
        self.limit = limit
        self._waiting: dict[int, trio.Event] = {}

    def answered(self, payload: str) -> None:
        """An answer's notification (its payload: the command's id)."""
        try:
            command = int(payload)
        except ValueError:
            self.wake_all()
            return
        event = self._waiting.get(command)
        if event is not None:
            event.set()

    def wake_all(self) -> None:
        """Look at every command waited for (notifications may have been missed)."""
        for event in self._waiting.values():
            event.set()

    async def call(self, session: str, command: Command, *, owner: str) -> Any:
        """Forward ``command`` for ``session`` to its owner (the node ``owner``, as last
        seen); its result, or the owner's error raised here."""
        try:
            sent = await trio.to_thread.run_sync(
                self.commands.send, session, command.kind, command.payload()
            )
        except (FactLogError, UnavailableError) as exc:
            raise RunError(
                f"cannot forward to node {owner}, which runs session {session}: {exc}"
            ) from exc
        try:
            return await self._answer(session, sent, owner=owner)
        finally:
            self._waiting.pop(sent, None)

    async def _answer(self, session: str, sent: int, *, owner: str) -> Any:
        deadline = trio.current_time() + self.limit
        withdrawn_once = False
        while True:
            self._waiting[sent] = trio.Event()
            try:
                answer = await trio.to_thread.run_sync(self.commands.outcome, sent)
            except (FactLogError, UnavailableError) as exc:
                log.warning("forwarded command's answer not read", command=sent, error=str(exc))
                answer = None  # the database is away for now: try again until the deadline
            if answer is not None:
                if answer.error is not None:
                    raise decode_error(answer.error)
                return answer.result
            remaining = deadline - trio.current_time()
            if remaining <= 0:
                if withdrawn_once or await self._withdraw(sent):
                    raise RunError(
                        f"node {owner}, which runs session {session}, did not answer in "
                        f"{self.limit:g} s; try again (another node takes the session "
                        "over if that node is gone)"
                    )
                # Claimed: the owner is carrying it out; give it one more while.
                withdrawn_once = True
                deadline = trio.current_time() + self.limit
                continue
            with trio.move_on_after(min(remaining, COMMAND_POLL)):
                await self._waiting[sent].wait()

    async def _withdraw(self, sent: int) -> bool:
        """Withdraw an unanswered command (True), unless its owner claimed it (False)."""
        expired = {"type": "RunError", "message": "withdrawn: no answer in time"}
        try:
            return await trio.to_thread.run_sync(self.commands.withdraw, sent, expired)
        except (FactLogError, UnavailableError):
            return True  # nothing more can be done for it from here


class CommandServer:
    """An owner's side: claims the commands of the sessions this node holds and carries
    them out (see the module docstring)."""

    def __init__(
        self,
        commands: PostgresCommands,
        *,
        held: Callable[[], Collection[str]],
        find: Callable[[str], Awaitable[LiveSession | None]],
        poll: float = COMMAND_POLL,
    ) -> None:
        self.commands = commands
        self._held = held
        self._find = find
        self.poll = poll
        self._wake = trio.Event()
        self.carried_out = 0
        self.refused = 0

    def wake(self) -> None:
        """A command was written (its notification), or notifications were missed."""
        self._wake.set()

    async def serve(self) -> None:
        """Claim and carry out commands until cancelled; never ends for a bad row or a
        database that does not answer (it tries again at the next poll)."""
        while True:
            with trio.move_on_after(self.poll):
                await self._wake.wait()
            self._wake = trio.Event()
            held = self._held()
            if not held:
                continue
            try:
                claimed = await trio.to_thread.run_sync(self.commands.claim, sorted(held))
            except (OrchestratorError, OSError) as exc:
                log.warning("forwarded commands not read", error=str(exc))
                continue
            for row in claimed:
                await self._carry(row)
            if claimed:
                self._wake.set()  # there may be more than one claim takes

    async def _carry(self, row: ForwardedCommand) -> None:
        result: Any = None
        error: Any = None
        try:
            command = decode_command(row.kind, row.payload)
            live = await self._find(row.session)
            if live is None:
                raise RunError(f"session {row.session} is not running any more")
            with trio.fail_after(FORWARD_LIMIT):
                value = await carry_out(live, command)
            # The sequence its state reached: the follower answers once it read that far.
            result = {"value": value, "sequence": live.state.last_sequence}
            self.carried_out += 1
        except OrchestratorError as exc:
            error = encode_error(exc)
            self.refused += 1
        except trio.TooSlowError:
            error = {"type": "RunError", "message": "the session's node took too long"}
        except Exception as exc:  # never the loop's end: the sender is told, the rest go on
            log.exception("forwarded command failed", session=row.session, command=row.id)
            error = {"type": "RunError", "message": f"the command failed: {exc}"}
        try:
            await trio.to_thread.run_sync(
                lambda: self.commands.answer(row.id, result=result, error=error)
            )
        except (OrchestratorError, OSError) as exc:
            log.warning("forwarded command not answered", command=row.id, error=str(exc))
