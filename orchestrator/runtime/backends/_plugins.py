"""Backend plugins: a backend a team file names that the runtime does not have built in.

An agent's ``backend`` is ``scripted``, ``openai``, or a plugin, named either way:

* ``backend = "mypkg.backends:make"``: the attribute ``make`` of the module
  ``mypkg.backends`` (imported from ``sys.path`` as any module is);
* ``backend = "mybackend"``: the entry point ``mybackend`` of the group
  ``orchestrator.backends`` (:data:`ENTRY_POINT_GROUP`), which an installed distribution
  declares in its pyproject::

      [project.entry-points."orchestrator.backends"]
      mybackend = "mypkg.backends:make"

The name resolves to a *factory*: a callable taking one :class:`BackendSetup` and returning
the agent's backend (anything with ``stream_round``, :class:`~orchestrator.core.Backend`).
A run calls it once per agent, up front, before its first fact (see
:func:`~._factory.backend_factory`). It should check its settings and raise if it cannot work;
a :class:`~orchestrator.base.RunError` with a message of its own reads best. It should defer
any IO to the rounds. :class:`BackendSetup` may gain fields; a factory reads the
ones it needs.

Every problem is a :class:`~orchestrator.base.RunError` naming the team file, the agent's
key (``agents.writer.backend``) and what is wrong: an unknown entry-point name, a module
that does not import, a missing attribute, a factory that raises or returns no backend.
``orchestrator teams check`` resolves each plugin (imports it, without calling the factory:
see :func:`backend_problems`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from orchestrator.base import RunError
from orchestrator.spec import A2A_BACKEND, BUILTIN_BACKENDS, AgentSpec, TeamSpec

if TYPE_CHECKING:
    import httpx

    from orchestrator.core import Backend

__all__ = [
    "ENTRY_POINT_GROUP",
    "BackendSetup",
    "PluginFactory",
    "backend_problems",
    "make_plugin_backend",
    "resolve_plugin",
]

#: The entry-point group a distribution registers its backends under.
ENTRY_POINT_GROUP: Final = "orchestrator.backends"

#: What a plugin's import or factory may raise that is its failure, said as one: any error,
#: and ``SystemExit`` too (``sys.exit()`` in a module is a plugin's bug, not the
#: orchestrator's request to end; uncaught, it would end ``run`` with the plugin's status
#: and no word of why). A KeyboardInterrupt stays the user's.
_PLUGIN_FAILURES: Final = (Exception, SystemExit)


@attrs.frozen(kw_only=True)
class BackendSetup:
    """What a plugin's factory is given to make one agent's backend.

    ``settings``: the agent's ``[agents.<name>.settings]`` table as TOML decoded it (empty
    when the file has none). ``client``: the run's shared HTTP client (one connection
    pool; use it, rather than a client of your own, for requests made from the rounds).
    ``environ``: the environment to read keys from (the process's, unless a test or the
    daemon says otherwise); a team file never holds a secret.
    """

    team: TeamSpec
    agent: AgentSpec
    settings: Mapping[str, Any]
    client: httpx.AsyncClient
    environ: Mapping[str, str]


#: A plugin's factory: one agent's setup in, its backend out.
PluginFactory = Callable[[BackendSetup], "Backend"]


def _failure(exc: BaseException) -> str:
    """What a plugin raised, in one line: ``ValueError: no key``, ``SystemExit(3)``."""
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r}) (the plugin tried to end the process)"
    return f"{type(exc).__name__}: {exc}"


def _where(team: TeamSpec, agent: AgentSpec) -> str:
    return f"{team.file}: agents.{agent.name}.backend"


def resolve_plugin(team: TeamSpec, agent: AgentSpec) -> PluginFactory:
    """The factory ``agent``'s plugin backend names; :class:`RunError` if there is none."""
    name = agent.backend
    where = _where(team, agent)
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
        except _PLUGIN_FAILURES as exc:
            raise RunError(
                f"{where}: cannot import {module_name!r} for backend {name!r}: {_failure(exc)}"
            ) from exc
        for part in attribute.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise RunError(
                    f"{where}: module {module_name!r} has no {attribute!r} (backend {name!r})"
                ) from None
    else:
        # Imported here: it costs ~30 ms, and a team of built-in backends (teams check, the
        # CLI's start) never needs it.
        from importlib import metadata

        found = metadata.entry_points(group=ENTRY_POINT_GROUP, name=name)
        entry = next(iter(found), None)
        if entry is None:
            known = sorted(
                {*BUILTIN_BACKENDS, *metadata.entry_points(group=ENTRY_POINT_GROUP).names}
            )
            raise RunError(
                f"{where}: unknown backend {name!r}: no built-in backend and no entry point of "
                f"that name in the {ENTRY_POINT_GROUP!r} group (known: {', '.join(known)}; "
                "or name a factory as module:attribute)"
            )
        try:
            target = entry.load()
        except _PLUGIN_FAILURES as exc:
            raise RunError(
                f"{where}: cannot load entry point {name!r} ({entry.value}): {_failure(exc)}"
            ) from exc
    if not callable(target):
        raise RunError(f"{where}: backend {name!r} is {type(target).__name__}, not a factory")
    factory: PluginFactory = target
    return factory


def make_plugin_backend(
    team: TeamSpec,
    agent: AgentSpec,
    *,
    client: httpx.AsyncClient,
    environ: Mapping[str, str],
) -> Backend:
    """``agent``'s backend, made by its plugin's factory; :class:`RunError` if it cannot."""
    factory = resolve_plugin(team, agent)
    where = _where(team, agent)
    setup = BackendSetup(
        team=team, agent=agent, settings=agent.settings, client=client, environ=environ
    )
    try:
        backend = factory(setup)
    except RunError as exc:
        raise RunError(f"{where}: {exc}") from exc
    except _PLUGIN_FAILURES as exc:
        raise RunError(
            f"{where}: the factory of backend {agent.backend!r} raised {_failure(exc)}"
        ) from exc
    if not callable(getattr(backend, "stream_round", None)):
        raise RunError(
            f"{where}: the factory of backend {agent.backend!r} returned "
            f"{type(backend).__name__}, which has no stream_round method (not a Backend)"
        )
    result: Backend = backend
    return result


def backend_problems(team: TeamSpec) -> list[str]:
    """What stops ``team``'s plugin backends from being found, one message per agent.

    Imports each plugin (a module that does not import is a problem) but calls no factory:
    a factory may need what only a run has (a key in the environment, a server).
    """
    problems: list[str] = []
    for agent in team.agents:
        if agent.backend in BUILTIN_BACKENDS or agent.backend == A2A_BACKEND:
            continue
        try:
            resolve_plugin(team, agent)
        except RunError as exc:
            problems.append(str(exc))
    return problems
