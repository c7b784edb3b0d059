"""One tool call, from the model's raw arguments to a result the model reads.

The steps, in order: parse and validate the arguments; ``pre_tool_use`` hooks (which may block, rewrite the
input or pre-approve); the approval policy, and the person when it says ask (with the diff an edit would
make); the tool itself; ``post_tool_use`` hooks. Events a tool emits while it runs (todos, a question for the
person, a sub-agent's progress) are passed on as they happen, not after the tool ends, so that a tool can
wait for an answer to an event it emitted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from anvil.core.events import ApprovalAnswered, ApprovalDecision, ApprovalRequested, Event, Notice, ToolCallStarted
from anvil.core.hooks.runner import HookRunner, append_context
from anvil.core.loop.interrupt import Interrupted, Interrupter
from anvil.core.model.litellm_model import ToolCall
from anvil.core.policy.approval import ApprovalPolicy, Verdict
from anvil.core.tools.base import (
    PreparedCall,
    Tool,
    ToolContext,
    ToolError,
    ToolRegistry,
    ToolResult,
    format_validation,
)

INTERRUPTED = "Interrupted by the user."


@dataclass
class CallOutcome:
    """The last item :meth:`ToolCaller.run` yields: what the loop needs to book the call."""

    tool: Tool | None
    raw_args: dict[str, Any]
    result: ToolResult
    started: float = field(default_factory=time.monotonic)


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

    async def run(self, call: ToolCall, stage: Callable[[str, dict[str, Any], bool], str | None]
                  ) -> AsyncIterator[Event | CallOutcome]:
        prepared = self.tools.prepare(call.name, call.arguments)
        tool = prepared.tool
        phase = tool.phase(prepared.args) if tool and prepared.error is None else call.name
        yield self.record(ToolCallStarted(call.id, call.name, prepared.raw_args, phase,
                                          stage=stage(call.name, prepared.raw_args, tool.read_only if tool else True)))
        started = time.monotonic()
        if prepared.error is not None or tool is None:
            result = ToolResult(prepared.error or "Unknown tool.", ok=False, summary="invalid call")
            yield CallOutcome(tool, prepared.raw_args, result, started)
            return
        pre = await self.hooks.pre_tool_use(call.name, prepared.raw_args, call.id) if self.hooks else None
        if pre is not None:
            for notice in pre.notices:
                yield self.record(Notice(notice))
            if pre.updated_input is not None:
                prepared = _revalidate(tool, pre.updated_input, prepared)
        if pre is not None and pre.blocked:
            result = ToolResult(pre.message or "Blocked by a hook.", ok=False, summary="blocked by hook")
        elif prepared.error is not None:
            result = ToolResult(prepared.error, ok=False, summary="invalid input from hook")
        else:
            verdict = self.policy.evaluate(tool, prepared.args, self.ctx)
            if verdict.action == "ask" and pre is not None and pre.decision == "approve":
                verdict = Verdict("allow", by="hook")
            decision: ApprovalDecision | None = None
            async for item in self._decide(call, tool, prepared, phase, verdict):
                if isinstance(item, ApprovalDecision):
                    decision = item
                else:
                    yield item
            assert decision is not None
            if decision.allow:
                self.ctx.state["call_id"] = call.id  # request events a tool emits name the call they belong to
                result = ToolResult("", ok=False)
                async for item in self._execute(tool, prepared.args):
                    if isinstance(item, ToolResult):
                        result = item
                    else:
                        yield self.record(item)
            elif self.interrupt.is_set():
                result = ToolResult(INTERRUPTED, ok=False, summary="interrupted")
            else:
                text = f"The person denied this {call.name} call." if decision.by == "user" else decision.message
                if decision.by == "user" and decision.message:
                    text += f" Their message: {decision.message}"
                result = ToolResult(text or f"The {call.name} call was refused.", ok=False, summary="denied")
        if self.hooks is not None and not self.interrupt.is_set():
            post = await self.hooks.post_tool_use(call.name, prepared.raw_args, result, call.id)
            for notice in post.notices:
                yield self.record(Notice(notice))
            if post.additional_context:
                result.output = append_context(result.output, post.additional_context)
        for event in self.pending:
            yield self.record(event)
        self.pending.clear()
        yield CallOutcome(tool, prepared.raw_args, result, started)

    async def _decide(self, call: ToolCall, tool: Tool, prepared: PreparedCall, phase: str,
                      verdict: Verdict) -> AsyncIterator[Event | ApprovalDecision]:
        """The policy's verdict, or the person's answer when it says ask; every decision is recorded."""
        if verdict.action != "ask":
            allowed = verdict.action == "allow"
            if verdict.by != "no approval needed":  # rules, auto-approve, hooks, hard-deny: on the record
                yield self.record(ApprovalAnswered(call.id, call.name, allowed, verdict.by, verdict.message))
            yield ApprovalDecision(allowed, verdict.message, by=verdict.by or "policy")
            return
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        diff = tool.preview(prepared.args, self.ctx)
        yield ApprovalRequested(call.id, call.name, prepared.raw_args, phase, reasons=verdict.reasons,
                                suggested_pattern=verdict.suggested_pattern, diff=diff,
                                cwd=str(verdict.cwd) if verdict.cwd else None,
                                rule_files={scope: str(path) for scope, path in self.policy.files.items()},
                                future=future)
        self._notify(f"anvil needs your approval: {phase}")
        try:
            decision = await self.interrupt.until(future)
        except Interrupted:
            decision = ApprovalDecision(False, INTERRUPTED, by="interrupt")
        if decision.allow and decision.remember and decision.pattern:
            self.policy.remember(call.name, decision.pattern, decision.remember)
        yield self.record(ApprovalAnswered(call.id, call.name, decision.allow, decision.by, decision.message,
                                           decision.pattern))
        yield decision

    async def _execute(self, tool: Tool, args: Any) -> AsyncIterator[Event | ToolResult]:
        """Run the tool as a task, passing on what it emits meanwhile; the last item is its result."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._live = queue
        task = asyncio.ensure_future(self._guarded(tool, args))
        task.add_done_callback(lambda _: queue.put_nowait(task))
        try:
            while (item := await queue.get()) is not task:
                yield item
        finally:
            self._live = None
            if not task.done():  # the loop itself was cancelled: do not leave the tool running
                task.cancel()
        while not queue.empty():  # emitted in the same tick the tool finished
            item = queue.get_nowait()
            if item is not task:
                yield item
        yield task.result()

    async def _guarded(self, tool: Tool, args: Any) -> ToolResult:
        try:
            return await self.interrupt.until(tool.run(args, self.ctx))
        except Interrupted:
            return ToolResult(INTERRUPTED, ok=False, summary="interrupted")
        except ToolError as exc:
            return ToolResult(str(exc), ok=False, summary=str(exc).split("\n", 1)[0][:120])
        except Exception as exc:  # a bug in a tool must not end the session
            return ToolResult(f"The {tool.name} tool failed unexpectedly: {type(exc).__name__}: {exc}",
                              ok=False, summary="internal error")


def _revalidate(tool: Tool, raw: dict[str, Any], prepared: PreparedCall) -> PreparedCall:
    """A hook's rewritten input goes through the same validation as the model's."""
    try:
        return PreparedCall(tool, tool.Args.model_validate(raw), raw)
    except ValidationError as exc:
        return PreparedCall(tool, None, raw, f"A pre_tool_use hook rewrote the input of {tool.name} into "
                            f"something invalid: {format_validation(exc)}. Tell the person; the hook needs fixing.")
