"""The checks of a scripted agent's turns (``agents.<name>.turns``) and their steps.

A scripted agent (``backend = "scripted"``) plays its turns in order; each turn is a list of
steps, and each step is one action (``say``, ``tool``, ``delegate``, ``ask``...) with that
action's own keys. The steps are checked here against their agent: the tools it may call and
the agents it may delegate to. The scripted backend therefore never sees a malformed step: it
pattern-matches the step classes of :mod:`._script` and trusts every field.

Pure: no trio and no IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, get_args

from orchestrator.base import compact_dumps

from ._model import TEAM_TOOLS, AgentSpec
from ._parse_tools import _ToolChecks
from ._review import EVIDENCE_KINDS, REVIEW_MODES, VERDICTS
from ._script import (
    DEFAULT_CHUNKS,
    AskStep,
    DelegateStep,
    Delegation,
    FailStep,
    HandoffStep,
    QuestionKind,
    SayStep,
    ScriptedTurn,
    SleepStep,
    Step,
    ThinkStep,
    ToolStep,
    UsageStep,
)
from ._wording import _did_you_mean, _join, _one_of

__all__: list[str] = []

_QUESTION_KINDS: Final[dict[str, QuestionKind]] = {v: v for v in get_args(QuestionKind)}
_SELECT_KINDS: Final = frozenset({"single-select", "multi-select"})
_TURN_KEYS: Final = ("steps", "retry")
_DELEGATION_KEYS: Final = ("agent", "task", "review")
_DELEGATION_REQUIRED: Final = ("agent", "task")
_VERDICT_KEYS: Final = ("verdict", "summary", "fixes", "evidence")
_EVIDENCE_KEYS: Final = ("kind", "text", "ref")

#: Each step has exactly one action key; these are the keys each action allows.
_STEP_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "say": ("say", "chunks"),
    "think": ("think", "chunks"),
    "tool": ("tool", "input"),
    "delegate": ("delegate",),
    "handoff": ("handoff", "reason", "resume"),
    "ask": ("ask", "kind", "options"),
    "fail": ("fail",),
    "sleep": ("sleep",),
    "usage": ("usage",),
    # A reviewer's answer: a say step of the verdict's JSON (see spec/_review.py).
    "verdict": _VERDICT_KEYS,
    # The coordinator asks for a finished delegation's review: a call of the review tool.
    "review": ("review",),
}
_STEP_COMMON_KEYS: Final = ("when_task_contains",)
_ALL_STEP_KEYS: Final = (
    tuple(dict.fromkeys(k for keys in _STEP_KEYS.values() for k in keys)) + _STEP_COMMON_KEYS
)


class _ScriptChecks(_ToolChecks):
    """The checks of scripted turns and steps, and of the references they make to agents."""

    def __init__(self, file: str) -> None:
        super().__init__(file)
        # Every agent the file declares, known before any agent is read: a reference to an
        # agent declared further down is fine.
        self.agent_names: tuple[str, ...] = ()

    def agent_ref(self, value: object, path: str) -> str:
        name = self.string(value, path)
        if name not in self.agent_names:
            raise self.error(
                path,
                f"unknown agent {name!r}{_did_you_mean(name, self.agent_names)}; "
                f"declared agents: {', '.join(self.agent_names)}",
            )
        return name

    def turn(self, agent: AgentSpec, value: object, path: str) -> ScriptedTurn:
        data = self.table(value, path, "a turn table with steps = [...]")
        self.check_keys(data, path, _TURN_KEYS, required=("steps",))
        steps_path = f"{path}.steps"
        steps = self.array(data["steps"], steps_path)
        if not steps:
            raise self.error(steps_path, 'a turn needs at least one step, e.g. { say = "..." }')
        return ScriptedTurn(
            steps=tuple(
                self.step(agent, step, f"{steps_path}[{index}]") for index, step in enumerate(steps)
            ),
            retry=self.retry_steps(agent, data["retry"], f"{path}.retry")
            if "retry" in data
            else (),
        )

    def retry_steps(self, agent: AgentSpec, value: object, path: str) -> tuple[Step, ...]:
        """A turn's ``retry``: the answer given again when the first did not fit the agent's
        ``output_schema``. It answers in text, so a step that calls a tool has no place in it."""
        if agent.output_schema is None:
            raise self.error(
                path,
                "retry is played when an answer does not fit the agent's output_schema; "
                f"[agents.{agent.name}] has none (add output_schema or remove retry)",
            )
        entries = self.array(value, path)
        if not entries:
            raise self.error(path, 'give at least one step, e.g. { say = "{...}" }')
        steps: list[Step] = []
        for index, entry in enumerate(entries):
            step = self.step(agent, entry, f"{path}[{index}]")
            if step.ends_round:
                raise self.error(
                    f"{path}[{index}]",
                    "a retry answers again in text: use say, think, sleep, usage or fail "
                    "steps, not a step that calls a tool",
                )
            steps.append(step)
        return tuple(steps)

    def step(self, agent: AgentSpec, value: object, path: str) -> Step:
        data = self.table(value, path, 'a step table such as { say = "..." }')
        actions = [key for key in data if key in _STEP_KEYS]
        if not actions:
            for key in data:
                if key not in _ALL_STEP_KEYS:
                    raise self.error(
                        _join(path, key),
                        f"unknown step key {key!r}{_did_you_mean(key, _ALL_STEP_KEYS)}; "
                        f"a step has one of: {', '.join(_STEP_KEYS)}",
                    )
            raise self.error(path, f"the step has no action; add one of: {', '.join(_STEP_KEYS)}")
        if len(actions) > 1:
            raise self.error(
                path,
                f"the step has several actions ({', '.join(actions)}); write one step per action",
            )
        action = actions[0]
        allowed = _STEP_KEYS[action] + _STEP_COMMON_KEYS
        for key in data:
            if key not in allowed:
                owners = [a for a, keys in _STEP_KEYS.items() if key in keys]
                hint = (
                    f" (it belongs to a {owners[0]} step)"
                    if owners
                    else _did_you_mean(key, allowed)
                )
                raise self.error(
                    _join(path, key),
                    f"unknown key {key!r} for a {action} step{hint}; allowed: {', '.join(allowed)}",
                )
        when = None
        if "when_task_contains" in data:
            when = self.string(data["when_task_contains"], f"{path}.when_task_contains")
        action_path = _join(path, action)
        raw = data[action]

        if action in {"say", "think"}:
            text = self.string(raw, action_path)
            chunks = DEFAULT_CHUNKS
            if "chunks" in data:
                chunks = self.integer(data["chunks"], f"{path}.chunks", minimum=1)
            if action == "say":
                return SayStep(text=text, chunks=chunks, when_task_contains=when)
            return ThinkStep(text=text, chunks=chunks, when_task_contains=when)
        if action == "tool":
            tool = self.tool_name(raw, action_path, wildcard_ok=False)
            if tool in TEAM_TOOLS:
                raise self.error(
                    action_path,
                    f"{tool!r} is a team tool: use a {{ {tool} = ... }} step instead",
                )
            self.require_tool(agent, tool, action_path)
            tool_input: dict[str, Any] = {}
            if "input" in data:
                input_path = f"{path}.input"
                tool_input = self.json_value(self.table(data["input"], input_path), input_path)
            return ToolStep(tool=tool, input=tool_input, when_task_contains=when)
        if action == "delegate":
            self.require_tool(agent, "delegate", action_path)
            entries = self.array(raw, action_path)
            if not entries:
                raise self.error(
                    action_path, 'delegate at least one task: [{ agent = "...", task = "..." }]'
                )
            delegations = []
            for index, entry in enumerate(entries):
                entry_path = f"{action_path}[{index}]"
                entry_data = self.table(entry, entry_path, '{ agent = "...", task = "..." }')
                self.check_keys(
                    entry_data, entry_path, _DELEGATION_KEYS, required=_DELEGATION_REQUIRED
                )
                target = self.delegate_target(agent, entry_data["agent"], f"{entry_path}.agent")
                task = self.string(entry_data["task"], f"{entry_path}.task")
                review = None
                if "review" in entry_data:
                    review = self.choice(
                        entry_data["review"],
                        f"{entry_path}.review",
                        {m: m for m in REVIEW_MODES},
                        "review mode",
                    )
                delegations.append(Delegation(agent=target, task=task, review=review))
            return DelegateStep(delegations=tuple(delegations), when_task_contains=when)
        if action == "handoff":
            self.require_tool(agent, "handoff", action_path)
            target = self.delegate_target(agent, raw, action_path)
            if "reason" not in data:
                raise self.error(
                    f"{path}.reason", "missing required key 'reason' (why the work moves)"
                )
            reason = self.string(data["reason"], f"{path}.reason")
            resume = agent.name
            if "resume" in data:
                resume = self.agent_ref(data["resume"], f"{path}.resume")
            return HandoffStep(agent=target, reason=reason, resume=resume, when_task_contains=when)
        if action == "ask":
            self.require_tool(agent, "ask", action_path)
            question = self.string(raw, action_path)
            kind: QuestionKind = "text"
            if "kind" in data:
                kind = self.choice(data["kind"], f"{path}.kind", _QUESTION_KINDS, "question kind")
            options: tuple[str, ...] = ()
            if kind in _SELECT_KINDS:
                if "options" not in data:
                    raise self.error(f"{path}.options", f"a {kind} question needs options = [...]")
                options_path = f"{path}.options"
                seen: list[str] = []
                for index, option in enumerate(self.array(data["options"], options_path)):
                    text = self.string(option, f"{options_path}[{index}]")
                    if text in seen:
                        raise self.error(f"{options_path}[{index}]", f"{text!r} is listed twice")
                    seen.append(text)
                if not seen:
                    raise self.error(options_path, f"a {kind} question needs at least one option")
                options = tuple(seen)
            elif "options" in data:
                raise self.error(
                    f"{path}.options",
                    f"options only apply to single-select and multi-select, not {kind}",
                )
            return AskStep(question=question, kind=kind, options=options, when_task_contains=when)
        if action == "verdict":
            return self.verdict_step(agent, data, path, when)
        if action == "review":
            self.require_tool(agent, "review", action_path)
            task = self.string(raw, action_path)
            return ToolStep(tool="review", input={"task": task}, when_task_contains=when)
        if action == "fail":
            return FailStep(message=self.string(raw, action_path), when_task_contains=when)
        if action == "sleep":
            seconds = self.number(raw, action_path, positive=False)
            return SleepStep(seconds=seconds, when_task_contains=when)
        # usage: the only action left
        pair = self.array(raw, action_path)
        if len(pair) != 2:
            raise self.error(
                action_path, f"expected [input_tokens, output_tokens], got {len(pair)} items"
            )
        input_tokens = self.integer(pair[0], f"{action_path}[0]", minimum=0)
        output_tokens = self.integer(pair[1], f"{action_path}[1]", minimum=0)
        return UsageStep(
            input_tokens=input_tokens, output_tokens=output_tokens, when_task_contains=when
        )

    def verdict_step(
        self, agent: AgentSpec, data: Mapping[str, Any], path: str, when: str | None
    ) -> SayStep:
        """A reviewer's ``{ verdict = "...", summary, fixes = [...], evidence = [...] }``: the
        answer text of that verdict (a say step of its JSON)."""
        if not agent.reviews:
            raise self.error(
                f"{path}.verdict",
                f"a verdict step answers a review; [agents.{agent.name}] reviews nobody (add "
                'reviews = ["<worker>"], or use a say step)',
            )
        verdict = self.choice(
            data["verdict"], f"{path}.verdict", {v: v for v in VERDICTS}, "verdict"
        )
        answer: dict[str, Any] = {"verdict": verdict}
        if "summary" in data:
            answer["summary"] = self.string(data["summary"], f"{path}.summary", empty_ok=True)
        if "fixes" in data:
            if verdict == "passed":
                raise self.error(f"{path}.fixes", "a passed verdict asks for no fixes; remove them")
            fixes_path = f"{path}.fixes"
            answer["fixes"] = [
                self.string(fix, f"{fixes_path}[{index}]")
                for index, fix in enumerate(self.array(data["fixes"], fixes_path))
            ]
        if "evidence" in data:
            evidence_path = f"{path}.evidence"
            items = []
            for index, entry in enumerate(self.array(data["evidence"], evidence_path)):
                item_path = f"{evidence_path}[{index}]"
                item = self.table(entry, item_path, '{ kind = "quote", text = "..." }')
                self.check_keys(item, item_path, _EVIDENCE_KEYS, required=("kind", "text"))
                kind = self.choice(
                    item["kind"], f"{item_path}.kind", {k: k for k in EVIDENCE_KINDS}, "kind"
                )
                read = {"kind": kind, "text": self.string(item["text"], f"{item_path}.text")}
                if "ref" in item:
                    read["ref"] = self.string(item["ref"], f"{item_path}.ref")
                items.append(read)
            answer["evidence"] = items
        return SayStep(text=compact_dumps(answer), when_task_contains=when)

    def require_tool(self, agent: AgentSpec, tool: str, path: str) -> None:
        if not agent.may_call(tool):
            raise self.error(
                path,
                f"agent {agent.name!r} calls {tool!r} but it is not in its tools "
                f"({_one_of(agent.tools) or 'none'}); add it to agents.{agent.name}.tools",
            )

    def delegate_target(self, agent: AgentSpec, value: object, path: str) -> str:
        target = self.agent_ref(value, path)
        if target not in agent.delegates_to:
            raise self.error(
                path,
                f"{target!r} is not in agents.{agent.name}.delegates_to "
                f"({_one_of(agent.delegates_to) or 'empty'}); add it there",
            )
        return target
