"""The generated reference pages of the docs site: the team file and the command line.

mkdocs runs this as a hook (``hooks:`` in mkdocs.yml), so the pages are written at every
build from the code and cannot drift from it:

* ``reference/team-file.md``: every key the team-file parser accepts, table by table. The
  keys come from the parser itself: each table is fed a document with one unknown key, and
  the parser's refusal lists the keys that table allows. Each key's description comes from
  :data:`DESCRIPTIONS` below. A key the parser accepts with no description here (or a
  description of a key it no longer accepts) fails the build, naming the key.
* ``reference/cli.md``: each command's ``--help``, from the argparse parser of
  ``orchestrator.cli``.

``tests/test_docs.py`` checks the team-file page against the parser's key tables.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

#: A key no table has: the parser refuses it and lists what the table allows.
_PROBE = "zz_not_a_key"

#: The smallest team the parser accepts; each probe adds to a copy of it.
_BASE: Mapping[str, Any] = {
    "team": {"name": "t", "coordinator": "lead"},
    "agents": {
        "lead": {"role": "r", "tools": ["delegate"], "delegates_to": ["w"]},
        "w": {"role": "r"},
    },
}


def _at(document: dict[str, Any], path: tuple[str | int, ...]) -> Any:
    node: Any = document
    for part in path:
        node = node[part]
    return node


#: Each table of the team file: its heading on the page, what to add to the base document
#: to reach it, and where in that document the probe key goes.
_TABLES: tuple[tuple[str, Mapping[str, Any], tuple[str | int, ...]], ...] = (
    ("top level", {}, ()),
    ("[team]", {}, ("team",)),
    ("[openai]", {"openai": {}}, ("openai",)),
    ("[agents.NAME]", {}, ("agents", "w")),
    (
        "[[agents.NAME.turns]]",
        {"agents": {"w": {"role": "r", "turns": [{"steps": []}]}}},
        ("agents", "w", "turns", 0),
    ),
    (
        "a step: say",
        {"agents": {"w": {"role": "r", "turns": [{"steps": [{"say": "hi"}]}]}}},
        ("agents", "w", "turns", 0, "steps", 0),
    ),
    (
        "a step: think",
        {"agents": {"w": {"role": "r", "turns": [{"steps": [{"think": "hm"}]}]}}},
        ("agents", "w", "turns", 0, "steps", 0),
    ),
    (
        "a step: tool",
        {
            "agents": {
                "w": {"role": "r", "tools": ["look"], "turns": [{"steps": [{"tool": "look"}]}]}
            }
        },
        ("agents", "w", "turns", 0, "steps", 0),
    ),
    (
        "a step: delegate",
        {
            "agents": {
                "lead": {
                    "role": "r",
                    "tools": ["delegate"],
                    "delegates_to": ["w"],
                    "turns": [{"steps": [{"delegate": [{"agent": "w", "task": "x"}]}]}],
                }
            }
        },
        ("agents", "lead", "turns", 0, "steps", 0),
    ),
    (
        "a delegate step's entry",
        {
            "agents": {
                "lead": {
                    "role": "r",
                    "tools": ["delegate"],
                    "delegates_to": ["w"],
                    "turns": [{"steps": [{"delegate": [{"agent": "w", "task": "x"}]}]}],
                }
            }
        },
        ("agents", "lead", "turns", 0, "steps", 0, "delegate", 0),
    ),
    (
        "a step: handoff",
        {
            "agents": {
                "lead": {
                    "role": "r",
                    "tools": ["handoff"],
                    "delegates_to": ["w"],
                    "turns": [{"steps": [{"handoff": "w"}]}],
                }
            }
        },
        ("agents", "lead", "turns", 0, "steps", 0),
    ),
    (
        "a step: ask",
        {"agents": {"w": {"role": "r", "tools": ["ask"], "turns": [{"steps": [{"ask": "?"}]}]}}},
        ("agents", "w", "turns", 0, "steps", 0),
    ),
    (
        "a step: verdict",
        {
            "agents": {
                "v": {"role": "r", "reviews": ["w"], "turns": [{"steps": [{"verdict": "passed"}]}]}
            }
        },
        ("agents", "v", "turns", 0, "steps", 0),
    ),
    (
        "a step: review",
        {
            "agents": {
                "lead": {
                    "role": "r",
                    "tools": ["delegate", "review"],
                    "delegates_to": ["w"],
                    "turns": [{"steps": [{"review": "task-2"}]}],
                },
                "v": {"role": "r", "reviews": ["w"]},
            }
        },
        ("agents", "lead", "turns", 0, "steps", 0),
    ),
    (
        "a step: fail",
        {"agents": {"w": {"role": "r", "turns": [{"steps": [{"fail": "no"}]}]}}},
        ("agents", "w", "turns", 0, "steps", 0),
    ),
    (
        "a step: sleep",
        {"agents": {"w": {"role": "r", "turns": [{"steps": [{"sleep": 1}]}]}}},
        ("agents", "w", "turns", 0, "steps", 0),
    ),
    (
        "a step: usage",
        {"agents": {"w": {"role": "r", "turns": [{"steps": [{"usage": [1, 1]}]}]}}},
        ("agents", "w", "turns", 0, "steps", 0),
    ),
    ("[tools.NAME] (a command)", {"tools": {"x": {"command": ["true"]}}}, ("tools", "x")),
    (
        "[tools.NAME] (a Python function)",
        {"tools": {"x": {"python": "m:f"}}},
        ("tools", "x"),
    ),
    ("[mcp.NAME]", {"mcp": {"s": {"command": ["true"]}}}, ("mcp", "s")),
    (
        "[[background]]",
        {"background": [{"name": "b", "every": "1h", "prompt": "p"}]},
        ("background", 0),
    ),
    ("[board]", {"board": {}}, ("board",)),
    (
        "[[board.items]]",
        {"board": {"items": [{"id": "a", "title": "A"}]}},
        ("board", "items", 0),
    ),
)

#: What the page says of each key, by table; the keys themselves come from the parser.
DESCRIPTIONS: Mapping[str, Mapping[str, str]] = {
    "top level": {
        "team": "The `[team]` table (required).",
        "agents": "One `[agents.NAME]` table per agent definition (required, at least one).",
        "tools": "`[tools.NAME]` tables: tools that run a program or call a Python function.",
        "mcp": "`[mcp.NAME]` tables: Model Context Protocol tool servers.",
        "openai": "The `[openai]` table: settings every `openai` agent starts from.",
        "background": "`[[background]]` entries: teammates that wake on a schedule.",
        "board": "The `[board]` table: work items shared by the team's agents and people.",
    },
    "[team]": {
        "name": "The team's name, by which clients, sessions and the web view know it (required).",
        "topology": "The team's shape, as Agent UI names it: `solo_run`, `coordinator_team` "
        "(default), `parallel_workers`, `specialist_handoff`, `review_team`, "
        "`human_agent_board`, `background_teammate` or `remote_teammate`.",
        "parallel_budget": "How many workers may run at once (default 4). "
        "Delegations over the budget wait, visibly queued.",
        "coordinator": "The agent the user talks to (required).",
        "description": "A sentence about the team, shown to clients.",
        "on_restart": "What a restart does with a turn the stop cut off: `resume` (default) "
        "runs it again, `fail` reports it failed.",
    },
    "[openai]": {
        "model": "The model's name, as the server knows it.",
        "base_url": "The server's URL (default `$OPENAI_BASE_URL`, then the hosted API).",
        "api_key_env": "The environment variable the API key is read from "
        "(default `OPENAI_API_KEY`).",
        "api_key_header": "The header the key goes in: `authorization` (default) sends "
        "`Bearer <key>`, another name (Azure's `api-key`) the key alone.",
        "query": "Query parameters added to every request, as Azure's `api-version`.",
        "stream_usage": "Ask for token counts at the end of the stream (default `true`); "
        "`false` for a server that refuses `stream_options`.",
        "temperature": "The sampling temperature (default: the server's).",
        "read_timeout": "Seconds without a byte from the server before the round fails "
        "(default 120).",
        "max_retries": "Retries of a request refused with 429 or 5xx, or not reached (default 4).",
        "structured_output": "How an agent's `output_schema` is asked for: `auto` (default: "
        "the response format without tools, a `final_answer` tool with them), "
        "`response_format` or `tool` (for a server without response formats).",
    },
    "[agents.NAME]": {
        "role": "What the agent is, in a few words (required).",
        "backend": "What answers it: `scripted` (default), `openai`, or a plugin "
        "(`module:factory` or an `orchestrator.backends` entry point).",
        "instructions": "The system prompt a model backend is given.",
        "interactivity": "How clients show it: `full`, `read-only` or `hidden` "
        "(default: `full` for the coordinator, `read-only` for the others).",
        "tools": "The tools it may call: `delegate`, `handoff`, `ask`, `review`, a `[tools.NAME]`, "
        "`mcp.SERVER/TOOL` or `mcp.SERVER/*`, or any other name (a plain tool).",
        "delegates_to": "The agents its `delegate` and `handoff` calls may reach.",
        "needs_approval": "Its tools whose calls wait for a decision.",
        "artifacts": "Its tools whose results are recorded as artifacts (a file, a report, "
        "structured data): projected as `artifact.changed`, sent to A2A clients as artifacts.",
        "approved_by": "Who decides them: `user` (default) or `coordinator`.",
        "approves": "On a coordinator: the tools it approves when approvals are routed to it; "
        "it denies any other.",
        "timeout": "Seconds its task may take before it is stopped.",
        "tool_results": "A table of plain tools' scripted results (default `ok`).",
        "turns": "The scripted backend's `[[agents.NAME.turns]]`: one entry per user turn.",
        "output_schema": "A JSON Schema (an inline table) its final answer must fit: one "
        "retry, then the task fails (see Structured output in the Python guide).",
        "reviews": "The workers whose delegations this agent reviews: it answers each with a "
        "verdict (see the Reviews guide); a worker has one reviewer.",
        "max_review_rounds": "On a reviewer: at most this many reviews of one delegation "
        "(default 2); the delegation then ends with the last verdict.",
        "review": "On the coordinator: when reviewed delegations are reviewed, `always` "
        "(default) or `on_request` (when it calls the `review` tool).",
        "settings": "A plugin backend's own table, handed to its factory as it is.",
        "a2a": "A remote teammate: the base URL of an A2A agent (its Agent Card is at "
        "`/.well-known/agent-card.json`); it then takes only `role`, `interactivity`, "
        "`timeout` and `headers` (see the Remote teammates guide).",
        "headers": "A remote teammate's HTTP headers, sent with each request: literal text, or "
        "`env:NAME` to read the value from the environment.",
        "model": "An `openai` agent's model, overriding `[openai]`.",
        "base_url": "An `openai` agent's server URL, overriding `[openai]`.",
        "api_key_env": "An `openai` agent's key variable, overriding `[openai]`.",
        "api_key_header": "An `openai` agent's key header, overriding `[openai]`.",
        "query": "An `openai` agent's query parameters, overriding `[openai]`.",
        "stream_usage": "Whether an `openai` agent asks for token counts, overriding `[openai]`.",
        "temperature": "An `openai` agent's temperature, overriding `[openai]`.",
        "read_timeout": "An `openai` agent's read timeout, overriding `[openai]`.",
        "max_retries": "An `openai` agent's retries, overriding `[openai]`.",
        "structured_output": "An `openai` agent's `structured_output`, overriding `[openai]`.",
    },
    "[[agents.NAME.turns]]": {
        "steps": "The turn's steps, in order; each step does exactly one thing (required).",
        "retry": "With `output_schema`: the text steps played when the answer did not fit "
        "and the model is asked again (default: the turn's last round again).",
    },
    "a step: say": {
        "say": "Stream answer text; `{task}` and `{outcomes}` are filled in.",
        "chunks": "How many deltas the text streams in (default 3).",
        "when_task_contains": "Run the step only when the chat's task mentions this word "
        "(case-insensitive).",
    },
    "a step: think": {
        "think": "Stream reasoning text.",
        "chunks": "How many deltas the text streams in (default 3).",
        "when_task_contains": "As for `say`.",
    },
    "a step: tool": {
        "tool": "Call one of the agent's tools; the step ends the model round.",
        "input": "The call's input, a table.",
        "when_task_contains": "As for `say`.",
    },
    "a step: delegate": {
        "delegate": "Start workers in parallel: a list of `{ agent, task }` entries.",
        "when_task_contains": "As for `say`.",
    },
    "a delegate step's entry": {
        "agent": "The worker's agent, one of `delegates_to` (required).",
        "task": "The worker's task (required).",
        "review": "When this delegation is reviewed: `always` or `on_request` (default: the "
        "coordinator's `review`).",
    },
    "a step: handoff": {
        "handoff": "Hand the task over to this agent.",
        "reason": "Why, recorded with the handoff.",
        "resume": "The agent that takes the task back when the specialist is done.",
        "when_task_contains": "As for `say`.",
    },
    "a step: ask": {
        "ask": "Ask the user a question.",
        "kind": "How the answer is read: `text` (default), `boolean`, `number`, `integer`, "
        "`single-select` or `multi-select`.",
        "options": "The choices of a `single-select` or `multi-select` question.",
        "when_task_contains": "As for `say`.",
    },
    "a step: verdict": {
        "verdict": "A reviewer's answer: `passed`, `changes_requested` or `failed`.",
        "summary": "What the reviewer found, in a sentence.",
        "fixes": "The fixes asked for (not with `passed`); the worker gets them as its next turn.",
        "evidence": "A list of `{ kind, text, ref }`: `kind` is `quote`, `tool_result`, "
        "`link` or `fact`; `ref` a URL or a fact's id.",
        "when_task_contains": "As for `say`.",
    },
    "a step: review": {
        "review": "Call the `review` tool on this delegated task (`task-N`): its reviewer "
        "checks it now; the step ends the model round.",
        "when_task_contains": "As for `say`.",
    },
    "a step: fail": {
        "fail": "End the turn in error with this message.",
        "when_task_contains": "As for `say`.",
    },
    "a step: sleep": {
        "sleep": "Wait this many seconds.",
        "when_task_contains": "As for `say`.",
    },
    "a step: usage": {
        "usage": "Report token usage: `[input_tokens, output_tokens]`.",
        "when_task_contains": "As for `say`.",
    },
    "[tools.NAME] (a command)": {
        "command": "The program and its arguments, an argv: no shell reads it.",
        "description": "What a model is told the tool does.",
        "timeout": 'A duration such as `"5m"` (default `"10m"`).',
        "cwd": "The program's directory, relative to the team file's "
        "(default: the orchestrator's own).",
        "env": "Variables added to the program's allow-listed environment.",
        "env_passthrough": "Variables of the orchestrator's environment the program also gets.",
        "parameters": "The JSON Schema (draft 2020-12) of a call's input.",
        "parameters_file": "The same schema, from a JSON file beside the team file.",
        "python": "`package.module:function`: call this function instead of a program "
        "(see the next table).",
    },
    "[tools.NAME] (a Python function)": {
        "python": "The function to call, `package.module:function`.",
        "description": "What a model is told (default: the docstring's first paragraph).",
        "timeout": 'A duration (default `"10m"`).',
        "parameters": "The input's JSON Schema (default: derived from the signature).",
        "parameters_file": "The same schema, from a JSON file beside the team file.",
    },
    "[mcp.NAME]": {
        "command": "A stdio server: the program and its arguments, which the runtime starts.",
        "url": "A streamable-HTTP server: its URL.",
        "cwd": "A stdio server's directory, relative to the team file's.",
        "env": "Variables added to a stdio server's allow-listed environment.",
        "env_passthrough": "Variables of the orchestrator's a stdio server also gets.",
        "headers": 'An HTTP server\'s headers; `"env:NAME"` reads a value from a variable.',
        "timeout": 'One call\'s limit, a duration (default `"5m"`).',
        "start_timeout": 'The start and handshake\'s limit (default `"30s"`).',
    },
    "[[background]]": {
        "name": "The teammate's name (required).",
        "schedule": "A cron expression (or give `every`).",
        "every": 'An interval such as `"15m"`, counted from the Unix epoch.',
        "timezone": "The IANA zone `schedule` is read in (default UTC).",
        "prompt": "What each wake asks.",
        "agent": "The agent that runs the wake (default: the coordinator).",
        "overlap": "When a wake comes while the last run goes: `skip`, `queue` or `replace`.",
        "max_runtime": "A duration after which a run is stopped.",
        "catch_up": "Wakes missed while the daemon was down: `none`, `latest` or `all`.",
        "catch_up_limit": "At most this many missed wakes are run (default 10).",
    },
    "[board]": {
        "items": "`[[board.items]]` entries: the board's work items, in order.",
    },
    "[[board.items]]": {
        "id": "The item's id, unique on the board (required).",
        "title": "What the item is (required).",
        "description": "More about it, for whoever takes it.",
        "priority": "`low`, `normal` (the default), `high` or `urgent`.",
        "depends_on": "The ids of items that must be done before this one starts.",
        "assignee": 'An agent\'s name, or a person as `"@principal"`; an agent starts on it.',
    },
}

_ALLOWED_RE = re.compile(r"allowed(?: keys)?: ([\w, ]+)$")


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)


def accepted_keys() -> dict[str, tuple[str, ...]]:
    """Every table's keys, as the team-file parser says it allows them."""
    from orchestrator.base import TeamFileError
    from orchestrator.spec import team_from_mapping

    found: dict[str, tuple[str, ...]] = {}
    for heading, extra, path in _TABLES:
        document = copy.deepcopy(dict(_BASE))
        _merge(document, extra)
        _at(document, path)[_PROBE] = True
        try:
            team_from_mapping(document, file="probe.toml")
        except TeamFileError as exc:
            messages = [str(problem) for problem in exc.problems]
        else:
            raise RuntimeError(f"{heading}: the parser took the unknown key {_PROBE!r}")
        for message in messages:
            if _PROBE in message and (match := _ALLOWED_RE.search(message)):
                found[heading] = tuple(k.strip() for k in match.group(1).split(","))
                break
        else:
            raise RuntimeError(f"{heading}: no refusal listing allowed keys in {messages}")
    return found


def team_file_page() -> str:
    """The team-file reference page, in Markdown; raises if a key has no description."""
    keys = accepted_keys()
    missing = [f"{t}: {k}" for t, ks in keys.items() for k in ks if k not in DESCRIPTIONS[t]]
    stale = [f"{t}: {k}" for t, ds in DESCRIPTIONS.items() for k in ds if k not in keys[t]]
    if missing or stale:
        raise RuntimeError(
            "docs/hooks/reference.py DESCRIPTIONS differ from what the team-file parser accepts: "
            + "; ".join([*(f"undocumented {m}" for m in missing), *(f"stale {s}" for s in stale)])
        )
    lines = [
        "# The team file",
        "",
        "<!-- Generated by docs/hooks/reference.py from the parser: do not edit. -->",
        "",
        "A team file is TOML.",
        "This page lists every key the parser accepts, table by table.",
        "It is generated from the parser at each build, so it is the parser's own list.",
        "`orchestrator teams check FILE` names any problem by its key path.",
        "The files in `teams/` are commented examples.",
        "",
    ]
    for heading, table_keys in keys.items():
        lines += [f"## {heading}", "", "| key | meaning |", "|---|---|"]
        lines += [f"| `{key}` | {DESCRIPTIONS[heading][key]} |" for key in table_keys]
        lines.append("")
    return "\n".join(lines)


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    """The help text as any machine prints it: a fixed width, the journal's default place."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def _commands(
    parser: argparse.ArgumentParser, name: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:  # argparse keeps its subcommands here, and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _commands(sub, f"{name} {sub_name}")


def cli_page() -> str:
    """The command-line reference page: each command's ``--help``."""
    from orchestrator.cli._main import build_parser

    lines = [
        "# The command line",
        "",
        "<!-- Generated by docs/hooks/reference.py from the argparse parser: do not edit. -->",
        "",
        "Every command's `--help`, as the installed `orchestrator` prints it.",
        "Exit status, for every command: 0 ok; 1 the run failed or was cancelled, or a check",
        "found problems; 2 bad usage or input; 3 the daemon or a service it needs cannot be",
        "reached.",
        "",
    ]
    with _environment(COLUMNS="100", XDG_STATE_HOME="~/.local/state"):
        for name, parser in _commands(build_parser(), "orchestrator"):
            parser.prog = name
            lines += [f"## `{name}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


#: The generated pages, by their path under docs/.
PAGES = {"reference/team-file.md": team_file_page, "reference/cli.md": cli_page}


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for src_uri, make in PAGES.items():
        files.append(File.generated(config, src_uri, content=make()))
    return files
