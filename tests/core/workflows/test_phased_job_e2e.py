"""A phased job end to end, through litellm's real path to the scripted OpenAI-compatible server: strategic →
tactical → strategic → tactical → strategic → job_complete on a small project, with one rejected transition.

What is checked is what the model was offered in each phase (its tools, the system prompt's layer, a fresh
message list after every transition), the job's files after each phase, and that the job's files were written as
work files (no approval asked in a headless run without --auto-approve)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from anvil.config import Settings
from anvil.core.events import ApprovalAnswered, ApprovalRequested, Event, ToolResultEvent, TurnEnded
from anvil.core.job_events import JobFinished, PhaseEnded, PhaseStarted, TransitionRejected
from anvil.facade import SessionFacade
from anvil.runtime import open_runtime
from tests.support.openai_server import ScriptedOpenAIServer

STRATEGIC_TOOLS = {"read_file", "write_file", "list_files", "grep", "glob", "todo_complete", "todo_write",
                   "job_complete"}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def reply(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls)}


def plan(title: str) -> dict[str, Any]:
    return call("todo_write", phase=title, todos=[{"content": f"{title} step {n}"} for n in range(1, 6)])


def script(job: str) -> list[dict[str, Any]]:
    """What the model does, phase by phase (``job``: the job directory, relative to the project)."""
    three = "todos:\n" + "".join(f"  - id: {n}\n    content: step {n}\n" for n in (1, 2, 3))
    return [
        # phase 1, strategic
        reply(call("list_files")),
        reply(call("write_file", path=f"{job}/workspace.md", content="# Memory\nadd() lives in calc.py (MEMO-1)\n")),
        reply(call("todo_complete", id=1)),
        reply(call("write_file", path=f"{job}/main_plan.md", content="# Plan\n- Phase 2: fix add\n"),
              call("todo_complete", id=2)),
        reply(call("todo_complete", id=3)),
        reply(call("write_file", path=f"{job}/todos.yaml", content=three)),
        reply(call("todo_complete", id=4)),  # rejected: three todos
        reply(plan("Fix add")),
        reply(call("todo_complete", id=4)),
        # phase 2, tactical
        reply(call("read_file", path="calc.py"), call("todo_complete", id=1)),
        reply(call("edit_file", path="calc.py", old_string="a - b", new_string="a + b"), call("todo_complete", id=2)),
        reply(call("todo_complete", id=3), call("todo_complete", id=4)),
        reply(call("todo_complete", id=5)),
        # phase 3, strategic
        reply(call("read_file", path=f"{job}/workspace.md"), call("read_file", path=f"{job}/archive/phase_2.yaml"),
              call("todo_complete", id=1)),
        reply(call("write_file", path=f"{job}/workspace.md", content="# Memory\nadd() fixed in phase 2 (MEMO-2)\n"),
              call("todo_complete", id=2)),
        reply(call("read_file", path=f"{job}/main_plan.md"), call("todo_complete", id=3)),
        reply(plan("Tidy"), call("todo_complete", id=4)),
        # phase 4, tactical: the last todo ends the phase; the call after it goes with the old conversation
        reply(*(call("todo_complete", id=n) for n in range(1, 6)), call("read_file", path="calc.py")),
        # phase 5, strategic
        reply(call("todo_complete", id=1), call("todo_complete", id=2), call("todo_complete", id=3)),
        reply(call("job_complete", summary="add() adds; the plan is carried out.")),
    ]


def tools_of(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


async def test_a_phased_job_runs_to_job_complete(project: Path, server: ScriptedOpenAIServer) -> None:
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    runtime = open_runtime(Settings(model="openai/scripted", api_base=server.url), project, interactive=False)
    session = SessionFacade(runtime)
    every_tool = set(runtime.agent.tools.names())
    stream = session.start_job("phased", "Fix add() in calc.py.")
    assert session.job is not None
    job_dir, job_id = session.job.job_dir, session.job.job_id
    shown = job_dir.relative_to(project).as_posix()
    server.add(*script(shown))
    events: list[Event] = []
    on_disk: dict[int, dict[str, Any]] = {}
    async for event in stream:
        events.append(event)
        if isinstance(event, PhaseStarted):  # the files as the new phase finds them
            on_disk[event.phase] = {p.relative_to(job_dir).as_posix(): p.read_text()
                                    for p in sorted(job_dir.rglob("*")) if p.is_file()}
    await session.close()

    ended = events[-1]
    assert isinstance(ended, TurnEnded) and ended.reason == "done", ended
    assert ended.message == f"Job {job_id} is complete after 5 phases. Its files are in {shown}/."
    finished = [e for e in events if isinstance(e, JobFinished)]
    assert [(f.status, f.summary, f.phases) for f in finished] == [
        ("complete", "add() adds; the plan is carried out.", 5)]
    assert [(e.phase, e.kind) for e in events if isinstance(e, PhaseStarted)] == [
        (1, "strategic"), (2, "tactical"), (3, "strategic"), (4, "tactical"), (5, "strategic")]
    assert [(e.phase, e.archived) for e in events if isinstance(e, PhaseEnded)] == [
        (1, ""), (2, "archive/phase_2.yaml"), (3, ""), (4, "archive/phase_4.yaml"), (5, "")]
    # the job's files are work files: nothing asked, nothing refused, in a headless run without --auto-approve
    assert not [e for e in events if isinstance(e, ApprovalRequested | ApprovalAnswered)]
    assert all(e.ok for e in events if isinstance(e, ToolResultEvent) and e.name != "todo_complete")
    # the read_file after phase 4's last todo left with phase 4's conversation: it never ran
    assert len([e for e in events if isinstance(e, ToolResultEvent) and e.name == "read_file"]) == 4

    # the rejected transition, and what the model read
    rejected = [e for e in events if isinstance(e, TransitionRejected)]
    assert [(r.phase, r.reason) for r in rejected] == [
        (1, "todos.yaml has 3 todos; a phase needs 5 to 20. Make them concrete steps of about the same size, and "
            "write them again with todo_write.")]
    requests = server.requests
    assert requests[7]["messages"][-1]["content"].startswith("Phase transition rejected: todos.yaml has 3 todos")

    # each phase's first request: a fresh conversation, the phase's layer, the phase's tools
    firsts = [i for i, r in enumerate(requests) if [m["role"] for m in r["messages"]] == ["system", "user"]]
    assert firsts == [0, 9, 13, 17, 18]
    for number, index in enumerate(firsts, start=1):
        kind = "strategic" if number % 2 else "tactical"
        system, brief = (m["content"] for m in requests[index]["messages"])
        assert f"# Phased job {job_id}: phase {number} of at most 30, {kind}" in system
        assert brief.startswith(f"Phase {number} ({kind})")
        assert "Fix add() in calc.py." in system  # the instructions, in every phase
        if kind == "strategic":
            assert tools_of(requests[index]) == STRATEGIC_TOOLS
        else:
            assert tools_of(requests[index]) == (every_tool - {"todo_write"}) | {"todo_complete"}
    assert "MEMO-1" in requests[9]["messages"][0]["content"]  # workspace.md, in the next phase's prompt
    assert "MEMO-2" in requests[17]["messages"][0]["content"]
    assert "[>] 1. Fix add step 1" in requests[9]["messages"][1]["content"]
    assert len(requests) == 20

    # the files after each phase
    assert sorted(on_disk[1]) == ["instructions.md", "state.yaml"]
    assert on_disk[1]["instructions.md"] == "Fix add() in calc.py.\n"
    assert sorted(on_disk[2]) == ["instructions.md", "main_plan.md", "state.yaml", "workspace.md"]  # todos consumed
    state = yaml.safe_load(on_disk[2]["state.yaml"])
    assert (state["phase"], state["kind"], state["title"], len(state["todos"])) == (2, "tactical", "Fix add", 5)
    assert "archive/phase_2.yaml" in on_disk[3]
    archived = yaml.safe_load(on_disk[3]["archive/phase_2.yaml"])
    assert [(t["content"], t["status"]) for t in archived["todos"]] == [
        (f"Fix add step {n}", "completed") for n in range(1, 6)]
    assert "MEMO-2" in on_disk[4]["workspace.md"] and "archive/phase_4.yaml" in on_disk[5]
    final = yaml.safe_load((job_dir / "state.yaml").read_text())
    assert (final["status"], final["phase"]) == ("complete", 5)
    assert final["summary"] == "add() adds; the plan is carried out."
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"

    # the job is over: the session goes on as a plain conversation, and resuming it resumes the last phase's
    assert session.job is None and set(runtime.agent.offered.names()) == every_tool
    resumed = runtime.session.load()
    assert resumed.workflow is None
    assert resumed.messages[0]["content"].startswith("Phase 5 (strategic)")
