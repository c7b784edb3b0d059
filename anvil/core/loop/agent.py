"""The agent loop: a flat list of chat messages and a ReAct cycle over it.

``run_turn(text)`` appends the person's message, then repeats: call the model with the tools, stream
its text, run its tool calls in order and append their results, until it answers without a tool call,
reaches ``max_iterations``, fails, is stuck, or is interrupted. Everything it does comes out as events.
Its steps (``_model_step``, ``_tool_calls``, ``_after_reply``, ``_final_check``) share a :class:`TurnState`.

Around that cycle, each in its own module: the context meter and compaction before every model call
(``context/``, run by ``compacting.py``; a context-overflow error compacts and retries the call once), replies
cut off at the output limit (``cutoff.py``), one tool call from arguments to result (``tool_call.py``), loop
guards after every tool result (``guard.py``; in task runs also ``escalation.py``, whose thresholds end a turn
``blocked`` where nobody can answer), stage words for front ends (``stages.py``), and the project's checks when a
turn that changed files ends, automatic fixers first (``verifying.py``).

Invariant kept on every exit path: each assistant tool call in the history has a tool result, so the
history is always valid to send again (an interrupted call gets "interrupted by the user").
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from anvil.core.context.compaction import Compactor
from anvil.core.context.meter import ContextMeter, TokenCounter
from anvil.core.events import (
    ErrorEvent,
    Event,
    Notice,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolResultEvent,
    TurnEnded,
    TurnStarted,
    UsageReport,
)
from anvil.core.hooks.runner import HookRunner
from anvil.core.loop import cutoff
from anvil.core.loop.autofix import Fixers
from anvil.core.loop.compacting import Compacting
from anvil.core.loop.escalation import Blocking, Escalation
from anvil.core.loop.failure import end_broken_turn
from anvil.core.loop.guard import LoopGuard
from anvil.core.loop.history import DROPPED_MARK, History
from anvil.core.loop.images import image_message, image_note
from anvil.core.loop.interrupt import INTERRUPTED, Interrupted, Interrupter
from anvil.core.loop.stages import StageTracker
from anvil.core.loop.tool_call import ToolCaller
from anvil.core.loop.turn import TurnState, changed_files
from anvil.core.loop.turn_hooks import prompt_hooks, stop_hooks
from anvil.core.loop.usage import UsageTotals
from anvil.core.loop.verifying import VerificationRecord, Verifying
from anvil.core.loop.workflow_steps import WorkflowSteps
from anvil.core.model.errors import ModelError
from anvil.core.model.litellm_model import LiteLLMModel
from anvil.core.model.protocol import Completion, Model
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.session.store import Session
from anvil.core.session.undo import rewind_history, rewind_points
from anvil.core.tools.base import ToolContext, ToolRegistry
from anvil.core.tools.interaction import mode_reminder
from anvil.core.workflows.offered import OfferedTools

NOT_RUN = "Not run: anvil stopped the turn before this call (see the message that follows)."


class Agent(WorkflowSteps, Verifying, Blocking, Compacting):
    def __init__(self, model: Model, tools: ToolRegistry, ctx: ToolContext, *, system_prompt: str,
                 policy: ApprovalPolicy | None = None, session: Session | None = None,
                 max_iterations: int = 50, history: list[dict[str, Any]] | None = None,
                 compact_threshold: float | bool = 0.85, verify: list[str] | None = None,
                 verify_retries: int = 5, verify_timeout: float = 600.0, hooks: HookRunner | None = None,
                 interactive: bool = True, mask_secrets_for_model: bool = False,
                 autofix: Fixers | None = None) -> None:
        self.model = model
        self.tools = tools
        self.offered = OfferedTools(tools)  # what the model is offered: every tool, or an attached workflow's choice
        self.workflow = None
        self.ctx = ctx
        self.policy = policy or ApprovalPolicy()
        self.session = session
        self.max_iterations = max_iterations
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}, *(history or [])]
        self._system_prompt = system_prompt
        self._system_sections: dict[str, str] = {}
        self.history = History(self.messages, session)
        self.turn = 0
        self.usage = UsageTotals()
        self.totals = self.usage.totals
        # litellm's tokenizer only for models litellm serves; the scripted model is counted by estimate
        counter = TokenCounter(model.name, use_litellm=isinstance(model, LiteLLMModel))
        self.context = ContextMeter(model.context_window, counter)
        self.compactor = Compactor(self.context, self._summarise, compact_threshold)
        self.guard = LoopGuard()
        self.stages = StageTracker()
        self.verify, self.verify_retries, self.verify_timeout = list(verify or []), verify_retries, verify_timeout
        self.autofix = autofix  # fixers tried on failed checks before the model (None: none)
        self.verification = VerificationRecord()  # the last turn's
        self.escalation: Escalation | None = None  # a task run's thresholds (set by the task run)
        self._told_mode: str | None = None  # the approval mode the model was last told about
        self._spent: list[UsageReport] = []  # usage of summary calls, reported after the compaction
        self._interrupt = Interrupter()
        self._steering: list[str] = []
        self.hooks = hooks
        #: known secrets are always masked in what anvil writes; with this, in what the model reads too
        self.mask_secrets_for_model = mask_secrets_for_model
        self.caller = ToolCaller(self.offered, ctx, self.policy, self._interrupt, self.history.record, hooks)
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

    def set_system_section(self, key: str, text: str) -> None:
        """Text after the system prompt, by source (a session_start hook's context, MCP servers' instructions);
        empty text removes it. The prompt changes only when the text does, so the cached prefix stays."""
        self._system_sections[key] = text
        content = "\n\n".join([self._system_prompt, *(t for t in self._system_sections.values() if t)])
        if self.messages[0]["content"] != content:
            self.messages[0] = {"role": "system", "content": content}

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

    async def run_turn(self, text: str) -> AsyncIterator[Event]:
        """One turn's events, always ending with ``turn_ended``: a bug anywhere in it (a tool's preview, a hook,
        the policy) becomes an ``error`` event with one line, and the session stays valid to resume."""
        self._interrupt.clear()
        turn = TurnState(text)
        if self.session is not None:
            self.session.begin()  # a new session becomes a file with its first turn
        try:
            async for event in self._turn(turn):
                yield event
                for notice in self.history.storage_notices(self.ctx.checkpoints, self.ctx.troubles):
                    yield notice
        except Exception as exc:  # the turn's boundary: nothing may escape to the front end
            for event in end_broken_turn(self.history, self.ctx, turn, exc):
                yield event
        if self.session is not None:
            self.session.sync()
        for notice in self.history.storage_notices(self.ctx.checkpoints, self.ctx.troubles):
            yield notice

    async def _turn(self, turn: TurnState) -> AsyncIterator[Event]:
        async for event in self._submit(turn):
            yield event
        if turn.over:  # a hook refused the prompt: nothing reaches the model or the history
            yield self.history.record(TurnEnded(self.turn, turn.reason, 0, turn.message))
            return
        yield self._start(turn)
        for event in self._workflow_begin():
            yield event
        while self._may_call_model(turn):
            async for event in self._model_step(turn):
                yield event
            if turn.over:
                break
            assert turn.completion is not None
            if turn.completion.tool_calls:
                step = self._tool_calls(turn, turn.completion.tool_calls)
            elif turn.cut_off:
                continue  # the model was asked to go on where its reply stopped
            else:
                step = self._after_reply(turn, turn.completion)
            async for event in step:
                yield event
        async for event in self._final_check(turn):
            yield event
        for event in self._workflow_turn_end(turn):
            yield event
        yield self._finish(turn)

    # -- the steps of a turn -------------------------------------------------------------------------

    async def _submit(self, turn: TurnState) -> AsyncIterator[Event]:
        """``user_prompt_submit`` hooks: they may add context to the prompt, or refuse it (the turn is over)."""
        for event in await prompt_hooks(self.hooks, turn) if self.hooks is not None else []:
            yield event

    def _start(self, turn: TurnState) -> TurnStarted:
        """The prompt joins the history, under a new turn number (the checkpoints file changes under it)."""
        self.turn += 1
        turn.number = self.turn
        self.ctx.checkpoints.begin_turn(self.turn)
        self.history.add({"role": "user", "content": turn.prompt})
        started = self.history.record(TurnStarted(self.turn, turn.prompt, self.session.id if self.session else ""))
        reminder = mode_reminder(self.policy.mode, self._told_mode)
        if reminder is not None:  # the model cannot see the mode: say so, apart from the person's words
            self.history.add({"role": "user", "content": reminder})
        self.guard.reset()
        self.stages.reset()
        self.verification = VerificationRecord()
        if self.escalation is not None:
            self.escalation.reset()
        return started

    def _may_call_model(self, turn: TurnState) -> bool:
        if turn.over:
            return False
        if turn.fix_until is not None:  # after failed checks: only the calls allowed for fixing them
            return turn.iterations < turn.fix_until  # used up: the final check reports the state
        if turn.iterations - turn.phase_start >= self.max_iterations:
            turn.end("max_iterations", f"Stopped after {turn.iterations} model calls (max_iterations).")
            return False
        return True

    async def _model_step(self, turn: TurnState) -> AsyncIterator[Event]:
        """Steering messages join the history, the context is compacted when past the threshold, then one model
        call, streamed; its reply goes to ``turn.completion``. A failure, an interrupt or a workflow's budget ends the
        turn."""
        for event in self._workflow_gate(turn):
            yield event
        if turn.over:
            return
        turn.iterations += 1
        for steer in self._steering:
            self.history.add({"role": "user", "content": steer})
        self._steering.clear()
        turn.completion, parts = None, []
        try:
            await self.context.counter.ready()
            if self.compactor.should_compact(self.context.measure(self.messages, self.offered.schemas())):
                async for event in self._compaction("threshold"):
                    yield self.history.record(event)
            async for event in self._call_model(turn, parts):
                yield event
            if cutoff.is_cut_off(turn.completion) and turn.completion and turn.completion.tool_calls:
                async for event in self._retry_larger(turn, parts):
                    yield event
        except ModelError as error:
            if error.kind == "dropped" and parts:  # text was shown: kept, and the person may have it go on
                self.history.add_partial(parts, DROPPED_MARK)
                turn.end("dropped", f"{error.message}; the text so far is kept.")
                return
            self.history.add_partial(parts)
            yield self.history.record(ErrorEvent(error.message, error.retryable, error.kind))
            turn.end("error", error.message)
            return
        except Interrupted:
            self.history.add_partial(parts)
            turn.end("interrupted")
            return
        completion = turn.completion
        assert completion is not None, "a model stream ended without a completion"
        cut = cutoff.settle(completion, turn)
        yield self.history.add_reply(completion, placeholder=cut.placeholder, continues=cut.continues)
        yield self.history.record(self._workflow_usage(self.usage.add(completion)))
        yield self.history.record(self.context.after_response(completion.usage, self.messages))
        if cut.note:
            self.history.add({"role": "user", "content": cut.note})
        if cut.notice:
            yield self.history.record(Notice(cut.notice))

    async def _retry_larger(self, turn: TurnState, parts: list[str]) -> AsyncIterator[Event]:
        """A reply cut off in a tool call: retried once with a larger output limit, when the model has one."""
        cut = turn.completion
        assert cut is not None
        limit = self.model.larger_output_limit(cut)
        if limit is None:
            return
        yield self.history.record(self.usage.add(cut))  # the cut reply's tokens were spent all the same
        yield self.history.record(Notice(cutoff.retry_notice(limit)))
        parts.clear()
        async for event in self._call_model(turn, parts, max_output_tokens=limit):
            yield event

    async def _call_model(self, turn: TurnState, parts: list[str],
                          max_output_tokens: int | None = None) -> AsyncIterator[Event]:
        """Stream the model's reply (text into ``parts``); a context overflow compacts and retries once."""
        options = {"max_output_tokens": max_output_tokens} if max_output_tokens else {}
        for attempt in (1, 2):
            try:
                async for item in self._interrupt.stream(self.model, self.messages, self.offered.schemas(), **options):
                    match item:
                        case str():
                            parts.append(item)
                            yield TextDelta(item)
                        case ReasoningDelta():
                            yield item  # shown as it streams; the whole reasoning is recorded with the reply
                        case Completion():
                            turn.completion = item
                        case _:
                            yield self.history.record(item)
                return
            except ModelError as error:
                if error.kind == "context_overflow" and attempt == 2:
                    error.message += (". anvil compacted the history and retried once. Run /compact with a "
                                      "focus to shrink it further, or start a new session and restate the task.")
                if error.kind != "context_overflow" or attempt == 2 or parts:
                    raise
            async for event in self._compaction("overflow", force=True):
                yield self.history.record(event)

    async def _tool_calls(self, turn: TurnState, calls: list[ToolCall]) -> AsyncIterator[Event]:
        """The reply's tool calls, in order; an interrupt or a loop guard skips the rest (each still gets a
        result, so the history stays valid) and ends the turn."""
        turn.stuck, turn.end_requested = None, False
        for index, call in enumerate(calls):
            if turn.restarted:  # a workflow began a new phase: this reply and its other calls left with the old one
                break
            if self._interrupt.is_set() or turn.stuck or turn.hook_stop is not None or turn.over \
                    or turn.blocker is not None:
                for skipped in calls[index:]:
                    self.history.add_tool_result(skipped, INTERRUPTED if self._interrupt.is_set() else NOT_RUN)
                break
            async for event in self._run_tool(turn, call):
                yield event
        turn.restarted = False
        if turn.images:  # after every call's result: tool results must follow their reply directly
            self.history.add(image_message(turn.images))
            turn.images = []
        self._stuck_blocks(turn)
        if self._interrupt.is_set():
            turn.end("interrupted")
        elif turn.over:  # a workflow ended the job, and the turn with it
            return
        elif turn.hook_stop is not None:  # a hook answered continue: false
            turn.end("done", f"A hook ended the turn: {turn.hook_stop}")
        elif turn.blocker is not None:  # nobody can answer here: the task waits for the person
            yield self._block(turn)
        elif turn.end_requested:  # exit_plan_mode headless: the plan is the answer, nothing more to do
            turn.end()
        elif turn.stuck:
            turn.end("stuck", turn.stuck)
            self.history.add({"role": "assistant", "content": f"[anvil stopped this turn] {turn.stuck}"})

    async def _run_tool(self, turn: TurnState, call: ToolCall) -> AsyncIterator[Event]:
        outcome = self.caller.prepare(call)
        async for event in self.caller.run(outcome, lambda prepared: self.stages.stage(prepared, self.ctx.root)):
            yield event
        result = outcome.result
        if result.images:
            shown = self.model.accepts_images()
            result.output += image_note(len(result.images), shown)
            turn.images += [(call.name, image) for image in result.images] if shown else []
        if self.mask_secrets_for_model:
            result.output = self.ctx.secrets.mask(result.output)
        self.history.add_tool_result(call, result.output)
        yield self.history.record(ToolResultEvent(call.id, call.name, result.ok, result.summary or
                                           ("ok" if result.ok else "error"), result.output, result.diff,
                                           round(time.monotonic() - outcome.started, 3),
                                           outcome.tool.kind if outcome.tool else "other"))
        yield self.history.record(self.context.after_message(self.messages))
        turn.end_requested = turn.end_requested or result.end_turn
        if outcome.stop_reason is not None and turn.hook_stop is None:
            turn.hook_stop = outcome.stop_reason
        changed = changed_files(outcome.tool, result)
        turn.changed = turn.changed or changed
        self.stages.observe(outcome.prepared, result.ok, changed)
        self._observe_call(turn, call, outcome, changed)
        for event in self._workflow_result(turn, call, result):
            yield event

    async def _after_reply(self, turn: TurnState, completion: Completion) -> AsyncIterator[Event]:
        """The model answered without tool calls. Stop hooks may send it back to work; a turn that changed files
        is verified, and failed checks go back to the model for a bounded number of extra calls."""
        if self.hooks is not None and not self._interrupt.is_set():
            events, go_on = await stop_hooks(self.hooks, completion.text)
            for event in events:
                yield self.history.record(event)
            if go_on is not None:  # a stop hook wants more work: its reason goes to the model
                self.history.add({"role": "user", "content": f"[stop hook] {go_on}"})
                return
        if self._workflow_nudge(completion.text):  # a workflow's job has work left: back to it
            return
        if self._stated_blocker(turn, completion):  # it cannot go on without the person, and nobody can answer
            yield self._block(turn)
            return
        async for event in self._check_changes(turn):
            yield event

    def _finish(self, turn: TurnState) -> TurnEnded:
        if turn.reason == "interrupted":
            turn.message = INTERRUPTED
        self._told_mode = self.policy.mode
        self.ctx.checkpoints.finish_turn(turn.number)  # what anvil left on disk, to notice later outside changes
        return self.history.record(TurnEnded(turn.number, turn.reason, turn.iterations, turn.message))
