"""The agent loop: a flat list of chat messages and a ReAct cycle over it.

``run_turn(text)`` appends the person's message, then repeats: call the model with the tools, stream
its text, run its tool calls in order and append their results, until it answers without a tool call,
reaches ``max_iterations``, fails, or is interrupted. Everything it does comes out as events.

Invariant kept on every exit path: each assistant tool call in the history has a tool result, so the
history is always valid to send again (an interrupted call gets "interrupted by the user").
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

from anvil.core.approval import ApprovalPolicy
from anvil.core.context import ContextMeter
from anvil.core.events import (
    ApprovalAnswered,
    ApprovalDecision,
    ApprovalRequested,
    AssistantMessage,
    ErrorEvent,
    Event,
    TextDelta,
    ToolCallInfo,
    ToolCallStarted,
    ToolResultEvent,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
    UsageReport,
)
from anvil.core.model import Completion, Model, ModelError, ToolCall
from anvil.core.session import Session
from anvil.core.tools.base import ToolContext, ToolError, ToolRegistry, ToolResult

T = TypeVar("T")
INTERRUPTED = "Interrupted by the user."


class _Interrupted(Exception):
    pass


class Agent:
    def __init__(self, model: Model, tools: ToolRegistry, ctx: ToolContext, *, system_prompt: str,
                 policy: ApprovalPolicy | None = None, session: Session | None = None,
                 max_iterations: int = 50, history: list[dict[str, Any]] | None = None) -> None:
        self.model = model
        self.tools = tools
        self.ctx = ctx
        self.policy = policy or ApprovalPolicy()
        self.session = session
        self.max_iterations = max_iterations
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}, *(history or [])]
        self.turn = 0
        self.totals = {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        self.context = ContextMeter(model.context_window)
        self._interrupt = asyncio.Event()
        self._pending: list[Event] = []  # events tools emitted while running (todos)
        self._steering: list[str] = []
        ctx.emit = self._pending.append

    # -- control from front ends ------------------------------------------------------------------

    def interrupt(self) -> None:
        """Stop the running turn: the stream, a running tool, or a pending approval."""
        self._interrupt.set()

    def steer(self, text: str) -> None:
        """A message typed while a turn runs; it joins the history before the next model call."""
        self._steering.append(text)

    # -- the loop ------------------------------------------------------------------------------------

    async def run_turn(self, text: str) -> AsyncIterator[Event]:
        self._interrupt.clear()
        self.turn += 1
        self._add_message({"role": "user", "content": text})
        yield self._record(TurnStarted(self.turn, text, self.session.id if self.session else ""))
        reason: TurnEndReason = "done"
        message = ""
        iterations = 0
        while True:
            if iterations >= self.max_iterations:
                reason, message = "max_iterations", f"Stopped after {iterations} model calls (max_iterations)."
                break
            iterations += 1
            for steer in self._steering:
                self._add_message({"role": "user", "content": steer})
            self._steering.clear()
            completion: Completion | None = None
            parts: list[str] = []
            try:
                async for item in self._stream_model():
                    if isinstance(item, str):
                        parts.append(item)
                        yield TextDelta(item)
                    elif isinstance(item, Completion):
                        completion = item
                    else:
                        yield self._record(item)
            except ModelError as error:
                self._keep_partial(parts)
                yield self._record(ErrorEvent(error.message, error.retryable, error.kind))
                reason, message = "error", error.message
                break
            except _Interrupted:
                self._keep_partial(parts)
                reason = "interrupted"
                break
            assert completion is not None
            yield self._on_completion(completion)
            yield self._record(self._usage_event(completion))
            yield self._record(self.context.after_response(completion.usage, self.messages))
            if not completion.tool_calls:
                break
            for index, call in enumerate(completion.tool_calls):
                if self._interrupt.is_set():
                    for skipped in completion.tool_calls[index:]:
                        self._add_tool_result(skipped, INTERRUPTED)
                    break
                async for event in self._run_tool(call):
                    yield event
            if self._interrupt.is_set():
                reason = "interrupted"
                break
        if reason == "interrupted":
            message = INTERRUPTED
        yield self._record(TurnEnded(self.turn, reason, iterations, message))
        if self.session is not None:
            self.session.sync()

    async def _stream_model(self) -> AsyncIterator[Any]:
        """Model items via a queue fed by a task, so an interrupt can cancel the stream at any point."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        done = object()

        async def pump() -> None:
            try:
                async for item in self.model.stream(self.messages, self.tools.schemas()):
                    queue.put_nowait(item)
            except Exception as exc:
                queue.put_nowait(exc)
            finally:
                queue.put_nowait(done)

        task = asyncio.create_task(pump())
        try:
            while True:
                item = await self._until_interrupted(queue.get())
                if item is done:
                    return
                if isinstance(item, ModelError):
                    raise item
                if isinstance(item, Exception):
                    raise ModelError(f"The model call failed unexpectedly: {item!r}") from item
                yield item
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def _until_interrupted(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` unless the person interrupts first (then cancel it and raise)."""
        work = asyncio.ensure_future(awaitable)
        if self._interrupt.is_set():
            work.cancel()
            raise _Interrupted
        stop = asyncio.ensure_future(self._interrupt.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if work.done():
            return work.result()
        work.cancel()
        with contextlib.suppress(BaseException):
            await work
        raise _Interrupted

    async def _run_tool(self, call: ToolCall) -> AsyncIterator[Event]:
        prepared = self.tools.prepare(call.name, call.arguments)
        tool = prepared.tool
        phase = tool.phase(prepared.args) if tool and prepared.error is None else call.name
        yield self._record(ToolCallStarted(call.id, call.name, prepared.raw_args, phase))
        started = time.monotonic()
        result: ToolResult
        if prepared.error is not None or tool is None:
            result = ToolResult(prepared.error or "Unknown tool.", ok=False, summary="invalid call")
        else:
            verdict = self.policy.evaluate(tool, prepared.args, self.ctx)
            if verdict.action == "ask":
                future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
                yield ApprovalRequested(call.id, call.name, prepared.raw_args, phase, reasons=verdict.reasons,
                                        suggested_pattern=verdict.suggested_pattern, future=future)
                try:
                    decision = await self._until_interrupted(future)
                except _Interrupted:
                    decision = ApprovalDecision(False, INTERRUPTED, by="interrupt")
                if decision.allow and decision.remember and decision.pattern:
                    self.policy.remember(call.name, decision.pattern, decision.remember)
                yield self._record(ApprovalAnswered(call.id, call.name, decision.allow, decision.by,
                                                    decision.message, decision.pattern))
                allowed, denial = decision.allow, decision.message
            else:
                allowed, denial = verdict.action == "allow", verdict.message
                if verdict.by != "no approval needed":  # rules, auto-approve, hard-deny: on the record
                    yield self._record(ApprovalAnswered(call.id, call.name, allowed, verdict.by, denial))
            if allowed:
                result = await self._execute(tool, prepared.args)
            elif self._interrupt.is_set():
                result = ToolResult(INTERRUPTED, ok=False, summary="interrupted")
            else:
                text = f"The person denied this {call.name} call."
                result = ToolResult(f"{text} Their message: {denial}" if denial else text,
                                    ok=False, summary="denied")
        self._add_tool_result(call, result.output)
        for event in self._pending:
            yield self._record(event)
        self._pending.clear()
        yield self._record(ToolResultEvent(call.id, call.name, result.ok, result.summary or
                                           ("ok" if result.ok else "error"), result.output, result.diff,
                                           round(time.monotonic() - started, 3)))
        yield self._record(self.context.after_tool_result(result.output))

    async def _execute(self, tool: Any, args: Any) -> ToolResult:
        try:
            return await self._until_interrupted(tool.run(args, self.ctx))
        except _Interrupted:
            return ToolResult(INTERRUPTED, ok=False, summary="interrupted")
        except ToolError as exc:
            return ToolResult(str(exc), ok=False, summary=str(exc).split("\n", 1)[0][:120])
        except Exception as exc:  # a bug in a tool must not end the session
            return ToolResult(f"The {tool.name} tool failed unexpectedly: {type(exc).__name__}: {exc}",
                              ok=False, summary="internal error")

    # -- history and bookkeeping ---------------------------------------------------------------------

    def _on_completion(self, completion: Completion) -> AssistantMessage:
        message: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
        if completion.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in completion.tool_calls]
        self._add_message(message)
        calls = tuple(ToolCallInfo(c.id, c.name, c.arguments) for c in completion.tool_calls)
        return self._record(AssistantMessage(completion.text, calls))

    def _keep_partial(self, parts: list[str]) -> None:
        if parts:
            self._add_message({"role": "assistant", "content": "".join(parts) + "\n\n[interrupted]"})

    def _add_tool_result(self, call: ToolCall, output: str) -> None:
        self._add_message({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": output})

    def _add_message(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if self.session is not None:
            self.session.append({"t": "message", "message": message})

    def _usage_event(self, completion: Completion) -> UsageReport:
        usage = completion.usage
        prompt = usage.prompt_tokens if usage else 0
        output = usage.completion_tokens if usage else 0
        self.totals["prompt_tokens"] += prompt
        self.totals["completion_tokens"] += output
        self.totals["cost"] += completion.cost or 0.0
        return UsageReport(prompt, output, completion.cost, int(self.totals["prompt_tokens"]),
                           int(self.totals["completion_tokens"]), round(float(self.totals["cost"]), 6))

    def _record(self, event: Event) -> Any:
        if self.session is not None:
            self.session.append({"t": "event", "event": event.to_dict()})
        return event
