"""The demo MCP server (tests/support/mcp_demo_server.py): started for a test over stdio, streamable HTTP or
SSE, and a manager connected to it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from anvil.core.mcp.config import McpServerConfig
from anvil.core.mcp.manager import McpManager
from tests.support.mcp_servers import DEMO_SERVER


@asynccontextmanager
async def connected(project: Path, log_dir: Path, servers: dict[str, McpServerConfig],
                    **options: Any) -> AsyncIterator[McpManager]:
    manager = McpManager(servers, project, log_dir=log_dir, **options)
    await manager.start()
    await manager.wait_started(timeout=30)
    try:
        yield manager
    finally:
        await manager.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def serve() -> Iterator[Callable[[str], str]]:
    """``serve("http" | "sse")`` runs the demo server on a free port and returns its endpoint's URL."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(transport: str) -> str:
        port = _free_port()
        procs.append(subprocess.Popen([sys.executable, str(DEMO_SERVER), transport, str(port)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        return f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(10)
