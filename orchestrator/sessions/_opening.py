"""New sessions: each one's identity and the daemon's bounds on them.

Every new session goes through :meth:`SessionOpener.open_session`. It refuses a URI that is
live, being opened, or in the journal (ended or not), before anything is written. So no client
can make a second session write ``team/runStarted`` at sequence 1 again under a URI the journal
holds. The URI is reserved before the journal is asked (an await), so two clients
opening the same one at once cannot both get it. A chat URI a client chooses is claimed the
same way (:meth:`SessionOpener.claim_chat`).

Bounds: no more than ``max_sessions`` sessions are opened, and each principal may hold
``max_unprompted_per_token`` sessions never prompted (see :mod:`._idle_sessions`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import attrs
import trio

from orchestrator.base import FactLogError, RunError, SessionExistsError, SessionLimitError
from orchestrator.journal import JournalReader
from orchestrator.runtime import Ids
from orchestrator.spec import BackgroundSpec, with_model

from ._finding import Claim
from ._idle_sessions import IdleSessions
from ._limits import Limits
from ._live_session import LiveSession, SessionHost, session_uri
from ._team_runtimes import TeamRuntimes
from ._teams import TeamCatalog

__all__ = [
    "SessionOpener",
]


class OpenerHost(SessionHost, Protocol):
    """What opening a session reads of the daemon."""

    sessions: dict[str, LiveSession]
    reader: JournalReader
    limits: Limits
    catalog: TeamCatalog
    runtimes: TeamRuntimes
    idle: IdleSessions

    @property
    def nursery(self) -> trio.Nursery | None: ...


class SessionOpener:
    """Opens a daemon's new sessions and claims its clients' new chat URIs."""

    def __init__(
        self,
        daemon: OpenerHost,
        *,
        claim: Claim,
        drop_unused: Callable[[str], Awaitable[None]],
        add: Callable[[LiveSession], None],
    ) -> None:
        """``drop_unused`` gives up a session never prompted (see the daemon's);
        ``add`` makes a session one of the daemon's."""
        self._daemon = daemon
        self._claim = claim
        self._drop_unused = drop_unused
        self._add = add
        # URIs being opened (asked of the journal) → the principal opening them; and the
        # chat URIs being claimed (see claim_chat). Reserved before the await, so a second
        # client naming the same URI meanwhile is refused.
        self.opening: dict[str, str | None] = {}
        self.claimed_chats: set[str] = set()

    async def open_session(
        self,
        team_name: str | None,
        *,
        session: str | None = None,
        ids: Ids | None = None,
        background: BackgroundSpec | None = None,
        principal: str | None = None,
        model: str | None = None,
    ) -> LiveSession:
        """A new session of a team; its run starts with the first prompt.

        Args:
            team_name: The team, by name (None: the default team).
            session: Its id, when the client names its thread (AG-UI's threadId).
            ids: The ids it makes, its URI first (AHP's ``createSession`` lets the client
                choose them).
            background: The session is one run of that background teammate. Its agent is the
                run's coordinator, and the run ends with that agent's turn. Clients attach to
                it like to any.
            principal: Who opens it, for the per-token limit (None: the daemon).
            model: The model its OpenAI-compatible agents ask, for this session only (as
                ``orchestrator run --model``; the team file is unchanged). Refused
                (:class:`RunError`) for a team with no such agent.

        Refused, before anything is written:

        - a URI that is live, being opened or in the journal (:class:`SessionExistsError`);
        - a session beyond ``max_sessions`` or the principal's ``max_unprompted_per_token``
          (:class:`SessionLimitError`);
        - any session while the journal cannot be read (:class:`FactLogError`).
        """
        name, team = self._daemon.catalog.team(team_name)
        unavailable = self._daemon.runtimes.unavailable
        if name in unavailable:
            raise RunError(f"team {name!r} cannot run: {unavailable[name]}")
        if model is not None:
            if not any(agent.openai is not None for agent in team.agents):
                raise RunError(
                    f"model {model}: no agent of {name} uses the OpenAI-compatible backend "
                    "(its agents' models are in its team file)"
                )
            team = with_model(team, model)
        if background is not None and background.agent != team.coordinator:
            team = attrs.evolve(team, coordinator=background.agent)
        ids = ids or Ids()
        uri = session_uri(session) if session is not None else ids.session()
        if uri in self._daemon.sessions or uri in self.opening:
            raise SessionExistsError(f"session {uri} exists already", uri=uri, ended=False)
        self._check_limits(principal)
        self.opening[uri] = principal  # from here on, a second open of ``uri`` is refused
        try:
            # FactLogError if the journal cannot be read: then nobody can tell whether the
            # URI is taken, and a session must not be made on a guess.
            if await trio.to_thread.run_sync(self._daemon.reader.has_session, uri):
                raise SessionExistsError(
                    f"session {uri} is in the journal (it ended, or waits there to be taken "
                    "up): its id cannot be used for a new session",
                    uri=uri,
                    ended=True,
                )
            held = await self._claim(uri)
            if held is not None:
                raise SessionExistsError(
                    f"session {uri} is being opened elsewhere: it {held.description}",
                    uri=uri,
                    ended=False,
                )
            # It is this node's from now on, before any client is told its id: another
            # node asked for it (the journal has nothing of it before its first prompt)
            # finds who runs it there, and follows it.
            try:
                runtime = self._daemon.runtimes.runtime(
                    name,
                    team,
                    session=uri,
                    ids=ids,
                    background=None if background is None else background.name,
                )
            except BaseException:
                await self._drop_unused(uri)
                raise
            live = LiveSession(self._daemon, name, runtime, owner=principal)
            self._add(live)
        finally:
            del self.opening[uri]
        nursery = self._daemon.nursery
        if nursery is not None:
            nursery.start_soon(self._daemon.idle.forget_unprompted, live)
        return live

    def _check_limits(self, principal: str | None) -> None:
        """:class:`SessionLimitError` if one more session would pass ``max_sessions``, or
        ``principal``'s sessions not yet prompted would pass ``max_unprompted_per_token``."""
        limits = self._daemon.limits
        if len(self._daemon.sessions) + len(self.opening) >= limits.max_sessions:
            raise SessionLimitError(
                f"the daemon holds {limits.max_sessions} sessions, its limit (max_sessions): "
                "try again later",
                limit="max_sessions",
                per_principal=False,
            )
        if principal is None:
            return
        unprompted = sum(
            1
            for live in self._daemon.sessions.values()
            if live.owner == principal and live.unprompted
        ) + sum(1 for opener in self.opening.values() if opener == principal)
        if unprompted >= limits.max_unprompted_per_token:
            raise SessionLimitError(
                f"{principal} holds {unprompted} sessions with no prompt yet, the limit "
                "(max_unprompted_per_token): prompt or close one first, or wait "
                f"{limits.unprompted_session:g} s for an unused one to expire",
                limit="max_unprompted_per_token",
                per_principal=True,
            )

    async def journal_knows(self, session: str) -> bool:
        """Whether the journal has a session ``session`` (an id or URI), ended or not; False
        also when the journal cannot be read (:meth:`open_session` refuses then)."""
        try:
            await trio.to_thread.run_sync(self._daemon.reader.session, session_uri(session))
        except FactLogError:
            return False
        return True

    async def claim_chat(self, chat: str) -> None:
        """Claim the chat URI ``chat`` that a client chose for a new chat, until
        :meth:`release_chat`; :class:`SessionExistsError` if any session has, had or is
        claiming a chat of that URI (chat URIs name one chat across every session)."""
        live = next((s for s in self._daemon.sessions.values() if chat in s.state.chats), None)
        if live is not None or chat in self.claimed_chats:
            where = f" in {live.uri}" if live is not None else ""
            raise SessionExistsError(f"chat {chat} exists{where}", uri=chat, ended=False)
        self.claimed_chats.add(chat)
        try:
            past = await trio.to_thread.run_sync(self._daemon.reader.session_of_chat, chat)
        except BaseException:
            self.claimed_chats.discard(chat)
            raise
        if past is not None:
            self.claimed_chats.discard(chat)
            raise SessionExistsError(
                f"chat {chat} was a chat of {past}: its URI cannot be used again",
                uri=chat,
                ended=True,
            )

    def release_chat(self, chat: str) -> None:
        """The claim of :meth:`claim_chat` is over (the chat is live, or was not made)."""
        self.claimed_chats.discard(chat)
