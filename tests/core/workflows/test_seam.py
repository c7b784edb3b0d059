"""The seam between the loop and a workflow, tried with a small workflow of its own (the shape a tool-gated
workflow takes: its tool owns the state, results cause transitions, tools per state, a halt that waits for the
person's guidance) and with the phased job's hooks: refusals, reminders, budgets, compaction, resume, stop."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from anvil.config import Settings
from anvil.core.events import Event, Notice, ToolCall, ToolResultEvent, TurnEnded
from anvil.core.job_events import JobFinished, PhaseStarted
from anvil.core.loop.agent import Agent
from anvil.core.model.scripted import ScriptedModel
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolRegistry, ToolResult
from anvil.core.workflows.base import JobError, JobStatus, Transition, Workflow
from anvil.core.workflows.offered import OfferedTools
from anvil.facade import SessionFacade
from anvil.runtime import open_runtime
from tests.support.agents import BigTool, EchoTool, assert_history_valid


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


class Submit(Tool):
    name = "submit"
    description = "Hand in the work of this state."
    Args = ToolArgs

    def __init__(self, flow: Gated) -> None:
        self.flow = flow

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return self.flow.submit()


class Gated(Workflow):
    """Two states: WORK (echo and submit offered) then REVIEW (only submit); a submit in REVIEW halts for the
    person. Its state lives in a file it reads back on every step."""

    name = "gated"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "state").write_text("WORK")
        self.pending: Transition | None = None
        self.submit_tool = Submit(self)

    @property
    def state(self) -> str:
        return (self.directory / "state").read_text()

    @property
    def job_id(self) -> str:
        return "gated-1"

    @property
    def job_dir(self) -> Path:
        return self.directory

    def offered_tools(self, available: Sequence[Tool]) -> list[Tool]:
        chosen = [t for t in available if t.name == "echo"] if self.state == "WORK" else []
        return [*chosen, self.submit_tool]

    def check_call(self, name: str, args: dict[str, Any]) -> str | None:
        if name == "echo" and self.state == "REVIEW":
            return f"echo is locked while the work is reviewed (not even {args.get('text')!r})."
        return None

    def system_layer(self) -> str:
        return f"# Gated job: state {self.state}"

    def brief(self) -> str:
        return f"State {self.state}: do it, then call submit."

    def resume_brief(self, guidance: str) -> str:
        return f"[resumed in {self.state}] {guidance}"

    def submit(self) -> ToolResult:
        if self.state == "WORK":
            (self.directory / "state").write_text("REVIEW")
            self.pending = Transition((PhaseStarted(self.name, self.job_id, str(self.directory), 2, "REVIEW"),),
                                      reset=True)
            return ToolResult("Submitted; review begins.")
        self.pending = Transition(end="pause", message="Halted: the review needs the person.")
        return ToolResult("The person will look at it.")

    def on_tool_result(self, call: ToolCall, result: ToolResult) -> Transition | None:
        pending, self.pending = self.pending, None
        return pending

    def stop(self, reason: str) -> list[Event]:
        return []

    def status(self) -> JobStatus:
        return JobStatus(self.name, self.job_id, self.directory, 1, self.state, "running")


def agent_with(tmp_path: Path, turns: list[dict[str, Any]]) -> Agent:
    ctx = ToolContext(root=tmp_path, data_dir=tmp_path / "data")
    return Agent(ScriptedModel(turns), ToolRegistry([EchoTool()]), ctx, system_prompt="You are a test.")


async def events_of(agent: Agent, text: str) -> list[Event]:
    return [event async for event in agent.run_turn(text)]


async def test_a_workflow_of_its_own_drives_the_one_loop_and_halts_for_guidance(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, [
        call("echo", text="working"),
        call("submit"),  # WORK → REVIEW: a fresh conversation, other tools
        call("echo", text="still?"),  # refused: locked in REVIEW
        call("submit"),  # halts
        {"text": "Thanks, going on."},
    ])
    flow = Gated(tmp_path / "job")
    agent.attach_workflow(flow)
    assert agent.messages[0]["content"].endswith("# Gated job: state WORK")
    first = await events_of(agent, flow.brief())
    ended = first[-1]
    assert isinstance(ended, TurnEnded) and (ended.reason, ended.message) == ("done",
                                                                            "Halted: the review needs the person.")
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert [m["role"] for m in model.calls[2]] == ["system", "user"]  # reset after the first submit
    assert model.calls[2][0]["content"].endswith("# Gated job: state REVIEW")
    refused = [e for e in first if isinstance(e, ToolResultEvent) and e.name == "echo"]
    assert [(r.ok, r.output) for r in refused] == [(True, "echo: working"),
                                                   (False, "echo is locked while the work is reviewed (not even "
                                                           "'still?').")]
    assert [e.message for e in first if isinstance(e, Notice)] == ["Halted: the review needs the person."]
    assert agent.workflow is flow  # paused, not finished: the person's guidance goes on with it
    second = await events_of(agent, flow.resume_brief("Looks fine, finish it."))
    assert isinstance(second[-1], TurnEnded)
    assert model.calls[-1][-1] == {"role": "user", "content": "[resumed in REVIEW] Looks fine, finish it."}
    assert_history_valid(agent.messages[1:])


# -- the phased job's hooks, through the runtime ------------------------------------------------------------------

def phased(project: Path, turns: list[dict[str, Any]], **settings: Any) -> tuple[SessionFacade, ScriptedModel]:
    model = ScriptedModel(turns)
    runtime = open_runtime(Settings(model="scripted", **settings), project, model=model, interactive=False)
    return SessionFacade(runtime), model


async def run(stream: Any) -> list[Event]:
    return [event async for event in stream]


async def test_tools_of_another_phase_are_refused_with_a_reason(project: Path) -> None:
    session, _ = phased(project, [call("run_command", command="ls"), call("edit_file", path="a", old_string="b",
                                                                            new_string="c"), {"text": "ok"}])
    events = await run(session.start_job("phased", "Do it."))
    refused = [e.output for e in events if isinstance(e, ToolResultEvent)]
    assert refused[0].startswith("run_command is not offered in strategic phases (this is phase 1 (strategic)")
    assert refused[1].startswith("edit_file is not offered in strategic phases")
    await session.close()


async def test_a_reply_without_a_tool_call_is_sent_back_to_work_three_times_then_the_job_pauses(
        project: Path) -> None:
    session, model = phased(project, [{"text": "Thinking about it."}] * 4)
    events = await run(session.start_job("phased", "Do it."))
    reminders = [c[-1]["content"] for c in model.calls[1:]]
    assert len(reminders) == 3 and all(r.startswith("[anvil] Phase 1 (strategic) is not finished: todos 1, 2, 3, 4 "
                                                    "are still open. Go on with todo 1") for r in reminders)
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert notices[-1].startswith(f"Job {session.job.job_id} paused in phase 1 (strategic), todo 1 of 4.")
    assert session.job.status == "paused"
    await session.close()


async def test_the_job_budget_of_model_calls_ends_the_job_with_its_reason(project: Path) -> None:
    session, model = phased(project, [call("todo_complete", id=1), call("todo_complete", id=2),
                                      call("todo_complete", id=3)],
                            workflows={"phased": {"max_iterations": 2}})
    job_id = None
    events = []
    async for event in session.start_job("phased", "Do it."):
        job_id = job_id or (session.job.job_id if session.job else None)
        events.append(event)
    finished = [e for e in events if isinstance(e, JobFinished)]
    assert [f.status for f in finished] == ["budget"] and "budget of 2 model calls" in finished[0].summary
    assert len(model.calls) == 2 and session.job is None
    ended = events[-1]
    assert isinstance(ended, TurnEnded) and ended.message.startswith(f"Job {job_id} stopped at its budget after 1 "
                                                                      "phase: the job reached its budget")
    await session.close()


async def test_each_phase_gets_max_iterations_model_calls_of_its_own(project: Path) -> None:
    turns = [call("todo_complete", id=n) for n in (1, 2, 3)]
    turns += [call("todo_write", todos=[{"content": f"s{n}"} for n in range(5)]), call("todo_complete", id=4)]
    turns += [call("todo_complete", id=n) for n in (1, 2)] + [call("list_files")] * 3
    session, _ = phased(project, turns, max_iterations=5)
    events = await run(session.start_job("phased", "Do it."))
    ended = events[-1]
    assert isinstance(ended, TurnEnded) and ended.reason == "max_iterations"
    assert ended.iterations == 10  # five in phase 1, five in phase 2: each phase had its own five
    assert session.job is not None and session.job.phase == 2
    await session.close()


async def test_compaction_keeps_the_phase_todos_and_renders_the_layer_again(project: Path) -> None:
    bulky = "A long look at the project. " * 150  # enough older conversation for a snapshot to be worth it
    session, model = phased(project, [{**call("todo_complete", id=1), "text": bulky}] + [{"text": bulky}] * 4 +
                            [{"text": "SNAPSHOT of the work so far"}])
    await run(session.start_job("phased", "Do it."))
    job = session.job
    assert job is not None
    (job.job_dir / "workspace.md").write_text("Learned: MEMO-LATER\n")
    agent = session.runtime.agent
    assert "MEMO-LATER" not in agent.messages[0]["content"]
    await run(session.compact())
    assert "MEMO-LATER" in agent.messages[0]["content"]
    summary_request = model.calls[-1]
    assert any("[x] 1. Explore the project" in str(m.get("content")) and "[>] 2. Read the instructions" in
               str(m.get("content")) for m in summary_request)
    await session.close()


async def test_continuing_the_session_goes_on_with_its_job_from_the_same_phase_and_todo(project: Path) -> None:
    session, _ = phased(project, [call("todo_complete", id=1), call("todo_complete", id=2), {"text": "stop"}] +
                        [{"text": "stop"}] * 3)
    await run(session.start_job("phased", "Do it."))
    job_id = session.job.job_id
    await session.close()
    model = ScriptedModel([call("todo_complete", id=3), {"text": "later"}] + [{"text": "later"}] * 3)
    again = SessionFacade(open_runtime(Settings(model="scripted"), project, model=model, continue_latest=True,
                                       interactive=False))
    assert again.job is not None and (again.job.job_id, again.job.phase) == (job_id, 1)
    assert again.warnings[-1] == (f"This session works on job {job_id} (phase 1 · strategic, paused): your next "
                                  "message goes on with it, as guidance. /workflow shows it; /workflow stop ends it.")
    assert [t.status for t in again.todos] == ["completed", "completed", "in_progress", "pending"]
    events = await run(again.submit("Keep it short."))
    started = [e for e in events if isinstance(e, PhaseStarted)]
    assert [(s.phase, s.resumed) for s in started] == [(1, True)]
    first = model.calls[0][-1]["content"]
    assert first.startswith("[anvil] The job goes on in phase 1 (strategic). Todo 3 is in progress.")
    assert first.endswith("The person says:\nKeep it short.")
    assert "Todo 3 done" in next(e.output for e in events if isinstance(e, ToolResultEvent))
    await again.close()


async def test_stopping_a_job_ends_it_and_gives_the_session_its_tools_back(project: Path) -> None:
    session, _ = phased(project, [{"text": "a"}] * 4)
    await run(session.start_job("phased", "Do it."))
    agent = session.runtime.agent
    assert "run_command" not in agent.offered.names()
    with pytest.raises(JobError, match=f"This session works on job {session.job.job_id} already"):
        session.start_job("phased", "Another one.")
    events = session.stop_job()
    assert [(type(e), e.status) for e in events if isinstance(e, JobFinished)] == [(JobFinished, "stopped")]
    assert session.job is None and "run_command" in agent.offered.names()
    assert "Phased job" not in agent.messages[0]["content"]
    assert session.runtime.session.load().workflow is None
    assert session.stop_job() == []
    await session.close()


def test_the_offered_tools_follow_the_registry_underneath_and_the_chooser() -> None:
    base = ToolRegistry([EchoTool()])
    offered = OfferedTools(base)
    assert offered.names() == ["echo"]
    offered.offer(lambda tools: [t for t in tools if t.name != "echo"])
    assert offered.names() == [] and offered.prepare("echo", "{}").error is not None
    offered.add(BigTool())  # the session's tools change (an MCP server comes up): the view follows
    assert base.get("big") is not None and offered.names() == ["big"]
    assert [s["function"]["name"] for s in offered.schemas()] == ["big"]
    offered.remove("big")
    assert base.get("big") is None and offered.names() == []
    offered.offer(None)
    assert offered.names() == ["echo"] and offered.get("echo") is base.get("echo")


def to_tactical(*then: dict[str, Any]) -> list[dict[str, Any]]:
    """A strategic phase's work (todos done, five written), then ``then`` in the tactical phase."""
    return [call("todo_complete", id=1), call("todo_complete", id=2), call("todo_complete", id=3),
            call("todo_write", todos=[{"content": f"s{n}"} for n in range(5)]), call("todo_complete", id=4), *then]


async def test_a_new_phase_runs_commands_from_the_project_root_and_must_read_files_again(project: Path) -> None:
    tactical_done = [call("todo_complete", id=n) for n in range(1, 6)]
    turns = to_tactical(call("run_command", command="mkdir -p sub && cd sub"), call("read_file", path="README.md"),
                        *tactical_done)
    turns += to_tactical(call("run_command", command="pwd"),
                         call("write_file", path="README.md", content="overwritten\n"), {"text": "stop"})
    session, _ = phased(project, turns + [{"text": "stop"}] * 3, auto_approve=True)
    events = await run(session.start_job("phased", "Do it."))
    results = [e for e in events if isinstance(e, ToolResultEvent) and e.name in {"run_command", "write_file"}]
    assert results[0].ok and "Working directory is now sub" in results[0].output
    assert results[1].ok and results[1].output.splitlines()[0] == str(project)  # phase 4: from the root again
    assert not results[2].ok and "read" in results[2].output  # read in phase 2, not in this conversation
    assert (project / "README.md").read_text() != "overwritten\n"
    await session.close()


async def test_a_transition_without_a_reset_chooses_the_tools_again(tmp_path: Path) -> None:
    class Locking(Gated):
        def on_tool_result(self, call: ToolCall, result: ToolResult) -> Transition | None:
            if call.name == "echo":  # the state changes, the conversation goes on: the tools must follow
                (self.directory / "state").write_text("REVIEW")
                return Transition()
            return None

    agent = agent_with(tmp_path, [call("echo", text="one"), call("echo", text="two"), {"text": "done"}])
    agent.attach_workflow(Locking(tmp_path / "job"))
    assert sorted(agent.offered.names()) == ["echo", "submit"]
    events = await events_of(agent, "go")
    assert agent.offered.names() == ["submit"]
    results = [(e.ok, e.output) for e in events if isinstance(e, ToolResultEvent)]
    assert results == [(True, "echo: one"), (False, "echo is locked while the work is reviewed (not even 'two').")]
