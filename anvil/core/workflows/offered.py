"""The tools the model is offered: every tool of the session, or those a workflow chooses for its current phase.

The loop reads tools only through this view. Without a workflow it shows the session's registry as it is; with
one, what :meth:`~anvil.core.workflows.base.Workflow.offered_tools` chooses from it. It follows the registry as it
changes (an MCP server coming up, ``/model`` swapping the edit tools), and ``add``/``remove`` go to the registry
underneath, so the code that keeps the session's tools up to date needs to know nothing of workflows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from anvil.core.tools.base import PreparedCall, Tool, ToolRegistry

Chooser = Callable[[Sequence[Tool]], list[Tool]]


class OfferedTools(ToolRegistry):
    def __init__(self, base: ToolRegistry) -> None:
        super().__init__()
        self.base = base
        self._choose: Chooser | None = None
        self._seen: int | None = None  # the registry's version the chosen tools were taken from

    def offer(self, choose: Chooser | None) -> None:
        """Choose with ``choose`` from now on (None: every tool of the registry)."""
        self._choose = choose
        self.refresh()

    def refresh(self) -> None:
        """Choose again at the next look (the workflow changed phase)."""
        self._seen = None

    def _sync(self) -> None:
        if self._seen == self.base.version:
            return
        tools = self.base.tools()
        chosen = self._choose(tools) if self._choose is not None else tools
        self._tools = {tool.name: tool for tool in chosen}
        self._schemas = None
        self._seen = self.base.version

    def add(self, tool: Tool) -> None:
        self.base.add(tool)

    def remove(self, name: str) -> None:
        self.base.remove(name)

    def get(self, name: str) -> Tool | None:
        self._sync()
        return super().get(name)

    def names(self) -> list[str]:
        self._sync()
        return super().names()

    def tools(self) -> list[Tool]:
        self._sync()
        return super().tools()

    def schemas(self) -> list[dict[str, Any]]:
        self._sync()
        return super().schemas()

    def prepare(self, name: str, arguments: str) -> PreparedCall:
        self._sync()
        return super().prepare(name, arguments)
