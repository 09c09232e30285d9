"""The checks of a team file's tools: ``[tools.<name>]`` and ``[mcp.<name>]`` tables, and the
names of tools an agent lists.

A ``[tools.<name>]`` table is a command tool (``command``: a program run for each call) or a
Python tool (``python = "module:function"``), with an optional input schema (``parameters``
or ``parameters_file``, checked as a JSON Schema whose instances are objects). What only a
program can have (``cwd``, ``env``, ``env_passthrough``) is refused for a Python tool.

An ``[mcp.<name>]`` table declares a Model Context Protocol tool server, reached one of two
ways: ``command`` (stdio: the runtime starts the program) or ``url`` (streamable HTTP).
What makes sense for one transport is refused for the other, each refusal naming the key
path: ``cwd``, ``env`` and ``env_passthrough`` are a program's; ``headers`` are HTTP's. A
header value is literal text, or ``env:NAME`` to read it from the orchestrator's
environment variable ``NAME`` when the server is contacted, so a token never sits in the
file.

An agent names a server's tool in ``tools`` (and ``needs_approval``, ``approves``) as
``mcp.<server>/<tool>``, or ``mcp.<server>/*`` for all of them; :meth:`_ToolChecks.tool_name`
checks such a name against the declared servers. Which tools a server has is known only
when it is contacted (the runtime lists them; ``teams check --tools`` shows them).

Pure: no trio; its only IO is reading a ``parameters_file``.
"""

from __future__ import annotations

import datetime
import json
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ._board import BOARD_TOOLS
from ._checks import _ValueChecks
from ._model import (
    COMMAND_ENV_PREFIX,
    DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_MCP_CALL_TIMEOUT,
    DEFAULT_MCP_START_TIMEOUT,
    MCP_PREFIX,
    TEAM_TOOLS,
    CommandTool,
    McpServer,
    PythonTool,
    mcp_tool_ref,
)
from ._wording import _describe, _did_you_mean, _join

__all__: list[str] = []

#: What an ``[mcp.<name>]`` table may set (see :class:`McpServer`).
_MCP_KEYS: Final = (
    "command",
    "url",
    "cwd",
    "env",
    "env_passthrough",
    "headers",
    "timeout",
    "start_timeout",
)
#: What a [tools.<name>] table may set (see :class:`CommandTool`; with ``python``,
#: :class:`PythonTool` and :data:`_PYTHON_KEYS`).
_COMMAND_KEYS: Final = (
    "command",
    "description",
    "timeout",
    "cwd",
    "env",
    "env_passthrough",
    "parameters",
    "parameters_file",
    "python",
)
#: What a [tools.<name>] table with ``python`` may set (see :class:`PythonTool`).
_PYTHON_KEYS: Final = ("python", "description", "timeout", "parameters", "parameters_file")
#: Keys of a command tool that a Python tool cannot have: it runs in the orchestrator's
#: own process, in its directory and environment.
_PROCESS_KEYS: Final = ("cwd", "env", "env_passthrough")
_STDIO_KEYS: Final = ("cwd", "env", "env_passthrough")
#: A plugin backend named by where its factory is: ``package.module:factory``.
_DOTTED: Final = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_FACTORY_PATH_RE: Final = re.compile(rf"{_DOTTED}:{_DOTTED}\Z")
ENV_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: The MCP specification's tool names: 1-128 of letters, digits, '_', '-' and '.'.
_MCP_TOOL_RE: Final = re.compile(r"[A-Za-z0-9_.-]{1,128}\Z")
_ENV_REFERENCE: Final = "env:"


class _ToolChecks(_ValueChecks):
    """The checks of ``[mcp.<name>]`` tables, and of tool names that may name their tools."""

    #: The declared servers' names, known before any agent is read.
    mcp_names: tuple[str, ...] = ()

    def mcp_server(self, name: str, value: object) -> McpServer:
        """One ``[mcp.<name>]`` table."""
        path = _join("mcp", name)
        self.name(name, path, "MCP server name")
        data = self.table(value, path, 'a [mcp.<name>] table with command = ["..."] or url')
        self.check_keys(data, path, _MCP_KEYS)
        if "command" in data and "url" in data:
            raise self.error(
                f"{path}.url",
                "give command (a program spoken to over stdio) or url (streamable HTTP), not both",
            )
        if "command" not in data and "url" not in data:
            raise self.error(
                path,
                'say how to reach the server: command = ["program", "arg"] (stdio) or '
                'url = "http://host:port/mcp" (streamable HTTP)',
            )
        timeout = self.limit(data, path, "timeout", DEFAULT_MCP_CALL_TIMEOUT)
        start_timeout = self.limit(data, path, "start_timeout", DEFAULT_MCP_START_TIMEOUT)
        if "url" in data:
            for key in (*_STDIO_KEYS, "command"):
                if key in data:
                    raise self.error(
                        _join(path, key),
                        f"{key} is for a server started as a program (command); "
                        "a url server runs elsewhere",
                    )
            headers, env_headers = self.headers(data.get("headers", {}), f"{path}.headers")
            return McpServer(
                name=name,
                url=self.http_url(data["url"], f"{path}.url"),
                headers=headers,
                env_headers=env_headers,
                timeout=timeout,
                start_timeout=start_timeout,
            )
        if "headers" in data:
            raise self.error(
                f"{path}.headers",
                "headers are sent to a url server; this one is a program (command)",
            )
        return McpServer(
            name=name,
            command=self.program(data["command"], f"{path}.command"),
            cwd=self.directory(data["cwd"], f"{path}.cwd") if "cwd" in data else None,
            env=self.env_table(data.get("env", {}), f"{path}.env"),
            env_passthrough=self.env_names(
                data.get("env_passthrough", []), f"{path}.env_passthrough"
            ),
            timeout=timeout,
            start_timeout=start_timeout,
        )

    def limit(
        self, data: Mapping[str, object], path: str, key: str, default: datetime.timedelta
    ) -> datetime.timedelta:
        """A time limit (``timeout``...): a duration such as ``"90s"``; ``default`` if unset.
        A bare number is refused: seconds or minutes would be a guess."""
        if key not in data:
            return default
        value, key_path = data[key], f"{path}.{key}"
        if isinstance(value, int | float) and not isinstance(value, bool):
            raise self.error(
                key_path,
                f'expected a duration such as "90s", "5m" or "1h30m", got {_describe(value)}',
            )
        return self.duration(value, key_path)

    def http_url(self, value: object, path: str) -> str:
        url = self.string(value, path)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise self.error(path, f"expected an http:// or https:// URL with a host, got {url!r}")
        if parts.username or parts.password:
            raise self.error(
                path,
                'put credentials in headers (a value such as "env:TOKEN"), not in the URL: '
                "a URL ends up in logs",
            )
        return url

    def headers(self, value: object, path: str) -> tuple[dict[str, str], dict[str, str]]:
        """The literal headers, and those read from an environment variable (``env:NAME``)."""
        literal: dict[str, str] = {}
        from_env: dict[str, str] = {}
        for key, raw in self.table(value, path, "a table of HTTP headers").items():
            key_path = _join(path, key)
            if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", key):
                raise self.error(key_path, f"{key!r} is not an HTTP header name")
            text = self.string(raw, key_path, empty_ok=True)
            if text.startswith(_ENV_REFERENCE):
                variable = text[len(_ENV_REFERENCE) :]
                if not ENV_NAME_RE.match(variable):
                    raise self.error(
                        key_path,
                        f"{text!r}: after env: comes the name of an environment variable "
                        "(letters, digits and '_', not starting with a digit)",
                    )
                from_env[key] = variable
            elif "\r" in text or "\n" in text:
                raise self.error(key_path, "a header value cannot hold a line break")
            else:
                literal[key] = text
        return literal, from_env

    def env_table(
        self, value: object, path: str, *, reserved_prefix: str | None = None
    ) -> dict[str, str]:
        """A table of environment variables a program gets: names checked, values text."""
        env: dict[str, str] = {}
        for key, text in self.table(value, path, "a table of variables").items():
            key_path = _join(path, key)
            self.env_name(key, key_path)
            if reserved_prefix is not None and key.upper().startswith(reserved_prefix):
                raise self.error(
                    key_path,
                    f"variables starting with {reserved_prefix} are set by the runtime "
                    "for each call (the callback URL, the group id, ...); choose another name",
                )
            env[key] = self.argument(text, key_path, empty_ok=True)
        return env

    def env_names(self, value: object, path: str) -> tuple[str, ...]:
        """``env_passthrough``: names of the orchestrator's variables a program also gets."""
        names: list[str] = []
        for index, item in enumerate(self.array(value, path, "an array of variable names")):
            item_path = f"{path}[{index}]"
            name = self.env_name(self.string(item, item_path), item_path)
            if name in names:
                raise self.error(item_path, f"{name!r} is listed twice")
            names.append(name)
        return tuple(names)

    def env_name(self, name: str, path: str) -> str:
        if not ENV_NAME_RE.match(name):
            raise self.error(
                path,
                f"{name!r} is not an environment variable name (letters, digits and '_', "
                "not starting with a digit)",
            )
        return name

    def program(self, raw: object, path: str) -> tuple[str, ...]:
        """An argv: a non-empty array of arguments, the program first (no shell reads it)."""
        if isinstance(raw, str):
            example = json.dumps(raw.split() or ["program", "argument"], ensure_ascii=False)
            raise self.error(
                path,
                f"expected an array of arguments such as {example} (no shell reads it), "
                f"got {_describe(raw)}",
            )
        items = self.array(raw, path, "an array of arguments")
        if not items:
            raise self.error(path, 'name at least the program to run, e.g. ["python", "tool.py"]')
        return tuple(
            self.argument(item, f"{path}[{index}]", empty_ok=index > 0)
            for index, item in enumerate(items)
        )

    def directory(self, value: object, path: str) -> str:
        """A working directory; a relative one is taken from the team file's directory."""
        cwd = self.argument(value, path, empty_ok=False)
        if not Path(cwd).is_absolute() and not self.file.startswith("<"):
            cwd = str(Path(self.file).parent / cwd)
        return cwd

    def tool_name(self, value: object, path: str, *, wildcard_ok: bool = True) -> str:
        """A tool's name as an agent lists it: a name, or ``mcp.<server>/<tool>`` (or
        ``mcp.<server>/*``) of a declared server."""
        text = self.string(value, path)
        if text in BOARD_TOOLS:
            return text  # the board's tools (see _board.py); [board] is checked by the parser
        if not text.startswith(MCP_PREFIX):
            return self.name(text, path, "tool name")
        ref = mcp_tool_ref(text)
        if ref is None:
            raise self.error(
                path,
                f"{text!r}: an MCP tool is named mcp.<server>/<tool>, or mcp.<server>/* for "
                "all of its tools",
            )
        if ref.server not in self.mcp_names:
            declared = ", ".join(self.mcp_names) or "none"
            raise self.error(
                path,
                f"no MCP server {ref.server!r} is declared"
                f"{_did_you_mean(ref.server, self.mcp_names)}; add [mcp.{ref.server}] "
                f"(declared: {declared})",
            )
        if ref.is_wildcard:
            if not wildcard_ok:
                raise self.error(path, f"{text!r} names every tool; name one tool to call")
            return text
        if not _MCP_TOOL_RE.match(ref.tool):
            raise self.error(
                path,
                f"{ref.tool!r} is not an MCP tool name (1-128 letters, digits, '_', '-' or '.')",
            )
        return text

    def tool_names(self, value: object, path: str) -> tuple[str, ...]:
        """An array of distinct tool names (see :meth:`tool_name`)."""
        result: list[str] = []
        for index, item in enumerate(self.array(value, path)):
            item_path = f"{path}[{index}]"
            name = self.tool_name(item, item_path)
            if name in result:
                raise self.error(item_path, f"{name!r} is listed twice")
            result.append(name)
        return tuple(result)

    def command_tool(self, name: str, value: object) -> CommandTool | PythonTool:
        """One [tools.<name>] table: a program the runtime runs for a call of the tool, or
        (with ``python``) a function it calls (:meth:`python_tool`)."""
        path = _join("tools", name)
        self.name(name, path, "tool name")
        if name in TEAM_TOOLS:
            raise self.error(
                path,
                f"{name!r} is a team tool the runtime runs itself; give the command tool "
                "another name",
            )
        data = self.table(value, path, 'a [tools.<name>] table with command = ["..."]')
        if "python" in data:
            return self.python_tool(name, data, path)
        if "command" not in data:
            self.check_keys(data, path, _COMMAND_KEYS)  # a misspelt key is the better hint
            raise self.error(
                f"{path}.command",
                "missing required key 'command' (a program to run), or set "
                'python = "package.module:function" (a function to call)',
            )
        self.check_keys(data, path, _COMMAND_KEYS, required=("command",))
        command = self.program(data["command"], f"{path}.command")
        description = ""
        if "description" in data:
            description = self.string(data["description"], f"{path}.description")
        timeout = self.limit(data, path, "timeout", DEFAULT_COMMAND_TIMEOUT)
        cwd = self.directory(data["cwd"], f"{path}.cwd") if "cwd" in data else None
        env = self.env_table(data.get("env", {}), f"{path}.env", reserved_prefix=COMMAND_ENV_PREFIX)
        passthrough = self.env_names(data.get("env_passthrough", []), f"{path}.env_passthrough")
        return CommandTool(
            name=name,
            command=command,
            description=description,
            timeout=timeout,
            cwd=cwd,
            env=env,
            env_passthrough=passthrough,
            parameters=self.tool_parameters(data, path),
        )

    def python_tool(self, name: str, data: Mapping[str, Any], path: str) -> PythonTool:
        """A [tools.<name>] table with ``python``: a function the runtime calls (it is
        imported when a team starts, not here: the spec runs no user code)."""
        if "command" in data:
            raise self.error(
                f"{path}.python",
                "set either command (a program to run) or python (a function to call), not both",
            )
        for key in _PROCESS_KEYS:
            if key in data:
                raise self.error(
                    f"{path}.{key}",
                    f"a Python tool runs in the orchestrator's own process, so it has no {key} "
                    "of its own; remove it (or make the tool a command)",
                )
        self.check_keys(data, path, _PYTHON_KEYS)
        target_path = f"{path}.python"
        function: Callable[..., Any] | None = None
        if callable(data["python"]):
            # A team defined in Python (:mod:`._code_first`) gives the function itself.
            function = data["python"]
            target = callable_target(function)
        elif not _FACTORY_PATH_RE.match(target := self.string(data["python"], target_path)):
            raise self.error(
                target_path,
                f'expected "package.module:function" (a module to import, a colon, then the '
                f"function's name in it), got {target!r}",
            )
        description = ""
        if "description" in data:
            description = self.string(data["description"], f"{path}.description")
        timeout = self.limit(data, path, "timeout", DEFAULT_COMMAND_TIMEOUT)
        given = "parameters" in data or "parameters_file" in data
        return PythonTool(
            name=name,
            target=target,
            description=description,
            timeout=timeout,
            parameters=self.tool_parameters(data, path) if given else None,
            function=function,
        )

    def tool_parameters(self, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        """A command tool's input schema: ``parameters`` (a table) or ``parameters_file``.

        ``parameters_file`` is a JSON file, from the team file's directory. The schema is
        checked as a JSON Schema whose input is an object. A bad schema is named by its key
        path and the place in the schema."""
        if "parameters" in data and "parameters_file" in data:
            raise self.error(
                f"{path}.parameters_file", "give parameters or parameters_file, not both"
            )
        if "parameters_file" in data:
            file_path = f"{path}.parameters_file"
            name = self.argument(data["parameters_file"], file_path, empty_ok=False)
            where = Path(name)
            if not where.is_absolute() and not self.file.startswith("<"):
                where = Path(self.file).parent / where
            try:
                schema = json.loads(where.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise self.error(file_path, f"cannot read {where}: {exc}") from exc
            except ValueError as exc:
                raise self.error(file_path, f"{where} is not JSON: {exc}") from exc
            key = file_path
        elif "parameters" in data:
            key = f"{path}.parameters"
            schema = data["parameters"]
        else:
            return {"type": "object"}
        if not isinstance(schema, dict):
            raise self.error(key, f"expected a JSON Schema (a table), got {_describe(schema)}")
        from ._tools import schema_problem  # jsonschema: only for a file that has a schema

        problem = schema_problem(schema)
        if problem is not None:
            raise self.error(key, problem)
        return dict(schema)


def callable_target(function: Callable[..., Any]) -> str:
    """How ``function`` is named: ``module:qualname`` (an import path only where the function
    is its module's attribute of that name; :meth:`~._code_first.Team.to_toml` checks)."""
    module = getattr(function, "__module__", None) or "?"
    qualname = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}:{qualname}"


def _lists(tools: Sequence[str], tool: str) -> bool:
    """Whether an agent with ``tools`` has ``tool`` (a ``needs_approval`` entry): by name, an
    MCP tool through its server's ``mcp.<server>/*``, and ``mcp.<server>/*`` through any
    tool of that server."""
    if tool in tools:
        return True
    ref = mcp_tool_ref(tool)
    if ref is None:
        return False
    prefix = f"{MCP_PREFIX}{ref.server}/"
    return f"{prefix}*" in tools or (ref.is_wildcard and any(t.startswith(prefix) for t in tools))
