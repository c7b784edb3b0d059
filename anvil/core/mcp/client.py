"""One MCP server: connecting to it in the background and keeping it for the session.

Configuration (``mcp_servers`` in the settings, a :class:`McpServerConfig` per server)::

    [mcp_servers.github]
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-github"]
    env = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }   # ${VAR} is taken from anvil's environment

    [mcp_servers.docs]
    url = "https://example.com/mcp"              # streamable HTTP; type = "sse" for the older HTTP+SSE transport
    headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
    call_timeout = 600                           # seconds one tool call may take (default 300)

Each server gets one long-lived task that enters the client (transport, then session) and later exits
it: anyio's cancel scopes must be entered and left in the same task, so the connection never moves
between tasks; tool calls from the agent's task just send requests over it. The same task re-lists the
server's tools and prompts when the server says they changed (``notifications/*/list_changed``). A server that
fails to start or dies is reported once (``report``), marked ``failed``, and its tools answer with an error
saying so; the rest of the session goes on.

anvil declares the roots capability: the project root is the one root it gives. Tools that can only run as
tasks (``execution.taskSupport = "required"``) are left out, since anvil does not run tasks; ``/mcp`` names
them. A stdio server's stderr goes to ``<log_dir>/<name>.log`` (never to the terminal anvil draws on); lines
it writes to stdout that are not JSON-RPC are reported by name, and end a start that gets nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anvil.core.mcp.config import McpServerConfig, ServerState, Transport
from anvil.core.mcp.tools import McpTool, Progress
from anvil.core.mcp.transport import McpSetupError, load_mcp, open_transport
from anvil.core.private_files import open_private, private_dir
from anvil.core.tools.errors import ToolError

#: seconds a starting server that wrote something other than JSON-RPC still gets to answer properly
JUNK_GRACE = 3.0
#: pages of a listing read at most (a server whose pages never end must not hang anvil)
MAX_PAGES = 100


def _client_info() -> Any:
    from mcp_types import Implementation

    from anvil import __version__

    return Implementation(name="anvil", version=__version__)


def _root_cause(exc: BaseException) -> BaseException:
    # anyio wraps failures of its task groups in exception groups; the first leaf is the real story
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    exc = _root_cause(exc)
    text = str(getattr(exc, "message", "") or exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _junk_line(exc: Exception) -> str:
    """The stdout line a server wrote that is not JSON-RPC (the SDK hands over the parse error)."""
    errors = getattr(exc, "errors", None)
    line = errors()[0].get("input") if callable(errors) and errors() else None
    text = line if isinstance(line, str) else str(exc)
    return " ".join(text.split())[:120]


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
        self.skipped: list[str] = []  # tools that need task support
        self.prompts: list[Any] = []
        self.has_resources = False
        self.instructions = ""
        self.client: Any = None
        self.started = asyncio.Event()  # set once starting is over, whatever the outcome
        self._stop = False
        self._wake = asyncio.Event()  # stop, or a list changed
        self._stale: set[str] = set()  # what the server said changed: "tools", "prompts"
        self._junk: list[str] = []  # stdout lines that were not JSON-RPC
        self._told_junk = False
        self._deadline: asyncio.Timeout | None = None
        self._task: asyncio.Task[None] | None = None
        self._reported = False
        self._log_start = 0  # where this run's stderr starts in the (appended) log

    @property
    def transport(self) -> Transport:
        return self.config.transport

    def start(self) -> None:
        if not self.config.enabled:
            self.started.set()
        elif self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"anvil-mcp-{self.name}")

    async def _run(self) -> None:
        try:
            await load_mcp()
            async with contextlib.AsyncExitStack() as stack:
                if not await self._connect(stack):
                    return
                self.state = "ready"
                self.started.set()
                self._changed()
                self._tell_junk()
                await self._serve()
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

    async def _connect(self, stack: contextlib.AsyncExitStack) -> bool:
        """Start the server and learn what it offers, within ``start_timeout``; False when that failed."""
        from mcp import Client

        try:
            async with asyncio.timeout(self.config.start_timeout) as self._deadline:
                errlog = None
                if self.transport == "stdio":
                    private_dir(self.log_path.parent)  # 0700/0600: a server's errors may show its credentials
                    fd = open_private(self.log_path, os.O_WRONLY | os.O_APPEND)
                    errlog = stack.enter_context(os.fdopen(fd, "a", encoding="utf-8"))
                    self._log_start = errlog.tell()
                transport = await open_transport(self.config, self.root, errlog, stack)
                self.client = await stack.enter_async_context(Client(
                    transport, client_info=_client_info(), list_roots_callback=self._roots,
                    message_handler=self._on_message))
                await self._discover()
        except TimeoutError:
            waited = f"did not start within {self.config.start_timeout:g} s"
            self._fail(self._junk_story() or waited, starting=True)
            return False
        except Exception as exc:
            self._fail(self._junk_story() or self._start_error(exc), starting=True)
            return False
        finally:
            self._deadline = None
        return True

    async def _discover(self) -> None:
        capabilities = self.client.server_capabilities
        self.instructions = (self.client.instructions or "").strip()
        self.has_resources = capabilities.resources is not None
        await self._list_tools()
        if capabilities.prompts is not None:
            await self._list_prompts()

    async def _list_tools(self) -> None:
        remote = await self._pages(self.client.list_tools, "tools")
        needs_tasks = {t.name for t in remote if getattr(getattr(t, "execution", None), "task_support", None)
                       == "required"}
        self.skipped = sorted(needs_tasks)
        self.tools = [McpTool(self, tool) for tool in remote if tool.name not in needs_tasks]

    async def _list_prompts(self) -> None:
        self.prompts = await self._pages(self.client.list_prompts, "prompts")

    async def _pages(self, method: Callable[..., Any], field: str) -> list[Any]:
        found: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await method(cursor=cursor, cache_mode="refresh")
            found.extend(getattr(page, field))
            cursor = page.next_cursor
            if not cursor:
                break
        return found

    async def _serve(self) -> None:
        """Until the session ends: re-list what the server says changed."""
        listener = asyncio.create_task(self._listen(), name=f"anvil-mcp-{self.name}-listen")
        try:
            while not self._stop:
                await self._wake.wait()
                self._wake.clear()
                stale, self._stale = self._stale, set()
                if not self._stop and stale:
                    await self._relist(stale)
        finally:
            listener.cancel()
            with contextlib.suppress(BaseException):
                await listener

    async def _relist(self, stale: set[str]) -> None:
        try:
            if "tools" in stale:
                await self._list_tools()
            if "prompts" in stale:
                await self._list_prompts()
        except Exception as exc:  # the old lists stay; a dead connection shows on the next call
            self._report(f"MCP server '{self.name}' said its {' and '.join(sorted(stale))} changed, but "
                         f"listing them again failed ({_describe(exc)}); anvil keeps the ones it had.")
        self._changed()

    async def _listen(self) -> None:
        """Servers on the 2026-07-28 protocol tell of changed lists on a ``subscriptions/listen`` stream instead
        of notifications (which :meth:`_on_message` takes from older ones)."""
        from mcp.client.subscriptions import PromptsListChanged, ToolsListChanged
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        capabilities = self.client.server_capabilities
        tools = bool(capabilities.tools and capabilities.tools.list_changed)
        prompts = bool(capabilities.prompts and capabilities.prompts.list_changed)
        if self.client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (tools or prompts):
            return
        with contextlib.suppress(Exception):  # no stream, or it was lost: the lists stay as they are
            async with self.client.listen(tools_list_changed=tools, prompts_list_changed=prompts) as changes:
                async for event in changes:
                    if isinstance(event, ToolsListChanged | PromptsListChanged):
                        self._stale.add("tools" if isinstance(event, ToolsListChanged) else "prompts")
                        self._wake.set()

    async def _on_message(self, message: Any) -> None:
        """Notifications the session does not handle itself, and transport faults (a line that is not JSON)."""
        if isinstance(message, Exception):
            if len(self._junk) < 3:
                self._junk.append(_junk_line(message))
            if self.state == "ready":
                self._tell_junk()
            if self._deadline is not None:  # starting: give it a moment to say something real, not the whole wait
                loop = asyncio.get_running_loop()
                when = self._deadline.when()
                self._deadline.reschedule(min(when, loop.time() + JUNK_GRACE) if when else loop.time() + JUNK_GRACE)
            return
        method = getattr(message, "method", "")
        changed = {"notifications/tools/list_changed": "tools", "notifications/prompts/list_changed": "prompts"}
        if method in changed:
            self._stale.add(changed[method])
            self._wake.set()

    def _tell_junk(self) -> None:
        """Once: the server wrote something that is not JSON-RPC to stdout, and anvil skipped it."""
        if self._junk and not self._told_junk:
            self._told_junk = True
            self._report(f"MCP server '{self.name}' wrote text that is not JSON-RPC to its stdout "
                         f"({self._junk[0]!r}); anvil ignored it. A stdio server must write its logs to stderr.")

    async def _roots(self, context: Any) -> Any:
        from mcp_types import ListRootsResult, Root

        return ListRootsResult(roots=[Root(uri=self.root.as_uri(), name=self.root.name or str(self.root))])

    def _junk_story(self) -> str:
        if not self._junk:
            return ""
        return (f"it wrote text that is not JSON-RPC to its stdout ({self._junk[0]!r}), so it is not speaking MCP "
                "there: is it an MCP server, and does it log to stdout instead of stderr?")

    def _start_error(self, exc: BaseException) -> str:
        cause = _root_cause(exc)
        if isinstance(cause, McpSetupError):
            return str(cause)
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        if isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED and self.transport == "stdio":
            return f"`{self.config.command}` exited before it finished starting"
        if isinstance(cause, FileNotFoundError) and self.transport == "stdio":
            return f"`{self.config.command}` was not found; check the command and that it is on PATH"
        return _describe(cause)

    def _fail(self, why: str, *, starting: bool = False) -> None:
        self.state = "failed"
        self.error = why
        self.started.set()
        self._stop = True
        self._wake.set()  # let the owner task leave the client, which stops the process
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
                         f"{self.config.where(self.name)} (or set enabled = false) and restart anvil.")

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

    async def request(self, what: str, send: Callable[[Any], Any]) -> Any:
        """``send(client)`` over the connection; a dead server is reported once, and every failure becomes a
        :class:`ToolError` the model can read."""
        client = self.client
        if self.state != "ready" or client is None:
            raise ToolError(self.unavailable())
        try:
            return await send(client)
        except asyncio.CancelledError:
            raise
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(self._call_failed(what, exc)) from None

    async def call(self, tool: str, arguments: dict[str, Any], progress: Progress | None = None) -> Any:
        """Call a tool, passing a progress token when ``progress`` wants the server's notifications."""
        return await self.request(tool, lambda client: client.call_tool(
            tool, arguments, read_timeout_seconds=self.config.call_timeout, progress_callback=progress))

    async def read_resource(self, uri: str) -> list[Any]:
        result = await self.request(f"the read of {uri}", lambda client: client.read_resource(uri))
        return list(result.contents)

    async def list_resources(self) -> list[Any]:
        return await self.request("the resource list", lambda _: self._pages(self.client.list_resources,
                                                                             "resources"))

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Any:
        return await self.request(f"the prompt {name}", lambda client: client.get_prompt(name, arguments))

    def _call_failed(self, what: str, exc: BaseException) -> str:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        cause = _root_cause(exc)
        if (isinstance(cause, MCPError) and cause.code == REQUEST_TIMEOUT) or isinstance(cause, TimeoutError):
            return (f"The MCP server '{self.name}' did not answer {what} within {self.config.call_timeout:g} s "
                    f"(its call_timeout). Retry with a smaller request, or use other tools.")
        if isinstance(cause, MCPError) and cause.code != CONNECTION_CLOSED:
            return f"The MCP server '{self.name}' refused {what}: {cause.message}"
        if isinstance(cause, MCPError) or self.transport == "stdio":  # the connection is gone for good
            self._fail(f"the connection closed: {_describe(cause)}")
            return self.unavailable()
        return f"Could not reach the MCP server '{self.name}' for {what} ({_describe(cause)}). Retry once."

    async def close(self, grace: float = 10.0) -> None:
        self._stop = True
        self._wake.set()
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
