"""`anvil --plain`: a prompt_toolkit line REPL that keeps the terminal's own scrollback.

For people who want their terminal's scrollback, or run anvil inside an editor's terminal. It shares all
behaviour with the TUI through the core; this module only reads lines, prints events, and answers requests.

While the prompt is shown, prompt_toolkit owns the terminal (history, completion, the bottom toolbar with
the context gauge). While a turn runs there is no prompt: streamed text goes straight to the terminal,
and a :class:`KeyReader` in raw mode catches Ctrl+C (which interrupts the turn) and the single keys that
answer approvals. Lines typed in answer (a denial message, an answer to a question) use a short prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import time
from collections.abc import AsyncIterator
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import ThreadedCompleter
from prompt_toolkit.formatted_text import FormattedText, StyleAndTextTuples
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import Input, create_input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.output import Output, create_output

from anvil import __version__
from anvil.config import data_dir
from anvil.core.events import (
    ApprovalAnswered,
    ApprovalRequested,
    AssistantMessage,
    ContextUsage,
    Event,
    PlanProposed,
    QuestionAsked,
    ReasoningDelta,
    TextDelta,
    TodosChanged,
    ToolCallStarted,
    ToolProgress,
    ToolResultEvent,
    UsageReport,
)
from anvil.core.loop.failure import report
from anvil.core.private_files import open_private, private_dir
from anvil.core.subagents.task_tool import SubagentEvent
from anvil.facade import SessionFacade
from anvil.frontend.commands import COMMANDS, command_completions
from anvil.frontend.guard import guarded, show_each
from anvil.frontend.jobs import JobLaunch
from anvil.frontend.keys import CTRL_C_TEXT, CtrlC
from anvil.frontend.lines import answered_text, progress_text
from anvil.frontend.prompt import is_command, prepare_prompt, prompt_turn
from anvil.frontend.signal_exit import EndOnSignal
from anvil.frontend.welcome import farewell_text, welcome_text
from anvil.plain.commands import run_slash, show_session
from anvil.plain.input import KeyReader, PlainCompleter
from anvil.plain.jobs import launch_job, start_job
from anvil.plain.markdown import MarkdownPrinter
from anvil.plain.output import TerminalWriter
from anvil.plain.render import (
    STYLE,
    diff_text,
    line_text,
    thought_line,
    todos_text,
    tool_finished,
    tool_started,
    toolbar,
)
from anvil.plain.requests import approve, ask_question, review_plan
from anvil.runtime import Runtime


class PlainRepl(TerminalWriter):
    def __init__(self, runtime: Runtime, *, input: Input | None = None, output: Output | None = None,
                 job: JobLaunch | None = None) -> None:
        self.session = SessionFacade(runtime)
        self.job = job  # --workflow: the job to start or go on with first; its workflow while waiting for one
        self.input = input or create_input()
        self.output = output or create_output()
        self.keys = KeyReader(self.input, self.interrupt, self._cycle_mode_while_busy)
        self.used: int | None = None
        self.window: int | None = None
        self.cost = self.session.usage().cost
        self.hint = ""
        self.busy = False
        self.exit_requested = False
        self._at_line_start = True
        self._open_call: str | None = None  # a tool call whose line waits for its ✓ / ✗
        self._streamed = False
        self._markdown: MarkdownPrinter | None = None  # the answer being streamed, rendered line by line
        self.ctrl_c = CtrlC()
        self._reasoning: list[str] = []  # reasoning streaming now: one dim line once it is over
        self._last_progress = ""
        self._todos: TodosChanged | None = None  # a new todo list, shown once the running call's line is done
        history = data_dir() / "plain_history"
        with contextlib.suppress(OSError):  # a read-only home must not stop the REPL; history is then lost
            private_dir(history.parent)  # prompt_toolkit appends to the file: created 0600 here, it stays so
            os.close(open_private(history, os.O_WRONLY | os.O_APPEND))
        completer = PlainCompleter(runtime.root, lambda: command_completions(COMMANDS, self.session))
        self.prompt = PromptSession[str](
            history=FileHistory(str(history)), completer=ThreadedCompleter(completer), complete_while_typing=True,
            key_bindings=self._bindings(), bottom_toolbar=self._toolbar, style=STYLE, input=self.input,
            output=self.output, reserve_space_for_menu=4)
        self.prompt.default_buffer.on_text_changed += lambda _buffer: setattr(self, "hint", "")
        self._waited: dict[str, float] = {}  # seconds each call waited for the person, left out of its time

    @property
    def runtime(self) -> Runtime:
        """The session's runtime (tests look inside it; the REPL itself goes through the facade)."""
        return self.session.runtime

    def _toolbar(self) -> FormattedText:
        return toolbar(used=self.used, window=self.window, cost=self.cost, model=self.session.settings.model,
                       mode=self.session.mode, hint=self.hint, sandbox=self.session.sandbox.label, job=self.session.job)

    # -- the prompt ------------------------------------------------------------------------------------

    def _bindings(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("s-tab")
        def _cycle_mode(event: KeyPressEvent) -> None:
            self.hint = f"approval mode: {self.session.next_mode()}"
            event.app.invalidate()

        @kb.add("c-c")
        def _ctrl_c(event: KeyPressEvent) -> None:
            # The shared rule (anvil/frontend/keys.py): typed text is cleared; twice on an empty prompt quits.
            action = self.ctrl_c.press(busy=False, has_input=bool(event.current_buffer.text))
            if action == "quit":
                event.app.exit(exception=EOFError())
                return
            if action == "clear":
                event.current_buffer.reset()
            self.hint = CTRL_C_TEXT[action].removesuffix(".") + (" (or Ctrl+D)" if action == "warn" else "")
            event.app.invalidate()

        @kb.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        return kb

    async def run(self, first_prompt: str | None = None) -> int:
        self.session.answer_requests_with(self.answer_request)
        self.write([("class:title", f"anvil {__version__}"),
                    ("class:dim", f" · session {self.session.id} · Ctrl+D or Ctrl+C twice to exit\n")])
        await self.show_opening()
        await self.start_session()
        preflight = asyncio.create_task(self._preflight())
        try:
            await guarded(launch_job(self), "Starting the job", self._error, self.session.data_dir)
            if first_prompt:  # `anvil --plain "fix the bug"`: the first message
                self.write([("class:prompt", "› "), ("", first_prompt + "\n")])
                await guarded(self.send(first_prompt), "Sending that", self._error, self.session.data_dir)
            while not self.exit_requested:
                self.hint = ""
                try:
                    text = await self.prompt.prompt_async([("class:prompt", "› ")])
                except EOFError:
                    break
                except KeyboardInterrupt:
                    continue
                line = text.strip()
                if not line and self.session.can_continue:  # after a dropped connection: one key goes on
                    line = "/continue"
                if not line:
                    continue
                work = run_slash(self, line) if is_command(line) else self.send(line)
                await guarded(work, "That command" if is_command(line) else "Sending that", self._error,
                              self.session.data_dir)
        finally:
            preflight.cancel()
            await self.session.close()
            farewell = farewell_text(self.session.id, self.session.turns)
            if farewell:
                self.say(farewell, "class:dim")
        return 0

    async def show_opening(self) -> None:
        """A session as it opens: the welcome line for a new one; a resumed one's size, last exchange and last
        known context usage (estimated until the next call)."""
        show_session(self)
        settings = self.session.settings
        if self.session.resumed_messages is None:
            self.say(welcome_text(settings.model, settings.api_base), "class:dim")
            return
        with contextlib.suppress(Exception):  # the window needs the model's facts: a guess is not worth failing
            usage = await asyncio.to_thread(self.session.context_event)
            self.used, self.window = usage.used, usage.window

    async def start_session(self) -> None:
        """Session hooks and MCP servers; what fails in the background is told here as it happens."""
        self.session.on_notice(lambda message: self.say(f"ℹ {message}"))
        for notice in await self.session.start():
            self.say(f"ℹ {notice}")

    async def adopt(self, session: SessionFacade) -> None:
        """Go on with another session (/clear, /resume): the old one is closed already."""
        self.session = session
        session.answer_requests_with(self.answer_request)
        await self.start_session()
        self.used = self.window = None
        self.cost = session.usage().cost
        await self.show_opening()

    async def _preflight(self) -> None:
        with contextlib.suppress(Exception):  # a check that fails is no reason to stop the REPL
            problem = await self.session.preflight()
            if problem:
                self.say(f"✗ {problem} (/model NAME switches the model)", "class:error")

    # -- turns -----------------------------------------------------------------------------------------

    async def send(self, typed: str) -> None:
        prompt = prepare_prompt(typed, self.session.root)
        if prompt.attached:
            self.say(f"  attached: {', '.join(prompt.attached)}", "class:dim")
        if self.job is not None:  # --workflow without instructions: this message is the job's
            await start_job(self, self.job.workflow, prompt.text)
            return
        await self.run_events(prompt_turn(self.session, prompt))

    async def run_events(self, events: AsyncIterator[Event]) -> None:
        """Consume a turn's (or a compaction's) events in a task; keys are read raw until it ends."""
        self.busy = True
        loop = asyncio.get_running_loop()
        self.keys.start()
        # Raw mode turns Ctrl+C into a key; SIGINT can still come from outside (kill -INT) or between modes.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, self.interrupt)
        try:
            await asyncio.create_task(self._consume(events))
        except Exception as exc:  # the stream itself broke, never the REPL (the session keeps the history)
            self._error(report(self.session.data_dir, "The turn", exc))
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGINT)
            self.keys.stop()
            self.busy = False
            if self._markdown is not None:  # an answer cut short stays as it streamed
                self._markdown.abandon()
                self._markdown, self._streamed = None, False
            self.end_line()

    async def _consume(self, events: AsyncIterator[Event]) -> None:
        # An event that fails to show is one error line; the turn goes on (anvil/frontend/guard.py).
        await show_each(events, self.show, self._error, self.session.data_dir)

    def _error(self, line: str) -> None:
        self.say(f"✗ {line}", "class:error")

    def interrupt(self) -> None:
        if self.busy:
            self.session.interrupt()

    def end_on_signal(self, _signum: int) -> None:
        """SIGTERM or SIGHUP: the turn interrupted, the prompt given up, the session closed as on /exit."""
        self.exit_requested = True
        self.interrupt()
        if self.prompt.app.is_running:
            self.prompt.app.exit(exception=EOFError())

    def _cycle_mode_while_busy(self) -> None:
        self.say(f"ℹ Approval mode: {self.session.next_mode()} (from the next call on).")

    async def show(self, event: Event, *, nested: bool = False) -> None:
        if self._reasoning and not isinstance(event, ReasoningDelta):
            self._print_entry(thought_line("".join(self._reasoning)))
            self._reasoning.clear()
        match event:
            case ReasoningDelta(text=text):
                self._reasoning.append(text)
            case TextDelta(text=text):
                self._answer().feed(text)
            case AssistantMessage(text=text):
                if text and not self._streamed:
                    self._answer().feed(text)
                if self._markdown is not None:
                    self._markdown.finish()
                self._markdown, self._streamed = None, False
                self.end_line()
            case ToolCallStarted():
                self.end_line()
                self.write(([("class:dim", "  ↳ ")] if nested else []) + tool_started(event, self.width - 4 * nested))
                self._open_call = event.call_id
            case ToolResultEvent():
                self._tool_finished(event, nested)
            case ToolProgress():
                self._progress(event)
            case ApprovalRequested() | QuestionAsked() | PlanProposed():
                await self.answer_request(event)
            case ApprovalAnswered():
                text = answered_text(event)
                self._print_entry([("class:ok" if event.allow else "class:error", f"  {text}\n")] if text else None)
            case TodosChanged():
                self._todos = event
                if not self._open_call:  # else after the call's ✓, so its entry stays one line
                    self._show_todos()
            case ContextUsage(used=used, window=window):
                self.used, self.window = used, window
            case UsageReport(total_cost=cost):
                self.cost = cost
            case SubagentEvent(inner=ToolCallStarted() | ToolResultEvent() as inner):  # its tool calls, indented
                await self.show(inner, nested=True)
            case SubagentEvent():
                pass
            case _ if not nested:
                self._print_entry(line_text(event))

    def _answer(self) -> MarkdownPrinter:
        """The printer of the answer streaming now; it starts on a line of its own."""
        if self._markdown is None:
            self.end_line()
            self._markdown = MarkdownPrinter(self, self.width)
        self._streamed = True
        return self._markdown

    def _tool_finished(self, event: ToolResultEvent, nested: bool) -> None:
        same_line = self._open_call == event.call_id and not self._at_line_start
        if not same_line:
            self.end_line()
        waited = self._waited.pop(event.call_id, 0.0)
        event = dataclasses.replace(event, duration=max(0.0, event.duration - waited))
        self.write(tool_finished(event, same_line=same_line, preview=not nested, width=self.width))
        self._open_call = None
        if event.diff and not nested:
            self.write(diff_text(event.diff))
        self._show_todos()

    def _progress(self, event: ToolProgress) -> None:
        """A long call's progress, a line each time it says something new (the toolbar is hidden during a turn)."""
        text = progress_text(event)
        if text != self._last_progress:
            self._last_progress = text
            self._print_entry([("class:dim", f"  ⋯ {text}\n")])

    def _show_todos(self) -> None:
        if self._todos is not None:
            self.end_line()
            self.write([("class:title", "Todos\n"), *todos_text(self._todos.todos)])
            self._todos = None

    def _print_entry(self, fragments: StyleAndTextTuples | None) -> None:
        if fragments:
            self.end_line()
            self.write(fragments)

    # -- requests: approvals, questions, plans ---------------------------------------------------------------

    async def key(self, allowed: str, *, escape: bool = False) -> str | None:
        """The next allowed key, lower-cased; "esc" for Escape when asked for; None for Ctrl+C (interrupt)."""
        while True:
            press = await self.keys.get()
            if press.key == Keys.ControlC:
                return None
            if escape and press.key == Keys.Escape:
                return "esc"
            if isinstance(press.key, str) and len(press.key) == 1 and press.key.lower() in allowed:
                return press.key.lower()

    async def read_line(self, message: str) -> str | None:
        """A line typed in answer while the turn waits; None when the person pressed Ctrl+C or Ctrl+D."""
        self.end_line()
        was_reading = self.keys.active
        self.keys.stop()
        try:
            return await PromptSession[str](input=self.input, output=self.output, style=STYLE).prompt_async(
                [("class:key", message)])
        except (KeyboardInterrupt, EOFError):
            self.interrupt()
            return None
        finally:
            if was_reading:
                self.keys.start()

    async def answer_request(self, event: Event) -> Any:
        """Answer an approval, question or plan; used for events in the stream and as the tools' way to ask
        (tools and sub-agents reach the person through it). Returns the answer and resolves the event with it."""
        answer: Any
        match event:
            case ApprovalRequested():
                started = time.monotonic()
                answer = await approve(self, event, self.session.root)
                self._waited[event.call_id] = time.monotonic() - started
            case QuestionAsked():
                answer = await ask_question(self, event)
            case PlanProposed():
                answer = await review_plan(self, event)
            case _:
                return None
        event.answer(answer)
        return answer


async def run_plain(runtime: Runtime, *, input: Input | None = None, output: Output | None = None,
                    job: JobLaunch | None = None, first_prompt: str | None = None) -> int:
    """Run the REPL until /exit, Ctrl+D or Ctrl+C twice; closes the runtime's session. Returns the exit status
    (128 + the signal after SIGTERM or SIGHUP: :class:`anvil.frontend.signal_exit.EndOnSignal`)."""
    repl = PlainRepl(runtime, input=input, output=output, job=job)
    ending = EndOnSignal(asyncio.get_running_loop().call_soon_threadsafe, repl.end_on_signal,
                         lambda: repl.session.close_now())
    with ending:
        code = await repl.run(first_prompt)
    ending.end()
    return code
