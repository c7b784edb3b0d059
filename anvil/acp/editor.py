"""What the editor offers the tools, over the ACP connection: its text of a file (unsaved changes included) and,
when the person chose it (``[acp] terminal = true``), its terminal for the model's commands.

Both sit behind seams the core declares (``ToolContext.editor_text``, ``ToolContext.terminal``), so the tools
keep their own checks: read_file has checked the path before it asks the editor, and the terminal runs the
sandbox's own command line.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp.schema import EnvVariable

from anvil.core.tools.base import TerminalRun
from anvil.core.tools.errors import ToolError

#: how long the editor may take to hand over a file's text before read_file goes with the disk's
READ_TIMEOUT = 10.0
#: the end of a command's output the editor keeps for us (the model sees a head and tail of what comes back)
OUTPUT_LIMIT = 1_000_000


class EditorFiles:
    """fs/read_text_file: a file's text as the editor has it; None whenever it cannot say."""

    def __init__(self, client: Any, session_id: str) -> None:
        self.client, self.session_id = client, session_id

    async def read(self, path: Path) -> str | None:
        try:
            response = await asyncio.wait_for(
                self.client.read_text_file(session_id=self.session_id, path=str(path)), READ_TIMEOUT)
        except Exception:  # not open, refused, too slow, gone: the file on disk is what there is
            return None
        return response.content if isinstance(response.content, str) else None


class EditorTerminal:
    """terminal/*: a foreground command in the editor's terminal, shown in the call it belongs to."""

    def __init__(self, client: Any, session_id: str, show: Callable[[str], Awaitable[None]]) -> None:
        self.client, self.session_id = client, session_id
        self._show = show  # puts the terminal in the running call's update

    async def run(self, argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> TerminalRun:
        try:
            created = await self.client.create_terminal(
                session_id=self.session_id, command=argv[0], args=argv[1:], cwd=str(cwd),
                env=[EnvVariable(name=name, value=value) for name, value in env.items()],
                output_byte_limit=OUTPUT_LIMIT)
        except Exception as exc:
            raise ToolError(f"The editor's terminal could not start the command ({_reason(exc)}). Tell the person: "
                            "with [acp] terminal = false in .anvil/config.toml anvil runs commands itself.") from None
        terminal = created.terminal_id
        try:
            await self._show(terminal)
            timed_out = False
            try:
                await asyncio.wait_for(self._exit(terminal), timeout)
            except TimeoutError:
                timed_out = True
                await self._call("kill_terminal", terminal)
            output = await self._call("terminal_output", terminal)
        except asyncio.CancelledError:  # interrupted: the command must not go on in the editor
            await asyncio.shield(self._quietly("kill_terminal", terminal))
            raise
        finally:
            await asyncio.shield(self._quietly("release_terminal", terminal))
        status = getattr(output, "exit_status", None)
        return TerminalRun(str(getattr(output, "output", "")), getattr(status, "exit_code", None), timed_out)

    async def _exit(self, terminal: str) -> Any:
        return await self._call("wait_for_terminal_exit", terminal)

    async def _call(self, method: str, terminal: str) -> Any:
        try:
            return await getattr(self.client, method)(session_id=self.session_id, terminal_id=terminal)
        except (asyncio.CancelledError, TimeoutError):
            raise
        except Exception as exc:
            raise ToolError(f"The editor's terminal failed while running the command ({_reason(exc)}).") from None

    async def _quietly(self, method: str, terminal: str) -> None:
        with contextlib.suppress(Exception):
            await getattr(self.client, method)(session_id=self.session_id, terminal_id=terminal)


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
