"""Every configured MCP server of a session: started in the background, their tools kept in the registry, their
instructions for the model, their resources and prompts for the person, and the status ``/mcp`` shows.

Servers start in parallel, each within its own ``start_timeout``; :meth:`McpManager.start` returns at once, so
nothing waits for them (headless runs wait with :meth:`McpManager.wait_started`). ``on_change`` is called
whenever a server becomes ready, fails, stops or changes its tools or prompts: the moment to call
:meth:`sync_registry` and to refresh the system prompt with :meth:`instructions_text`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anvil.core.mcp.client import McpServer
from anvil.core.mcp.config import McpServerConfig, ServerStatus
from anvil.core.mcp.prompts import command_name, parse_arguments, render
from anvil.core.mcp.resources import ListMcpResources, ReadMcpResource
from anvil.core.mcp.tools import PREFIX, describe_resource, sanitize
from anvil.core.mcp.transport import keep_sdk_logs_in
from anvil.core.tools.base import Tool, ToolRegistry
from anvil.core.tools.errors import ToolError

#: ``@server:uri`` in a prompt attaches that resource (see :meth:`McpManager.attach_resources`).
RESOURCE_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9_-]+):(\S+)")
#: characters of one server's instructions put into the system prompt
MAX_INSTRUCTIONS = 4000


class McpManager:
    """Every configured server, started in the background; tools of ready servers, status for ``/mcp``."""

    def __init__(self, config: dict[str, McpServerConfig], root: Path, *, log_dir: Path,
                 on_message: Callable[[str], None] | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        """``log_dir`` holds each stdio server's stderr. ``on_message`` gets each failure report (once per
        server); ``on_change``: see the module's docstring. Both run on the event loop, in the server's task."""
        self.messages: list[str] = []
        self.on_message = on_message
        self.on_change = on_change
        keep_sdk_logs_in(log_dir)
        self.servers = {name: McpServer(name, cfg, root.resolve(), log_dir, self._report, self._notify_change)
                        for name, cfg in config.items()}
        self._resource_tools: list[Tool] = [ListMcpResources(self), ReadMcpResource(self)]

    def _notify_change(self) -> None:
        if self.on_change is not None:
            with contextlib.suppress(Exception):
                self.on_change()

    def _report(self, message: str) -> None:
        self.messages.append(message)
        if self.on_message is not None:
            with contextlib.suppress(Exception):  # a broken listener must not break the server's task
                self.on_message(message)

    async def start(self) -> None:
        """Start every enabled server in the background and return at once."""
        for server in self.servers.values():
            server.start()

    async def wait_started(self, timeout: float | None = None) -> None:
        """Wait until every server is ready or failed (headless runs want the tools before the first turn)."""
        waits = asyncio.gather(*(s.started.wait() for s in self.servers.values()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waits, timeout)

    def _ready(self) -> list[McpServer]:
        return [server for server in self.servers.values() if server.state == "ready"]

    def tools(self) -> list[Tool]:
        """The tools of the servers that are ready now, and the resource tools once one of them has resources."""
        found: list[Tool] = [tool for server in self._ready() for tool in server.tools]
        if any(server.has_resources for server in self._ready()):
            found += self._resource_tools
        return found

    def sync_registry(self, registry: ToolRegistry) -> list[str]:
        """Add the tools of servers that became ready, drop those a ready server no longer lists; returns the
        names added.

        Tools of a server that later failed stay registered and answer with an error naming the server,
        which tells the model more than "unknown tool" and keeps the tool list (and the prompt cache) stable.
        """
        current = self.tools()
        listed = {tool.name for tool in current}
        for server in self._ready():
            prefix = f"{PREFIX}{sanitize(server.name)}__"
            for name in registry.names():
                if name.startswith(prefix) and name not in listed:
                    registry.remove(name)
        added = []
        for tool in current:
            if registry.get(tool.name) is not tool:
                registry.add(tool)
                added.append(tool.name)
        return added

    def status(self) -> list[ServerStatus]:
        return [ServerStatus(s.name, s.state, [t.name for t in s.tools], s.error, s.transport, list(s.skipped),
                             [command_name(s.name, p.name) for p in s.prompts])
                for s in self.servers.values()]

    def instructions_text(self) -> str:
        """What the ready servers ask of the model (their ``instructions``), for the system prompt."""
        parts = [f"## {server.name} (tools named mcp__{server.name}__*)\n{server.instructions[:MAX_INSTRUCTIONS]}"
                 for server in self._ready() if server.instructions]
        if not parts:
            return ""
        return "# Instructions from MCP servers\n\nThe MCP servers connected to this session say:\n\n" + \
            "\n\n".join(parts)

    # -- resources -------------------------------------------------------------------------------------

    def _server(self, name: str) -> McpServer:
        found = self.servers.get(name)
        if found is None:
            known = ", ".join(self.servers) or "none configured"
            raise ToolError(f"There is no MCP server named '{name}' (known: {known}). Write @server:uri with "
                            "a server from the [mcp_servers] config.")
        return found

    async def list_resources(self, server: str | None) -> list[tuple[str, Any]]:
        chosen = [self._server(server)] if server else [s for s in self._ready() if s.has_resources]
        return [(s.name, resource) for s in chosen for resource in await s.list_resources()]

    async def read_resource_contents(self, server: str, uri: str) -> list[Any]:
        return await self._server(server).read_resource(uri)

    async def read_resource(self, server: str, uri: str) -> str:
        """The text of a resource (binary contents described), for ``@server:uri`` attachments."""
        contents = await self.read_resource_contents(server, uri)
        return "\n".join(describe_resource(item) for item in contents) or f"[resource {uri}: empty]"

    async def attach_resources(self, text: str) -> tuple[str, list[str]]:
        """The prompt with every ``@server:uri`` of a known server's resource appended; and the problems."""
        blocks, problems = [], []
        for match in RESOURCE_MENTION.finditer(text):
            server, uri = match.group(1), match.group(2).rstrip(".,;:!?)")
            if server not in self.servers:
                continue  # not ours: "@user:..." or a path with a colon
            try:
                content = await self.read_resource(server, uri)
            except ToolError as exc:
                problems.append(str(exc))
                continue
            blocks.append(f'<resource server="{server}" uri="{uri}">\n{content}\n</resource>')
        return (text + "\n\n" + "\n\n".join(blocks) if blocks else text), problems

    # -- prompts ---------------------------------------------------------------------------------------

    def prompt_commands(self) -> list[tuple[str, str]]:
        """(slash command, help) for every prompt of the ready servers."""
        return [(command_name(s.name, p.name), (p.description or p.title or f"prompt of {s.name}").strip()[:100])
                for s in self._ready() for p in s.prompts]

    async def prompt_text(self, command: str, arguments: str) -> str:
        """The messages of the prompt behind ``/command``, as one message to send; a ToolError says what is
        wrong (no such prompt, a missing argument, the server refused)."""
        for server in self.servers.values():
            for prompt in server.prompts:
                if command_name(server.name, prompt.name) == command:
                    values = parse_arguments(command, prompt, arguments)
                    text = render(await server.get_prompt(prompt.name, values))
                    if not text.strip():
                        raise ToolError(f"/{command} came back empty from the MCP server '{server.name}'.")
                    return text
        raise ToolError(f"/{command} is no prompt of a connected MCP server; /mcp lists their prompts.")

    async def close(self) -> None:
        """Stop every server (stdio processes end with their client); safe to call twice."""
        await asyncio.gather(*(s.close() for s in self.servers.values()), return_exceptions=True)
