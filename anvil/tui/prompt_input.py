"""The prompt: a multi-line input with history, `@path` and `/command` completion.

Enter sends; Shift+Enter or Ctrl+J inserts a newline (many terminals send Enter for Shift+Enter, so
Ctrl+J is the one that always works). Up/Down walk the history when the cursor is on the first/last
line; the history is kept in ``$XDG_DATA_HOME/anvil/history``, one JSON string a line, so multi-line
prompts survive. ``@path`` mentions are completed from the project's files and, on send, the files'
contents are attached to the message the model reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option
from textual.widgets.text_area import Edit, EditResult, Selection

from anvil.core.private_files import open_private, private_dir
from anvil.frontend.mentions import list_project_files, match_files
from anvil.tui.echo import EchoesAtOnce

HISTORY_LIMIT = 1000


def history_path() -> Path:
    # The XDG rule inline rather than anvil.config: importing pydantic here would delay the first paint.
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "anvil" / "history"


class History:
    """Prompts sent before, oldest first, persisted across sessions."""

    def __init__(self, path: Path | None = None, limit: int = HISTORY_LIMIT) -> None:
        self.path = path or history_path()
        self.limit = limit
        self.entries: list[str] = []
        self.cursor = 0  # == len(entries): editing a new prompt
        self.draft = ""
        with contextlib.suppress(OSError, UnicodeDecodeError):
            for line in self.path.read_text(encoding="utf-8").splitlines()[-limit:]:
                with contextlib.suppress(json.JSONDecodeError):
                    value = json.loads(line)
                    if isinstance(value, str):
                        self.entries.append(value)
        self.cursor = len(self.entries)

    def add(self, text: str) -> None:
        self.cursor = len(self.entries)
        if not text.strip() or (self.entries and self.entries[-1] == text):
            self.cursor = len(self.entries)
            return
        self.entries.append(text)
        self.cursor = len(self.entries)
        try:  # a read-only home must not stop anyone from sending a prompt
            private_dir(self.path.parent)  # 0700/0600 like the rest of anvil's data: prompts can hold secrets
            fd = open_private(self.path, os.O_WRONLY | os.O_APPEND)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(json.dumps(text, ensure_ascii=False) + "\n")
        except OSError:
            pass

    def previous(self, current: str) -> str | None:
        if self.cursor == 0:
            return None
        if self.cursor == len(self.entries):
            self.draft = current
        self.cursor -= 1
        return self.entries[self.cursor]

    def next(self) -> str | None:
        if self.cursor >= len(self.entries):
            return None
        self.cursor += 1
        return self.draft if self.cursor == len(self.entries) else self.entries[self.cursor]


class PromptInput(EchoesAtOnce, TextArea):
    """The text area; the enclosing :class:`Composer` owns the completion menu."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus",
                         highlight_cursor_line=False, compact=True)
        self.prompt_history = History()

    @property
    def composer(self) -> Composer:
        assert isinstance(self.parent, Composer)
        return self.parent

    async def _on_key(self, event: events.Key) -> None:
        menu = self.composer.menu
        key = event.key
        if menu.display and key in {"enter", "tab"}:
            # Keys typed fast can arrive before the menu caught up with the text: bring it up to date first.
            self.composer.update_completions()
        if menu.display and key in {"enter", "tab", "up", "down", "escape"}:
            event.stop()
            event.prevent_default()
            if key == "enter" and self.composer.is_command(self.text.strip()):
                self.composer.hide_menu()
                self._submit()  # "/exit" typed in full means /exit, whatever is highlighted
            elif key in {"enter", "tab"}:
                command = self.composer.completing_command
                self.composer.accept_completion()
                if key == "enter" and command:  # "/he" Enter runs /help: what a person who typed it means
                    self._submit()
            elif key == "escape":
                self.composer.hide_menu()
            else:
                menu.action_cursor_up() if key == "up" else menu.action_cursor_down()
            return
        if key == "enter":
            event.stop()
            event.prevent_default()
            self._submit()
            return
        if key in {"shift+enter", "ctrl+j"}:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if key == "up" and self.cursor_location[0] == 0:
            self._recall(self.prompt_history.previous(self.text), event)
            return
        if key == "down" and self.cursor_location[0] == self.document.line_count - 1:
            self._recall(self.prompt_history.next(), event)
            return
        await super()._on_key(event)

    # Every change to the text or the cursor is drawn as soon as the key that made it is handled, not at the
    # screen's next frame, which a streaming reply can hold back for tens of milliseconds (see echo.py).

    def edit(self, edit: Edit) -> EditResult:
        result = super().edit(edit)
        self.echo_soon()
        return result

    def _watch_selection(self, previous_selection: Selection, selection: Selection) -> None:
        super()._watch_selection(previous_selection, selection)
        self.echo_soon()

    def _recall(self, text: str | None, event: events.Key) -> None:
        if text is None:
            return
        event.stop()
        event.prevent_default()
        self.composer.recalled = text  # history keeps the arrow keys until the person types
        self.load_text(text)
        self.move_cursor(self.document.end)

    def _submit(self) -> None:
        text = self.text.strip()
        if not text:
            self.post_message(self.Submitted(""))  # the app may have something for it (going on after a drop)
            return
        self.prompt_history.add(text)
        self.load_text("")
        self.post_message(self.Submitted(text))


class Composer(Vertical):
    """The completion menu above the prompt; it completes ``/commands`` and ``@paths``."""

    DEFAULT_CLASSES = "composer"

    def __init__(self, root: Path | None, commands: Callable[[], Sequence[tuple[str, str]]], *,
                 id: str | None = None) -> None:
        """``commands``: the (name, help) pairs to complete after ``/``, asked for each time (MCP servers' prompts
        come and go)."""
        super().__init__(id=id)
        self.root = root
        self._commands = commands
        self.files: list[str] | None = None
        self._loading = False
        self._token: tuple[int, int] | None = None  # (row, start column) of the token being completed
        #: a prompt recalled from history: no completion menu for it (Up/Down stay history) until it is edited
        self.recalled: str | None = None

    def compose(self) -> ComposeResult:
        menu = OptionList(id="completions")
        menu.display = False
        menu.can_focus = False
        yield menu
        yield PromptInput(id="prompt")

    @property
    def menu(self) -> OptionList:
        return self.query_one("#completions", OptionList)

    @property
    def input(self) -> PromptInput:
        return self.query_one(PromptInput)

    @property
    def completing_command(self) -> bool:
        return self._token is not None and self.input.text.startswith("/")

    def hide_menu(self) -> None:
        self.menu.display = False
        self._token = None

    @property
    def commands(self) -> list[tuple[str, str]]:
        return list(self._commands())

    def is_command(self, text: str) -> bool:
        return any(text == f"/{name}" for name, _ in self.commands)

    @on(TextArea.Changed, "#prompt")
    def update_completions(self) -> None:
        prompt = self.input
        if self.recalled is not None and prompt.text == self.recalled:
            self.hide_menu()
            return
        self.recalled = None
        row, col = prompt.cursor_location
        line = prompt.document.get_line(row)[:col]
        word = line.rsplit(None, 1)[-1] if line.strip() and not line.endswith((" ", "\t")) else ""
        text = prompt.text
        if text.startswith("/") and not any(c.isspace() for c in text) and col == len(text):
            hits = [(f"/{name}", help_) for name, help_ in self.commands if f"/{name}".startswith(line)]
            self._show([Option(f"{name}  {help_}", id=name) for name, help_ in hits], (row, 0))
        elif word.startswith("@") and self.root is not None:
            if self.files is None:
                self._load_files()
                return
            hits = match_files(self.files, word[1:])
            self._show([Option(f"@{path}", id=f"@{path}") for path in hits], (row, col - len(word)))
        else:
            self.hide_menu()

    def _show(self, options: list[Option], token: tuple[int, int]) -> None:
        menu = self.menu
        if not options:
            self.hide_menu()
            return
        menu.clear_options()
        menu.add_options(options)
        menu.highlighted = 0
        menu.display = True
        self._token = token

    def _load_files(self) -> None:
        if self._loading or self.root is None:
            return
        self._loading = True
        root = self.root

        async def load() -> None:
            # git and the walk run in a thread; only the result is handed back to this (UI) side.
            self.files = await asyncio.to_thread(list_project_files, root)
            self.update_completions()

        self.run_worker(load(), group="files")

    def accept_completion(self) -> None:
        menu = self.menu
        if menu.highlighted is None or self._token is None:
            self.hide_menu()
            return
        choice = menu.get_option_at_index(menu.highlighted).id or ""
        prompt = self.input
        row, start = self._token
        end = prompt.cursor_location
        prompt.replace(choice + " ", (row, start), end)
        self.hide_menu()
