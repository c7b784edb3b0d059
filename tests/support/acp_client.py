"""A scripted ACP client on the official SDK: it starts `anvil acp` as an editor would and records what it is told.

Permission requests are answered from a list of option ids, in order (``answers``); a callable answer sees the
request first (for a cancel mid-request). ``buffers`` are the editor's unsaved files (fs/read_text_file);
``terminal=True`` offers a terminal that runs what it is given with asyncio, as an editor's would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    TextContentBlock,
    UserMessageChunk,
    WaitForTerminalExitResponse,
)

Answer = str | None | Callable[[Any], Awaitable[str | None]]


@dataclass
class _Terminal:
    argv: list[str]
    cwd: str | None
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    reader: asyncio.Task[None] | None = None


class ScriptedClient:
    def __init__(self, answers: list[Answer] | None = None, *, buffers: dict[str, str] | None = None,
                 terminal: bool = False, can_answer: bool = True) -> None:
        self.answers = list(answers or [])
        self.buffers = buffers or {}
        self.terminal = terminal
        self.can_answer = can_answer
        self.updates: list[tuple[str, Any]] = []
        self.requests: list[dict[str, Any]] = []  # every permission request: tool_call and options
        self.reads: list[str] = []
        self.terminals: dict[str, _Terminal] = {}
        self.update_seen = asyncio.Event()
        self.initialized: Any = None  # the agent's answer to initialize

    # -- what the agent asks of the client -------------------------------------------------------------------

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        if not self.can_answer:
            raise RequestError.method_not_found("session/request_permission")
        self.requests.append({"tool_call": tool_call, "options": options})
        answer = self.answers.pop(0) if self.answers else None
        if callable(answer):
            answer = await answer(tool_call)
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=answer, outcome="selected"))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.update_seen.set()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))

    async def write_text_file(self, *args: Any, **kwargs: Any) -> None:
        raise RequestError.method_not_found("fs/write_text_file")

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: list[Any] | None = None, cwd: str | None = None,
                              output_byte_limit: int | None = None, **kwargs: Any) -> CreateTerminalResponse:
        argv = [command, *(args or [])]
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env={v.name: v.value for v in env or []} or None, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        terminal = _Terminal(argv, cwd, process)
        terminal.reader = asyncio.create_task(self._read(terminal))
        terminal_id = f"term-{len(self.terminals)}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def _read(self, terminal: _Terminal) -> None:
        assert terminal.process.stdout is not None
        while chunk := await terminal.process.stdout.read(4096):
            terminal.output += chunk

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str,
                                     **kwargs: Any) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        code = await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader
        return WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        code = terminal.process.returncode
        status = TerminalExitStatus(exit_code=code) if code is not None else None
        return TerminalOutputResponse(output=terminal.output.decode(errors="replace"), truncated=False,
                                      exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.terminals[terminal_id].process.kill()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.terminals[terminal_id].process.kill()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- reading what was said ----------------------------------------------------------------------------

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if getattr(u, "session_update", None) == kind]

    def said(self) -> str:
        return "".join(_text(u) for _, u in self.updates if isinstance(u, AgentMessageChunk))

    def thought(self) -> str:
        return "".join(_text(u) for _, u in self.updates if isinstance(u, AgentThoughtChunk))

    def user_said(self) -> str:
        return "".join(_text(u) for _, u in self.updates if isinstance(u, UserMessageChunk))

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=False),
                                  terminal=self.terminal)


def _text(update: Any) -> str:
    content = update.content
    return content.text if isinstance(content, TextContentBlock) else ""


@contextlib.asynccontextmanager
async def acp_agent(client: ScriptedClient, project: Path, *args: str,
                    stderr: Path | None = None) -> AsyncIterator[Any]:
    """`anvil acp ARGS` started in ``project`` and initialized; yields the connection to it."""
    err = open(stderr or os.devnull, "wb")  # noqa: SIM115 (closed below, after the process)
    try:
        async with spawn_agent_process(client, sys.executable, "-m", "anvil.cli", "acp", *args, cwd=project,
                                       env=dict(os.environ), transport_kwargs={"stderr": err}) as (conn, _process):
            client.initialized = await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=client.capabilities(),
                client_info=Implementation(name="scripted-client", version="1"))
            yield conn
    finally:
        err.close()


async def prompt(conn: Any, session_id: str, text: str) -> str:
    """Send a prompt; returns the stop reason."""
    response = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block(text)]), 60)
    return response.stop_reason


def scripted_model(directory: Path, turns: list[dict[str, Any]]) -> tuple[str, str]:
    """``--model scripted:FILE`` for ``turns``: no litellm in the agent (it starts in a third of the time), for
    tests about what the editor brings rather than the model's path (that one goes through the local server)."""
    path = directory / f"model-{len(list(directory.glob('model-*.json')))}.json"
    path.write_text(json.dumps(turns))
    return "--model", f"scripted:{path}"


def recorded_messages(data_home: Path) -> list[dict[str, Any]]:
    """The conversation as the sessions under ``$XDG_DATA_HOME`` recorded it: what the model was sent and read."""
    messages = []
    for file in sorted((data_home / "anvil" / "sessions").glob("*/*.jsonl")):
        for line in file.read_text().splitlines():
            record = json.loads(line)
            if record.get("t") == "message":
                messages.append(record["message"])
    return messages


def tool_results(data_home: Path) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in recorded_messages(data_home) if m["role"] == "tool"}
