"""The MCP client's protocol features against the demo server built on the mcp SDK: progress, tools that change
at run time, instructions, roots, prompts, resource tools, images, the SSE transport, and servers that write
something other than JSON-RPC to stdout."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from anvil.core.events import Event, ToolProgress, ToolResultEvent
from anvil.core.loop.agent import Agent
from anvil.core.mcp.client import McpServer
from anvil.core.mcp.config import McpServerConfig
from anvil.core.mcp.manager import McpManager
from anvil.core.mcp.transport import SETUP_ERROR, McpSetupError
from anvil.core.model.errors import classify_error
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.tools.base import Tool, ToolContext, ToolRegistry
from anvil.core.tools.errors import ToolError
from tests.core.mcp.conftest import connected
from tests.support.mcp_demo_server import INSTRUCTIONS
from tests.support.mcp_servers import demo_config as demo


def ctx_for(project: Path, tmp_path: Path, events: list[Event] | None = None) -> ToolContext:
    ctx = ToolContext(root=project, data_dir=tmp_path / "data")
    if events is not None:
        ctx.emit = events.append
    ctx.state["call_id"] = "call-1"
    return ctx


def tool(manager: McpManager, name: str) -> Tool:
    found = {t.name: t for t in manager.tools()}
    return found[name]


async def run(t: Tool, ctx: ToolContext, **args: Any) -> Any:
    return await t.run(t.Args.model_validate(args), ctx)


async def test_progress_notifications_become_events_while_the_call_runs(project: Path, tmp_path: Path) -> None:
    async with connected(project, tmp_path / "logs", {"demo": demo()}) as manager:
        events: list[Event] = []
        result = await run(tool(manager, "mcp__demo__count"), ctx_for(project, tmp_path, events), steps=3)
    assert result.ok and result.output == "counted to 3"
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [(p.progress, p.total, p.message) for p in progress] == [(1, 3, "step 1"), (2, 3, "step 2"),
                                                                     (3, 3, "step 3")]
    assert {(p.call_id, p.name) for p in progress} == {("call-1", "mcp__demo__count")}


async def test_the_loop_passes_progress_on_before_the_result(project: Path, tmp_path: Path) -> None:
    async with connected(project, tmp_path / "logs", {"demo": demo()}) as manager:
        registry = ToolRegistry()
        manager.sync_registry(registry)
        model = ScriptedModel([{"tool_calls": [{"name": "mcp__demo__count", "arguments": {"steps": 2}}]},
                               {"text": "done"}])
        agent = Agent(model, registry, ctx_for(project, tmp_path), system_prompt="s",
                      policy=ApprovalPolicy(rule_lists={"project": (["mcp__demo__*(*)"], [])}))
        events = [e async for e in agent.run_turn("count")]
    kinds = [type(e).__name__ for e in events if isinstance(e, ToolProgress | ToolResultEvent)]
    assert kinds == ["ToolProgress", "ToolProgress", "ToolResultEvent"]
    assert ToolProgress("c", "n", 2, 4).to_dict() == {"type": "tool_progress", "call_id": "c", "name": "n",
                                                      "progress": 2, "total": 4, "message": ""}


async def test_a_changed_tool_list_is_followed(project: Path, tmp_path: Path) -> None:
    registry = ToolRegistry()
    changes: list[int] = []

    def changed() -> None:
        manager.sync_registry(registry)
        changes.append(len(registry.names()))

    async with connected(project, tmp_path / "logs", {"demo": demo()}, on_change=changed) as manager:
        assert registry.get("mcp__demo__fresh") is None
        assert (await run(tool(manager, "mcp__demo__grow"), ctx_for(project, tmp_path))).output == "grown"
        deadline = time.monotonic() + 10
        while registry.get("mcp__demo__fresh") is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        fresh = registry.get("mcp__demo__fresh")
        assert fresh is not None and "Added at run time." in fresh.description
        assert (await run(fresh, ctx_for(project, tmp_path))).output == "fresh and new"


async def test_instructions_roots_and_prompts(project: Path, tmp_path: Path) -> None:
    async with connected(project, tmp_path / "logs", {"demo": demo()}) as manager:
        text = manager.instructions_text()
        assert INSTRUCTIONS in text and "## demo (tools named mcp__demo__*)" in text
        roots = await run(tool(manager, "mcp__demo__roots"), ctx_for(project, tmp_path))
        assert roots.output == f"project: {project.resolve().as_uri()}"
        assert manager.prompt_commands() == [("mcp__demo__review", "Review a file.")]
        assert await manager.prompt_text("mcp__demo__review", "src/app.py") == "Review src/app.py for bugs."
        assert await manager.prompt_text("mcp__demo__review", 'focus="error handling" file=a.py') == \
            "Review a.py for error handling."
        with pytest.raises(ToolError, match=r"needs file: /mcp__demo__review file=… \[focus=…\]"):
            await manager.prompt_text("mcp__demo__review", "")
        with pytest.raises(ToolError, match="no prompt of a connected MCP server"):
            await manager.prompt_text("mcp__demo__nope", "")
        assert manager.status()[0].prompts == ["mcp__demo__review"]


async def test_the_model_lists_and_reads_resources(project: Path, tmp_path: Path) -> None:
    async with connected(project, tmp_path / "logs", {"demo": demo()}) as manager:
        ctx = ctx_for(project, tmp_path)
        listed = await run(tool(manager, "list_mcp_resources"), ctx)
        assert listed.output == "demo: memo://greeting (greeting) - text/plain"
        read = await run(tool(manager, "read_mcp_resource"), ctx, server="demo", uri="memo://greeting")
        assert read.output == "[resource memo://greeting]\nhello from the resource"
        with pytest.raises(ToolError, match="no MCP server named 'other'"):
            await run(tool(manager, "read_mcp_resource"), ctx, server="other", uri="x://y")
        listing_tool = tool(manager, "list_mcp_resources")
        assert (listing_tool.kind, listing_tool.approval, listing_tool.mutates) == ("read", "none", False)


@pytest.mark.parametrize("images", [True, False])
async def test_images_reach_a_model_that_takes_them(project: Path, tmp_path: Path, images: bool) -> None:
    async with connected(project, tmp_path / "logs", {"demo": demo()}) as manager:
        registry = ToolRegistry()
        manager.sync_registry(registry)
        model = ScriptedModel([{"tool_calls": [{"name": "mcp__demo__picture", "arguments": {}}]}, {"text": "red"}],
                              images=images)
        agent = Agent(model, registry, ctx_for(project, tmp_path), system_prompt="s",
                      policy=ApprovalPolicy(rule_lists={"project": (["mcp__demo__*(*)"], [])}))
        [e async for e in agent.run_turn("what colour?")]
    sent = model.calls[1]
    tool_message = next(m for m in sent if m["role"] == "tool")
    pictures = [part for m in sent if isinstance(m["content"], list) for part in m["content"]
                if part["type"] == "image_url"]
    if images:
        assert tool_message["content"].endswith("[an image from this call follows in the next message]")
        assert sent[-1]["role"] == "user" and len(pictures) == 1
        assert pictures[0]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    else:
        assert tool_message["content"].endswith("not shown: this model does not take images]")
        assert pictures == []


async def test_the_legacy_sse_transport(project: Path, tmp_path: Path, serve: Any) -> None:
    url = serve("sse")
    async with connected(project, tmp_path / "logs", {"old": McpServerConfig(type="sse", url=url)}) as manager:
        assert manager.status()[0].state == "ready", manager.messages
        assert manager.status()[0].transport == "sse"
        assert (await run(tool(manager, "mcp__old__add"), ctx_for(project, tmp_path), a=2, b=3)).output == "5"


async def test_a_banner_on_stdout_is_named_and_the_server_still_works(project: Path, tmp_path: Path) -> None:
    async with connected(project, tmp_path / "logs", {"chatty": demo("--banner")}) as manager:
        assert manager.status()[0].state == "ready"
        assert (await run(tool(manager, "mcp__chatty__add"), ctx_for(project, tmp_path), a=1, b=1)).output == "2"
    assert len(manager.messages) == 1
    assert "wrote text that is not JSON-RPC to its stdout ('demo server 1.0 listening on stdio')" in \
        manager.messages[0]


async def test_a_program_that_does_not_speak_mcp_fails_fast_and_says_why(project: Path, tmp_path: Path,
                                                                        capfd: pytest.CaptureFixture[str]) -> None:
    began = time.monotonic()
    async with connected(project, tmp_path / "logs", {"tool": demo("--junk-only", start_timeout=60)}) as manager:
        status = manager.status()[0]
    assert time.monotonic() - began < 20  # not the whole start_timeout
    assert status.state == "failed"
    assert "not JSON-RPC to its stdout ('Welcome to the demo tool 1.0! Type help for help.')" in (status.error or "")
    assert len(manager.messages) == 1
    assert "Traceback" not in capfd.readouterr().err  # the SDK's traceback went to the log, not the terminal
    assert "Failed to parse JSONRPC message" in (tmp_path / "logs" / "sdk.log").read_text()


def test_tools_that_only_run_as_tasks_are_left_out() -> None:
    server = McpServer("s", McpServerConfig(command="x"), Path("/"), Path("/tmp"), lambda _: None)

    def remote(name: str, support: str | None) -> Any:
        return SimpleNamespace(name=name, description="", title=None, annotations=None, input_schema={},
                               execution=SimpleNamespace(task_support=support) if support else None)

    async def listing(**_: Any) -> Any:
        return SimpleNamespace(tools=[remote("plain", None), remote("either", "optional"),
                                      remote("research", "required")], next_cursor=None)

    server.client = SimpleNamespace(list_tools=listing)
    asyncio.run(server._list_tools())
    assert [t.remote_name for t in server.tools] == ["plain", "either"] and server.skipped == ["research"]


async def test_a_missing_mcp_package_is_a_setup_error_not_a_connection_failure(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken() -> None:
        raise McpSetupError(SETUP_ERROR.format(cause="cannot import name 'Client' from 'mcp'"))

    monkeypatch.setattr("anvil.core.mcp.client.load_mcp", broken)
    async with connected(project, tmp_path / "logs", {"demo": demo()}) as manager:
        status = manager.status()[0]
    assert status.state == "failed" and "anvil's installation is incomplete" in (status.error or "")
    assert "cannot import name 'Client'" in manager.messages[0]

    class APIConnectionError(Exception):  # litellm's wrapper, as it raises it
        pass

    try:
        try:
            raise ImportError("cannot import name 'Tool' from 'mcp.types'")
        except ImportError as cause:
            raise APIConnectionError("litellm.APIConnectionError: Connection error.") from cause
    except APIConnectionError as exc:
        error = classify_error(exc, "openai/gpt-4o")
    assert error.kind == "setup" and not error.retryable
    assert "cannot import name 'Tool' from 'mcp.types'" in error.message and "reinstall anvil" in error.message


async def test_change_notifications_of_earlier_protocol_versions_ask_for_a_new_listing() -> None:
    server = McpServer("s", McpServerConfig(command="x"), Path("/"), Path("/tmp"), lambda _: None)
    await server._on_message(SimpleNamespace(method="notifications/message"))
    assert not server._wake.is_set()
    await server._on_message(SimpleNamespace(method="notifications/tools/list_changed"))
    await server._on_message(SimpleNamespace(method="notifications/prompts/list_changed"))
    assert server._wake.is_set() and server._stale == {"tools", "prompts"}
