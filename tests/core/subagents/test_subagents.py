"""Sub-agents: the task tool running a child agent on one scripted model shared with the parent.

The scripted model answers calls in order, so each script lists the parent's turns and the child's turns
in the order the calls happen: parent (calls task) -> child ... -> parent (final answer).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import (
    HEADLESS_DENIAL,
    ApprovalAnswered,
    ApprovalDecision,
    ApprovalRequested,
    Event,
    ToolResultEvent,
    TurnEnded,
)
from anvil.core.loop.agent import Agent
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.subagents.agent_types import load_agent_types, parse_agent_file, select_tools, split_front_matter
from anvil.core.subagents.task_tool import SubagentEvent, TaskArgs, TaskTool
from anvil.core.tools import default_tools
from anvil.core.tools.base import Tool, ToolContext, ToolRegistry
from anvil.core.tools.errors import ToolError
from tests.support.agents import GuardedTool, SlowTool
from tests.support.agents import run as run_turn


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def task_call(agent_type: str = "explore", prompt: str = "Find what the README says.") -> dict[str, Any]:
    return {"tool_calls": [call("task", description="Read the docs", prompt=prompt, agent_type=agent_type)]}


def setup(project: Path, tmp_path: Path, turns: list[dict[str, Any]], *extra: Tool,
          **task_kwargs: Any) -> tuple[Agent, TaskTool, ScriptedModel]:
    model = ScriptedModel(turns)
    registry = default_tools()
    for tool in extra:
        registry.add(tool)
    policy = ApprovalPolicy()
    task = TaskTool(model, registry, policy, **task_kwargs)
    registry.add(task)
    ctx = ToolContext(root=project, data_dir=tmp_path / "data")
    agent = Agent(model, registry, ctx, system_prompt="You are the parent.", policy=policy)
    return agent, task, model


async def run(agent: Agent, text: str = "go", answer: ApprovalDecision | None = None) -> list[Event]:
    """A turn where approvals nobody scripted an answer for are denied."""
    return await run_turn(agent, text, answer or ApprovalDecision(False, "no", by="test"))


def inner(events: list[Event], kind: type[Event]) -> list[Any]:
    return [e.inner for e in events if isinstance(e, SubagentEvent) and isinstance(e.inner, kind)]


async def test_explore_subagent_runs_nested_with_read_only_tools_and_reports(project: Path, tmp_path: Path) -> None:
    usage = {"prompt_tokens": 120, "completion_tokens": 30}
    agent, _, model = setup(project, tmp_path, [
        task_call(),
        {"tool_calls": [call("read_file", path="README.md"), call("write_file", path="new.txt", content="x"),
                        call("task", description="nested", prompt="p")], "usage": usage, "cost": 0.002},
        {"text": "REPORT: the README calls this a tiny project.", "usage": usage, "cost": 0.003},
        {"text": "The sub-agent says it is a tiny project."},
    ])
    events = await run(agent)

    assert [e.reason for e in events if isinstance(e, TurnEnded)] == ["done"]
    assert not (project / "new.txt").exists()  # explore cannot write
    child_results = {r.name: r for r in inner(events, ToolResultEvent)}
    assert child_results["read_file"].ok and "tiny project" in child_results["read_file"].output
    assert not child_results["write_file"].ok and "Unknown tool 'write_file'" in child_results["write_file"].output
    # sub-agents cannot start sub-agents
    assert not child_results["task"].ok and "Unknown tool 'task'" in child_results["task"].output
    assert {"glob", "grep", "list_files", "read_file"} == set(
        child_results["task"].output.split("Available tools: ")[1].rstrip(".").split(", "))

    # the child saw only its own system prompt and the prompt; the parent got the report as the tool result
    child_call = model.calls[1]
    assert [m["role"] for m in child_call] == ["system", "user"]
    assert "sub-agent" in child_call[0]["content"] and "cannot change anything" in child_call[0]["content"]
    assert child_call[1]["content"] == "Find what the README says."
    parent_results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert parent_results[-1].name == "task" and parent_results[-1].ok
    assert parent_results[-1].output == "REPORT: the README calls this a tiny project."
    assert model.calls[3][-1] == {"role": "tool", "tool_call_id": "call_1_0", "name": "task",
                                  "content": "REPORT: the README calls this a tiny project."}

    # progress is forwarded as nested events, serialisable for stream-json and the session
    nested = [e for e in events if isinstance(e, SubagentEvent)]
    assert nested and all(e.agent_type == "explore" and e.description == "Read the docs" for e in nested)
    as_dict = nested[0].to_dict()
    assert as_dict["type"] == "subagent_event" and as_dict["inner"]["type"] == "turn_started"
    assert inner(events, TurnEnded)[0].reason == "done"


async def test_usage_and_cost_come_back_in_data_and_on_usage(project: Path, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    usage = {"prompt_tokens": 100, "completion_tokens": 20}
    _, task, _ = setup(project, tmp_path, [
        {"tool_calls": [call("grep", pattern="tiny")], "usage": usage, "cost": 0.01},
        {"text": "Found it in README.md:3.", "usage": usage, "cost": 0.02},
    ], on_usage=seen.append)
    ctx = ToolContext(root=project, data_dir=tmp_path / "data")
    result = await task.run(TaskArgs(description="grep", prompt="Find 'tiny'.", agent_type="explore"), ctx)

    assert result.ok and result.output == "Found it in README.md:3."
    assert result.data is not None
    assert (result.data["prompt_tokens"], result.data["completion_tokens"]) == (200, 40)
    assert result.data["cost"] == pytest.approx(0.03)
    assert result.changed is False and result.data["tool_calls"] == 1
    assert seen == [{"prompt_tokens": 200, "completion_tokens": 40, "cache_read_tokens": 0, "cache_write_tokens": 0,
                     "reasoning_tokens": 0, "cost": 0.03, "unpriced_calls": 0}]
    assert task.phase(TaskArgs(description="grep", prompt="p")) == "Sub-agent: grep"


async def test_general_subagent_asks_the_person_through_ctx_ask(project: Path, tmp_path: Path) -> None:
    guarded = GuardedTool()
    _, task, _ = setup(project, tmp_path, [
        {"tool_calls": [call("guarded"), call("write_file", path="made.txt", content="hi\n")]},
        {"text": "Ran guarded and wrote made.txt."},
    ], guarded)
    asked: list[ApprovalRequested] = []

    async def ask(event: Event) -> Any:
        assert isinstance(event, ApprovalRequested)
        asked.append(event)
        return ApprovalDecision(True, by="user")

    emitted: list[Event] = []
    ctx = ToolContext(root=project, data_dir=tmp_path / "data", ask=ask, emit=emitted.append)
    result = await task.run(TaskArgs(description="Make a file", prompt="Do it.", agent_type="general"), ctx)

    assert result.ok and guarded.runs == 1
    assert (project / "made.txt").read_text() == "hi\n"
    assert result.changed is True
    assert [a.title for a in asked] == ["Sub-agent (Make a file): guarded"]
    answered = [e.inner for e in emitted if isinstance(e, SubagentEvent) and isinstance(e.inner, ApprovalAnswered)]
    assert answered and answered[0].allow


async def test_headless_subagent_approval_is_denied_with_a_message(project: Path, tmp_path: Path) -> None:
    guarded = GuardedTool()
    _, task, _ = setup(project, tmp_path, [
        {"tool_calls": [call("guarded")]},
        {"text": "Could not run guarded."},
    ], guarded)
    emitted: list[Event] = []
    ctx = ToolContext(root=project, data_dir=tmp_path / "data", emit=emitted.append)
    result = await task.run(TaskArgs(description="Try", prompt="Run guarded.", agent_type="general"), ctx)

    assert guarded.runs == 0 and result.output == "Could not run guarded."
    denied = [e.inner for e in emitted if isinstance(e.inner, ToolResultEvent)]  # type: ignore[attr-defined]
    assert not denied[0].ok and HEADLESS_DENIAL.message in denied[0].output


async def test_custom_agent_from_markdown_file(project: Path, tmp_path: Path) -> None:
    agents = project / ".anvil" / "agents"
    agents.mkdir(parents=True)
    (agents / "finder.md").write_text(
        "---\nname: finder\ndescription: Finds files by name  # short\ntools:\n  - glob\n  - list_*\n---\n"
        "You find files. Report their paths.\n")
    (agents / "broken.md").write_text("no header here\n")
    types, warnings = load_agent_types(project)
    assert set(types) == {"explore", "general", "finder"}
    assert len(warnings) == 1 and "broken.md" in warnings[0] and "'---'" in warnings[0]
    finder = types["finder"]
    assert finder.description == "Finds files by name" and finder.tools == ("glob", "list_*")
    assert select_tools(default_tools(), finder).names() == ["glob", "list_files"]

    agent, task, model = setup(project, tmp_path, [
        task_call("finder", "Where is the README?"),
        {"tool_calls": [call("grep", pattern="x")]},
        {"text": "README.md"},
        {"text": "It is README.md."},
    ], types=types)
    assert "finder: Finds files by name" in task.schema()["function"]["description"]
    assert task.schema()["function"]["parameters"]["properties"]["agent_type"]["enum"] == list(types)
    events = await run(agent)
    assert "You find files." in model.calls[1][0]["content"]
    grep = inner(events, ToolResultEvent)[0]
    assert not grep.ok and "Unknown tool 'grep'" in grep.output
    assert [e for e in events if isinstance(e, ToolResultEvent)][-1].output == "README.md"


async def test_unknown_type_and_one_at_a_time(project: Path, tmp_path: Path) -> None:
    slow = SlowTool()
    _, task, _ = setup(project, tmp_path, [{"tool_calls": [call("slow")]}], slow)
    ctx = ToolContext(root=project, data_dir=tmp_path / "data")
    with pytest.raises(ToolError, match=r"Unknown agent_type 'nope'\. Use one of: explore, general"):
        await task.run(TaskArgs(description="x", prompt="y", agent_type="nope"), ctx)
    first = asyncio.create_task(task.run(TaskArgs(description="a", prompt="b"), ctx))
    await asyncio.wait_for(slow.started.wait(), 5)
    with pytest.raises(ToolError, match="Another sub-agent is still running"):
        await task.run(TaskArgs(description="c", prompt="d"), ctx)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert slow.cancelled


async def test_interrupting_the_parent_interrupts_the_subagent(project: Path, tmp_path: Path) -> None:
    slow = SlowTool()
    seen: list[dict[str, Any]] = []
    agent, _, _ = setup(project, tmp_path, [
        task_call("general", "Wait for it."),
        {"tool_calls": [call("slow")], "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
        {"text": "never reached"},
    ], slow, on_usage=seen.append)
    turn = asyncio.create_task(run(agent))
    await asyncio.wait_for(slow.started.wait(), 5)
    agent.interrupt()
    events = await asyncio.wait_for(turn, 5)

    assert slow.cancelled
    assert [e.reason for e in events if isinstance(e, TurnEnded)] == ["interrupted"]
    assert inner(events, TurnEnded)[0].reason == "interrupted"  # the child ended its own turn cleanly
    task_result = [e for e in events if isinstance(e, ToolResultEvent)][-1]
    assert task_result.name == "task" and not task_result.ok and "Interrupted" in task_result.output
    # its tokens still count; the scripted model has no price, so the cost is unknown rather than $0
    assert seen == [{"prompt_tokens": 50, "completion_tokens": 5, "cache_read_tokens": 0, "cache_write_tokens": 0,
                     "reasoning_tokens": 0, "cost": None, "unpriced_calls": 1}]


def test_front_matter_forms_and_errors(tmp_path: Path) -> None:
    header, body = split_front_matter("---\ntools: [read_file, 'grep']\nread_only: yes\n---\nBody\n")
    assert header == {"tools": ["read_file", "grep"], "read_only": "yes"} and body == "Body"
    path = tmp_path / "x.md"
    path.write_text("---\ndescription: Reviews code in C# projects\ntools: read_file, grep\nread_only: true\n"
                    "max_iterations: 7\nmodel: ignored\n---\nReview.\n")
    agent = parse_agent_file(path)
    assert (agent.name, agent.description, agent.tools, agent.read_only, agent.max_iterations) == (
        "x", "Reviews code in C# projects", ("read_file", "grep"), True, 7)
    for text, message in [("---\nname: a\n", "never closed"), ("---\nname: a\n---\nBody", "no 'description"),
                          ("---\ndescription: d\n---\n", "empty"), ("---\njust words\n---\nB", "line 2")]:
        path.write_text(text)
        with pytest.raises(ValueError, match=message):
            parse_agent_file(path)


def test_read_only_filter_drops_changing_tools() -> None:
    from anvil.core.subagents.agent_types import AgentType

    registry: ToolRegistry = default_tools()
    everything = select_tools(registry, AgentType("all", "d", "p"))
    assert "write_file" in everything.names() and "task" not in everything.names()
    safe = select_tools(registry, AgentType("safe", "d", "p", read_only=True))
    assert "write_file" not in safe.names() and "run_command" not in safe.names() and "read_file" in safe.names()


async def test_plan_mode_allows_sub_agents_that_stay_read_only(project: Path, tmp_path: Path) -> None:
    from anvil.core.tools.interaction import INTERACTION_TOOLS

    agent, task, _ = setup(project, tmp_path, [
        task_call("general", "Write notes."),
        {"tool_calls": [call("write_file", path="notes.txt", content="x"), call("exit_plan_mode", plan="p")]},
        {"text": "Could not write in plan mode."},
        {"text": "Planned."},
    ], *INTERACTION_TOOLS)
    agent.policy.set_mode("plan")
    assert not task.mutates  # its child obeys the same plan-mode policy
    events = await run(agent)

    assert not (project / "notes.txt").exists()
    results = {r.name: r for r in inner(events, ToolResultEvent)}
    assert not results["write_file"].ok and "plan mode" in results["write_file"].output
    assert "Unknown tool 'exit_plan_mode'" in results["exit_plan_mode"].output  # leaving plan mode is the parent's
    assert agent.policy.mode == "plan"
    assert [e for e in events if isinstance(e, ToolResultEvent)][-1].output == "Could not write in plan mode."
    agent.policy.set_mode("ask")
    assert task.mutates


async def test_nested_run_through_litellm_and_the_scripted_server(server: Any, project: Path, tmp_path: Path) -> None:
    from anvil.core.model.errors import RetryPolicy
    from anvil.core.model.litellm_model import LiteLLMModel

    server.add(
        task_call("explore", "What does the README say?"),
        {"tool_calls": [call("read_file", path="README.md")], "usage": {"prompt_tokens": 300, "completion_tokens": 20}},
        {"text": "It says: a tiny project.", "usage": {"prompt_tokens": 400, "completion_tokens": 10}},
        {"text": "A tiny project."},
    )
    model = LiteLLMModel("openai/scripted", api_base=server.url, retry=RetryPolicy(max_attempts=1))
    registry = default_tools()
    policy = ApprovalPolicy()
    seen: list[dict[str, Any]] = []
    registry.add(TaskTool(model, registry, policy, on_usage=seen.append))
    agent = Agent(model, registry, ToolContext(root=project, data_dir=tmp_path / "data"),
                  system_prompt="parent", policy=policy)
    events = await run(agent)

    assert [e for e in events if isinstance(e, ToolResultEvent)][-1].output == "It says: a tiny project."
    assert seen and (seen[0]["prompt_tokens"], seen[0]["completion_tokens"]) == (700, 30)
    child_request = server.requests[1]
    assert [m["role"] for m in child_request["messages"]] == ["system", "user"]
    offered = sorted(t["function"]["name"] for t in child_request["tools"])
    assert offered == ["glob", "grep", "list_files", "read_file"]  # explore's tools, and no task
    assert "task" in [t["function"]["name"] for t in server.requests[0]["tools"]]
