"""``POST /agui?team=NAME``: a team run for an AG-UI client, as server-sent events.

An AG-UI thread is a daemon session, and ``threadId`` is its id. The first run of a thread
opens the session; later ones reattach, also after a restart. An AG-UI run is one turn of its
coordinator (:mod:`orchestrator.protocols._project_agui`). A RunAgentInput does one of two things:

- it ends with a new user message, and the turn it starts is streamed;
- it carries ``resume`` answers to the approvals the previous run was interrupted on; they are
  applied, and the same turn is streamed on until it ends or asks again.

Everything is checked before the stream starts, so a bad request gets a plain 4xx with a JSON
error, never a half-open stream.

The SSE framing is sse-starlette's; each event is one ``data:`` line of JSON.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator
from typing import Any, Final, Protocol

import structlog
import trio
from sse_starlette import ServerSentEvent
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request

from orchestrator.base import (
    JSON_LIMITS,
    JsonLimits,
    PeerProtocolError,
    RunError,
    SessionExistsError,
    SessionLimitError,
    parse_json,
)
from orchestrator.core import USER
from orchestrator.journal import JournalReader
from orchestrator.protocols import AguiProjector, AguiRunStatus, RunRequest, parse_run_input
from orchestrator.runtime import prompted_from
from orchestrator.sessions import LiveSession, TeamCatalog

from ._auth import Principal

__all__: list[str] = []

log = structlog.get_logger("orchestrator.agui")

#: A thread id becomes a session id: keep it to characters that are safe in a URI path.
THREAD_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_ENDED: Final = (AguiRunStatus.FINISHED, AguiRunStatus.INTERRUPTED)


class AguiRequestError(Exception):
    """A run that cannot start: the HTTP status and the message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class AguiHost(Protocol):
    """What the AG-UI endpoint asks of the daemon."""

    @property
    def reader(self) -> JournalReader: ...

    @property
    def catalog(self) -> TeamCatalog: ...

    async def find(self, session: str) -> LiveSession | None: ...

    async def open_session(
        self, team_name: str | None, *, session: str | None = ..., principal: str | None = ...
    ) -> LiveSession: ...


async def agui_run(
    request: Request,
    body: bytes,
    daemon: AguiHost,
    principal: Principal,
    limits: JsonLimits = JSON_LIMITS,
) -> EventSourceResponse:
    """Check the request, start (or resume) the run, and answer with its event stream."""
    try:
        run = parse_run_input(parse_json(body, protocol="ag-ui", limits=limits))
    except PeerProtocolError as exc:  # RunInputError among them
        raise AguiRequestError(400, str(exc)) from None
    if not THREAD_ID.fullmatch(run.thread_id):
        raise AguiRequestError(
            400, "threadId: use letters, digits and . _ : - (at most 128), starting with one"
        )
    team = request.query_params.get("team")
    try:
        # RunError when another node of the journal runs the thread (404, saying so).
        live = await daemon.find(run.thread_id)
        if live is None:
            # A thread that ended (disposed over AHP, say) is refused here, before anything
            # is written: its id is taken for good (409).
            live = await daemon.open_session(team, session=run.thread_id, principal=principal.name)
    except SessionExistsError as exc:
        why = "has ended: start a new thread" if exc.ended else "is being opened by another run"
        raise AguiRequestError(409, f"threadId: thread {run.thread_id!r} {why}") from None
    except SessionLimitError:
        raise  # the server answers it (429 / 503, naming the limit)
    except RunError as exc:
        raise AguiRequestError(404, str(exc)) from None
    if team is not None and live.team_name != daemon.catalog.name(team):
        raise AguiRequestError(
            409, f"threadId: thread {run.thread_id!r} runs team {live.team_name!r}, not {team!r}"
        )
    if live.agui_streaming:
        raise AguiRequestError(409, f"thread {run.thread_id!r} is streaming a run already")
    subscription, state = live.subscribe(f"agui {principal.name} {run.run_id}")
    try:
        chat = state.coordinator_chat()
        active = state.chats[chat].active_turn if chat is not None else None
        if run.resume:
            _check_decisions(live, run)
            answering = [d.approval for d in run.resume]
            projector = live.agui
            if projector is not None and projector.status is AguiRunStatus.INTERRUPTED:
                # What the team did while the client decided: the projector keeps it for
                # the continuation run (facts it has folded already are skipped).
                after = projector.state.last_sequence
                gap = await trio.to_thread.run_sync(
                    functools.partial(daemon.reader.facts, live.uri, after=after)
                )
                for fact in gap:
                    projector.feed(fact)
                head = projector.resume(run.run_id, answering=answering)
            else:
                # The interrupted run's projector is gone (a restart): join the turn as it is.
                projector = AguiProjector(
                    live.uri,
                    thread_id=run.thread_id,
                    run_id=run.run_id,
                    state=state,
                    turn_id=active.id if active is not None else None,
                )
                head = projector.start(answering=answering)
            for decision in run.resume:
                await live.decide(
                    decision.approval, approved=decision.approved, principal=principal.name
                )
        elif run.new_user_message and run.user_message:
            if active is not None:
                raise AguiRequestError(
                    409, f"thread {run.thread_id!r} has a run in progress: resume it or wait"
                )
            projector = AguiProjector(
                live.uri, thread_id=run.thread_id, run_id=run.run_id, state=state
            )
            head = projector.start()
            # A client in a traced app: the run (or the turn) continues its trace.
            with prompted_from(request.headers.get("traceparent")):
                await live.prompt(run.user_message, task_id=run.run_id)
        else:
            raise AguiRequestError(400, _nothing_to_run(run))
    except BaseException:
        live.unsubscribe(subscription)
        raise
    live.agui = projector
    log.info("agui run", thread=run.thread_id, run=run.run_id, resume=len(run.resume))
    # LF line ends: with CRLF (the default) the official client read two events as one.
    return EventSourceResponse(_events(live, projector, head, subscription), ping=15, sep="\n")


def _check_decisions(live: LiveSession, run: RunRequest) -> None:
    for decision in run.resume:
        record = live.state.approvals.get(decision.approval)
        if record is None or record.decision is not None or record.request.routed_to != USER:
            raise AguiRequestError(
                409, f"resume: no approval {decision.approval!r} is waiting for the user"
            )


async def _events(
    live: LiveSession, projector: AguiProjector, head: list[dict[str, Any]], subscription: Any
) -> AsyncIterator[dict[str, str] | bytes]:
    live.agui_streaming = True
    try:
        for event in head:
            yield {"data": json.dumps(event, ensure_ascii=False)}
        while projector.status not in _ENDED:
            try:
                batch = await subscription.receive_batch()
            except trio.EndOfChannel:
                # Why, where the daemon knows more than "it ended" (the journal could record
                # nothing more of it, the daemon is stopping): the client's only word of it.
                reason = (
                    subscription.dropped_reason
                    or live.ended_because
                    or live.end_reason
                    or "the session ended"
                )
                yield {
                    "data": json.dumps(
                        {"type": "RUN_ERROR", "message": reason, "code": "session_ended"}
                    )
                }
                return
            # A batch's events in one chunk (one socket write), each framed by sse-starlette:
            # a subscription hands over what a group commit published at once.
            chunk = b"".join(
                ServerSentEvent(data=json.dumps(event, ensure_ascii=False), sep="\n").encode()
                for fact in batch
                for event in projector.feed(fact)
            )
            if chunk:
                yield chunk
    finally:
        live.agui_streaming = False
        live.unsubscribe(subscription)


def _nothing_to_run(run: RunRequest) -> str:
    """Why an input starts nothing: it resumes no interrupt, and it does not end with a new
    user message (a role this daemon does not know is skipped, not refused: a newer
    client's)."""
    if run.last_role is None:
        return "messages: the input ends with no new user message and resumes nothing"
    if run.last_role == "user":
        return "$.messages[-1].content: the user message is empty: nothing to run"
    return (
        f"$.messages[-1].role: the input ends with a {run.last_role[:40]!r} message, not a "
        "new user message, and resumes nothing (messages of other roles are kept, not run)"
    )
