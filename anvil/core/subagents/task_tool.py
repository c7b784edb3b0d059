"""The ``task`` tool: run a sub-agent on the same engine and hand its report back to the model.

A sub-agent is a new :class:`~anvil.core.loop.agent.Agent` with the parent's model, a fresh history (its own
system prompt and the prompt it was given, nothing else), the tools its type allows
(:mod:`anvil.core.subagents.agent_types`) and the *same* approval policy object, so rules the person already
granted apply and an "always allow" given to the child holds for the parent too.

Decisions worth knowing:

- No session file of its own: every child event reaches the parent as a :class:`SubagentEvent` through
  ``ctx.emit``, and the parent agent records emitted events in its session, so the child's run is in the
  parent's JSONL as nested records. The child's text deltas are not forwarded (its complete messages are),
  which keeps the session file and the front ends' work small.
- Its own :class:`ToolContext`: its own todo list, shell (a ``cd`` in the child does not move the
  parent) and reads (it must read a file before changing it, like any model that has not seen it); shared
  root, settings, checkpoints (undo covers its edits) and the per-file change locks. What it leaves
  running in the background is stopped when it finishes.
- Approvals: the child's :class:`ApprovalRequested` goes to the person through the parent's ``ctx.ask``,
  titled "Sub-agent (<description>): ..."; without ``ctx.ask`` (headless) it is denied with a message,
  as headless denies the parent's own requests.
- One at a time: a second ``task`` call while one runs gets an error saying so (the loop runs tool calls
  in order, so this only happens if a front end runs two agents on one tool).
- Interrupts: the parent cancels the tool's coroutine; the child is interrupted through its own
  ``interrupt()`` (which stops its stream, tool or approval cleanly) and given a short grace to finish.
- Cost: the child's usage comes back in ``ToolResult.data`` (its token counts, cache reads and writes included,
  ``cost``, None when unknown, and ``unpriced_calls``) and, if given, through ``on_usage`` - which is also
  called when the run is interrupted, when no result is returned at all. Add one of the two to the parent's
  totals, not both.

Construction (runtime)::

    types, warnings = load_agent_types(root, settings.agents)
    registry.add(TaskTool(lambda: agent.model, registry, policy, types=types, on_usage=add_to_totals))

``registry`` is the parent's live registry: the child's tools are chosen from it at each call, so MCP
tools added later are included.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from anvil.core.events import (
    ApprovalDecision,
    ApprovalRequested,
    AssistantMessage,
    Event,
    TextDelta,
    ToolResultEvent,
    TurnEnded,
    headless_denial,
)
from anvil.core.model.protocol import Model
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.subagents.agent_types import BUILTIN_TYPES, TASK_TOOL_NAME, WORKFLOW_TYPES, AgentType, select_tools
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolRegistry, ToolResult
from anvil.core.tools.errors import ToolError

#: What a sub-agent is told on top of its type's prompt.
PREAMBLE = """\
You are a sub-agent of anvil, a coding assistant, working in the project at {root}. Another agent gave
you the task below and sees only your final message, not your tool calls: make that message a complete,
self-contained report. Paths are relative to the project root.

"""


@dataclass(frozen=True)
class SubagentEvent(Event):
    """An event of a running sub-agent, wrapped so front ends can show it nested under the task call."""

    type: ClassVar[str] = "subagent_event"
    agent_type: str
    description: str
    inner: Event
    #: the parent's ``task`` call this sub-agent runs for, so front ends nest its steps under that call
    call_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "agent_type": self.agent_type, "description": self.description,
                "call_id": self.call_id, "inner": self.inner.to_dict()}


class TaskArgs(ToolArgs):
    description: str = Field(description="A short label (3-6 words) shown to the user, e.g. 'Find the "
                             "config loader'.")
    prompt: str = Field(description="The whole task for the sub-agent. It sees nothing of this conversation, "
                        "so include every detail it needs and say what its report should contain.")
    agent_type: str = Field("general", description="The kind of sub-agent to run (see the tool description).")


@dataclass
class _Outcome:
    """What the driver learned from the child's events."""

    report: str = ""
    reason: str = "interrupted"
    message: str = ""
    iterations: int = 0
    tool_calls: int = 0
    changed: bool = False
    relays: set[asyncio.Task[None]] = field(default_factory=set)


class TaskTool(Tool):
    name = TASK_TOOL_NAME
    description = ("Run a sub-agent with a fresh context on a self-contained task and get its report back. "
                   "Use it for broad searches or side tasks whose details would crowd this conversation; "
                   "give it a complete prompt, since it sees nothing else. One runs at a time.")
    Args = TaskArgs
    kind = "other"
    main_agent_only = True  # sub-agents cannot start sub-agents

    @property
    def mutates(self) -> bool:  # type: ignore[override]
        # A "general" sub-agent can change files, so the task tool mutates - except in plan mode, where the
        # child obeys the same plan-mode policy and so cannot change anything either: the policy then lets
        # the model explore through sub-agents, as it may read by itself.
        return self.policy.mode != "plan"

    def __init__(self, model: Model | Callable[[], Model], parent_tools: ToolRegistry,
                 policy: ApprovalPolicy, *, types: dict[str, AgentType] | None = None,
                 max_iterations: int = 30, compact_threshold: float | bool = 0.85,
                 on_usage: Callable[[dict[str, Any]], None] | None = None, interrupt_grace: float = 5.0) -> None:
        self._model = model
        self.parent_tools = parent_tools
        self.policy = policy
        self.types = dict(types if types is not None else BUILTIN_TYPES)
        self.max_iterations = max_iterations
        self.compact_threshold = compact_threshold
        self.on_usage = on_usage
        self.interrupt_grace = interrupt_grace
        self._lock = asyncio.Lock()
        self._runs = 0

    @property
    def model(self) -> Model:
        return self._model() if callable(self._model) else self._model

    def phase(self, args: TaskArgs) -> str:
        label = " ".join(args.description.split())
        return f"Sub-agent: {label if len(label) <= 60 else label[:59] + '…'}"

    def schema(self) -> dict[str, Any]:
        schema = super().schema()
        kinds = "\n".join(f"- {t.name}: {t.description}" for t in self.types.values())
        schema["function"]["description"] = f"{self.description}\n\nAgent types (agent_type):\n{kinds}"
        schema["function"]["parameters"]["properties"]["agent_type"]["enum"] = list(self.types)
        return schema

    async def run(self, args: TaskArgs, ctx: ToolContext) -> ToolResult:
        agent_type = self.types.get(args.agent_type)
        if agent_type is None:
            raise ToolError(f"Unknown agent_type '{args.agent_type}'. Use one of: {', '.join(self.types)}.")
        if not args.prompt.strip():
            raise ToolError("The prompt is empty. Give the sub-agent the whole task and what to report.")
        if self._lock.locked():
            raise ToolError("Another sub-agent is still running; they run one at a time. Wait for its report, "
                            "then call task again.")
        async with self._lock:
            return await self._run(agent_type, args, ctx)

    async def run_agent(self, agent_type: str, prompt: str, ctx: ToolContext, tools: Sequence[Tool] = ()) -> ToolResult:
        """A sub-agent a workflow runs itself (:class:`~anvil.core.workflows.base.SubagentRunner`): one of the task
        tool's types or of :data:`WORKFLOW_TYPES`, with ``tools`` of the workflow's own besides the ones its type
        allows; its events reach the front ends under the calling tool, like the task tool's."""
        chosen = self.types.get(agent_type) or WORKFLOW_TYPES.get(agent_type)
        if chosen is None:
            raise ToolError(f"Unknown agent_type '{agent_type}'.")
        args = TaskArgs(description=f"{agent_type} sub-agent", prompt=prompt, agent_type=agent_type)
        async with self._lock:
            return await self._run(chosen, args, ctx, tools)

    async def _run(self, agent_type: AgentType, args: TaskArgs, ctx: ToolContext,
                   extra: Sequence[Tool] = ()) -> ToolResult:
        from anvil.core.loop.agent import Agent  # the agent imports tools; importing it here avoids a cycle

        self._runs += 1
        # shared with the parent: the per-file change locks, and the policy the plan-mode tools read
        shared = {key: ctx.state[key] for key in ("policy",) if key in ctx.state}
        shared["file_change_locks"] = ctx.state.setdefault("file_change_locks", {})
        child_ctx = ToolContext(root=ctx.root, data_dir=ctx.data_dir, session_id=f"{ctx.session_id}.sub{self._runs}",
                                settings=ctx.settings, checkpoints=ctx.checkpoints.for_subagent(), ask=ctx.ask,
                                state=shared, secrets=ctx.secrets,
                                sandbox=ctx.sandbox)  # a sub-agent's commands are the model's too
        tools = select_tools(self.parent_tools, agent_type)
        for tool in extra:
            tools.add(tool)
        child = Agent(self.model, tools, child_ctx,
                      system_prompt=PREAMBLE.format(root=ctx.root) + agent_type.system_prompt, policy=self.policy,
                      session=None, max_iterations=agent_type.max_iterations or self.max_iterations,
                      compact_threshold=self.compact_threshold)
        outcome = _Outcome()
        driver = asyncio.create_task(self._drive(child, args, agent_type, ctx, outcome))
        try:
            await asyncio.shield(driver)  # shielded: an interrupt must stop the child, not tear it apart
        except asyncio.CancelledError:
            child.interrupt()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(driver), self.interrupt_grace)
            if not driver.done():  # it did not stop in time: cut it off
                driver.cancel()
                with contextlib.suppress(BaseException):
                    await driver
            raise
        finally:
            for relay in list(outcome.relays):  # a request still open when the child ended: nobody waits for it
                relay.cancel()
            await child_ctx.close()
            usage = child.usage.summary()
            if self.on_usage is not None:
                self.on_usage(dict(usage))
        return self._result(agent_type, outcome, usage)

    async def _drive(self, child: Any, args: TaskArgs, agent_type: AgentType, ctx: ToolContext,
                     outcome: _Outcome) -> None:
        """Run the child's turn, forwarding its events and relaying its approval requests."""
        parent_call = str(ctx.state.get("call_id", ""))  # the task call running now; its id is set before run
        async for event in child.run_turn(args.prompt):
            match event:
                case ApprovalRequested():
                    # answered in its own task: the child waits on the future, and an interrupt must still reach it
                    relay = asyncio.create_task(self._relay(event, args.description, ctx))
                    outcome.relays.add(relay)
                    relay.add_done_callback(outcome.relays.discard)
                    continue
                case TextDelta():
                    continue
                case AssistantMessage(text=text) if text.strip():
                    outcome.report = text.strip()
                case ToolResultEvent(ok=True, name=name):
                    outcome.tool_calls += 1
                    tool = child.tools.get(name)
                    outcome.changed = outcome.changed or (tool is not None and tool.mutates)
                case ToolResultEvent():
                    outcome.tool_calls += 1
                case TurnEnded():
                    outcome.reason, outcome.message, outcome.iterations = event.reason, event.message, event.iterations
            ctx.emit(SubagentEvent(agent_type.name, args.description, event, parent_call))

    async def _relay(self, event: ApprovalRequested, description: str, ctx: ToolContext) -> None:
        """Put a child's approval request before the person, or deny it when nobody can answer."""
        if ctx.ask is None:
            event.answer(headless_denial(event.reasons, event.person_only))
            return
        shown = dataclasses.replace(event, title=f"Sub-agent ({description}): {event.title}")
        try:
            answer = await ctx.ask(shown)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken prompt must deny, never hang the sub-agent
            event.answer(ApprovalDecision(False, f"Not run: the approval prompt failed ({exc}).", by="error"))
            return
        if isinstance(answer, ApprovalDecision):
            event.answer(answer)
        # A front end that answered through event.answer() already won; this only resolves a silent one.
        event.answer(ApprovalDecision(False, "Not run: the approval prompt closed without an answer.", by="user"))

    def _result(self, agent_type: AgentType, outcome: _Outcome, usage: dict[str, Any]) -> ToolResult:
        data: dict[str, Any] = {**usage, "agent_type": agent_type.name, "reason": outcome.reason,
                                "iterations": outcome.iterations, "tool_calls": outcome.tool_calls}
        tokens = usage["prompt_tokens"] + usage["completion_tokens"]
        summary = f"{agent_type.name}: {outcome.tool_calls} tool calls, {tokens:,} tokens"
        if outcome.reason == "done":
            return ToolResult(outcome.report or "(The sub-agent finished without writing a report.)",
                              summary=summary, data=data, changed=outcome.changed)
        why = outcome.message or outcome.reason
        text = f"The sub-agent stopped before finishing ({outcome.reason}: {why})."
        if outcome.report:
            text += f" Its last message:\n\n{outcome.report}"
        else:
            text += " It wrote no report; retry with a narrower prompt, or do the task yourself."
        return ToolResult(text, ok=False, summary=f"{summary}, stopped: {outcome.reason}", data=data,
                          changed=outcome.changed)
