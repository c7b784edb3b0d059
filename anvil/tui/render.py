"""Turning engine events into transcript entries, status changes and approval prompts.

One :class:`TurnRenderer` per app. It runs on the UI side (inside the agent worker, which is an async
worker on the app's loop, never a thread), so it may touch widgets directly. The words of one-line entries
come from :mod:`anvil.frontend.lines`, shared with the other front ends.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from anvil.core import events as ev
from anvil.core import job_events as jev
from anvil.core.subagents.task_tool import SubagentEvent
from anvil.frontend.lines import answered_text, decision_text, describe, phase_label, phase_started_text, progress_text
from anvil.tui.approval import ApprovalScreen
from anvil.tui.phases import PhaseDivider
from anvil.tui.questions import PlanScreen, QuestionScreen
from anvil.tui.status import StatusBar
from anvil.tui.transcript import AssistantEntry, ThinkingEntry, ToolEntry, Transcript, UserEntry

if TYPE_CHECKING:
    from textual.screen import Screen

    from anvil.facade import SessionFacade


class RenderHost(Protocol):
    """What rendering needs of the app: its transcript and status bar, the session, and modals."""

    root: Path
    session: SessionFacade | None

    @property
    def transcript(self) -> Transcript: ...

    @property
    def status(self) -> StatusBar: ...

    def show_todos(self, todos: tuple[ev.TodoItem, ...]) -> None: ...

    async def push_screen_wait(self, screen: Screen[Any]) -> Any: ...


class TurnRenderer:
    def __init__(self, host: RenderHost) -> None:
        self.host = host
        self.assistant: AssistantEntry | None = None
        self.thinking: ThinkingEntry | None = None  # the reasoning streaming now
        #: messages typed during a turn, shown as queued until the model has seen them
        self.queued: list[UserEntry] = []
        # One modal at a time: a second request waits here until the first is answered.
        self.approval_lock = asyncio.Lock()

    async def end_assistant(self, text: str | None = None) -> None:
        self.end_thinking()
        if self.assistant is not None:
            entry, self.assistant = self.assistant, None
            await entry.finish(text)

    def end_thinking(self) -> None:
        if self.thinking is not None:
            self.thinking.finish()
            self.thinking = None

    def mark_queued_sent(self) -> None:
        for entry in self.queued:
            entry.mark_sent()
        self.queued.clear()

    async def dispatch(self, event: ev.Event) -> None:
        status = self.host.status
        match event:
            case ev.TextDelta(text=text):
                await self._delta(text)
            case ev.ReasoningDelta(text=text):
                await self._reasoning(text)
            case ev.AssistantMessage(text=text):
                if self.assistant is None and text.strip():
                    self.assistant = AssistantEntry()
                    await self.host.transcript.append(self.assistant)
                await self.end_assistant(text if text.strip() else None)
            case ev.ToolCallStarted():
                await self._tool_started(event)
            case SubagentEvent():
                self.subagent(event)
            case ev.ApprovalRequested():
                await self.ask(event)
            case ev.QuestionAsked() | ev.PlanProposed():
                await self.question(event)
            case ev.ToolResultEvent():
                self._tool_finished(event)
            case ev.ToolProgress():
                tool = self.host.transcript.tools.get(event.call_id)
                status.update_state(phase=progress_text(event, tool.phase if tool is not None else None))
            case ev.ApprovalAnswered():
                tool = self.host.transcript.tools.get(event.call_id)
                text = answered_text(event)
                if tool is not None and text:
                    tool.detail = text
            case ev.TodosChanged(todos=todos):
                self.host.show_todos(todos)
            case jev.PhaseStarted():  # a workflow job's new phase: a divider, the phase in the status bar
                await self.end_assistant()
                label = phase_label(event.phase, event.kind)
                self.host.transcript.add(PhaseDivider(label[:1].upper() + label[1:], phase_started_text(event)))
                status.update_state(job=label)
                self.host.show_todos(event.todos)
            case jev.JobFinished():
                self.line(event)
                status.update_state(job="")
                self.host.show_todos(self.host.session.todos if self.host.session is not None else ())
            case ev.ContextUsage(used=used, window=window, estimated=estimated):
                status.update_state(used=used, window=window, estimated=estimated)
            case ev.UsageReport(total_cost=cost):
                status.update_state(cost=cost)
            case ev.Notice():  # a notice during a reply (a cut-off, a retry) ends it: what follows is new
                await self.end_assistant()
                self.line(event)
            case _:
                self.line(event)

    async def _reasoning(self, text: str) -> None:
        if self.thinking is None:
            self._steering_seen()
            await self.end_assistant()
            self.thinking = ThinkingEntry(streaming=True)
            await self.host.transcript.append(self.thinking)
            self.host.status.update_state(phase="Thinking…")
        self.thinking.write(text)

    async def _delta(self, text: str) -> None:
        self.end_thinking()
        if self.assistant is None:
            self._steering_seen()
            self.assistant = AssistantEntry()
            await self.host.transcript.append(self.assistant)
            self.host.status.update_state(phase="Writing…")
        await self.assistant.write(text)

    async def _tool_started(self, event: ev.ToolCallStarted) -> None:
        await self.end_assistant()
        self._steering_seen()
        self.host.transcript.add(ToolEntry(event))
        self.host.status.update_state(phase=event.phase)

    def _tool_finished(self, event: ev.ToolResultEvent) -> None:
        tool = self.host.transcript.tools.get(event.call_id)
        if tool is not None:
            tool.finish(event)
        # A tool may change the approval mode (exit_plan_mode leaves plan mode): keep the bar true.
        self.host.status.update_state(phase="Thinking…", **self._mode())

    def _mode(self) -> dict[str, Any]:
        session = self.host.session
        return {"mode": session.mode} if session is not None else {}

    def line(self, event: ev.Event) -> None:
        """The events shown as one line: compaction, retries, errors, notices, the end of a turn."""
        line = describe(event)
        if line is None:
            return
        self.host.transcript.add_line(line.kind, line.text)
        match event:  # what the line also changes in the status bar
            case ev.CompactionStarted():
                self.host.status.update_state(phase="Compacting…")
            case ev.CompactionFinished(ok=True, tokens_after=after):
                self.host.status.update_state(used=after)
            case jev.JobStateChanged():  # the TDD job's states: the state in the status bar
                job = self.host.session.job if self.host.session is not None else None
                self.host.status.update_state(job=phase_label(job.phase, job.kind) if job is not None else "")

    def subagent(self, event: SubagentEvent) -> None:
        """A sub-agent's step, as a nested line under its task block (its usage is not the parent's)."""
        tool = self.host.transcript.tools.get(event.call_id)
        if tool is None:
            return
        match event.inner:
            case ev.ToolCallStarted(phase=phase):
                tool.add_nested(phase)
                self.host.status.update_state(phase=f"Sub-agent: {phase}")
            case ev.ToolResultEvent(ok=False, name=name, summary=summary):
                tool.add_nested(f"✗ {name}: {summary}")
            case ev.AssistantMessage(text=text) if text.strip():
                tool.add_nested(text.strip().splitlines()[0][:160])

    def _steering_seen(self) -> None:
        """The model has answered again: queued messages joined the history before that call."""
        session = self.host.session
        if self.queued and (session is None or not session.pending_steering):
            self.mark_queued_sent()

    async def ask(self, event: ev.ApprovalRequested) -> None:
        """Show the approval modal and pass the decision on; a broken modal denies, it never hangs a turn."""
        host = self.host
        tool = host.transcript.tools.get(event.call_id)
        if tool is not None:
            tool.set_waiting()
        host.status.update_state(phase=f"Waiting for approval: {event.title}")
        decision: ev.ApprovalDecision | None
        async with self.approval_lock:
            try:
                decision = await host.push_screen_wait(ApprovalScreen(event, host.root))
            except Exception as exc:
                host.transcript.add_line("error", f"The approval prompt failed ({exc}); the call was denied.")
                decision = ev.ApprovalDecision(False, "The approval prompt failed.", by="error")
        if decision is None:
            decision = ev.ApprovalDecision(False)
        event.answer(decision)
        if tool is not None:
            tool.detail = "allowed" if decision.allow else "denied"
        if decision.remember or decision.message:  # the rule and where it is kept; the message sent
            text = decision_text(decision, event, host.root)
            host.transcript.add_line("notice", text[:1].upper() + text[1:] + ".")
        host.status.update_state(phase=event.title if decision.allow else "Thinking…")

    async def question(self, event: ev.QuestionAsked | ev.PlanProposed) -> None:
        """ask_user and exit_plan_mode: a modal, then the answer goes back to the waiting tool."""
        host = self.host
        async with self.approval_lock:
            try:
                if isinstance(event, ev.QuestionAsked):
                    host.status.update_state(phase="Waiting for your answer")
                    text = await host.push_screen_wait(QuestionScreen(event))
                    event.answer(text or "")
                    host.transcript.add_line("notice", f"You answered: {text}" if text else "No answer given.")
                else:
                    host.status.update_state(phase="Waiting for your review of the plan")
                    decision = await host.push_screen_wait(PlanScreen(event))
                    event.answer(decision)
                    host.transcript.add_line("notice", "Plan approved." if decision.approved else
                                             f"Plan rejected. {decision.feedback}".strip())
            except Exception as exc:  # never leave the tool waiting forever
                host.transcript.add_line("error", f"The question could not be shown ({exc}).")
                if isinstance(event, ev.QuestionAsked):
                    event.answer("")
                else:
                    event.answer(ev.PlanDecision(False, feedback="The plan could not be shown to the person."))
        host.status.update_state(phase="Thinking…", **self._mode())
