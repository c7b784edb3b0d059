"""The agent loop: a flat list of chat messages and a ReAct cycle over it.

``run_turn(text)`` appends the person's message, then repeats: call the model with the tools, stream
its text, run its tool calls in order and append their results, until it answers without a tool call,
reaches ``max_iterations``, fails, is stuck, or is interrupted. Everything it does comes out as events.

Around that cycle, each in its own module: the context meter and compaction before every model call
(``context.py``, ``compaction.py``; a context-overflow error compacts and retries the call once), loop
guards after every tool result (``loop_guard.py``), stage words for front ends (``phases.py``), and the
project's checks when a turn that changed files ends (``verify.py``).

Invariant kept on every exit path: each assistant tool call in the history has a tool result, so the
history is always valid to send again (an interrupted call gets "interrupted by the user").
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from anvil.core.context.compaction import Compactor
from anvil.core.context.meter import ContextMeter, TokenCounter
from anvil.core.events import (
    AssistantMessage,
    CompactionFinished,
    CompactionStarted,
    ErrorEvent,
    Event,
    Notice,
    TextDelta,
    ToolCall,
    ToolResultEvent,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
    UsageReport,
)
from anvil.core.hooks.runner import HookRunner, append_context
from anvil.core.loop.guard import LoopGuard
from anvil.core.loop.interrupt import INTERRUPTED, Interrupted, Interrupter
from anvil.core.loop.stages import StageTracker
from anvil.core.loop.tool_call import CallOutcome, ToolCaller
from anvil.core.loop.verify import FILE_TOOLS, RUNNING_TOOLS, CheckResult, failure_message, report, run_checks
from anvil.core.model.errors import ModelError
from anvil.core.model.litellm_model import LiteLLMModel
from anvil.core.model.protocol import Completion, Model
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.session.store import Session
from anvil.core.session.undo import rewind_history, rewind_points
from anvil.core.tools.base import Tool, ToolContext, ToolRegistry, ToolResult
from anvil.core.tools.interaction import mode_reminder
from anvil.core.tools.todos import render_todos

NOT_RUN = "Not run: anvil stopped the turn before this call (see the message that follows)."


class Agent:
    def __init__(self, model: Model, tools: ToolRegistry, ctx: ToolContext, *, system_prompt: str,
                 policy: ApprovalPolicy | None = None, session: Session | None = None,
                 max_iterations: int = 50, history: list[dict[str, Any]] | None = None,
                 compact_threshold: float | bool = 0.85, verify: list[str] | None = None,
                 verify_retries: int = 5, verify_timeout: float = 600.0, hooks: HookRunner | None = None,
                 interactive: bool = True) -> None:
        self.model = model
        self.tools = tools
        self.ctx = ctx
        self.policy = policy or ApprovalPolicy()
        self.session = session
        self.max_iterations = max_iterations
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}, *(history or [])]
        self.turn = 0
        self.totals = {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        # litellm's tokenizer only for models litellm serves; the scripted model is counted by estimate
        counter = TokenCounter(model.name, use_litellm=isinstance(model, LiteLLMModel))
        self.context = ContextMeter(model.context_window, counter)
        self.compactor = Compactor(self.context, self._summarise, compact_threshold)
        self.guard = LoopGuard()
        self.stages = StageTracker()
        self.verify, self.verify_retries, self.verify_timeout = list(verify or []), verify_retries, verify_timeout
        self._changed = False  # files changed since the last verification in this turn
        self._stuck: str | None = None
        self._end_turn = False
        self._told_mode: str | None = None  # the approval mode the model was last told about
        self._checks: list[CheckResult] | None = []  # the last verification's results
        self._spent: list[UsageReport] = []  # usage of summary calls, reported after the compaction
        self._interrupt = Interrupter()
        self._steering: list[str] = []
        self.hooks = hooks
        self.caller = ToolCaller(tools, ctx, self.policy, self._interrupt, self._record, hooks)
        if interactive:  # tools may ask the person (ask_user, plan approval); headless leaves ctx.ask None
            ctx.ask = self.caller.ask

    # -- control from front ends ------------------------------------------------------------------

    def interrupt(self) -> None:
        """Stop the running turn: the stream, a running tool, or a pending approval."""
        self._interrupt.set()

    def steer(self, text: str) -> None:
        """A message typed while a turn runs; it joins the history before the next model call."""
        self._steering.append(text)

    @property
    def pending_steering(self) -> tuple[str, ...]:
        """Steering messages the model has not seen yet."""
        return tuple(self._steering)

    def take_steering(self) -> list[str]:
        """Steering messages left over when a turn ended before another model call (the next turn's text)."""
        taken, self._steering = self._steering, []
        return taken

    def set_model(self, model: Model) -> None:
        """Switch models between turns (/model); the gauge then measures against the new model's window."""
        self.model = model
        self.context.counter = TokenCounter(model.name, use_litellm=isinstance(model, LiteLLMModel))
        self.context.set_window(model.context_window)

    def rewind_conversation(self, turn: int) -> bool:
        """Cut the history to before ``turn`` (between turns). False when that turn was compacted away."""
        prompts = self.session.load().prompts if self.session is not None else []
        points = {p.turn: p for p in rewind_points(self.messages[1:], prompts)}
        if turn not in points:
            return False
        rewound = rewind_history(self.messages[1:], points[turn].index)
        self.messages[:] = [self.messages[0], *rewound]
        self.context.reset()
        self.guard.reset()
        self.stages.reset()
        if self.session is not None:  # resuming the session resumes the rewound conversation
            self.session.append({"t": "rewind", "turn": turn, "messages": rewound})
            self.session.sync()
        return True

    # -- the loop ------------------------------------------------------------------------------------

    async def compact(self, focus: str | None = None) -> AsyncIterator[Event]:
        """Compact the history now (``/compact [focus]``), between turns; always writes a snapshot."""
        self._interrupt.clear()
        with contextlib.suppress(Interrupted):
            async for event in self._compaction("manual", focus=focus, force=True):
                yield self._record(event)
        if self.session is not None:
            self.session.sync()

    async def run_turn(self, text: str) -> AsyncIterator[Event]:
        self._interrupt.clear()
        if self.hooks is not None:
            submitted = await self.hooks.user_prompt_submit(text)
            for notice in submitted.notices:
                yield Notice(notice)
            if submitted.blocked:  # a hook refused the prompt: nothing reaches the model or the history
                yield ErrorEvent(f"A user_prompt_submit hook blocked this prompt: {submitted.message}", kind="hook")
                return
            text = append_context(text, submitted.additional_context)
        self.turn += 1
        self.ctx.checkpoints.begin_turn(self.turn)  # the files this turn changes are snapshotted under its number
        self._add_message({"role": "user", "content": text})
        yield self._record(TurnStarted(self.turn, text, self.session.id if self.session else ""))
        reminder = mode_reminder(self.policy.mode, self._told_mode)
        if reminder is not None:  # the model cannot see the mode: say so, apart from the person's words
            self._add_message({"role": "user", "content": reminder})
        self.guard.reset()
        self.stages.reset()
        self._changed = False
        reason: TurnEndReason = "done"
        message = ""
        iterations = 0
        fix_until: int | None = None  # after failed checks: the model calls allowed for fixing them
        while True:
            if fix_until is not None and iterations >= fix_until:
                break  # the extra calls for fixing are used up; the final check below reports the state
            if fix_until is None and iterations >= self.max_iterations:
                reason, message = "max_iterations", f"Stopped after {iterations} model calls (max_iterations)."
                break
            iterations += 1
            for steer in self._steering:
                self._add_message({"role": "user", "content": steer})
            self._steering.clear()
            completion: Completion | None = None
            parts: list[str] = []
            try:
                async for item in self._model_step():
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
            except Interrupted:
                self._keep_partial(parts)
                reason = "interrupted"
                break
            assert completion is not None
            yield self._on_completion(completion)
            yield self._record(self._usage_event(completion))
            yield self._record(self.context.after_response(completion.usage, self.messages))
            if not completion.tool_calls:
                if self.hooks is not None and not self._interrupt.is_set():
                    stop = await self.hooks.stop(completion.text)
                    for notice in stop.notices:
                        yield self._record(Notice(notice))
                    if stop.blocked:  # a stop hook wants more work: its reason goes to the model
                        self._add_message({"role": "user", "content": f"[stop hook] {stop.message}"})
                        continue
                if not (self.verify and self._changed):
                    break  # nothing to check, or the model stopped without changing anything since
                async for event in self._verify():
                    yield self._record(event)
                if self._checks is None:
                    reason = "interrupted"
                    break
                failed = [r for r in self._checks if not r.ok]
                fix_until = iterations + self.verify_retries if fix_until is None else fix_until
                if not failed or iterations >= fix_until:
                    break
                self.stages.last_test_failed = True
                self._add_message({"role": "user", "content": failure_message(failed, fix_until - iterations)})
                yield self._record(Notice(f"Verification failed ({', '.join(f'`{r.command}`' for r in failed)}); "
                                          "the model is fixing it."))
                continue
            self._stuck = None
            self._end_turn = False
            for index, call in enumerate(completion.tool_calls):
                if self._interrupt.is_set() or self._stuck:
                    for skipped in completion.tool_calls[index:]:
                        self._add_tool_result(skipped, INTERRUPTED if self._interrupt.is_set() else NOT_RUN)
                    break
                async for event in self._run_tool(call):
                    yield event
            if self._interrupt.is_set():
                reason = "interrupted"
                break
            if self._end_turn:  # exit_plan_mode headless: the plan is the answer, nothing more to do
                break
            if self._stuck:
                reason, message = "stuck", self._stuck
                self._add_message({"role": "assistant", "content": f"[anvil stopped this turn] {message}"})
                break
        if reason == "done" and fix_until is not None:  # checks ran this turn: say where they ended
            edited = self._changed
            if edited:  # edits after the last check: check again so the report is about the end state
                async for event in self._verify():
                    yield self._record(event)
            if self._checks is None:
                reason = "interrupted"
            else:
                message = report(self._checks, changed=edited)
                yield self._record(Notice(message))
        if reason == "interrupted":
            message = INTERRUPTED
        self._told_mode = self.policy.mode
        self.ctx.checkpoints.finish_turn(self.turn)  # what anvil left on disk, to notice later outside changes
        yield self._record(TurnEnded(self.turn, reason, iterations, message))
        if self.session is not None:
            self.session.sync()

    async def _verify(self) -> AsyncIterator[Event]:
        """Run the configured checks into ``self._checks`` (None when interrupted), saying so first."""
        yield Notice("Verifying the changes: " + ", ".join(f"`{command}`" for command in self.verify))
        self._changed = False
        try:
            self._checks = await self._interrupt.until(run_checks(self.verify, self.ctx.root,
                                                                  self.verify_timeout))
        except Interrupted:
            self._checks = None

    async def _model_step(self) -> AsyncIterator[Any]:
        """Compact if the context is past the threshold, then call the model; an overflow compacts and retries once."""
        await self.context.counter.ready()
        if self.compactor.should_compact(self.context.measure(self.messages, self.tools.schemas())):
            async for event in self._compaction("threshold"):
                yield event
        for attempt in (1, 2):
            streamed = False
            try:
                async for item in self._interrupt.stream(self.model, self.messages, self.tools.schemas()):
                    streamed = streamed or isinstance(item, str)
                    yield item
                return
            except ModelError as error:
                if error.kind == "context_overflow" and attempt == 2:
                    error.message += (". anvil compacted the history and retried once. Run /compact with a "
                                      "focus to shrink it further, or start a new session and restate the task.")
                if error.kind != "context_overflow" or attempt == 2 or streamed:
                    raise
            async for event in self._compaction("overflow", force=True):
                yield event

    async def _compaction(self, reason: str, *, focus: str | None = None, force: bool = False) -> AsyncIterator[Event]:
        """One compaction, as events (not yet recorded); the session gets the compacted history."""
        before = self.context.measure(self.messages, self.tools.schemas())
        if self.hooks is not None:
            for notice in (await self.hooks.pre_compact("manual" if reason == "manual" else "auto", focus)).notices:
                yield Notice(notice)
        yield CompactionStarted(before, reason)
        self._spent.clear()
        try:
            outcome = await self.compactor.compact(self.messages, todos=render_todos(self.ctx.todos), focus=focus,
                                                   force_summary=force)
        except Interrupted:
            yield CompactionFinished(before, before, 0, False, "Interrupted: the history was left as it was.")
            raise
        for usage in self._spent:  # summary calls cost tokens too: the totals and the person see them
            yield usage
        if outcome.tier:
            self.messages[:] = outcome.messages
            self.context.reset()
            if self.session is not None:  # earlier records stay: the file keeps the full history for audit
                self.session.append({"t": "compaction", "messages": self.messages[1:], "tier": outcome.tier})
        after = self.context.measure(self.messages, self.tools.schemas())
        text = outcome.message
        yield CompactionFinished(before, after, outcome.tier, outcome.ok, text[:1].upper() + text[1:])
        yield self.context.event()
        stopped = self.compactor.record(outcome)
        if stopped:
            yield Notice(stopped)

    async def _summarise(self, request: list[dict[str, Any]]) -> str:
        """The compactor's model call: same model, no tools, interruptible; its text is not shown."""
        completion: Completion | None = None
        async for item in self._interrupt.stream(self.model, request, []):
            if isinstance(item, Completion):
                completion = item
        if completion is None:
            raise ModelError("The summary call ended without a reply.", kind="compaction")
        self._spent.append(self._usage_event(completion))
        return completion.text

    async def _run_tool(self, call: ToolCall) -> AsyncIterator[Event]:
        outcome: CallOutcome | None = None
        async for item in self.caller.run(call, lambda name, args, read_only: self.stages.stage(
                name, args, self.ctx.root, read_only)):
            if isinstance(item, CallOutcome):
                outcome = item
            else:
                yield item
        assert outcome is not None
        tool, result = outcome.tool, outcome.result
        self._add_tool_result(call, result.output)
        yield self._record(ToolResultEvent(call.id, call.name, result.ok, result.summary or
                                           ("ok" if result.ok else "error"), result.output, result.diff,
                                           round(time.monotonic() - outcome.started, 3)))
        yield self._record(self.context.after_message(self.messages))
        self._end_turn = self._end_turn or bool((result.data or {}).get("end_turn"))
        changed = _changed_files(tool, result)
        self._changed = self._changed or changed
        self.stages.observe(call.name, outcome.raw_args, result.ok, changed)
        if not self._interrupt.is_set():
            self._stuck = self.guard.observe(call.name, outcome.raw_args, result.ok, result.output, result.summary)

    # -- history and bookkeeping ---------------------------------------------------------------------

    def _on_completion(self, completion: Completion) -> AssistantMessage:
        message: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
        if completion.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in completion.tool_calls]
        self._add_message(message)
        return self._record(AssistantMessage(completion.text, tuple(completion.tool_calls)))

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


def _changed_files(tool: Tool | None, result: ToolResult) -> bool:
    """Whether a finished call changed the project's files (what makes a final verification worth running)."""
    if tool is None or not result.ok or (result.data or {}).get("changed") is False:
        return False
    return tool.name in FILE_TOOLS or (not tool.read_only and tool.name not in RUNNING_TOOLS)
