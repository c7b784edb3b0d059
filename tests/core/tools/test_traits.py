"""Every tool declares what it is (kind, whether it mutates, what approval it needs), and the policy, the loop
and sub-agents decide from those traits: checked over every built-in tool, the web tools, task and MCP tools."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, get_args

import pytest

from anvil.core.mcp.tools import McpTool
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.subagents.agent_types import BUILTIN_TYPES, AgentType, select_tools
from anvil.core.subagents.task_tool import TaskTool
from anvil.core.tools import default_tools
from anvil.core.tools.base import Approval, Tool, ToolContext, ToolKind, ToolRegistry
from anvil.core.tools.web.web_tools import WebConfig, web_tools

#: kinds whose calls change something by definition, and kinds that never do
CHANGING_KINDS = {"edit", "delete", "move"}
HARMLESS_KINDS = {"read", "search", "think", "fetch", "switch_mode"}


def mcp_tool(name: str, read_only_hint: bool | None) -> McpTool:
    annotations = None if read_only_hint is None else SimpleNamespace(read_only_hint=read_only_hint)
    remote = SimpleNamespace(name=name, description=f"The {name} tool.", annotations=annotations,
                             input_schema={"type": "object", "properties": {}})
    return McpTool(SimpleNamespace(name="demo"), remote)  # type: ignore[arg-type]


def every_tool(policy: ApprovalPolicy) -> ToolRegistry:
    registry = default_tools()
    for tool in web_tools({"BRAVE_API_KEY": "key"}, WebConfig()):
        registry.add(tool)
    registry.add(TaskTool(ScriptedModel([]), registry, policy))
    for tool in (mcp_tool("lookup", True), mcp_tool("deploy", False), mcp_tool("unmarked", None)):
        registry.add(tool)
    return registry


@pytest.fixture
def ctx(tmp_path: Any) -> ToolContext:
    return ToolContext(root=tmp_path, data_dir=tmp_path / "data")


def declared(tool: Tool, trait: str) -> bool:
    """Whether the tool's own class (or the instance, for tools made at run time) sets the trait."""
    return trait in vars(tool) or any(trait in vars(cls) for cls in type(tool).__mro__ if cls is not Tool)


def test_every_tool_declares_consistent_traits() -> None:
    tools = every_tool(ApprovalPolicy()).tools()
    assert len(tools) == 21
    for tool in tools:
        assert declared(tool, "kind"), f"{tool.name} does not say what kind of tool it is"
        assert tool.kind in get_args(ToolKind) and tool.approval in get_args(Approval), tool.name
        assert isinstance(tool.mutates, bool), tool.name
        if tool.kind in CHANGING_KINDS:
            assert tool.mutates, f"{tool.name} is of kind {tool.kind} but says it changes nothing"
        if tool.kind in HARMLESS_KINDS:
            assert not tool.mutates, f"{tool.name} is of kind {tool.kind} but says it changes things"
        if tool.approval == "edit":
            assert tool.kind == "edit" and tool.mutates, tool.name
        # a command is judged by the command policy exactly when the tool says which command it runs
        assert (tool.approval == "command") == (type(tool).command is not Tool.command), tool.name
        # a rule subject only matters to tools whose calls tool rules decide
        if type(tool).rule_subject is not Tool.rule_subject:
            assert tool.approval == "rule", tool.name
        if tool.runs_tests or tool.approval == "command":
            assert tool.kind == "execute" and tool.mutates, tool.name
        if tool.polls:
            assert not tool.mutates, tool.name
    by_name = {tool.name: tool for tool in tools}
    assert not by_name["mcp__demo__lookup"].mutates  # only the server's readOnlyHint makes an MCP tool harmless
    assert by_name["mcp__demo__deploy"].mutates and by_name["mcp__demo__unmarked"].mutates


def test_plan_mode_refuses_every_mutating_tool_and_lets_the_others_through(ctx: ToolContext) -> None:
    policy = ApprovalPolicy(mode="plan", rule_lists={"project": (["touch *", "ls *", "*(*)"], [])})
    registry = every_tool(policy)
    refused = []
    for tool in registry.tools():
        args: Any = tool.Args.model_construct()
        if tool.approval == "command":
            args = tool.Args.model_validate({"command": "touch made.txt"})  # allowed by a rule, but it writes
        verdict = policy.evaluate(tool, args, ctx)
        if tool.mutates:
            assert verdict.action == "deny" and "plan mode" in verdict.message, tool.name
            refused.append(tool.name)
        else:
            assert verdict.action != "deny", f"{tool.name} changes nothing, yet plan mode refused it"
    assert {"write_file", "edit_file", "multi_edit", "run_command", "kill_command", "run_tests",
            "mcp__demo__deploy"} <= set(refused)
    assert "task" not in refused  # its sub-agent obeys plan mode too, so it may explore
    policy.set_mode("ask")
    assert registry.get("task").mutates  # type: ignore[union-attr]


def test_sub_agents_get_tools_by_their_traits() -> None:
    registry = every_tool(ApprovalPolicy())
    for agent_type in [*BUILTIN_TYPES.values(), AgentType("careful", "d", "p", read_only=True)]:
        chosen = select_tools(registry, agent_type).tools()
        assert not any(tool.main_agent_only for tool in chosen), agent_type.name
        if agent_type.read_only:
            assert chosen and not any(tool.mutates for tool in chosen), agent_type.name
    explore = select_tools(registry, BUILTIN_TYPES["explore"]).tools()
    assert {tool.kind for tool in explore} == {"read", "search"}
    general = select_tools(registry, BUILTIN_TYPES["general"]).names()
    assert "task" not in general and "exit_plan_mode" not in general and "write_file" in general
