"""Turning engine events into transcript entries, status changes and approval prompts.

One :class:`TurnRenderer` per app. It runs on the UI side (inside the agent worker, which is an async
worker on the app's loop, never a thread), so it may touch widgets directly.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from anvil.core import events as ev
from anvil.core.subagents.task_tool import SubagentEvent
from anvil.tui.transcript import AssistantEntry, ToolEntry, UserEntry

if TYPE_CHECKING:
    from anvil.tui.app import AnvilApp


class TurnRenderer:
    def __init__(self, app: AnvilApp) -> None:
        self.app = app
        self.assistant: AssistantEntry | None = None
        #: messages typed during a turn, shown as queued until the model has seen them
        self.queued: list[UserEntry] = []
        # One modal at a time: a second request waits here until the first is answered.
        self.approval_lock = asyncio.Lock()
        self.task_call: str | None = None  # the running sub-agent's task call: its steps nest under it

    async def end_assistant(self, text: str | None = None) -> None:
        if self.assistant is not None:
            entry, self.assistant = self.assistant, None
            await entry.finish(text)

    def mark_queued_sent(self) -> None:
        for entry in self.queued:
            entry.mark_sent()
        self.queued.clear()

    async def dispatch(self, event: ev.Event) -> None:
        transcript, status = self.app.transcript, self.app.status
        if isinstance(event, ev.TextDelta):
            if self.assistant is None:
                self._steering_seen()
                self.assistant = AssistantEntry()
                await transcript.append(self.assistant)
                status.update_state(phase="Writing…")
            await self.assistant.write(event.text)
        elif isinstance(event, ev.AssistantMessage):
            if self.assistant is None and event.text.strip():
                self.assistant = AssistantEntry()
                await transcript.append(self.assistant)
            await self.end_assistant(event.text if event.text.strip() else None)
        elif isinstance(event, ev.ToolCallStarted):
            await self.end_assistant()
            self._steering_seen()
            transcript.add(ToolEntry(event))
            status.update_state(phase=event.phase)
            if event.name == "task":
                self.task_call = event.call_id
        elif isinstance(event, SubagentEvent):
            self.subagent(event)
        elif isinstance(event, ev.ApprovalRequested):
            await self.ask(event)
        elif isinstance(event, (ev.QuestionAsked, ev.PlanProposed)):
            await self.question(event)
        elif isinstance(event, ev.ToolResultEvent):
            tool = transcript.tools.get(event.call_id)
            if tool is not None:
                tool.finish(event)
            runtime = self.app.runtime
            # A tool may change the approval mode (exit_plan_mode leaves plan mode): keep the bar true.
            status.update_state(phase="Thinking…", mode=runtime.agent.policy.mode if runtime else status.state.mode)
        elif isinstance(event, ev.TodosChanged):
            self.app.show_todos(event.todos)
        elif isinstance(event, ev.ContextUsage):
            status.update_state(used=event.used, window=event.window, estimated=event.estimated)
        elif isinstance(event, ev.UsageReport):
            status.update_state(cost=event.total_cost)
        else:
            self.line(event)

    def line(self, event: ev.Event) -> None:
        """The events shown as one line: compaction, retries, errors, notices, the end of a turn."""
        add, status = self.app.transcript.add_line, self.app.status
        if isinstance(event, ev.CompactionStarted):
            add("compaction", f"Compacting the conversation ({event.tokens_before:,} tokens, {event.reason})…")
            status.update_state(phase="Compacting…")
        elif isinstance(event, ev.CompactionFinished):
            if event.ok:
                how = {1: " (old tool results shortened)", 2: " (older messages summarised)"}.get(event.tier, "")
                note = f" {event.message.rstrip('.')}." if event.message else ""
                add("compaction", f"Compacted: {event.tokens_before:,} → {event.tokens_after:,} tokens{how}.{note}")
                status.update_state(used=event.tokens_after)
            else:
                add("error", f"Compaction failed: {event.message or 'no details'}")
        elif isinstance(event, ev.Retrying):
            add("retry", f"{event.message}; retrying in {event.delay:.1f}s "
                         f"(attempt {event.attempt + 1} of {event.max_attempts})")
        elif isinstance(event, ev.ErrorEvent):
            add("error", event.message)
        elif isinstance(event, ev.Notice):
            add("notice", event.message)
        elif isinstance(event, ev.ApprovalAnswered):
            tool = self.app.transcript.tools.get(event.call_id)
            if tool is not None and event.by != "user":
                tool.detail = f"{'allowed' if event.allow else 'denied'} by {event.by}"
        elif isinstance(event, ev.TurnEnded):
            if event.reason == "interrupted":
                add("interrupted", "Interrupted. The model keeps what it did so far; type to continue.")
            elif event.reason in {"max_iterations", "stuck"} and event.message:
                add("error", event.message)

    def subagent(self, event: SubagentEvent) -> None:
        """A sub-agent's step, as a nested line under its task block (its usage is not the parent's)."""
        tool = self.app.transcript.tools.get(self.task_call or "")
        inner = event.inner
        if tool is None:
            return
        if isinstance(inner, ev.ToolCallStarted):
            tool.add_nested(inner.phase)
            self.app.status.update_state(phase=f"Sub-agent: {inner.phase}")
        elif isinstance(inner, ev.ToolResultEvent) and not inner.ok:
            tool.add_nested(f"✗ {inner.name}: {inner.summary}")
        elif isinstance(inner, ev.AssistantMessage) and inner.text.strip():
            tool.add_nested(inner.text.strip().splitlines()[0][:160])

    def _steering_seen(self) -> None:
        """The model has answered again: queued messages joined the history before that call."""
        agent = self.app.runtime.agent if self.app.runtime else None
        if self.queued and (agent is None or not agent.pending_steering):
            self.mark_queued_sent()

    async def ask(self, event: ev.ApprovalRequested) -> None:
        """Show the approval modal and pass the decision on; a broken modal denies, it never hangs a turn."""
        app = self.app
        tool = app.transcript.tools.get(event.call_id)
        if tool is not None:
            tool.set_waiting()
        app.status.update_state(phase=f"Waiting for approval: {event.title}")
        decision: ev.ApprovalDecision | None
        async with self.approval_lock:
            try:
                from anvil.tui.approval import ApprovalScreen

                decision = await app.push_screen_wait(ApprovalScreen(event, app.root))
            except Exception as exc:
                app.transcript.add_line("error", f"The approval prompt failed ({exc}); the call was denied.")
                decision = ev.ApprovalDecision(False, "The approval prompt failed.", by="error")
        if decision is None:
            decision = ev.ApprovalDecision(False)
        event.answer(decision)
        if tool is not None:
            tool.detail = "allowed" if decision.allow else "denied"
        if decision.allow and decision.remember and decision.pattern:
            app.transcript.add_line("notice", f"Always allowing `{decision.pattern}` ({decision.remember}).")
        elif not decision.allow and decision.message:
            app.transcript.add_line("notice", f"Denied, with your message to the model: {decision.message}")
        app.status.update_state(phase=event.title if decision.allow else "Thinking…")

    async def question(self, event: ev.QuestionAsked | ev.PlanProposed) -> None:
        """ask_user and exit_plan_mode: a modal, then the answer goes back to the waiting tool."""
        from anvil.tui.questions import PlanScreen, QuestionScreen

        app = self.app
        async with self.approval_lock:
            try:
                if isinstance(event, ev.QuestionAsked):
                    app.status.update_state(phase="Waiting for your answer")
                    text = await app.push_screen_wait(QuestionScreen(event))
                    event.answer(text or "")
                    app.transcript.add_line("notice", f"You answered: {text}" if text else "No answer given.")
                else:
                    app.status.update_state(phase="Waiting for your review of the plan")
                    decision = await app.push_screen_wait(PlanScreen(event))
                    event.answer(decision)
                    app.transcript.add_line("notice", "Plan approved." if decision.approved else
                                            f"Plan rejected. {decision.feedback}".strip())
            except Exception as exc:  # never leave the tool waiting forever
                app.transcript.add_line("error", f"The question could not be shown ({exc}).")
                if isinstance(event, ev.QuestionAsked):
                    event.answer("")
                else:
                    event.answer(ev.PlanDecision(False, feedback="The plan could not be shown to the person."))
        if self.app.runtime is not None:
            app.status.update_state(mode=self.app.runtime.agent.policy.mode, phase="Thinking…")
