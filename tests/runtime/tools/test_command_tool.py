"""Command tools: real programs run for tool calls, their output the result.

Every test runs a real Python process (``sys.executable -c SCRIPT``). Where time matters the
test runs on trio's mock clock, which stands still (rate 0): once the program said it is
ready over a socket, the test moves the clock to the deadline it means
(``mock_clock.jump``), so timeouts and kill grace periods are exact, virtual and instant.
(Autojumping would not do: while a real process takes real time to die, the clock would
jump on to the next deadline.)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    ChatToolCallCompleteAction,
    ChatToolCallReadyAction,
    ChatTurnCancelledAction,
)
from orchestrator.ahp.state import ToolCallConfirmationReason, ToolResultTextContent
from orchestrator.base import TeamFileError
from orchestrator.core import (
    ApprovalRequested,
    Backend,
    ModelEvent,
    RoundContext,
    RunFinished,
    RunStatus,
    TeamState,
    TextDelta,
    ToolCallRequest,
    ViewUpdated,
)
from orchestrator.journal import JournalReader
from orchestrator.runtime import (
    BASE_VARIABLES,
    CALLBACK_TOKEN_VAR,
    CALLBACK_URL_VAR,
    GROUP_ID_VAR,
    INTERPRETER_BIN,
    KILL_GRACE,
    STDERR_TAIL,
    TOOL_CALL_ID_VAR,
    CommandResult,
    Ids,
    MemoryFactLog,
    RunOutcome,
    TeamRuntime,
    ToolCallback,
    callback_url,
    command_environment,
    group_id,
    run_command,
)
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.server import Role, ServeConfig, Token
from orchestrator.sessions import Limits
from orchestrator.spec import (
    AgentSpec,
    CommandTool,
    TeamSpec,
    load_team,
    parse_team,
    tool_definitions,
)
from tests.support.daemon import connect, running_daemon
from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

#: Echo the input read from stdin, as JSON, to stdout.
ECHO_INPUT = "import json, sys; print(json.dumps(json.load(sys.stdin), sort_keys=True))"

#: Tell the test (a socket on 127.0.0.1:argv[1]) our pid, then sleep. With ``ignore`` as
#: argv[2], SIGTERM is ignored; with ``child``, a child holding the socket sleeps too (its
#: pid follows ours); with ``orphan``, the child alone stays (holding stdout) and we exit 0.
SLEEPER = """
import os, signal, socket, subprocess, sys, time
mode = sys.argv[2] if len(sys.argv) > 2 else ""
if mode == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
pids = [os.getpid()]
if mode in ("child", "orphan"):
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(3600)"], pass_fds=[sock.fileno()]
    )
    pids.append(child.pid)
sys.stderr.write("sleeping now\\n")
sys.stderr.flush()
sock.sendall((" ".join(map(str, pids)) + "\\n").encode())
if mode == "orphan":
    sys.exit(0)
time.sleep(3600)
"""


def command_tool(script: str, *args: str, **fields: Any) -> CommandTool:
    return CommandTool(name="probe", command=(sys.executable, "-c", script, *args), **fields)


async def run(
    tool: CommandTool, arguments: Mapping[str, Any] | None = None, **kwargs: Any
) -> CommandResult:
    env = command_environment(
        os.environ, tool, session="ahp-session:/s", tool_call_id="c", callback=None
    )
    with trio.fail_after(60):
        return await run_command(tool, arguments or {}, env, **kwargs)


@attrs.define
class Sleeper:
    """A SLEEPER program started by :func:`sleeper`: its pids once it said it is ready."""

    tool: CommandTool
    listener: trio.SocketListener
    stream: trio.SocketStream | None = None
    pids: tuple[int, ...] = ()
    result: CommandResult | None = None
    cancelled: bool = False

    async def wait_ready(self) -> None:
        self.stream = await self.listener.accept()
        received = b""
        while not received.endswith(b"\n"):
            received += await self.stream.receive_some()
        self.pids = tuple(int(p) for p in received.split())

    async def wait_all_gone(self) -> None:
        """Returns once every process holding the socket (ours and its child) has ended:
        a process closes its files as it exits, so the socket's end of file says so before
        ``/proc`` may show it (see :func:`gone`)."""
        assert self.stream is not None
        while await self.stream.receive_some():
            pass


@asynccontextmanager
async def sleeper(*mode: str, **fields: Any) -> AsyncIterator[tuple[Sleeper, trio.CancelScope]]:
    """Run a SLEEPER call in the background; yield it and the cancel scope around the call."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    probe = Sleeper(command_tool(SLEEPER, str(port), *mode, **fields), listeners[0])
    scope = trio.CancelScope()

    async def call() -> None:
        with scope:
            probe.result = await run_command(probe.tool, {}, os.environ)
        probe.cancelled = scope.cancelled_caught

    async with listeners[0], trio.open_nursery() as nursery:
        nursery.start_soon(call)
        await probe.wait_ready()
        yield probe, scope
    if probe.stream is not None:
        await probe.stream.aclose()


async def wait_exited(pid: int) -> None:
    """Wait until the process ``pid`` (a child of ours) has exited."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # exited and reaped already
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


def gone(pids: Sequence[int]) -> bool:
    """Whether none of ``pids`` runs any more (a zombie nobody reaped yet counts as gone).

    Exact for the program itself (the call waited for it); a child it started ends a moment
    after its files are closed, so for those, :meth:`Sleeper.wait_all_gone` is the proof.
    """
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        if state != "Z":
            return False
    return True


class TestResult:
    async def test_stdout_is_the_result(self) -> None:
        """What the program prints is the call's result, as it printed it."""
        result = await run(command_tool("print('hello'); print('wörld')"))
        assert result == CommandResult(success=True, output="hello\nwörld\n")

    async def test_the_input_reaches_stdin_as_json(self) -> None:
        """The call's input is one JSON object on stdin, then end of file."""
        arguments = {"query": "déjà vu", "n": 3, "deep": {"list": [1, None, True]}}
        result = await run(command_tool(ECHO_INPUT), arguments)
        assert result.success
        assert json.loads(result.output) == arguments

    async def test_a_program_that_ignores_a_large_input_still_succeeds(self) -> None:
        """A program need not read its stdin: the unread input is dropped, not an error."""
        result = await run(command_tool("print('done')"), {"blob": "x" * 1_000_000})
        assert result == CommandResult(success=True, output="done\n")

    async def test_stderr_of_a_successful_call_is_not_the_result(self) -> None:
        result = await run(command_tool("import sys; sys.stderr.write('noise'); print('ok')"))
        assert result == CommandResult(success=True, output="ok\n")

    async def test_long_output_is_cut_with_a_note(self) -> None:
        """Past the limit stdout is dropped (counted, not kept); a character cut in two at
        the limit is left out."""
        result = await run(command_tool("print('ab' + 'é' * 10, end='')"), output_limit=5)
        assert result.success
        # "ab" + one "é" (2 bytes) = 4 bytes; the next "é" is cut after its first byte.
        assert result.output == "abé\n[output truncated: 17 more bytes not shown]"

    async def test_working_directory_and_extra_environment(self, tmp_path: Path) -> None:
        script = "import os; print(os.getcwd()); print(os.environ['GREETING'])"
        tool = command_tool(script, cwd=str(tmp_path), env={"GREETING": "hi there"})
        result = await run(tool)
        assert result.output.splitlines() == [str(tmp_path), "hi there"]


class TestFailure:
    async def test_a_non_zero_exit_fails_the_call_with_stderr_s_tail(self) -> None:
        script = "import sys; print('partial'); sys.stderr.write('it broke\\n'); sys.exit(3)"
        result = await run(command_tool(script))
        assert result == CommandResult(
            success=False,
            output=("probe exited with status 3\nstderr:\nit broke\n\nstdout:\npartial\n"),
        )

    async def test_only_the_tail_of_stderr_is_kept(self) -> None:
        script = "import sys; sys.stderr.write('a' * 10000 + 'END'); sys.exit(1)"
        result = await run(command_tool(script))
        assert not result.success
        heading, tail = result.output.split(":\n", 1)
        assert heading == (
            f"probe exited with status 1\nstderr (its last {STDERR_TAIL} of 10003 bytes)"
        )
        assert tail == "a" * (STDERR_TAIL - 3) + "END"

    async def test_a_program_killed_by_a_signal(self) -> None:
        result = await run(command_tool("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
        assert result == CommandResult(success=False, output="probe was killed by SIGKILL")

    @pytest.mark.parametrize(
        ("fields", "expected"),
        [
            (
                {"command": ("/nonexistent/program", "x")},
                "cannot start probe: /nonexistent/program",
            ),
            ({"cwd": "/nonexistent/dir"}, "(in /nonexistent/dir)"),
        ],
        ids=["no-program", "no-cwd"],
    )
    async def test_a_program_that_cannot_start(self, fields: dict[str, Any], expected: str) -> None:
        result = await run(attrs.evolve(command_tool("pass"), **fields))
        assert not result.success
        assert expected in result.output
        assert "No such file or directory" in result.output

    async def test_a_timeout_stops_the_program_and_fails_the_call(
        self, mock_clock: trio.testing.MockClock
    ) -> None:
        """At the timeout the program gets SIGTERM; the message names the timeout as the
        team file writes it, with what the program wrote to stderr."""
        async with sleeper(timeout=dt.timedelta(minutes=5)) as (probe, _):
            mock_clock.jump(300)
        assert trio.current_time() == 300
        assert probe.result == CommandResult(
            success=False,
            output="probe timed out after 5m\nstderr:\nsleeping now\n",
        )
        assert gone(probe.pids)

    async def test_a_program_that_ignores_sigterm_is_killed_after_the_grace(
        self, mock_clock: trio.testing.MockClock
    ) -> None:
        async with sleeper("ignore", timeout=dt.timedelta(seconds=90)) as (probe, _):
            mock_clock.jump(90)
            await trio.testing.wait_all_tasks_blocked()  # SIGTERM sent, the grace running
            assert not gone(probe.pids)
            mock_clock.jump(KILL_GRACE)
            await probe.wait_all_gone()
        assert trio.current_time() == 90 + KILL_GRACE
        assert probe.result is not None
        assert probe.result.output.startswith("probe timed out after 1m30s")
        assert gone(probe.pids)

    async def test_output_held_open_by_a_leftover_child_ends_at_the_timeout(
        self, mock_clock: trio.testing.MockClock
    ) -> None:
        """The program exited, but a child it left holds stdout: the call waits until the
        timeout, says so, and the child is killed."""
        async with sleeper("orphan", timeout=dt.timedelta(minutes=1)) as (probe, _):
            await wait_exited(probe.pids[0])
            await trio.testing.wait_all_tasks_blocked()  # the call saw it exit
            mock_clock.jump(60)
            await probe.wait_all_gone()
        assert trio.current_time() == 60
        assert probe.result is not None
        assert probe.result.output.startswith(
            "probe exited with status 0, but what it started kept its output open until the "
            "timeout (1m)"
        )


class TestCancellation:
    async def test_cancelling_the_call_kills_the_program(self) -> None:
        """Cancelled: the process is stopped before the cancellation goes on."""
        async with sleeper() as (probe, scope):
            scope.cancel()
        assert probe.cancelled
        assert probe.result is None
        assert gone(probe.pids)

    async def test_cancelling_kills_what_the_program_started(self) -> None:
        """The program's children (its process group) are stopped with it."""
        async with sleeper("child") as (probe, scope):
            assert len(probe.pids) == 2
            scope.cancel()
            await probe.wait_all_gone()  # the child held the socket too: it ended
        assert probe.cancelled
        assert gone(probe.pids[:1])

    async def test_cancel_escalates_to_sigkill_after_the_grace(
        self, mock_clock: trio.testing.MockClock
    ) -> None:
        async with sleeper("ignore") as (probe, scope):
            scope.cancel()
            await trio.testing.wait_all_tasks_blocked()  # SIGTERM sent, the grace running
            assert not gone(probe.pids)
            mock_clock.jump(KILL_GRACE)
        assert trio.current_time() == KILL_GRACE
        assert probe.cancelled
        assert gone(probe.pids)


class TestEnvironment:
    TOOL = CommandTool(name="t", command=("t",), env={"EXTRA": "1", "PATH": "/tool/bin"})

    def test_the_runtime_s_variables_over_the_tool_s_over_the_base(self) -> None:
        env = command_environment(
            {"PATH": "/usr/bin", "HOME": "/home/u"},
            self.TOOL,
            session="ahp-session:/abc",
            tool_call_id="call-7",
            callback=ToolCallback(url="http://127.0.0.1:9/callback"),
            token="secret-token",
        )
        assert env == {
            "PATH": "/tool/bin",
            "HOME": "/home/u",
            "EXTRA": "1",
            GROUP_ID_VAR: "abc",
            TOOL_CALL_ID_VAR: "call-7",
            CALLBACK_URL_VAR: "http://127.0.0.1:9/callback",
            CALLBACK_TOKEN_VAR: "secret-token",
        }

    def test_a_daemon_without_a_url_or_token_unsets_inherited_ones(self) -> None:
        base = {CALLBACK_URL_VAR: "http://stale", CALLBACK_TOKEN_VAR: "stale", GROUP_ID_VAR: "old"}
        env = command_environment(
            base, self.TOOL, session="ahp-session:/s", tool_call_id="c", callback=ToolCallback()
        )
        assert CALLBACK_URL_VAR not in env
        assert CALLBACK_TOKEN_VAR not in env
        assert env[GROUP_ID_VAR] == "s"

    def test_without_a_daemon_the_callback_comes_from_the_environment(self) -> None:
        """``orchestrator run``: the callback variables, if set, pass through."""
        base = {CALLBACK_URL_VAR: "http://elsewhere/callback"}
        env = command_environment(
            base, self.TOOL, session="ahp-session:/s", tool_call_id="c", callback=None
        )
        assert env[CALLBACK_URL_VAR] == "http://elsewhere/callback"
        assert CALLBACK_TOKEN_VAR not in env

    def test_the_orchestrator_s_secrets_are_not_passed_on(self) -> None:
        """Only the allow-list, the named pass-throughs and the tool's own values reach it."""
        base = {
            "PATH": "/usr/bin",
            "LANG": "C.UTF-8",
            "OPENAI_API_KEY": "sk-secret",
            "ORCHESTRATOR_TOKEN": "daemon-token",
            "GITHUB_TOKEN": "gh-token",
            "AWS_SECRET_ACCESS_KEY": "aws",
        }
        tool = CommandTool(name="t", command=("t",), env_passthrough=("GITHUB_TOKEN", "UNSET"))
        env = command_environment(
            base, tool, session="ahp-session:/s", tool_call_id="c", callback=None
        )
        assert env == {
            "PATH": f"{INTERPRETER_BIN}{os.pathsep}/usr/bin",
            "LANG": "C.UTF-8",
            "GITHUB_TOKEN": "gh-token",
            GROUP_ID_VAR: "s",
            TOOL_CALL_ID_VAR: "c",
        }

    @given(
        base=st.dictionaries(
            st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True), st.text(max_size=5)
        ),
        passthrough=st.lists(st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True)),
    )
    def test_nothing_outside_the_allow_list_gets_through(
        self, base: dict[str, str], passthrough: list[str]
    ) -> None:
        tool = CommandTool(name="t", command=("t",), env_passthrough=tuple(passthrough))
        env = command_environment(
            base, tool, session="ahp-session:/s", tool_call_id="c", callback=ToolCallback()
        )
        allowed = {*BASE_VARIABLES, *passthrough, GROUP_ID_VAR, TOOL_CALL_ID_VAR}
        assert set(env) <= allowed
        assert env["PATH"].split(os.pathsep)[0] == INTERPRETER_BIN
        assert all(
            env[k] == base[k]
            for k in env
            if k in base and k not in (GROUP_ID_VAR, TOOL_CALL_ID_VAR, "PATH")
        )

    async def test_a_secret_in_the_daemon_s_environment_does_not_reach_the_program(
        self,
    ) -> None:
        script = "import json, os; print(json.dumps(dict(os.environ)))"
        tool = attrs.evolve(command_tool(script), env_passthrough=("SHARED_TOKEN",))
        base = {**os.environ, "OPENAI_API_KEY": "sk-leak", "SHARED_TOKEN": "shared"}
        env = command_environment(
            base, tool, session="ahp-session:/s", tool_call_id="c", callback=None
        )
        with trio.fail_after(60):
            result = await run_command(tool, {}, env)
        seen = json.loads(result.output)
        assert "OPENAI_API_KEY" not in seen
        assert seen["SHARED_TOKEN"] == "shared"
        assert seen["PATH"].endswith(os.environ["PATH"])

    async def test_python_is_the_orchestrator_s_interpreter(self) -> None:
        """Its directory comes first on PATH, as if its environment were activated, so a
        daemon started with a bare PATH runs what is installed beside it."""
        tool = CommandTool(name="which", command=("python", "-c", "import sys; print(sys.prefix)"))
        env = command_environment(
            {"PATH": "/usr/bin:/bin"},
            tool,
            session="ahp-session:/s",
            tool_call_id="c",
            callback=None,
        )
        with trio.fail_after(60):
            result = await run_command(tool, {}, env)
        assert result.output.strip() == sys.prefix

    def test_a_call_token_is_not_in_the_repr(self) -> None:
        callback = ToolCallback(url="u")
        with callback.call_token("ahp-session:/s") as token:
            assert token not in repr(callback)

    def test_a_call_token_names_its_session_until_the_call_ends(self) -> None:
        """Each call gets a token of its own (never one shared by calls or sessions), known
        only while its block runs."""
        callback = ToolCallback(url="u")
        with (
            callback.call_token("ahp-session:/a") as first,
            callback.call_token("ahp-session:/a") as second,
            callback.call_token("ahp-session:/b") as other,
        ):
            assert len({first, second, other}) == 3
            assert len(first) >= 32
            assert callback.session_of(first) == "ahp-session:/a"
            assert callback.session_of(second) == "ahp-session:/a"
            assert callback.session_of(other) == "ahp-session:/b"
            assert callback.session_of(first[:-1]) is None
        assert callback.session_of(first) is None
        assert callback.session_of(other) is None

    def test_no_token_is_told_before_the_daemon_has_a_url(self) -> None:
        env = command_environment(
            {}, self.TOOL, session="ahp-session:/s", tool_call_id="c",
            callback=ToolCallback(), token="secret-token",
        )  # fmt: skip
        assert CALLBACK_TOKEN_VAR not in env

    def test_group_id_is_the_session_id(self) -> None:
        assert group_id("ahp-session:/1234") == "1234"

    @pytest.mark.parametrize(
        ("bound", "url"),
        [
            ("http://127.0.0.1:8765", "http://127.0.0.1:8765/callback"),
            ("http://0.0.0.0:8765", "http://127.0.0.1:8765/callback"),
            ("http://[::]:8765", "http://[::1]:8765/callback"),
            ("http://[::1]:80", "http://[::1]:80/callback"),
        ],
    )
    def test_callback_url_of_a_bound_address(self, bound: str, url: str) -> None:
        """A wildcard address is reached on loopback: tools run on the daemon's machine."""
        assert callback_url(bound) == url

    async def test_the_program_sees_its_variables(self) -> None:
        script = (
            "import json, os; print(json.dumps({k: v for k, v in os.environ.items() "
            "if k.startswith('ORCHESTRATOR_')}))"
        )
        tool = command_tool(script)
        env = command_environment(
            {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")},
            tool,
            session="ahp-session:/sess",
            tool_call_id="call-1",
            callback=ToolCallback(url="http://127.0.0.1:1/callback"),
        )
        with trio.fail_after(60):
            result = await run_command(tool, {}, env)
        assert json.loads(result.output) == {
            GROUP_ID_VAR: "sess",
            TOOL_CALL_ID_VAR: "call-1",
            CALLBACK_URL_VAR: "http://127.0.0.1:1/callback",
        }


async def test_signal_names_are_used_for_any_signal() -> None:
    """A program stopped by SIGTERM from elsewhere says so."""
    result = await run(command_tool(f"import os; os.kill(os.getpid(), {int(signal.SIGTERM)})"))
    assert result.output == "probe was killed by SIGTERM"


# ─── in a run: the runtime calls command tools like any tool ─────────────────────────────


def team_with(tool_table: str, *, steps: str, agent_extra: str = "") -> TeamSpec:
    """A one-agent team whose scripted coordinator plays ``steps``; ``tool_table`` is the
    body of ``[tools.probe]``."""
    return parse_team(
        f"""
[team]
name = "probe-team"
coordinator = "lead"

[tools.probe]
{tool_table}

[agents.lead]
role = "coordinator"
tools = ["probe"]
{agent_extra}

[[agents.lead.turns]]
steps = [ {steps} ]
""",
        file="<test>",
    )


def toml_argv(script: str, *args: str) -> str:
    """``command = [...]`` running ``script`` with this interpreter (JSON strings are TOML)."""
    return "command = " + json.dumps([sys.executable, "-c", script, *args])


def new_runtime(
    team: TeamSpec, backends: Callable[[AgentSpec], Backend] = ScriptedBackend
) -> TeamRuntime:
    return TeamRuntime(
        team, backends=backends, factlog=MemoryFactLog(), ids=Ids(deterministic=True)
    )


def completions(runtime: TeamRuntime) -> list[ChatToolCallCompleteAction]:
    log = runtime.recorder.factlog
    assert isinstance(log, MemoryFactLog)
    # Whatever was recorded folds to the live state: recorded "through the same facts".
    assert TeamState.fold(runtime.session, log.facts).chats == runtime.state.chats
    return [f.action for f in log.facts if isinstance(f.action, ChatToolCallCompleteAction)]


def result_text(action: ChatToolCallCompleteAction) -> str:
    assert action.result.content is not None
    (content,) = action.result.content
    assert isinstance(content, ToolResultTextContent)
    return content.text


#: Print what the call was told: its input and the runtime's variables.
REPORT = (
    "import json, os, sys; print(json.dumps({'input': json.load(sys.stdin), "
    "'group': os.environ['ORCHESTRATOR_GROUP_ID'], "
    "'call': os.environ['ORCHESTRATOR_TOOL_CALL_ID']}, sort_keys=True))"
)


class TestInARun:
    async def test_the_result_is_recorded_as_the_tool_call_s_completion(self) -> None:
        """A scripted ``tool`` step runs the program; its stdout is the call's recorded
        result, which the next round reads."""
        team = team_with(
            toml_argv(REPORT) + '\ndescription = "Report"',
            steps='{ tool = "probe", input = { q = "x" } }, { say = "saw {outcomes}" }',
        )
        runtime = new_runtime(team)
        with trio.fail_after(60):
            outcome = await runtime.run("go")
        assert outcome.status is RunStatus.COMPLETED
        (complete,) = completions(runtime)
        assert complete.result.success
        assert complete.result.past_tense_message == "Ran probe"
        reported = json.loads(result_text(complete))
        assert reported == {
            "input": {"q": "x"},
            "group": runtime.session.removeprefix("ahp-session:/"),
            "call": complete.tool_call_id,
        }
        assert result_text(complete).strip() in outcome.result

    async def test_a_failing_program_is_a_failed_call_and_the_turn_goes_on(self) -> None:
        team = team_with(
            toml_argv("import sys; sys.stderr.write('bad input'); sys.exit(2)"),
            steps='{ tool = "probe" }, { say = "after: {outcomes}" }',
        )
        runtime = new_runtime(team)
        with trio.fail_after(60):
            outcome = await runtime.run("go")
        assert outcome.status is RunStatus.COMPLETED
        (complete,) = completions(runtime)
        assert not complete.result.success
        assert result_text(complete).startswith("probe exited with status 2\n")
        assert "bad input" in result_text(complete)
        assert "probe exited with status 2" in outcome.result

    @pytest.mark.parametrize("approved", [True, False])
    async def test_approval_gates_a_command_tool(self, tmp_path: Path, approved: bool) -> None:
        """With needs_approval, the program runs only once approved; denied, never."""
        marker = tmp_path / "ran"
        script = f"open({str(marker)!r}, 'w').close(); print('ran')"
        team = team_with(
            toml_argv(script),
            steps='{ tool = "probe" }, { say = "{outcomes}" }',
            agent_extra='needs_approval = ["probe"]',
        )
        runtime = new_runtime(team)
        subscription = runtime.bus.subscribe("test")
        outcomes: list[RunOutcome] = []

        async def run() -> None:
            outcomes.append(await runtime.run("go"))

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                async for fact in subscription:
                    if isinstance(fact.action, ApprovalRequested):
                        request = fact.action
                        break
                assert not marker.exists(), "nothing runs before the decision"
                await runtime.resolve_approval(request.approval, approved=approved)
        assert marker.exists() == approved
        (outcome,) = outcomes
        if approved:
            (complete,) = completions(runtime)
            assert complete.result.success
            assert result_text(complete) == outcome.result == "ran\n"
        else:
            assert completions(runtime) == [], "a denied call ends denied, not completed"
            assert outcome.result == "probe was denied by user"

    async def test_calls_in_one_round_run_concurrently(self) -> None:
        """Two calls of the same command tool in one round run at once, each with its own
        input, process and result: each program waits until both have started."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        script = (
            "import json, os, socket, sys; n = json.load(sys.stdin)['n']; "
            f"s = socket.create_connection(('127.0.0.1', {port})); s.recv(1); "
            "print(n, os.environ['ORCHESTRATOR_TOOL_CALL_ID'])"
        )
        team = team_with(toml_argv(script), steps='{ say = "unused" }')
        runtime = new_runtime(team, backends=lambda spec: TwoCalls())

        async def release_both() -> None:
            first = await listeners[0].accept()
            second = await listeners[0].accept()  # both programs are running now
            for stream in (first, second):
                await stream.send_all(b"!")
                await stream.aclose()

        with trio.fail_after(60):
            async with listeners[0], trio.open_nursery() as nursery:
                nursery.start_soon(release_both)
                outcome = await runtime.run("go")
        assert outcome.status is RunStatus.COMPLETED
        results = {c.tool_call_id: result_text(c) for c in completions(runtime)}
        assert results == {"call-a": "1 call-a\n", "call-b": "2 call-b\n"}
        assert outcome.result == "1 call-a\n|2 call-b\n"

    async def test_cancelling_the_run_kills_the_program(self) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        team = team_with(toml_argv(SLEEPER, str(port)), steps='{ tool = "probe" }')
        runtime = new_runtime(team)
        with trio.fail_after(60):
            async with listeners[0], trio.open_nursery() as nursery:
                nursery.start_soon(runtime.run, "go")
                probe = Sleeper(team.command_tools[0], listeners[0])
                await probe.wait_ready()
                runtime.cancel()
                await probe.wait_all_gone()
                assert probe.stream is not None
                await probe.stream.aclose()
        assert gone(probe.pids)
        assert completions(runtime) == [], "a cancelled call has no result"
        log = runtime.recorder.factlog
        assert isinstance(log, MemoryFactLog)
        assert any(isinstance(f.action, ChatTurnCancelledAction) for f in log.facts)
        (finished,) = [f.action for f in log.facts if isinstance(f.action, RunFinished)]
        assert finished.status is RunStatus.CANCELLED


class TwoCalls:
    """A model that calls ``probe`` twice in one response, then joins the two results."""

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        await trio.lowlevel.checkpoint()
        if context.round_index == 0:
            for call, n in (("call-a", 1), ("call-b", 2)):
                yield ToolCallRequest(tool_call_id=call, tool_name="probe", arguments={"n": n})
        else:
            yield TextDelta(text="|".join(o.output for o in context.outcomes))


def test_a_command_tool_is_offered_with_its_description() -> None:
    team = team_with(toml_argv("pass") + '\ndescription = "Run the tests"', steps='{ say = "x" }')
    (definition,) = tool_definitions(team, team.coordinator_agent)
    assert (definition.name, definition.description) == ("probe", "Run the tests")


# ─── typed command tools: an input schema, offered and enforced ─────────────────────────

QUERY_SCHEMA = (
    'parameters = { type = "object", required = ["query"], additionalProperties = false, '
    'properties = { query = { type = "string", minLength = 1 }, limit = { type = "integer" } } }'
)


class TestTypedCommandTools:
    def test_the_schema_is_offered_to_the_model(self) -> None:
        team = team_with(toml_argv("pass") + "\n" + QUERY_SCHEMA, steps='{ say = "x" }')
        (definition,) = tool_definitions(team, team.coordinator_agent)
        assert definition.parameters["required"] == ["query"]
        assert definition.parameters["properties"]["limit"] == {"type": "integer"}

    def test_without_a_schema_any_object(self) -> None:
        team = team_with(toml_argv("pass"), steps='{ say = "x" }')
        (definition,) = tool_definitions(team, team.coordinator_agent)
        assert definition.parameters == {"type": "object"}

    def test_a_schema_file_is_read_from_the_team_file_s_directory(self, tmp_path: Path) -> None:
        (tmp_path / "schemas").mkdir()
        schema = {"type": "object", "properties": {"path": {"type": "string"}}}
        (tmp_path / "schemas" / "probe.json").write_text(json.dumps(schema))
        (tmp_path / "team.toml").write_text(
            '[team]\nname = "t"\ncoordinator = "lead"\n'
            f'[tools.probe]\n{toml_argv("pass")}\nparameters_file = "schemas/probe.json"\n'
            '[agents.lead]\nrole = "coordinator"\ntools = ["probe"]\n'
            '[[agents.lead.turns]]\nsteps = [{ say = "x" }]\n'
        )
        team = load_team(tmp_path / "team.toml")
        assert team.command_tool("probe").parameters == schema  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        ("table", "key", "says"),
        [
            (
                'parameters = { type = "object", properties = { q = { type = "strng" } } }',
                "tools.probe.parameters",
                "not a valid JSON Schema: at .properties.q.type:",
            ),
            ('parameters = { type = "string" }', "tools.probe.parameters", 'must be "object"'),
            ("parameters = 3", "tools.probe.parameters", "expected a JSON Schema (a table)"),
            (
                'parameters = {}\nparameters_file = "x.json"',
                "tools.probe.parameters_file",
                "not both",
            ),
            ('parameters_file = "nope.json"', "tools.probe.parameters_file", "cannot read"),
        ],
    )
    def test_a_bad_schema_is_named_where_it_is(self, table: str, key: str, says: str) -> None:
        with pytest.raises(TeamFileError) as caught:
            team_with(toml_argv("pass") + "\n" + table, steps='{ say = "x" }')
        assert caught.value.key_path == key
        assert says in caught.value.message

    async def test_input_that_does_not_fit_fails_the_call_and_the_program_never_runs(
        self, tmp_path: Path
    ) -> None:
        """The model (here scripted) reads why in its next round; the program is not run
        (it would have left a file)."""
        ran = tmp_path / "ran"
        team = team_with(
            toml_argv(f"open({str(ran)!r}, 'w').close()") + "\n" + QUERY_SCHEMA,
            steps='{ tool = "probe", input = { query = "", limt = 3 } }, '
            '{ say = "after: {outcomes}" }',
        )
        runtime = new_runtime(team)
        with trio.fail_after(60):
            outcome = await runtime.run("go")
        (complete,) = completions(runtime)
        assert not complete.result.success
        assert result_text(complete).startswith("invalid input for probe: ")
        assert not ran.exists()
        assert "invalid input for probe" in outcome.result

    async def test_a_gated_call_whose_input_does_not_fit_is_never_put_to_a_person(
        self, tmp_path: Path
    ) -> None:
        """Validated first: a call its schema refuses asks nobody for approval (it could not
        run, whatever they decided); it fails at once with the schema's reason, its input
        recorded as sent."""
        ran = tmp_path / "ran"
        team = team_with(
            toml_argv(f"open({str(ran)!r}, 'w').close()") + "\n" + QUERY_SCHEMA,
            steps='{ tool = "probe", input = { limt = 3 } }, { say = "after: {outcomes}" }',
            agent_extra='needs_approval = ["probe"]',
        )
        runtime = new_runtime(team)
        subscription = runtime.bus.subscribe("test")
        outcomes: list[RunOutcome] = []

        async def run() -> None:
            outcomes.append(await runtime.run("go"))

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                async for fact in subscription:
                    assert not isinstance(fact.action, ApprovalRequested), fact.action
                    if isinstance(fact.action, RunFinished):
                        break
        (outcome,) = outcomes
        log = runtime.recorder.factlog
        assert isinstance(log, MemoryFactLog)
        assert [f for f in log.facts if isinstance(f.action, ApprovalRequested)] == []
        (ready,) = [f.action for f in log.facts if isinstance(f.action, ChatToolCallReadyAction)]
        assert ready.confirmed is ToolCallConfirmationReason.NOT_NEEDED
        assert ready.confirmation_title is None
        assert isinstance(ready.tool_input, str)
        assert json.loads(ready.tool_input) == {"limt": 3}
        (complete,) = completions(runtime)
        assert not complete.result.success
        assert result_text(complete) == (
            "invalid input for probe: the input: 'query' is a required property"
        )
        assert not ran.exists()
        assert "invalid input for probe" in outcome.result

    async def test_input_that_fits_runs_the_program(self) -> None:
        team = team_with(
            toml_argv(ECHO_INPUT) + "\n" + QUERY_SCHEMA,
            steps='{ tool = "probe", input = { query = "trio", limit = 2 } }',
        )
        runtime = new_runtime(team)
        with trio.fail_after(60):
            await runtime.run("go")
        (complete,) = completions(runtime)
        assert complete.result.success
        assert json.loads(result_text(complete)) == {"limit": 2, "query": "trio"}


# ─── under the daemon: a tool posts a view update to the callback it was given ───────────

#: A command tool as a user would write one: it reads its input and the runtime's variables,
#: posts a view update to the daemon, and prints what it did.
VIEW_TOOL = PROJECT_ROOT / "examples" / "view_tool.py"

PATCH = "diff --git a/x b/x\n+hello"


def viewer_team(script: Path) -> str:
    return f"""
[team]
name = "viewer"
coordinator = "lead"

[tools.show_diff]
command = {json.dumps([sys.executable, str(script)])}
description = "Show a diff to the user"
timeout = "1m"

[agents.lead]
role = "coordinator"
tools = ["show_diff"]

[[agents.lead.turns]]
steps = [
  {{ tool = "show_diff", input = {{ patch = {json.dumps(PATCH)} }} }},
  {{ say = "done: {{outcomes}}" }},
]
"""


TOOL_TOKEN = "tool-token-0123456789"
OPERATOR_TOKEN = "operator-token-0123456789"


class TestUnderTheDaemon:
    @pytest.mark.parametrize("tokens", [False, True], ids=["loopback", "tokens"])
    async def test_a_tool_posts_a_view_update_clients_see_and_its_result_is_recorded(
        self, tmp_path: Path, tokens: bool
    ) -> None:
        """The daemon gives its command tools the callback URL, the session id as group_id
        and (with tokens) the tool token: a tool's view update reaches the session's client,
        then the call's result (the tool's stdout) is recorded and sent."""
        config = ServeConfig(limits=Limits(shutdown_grace=0.5))
        if tokens:
            config = attrs.evolve(
                config,
                tokens=(
                    Token(name="alice", role=Role.OPERATOR, secret=OPERATOR_TOKEN),
                    Token(name="sandbox", role=Role.TOOL, secret=TOOL_TOKEN),
                ),
            )
        operator = OPERATOR_TOKEN if tokens else None
        async with (
            running_daemon(tmp_path, teams={"viewer": viewer_team(VIEW_TOOL)}, config=config) as d,
            connect(d, "team=viewer", token=operator) as client,
        ):
            init = await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "show me"})
            view = await client.until_type("view_update", channel="views")
            result = await client.until_type("tool_result")
            done = await client.until_type("result")
        assert view == {
            "channel": "views",
            "type": "view_update",
            "view_type": "diff",
            "content": {"patch": PATCH},
        }
        assert result["result"] == "diff view: 2 lines\n"
        assert done["summary"] == "done: diff view: 2 lines\n"
        facts = JournalReader(d.db).facts("ahp-session:/" + init["sessionId"])
        (complete,) = [f.action for f in facts if isinstance(f.action, ChatToolCallCompleteAction)]
        assert complete.result.success
        assert complete.tool_call_id == result["toolCallId"]
        assert result_text(complete) == "diff view: 2 lines\n"
        (viewed,) = [f.action for f in facts if isinstance(f.action, ViewUpdated)]
        assert (viewed.view_type, dict(viewed.content)) == ("diff", {"patch": PATCH})

    async def test_the_example_without_a_daemon_says_there_is_no_callback(self) -> None:
        """Under ``orchestrator run`` (no callback given, none in the environment) the
        example tool still answers: there is nobody to show the view to."""
        tool = CommandTool(name="show_diff", command=(sys.executable, str(VIEW_TOOL)))
        base = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
        env = command_environment(
            base, tool, session="ahp-session:/s", tool_call_id="c", callback=None
        )
        with trio.fail_after(60):
            result = await run_command(tool, {"patch": PATCH}, env)
        assert result == CommandResult(
            success=True, output="no callback to show the diff to (2 lines)\n"
        )
