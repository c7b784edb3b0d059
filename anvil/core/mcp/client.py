"""MCP servers: connecting to them in the background and keeping them for the session.

Configuration (``mcp_servers`` in the settings, a :class:`McpServerConfig` per server)::

    [mcp_servers.github]
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-github"]
    env = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }   # ${VAR} is taken from anvil's environment

    [mcp_servers.docs]
    url = "https://example.com/mcp"              # streamable HTTP
    headers = { Authorization = "Bearer ${DOCS_TOKEN}" }

Each server gets one long-lived task that enters the client (transport, then session) and later exits
it: anyio's cancel scopes must be entered and left in the same task, so the connection never moves
between tasks; tool calls from the agent's task just send requests over it. Servers start in parallel,
each within its own ``start_timeout``; :meth:`McpManager.start` returns at once, so nothing waits for
them. A server that fails to start or dies is reported once (``on_message`` and ``messages``), marked
``failed``, and its tools answer with an error saying so; the rest of the session goes on.

The mcp package (about a second to import) is imported in a worker thread when the first server starts,
so neither start-up nor a front end's event loop pays for it.

A stdio server's stderr goes to ``<log_dir>/<name>.log`` (never to the terminal anvil draws on); failure
messages name that file.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from anvil.core.mcp.config import McpServerConfig, ServerState, ServerStatus, expand_env
from anvil.core.mcp.tools import McpTool, describe_resource
from anvil.core.tools.base import Tool, ToolRegistry
from anvil.core.tools.errors import ToolError

#: ``@server:uri`` in a prompt attaches that resource (see :meth:`McpManager.attach_resources`).
RESOURCE_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9_-]+):(\S+)")


def _client_info() -> Any:
    from mcp_types import Implementation

    from anvil import __version__

    return Implementation(name="anvil", version=__version__)


async def _load_mcp() -> None:
    """Import the mcp package in a thread: it takes about a second, which would freeze a front end's loop."""
    if "mcp.client.streamable_http" not in sys.modules:
        await asyncio.to_thread(import_mcp)


def import_mcp() -> None:
    """The mcp package's client modules (a front end may load them ahead, in a pause of typing)."""
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


def _root_cause(exc: BaseException) -> BaseException:
    # anyio wraps failures of its task groups in exception groups; the first leaf is the real story
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    exc = _root_cause(exc)
    text = str(getattr(exc, "message", "") or exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class McpServer:
    """One configured server and its connection, owned by one long-lived task."""

    def __init__(self, name: str, config: McpServerConfig, root: Path, log_dir: Path,
                 report: Callable[[str], None], changed: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self.config = config
        self.root = root
        self.log_path = log_dir / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.log"
        self._report = report
        self._changed = changed
        self.state: ServerState = "starting" if config.enabled else "stopped"
        self.error: str | None = None
        self.tools: list[McpTool] = []
        self.client: Any = None
        self.started = asyncio.Event()  # set once starting is over, whatever the outcome
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._reported = False
        self._log_start = 0  # where this run's stderr starts in the (appended) log

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "http" if self.config.url else "stdio"

    def start(self) -> None:
        if not self.config.enabled:
            self.started.set()
        elif self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"anvil-mcp-{self.name}")

    async def _run(self) -> None:
        try:
            await _load_mcp()
            from mcp import Client

            async with contextlib.AsyncExitStack() as stack:
                try:
                    async with asyncio.timeout(self.config.start_timeout):
                        transport = await self._transport(stack)
                        self.client = await stack.enter_async_context(Client(transport, client_info=_client_info()))
                        self.tools = await self._list_tools()
                except TimeoutError:
                    self._fail(f"did not start within {self.config.start_timeout:g} s", starting=True)
                    return
                except Exception as exc:
                    self._fail(self._start_error(exc), starting=True)
                    return
                self.state = "ready"
                self.started.set()
                self._changed()
                await self._stop.wait()
        except Exception as exc:  # mcp missing, or leaving the client failed (a dead process): the session goes on
            if self.state == "starting":
                self._fail(self._start_error(exc), starting=True)
            elif self.state == "ready":
                self._fail(f"stopped with an error: {_describe(exc)}")
        finally:
            self.client = None
            if self.state in ("starting", "ready"):
                self.state = "stopped"
                self._changed()
            self.started.set()

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        """The transport the client enters: a stdio subprocess or a streamable-HTTP connection."""
        config = self.config
        if config.url:
            from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

            headers = {k: expand_env(v) for k, v in config.headers.items()}
            http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            return streamable_http_client(config.url, http_client=http)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        assert config.command is not None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        errlog = stack.enter_context(self.log_path.open("a", encoding="utf-8"))
        self._log_start = errlog.tell()
        cwd = (self.root / config.cwd).resolve() if config.cwd else self.root
        params = StdioServerParameters(command=config.command, args=list(config.args), cwd=cwd,
                                       env={k: expand_env(v) for k, v in config.env.items()})
        return stdio_client(params, errlog=errlog)

    def _start_error(self, exc: BaseException) -> str:
        cause = _root_cause(exc)
        if isinstance(cause, ImportError):
            return f"the mcp package cannot be imported ({cause}); reinstall anvil with its dependencies"
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        if isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED and self.transport == "stdio":
            return f"`{self.config.command}` exited before it finished starting"
        if isinstance(cause, FileNotFoundError) and self.transport == "stdio":
            return f"`{self.config.command}` was not found; check the command and that it is on PATH"
        return _describe(cause)

    async def _list_tools(self) -> list[McpTool]:
        remote: list[Any] = []
        cursor: str | None = None
        for _ in range(100):  # a server whose pages never end must not hang the start
            page = await self.client.list_tools(cursor=cursor)
            remote.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return [McpTool(self, tool) for tool in remote]

    def _fail(self, why: str, *, starting: bool = False) -> None:
        self.state = "failed"
        self.error = why
        self.started.set()
        self._stop.set()  # let the owner task leave the client, which stops the process
        self._changed()
        if not self._reported:
            self._reported = True
            if self.transport == "stdio":
                said = self._stderr_tail()
                where = (f" It said: {said!r}." if said else "") + f" Its error output is in {self.log_path}."
            else:
                where = f" URL: {self.config.url}."
            what = "failed to start" if starting else "stopped working"
            self._report(f"MCP server '{self.name}' {what} ({why}).{where} anvil goes on without its tools; fix "
                         f"[mcp_servers.{self.name}] in the config (or set enabled = false) and restart anvil.")

    def _stderr_tail(self, limit: int = 300) -> str:
        """The last lines the server wrote to stderr in this run: usually the reason it failed."""
        try:
            with self.log_path.open("r", encoding="utf-8", errors="replace") as log:
                log.seek(self._log_start)
                lines = [line.strip() for line in log.read()[-4000:].splitlines() if line.strip()]
        except OSError:
            return ""
        return " / ".join(lines[-3:])[-limit:]

    def unavailable(self) -> str:
        if self.state == "failed":
            return (f"The MCP server '{self.name}' is not available ({self.error}), so its tools cannot run in "
                    "this session. Use other tools, or tell the user to check it with /mcp.")
        if self.state == "starting":
            return f"The MCP server '{self.name}' is still starting. Try again in a moment."
        return f"The MCP server '{self.name}' is stopped, so its tools cannot run. Use other tools."

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call a tool; a dead server is reported once and every call then fails with a clear message."""
        client = self.client
        if self.state != "ready" or client is None:
            raise ToolError(self.unavailable())
        try:
            return await client.call_tool(tool, arguments, read_timeout_seconds=self.config.call_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise ToolError(self._call_failed(tool, exc)) from None

    def _call_failed(self, what: str, exc: BaseException) -> str:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        cause = _root_cause(exc)
        if (isinstance(cause, MCPError) and cause.code == REQUEST_TIMEOUT) or isinstance(cause, TimeoutError):
            return (f"The MCP server '{self.name}' did not answer {what} within {self.config.call_timeout:g} s. "
                    "Retry with a smaller request, or use other tools.")
        if isinstance(cause, MCPError) and cause.code != CONNECTION_CLOSED:
            return f"The MCP server '{self.name}' refused {what}: {cause.message}"
        if isinstance(cause, MCPError) or self.transport == "stdio":  # the connection is gone for good
            self._fail(f"the connection closed: {_describe(cause)}")
            return self.unavailable()
        return f"Could not reach the MCP server '{self.name}' for {what} ({_describe(cause)}). Retry once."

    async def read_resource(self, uri: str) -> str:
        client = self.client
        if self.state != "ready" or client is None:
            raise ToolError(self.unavailable())
        try:
            result = await client.read_resource(uri)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise ToolError(self._call_failed(f"the read of {uri}", exc)) from None
        return "\n".join(describe_resource(contents) for contents in result.contents) or f"[resource {uri}: empty]"

    async def close(self, grace: float = 10.0) -> None:
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if self.state == "starting":  # still connecting: nothing to finish politely
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(task), grace)
        if not task.done():  # the client did not close in time: cancel (stdio_client still kills the process)
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        self.state = "stopped" if self.state != "failed" else "failed"


class McpManager:
    """Every configured server, started in the background; tools of ready servers, status for ``/mcp``."""

    def __init__(self, config: dict[str, McpServerConfig], root: Path, *, log_dir: Path,
                 on_message: Callable[[str], None] | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        """``log_dir`` holds each stdio server's stderr. ``on_message`` gets each failure report (once per
        server); ``on_change`` is called whenever a server becomes ready, fails or stops - the moment to call
        :meth:`sync_registry` and refresh ``/mcp``. Both run on the event loop, in the server's task."""
        self.messages: list[str] = []
        self.on_message = on_message
        self.on_change = on_change
        self.servers = {name: McpServer(name, cfg, root.resolve(), log_dir, self._report, self._notify_change)
                        for name, cfg in config.items()}

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

    def tools(self) -> list[Tool]:
        """The tools of the servers that are ready now."""
        return [tool for server in self.servers.values() if server.state == "ready" for tool in server.tools]

    def sync_registry(self, registry: ToolRegistry) -> list[str]:
        """Add the tools of servers that became ready; returns the names added.

        Tools of a server that later failed stay registered and answer with an error naming the server,
        which tells the model more than "unknown tool" and keeps the tool list (and the prompt cache) stable.
        """
        added = []
        for tool in self.tools():
            if registry.get(tool.name) is None:
                registry.add(tool)
                added.append(tool.name)
        return added

    def status(self) -> list[ServerStatus]:
        return [ServerStatus(s.name, s.state, [t.name for t in s.tools], s.error, s.transport)
                for s in self.servers.values()]

    async def read_resource(self, server: str, uri: str) -> str:
        """The text of a resource (binary contents described), for ``@server:uri`` attachments."""
        found = self.servers.get(server)
        if found is None:
            known = ", ".join(self.servers) or "none configured"
            raise ToolError(f"There is no MCP server named '{server}' (known: {known}). Write @server:uri with "
                            "a server from the [mcp_servers] config.")
        return await found.read_resource(uri)

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

    async def close(self) -> None:
        """Stop every server (stdio processes end with their client); safe to call twice."""
        await asyncio.gather(*(s.close() for s in self.servers.values()), return_exceptions=True)
