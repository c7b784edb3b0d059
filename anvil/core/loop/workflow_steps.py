"""The agent's steps that consult an attached workflow (:mod:`anvil.core.workflows.base`): one loop, asked at a few
points what the workflow wants.

A mixin of :class:`~anvil.core.loop.agent.Agent`, which owns the state named below and calls these steps: at the
start of a turn (:meth:`_workflow_begin`), before and after each model call (:meth:`_workflow_gate`,
:meth:`_workflow_usage`), after each tool call (:meth:`_workflow_result`), when the model answers without a tool
call (:meth:`_workflow_nudge`) and when the turn ends (:meth:`_workflow_turn_end`). A transition is applied here:
its events recorded, the conversation started afresh for a new phase (:meth:`_restart`), the turn ended.
Without a workflow every step does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anvil.core.context.meter import ContextMeter
from anvil.core.events import Event, Notice, ToolCall, UsageReport
from anvil.core.loop.guard import LoopGuard
from anvil.core.loop.history import History
from anvil.core.loop.interrupt import Interrupter
from anvil.core.loop.stages import StageTracker
from anvil.core.loop.tool_call import ToolCaller
from anvil.core.loop.turn import TurnState
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.session.store import Session
from anvil.core.tools.base import ToolContext, ToolResult
from anvil.core.tools.interaction import mode_reminder
from anvil.core.workflows.base import Transition, Workflow
from anvil.core.workflows.offered import OfferedTools

#: the key of the workflow's section of the system prompt
LAYER = "workflow"


class WorkflowSteps:
    workflow: Workflow | None
    offered: OfferedTools
    ctx: ToolContext
    session: Session | None
    messages: list[dict[str, Any]]
    history: History
    context: ContextMeter
    guard: LoopGuard
    stages: StageTracker
    caller: ToolCaller
    policy: ApprovalPolicy
    _interrupt: Interrupter
    set_system_section: Callable[[str, str], None]

    def attach_workflow(self, workflow: Workflow) -> None:
        """Work on ``workflow``'s job from the next turn on: its tools, its prompt layer, its hooks."""
        self.workflow = workflow
        workflow.attach(self.ctx, self.session.id if self.session is not None else "")
        self.offered.offer(workflow.offered_tools)
        self.caller.gate = workflow.check_call
        self._refresh_workflow_layer()
        self._note_workflow(workflow, active=True)

    def detach_workflow(self) -> None:
        """Back to a plain conversation: every tool, no prompt layer (the job ended)."""
        workflow, self.workflow = self.workflow, None
        self.offered.offer(None)
        self.caller.gate = None
        self.set_system_section(LAYER, "")
        if workflow is not None:
            self._note_workflow(workflow, active=False)

    def stop_workflow(self, reason: str) -> list[Event]:
        """The person ends the job (between turns): its events, recorded; the session goes on without it."""
        if self.workflow is None:
            return []
        events = [self.history.record(event) for event in self.workflow.stop(reason)]
        self.detach_workflow()
        return events

    def _note_workflow(self, workflow: Workflow, *, active: bool) -> None:
        """The session says which job it works on, so resuming it (``anvil -c``) attaches the job again."""
        if self.session is not None:
            self.session.append({"t": "workflow", **workflow.record(), "active": active})

    def _refresh_workflow_layer(self) -> None:
        """The workflow's prompt section as it is now (after a transition or a compaction)."""
        if self.workflow is not None:
            self.set_system_section(LAYER, self.workflow.system_layer())

    # -- the steps ---------------------------------------------------------------------------------------------------

    def _workflow_begin(self) -> list[Event]:
        return [self.history.record(event) for event in self.workflow.begin()] if self.workflow is not None else []

    def _workflow_gate(self, turn: TurnState) -> list[Event]:
        """Before a model call: the workflow may end the job (a budget reached), and with it the turn."""
        transition = self.workflow.before_model_call() if self.workflow is not None else None
        return self._apply(turn, transition) if transition is not None else []

    def _workflow_usage(self, usage: UsageReport) -> UsageReport:
        if self.workflow is not None:
            self.workflow.after_model_call(usage)
        return usage

    def _workflow_result(self, turn: TurnState, call: ToolCall, result: ToolResult) -> list[Event]:
        transition = self.workflow.on_tool_result(call, result) if self.workflow is not None else None
        return self._apply(turn, transition) if transition is not None else []

    def _workflow_nudge(self, text: str) -> bool:
        """The model answered without a tool call: True when the workflow sent it back to work."""
        if self.workflow is None or self._interrupt.is_set():
            return False
        nudge = self.workflow.on_reply(text)
        if nudge:
            self.history.add({"role": "user", "content": nudge})
        return bool(nudge)

    def _workflow_turn_end(self, turn: TurnState) -> list[Event]:
        if self.workflow is None:
            return []
        return [self.history.record(event) for event in self.workflow.on_turn_end(turn.reason)]

    # -- transitions -------------------------------------------------------------------------------------------------

    def _apply(self, turn: TurnState, transition: Transition) -> list[Event]:
        """A transition: its events; the tools chosen again (the workflow's state changed); a fresh conversation;
        the end of the turn, saying why when the job pauses (the person is needed: they must read it)."""
        events = [self.history.record(event) for event in transition.events]
        self.offered.refresh()
        if transition.reset and self.workflow is not None:
            events += self._restart(turn)
        if transition.end == "pause" and transition.message:
            events.append(self.history.record(Notice(transition.message)))
        if transition.end is not None:
            turn.end("done", transition.message)
            if transition.end == "finish":
                self.detach_workflow()
        return events

    def _restart(self, turn: TurnState) -> list[Event]:
        """A fresh conversation for the workflow's new phase: the system prompt rendered again, the phase's tools,
        its first message. What the model read in the old one is forgotten (files must be read again before they
        are overwritten); the loop guard and the stage words start over, and so does the phase's count of model
        calls against ``max_iterations``; commands run from the project root again."""
        assert self.workflow is not None
        self.offered.refresh()
        self._refresh_workflow_layer()
        self.messages[:] = [self.messages[0], {"role": "user", "content": self.workflow.brief()}]
        reminder = mode_reminder(self.policy.mode)
        if reminder is not None:
            self.messages.append({"role": "user", "content": reminder})
        if self.session is not None:  # resuming the session resumes the new phase's conversation
            self.session.append({"t": "reset", "messages": self.messages[1:]})
        self.ctx.new_conversation()
        self.guard.reset()
        self.stages.reset()
        turn.restarted, turn.images, turn.stuck, turn.phase_start = True, [], None, turn.iterations
        self.context.reset()
        self.context.measure(self.messages, self.offered.schemas())
        return [self.history.record(self.context.event())]
