"""Where the demo MCP server is (tests/support/mcp_demo_server.py), and its configuration for a test."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from anvil.core.mcp.config import McpServerConfig

DEMO_SERVER = Path(__file__).resolve().parent / "mcp_demo_server.py"


def demo_config(*args: str, **extra: Any) -> McpServerConfig:
    """The demo server over stdio, run by this interpreter; ``args`` such as ``--banner``."""
    return McpServerConfig(command=sys.executable, args=[str(DEMO_SERVER), *args], **extra)
