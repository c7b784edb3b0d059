"""Input helpers for `anvil --plain`: completion of slash commands and ``@paths``, attaching mentioned files,
and a raw key reader for the single-key answers and Ctrl+C while a turn runs.

The rules for ``@path`` mentions live in :mod:`anvil.frontend.mentions`, shared with the TUI.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.input import Input
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys

from anvil.frontend.mentions import list_project_files, match_files

ESCAPE_TIMEOUT = 0.05  # seconds before a lone Escape counts as the Escape key
FILES_TTL = 5.0  # seconds a file listing is reused while completing


class PlainCompleter(Completer):
    """``/command`` at the start of the line, ``@path`` anywhere."""

    def __init__(self, root: Path, commands: Callable[[], list[tuple[str, str]]]) -> None:
        self.root = root
        self.commands = commands
        self._files: list[str] = []
        self._listed = 0.0

    def files(self) -> list[str]:
        if time.monotonic() - self._listed > FILES_TTL:
            self._files = list_project_files(self.root)
            self._listed = time.monotonic()
        return self._files

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before:
            for name, help_ in self.commands():
                if name.startswith(before[1:].lower()):
                    yield Completion("/" + name, start_position=-len(before), display_meta=help_)
            return
        match = re.search(r"(?<!\S)@([^\s@]*)$", before)
        if match:
            query = match.group(1)
            for path in match_files(self.files(), query):
                yield Completion("@" + path, start_position=-len(query) - 1)


class KeyReader:
    """Keys read straight from the terminal while no prompt is shown (the turn runs).

    Ctrl+C calls ``on_interrupt`` at once, whatever else is waiting, and is also queued so a pending
    single-key question wakes up. Shift+Tab calls ``on_cycle_mode`` (the approval mode can change while a
    turn runs). Keys nobody took are handed back as typeahead to the next prompt.
    """

    def __init__(self, input: Input, on_interrupt: Callable[[], None],
                 on_cycle_mode: Callable[[], None] | None = None) -> None:
        self.input = input
        self.on_interrupt = on_interrupt
        self.on_cycle_mode = on_cycle_mode
        self.queue: asyncio.Queue[KeyPress] = asyncio.Queue()
        self._stack: contextlib.ExitStack | None = None
        self._flush: asyncio.TimerHandle | None = None

    @property
    def active(self) -> bool:
        return self._stack is not None

    def start(self) -> None:
        if self._stack is not None:
            return
        stack = contextlib.ExitStack()
        stack.enter_context(self.input.raw_mode())
        stack.enter_context(self.input.attach(self._ready))
        self._stack = stack
        self._take(get_typeahead(self.input))  # keys the last prompt read past its Enter

    def stop(self) -> None:
        """Back to cooked mode; unread keys go back to prompt_toolkit as typeahead for the next prompt."""
        if self._stack is None:
            return
        self._take(self.input.read_keys())
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        self._stack.close()
        self._stack = None
        left: list[KeyPress] = []
        while not self.queue.empty():
            left.append(self.queue.get_nowait())
        if left:
            store_typeahead(self.input, left)

    def discard(self) -> None:
        """Forget keys typed before a question was shown, so a stray `y` never approves anything."""
        while not self.queue.empty():
            self.queue.get_nowait()

    async def get(self) -> KeyPress:
        return await self.queue.get()

    def _ready(self) -> None:
        self._take(self.input.read_keys())
        # A lone Escape stays in the parser (it may start a sequence) until flushed, as prompt_toolkit does
        # after a short timeout.
        if self._flush is not None:
            self._flush.cancel()
        self._flush = asyncio.get_running_loop().call_later(ESCAPE_TIMEOUT, self._flush_keys)

    def _flush_keys(self) -> None:
        self._flush = None
        if self._stack is not None:
            self._take(self.input.flush_keys())

    def _take(self, keys: list[KeyPress]) -> None:
        for key in keys:
            if key.key == Keys.BackTab and self.on_cycle_mode is not None:
                self.on_cycle_mode()
                continue
            if key.key == Keys.ControlC:
                self.on_interrupt()
            if key.key != Keys.CPRResponse:
                self.queue.put_nowait(key)
