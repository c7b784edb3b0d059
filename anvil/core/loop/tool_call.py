"""One tool call, from the model's raw arguments to a result the model reads.

The steps, in order: parse and validate the arguments; ``pre_tool_use`` hooks (which may block, rewrite the
input or pre-approve); the approval policy, and the person when it says ask (with the diff an edit would
make); the tool itself; ``post_tool_use`` hooks. Events a tool emits while it runs (todos, a question for the
person, a sub-agent's progress) are passed on as they happen, not after the tool ends, so that a tool can
wait for an answer to an event it emitted.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from anvil.core.events import (
    ApprovalAnswered,
    ApprovalDecision,
    ApprovalRequested,
    Event,
    Notice,
    ToolCall,
    ToolCallStarted,
)
from anvil.core.hooks.outcome import HookOutcome, append_context
from anvil.core.hooks.runner import HookRunner
from anvil.core.loop.failure import one_line, report
from anvil.core.loop.interrupt import INTERRUPTED, Interrupted, Interrupter
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.policy.verdict import Verdict
from anvil.core.tools.base import PreparedCall, Tool, ToolContext, ToolRegistry, ToolResult, format_validation
from anvil.core.tools.errors import ToolError


@dataclass
class CallOutcome:
    """One tool call as it goes through :meth:`ToolCaller.run`; ``result`` is set when the run is over."""

    call: ToolCall
    prepared: PreparedCall
    #: the label front ends show ("Reading app.py")
    phase: str
    result: ToolResult = field(default_factory=lambda: ToolResult("The call did not run.", ok=False))
    started: float = field(default_factory=time.monotonic)
    #: what hooks added for the model (pre_tool_use and post_tool_use), appended to the result's output
    hook_context: str = ""
    #: a hook answered continue: false: the turn ends after this call, and this says why
    stop_reason: str | None = None

    @property
    def tool(self) -> Tool | None:
        return self.prepared.tool


class ToolCaller:
    def __init__(self, tools: ToolRegistry, ctx: ToolContext, policy: ApprovalPolicy, interrupt: Interrupter,
                 record: Callable[[Event], Any], hooks: HookRunner | None = None) -> None:
        self.tools = tools
        self.ctx = ctx
        self.policy = policy
        self.interrupt = interrupt
        self.record = record
        self.hooks = hooks
        self._live: asyncio.Queue[Any] | None = None
        self.pending: list[Event] = []  # events emitted outside a tool run (kept until the next call's end)
        self._notifications: set[asyncio.Future[Any]] = set()  # fire-and-forget hooks, kept alive until done
        #: an attached workflow's refusals (a tool of another phase): the reason, or None to go on
        self.gate: Callable[[str, dict[str, Any]], str | None] | None = None
        ctx.emit = self.emit

    def emit(self, event: Event) -> None:
        """Tools call this (through ctx.emit): passed on at once while a tool runs."""
        if self._live is not None:
            self._live.put_nowait(event)
        else:
            self.pending.append(event)

    async def ask(self, event: Any) -> Any:
        """ctx.ask for interactive front ends: show a request event and wait for the person's answer."""
        if event.future is None:
            raise ValueError("a request event needs a future to carry the answer")
        self.emit(event)
        self._notify(f"anvil is waiting for you: {type(event).__name__}")
        return await event.future

    def _notify(self, message: str) -> None:
        """The notification hook, without holding up the question it is about."""
        if self.hooks is not None:
            task = asyncio.ensure_future(self.hooks.notification(message))
            self._notifications.add(task)
            task.add_done_callback(self._notifications.discard)

    def prepare(self, call: ToolCall) -> CallOutcome:
        """Parse and validate a call's arguments: the outcome :meth:`run` then completes."""
        prepared = self.tools.prepare(call.name, call.arguments)
        tool = prepared.tool
        phase = call.name
        if tool and prepared.error is None:
            with contextlib.suppress(Exception):  # a label is not worth failing the call for
                phase = tool.phase(prepared.args)
        return CallOutcome(call, prepared, phase)

    async def run(self, outcome: CallOutcome, stage: Callable[[PreparedCall], str | None]) -> AsyncIterator[Event]:
        """The call's events as they happen; ``outcome.result`` holds what the model reads afterwards."""
        call, prepared = outcome.call, outcome.prepared
        stage_word = None
        with contextlib.suppress(Exception):  # a label is not worth failing the call for
            stage_word = stage(prepared)
        yield self.record(ToolCallStarted(call.id, call.name, prepared.raw_args, outcome.phase, stage=stage_word,
                                          kind=prepared.tool.kind if prepared.tool else "other"))
        outcome.started = time.monotonic()
        tool = prepared.tool
        refusal = self.gate(call.name, prepared.raw_args) if self.gate is not None else None
        if refusal is not None:
            outcome.result = ToolResult(refusal, ok=False, summary="not in this phase")
            return
        if prepared.error is not None or tool is None:
            outcome.result = ToolResult(prepared.error or "Unknown tool.", ok=False, summary="invalid call")
            return
        try:
            async for event in self._approve_and_run(outcome, tool):
                yield event
        except Interrupted:
            outcome.result = ToolResult(INTERRUPTED, ok=False, summary="interrupted")
        except Exception as exc:  # the call's boundary: a bug before or around the tool is a tool error
            message = report(self.ctx.data_dir, f"anvil, handling this {call.name} call", exc)
            outcome.result = ToolResult(f"{message}. The call did not complete; tell the person if it keeps "
                                        "happening.", ok=False, summary="internal error")
        if self.hooks is not None and not self.interrupt.is_set():
            post = await self.hooks.post_tool_use(call.name, outcome.prepared.raw_args, outcome.result, call.id)
            async for event in self._hook_said(post, outcome):
                yield event
        if outcome.hook_context:
            outcome.result.output = append_context(outcome.result.output, outcome.hook_context)
        for event in self.pending:
            yield self.record(event)
        self.pending.clear()

    async def _approve_and_run(self, outcome: CallOutcome, tool: Tool) -> AsyncIterator[Event]:
        """``pre_tool_use`` hooks, the policy (and the person), then the tool: ``outcome.result`` at the end."""
        call = outcome.call
        pre = await self.hooks.pre_tool_use(call.name, outcome.prepared.raw_args, call.id) if self.hooks else None
        if pre is not None:
            async for event in self._hook_said(pre, outcome):
                yield event
            if pre.updated_input is not None:
                outcome.prepared = _revalidate(tool, pre.updated_input, outcome.prepared)
            if pre.blocked:
                outcome.result = ToolResult(pre.message or "Blocked by a hook.", ok=False, summary="blocked by hook")
                return
        if outcome.prepared.error is not None:
            outcome.result = ToolResult(outcome.prepared.error, ok=False, summary="invalid input from hook")
            return
        verdict = with_hook_decision(self.policy.evaluate(tool, outcome.prepared.args, self.ctx), pre)
        decision = _Decision()
        async for event in self._decide(outcome, tool, verdict, decision):
            yield event
        if decision.answer.allow:
            self.ctx.state["call_id"] = call.id  # request events a tool emits name the call they belong to
            async for event in self._execute(tool, outcome):
                yield self.record(event)
        elif self.interrupt.is_set():
            outcome.result = ToolResult(INTERRUPTED, ok=False, summary="interrupted")
        else:
            outcome.result = _denied(call.name, decision.answer)

    async def _hook_said(self, said: HookOutcome, outcome: CallOutcome) -> AsyncIterator[Event]:
        """A tool event's hooks: their notices, the context they add for the model, a request to end the turn."""
        for notice in said.notices:
            yield self.record(Notice(notice))
        if said.additional_context:
            outcome.hook_context = f"{outcome.hook_context}\n\n{said.additional_context}".strip()
        if said.stop_turn and outcome.stop_reason is None:
            outcome.stop_reason = said.stop_reason
            yield self.record(Notice(f"A hook ended the turn after {outcome.call.name}: {said.stop_reason}"))

    async def _decide(self, outcome: CallOutcome, tool: Tool, verdict: Verdict,
                      decision: _Decision) -> AsyncIterator[Event]:
        """The policy's verdict, or the person's answer when it says ask, into ``decision``; every decision is
        recorded."""
        call = outcome.call
        if verdict.action != "ask":
            allowed = verdict.action == "allow"
            if verdict.by != "no approval needed":  # rules, auto-approve, hooks, hard-deny: on the record
                yield self.record(ApprovalAnswered(call.id, call.name, allowed, verdict.by, verdict.message))
            decision.answer = ApprovalDecision(allowed, verdict.message, by=verdict.by or "policy")
            return
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        diff = tool.preview(outcome.prepared.args, self.ctx)
        command, cwd = tool.command(outcome.prepared.args), verdict.cwd
        if command is None and (runs := tool.shown_command(outcome.prepared.args, self.ctx)) is not None:
            command, cwd = runs  # run_tests: the exact command line and where it runs
        patterns = verdict.suggested_patterns or ((verdict.suggested_pattern,) if verdict.suggested_pattern else ())
        yield ApprovalRequested(call.id, call.name, outcome.prepared.raw_args, outcome.phase, reasons=verdict.reasons,
                                suggested_pattern=verdict.suggested_pattern, diff=diff, command=command,
                                cwd=str(cwd) if cwd else None, suggested_patterns=patterns,
                                rule_files={scope: str(path) for scope, path in self.policy.files.items()},
                                no_rule_reason=verdict.no_rule_reason, person_only=verdict.person_only,
                                future=future)
        self._notify(f"anvil needs your approval: {outcome.phase}")
        try:
            answer = await self.interrupt.until(future)
        except Interrupted:
            answer = ApprovalDecision(False, INTERRUPTED, by="interrupt")
        for rule in answer.rules:  # all of them: a compound command must not ask again for its next part
            self.policy.remember(call.name, rule, answer.remember or "session", "allow" if answer.allow else "deny")
        yield self.record(ApprovalAnswered(call.id, call.name, answer.allow, answer.by, answer.message,
                                           answer.pattern, answer.rules))
        decision.answer = answer

    async def _execute(self, tool: Tool, outcome: CallOutcome) -> AsyncIterator[Event]:
        """Run the tool as a task, passing on what it emits meanwhile; its result goes to ``outcome``."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._live = queue
        task = asyncio.ensure_future(self._guarded(tool, outcome.prepared.args))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            self._live = None
            if not task.done():  # the loop itself was cancelled: do not leave the tool running
                task.cancel()
        while not queue.empty():  # emitted in the same tick the tool finished
            event = queue.get_nowait()
            if event is not None:
                yield event
        outcome.result = task.result()

    async def _guarded(self, tool: Tool, args: Any) -> ToolResult:
        try:
            return await self.interrupt.until(tool.run(args, self.ctx))
        except Interrupted:
            return ToolResult(INTERRUPTED, ok=False, summary="interrupted")
        except ToolError as exc:
            return ToolResult(str(exc), ok=False, summary=str(exc).split("\n", 1)[0][:120])
        except Exception as exc:  # a bug in a tool must not end the session
            return ToolResult(f"The {tool.name} tool failed unexpectedly: {one_line(exc)}", ok=False,
                              summary="internal error")


@dataclass
class _Decision:
    """Whether a call may run, once the policy or the person decided."""

    answer: ApprovalDecision = field(default_factory=lambda: ApprovalDecision(False, "Not decided.", by="policy"))


def _denied(name: str, decision: ApprovalDecision) -> ToolResult:
    """What the model reads when a call was refused, by the person or by the policy."""
    text = f"The person denied this {name} call." if decision.by == "user" else decision.message
    if decision.by == "user" and decision.message:
        text += f" Their message: {decision.message}"
    return ToolResult(text or f"The {name} call was refused.", ok=False, summary="denied")


def with_hook_decision(verdict: Verdict, pre: HookOutcome | None) -> Verdict:
    """The policy's verdict after the pre_tool_use hooks' decision. A hook's allow answers the policy's question,
    never one only the person may answer (a protected path, a run outside the sandbox), and never overrides a
    deny; a hook's ask puts a call the rules allow before the person."""
    if pre is None or pre.decision is None:
        return verdict
    reason = pre.decision_reason
    if pre.decision == "approve" and verdict.action == "ask" and not verdict.person_only:
        return Verdict("allow", by="hook", message=reason)
    if pre.decision == "ask" and verdict.action != "deny":
        why = "A pre_tool_use hook asks you to confirm this call" + (f": {reason}" if reason else ".")
        if verdict.action == "ask":
            return dataclasses.replace(verdict, reasons=(*verdict.reasons, why))
        return Verdict("ask", by="hook", reasons=(why,), cwd=verdict.cwd)
    return verdict


def _revalidate(tool: Tool, raw: dict[str, Any], prepared: PreparedCall) -> PreparedCall:
    """A hook's rewritten input goes through the same validation as the model's."""
    try:
        return PreparedCall(tool, tool.Args.model_validate(raw), raw)
    except ValidationError as exc:
        return PreparedCall(tool, None, raw, f"A pre_tool_use hook rewrote the input of {tool.name} into "
                            f"something invalid: {format_validation(exc)}. Tell the person; the hook needs fixing.")
