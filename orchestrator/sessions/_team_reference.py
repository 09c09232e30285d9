"""Teams named as the command line and the daemon name them: a team file's path, or
``module:attr``, a team defined in Python (:class:`~orchestrator.spec.Team`) by import path.

``module:attr`` is imported as uvicorn imports an application: the current directory goes
first on ``sys.path`` (and stays there, as the module's own later imports may need it), so
``orchestrator serve --team myteams:support`` finds ``myteams.py`` where it is run. A text that
names an existing file is that file, even when it looks like an import path.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any, Final

from orchestrator.base import TeamFileError
from orchestrator.spec import Team, TeamSpec, load_team

__all__ = ["is_team_reference", "load_team_reference"]

_DOTTED: Final = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_REFERENCE_RE: Final = re.compile(rf"({_DOTTED}):({_DOTTED})\Z")


def is_team_reference(text: str | os.PathLike[str]) -> bool:
    """Whether ``text`` names a team object (``module:attr``) rather than a team file."""
    return _REFERENCE_RE.match(os.fspath(text)) is not None and not Path(text).exists()


def load_team_reference(reference: str | os.PathLike[str]) -> TeamSpec:
    """The team ``reference`` names: the team file at that path, or the :class:`Team` (or
    :class:`TeamSpec`) at ``module:attr``.

    A :class:`TeamFileError` naming the reference says what is missing: the module, the
    attribute, or a team (the attribute is something else)."""
    if not is_team_reference(reference):
        return load_team(Path(reference))
    text = os.fspath(reference)
    module_name, attribute = text.split(":")

    def error(message: str) -> TeamFileError:
        return TeamFileError(message, file=text)

    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        found: Any = importlib.import_module(module_name)
    # The module's own code may raise anything as it is imported: that is a bad team, not a
    # reason to end the daemon with a traceback.
    except (Exception, SystemExit) as exc:
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing is not None and f"{module_name}.".startswith(f"{missing}."):
            raise error(
                f"no module {module_name!r} here (in {here}) or on sys.path; run from the "
                "directory that has it, or name a team file"
            ) from None
        raise error(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise error(f"module {module_name!r} has no attribute {attribute!r}") from None
    if isinstance(found, Team):
        return found.spec
    if isinstance(found, TeamSpec):
        return found
    raise error(
        f"{attribute} is {type(found).__name__}, not a team: name an orchestrator.Team "
        "(or a TeamSpec)"
    )
