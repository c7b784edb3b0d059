"""The tools the model works with, one module per family."""

from __future__ import annotations

from anvil.core.tools.base import ToolRegistry


def default_tools() -> ToolRegistry:
    """Every built-in tool, in the order the model sees them."""
    return ToolRegistry([])
