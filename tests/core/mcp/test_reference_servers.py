"""anvil against MCP's reference server, `@modelcontextprotocol/server-everything` from npm (nobody here wrote
it): its tools, progress, roots, images, resources, prompts, instructions and task-only tool, over stdio and
over the legacy SSE transport.

The package is installed once into ``~/.cache/anvil-tests`` (a pinned version, so the expectations hold);
without node and npm, or without the registry, these tests are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import Event, ToolProgress
from anvil.core.mcp.config import McpServerConfig
from anvil.core.tools.base import ToolContext
from tests.core.mcp.conftest import connected

VERSION = "2026.8.31"
PACKAGE = "@modelcontextprotocol/server-everything"


@pytest.fixture(scope="session")
def everything() -> Path:
    """The server's entry point, installed with npm on first use."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "anvil-tests"
    home = cache / f"server-everything-{VERSION}"
    entry = home / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if entry.exists():
        return entry
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("the MCP reference server needs node and npm, which are not installed")
    partial = home.with_name(home.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(partial),
                           f"{PACKAGE}@{VERSION}"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"npm could not install {PACKAGE}@{VERSION}: {reason}")
    partial.rename(home)
    return entry


def ctx_for(project: Path, tmp_path: Path, events: list[Event] | None = None) -> ToolContext:
    ctx = ToolContext(root=project, data_dir=tmp_path / "data")
    if events is not None:
        ctx.emit = events.append
    return ctx


async def call(manager: Any, name: str, ctx: ToolContext, **args: Any) -> Any:
    tool = {t.name: t for t in manager.tools()}[name]
    return await tool.run(tool.Args.model_validate(args), ctx)


async def test_everything_over_stdio(everything: Path, project: Path, tmp_path: Path) -> None:
    config = McpServerConfig(command="node", args=[str(everything), "stdio"])
    async with connected(project, tmp_path / "logs", {"everything": config}) as manager:
        status = manager.status()[0]
        assert status.state == "ready", manager.messages
        assert {"mcp__everything__get-sum", "mcp__everything__get-roots-list"} <= set(status.tools)
        assert status.skipped == ["simulate-research-query"]  # it only runs as a task
        assert "mcp__everything__args-prompt" in status.prompts
        assert "Everything Server" in manager.instructions_text()
        ctx = ctx_for(project, tmp_path)

        assert "5" in (await call(manager, "mcp__everything__get-sum", ctx, a=2, b=3)).output
        roots = await call(manager, "mcp__everything__get-roots-list", ctx)
        assert project.resolve().as_uri() in roots.output

        events: list[Event] = []
        done = await call(manager, "mcp__everything__trigger-long-running-operation",
                          ctx_for(project, tmp_path, events), duration=1, steps=3)
        assert done.ok and "Long running operation completed" in done.output
        assert [e.progress for e in events if isinstance(e, ToolProgress)][-1] == 3

        image = await call(manager, "mcp__everything__get-tiny-image", ctx)
        assert image.images and image.images[0]["mime_type"] == "image/png"

        listed = await call(manager, "list_mcp_resources", ctx, server="everything")
        uri = "demo://resource/static/document/architecture.md"
        assert f"everything: {uri}" in listed.output
        read = await call(manager, "read_mcp_resource", ctx, server="everything", uri=uri)
        assert read.output.startswith(f"[resource {uri}]\n") and len(read.output) > 200

        assert "Paris" in await manager.prompt_text("mcp__everything__args-prompt", "city=Paris")


@pytest.fixture
def everything_sse(everything: Path) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(["node", str(everything), "sse"], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/sse"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_everything_over_the_legacy_sse_transport(everything_sse: str, project: Path, tmp_path: Path) -> None:
    config = McpServerConfig(type="sse", url=everything_sse)
    async with connected(project, tmp_path / "logs", {"old": config}) as manager:
        assert manager.status()[0].state == "ready", manager.messages
        echoed = await call(manager, "mcp__old__echo", ctx_for(project, tmp_path), message="over SSE")
        assert "over SSE" in echoed.output
