"""Plan mode: reads and planning only, read-only commands the person allowed, everything else refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.config import load_settings
from anvil.core.events import ToolResultEvent
from anvil.core.loop.agent import Agent
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import MODES, ApprovalPolicy
from anvil.core.tools.base import Tool, ToolContext, ToolRegistry
from anvil.core.tools.edit.edit_tools import EditFileTool
from anvil.core.tools.files.file_tools import ReadFileTool, WriteFileTool
from anvil.core.tools.interaction import AskUser, ExitPlanMode
from anvil.core.tools.search.search_tools import GlobTool, GrepTool, ListFilesTool
from anvil.core.tools.shell.shell_tools import RunCommand
from anvil.core.tools.shell.test_runner import RunTests
from anvil.core.tools.todos import TodoRead, TodoWrite

RULES = ["git *", "ls*", "echo *", "rm *", "cat *", "grep *", "find *", "sed *", "sort *", "python *"]


@pytest.fixture
def ctx(project: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(root=project, data_dir=tmp_path / "data")


def plan_policy(*allow: str, **kwargs: Any) -> ApprovalPolicy:
    return ApprovalPolicy(rule_lists={"project": (list(allow), [])}, mode="plan", **kwargs)


def verdict_for(policy: ApprovalPolicy, tool: Tool, ctx: ToolContext, **args: Any) -> Any:
    return policy.evaluate(tool, tool.Args.model_validate(args), ctx)


def test_modes_cycle_through_plan_and_remember_where_plan_mode_came_from():
    assert MODES == ("ask", "accept_edits", "auto", "plan")
    policy = ApprovalPolicy()
    assert [policy.next_mode() for _ in range(4)] == ["accept_edits", "auto", "plan", "ask"]
    policy.set_mode("accept_edits")
    policy.set_mode("plan")
    assert policy.planning and policy.previous_mode == "accept_edits" and not policy.auto_approve
    assert policy.exit_plan() == "accept_edits" and policy.mode == "accept_edits"
    assert policy.exit_plan() == "accept_edits", "leaving plan mode when not in it changes nothing"


def test_starting_in_plan_mode_returns_to_the_configured_mode():
    assert plan_policy().previous_mode == "ask"
    auto = ApprovalPolicy(auto_approve=True, mode="plan")
    assert auto.mode == "plan" and auto.previous_mode == "auto"
    assert auto.exit_plan() == "auto" and auto.auto_approve
    with pytest.raises(ValueError, match="unknown approval mode"):
        ApprovalPolicy(mode="yolo")  # type: ignore[arg-type]


@pytest.mark.parametrize("tool,args", [
    (ReadFileTool(), {"path": "README.md"}),
    (GrepTool(), {"pattern": "x"}),
    (GlobTool(), {"pattern": "*.py"}),
    (ListFilesTool(), {}),
    (TodoWrite(), {"todos": []}),
    (TodoRead(), {}),
    (AskUser(), {"question": "which?"}),
    (ExitPlanMode(), {"plan": "1. do it"}),
])
def test_reading_and_planning_tools_are_allowed(ctx, tool, args):
    assert verdict_for(plan_policy(), tool, ctx, **args).action == "allow"


@pytest.mark.parametrize("tool,args", [
    (WriteFileTool(), {"path": "a.py", "content": "x"}),
    (EditFileTool(), {"path": "a.py", "old_string": "a", "new_string": "b"}),
    (RunTests(), {}),
])
def test_tools_that_change_things_are_refused_with_a_message_for_the_model(ctx, tool, args):
    # Refused even when the person allowed everything: plan mode is about not changing anything yet.
    verdict = verdict_for(plan_policy(f"{tool.name}(*)"), tool, ctx, **args)
    assert verdict.action == "deny" and verdict.by == "plan mode"
    assert verdict.message.startswith("plan mode: you can only read and plan")
    assert "exit_plan_mode" in verdict.message and tool.name in verdict.message


@pytest.mark.parametrize("command", ["git status", "git log --oneline -5", "ls -la src", "cat README.md | grep Demo",
                                     "find . -name '*.py'", "echo hi 2>/dev/null"])
def test_read_only_commands_the_rules_allow_run(ctx, command):
    verdict = verdict_for(plan_policy(*RULES), RunCommand(), ctx, command=command)
    assert verdict.action == "allow", verdict
    assert verdict.by.endswith("(plan mode)")


@pytest.mark.parametrize("command,why", [
    ("git commit -m x", "git commit is not a read-only git command"),
    ("rm notes.txt", "rm is not a read-only program"),
    ("echo hi > notes.txt", "it writes to notes.txt"),
    ("find src -name '*.pyc' -delete", "deletes what find matches"),
    ("find . -name x -fprint out.txt", "find -fprint can change files"),
    ("sort -o out.txt README.md", "sort -o can change files"),
    ("sed -i s/a/b/ README.md", "sed is not a read-only program"),
    ("python -c 'print(1)'", "python is not a read-only program"),
    ("rm -rf build", "recursive"),
    ("head README.md", "no rule allows: head README.md"),
])
def test_other_commands_are_refused_and_the_model_is_told_why(ctx, command, why):
    verdict = verdict_for(plan_policy(*RULES), RunCommand(), ctx, command=command)
    assert verdict.action == "deny" and verdict.by == "plan mode"
    assert why in verdict.message and command in verdict.message
    assert "exit_plan_mode" in verdict.message


def test_auto_approve_does_not_open_plan_mode(ctx):
    policy = ApprovalPolicy(auto_approve=True, mode="plan")
    assert verdict_for(policy, RunCommand(), ctx, command="touch x").action == "deny"
    assert verdict_for(policy, WriteFileTool(), ctx, path="a", content="b").action == "deny"


def test_mode_setting_is_validated(project):
    assert load_settings(project, {"mode": "plan"}, environ={}).mode == "plan"
    assert load_settings(project, {}, environ={"ANVIL_MODE": "accept_edits"}).mode == "accept_edits"
    assert load_settings(project, {}, environ={}).mode is None
    from anvil.config import ConfigError

    with pytest.raises(ConfigError, match="mode"):
        load_settings(project, {"mode": "yolo"}, environ={})


async def test_the_loop_refuses_edits_in_plan_mode_and_the_file_is_untouched(project, tmp_path):
    turns = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "new.py", "content": "x = 1\n"}}]},
             {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
             {"text": "here is my plan"}]
    ctx = ToolContext(root=project, data_dir=tmp_path / "data")
    agent = Agent(ScriptedModel(turns), ToolRegistry([ReadFileTool(), WriteFileTool(), ExitPlanMode()]), ctx,
                  system_prompt="test", policy=plan_policy())
    results = [e async for e in agent.run_turn("plan it") if isinstance(e, ToolResultEvent)]
    assert [(r.name, r.ok) for r in results] == [("write_file", False), ("read_file", True)]
    assert "plan mode: you can only read and plan" in results[0].output
    assert not (project / "new.py").exists()
