"""Slash commands in `anvil --plain`: the shared set (:mod:`anvil.frontend.commands`), carried out as lines.

Commands run between turns (the prompt is the only place to type them), so none has to wait for a turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

from prompt_toolkit.formatted_text import StyleAndTextTuples

from anvil.frontend.commands import COMMANDS, resumed_text, run_command
from anvil.frontend.effects import (
    Confirm,
    Exit,
    Render,
    Replace,
    Reply,
    RunEvents,
    Show,
    ShowTodos,
    SwitchModel,
    follow,
    hanging_rows,
)
from anvil.plain.render import todos_text

if TYPE_CHECKING:
    from anvil.core.events import Event
    from anvil.facade import SessionFacade

KEYS_HELP = ("Keys: Enter send · Alt+Enter newline · Up/Down history · Tab complete · @path attach a file\n"
             "      Shift+Tab approval mode · Ctrl+C interrupts the turn (at the prompt: clears it; twice on an empty\n"
             "      prompt exits) · Ctrl+D exit\n"
             "      Start with // to send a message that begins with /")
SHOW_STYLES = {"notice": "class:notice", "error": "class:error", "help": ""}


class CommandHost(Protocol):
    """What carrying out a command needs of the REPL."""

    session: SessionFacade
    exit_requested: bool

    def say(self, text: str, style: str = "class:notice") -> None: ...

    @property
    def width(self) -> int: ...

    def end_line(self) -> None: ...

    def write(self, fragments: StyleAndTextTuples | str) -> None: ...

    async def read_line(self, message: str) -> str | None: ...

    async def run_events(self, events: AsyncIterator[Event]) -> None: ...

    async def show(self, event: Event, *, nested: bool = False) -> None: ...

    async def adopt(self, session: SessionFacade) -> None: ...


async def run_slash(host: CommandHost, line: str) -> None:
    await apply(host, await run_command(line, session=host.session, commands=COMMANDS, keys_help=KEYS_HELP))


async def apply(host: CommandHost, reply: Reply) -> None:
    """Carry out what a command answered, in order."""
    for effect in reply:
        match effect:
            case Show(text=text, kind=kind, rows=rows):
                if rows:  # /help: each description wraps under itself at the terminal's width
                    text = hanging_rows(rows, host.width)
                host.say(("✗ " if kind == "error" else "") + text, SHOW_STYLES[kind])
            case Confirm(question=question):
                answer = await host.read_line(f"{question} [y/N] ")
                await apply(host, await follow(effect, (answer or "").strip().lower() in {"y", "yes"}))
            case RunEvents(events=events):
                await host.run_events(events)
            case Render(events=events):
                for event in events:
                    await host.show(event)
            case SwitchModel():
                await apply(host, await effect.run())
            case Replace(session=session):
                await host.adopt(session)
            case ShowTodos(todos=todos):
                host.end_line()
                host.write([("class:title", "Todos\n"), *todos_text(todos)])
            case Exit():
                host.exit_requested = True


def show_session(host: CommandHost) -> None:
    """A session as it opens: its warnings; for a resumed one, its size and last exchange, not a replay."""
    session = host.session
    for warning in session.warnings:
        host.say(f"ℹ {warning}")
    resumed = resumed_text(session)
    if resumed is None:
        return
    host.say(resumed)
    messages = session.messages
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    last_reply = next((m for m in reversed(messages) if m.get("role") == "assistant" and m.get("content")), None)
    for label, message in (("you", last_user), ("anvil", last_reply)):
        if message is not None:
            text = " ".join(str(message.get("content") or "").split())
            host.say(f"  {label}: {text[:200]}{'…' if len(text) > 200 else ''}", "class:dim")
