"""The daemon's teams.

- The team files of its directory (:func:`load_teams`).
- The catalog a client names a team from (:class:`TeamCatalog`). A client names a team by its
  ``[team] name`` or its file's stem. The catalog also knows the default team, and why a file
  that did not load cannot be used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import structlog

from orchestrator.base import ConfigError, RunError, TeamFileError
from orchestrator.spec import TeamSpec, load_team

from ._team_reference import load_team_reference

__all__ = [
    "TeamCatalog",
    "TeamFiles",
    "load_teams",
]

log = structlog.get_logger("orchestrator.daemon")


@attrs.frozen(kw_only=True)
class TeamFiles:
    """The team files of a directory: those that load, by their ``[team] name``, the file
    each was read from, and why the others do not load."""

    teams: Mapping[str, TeamSpec]
    files: Mapping[str, str]  # [team] name → the team file's name (``handoff.toml``)
    invalid: Mapping[str, str]  # file stem → the file's problems


def load_teams(directory: Path, *, named: Sequence[str] = ()) -> TeamFiles:
    """Every team file of ``directory`` by its ``[team] name`` (the name sessions record),
    after the teams ``named`` one by one (``serve --team``: a file, or ``module:attr``).

    A file of the directory that cannot be used is reported: the daemon serves the others,
    and says which at start and in ``/healthz``. So is a second file of a name already taken.
    A named team that cannot be used raises its :class:`TeamFileError`: it was asked for.
    Raises :class:`ConfigError` when the directory is not there (unless teams are named) or
    no team can be used."""
    init = "orchestrator init" + ("" if directory == Path("teams") else f" {directory}")
    teams: dict[str, TeamSpec] = {}
    files: dict[str, str] = {}
    invalid: dict[str, str] = {}
    for reference in named:
        team = load_team_reference(reference)
        if team.name in teams:
            raise TeamFileError(
                f"[team] name {team.name!r} is already that of {files[team.name]}: give one "
                "of them another name",
                file=reference,
            )
        teams[team.name] = team
        files[team.name] = reference
    if named and not directory.is_dir():
        return TeamFiles(teams=teams, files=files, invalid=invalid)
    if not directory.is_dir():
        # Said once (not "teams: teams: ..."), with what to do about it.
        raise ConfigError(
            "not a directory of team files: name the directory of your team files with "
            f"--teams DIR (or `teams =` in the config file), or run `{init}` to write "
            "starter teams there",
            file=str(directory),
        )
    for path in sorted(directory.glob("*.toml")):
        try:
            team = load_team(path)
        except TeamFileError as exc:
            invalid[path.stem] = str(exc)
            continue
        if team.name in teams:
            invalid[path.stem] = (
                f"{path}: [team] name {team.name!r} is already that of {files[team.name]}: "
                "give one of them another name"
            )
            continue
        teams[team.name] = team
        files[team.name] = path.name
    if not teams:
        why = (
            f"no team files (*.toml) here: run `{init}` to write starter teams"
            if not invalid
            else "no team file here can be used:"
        )
        raise ConfigError(
            "\n".join([why, *invalid.values()]), file=str(directory), key_path="teams"
        )
    return TeamFiles(teams=teams, files=files, invalid=invalid)


class TeamCatalog:
    """The teams a daemon serves, as clients name them: by ``[team] name``, or by the stem
    of the team's file (``handoff`` for ``handoff.toml``), which names the same team."""

    def __init__(
        self,
        teams: Mapping[str, TeamSpec],
        *,
        files: Mapping[str, str] | None = None,
        default: str | None = None,
        invalid: Mapping[str, str] | None = None,
    ) -> None:
        """The catalog of ``teams``, by their ``[team] name``.

        Args:
            teams: The teams, by name.
            files: The file each team was read from.
            default: The team of a client that names none (default: the only team).
            invalid: The team files that did not load (stem → why), served by nobody and named
                when asked for.

        Raises :class:`ConfigError` if ``default`` is no team.
        """
        self.teams = dict(teams)
        self.files = dict(files or {})
        # File stem → [team] name, for a stem that is not itself a team's name.
        self._stems = {
            Path(file).stem: name
            for name, file in self.files.items()
            if Path(file).stem not in teams
        }
        if default is not None:
            default = self._stems.get(default, default)
        if default is not None and default not in teams:
            raise ConfigError(
                f"no team {default!r} (teams: {self.listing()})",
                file="<config>",
                key_path="default_team",
            )
        self.invalid = dict(invalid or {})
        for name, problems in self.invalid.items():
            log.error("team file cannot be used", team=name, error=problems)
        self.default = default or (next(iter(teams)) if len(teams) == 1 else None)

    def listing(self) -> str:
        """The teams a client may name, each with its file: ``support (handoff.toml)``."""
        return ", ".join(
            f"{name} ({self.files[name]})" if name in self.files else name
            for name in sorted(self.teams)
        )

    def name(self, name: str) -> str:
        """The name of the team a client names ``name``: its ``[team] name``, or the stem of
        its file (``handoff`` for ``handoff.toml``), which names the same team."""
        return name if name in self.teams else self._stems.get(name, name)

    def stem(self, name: str) -> str | None:
        """The stem of team ``name``'s file, when it is not the team's name."""
        file = self.files.get(name)
        return Path(file).stem if file is not None and Path(file).stem != name else None

    def team(self, name: str | None) -> tuple[str, TeamSpec]:
        """The team a client asks for (by ``[team] name`` or file stem; None: the default
        team), and its name; :class:`RunError` saying which teams there are otherwise."""
        wanted = self.name(name) if name else self.default
        if wanted is None:
            raise RunError(f"name a team with ?team= (teams: {self.listing()})")
        team = self.teams.get(wanted)
        if team is None and wanted in self.invalid:
            problems = self.invalid[wanted]
            raise RunError(f"team {wanted!r} cannot be used: its file has problems ({problems})")
        if team is None:
            raise RunError(f"no team {wanted!r} (teams: {self.listing()})")
        return wanted, team
