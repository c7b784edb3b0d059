"""`anvil --plain` driven through prompt_toolkit's pipe input, against a real runtime around a ScriptedModel.

The output goes to a VT100 output over a StringIO; ``Repl.wait`` polls it with the escape codes removed, so the
tests read what a person would see and type keys only after the REPL has asked for them.
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output

from anvil.config import Settings
from anvil.core.model.scripted import ScriptedModel
from anvil.core.tools.base import Tool
from anvil.plain.repl import PlainRepl
from anvil.runtime import Runtime, open_runtime

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[=>]")
CTRL_C, CTRL_D, SHIFT_TAB = "\x03", "\x04", "\x1b[Z"


class ScreenOutput(Vt100_Output):
    """A terminal over a StringIO. It knows the rows below the cursor, as a terminal answering cursor position
    reports does; prompt_toolkit draws the bottom toolbar only then."""

    def get_rows_below_cursor_position(self) -> int:
        return 20


class Repl:
    def __init__(self, runtime: Runtime, pipe: PipeInput) -> None:
        self.runtime = runtime
        self.pipe = pipe
        self.buffer = io.StringIO()
        output = ScreenOutput(self.buffer, lambda: Size(rows=40, columns=120), enable_cpr=False)
        self.repl = PlainRepl(runtime, input=pipe, output=output)
        self.task: asyncio.Task[int] | None = None
        self.mark = 0

    @property
    def model(self) -> ScriptedModel:
        model = self.runtime.agent.model
        assert isinstance(model, ScriptedModel)
        return model

    def screen(self) -> str:
        return ANSI.sub("", self.buffer.getvalue())

    async def wait(self, text: str, timeout: float = 10.0) -> None:
        """Wait until ``text`` appears after the last thing waited for."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            at = self.screen().find(text, self.mark)
            if at >= 0:
                self.mark = at + len(text)
                return
            if loop.time() > deadline or (self.task is not None and self.task.done()):
                raise AssertionError(f"{text!r} did not appear; the output was:\n{self.screen()[-3000:]}")
            await asyncio.sleep(0.02)

    async def send(self, text: str, *, then: str | None = None) -> None:
        self.pipe.send_text(text)
        if then is not None:
            await self.wait(then)

    async def idle(self, timeout: float = 10.0) -> None:
        """Wait until the turn is over and the prompt is up again."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.repl.busy or not self.repl.prompt.app.is_running:
            if loop.time() > deadline or (self.task is not None and self.task.done()):
                raise AssertionError(f"the prompt did not come back; the output was:\n{self.screen()[-3000:]}")
            await asyncio.sleep(0.02)

    async def prompt(self, text: str) -> None:
        await self.idle()
        self.pipe.send_text(text + "\r")

    async def exit(self) -> int:
        await self.idle()
        self.pipe.send_text(CTRL_D)
        assert self.task is not None
        return await asyncio.wait_for(self.task, 10)


@pytest.fixture
async def make_repl(project: Path) -> AsyncIterator[Any]:
    started: list[Repl] = []
    with create_pipe_input() as pipe:

        def make(turns: list[dict[str, Any]], *, tools: tuple[Tool, ...] = (), start: bool = True,
                 **settings: Any) -> Repl:
            runtime = open_runtime(Settings(model="scripted", **settings), project, model=ScriptedModel(turns))
            for tool in tools:
                runtime.agent.tools.add(tool)
            repl = Repl(runtime, pipe)
            if start:
                repl.task = asyncio.create_task(repl.repl.run())
            started.append(repl)
            return repl

        yield make
        for repl in started:
            if repl.task is not None and not repl.task.done():
                repl.task.cancel()
                with pytest.raises((asyncio.CancelledError, Exception)):
                    await repl.task
