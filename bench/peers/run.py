# mypy: disallow-subclassing-any=False
# (The peers are not installed in the project's venv, where mypy runs: their imports are
# ignored, so each fake model's base class is Any to mypy. Subclassing it is the point.)
"""The fan-out workload on this project and on its peers, side by side, in fresh processes.

The workload: a coordinator agent delegates N one-turn tasks to N worker agents (each its
own chat with its own history, one model round answering a short text) and collects all N.
Every system runs against its own zero-latency fake model that answers without a network
and suspends once per model round (``trio.lowlevel.checkpoint()`` / ``asyncio.sleep(0)``;
CrewAI, which calls its model from threads, ``time.sleep(0)``). The coordinator's first
round asks for N tool calls in one response, each worker's one round answers
``done: task I``, and the coordinator's second round reads the N outcomes: its fake model
answers ``collected N replies`` only if it saw every worker's reply, and the run checks that
answer (outside the timed region).

Systems (``--only`` takes these names):

- ``trio``: plain trio, a nursery of N tasks each sending one reply on a memory channel the
  coordinator drains (``bench/fanout.py``'s baseline). The floor every multiple is of.
- ``ours-memory``, ``ours-memory-reader``, ``ours-journal``, ``ours-journal-reader``: this
  project's :class:`TeamRuntime` on the model path (a fake model behind the ``Backend``
  contract), in memory or with the SQLite journal (durability ``power``: every fact fsynced
  before it counts), with no reader or with one reader (a bus subscriber folding the
  delegation graph and projecting Agent UI envelopes, as ``bench/fanout.py``'s does).
- ``ours-memory-traced``, ``ours-journal-traced``: the same with tracing on (the SDK's batch
  span processor and an exporter that encodes OTLP protobuf and drops it): what traces cost
  per worker. With tracing off (every other row) nothing of it runs.
- ``ours-postgres``, ``ours-postgres-reader``: the same with the journal on PostgreSQL
  (durability ``power``: each batch acknowledged once the server answered its ``COMMIT``,
  with ``synchronous_commit`` on), each run on a new database of one throwaway cluster the
  harness starts (``tests/support/postgres.py``, with ``fsync=on`` as a server in production; the
  project's own venv has what it needs: run these with ``.venv/bin/python``).
- ``ours-api-memory``, ``ours-api-journal``: the same team through the public API,
  ``orchestrator.run_team`` under ``trio.run``, in memory or with a SQLite journal (its
  default durability); ``ours-api-memory-asyncio``, ``ours-api-journal-asyncio``: the same
  with ``orchestrator.aio.run_team`` under ``asyncio.run`` (trio a guest of the asyncio
  loop), whose cost against the trio pair is what the asyncio way in adds;
  ``ours-api-memory-reader`` and its ``-asyncio`` twin: ``open_run`` (``aio.open_run``), its
  block reading every update, where each update crosses from trio to asyncio.
- ``langgraph``, ``langgraph-memory``: a ``StateGraph`` whose coordinator node calls a custom
  ``BaseChatModel``; its tool calls fan out with one ``Send`` per call to a worker node that
  runs its own chat (its own message list) and answers with a ``ToolMessage``; the
  coordinator node runs again over the N tool messages. ``langgraph-memory`` is the same graph
  compiled with the in-memory checkpointer (``InMemorySaver``).
- ``autogen``: AutoGen AgentChat, a coordinator ``AssistantAgent`` with a ``delegate`` tool
  (``reflect_on_tool_use``: a second model call reads the tool results); each call makes a
  worker ``AssistantAgent`` and runs it on its task. AgentChat runs one response's tool calls
  concurrently. The fake model is a custom ``ChatCompletionClient``.
- ``openai-agents``: OpenAI Agents SDK, a coordinator ``Agent`` whose tool is the worker agent
  (``worker.as_tool``: each call is its own ``Runner`` run with its own history); the SDK
  runs one response's function calls concurrently. The fake model is a custom ``Model``;
  tracing is off (it would export to OpenAI). Its cost per worker grows with N: each of the
  N concurrent runs of the one worker ``Agent`` checks its tools against every other run of
  that agent in flight (``agents/run_internal/agent_tool_configuration.py``, 0.24), which is
  the SDK's work in its documented idiom, so it is measured as it is.
- ``crewai``: CrewAI. Its coordinator cannot ask for N delegations in one model response:
  delegation is a tool its ReAct loop calls once per model round, so a coordinator that
  delegated N tasks would make N sequential model rounds (another workload). CrewAI's
  documented idiom for fan-out is N tasks with ``async_execution=True`` (each assigned to its
  own worker ``Agent``) and a final coordinator task whose ``context`` is those N tasks: the
  coordinator's one model round reads the N outputs, and the N worker rounds run in threads.
  That is what runs here: there is no coordinator round that plans the delegations (less work
  than the others do). The fake model is a custom ``BaseLLM`` answering in CrewAI's
  ``Final Answer:`` format; telemetry and tracing are off. CrewAI keeps a log: after each
  task it stores the task's output in a SQLite file in the user's data directory (for
  ``crew.replay``), loading every earlier output first, so its cost per worker grows with N.

Each (system, N, repetition) runs in a fresh subprocess, so peak RSS is its own. The child
imports everything first; the timed region is building the agents and running them; RSS
growth is the resident size after the run (with its result still alive, after a collection)
minus before it, per worker. A run past ``--budget`` seconds is killed and the system is shown
``(too slow: > X s)`` at that size and above.

The peers are not project dependencies: make their venv as the README says
(``bench/peers/requirements.txt``) and run this script with its Python. Nothing in the
project or its tests imports this file.
"""

# No ``from __future__ import annotations``: LangGraph reads its nodes' and state's
# annotations at run time, and they name this module's functions' locals.
import argparse
import asyncio
import datetime
import gc
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SIZES = (100, 1000, 5000)
REPEAT = 3
BUDGET_S = 120.0

#: What the coordinator asks, what a worker answers, and what the coordinator answers when it
#: saw every reply: the same words in every system.
PROMPT = "fan out"
REPLY = re.compile(r"done: task (\d+)")


def task_of(index: int) -> str:
    return f"task {index}"


def reply_to(task: str) -> str:
    return f"done: {task}"


def collected(replies: Sequence[str], n: int) -> str:
    """The coordinator's second round: ``collected N replies`` if ``replies`` hold all N."""
    seen = {int(match) for text in replies for match in REPLY.findall(text)}
    if seen == set(range(n)):
        return f"collected {n} replies"
    return f"missing {n - len(seen & set(range(n)))} of {n} replies"


def _rss_kb() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() // 1024


def _peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# --------------------------------------------------------------------------- plain trio


def prepare_trio(n: int) -> Callable[[], object]:
    import trio

    async def fan_out() -> list[str]:
        send, receive = trio.open_memory_channel[str](n)

        async def worker(index: int) -> None:
            await send.send(reply_to(task_of(index)))

        async with trio.open_nursery() as nursery:
            for index in range(n):
                nursery.start_soon(worker, index)
        send.close()
        return [reply async for reply in receive]

    return lambda: collected(trio.run(fan_out), n)


def answer_trio(kept: Any) -> str:
    return str(kept)


# --------------------------------------------------------------------------- this project


#: The throwaway PostgreSQL cluster's URL, for the children of ``ours-postgres*`` (set by
#: the harness when it started one).
POSTGRES_URL = "BENCH_POSTGRES_URL"


def new_postgres_database() -> str:
    """A new database on the harness's cluster (before the clock starts); its URL."""
    import uuid

    import psycopg

    server = os.environ[POSTGRES_URL]
    name = f"peers_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return server.rsplit("/", 1)[0] + "/" + name


def prepare_ours(
    n: int,
    *,
    journal: bool,
    reader: bool,
    postgres: bool = False,
    reader_does: Literal["drain", "graph", "graph+agentui"] = "graph+agentui",
    api: Literal["trio", "asyncio"] | None = None,
    traced: bool = False,
) -> Callable[[], object]:
    """This project's runtime on the model path; returns a runner and its answer. With
    ``postgres``, the journal is on a new PostgreSQL database instead of a SQLite file.
    ``reader_does`` is what the reader does with each fact (``bench/fanout_parts.py``
    measures each part): only take it off the bus, fold the delegation graph, or that and
    project the Agent UI envelopes (the reader every other figure means). With ``api``, the
    run goes through the public API instead: ``orchestrator.run_team`` under ``trio.run``, or
    ``orchestrator.aio.run_team`` under ``asyncio.run`` (trio as a guest of the asyncio
    loop), with the SQLite journal at its default durability when ``journal``. With
    ``traced``, tracing is on (docs/guides/traces.md): the SDK's batch span processor, its
    exporter encoding each batch as OTLP protobuf and dropping it (the network aside, all a
    real exporter does), flushed inside the timed region."""
    import logging
    from collections.abc import Mapping

    import trio

    from orchestrator.core import (
        Backend,
        DelegationGraph,
        ModelEvent,
        RoundContext,
        TextDelta,
        ToolCallRequest,
        UsageReport,
    )
    from orchestrator.journal import Durability, SqliteJournal, open_journal
    from orchestrator.protocols import AgentUiProjector
    from orchestrator.runtime import TeamRuntime, configure_logging, tune_gc
    from orchestrator.spec import AgentSpec, TeamSpec

    class FanOutModel:
        """A zero-latency model behind the ``Backend`` contract: the coordinator's first
        round asks for N ``delegate`` calls in one response, its second reads the outcomes;
        a worker's one round answers its task."""

        def __init__(self, agent: AgentSpec) -> None:
            self.agent = agent

        async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
            await trio.lowlevel.checkpoint()
            if self.agent.name == "worker":
                text = reply_to(context.task)
            elif context.round_index == 0:
                for index in range(n):
                    arguments: Mapping[str, Any] = {"agent": "worker", "task": task_of(index)}
                    yield ToolCallRequest(
                        tool_call_id=f"call-{index}", tool_name="delegate", arguments=arguments
                    )
                yield UsageReport(input_tokens=2, output_tokens=10 * n)
                return
            else:
                text = collected([o.output for o in context.outcomes if o.success], n)
            yield TextDelta(text=text)
            yield UsageReport(input_tokens=2 + len(context.history), output_tokens=4)

    def backends(agent: AgentSpec) -> Backend:
        return FanOutModel(agent)

    lead = AgentSpec(
        name="lead",
        role="coordinator",
        backend="bench",
        interactivity="full",
        tools=("delegate",),
        delegates_to=("worker",),
    )
    worker = AgentSpec(name="worker", role="worker", backend="bench")
    team = TeamSpec(
        name="bench", parallel_budget=n, coordinator="lead", agents=(lead, worker), file="bench"
    )
    # As the CLI does at start: logs to stderr, GC tuned.
    configure_logging(level=logging.WARNING)
    tune_gc()
    tmp = tempfile.mkdtemp(prefix="bench-peers-")
    database = new_postgres_database() if postgres else None
    if database is not None:  # its tables made before the clock (a server's are there)
        made = open_journal(database, durability=Durability.POWER)
        made.open()
        made.close()

    if api is not None:
        import orchestrator
        from orchestrator import aio

        path = Path(tmp) / "journal.db" if journal else None
        if reader:  # open_run, its block reading every update (a fact and its envelopes)

            async def read_trio() -> Any:
                async with orchestrator.open_run(team, PROMPT, backends=backends) as run:
                    async for _ in run.updates():
                        pass
                return await run.outcome()

            async def read_asyncio() -> Any:
                async with aio.open_run(team, PROMPT, backends=backends) as run:
                    async for _ in run.updates():
                        pass
                return await run.outcome()

            if api == "trio":
                return lambda: trio.run(read_trio)
            return lambda: asyncio.run(read_asyncio())
        if api == "trio":
            return lambda: trio.run(
                lambda: orchestrator.run_team(team, PROMPT, backends=backends, journal=path)
            )
        return lambda: asyncio.run(aio.run_team(team, PROMPT, backends=backends, journal=path))

    tracing = _bench_tracing() if traced else None

    async def run(factlog: Any) -> tuple[TeamRuntime, int]:
        runtime = TeamRuntime(team, backends=backends, factlog=factlog)
        if not reader:
            await runtime.run(PROMPT)
            return runtime, 0
        graph = DelegationGraph()
        # The reader follows the runtime's state (one fold per session): the projector
        # reads it rather than folding the facts again.
        subscription = runtime.bus.subscribe("bench", buffer_size=float("inf"), state=runtime.state)
        projector = AgentUiProjector(runtime.session, subscription.state)
        envelopes = 0

        async def fold_graph_and_envelopes() -> None:
            nonlocal envelopes
            if reader_does == "drain":
                async for _ in subscription:
                    pass
                return
            async for fact in subscription:
                graph.apply(fact)
                if reader_does == "graph+agentui":
                    envelopes += len(projector.feed(fact))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fold_graph_and_envelopes)
            await runtime.run(PROMPT)
            runtime.bus.close()  # the reader drains what it was sent, then stops
        if reader_does != "drain":
            assert len(graph.workers_of(runtime.state.coordinator_chat() or "")) == n
        return runtime, envelopes

    async def main() -> tuple[TeamRuntime, int]:
        if not journal:
            return await run(None)
        log = (
            open_journal(database, durability=Durability.POWER)
            if database is not None
            else SqliteJournal(Path(tmp) / "journal.db", durability=Durability.POWER)
        )
        async with trio.open_nursery() as services:
            await services.start(log.serve)
            kept = await run(log)
            services.cancel_scope.cancel()
        return kept

    if tracing is not None:

        def traced_run() -> tuple[TeamRuntime, int]:
            kept = trio.run(main)
            tracing.force_flush()  # every span encoded: part of the cost
            assert tracing.emitted == 3 * n + 4, tracing.emitted  # turns, calls, rounds
            return kept

        return traced_run
    return lambda: trio.run(main)


def _bench_tracing() -> Any:
    """Tracing on, installed for the process, as ``OTEL_TRACES_EXPORTER=otlp`` would; its
    exporter encodes and drops."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from orchestrator.runtime import Tracing, TracingSettings, install_tracing

    class Encoding(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            encode_spans(spans).SerializePartialToString()
            return SpanExportResult.SUCCESS

    tracing = Tracing(TracingSettings(enabled=True), processor=BatchSpanProcessor(Encoding()))
    install_tracing(tracing)
    return tracing


def answer_api(kept: Any) -> str:
    from orchestrator.core import RunStatus

    assert kept.status is RunStatus.COMPLETED, kept
    return str(kept.result)


def answer_ours(kept: Any) -> str:
    from orchestrator.core import RunStatus, turn_text

    runtime, envelopes = kept
    run = runtime.state.run
    assert run is not None, "the run never started"
    assert run.status is RunStatus.COMPLETED, run
    if envelopes:
        assert envelopes >= 9 * len(runtime.state.chats), envelopes  # the projection ran
    chat = runtime.state.chats[runtime.state.coordinator_chat()]
    return turn_text(chat.turns[-1]) if chat.turns else ""


# --------------------------------------------------------------------------- LangGraph


def prepare_langgraph(n: int, *, checkpointer: bool) -> Callable[[], object]:
    import operator
    from typing import Annotated, TypedDict

    from langchain_core.language_models.chat_models import (  # type: ignore[import-not-found]
        BaseChatModel,
    )
    from langchain_core.messages import (  # type: ignore[import-not-found]
        AIMessage,
        AnyMessage,
        HumanMessage,
        ToolMessage,
    )
    from langchain_core.outputs import (  # type: ignore[import-not-found]
        ChatGeneration,
        ChatResult,
    )
    from langgraph.checkpoint.memory import InMemorySaver  # type: ignore[import-not-found]
    from langgraph.graph import END, START, StateGraph  # type: ignore[import-not-found]
    from langgraph.types import Send  # type: ignore[import-not-found]

    class FanOutChatModel(BaseChatModel):
        """A zero-latency chat model: a coordinator's first call asks for N ``delegate``
        tool calls, its second reads the tool messages; a worker answers its task."""

        @property
        def _llm_type(self) -> str:
            return "bench-fan-out"

        def _generate(self, messages: list[Any], stop: Any = None, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark runs the graph asynchronously")

        async def _agenerate(self, messages: list[Any], stop: Any = None, **kwargs: Any) -> Any:
            await asyncio.sleep(0)
            last = messages[-1]
            if isinstance(last, ToolMessage):
                tool_messages = [m.content for m in messages if isinstance(m, ToolMessage)]
                message = AIMessage(content=collected(tool_messages, n))
            elif last.content == PROMPT:
                calls = [
                    {"name": "delegate", "args": {"task": task_of(i)}, "id": f"call-{i}"}
                    for i in range(n)
                ]
                message = AIMessage(content="", tool_calls=calls)
            else:
                message = AIMessage(content=reply_to(last.content))
            return ChatResult(generations=[ChatGeneration(message=message)])

    class Team(TypedDict):
        messages: Annotated[list[AnyMessage], operator.add]

    class Delegation(TypedDict):
        task: str
        tool_call_id: str

    model = FanOutChatModel()

    async def coordinator(state: Team) -> dict[str, list[Any]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    async def worker(delegation: Delegation) -> dict[str, list[Any]]:
        history = [HumanMessage(content=delegation["task"])]  # the worker's own chat
        answer = await model.ainvoke(history)
        reply = ToolMessage(content=answer.content, tool_call_id=delegation["tool_call_id"])
        return {"messages": [reply]}

    def fan_out(state: Team) -> Any:
        calls = state["messages"][-1].tool_calls
        if not calls:
            return END
        return [Send("worker", {"task": c["args"]["task"], "tool_call_id": c["id"]}) for c in calls]

    def run() -> object:
        builder = StateGraph(Team)
        builder.add_node("coordinator", coordinator)
        builder.add_node("worker", worker)
        builder.add_edge(START, "coordinator")
        builder.add_conditional_edges("coordinator", fan_out, ["worker", END])
        builder.add_edge("worker", "coordinator")
        graph = builder.compile(checkpointer=InMemorySaver() if checkpointer else None)
        config = {"configurable": {"thread_id": "bench"}}
        start = {"messages": [HumanMessage(content=PROMPT)]}
        return asyncio.run(graph.ainvoke(start, config))

    return run


def answer_langgraph(kept: Any) -> str:
    return str(kept["messages"][-1].content)


# --------------------------------------------------------------------------- AutoGen


def prepare_autogen(n: int) -> Callable[[], object]:
    from autogen_agentchat.agents import AssistantAgent  # type: ignore[import-not-found]
    from autogen_core import FunctionCall  # type: ignore[import-not-found]
    from autogen_core.models import (  # type: ignore[import-not-found]
        ChatCompletionClient,
        CreateResult,
        FunctionExecutionResultMessage,
        ModelFamily,
        ModelInfo,
        RequestUsage,
    )

    usage = RequestUsage(prompt_tokens=0, completion_tokens=0)

    class FanOutClient(ChatCompletionClient):
        """A zero-latency ``ChatCompletionClient``: the coordinator's first call asks for N
        ``delegate`` calls, its second (the reflection) reads the results; a worker answers
        its task."""

        async def create(self, messages: Sequence[Any], **kwargs: Any) -> Any:
            await asyncio.sleep(0)
            last = messages[-1]
            if isinstance(last, FunctionExecutionResultMessage):
                results = [
                    result.content
                    for message in messages
                    if isinstance(message, FunctionExecutionResultMessage)
                    for result in message.content
                ]
                content: Any = collected(results, n)
            elif last.content == PROMPT:
                content = [
                    FunctionCall(
                        id=f"call-{i}", name="delegate", arguments=json.dumps({"task": task_of(i)})
                    )
                    for i in range(n)
                ]
            else:
                content = reply_to(str(last.content))
            finish = "function_calls" if isinstance(content, list) else "stop"
            return CreateResult(finish_reason=finish, content=content, usage=usage, cached=False)

        def create_stream(self, messages: Sequence[Any], **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark does not stream")

        async def close(self) -> None:
            return None

        def actual_usage(self) -> Any:
            return usage

        def total_usage(self) -> Any:
            return usage

        def count_tokens(self, messages: Sequence[Any], **kwargs: Any) -> int:
            return 0

        def remaining_tokens(self, messages: Sequence[Any], **kwargs: Any) -> int:
            return 1_000_000

        @property
        def capabilities(self) -> Any:
            return {"vision": False, "function_calling": True, "json_output": False}

        @property
        def model_info(self) -> Any:
            return ModelInfo(
                vision=False,
                function_calling=True,
                json_output=False,
                family=ModelFamily.UNKNOWN,
                structured_output=False,
            )

    client = FanOutClient()

    async def delegate(task: str) -> str:
        """Give one task to a fresh worker agent and return its reply."""
        worker = AssistantAgent("worker", model_client=client)
        result = await worker.run(task=task)
        return str(result.messages[-1].content)

    async def fan_out() -> Any:
        coordinator = AssistantAgent(
            "coordinator", model_client=client, tools=[delegate], reflect_on_tool_use=True
        )
        return await coordinator.run(task=PROMPT)

    return lambda: asyncio.run(fan_out())


def answer_autogen(kept: Any) -> str:
    return str(kept.messages[-1].content)


# --------------------------------------------------------------------------- OpenAI Agents SDK


def prepare_openai_agents(n: int) -> Callable[[], object]:
    from agents import Agent, Runner, set_tracing_disabled  # type: ignore[import-not-found]
    from agents.items import ModelResponse  # type: ignore[import-not-found]
    from agents.models.interface import Model  # type: ignore[import-not-found]
    from agents.usage import Usage  # type: ignore[import-not-found]
    from openai.types.responses import (  # type: ignore[import-not-found]
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)  # the default exporter would send every span to OpenAI

    def said(text: str) -> Any:
        content = [ResponseOutputText(text=text, type="output_text", annotations=[])]
        return ResponseOutputMessage(
            id="msg", content=content, role="assistant", status="completed", type="message"
        )

    def field(item: Any, name: str) -> Any:
        return item.get(name) if isinstance(item, dict) else getattr(item, name, None)

    class FanOutModel(Model):
        """A zero-latency ``Model``: the coordinator's first response asks for N calls of
        the worker tool, its second reads their outputs; a worker answers its input."""

        def __init__(self, role: str) -> None:
            self.role = role

        async def get_response(
            self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
        ) -> Any:
            await asyncio.sleep(0)
            items = [{"role": "user", "content": input}] if isinstance(input, str) else input
            outputs = [
                str(field(i, "output")) for i in items if field(i, "type") == "function_call_output"
            ]
            if self.role == "worker":
                task = next(
                    str(field(i, "content")) for i in reversed(items) if field(i, "role") == "user"
                )
                output = [said(reply_to(task))]
            elif outputs:
                output = [said(collected(outputs, n))]
            else:
                output = [
                    ResponseFunctionToolCall(
                        arguments=json.dumps({"input": task_of(i)}),
                        call_id=f"call-{i}",
                        name="delegate",
                        type="function_call",
                        id=f"fc-{i}",
                        status="completed",
                    )
                    for i in range(n)
                ]
            return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark does not stream")

    worker = Agent(name="worker", instructions="Do the task.", model=FanOutModel("worker"))
    coordinator = Agent(
        name="coordinator",
        instructions="Delegate each task to a worker, then report.",
        model=FanOutModel("coordinator"),
        tools=[worker.as_tool(tool_name="delegate", tool_description="Give a worker a task.")],
    )
    return lambda: asyncio.run(Runner.run(coordinator, PROMPT))


def answer_openai_agents(kept: Any) -> str:
    return str(kept.final_output)


# --------------------------------------------------------------------------- CrewAI


def prepare_crewai(n: int) -> Callable[[], object]:
    from crewai import Agent, Crew, Process, Task  # type: ignore[import-not-found]
    from crewai.llms.base_llm import BaseLLM  # type: ignore[import-not-found]

    current_task = re.compile(r"Current Task: (task \d+)")
    context_marker = "This is the context you're working with:"

    class FanOutLLM(BaseLLM):
        """A zero-latency LLM answering in CrewAI's ReAct format: a worker its task, the
        coordinator (whose prompt carries the N workers' outputs as context) the count."""

        def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
            time.sleep(0)  # CrewAI calls its model from threads: let the others run
            prompt = messages if isinstance(messages, str) else messages[-1]["content"]
            if context_marker in prompt:
                answer = collected([prompt.split(context_marker, 1)[1]], n)
            else:
                found = current_task.search(prompt)
                answer = reply_to(found.group(1) if found else "?")
            return f"Thought: I now know the final answer\nFinal Answer: {answer}"

        def supports_function_calling(self) -> bool:
            return False

    def run() -> object:
        llm = FanOutLLM(model="bench-fan-out")
        workers = [
            Agent(role=f"worker {i}", goal="Do the task", backstory="A worker.", llm=llm)
            for i in range(n)
        ]
        tasks = [
            Task(
                description=task_of(i),
                expected_output="A short reply.",
                agent=workers[i],
                async_execution=True,
            )
            for i in range(n)
        ]
        coordinator = Agent(
            role="coordinator", goal="Collect the replies", backstory="The lead.", llm=llm
        )
        collect = Task(
            description="Collect the workers' replies.",
            expected_output="How many replies came back.",
            agent=coordinator,
            context=tasks,
        )
        crew = Crew(
            agents=[*workers, coordinator],
            tasks=[*tasks, collect],
            process=Process.sequential,
        )
        return crew.kickoff()

    return run


def answer_crewai(kept: Any) -> str:
    return str(kept.raw)


# --------------------------------------------------------------------------- the harness

#: name → (label in the table, prepare(n) → runner, answer(kept) → the coordinator's text).
SYSTEMS: dict[str, tuple[str, Callable[[int], Callable[[], object]], Callable[[Any], str]]] = {
    "trio": ("plain trio (nursery + channel)", prepare_trio, answer_trio),
    "ours-memory": (
        "this project, in memory, no reader",
        lambda n: prepare_ours(n, journal=False, reader=False),
        answer_ours,
    ),
    "ours-memory-reader": (
        "this project, in memory + one reader",
        lambda n: prepare_ours(n, journal=False, reader=True),
        answer_ours,
    ),
    "ours-memory-traced": (
        "this project, in memory, traced (batch exporter)",
        lambda n: prepare_ours(n, journal=False, reader=False, traced=True),
        answer_ours,
    ),
    "ours-journal": (
        "this project, SQLite journal, no reader",
        lambda n: prepare_ours(n, journal=True, reader=False),
        answer_ours,
    ),
    "ours-journal-reader": (
        "this project, SQLite journal + one reader",
        lambda n: prepare_ours(n, journal=True, reader=True),
        answer_ours,
    ),
    "ours-journal-traced": (
        "this project, SQLite journal, traced (batch exporter)",
        lambda n: prepare_ours(n, journal=True, reader=False, traced=True),
        answer_ours,
    ),
    "ours-postgres": (
        "this project, PostgreSQL journal, no reader",
        lambda n: prepare_ours(n, journal=True, reader=False, postgres=True),
        answer_ours,
    ),
    "ours-postgres-reader": (
        "this project, PostgreSQL journal + one reader",
        lambda n: prepare_ours(n, journal=True, reader=True, postgres=True),
        answer_ours,
    ),
    "ours-api-memory": (
        "this project, `run_team` under trio, in memory",
        lambda n: prepare_ours(n, journal=False, reader=False, api="trio"),
        answer_api,
    ),
    "ours-api-memory-asyncio": (
        "this project, `aio.run_team` under asyncio, in memory",
        lambda n: prepare_ours(n, journal=False, reader=False, api="asyncio"),
        answer_api,
    ),
    "ours-api-memory-reader": (
        "this project, `open_run` under trio, in memory, the block reading the updates",
        lambda n: prepare_ours(n, journal=False, reader=True, api="trio"),
        answer_api,
    ),
    "ours-api-memory-reader-asyncio": (
        "this project, `aio.open_run` under asyncio, in memory, the block reading the updates",
        lambda n: prepare_ours(n, journal=False, reader=True, api="asyncio"),
        answer_api,
    ),
    "ours-api-journal": (
        "this project, `run_team` under trio, SQLite journal",
        lambda n: prepare_ours(n, journal=True, reader=False, api="trio"),
        answer_api,
    ),
    "ours-api-journal-asyncio": (
        "this project, `aio.run_team` under asyncio, SQLite journal",
        lambda n: prepare_ours(n, journal=True, reader=False, api="asyncio"),
        answer_api,
    ),
    "langgraph": (
        "LangGraph (`Send` fan-out)",
        lambda n: prepare_langgraph(n, checkpointer=False),
        answer_langgraph,
    ),
    "langgraph-memory": (
        "LangGraph + `InMemorySaver`",
        lambda n: prepare_langgraph(n, checkpointer=True),
        answer_langgraph,
    ),
    "autogen": ("AutoGen AgentChat", prepare_autogen, answer_autogen),
    "openai-agents": ("OpenAI Agents SDK", prepare_openai_agents, answer_openai_agents),
    "crewai": ("CrewAI (async tasks + context)", prepare_crewai, answer_crewai),
}

#: The distribution whose version each system's label shows.
DISTRIBUTIONS = {
    "langgraph": "langgraph",
    "langgraph-memory": "langgraph",
    "autogen": "autogen-agentchat",
    "openai-agents": "openai-agents",
    "crewai": "crewai",
}


def measure(name: str, n: int) -> dict[str, float]:
    """One run of ``name`` at ``n`` workers in this process; its figures, answer checked."""
    _, prepare, answer = SYSTEMS[name]
    run = prepare(n)  # imports and definitions before the baseline RSS and the clock
    gc.collect()
    before = _rss_kb()
    started, cpu_started = time.perf_counter(), time.process_time()
    main_started = time.thread_time()
    kept = run()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    main = time.thread_time() - main_started
    gc.collect()
    after = _rss_kb()  # with the run's result still alive
    said = answer(kept)
    if said != f"collected {n} replies":
        raise SystemExit(f"{name} at N = {n}: the coordinator answered {said!r}")
    return {
        "wall_s": wall,
        "per_worker_us": wall / n * 1e6,
        "cpu_per_worker_us": cpu / n * 1e6,  # every thread's: the journal's writer too
        "main_cpu_per_worker_us": main / n * 1e6,  # the thread trio runs in
        "peak_rss_mb": _peak_kb() / 1024,
        "rss_growth_kb_per_worker": max(after - before, 0) / n,
    }


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def version_of(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    distribution = DISTRIBUTIONS.get(name)
    if distribution is None:
        return ""
    try:
        return f" {version(distribution)}"
    except PackageNotFoundError:
        return " (not installed)"


def child_environment() -> dict[str, str]:
    """The children's environment: no telemetry or tracing leaves the machine."""
    return {
        **os.environ,
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "ANONYMIZED_TELEMETRY": "false",
        "LANGSMITH_TRACING": "false",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "PYTHONWARNINGS": "ignore",
    }


def run_one(name: str, n: int, budget: float) -> dict[str, float] | None:
    """``name`` at ``n`` in a fresh process; None past ``budget`` seconds."""
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--one", name, str(n)],
            capture_output=True,
            text=True,
            timeout=budget,
            stdin=subprocess.DEVNULL,
            env=child_environment(),
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise SystemExit(f"{name} at N = {n} failed:\n{done.stderr[-3000:]}")
    # The figures are the child's last JSON line: a framework may print after it (CrewAI's
    # first run in a fresh data directory prints a notice at exit).
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            figures: dict[str, float] = json.loads(line)
            return figures
    raise SystemExit(f"{name} at N = {n} printed no figures:\n{done.stdout[-3000:]}")


def thousands(value: float) -> str:
    return f"{value:,.0f}"


def table(
    names: Sequence[str],
    sizes: Sequence[int],
    runs: dict[tuple[str, int], list[dict[str, float]]],
    too_slow: dict[str, int],
    budget: float,
) -> list[str]:
    """The Markdown table: medians, multiples of plain trio at each N, RSS at the largest N."""

    def median(name: str, n: int, key: str) -> float | None:
        kept = runs.get((name, n))
        return statistics.median(r[key] for r in kept) if kept else None

    largest = sizes[-1]
    header = (
        ["system"]
        + [f"µs/worker N = {n:,}" for n in sizes]
        + [f"x trio N = {n:,}" for n in sizes]
        + [f"peak RSS MB (N = {largest:,})", f"RSS growth KB/worker (N = {largest:,})"]
        + ["load (1 min, min-max)"]
    )
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    for name in names:
        cells = [SYSTEMS[name][0] + version_of(name)]
        slow = f"(too slow: > {budget:g} s)"
        for n in sizes:
            us = median(name, n, "per_worker_us")
            cells.append(
                thousands(us)
                if us is not None
                else slow
                if n >= too_slow.get(name, sys.maxsize)
                else ""
            )
        for n in sizes:
            us = median(name, n, "per_worker_us")
            floor = median("trio", n, "per_worker_us")
            cells.append(f"{us / floor:,.1f}" if us is not None and floor else "")
        done = [n for n in sizes if (name, n) in runs]
        if done:
            at = "" if done[-1] == largest else f" (N = {done[-1]:,})"
            peak = median(name, done[-1], "peak_rss_mb") or 0.0
            growth = median(name, done[-1], "rss_growth_kb_per_worker") or 0.0
            cells += [f"{peak:,.0f}{at}", f"{growth:,.1f}{at}"]
        else:
            cells += ["", ""]
        loads = [r.get("load", 0.0) for n in sizes for r in runs.get((name, n), [])]
        cells.append(f"{min(loads):.1f}-{max(loads):.1f}" if loads else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str]) -> None:
    if len(argv) == 3 and argv[0] == "--one":
        print(json.dumps(measure(argv[1], int(argv[2]))))
        return
    parser = argparse.ArgumentParser(
        description="The fan-out workload on this project and its peers (see the docstring)."
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), metavar="N")
    parser.add_argument("--repeat", type=int, default=REPEAT, help="runs per size (median)")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=list(SYSTEMS),
        metavar="NAME",
        help=f"run only these systems (trio always runs): {', '.join(SYSTEMS)}",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=BUDGET_S,
        help="seconds one run may take before it is called too slow",
    )
    args = parser.parse_args(argv)
    sizes = sorted(set(args.sizes))
    names = [
        "trio",
        *[name for name in SYSTEMS if name != "trio" and (args.only is None or name in args.only)],
    ]
    server = start_postgres_for(names)
    try:
        runs, too_slow, started, load_before, load_after = run_all(names, sizes, args)
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(server.directory, ignore_errors=True)
    print(
        f"date: {started:%Y-%m-%d %H:%M} UTC; Python {platform.python_version()}; "
        f"CPU: {cpu_model()}, {os.cpu_count()} cores; load average "
        f"{load_before[0]:.2f} at start, {load_after[0]:.2f} at end"
        + ("; PostgreSQL: a throwaway cluster, fsync on" if server is not None else "")
    )
    print(
        f"median of {args.repeat} fresh processes per cell; µs per worker; "
        "x trio: the multiple of plain trio's time at that N in this run"
    )
    print()
    print("\n".join(table(names, sizes, runs, too_slow, args.budget)))


def start_postgres_for(names: Sequence[str]) -> Any:
    """A throwaway cluster (fsync on) when a ``*-postgres*`` system runs; its URL is handed
    to the children in the environment."""
    if not any("postgres" in name for name in names):
        return None
    try:
        from tests.support.postgres import find_postgres_binaries, start_postgres
    except ImportError as missing:  # the peers' venv has no pytest
        raise SystemExit(
            f"the PostgreSQL variants need the project's dev venv ({missing}): "
            ".venv/bin/python bench/peers/run.py --only ours-postgres ..."
        ) from None
    binaries = find_postgres_binaries()
    if binaries is None:
        raise SystemExit("no PostgreSQL binaries (apt-get install postgresql)")
    server = start_postgres(binaries, fsync=True)
    os.environ[POSTGRES_URL] = server.url()
    return server


def run_all(
    names: Sequence[str], sizes: Sequence[int], args: argparse.Namespace
) -> tuple[
    dict[tuple[str, int], list[dict[str, float]]],
    dict[str, int],
    datetime.datetime,
    tuple[float, float, float],
    tuple[float, float, float],
]:
    """Every (size, repetition, system) in a fresh process, systems alternating."""
    load_before = os.getloadavg()
    started = datetime.datetime.now(datetime.UTC)
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    too_slow: dict[str, int] = {}
    for n in sizes:
        for repetition in range(args.repeat):
            for name in names:
                if name in too_slow:
                    continue
                print(
                    f"{name} N={n} run {repetition + 1}/{args.repeat}", file=sys.stderr, flush=True
                )
                figures = run_one(name, n, args.budget)
                if figures is None:
                    too_slow[name] = n
                    runs.pop((name, n), None)
                else:
                    figures["load"] = os.getloadavg()[0]  # the shared machine's, after it
                    runs.setdefault((name, n), []).append(figures)
    return runs, too_slow, started, load_before, os.getloadavg()


if __name__ == "__main__":
    main(sys.argv[1:])
