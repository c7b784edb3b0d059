"""One run of a task on an agent: set the agent up for it, watch the turn, and record how it ended.

:meth:`TaskRun.prepare` puts the task layer into the system prompt, takes the task's ``verify`` commands and
``max_iterations``, turns on the escalation thresholds and, where nobody can answer (``blocking``: a headless
run), makes ask_user record a blocker instead of telling the model to guess. It returns the first message.
:meth:`TaskRun.observe` sees every event of the turn (the intent preview, a blocker) and :meth:`TaskRun.finish`
writes the task's state: ``done``, ``failed``, ``blocked`` with its question, or ``interrupted``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from anvil.core.events import AssistantMessage, Event, IntentPreview, ToolResultEvent, TurnEnded
from anvil.core.job_events import BlockerRaised
from anvil.core.loop.agent import Agent
from anvil.core.loop.escalation import Escalation
from anvil.core.tasks.layer import PRD_BUDGET, preview_reason, task_layer
from anvil.core.tasks.state import BlockerRecord, TaskState, TaskStore
from anvil.core.tasks.taskfile import TaskSpec
from anvil.core.tools.interaction import questions_block

_EDIT_KINDS = {"edit", "delete", "move"}


def supported_workflows() -> tuple[str, ...]:
    """The workflows a task run can use: none (one conversation), and every workflow on the seam."""
    from anvil.core.workflows.jobs import WORKFLOWS

    return ("none", *WORKFLOWS)


def workflow_problem(spec: TaskSpec, workflow: str | None = None) -> str | None:
    """One line when the run would use a workflow this anvil cannot run (``workflow``: --workflow's, which wins
    over the task file's), else None."""
    chosen, supported = workflow or spec.workflow, supported_workflows()
    if chosen in supported:
        return None
    where = "--workflow" if workflow else f"{spec.path}: `workflow:`"
    return (f"{where} asks for workflow '{chosen}', which this anvil does not have (it has: "
            f"{', '.join(supported)}).")


class TaskRun:
    def __init__(self, spec: TaskSpec, store: TaskStore, agent: Agent, session_id: str, *, blocking: bool,
                 prd_budget: int = PRD_BUDGET, keep_iterations: bool = False) -> None:
        self.spec, self.store, self.agent, self.session_id = spec, store, agent, session_id
        self.blocking = blocking
        self.prd_budget = prd_budget
        self.keep_iterations = keep_iterations  # --max-iterations was given: it wins over the task's
        self.state = store.load(spec.path) or TaskState(str(spec.path), spec.title, str(store.project_root))
        self.plan: str | None = None
        self.blocker: BlockerRaised | None = None
        self._preview = False
        self._edited = False

    # -- before the turn ---------------------------------------------------------------------------------

    def answer(self, text: str) -> BlockerRecord:
        """Record the person's answer to the open question (ValueError when none), saved at once: an answer is
        never lost, even if the run that follows fails to start."""
        blocker = self.state.answer(text)
        self.store.save(self.state)
        return blocker

    def prepare(self, extra: str = "", answered: BlockerRecord | None = None) -> str:
        """Set the agent up for this task and mark the task running; the message that starts the turn."""
        agent, spec = self.agent, self.spec
        if spec.verify:
            agent.verify = list(spec.verify)
        if spec.max_iterations and not self.keep_iterations:
            agent.max_iterations = spec.max_iterations
        agent.escalation = Escalation(blocking=self.blocking)
        questions_block(agent.ctx, self.blocking)
        reason = preview_reason(spec, agent.ctx.root) if answered is None else None
        self._preview = reason is not None
        agent.set_system_section("task", task_layer(spec, agent.ctx.root, self.state.clarifications,
                                                    prd_budget=self.prd_budget, preview=reason,
                                                    blocking=self.blocking, verify=agent.verify))
        self.state.title, self.state.status, self.state.session_id = spec.title, "running", self.session_id
        self.state.runs += 1
        self.store.save(self.state)
        if answered is not None:
            prompt = (f'The person answered your question "{answered.question}":\n\n{answered.answer}\n\nCarry on '
                      f'with the task "{spec.title}".')
        else:
            prompt = (f'Carry out the task "{spec.title}" (under "# Task" in your instructions). When it is done '
                      "and checked, reply with a short summary of what you changed and how you checked it.")
        return prompt + (f"\n\nThe person adds: {extra.strip()}" if extra.strip() else "")

    # -- during the turn -----------------------------------------------------------------------------------

    def observe(self, event: Event) -> list[Event]:
        """Note what matters to the task; returns events to show after ``event`` (the intent preview)."""
        match event:
            case AssistantMessage(text=text) if self._preview and self.plan is None and not self._edited:
                if text.strip():
                    self.plan = text.strip()
                    return [IntentPreview(self.plan)]
            case ToolResultEvent(ok=True, kind=kind) if kind in _EDIT_KINDS:
                self._edited = True
            case BlockerRaised():
                self.blocker = event
        return []

    # -- after the turn ------------------------------------------------------------------------------------

    def finish(self, ended: TurnEnded) -> dict[str, Any]:
        """Record how the run ended in the task's state; the task part of the run's result."""
        verification = self.agent.verification
        status = {"blocked": "blocked", "interrupted": "interrupted"}.get(ended.reason, "failed")
        if ended.reason == "done" and (not verification.ran or verification.passed):
            status = "done"
        state = self.state
        if status == "blocked" and self.blocker is not None:
            b = self.blocker
            state.blockers.append(BlockerRecord(b.question, b.source, b.context, list(b.tried),
                                                session_id=self.session_id))
        state.status = status
        state.last = {"stop_reason": ended.reason, "message": ended.message, "plan": self.plan,
                      "verification": verification.to_dict() if verification.ran else None}
        self.store.save(state)
        open_blocker = state.open_blocker
        return {"path": state.task, "title": state.title, "status": status, "runs": state.runs,
                "state_file": str(self.store.path_for(self.spec.path)),
                "blocker": asdict(open_blocker) if open_blocker else None, "plan": self.plan,
                "clarifications": [{"question": b.question, "answer": b.answer} for b in state.clarifications],
                "verification": state.last["verification"]}
