"""MCP servers against a small server built on the mcp package (tests/support/mcp_demo_server.py), run as a
subprocess (stdio) or served over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import ToolResultEvent, TurnEnded
from anvil.core.loop.agent import Agent
from anvil.core.mcp.config import McpServerConfig, expand_env
from anvil.core.mcp.manager import McpManager
from anvil.core.mcp.tools import McpTool, tool_name
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.tools.base import ToolContext, ToolRegistry
from anvil.core.tools.errors import ToolError

SERVER = Path(__file__).resolve().parents[2] / "support" / "mcp_demo_server.py"


@pytest.fixture(scope="module")
def server_script() -> Path:
    return SERVER


def stdio(script: Path, **extra: Any) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[str(script)], **extra)


@pytest.fixture
async def manager(server_script: Path, project: Path, tmp_path: Path) -> AsyncIterator[McpManager]:
    reports: list[str] = []
    mgr = McpManager({"demo": stdio(server_script),
                      "broken": McpServerConfig(command=str(tmp_path / "no-such-server")),
                      "off": stdio(server_script, enabled=False)},
                     project, log_dir=tmp_path / "logs", on_message=reports.append)
    await mgr.start()
    await mgr.wait_started(timeout=30)
    yield mgr
    await mgr.close()


def ctx_for(project: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(root=project, data_dir=tmp_path / "data")


def by_name(mgr: McpManager) -> dict[str, McpTool]:
    return {t.name: t for t in mgr.tools() if isinstance(t, McpTool)}


async def test_tools_are_discovered_and_calls_work(manager: McpManager, project: Path, tmp_path: Path) -> None:
    tools = by_name(manager)
    assert set(tools) == {"mcp__demo__add", "mcp__demo__fail_hard", "mcp__demo__pid", "mcp__demo__picture",
                          "mcp__demo__sleepy", "mcp__demo__count", "mcp__demo__grow", "mcp__demo__roots",
                          "mcp__demo__write_file"}
    add = tools["mcp__demo__add"]
    assert not add.mutates and tools["mcp__demo__pid"].mutates  # only what the server marks read-only
    assert (add.kind, add.approval) == ("other", "rule")
    schema = add.schema()["function"]
    assert schema["name"] == "mcp__demo__add" and "Add two numbers." in schema["description"]
    assert schema["parameters"]["required"] == ["a", "b"] and "title" not in schema["parameters"]

    registry = ToolRegistry()
    resource_tools = ["list_mcp_resources", "read_mcp_resource"]  # the demo server has resources
    assert sorted(manager.sync_registry(registry)) == sorted([*tools, *resource_tools])
    assert manager.sync_registry(registry) == []  # idempotent
    prepared = registry.prepare("mcp__demo__add", '{"a": 2, "b": 40}')
    assert prepared.error is None and prepared.tool is add
    ctx = ctx_for(project, tmp_path)
    result = await add.run(prepared.args, ctx)
    assert result.ok and result.output == "42"
    assert add.phase(prepared.args) == "demo: add"

    missing = registry.prepare("mcp__demo__add", '{"a": 2}')
    with pytest.raises(ToolError, match=r"Missing required parameter.*: b"):
        await add.run(missing.args, ctx)

    picture = await tools["mcp__demo__picture"].run(registry.prepare("mcp__demo__picture", "{}").args, ctx)
    assert picture.ok and picture.output == "[image (image/png, about 69 bytes)]"
    assert picture.images and picture.images[0]["mime_type"] == "image/png"


async def test_tool_errors_become_failed_results(manager: McpManager, project: Path, tmp_path: Path) -> None:
    fail = by_name(manager)["mcp__demo__fail_hard"]
    args = fail.Args.model_validate({"reason": "no disk"})
    result = await fail.run(args, ctx_for(project, tmp_path))
    assert not result.ok and "reported an error" in result.output and "cannot do it: no disk" in result.output


async def test_approval_asks_by_default_and_rules_match_names(manager: McpManager, project: Path,
                                                              tmp_path: Path) -> None:
    add = by_name(manager)["mcp__demo__add"]
    args = add.Args.model_validate({"a": 1, "b": 2})
    ctx = ctx_for(project, tmp_path)
    assert ApprovalPolicy().evaluate(add, args, ctx).action == "ask"
    allowed = ApprovalPolicy(rule_lists={"project": (["mcp__demo__*(*)"], [])})
    assert allowed.evaluate(add, args, ctx).action == "allow"


async def test_agent_calls_mcp_tools_and_an_interrupt_leaves_the_server_usable(
        manager: McpManager, project: Path, tmp_path: Path) -> None:
    registry = ToolRegistry()
    manager.sync_registry(registry)
    model = ScriptedModel([
        {"tool_calls": [{"name": "mcp__demo__add", "arguments": {"a": 20, "b": 22}}]},
        {"text": "It is 42."},
        {"tool_calls": [{"name": "mcp__demo__sleepy", "arguments": {"seconds": 30}}]},
        {"tool_calls": [{"name": "mcp__demo__add", "arguments": {"a": 1, "b": 1}}]},
        {"text": "2."},
    ])
    agent = Agent(model, registry, ctx_for(project, tmp_path), system_prompt="s",
                  policy=ApprovalPolicy(rule_lists={"project": (["mcp__demo__*(*)"], [])}))
    events = [e async for e in agent.run_turn("add")]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert results[0].ok and results[0].output == "42" and results[0].name == "mcp__demo__add"

    async def interrupt_soon() -> None:
        await asyncio.sleep(0.5)
        agent.interrupt()

    began = time.monotonic()
    stopper = asyncio.create_task(interrupt_soon())
    events = [e async for e in agent.run_turn("sleep")]
    await stopper
    assert time.monotonic() - began < 5
    assert [e.reason for e in events if isinstance(e, TurnEnded)] == ["interrupted"]
    events = [e async for e in agent.run_turn("again")]
    assert [e.output for e in events if isinstance(e, ToolResultEvent)] == ["2"]


async def test_failed_server_is_reported_once_and_others_keep_working(manager: McpManager, tmp_path: Path) -> None:
    states = {s.name: s for s in manager.status()}
    assert states["demo"].state == "ready" and "mcp__demo__add" in states["demo"].tools
    assert states["off"].state == "stopped" and states["off"].tools == []
    broken = states["broken"]
    assert broken.state == "failed" and broken.error and "no-such-server" in broken.error
    assert len(manager.messages) == 1
    assert "MCP server 'broken' failed to start" in manager.messages[0]
    assert "[mcp_servers.broken]" in manager.messages[0]
    assert (tmp_path / "logs" / "demo.log").read_text().count("demo server starting") >= 1  # stderr kept off screen


async def test_resources_are_read_and_attached(manager: McpManager) -> None:
    greeting = await manager.read_resource("demo", "memo://greeting")
    assert greeting == "[resource memo://greeting]\nhello from the resource"
    text, problems = await manager.attach_resources("Summarise @demo:memo://greeting. Mail me@home:x too.")
    assert problems == []
    assert text.endswith('<resource server="demo" uri="memo://greeting">\n[resource memo://greeting]\n'
                         "hello from the resource\n</resource>")
    with pytest.raises(ToolError, match="no MCP server named 'nope'"):
        await manager.read_resource("nope", "x://y")
    _, problems = await manager.attach_resources("@broken:file://a")
    assert problems and "not available" in problems[0]


async def test_server_killed_mid_session_is_reported_and_calls_fail_clearly(
        server_script: Path, project: Path, tmp_path: Path) -> None:
    mgr = McpManager({"demo": stdio(server_script)}, project, log_dir=tmp_path / "logs")
    await mgr.start()
    await mgr.wait_started(timeout=30)
    try:
        tools = by_name(mgr)
        ctx = ctx_for(project, tmp_path)
        pid = int((await tools["mcp__demo__pid"].run(tools["mcp__demo__pid"].Args(), ctx)).output)
        os.kill(pid, signal.SIGKILL)
        add = tools["mcp__demo__add"]
        for _ in range(2):  # reported once, refused every time
            with pytest.raises(ToolError, match="MCP server 'demo' is not available"):
                await add.run(add.Args.model_validate({"a": 1, "b": 2}), ctx)
        assert len(mgr.messages) == 1 and "MCP server 'demo' stopped working" in mgr.messages[0]
        assert [s.state for s in mgr.status()] == ["failed"]
        assert mgr.tools() == []
    finally:
        await mgr.close()


def _children_of(pid: int) -> list[int]:
    """Live child processes (zombies already reaped or not, a zombie has stopped running)."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            stat = Path(f"/proc/{child}/stat")
            if stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
                children.append(int(child))
    return children


async def test_close_leaves_no_process_behind(server_script: Path, project: Path, tmp_path: Path) -> None:
    registry = ToolRegistry()
    changes: list[list[str]] = []

    def changed() -> None:
        mgr.sync_registry(registry)
        changes.append(sorted(f"{s.name}:{s.state}" for s in mgr.status()))

    mgr = McpManager({"a": stdio(server_script), "b": stdio(server_script)}, project, log_dir=tmp_path / "logs",
                     on_change=changed)
    await mgr.start()
    await mgr.wait_started(timeout=30)
    assert len(_children_of(os.getpid())) >= 2
    assert changes[-1] == ["a:ready", "b:ready"] and "mcp__b__add" in registry.names()
    await mgr.close()
    await mgr.close()  # twice is fine
    assert _children_of(os.getpid()) == []
    assert {s.state for s in mgr.status()} == {"stopped"} and changes[-1] == ["a:stopped", "b:stopped"]


async def test_start_timeout_and_immediate_return(project: Path, tmp_path: Path) -> None:
    hang = McpServerConfig(command=sys.executable, args=["-c", "import sys; sys.stdin.read()"], start_timeout=0.5)
    mgr = McpManager({"slow": hang}, project, log_dir=tmp_path / "logs")
    began = time.monotonic()
    await mgr.start()
    assert time.monotonic() - began < 0.2 and mgr.status()[0].state == "starting"
    await mgr.wait_started(timeout=10)
    assert mgr.status()[0].state == "failed" and "did not start within 0.5 s" in (mgr.status()[0].error or "")
    await mgr.close()
    assert _children_of(os.getpid()) == []


def test_names_config_and_env() -> None:
    assert tool_name("git hub", "search.code") == "mcp__git_hub__search_code"
    long = tool_name("server", "x" * 100)
    assert len(long) == 64 and long != tool_name("server", "x" * 99)
    with pytest.raises(ValueError, match="exactly one of them"):
        McpServerConfig(command="a", url="http://b")
    with pytest.raises(ValueError, match="exactly one of them"):
        McpServerConfig()
    assert expand_env("Bearer ${TOKEN}-${UNSET}", {"TOKEN": "abc"}) == "Bearer abc-"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(server_script: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(server_script), "http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_streamable_http_server(http_server: str, project: Path, tmp_path: Path) -> None:
    mgr = McpManager({"web": McpServerConfig(url=http_server, headers={"X-Test": "${HOME}"})}, project,
                     log_dir=tmp_path / "logs")
    await mgr.start()
    await mgr.wait_started(timeout=30)
    try:
        assert mgr.status()[0].state == "ready", mgr.messages
        add = by_name(mgr)["mcp__web__add"]
        result = await add.run(add.Args.model_validate({"a": 3, "b": 4}), ctx_for(project, tmp_path))
        assert result.ok and result.output == "7"
        assert mgr.status()[0].transport == "http"
    finally:
        await mgr.close()
    await asyncio.sleep(0)


async def test_server_that_exits_at_start_is_reported_with_its_stderr(project: Path, tmp_path: Path) -> None:
    crash = McpServerConfig(command=sys.executable,
                            args=["-c", "import sys; print('missing API key', file=sys.stderr); sys.exit(3)"])
    mgr = McpManager({"crash": crash}, project, log_dir=tmp_path / "logs")
    await mgr.start()
    await mgr.wait_started(timeout=30)
    await mgr.close()
    assert mgr.status()[0].state == "failed" and "exited before it finished starting" in (mgr.status()[0].error or "")
    assert len(mgr.messages) == 1 and "It said: 'missing API key'" in mgr.messages[0]
    assert str(tmp_path / "logs" / "crash.log") in mgr.messages[0]
