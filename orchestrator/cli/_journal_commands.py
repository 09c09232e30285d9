"""The commands that read or edit the journal: ``sessions``, ``events``, ``graph``,
``history``, ``undo``, ``truncate``, ``restore``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TextIO

import trio

from orchestrator.base import FactLogError
from orchestrator.core import (
    Fact,
    TeamState,
    build_graph,
    fact_to_json,
    to_dot,
    to_graphml,
    to_json,
    to_mermaid,
)
from orchestrator.journal import (
    Edit,
    SessionInfo,
    edit_history,
    open_reader,
    resolve_chat,
)
from orchestrator.protocols import (
    envelope_to_json_line,
    project_facts,
    restore_actions,
    truncate_action,
    undo_action,
)
from orchestrator.runtime import (
    read_facts,
)

from ._console import describe_fact
from ._conventions import EXIT_FAILED, EXIT_OK, default_db
from ._sessions_command import reader_of, resolve_session

__all__: list[str] = []


_RENDERERS = {"json": to_json, "dot": to_dot, "mermaid": to_mermaid, "graphml": to_graphml}
"""Each ``graph --format`` drawn from the graph, and what draws it."""
_PAGE_FORMAT = "html"
"""The ``graph --format`` drawn by the web view's page, from the session's envelopes."""


def history(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator history``."""
    reader = reader_of(args)
    info = resolve_session(reader, args.session)
    chat = resolve_chat(reader, info.session, args.chat)
    for message in reader.agent_messages(info.session, chat, deleted=args.deleted):
        event = message.event
        if args.deleted:
            event = {**event, "turnId": message.turn_id, "deletedAt": message.deleted_at}
        out.write(json.dumps(event, ensure_ascii=False) + "\n")
    return EXIT_OK


def edit(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator undo``, ``truncate`` and ``restore``."""
    return trio.run(_edit, args)


async def _edit(args: argparse.Namespace) -> int:
    path = args.db or default_db()
    reader = open_reader(path)
    info = resolve_session(reader, args.session)
    chat = resolve_chat(reader, info.session, args.chat)
    edit: Edit
    match args.command:
        case "undo":
            edit = lambda state, facts: [undo_action(state)]  # noqa: E731
        case "truncate":
            keep = None if args.keep == "none" else args.keep
            edit = lambda state, facts: [truncate_action(state, keep)]  # noqa: E731
        case _:
            edit = restore_actions
    recorded = await edit_history(path, info.session, chat, edit)
    turns = reader.open(info.session).chats[chat].turns
    print(
        f"{args.command}: {len(recorded)} fact(s) recorded; {chat} has {len(turns)} turn(s)"
        + (f", the last {turns[-1].id}" if turns else ""),
        file=sys.stderr,
    )
    return EXIT_OK


def events(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator events``: one line per fact (or Agent UI envelope) for a person, or
    JSON Lines with ``--json``."""
    reader, wanted, fmt = reader_of(args), args.session, args.format
    session = resolve_session(reader, wanted).session
    facts = reader.facts(session)
    if fmt == "facts":
        if args.json:
            _lines(out, (fact_to_json(f) for f in facts))
        else:
            _lines(out, _fact_lines(session, facts))
    elif args.json:
        _lines(out, (envelope_to_json_line(e) for e in project_facts(session, facts)))
    else:
        _lines(
            out,
            (
                f"{e.sequence or '':>6}  {e.timestamp or '':<24}  {e.type}"
                for e in project_facts(session, facts)
            ),
        )
    return EXIT_OK


def _offline_page(source: str, facts: Sequence[Fact], info: SessionInfo | None) -> str:
    """The web view's page for one session, in one file that draws it offline."""
    from orchestrator.server import WebAssets, session_summary

    session = facts[0].session if facts else source
    summary = (
        session_summary(info)
        if info is not None
        else {"id": session.removeprefix("ahp-session:/"), "uri": session, "title": source}
    )
    envelopes = [json.loads(envelope_to_json_line(e)) for e in project_facts(session, facts)]
    title = f"{summary.get('title') or session} · delegation graph"
    return WebAssets().standalone({"session": summary, "envelopes": envelopes}, title=title)


def _fact_lines(session: str, facts: Sequence[Fact]) -> Iterator[str]:
    """``SEQ  AT  WHO  TYPE  what happened`` for each fact; ``who`` is the agent of the
    fact's chat (the session's own facts say ``session``)."""
    state = TeamState(session)
    for fact in facts:
        state.apply(fact)
        member = state.members.get(fact.channel)
        who = member.agent if member is not None else "session"
        said = describe_fact(state, fact)
        yield f"{fact.sequence:>6}  {fact.at}  {who:<12}  {fact.type}" + (
            f"  {said}" if said else ""
        )


def _lines(out: TextIO, lines: Iterable[str]) -> None:
    for line in lines:
        out.write(line + "\n")


def graph(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator graph``."""
    facts: Iterable[Fact]
    info: SessionInfo | None = None
    if args.facts is not None:
        if args.session is not None:
            raise FactLogError("give a SESSION or --facts FILE, not both", source="graph")
        source = str(args.facts)
        facts = read_facts(args.facts)
    elif args.session is not None:
        reader = reader_of(args)
        info = resolve_session(reader, args.session)
        source = info.session
        facts = reader.facts(source)
    else:
        raise FactLogError("name a SESSION (orchestrator sessions lists them)", source="graph")
    if args.format == _PAGE_FORMAT and not args.check:
        out.write(_offline_page(source, list(facts), info))
        return EXIT_OK
    graph = build_graph(facts)
    if args.check:
        violations = graph.check()
        if args.json:
            found = [
                {"kind": str(v.kind), "message": v.message, "nodes": list(v.nodes)}
                for v in violations
            ]
            json.dump({"source": source, "ok": not violations, "violations": found}, out)
            out.write("\n")
        else:
            for violation in violations:
                print(f"{violation.kind}: {violation.message}", file=out)
            if violations:
                print(f"{len(violations)} violation(s) in {source}", file=out)
            else:
                print(f"ok: {source} is consistent", file=out)
        return EXIT_FAILED if violations else EXIT_OK
    drawn = _RENDERERS[args.format](graph)
    out.write(drawn if drawn.endswith("\n") else drawn + "\n")
    return EXIT_OK
