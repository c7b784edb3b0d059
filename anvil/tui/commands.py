"""Slash commands in the app: the shared set (:mod:`anvil.frontend.commands`) plus ``/theme``, carried out as
transcript entries, modals and workers.

Commands typed during a turn run at once, except those that replace or rewrite the conversation, which
say they wait for the turn to end. A question (``/undo``'s "are you sure?") is a modal, answered in a
worker so the app keeps drawing; so is a model switch, which may import litellm.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from anvil.frontend.commands import COMMANDS, Command, CommandContext, CommandSet, run_command
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
)

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.worker import Worker

    from anvil.core.events import Event
    from anvil.facade import SessionFacade
    from anvil.tui.status import StatusBar
    from anvil.tui.transcript import LineEntry, Transcript

KEYS_HELP = """Keys: Enter send · Shift+Enter or Ctrl+J newline · Up/Down history · @path attach a file
Esc interrupt · Shift+Tab approval mode (ask, accept edits, auto, plan) · Ctrl+T todos · Ctrl+F search
c copy the focused entry · C its last code block · Enter on a tool call expands it
Ctrl+C interrupts a running turn (with text typed: clears it); twice on an idle prompt quits"""


class CommandHost(Protocol):
    """What carrying out a command needs of the app."""

    session: SessionFacade | None
    busy: bool
    model_loading: bool
    theme: str

    @property
    def status(self) -> StatusBar: ...

    @property
    def transcript(self) -> Transcript: ...

    @property
    def available_themes(self) -> dict[str, Any]: ...

    def add_line(self, kind: str, text: str) -> LineEntry: ...

    def start_agent(self, stream: AsyncIterator[Event]) -> None: ...

    async def render_event(self, event: Event) -> None: ...

    async def adopt(self, session: SessionFacade) -> None: ...

    def send_waiting(self) -> None: ...

    def reveal_todos(self) -> None: ...

    def set_theme(self, name: str, *, quiet: bool = False) -> bool: ...

    def action_exit_app(self) -> None: ...

    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Worker[Any]: ...

    async def push_screen_wait(self, screen: Screen[Any]) -> Any: ...


def app_commands(host: CommandHost) -> CommandSet:
    """The shared commands and ``/theme``, which only the app has."""

    async def theme(ctx: CommandContext, arg: str) -> Reply:
        if not arg:
            names = sorted(host.available_themes)
            return [Show("Themes: " + ", ".join(f"{n} (current)" if n == host.theme else n for n in names))]
        return [Show(f"Theme: {arg}.")] if host.set_theme(arg) else []  # set_theme says what is wrong

    return COMMANDS.with_commands(Command("theme", "/theme [name]", "list themes or switch to one", theme,
                                          needs_session=False))


class CommandRunner:
    """Runs a command line and carries out its reply in the app."""

    def __init__(self, host: CommandHost, warm: Callable[[SessionFacade], Awaitable[None]]) -> None:
        self.host = host
        self.commands = app_commands(host)
        self._warm = warm  # the warm-up a new model needs before its first call

    async def run(self, line: str) -> None:
        host = self.host
        reply = await run_command(line, session=host.session, commands=self.commands, keys_help=KEYS_HELP,
                                  busy=host.busy)
        host.transcript.reveal_latest()  # what the command shows comes into view, as a sent prompt's reply does
        await self.apply(reply)

    async def apply(self, reply: Reply) -> None:
        """Carry out what a command answered, in order; a question or a model switch goes on in a worker."""
        host = self.host
        for index, effect in enumerate(reply):
            match effect:
                case Show(text=text, kind=kind, rows=rows):
                    host.transcript.add_line(kind, text, rows)
                case Confirm():
                    host.run_worker(self._guarded(self._confirm(effect, reply[index + 1:]), "The command"),
                                    group="command", exit_on_error=False)
                    return
                case RunEvents(events=events):
                    host.start_agent(events)
                case Render(events=events):
                    for event in events:
                        await host.render_event(event)
                case SwitchModel():
                    self._switch_model(effect)
                case Replace(session=session):
                    await host.adopt(session)
                case ShowTodos(todos=todos) if todos:
                    host.reveal_todos()
                case ShowTodos():
                    host.add_line("notice", "No todos yet.")
                case Exit():
                    host.action_exit_app()
        if host.session is not None:  # a command may change the mode or the model
            host.status.update_state(mode=host.session.mode, model=host.session.settings.model)

    async def _confirm(self, confirm: Confirm, rest: Reply) -> None:
        from anvil.tui.confirm import ConfirmScreen

        yes = bool(await self.host.push_screen_wait(ConfirmScreen(confirm.question)))
        await self.apply([*await follow(confirm, yes), *rest])

    def _switch_model(self, switch: SwitchModel) -> None:
        """In a worker, not in the app's message handler: building a litellm model may import litellm (seconds),
        and keys must keep coming meanwhile. A prompt sent before the switch is over waits and goes to the new
        model, which is warm by then (its first call imports nothing on the event loop)."""
        host = self.host
        host.model_loading = True
        host.status.update_state(phase=f"Loading {switch.name}…")

        async def run() -> None:
            try:
                await self.apply(await switch.run(warm=self._warm))
            finally:
                host.model_loading = False
                host.status.update_state(phase="")
                host.send_waiting()

        host.run_worker(self._guarded(run(), "Switching the model"), group="model", exit_on_error=False)

    async def _guarded(self, work: Awaitable[None], what: str) -> None:
        """A command's work in a worker: a failure is one error line in the transcript, not a silent worker."""
        from anvil.frontend.guard import guarded  # the engine is loaded by the time a command runs

        session = self.host.session
        await guarded(work, what, lambda line: self.host.add_line("error", line),
                      session.data_dir if session is not None else None)
