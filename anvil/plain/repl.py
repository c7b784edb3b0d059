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
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import ThreadedCompleter
from prompt_toolkit.formatted_text import FormattedText, StyleAndTextTuples
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import Input, create_input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.output import Output, create_output
from prompt_toolkit.shortcuts import print_formatted_text

from anvil.core.events import (
    ApprovalAnswered,
    ApprovalRequested,
    AssistantMessage,
    ContextUsage,
    Event,
    PlanProposed,
    QuestionAsked,
    TextDelta,
    TodosChanged,
    ToolCallStarted,
    ToolResultEvent,
    UsageReport,
)
from anvil.frontend.mentions import expand_mentions
from anvil.plain.input import KeyReader, PlainCompleter
from anvil.plain.render import (
    STYLE,
    answered_text,
    diff_text,
    status_line,
    todos_text,
    tool_finished,
    tool_started,
    toolbar,
)
from anvil.runtime import Runtime


class PlainRepl:
    def __init__(self, runtime: Runtime, *, input: Input | None = None, output: Output | None = None) -> None:
        self.runtime = runtime
        self.input = input or create_input()
        self.output = output or create_output()
        self.keys = KeyReader(self.input, self.interrupt, self._cycle_mode_while_busy)
        self.used: int | None = None
        self.window: int | None = None
        self.cost = float(runtime.agent.totals.get("cost", 0.0))
        self.hint = ""
        self.busy = False
        self.exit_requested = False
        self._at_line_start = True
        self._open_call: str | None = None  # a tool call whose line waits for its ✓ / ✗
        self._streamed = False
        self._todos: TodosChanged | None = None  # a new todo list, shown once the running call's line is done
        from anvil.config import data_dir
        from anvil.plain.commands import command_list

        history = data_dir() / "plain_history"
        with contextlib.suppress(OSError):  # a read-only home must not stop the REPL; history is then lost
            history.parent.mkdir(parents=True, exist_ok=True)
        self.prompt = PromptSession[str](
            history=FileHistory(str(history)), completer=ThreadedCompleter(PlainCompleter(runtime.root, command_list)),
            complete_while_typing=True, key_bindings=self._bindings(), bottom_toolbar=self._toolbar, style=STYLE,
            input=self.input, output=self.output, reserve_space_for_menu=4)
        self.prompt.default_buffer.on_text_changed += lambda _buffer: setattr(self, "hint", "")
        self._waited: dict[str, float] = {}  # seconds each call waited for the person, left out of its time

    # -- printing --------------------------------------------------------------------------------------

    def write(self, fragments: StyleAndTextTuples | str) -> None:
        if isinstance(fragments, str):
            fragments = [("", fragments)]
        text = "".join(part[1] for part in fragments)
        if not text:
            return
        print_formatted_text(FormattedText(fragments), end="", style=STYLE, output=self.output, flush=True)
        self._at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        """Finish a partly written line (streamed text, a running tool's entry) before a new entry."""
        if not self._at_line_start:
            self.write("\n")
        self._open_call = None

    def say(self, text: str, style: str = "class:notice") -> None:
        self.end_line()
        self.write([(style, text.rstrip("\n") + "\n")])

    def _toolbar(self) -> FormattedText:
        agent = self.runtime.agent
        return toolbar(used=self.used, window=self.window, cost=self.cost, model=self.runtime.settings.model,
                       mode=agent.policy.mode, hint=self.hint)

    # -- the prompt ------------------------------------------------------------------------------------

    def _bindings(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("s-tab")
        def _cycle_mode(event: KeyPressEvent) -> None:
            self.hint = f"approval mode: {self.runtime.agent.policy.next_mode()}"
            event.app.invalidate()

        @kb.add("c-c")
        def _clear(event: KeyPressEvent) -> None:
            # Nothing runs at the prompt, so Ctrl+C only clears; quitting is Ctrl+D, never an accident.
            if event.current_buffer.text:
                event.current_buffer.reset()
            else:
                self.hint = "Ctrl+D exits"
            event.app.invalidate()

        @kb.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        return kb

    async def run(self) -> int:
        from anvil import __version__
        from anvil.plain.commands import run_slash, show_resumed

        self.install(self.runtime)
        self.write([("class:title", f"anvil {__version__}"),
                    ("class:dim", f" · {self.runtime.settings.model} · session {self.runtime.session.id} · "
                                  "/help for commands, Ctrl+D to exit\n")])
        for warning in self.runtime.warnings:
            self.say(f"ℹ {warning}")
        show_resumed(self)
        await self.start_runtime(self.runtime)
        preflight = asyncio.create_task(self._preflight())
        try:
            while not self.exit_requested:
                self.hint = ""
                try:
                    text = await self.prompt.prompt_async([("class:prompt", "› ")])
                except EOFError:
                    break
                except KeyboardInterrupt:
                    continue
                line = text.strip()
                if not line:
                    continue
                if line.startswith("/") and not line.startswith("//"):
                    await run_slash(self, line)
                else:
                    await self.send(line[1:] if line.startswith("//") else line)
        finally:
            preflight.cancel()
            await self.runtime.close()
        return 0

    async def start_runtime(self, runtime: Runtime) -> None:
        """Session hooks and MCP servers; what fails in the background is told here as it happens."""
        runtime.notify = lambda message: self.say(f"ℹ {message}")
        for notice in await runtime.start():
            self.say(f"ℹ {notice}")

    async def _preflight(self) -> None:
        with contextlib.suppress(Exception):  # a check that fails is no reason to stop the REPL
            problem = await asyncio.to_thread(self.runtime.agent.model.preflight)
            if problem:
                self.say(f"✗ {problem} (/model NAME switches the model)", "class:error")

    def install(self, runtime: Runtime) -> None:
        """Let tools reach the person (ask_user, exit_plan_mode) through this REPL."""
        if runtime.agent.ctx.ask is None:
            runtime.agent.ctx.ask = self.answer_request

    # -- turns -----------------------------------------------------------------------------------------

    async def send(self, text: str) -> None:
        expanded = expand_mentions(text, self.runtime.root)
        if expanded.attached:
            self.say(f"  attached: {', '.join(expanded.attached)}", "class:dim")
        problems = list(expanded.problems)
        text = expanded.text
        if self.runtime.mcp is not None:  # @server:uri attaches an MCP resource
            text, more = await self.runtime.mcp.attach_resources(text)
            problems += more
        for problem in problems:
            self.say(f"ℹ {problem}")
        await self.run_events(self.runtime.agent.run_turn(text))

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
        except Exception as exc:  # an engine bug ends the turn, never the REPL (the session keeps the history)
            self.say(f"✗ The turn failed: {type(exc).__name__}: {exc}", "class:error")
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGINT)
            self.keys.stop()
            self.busy = False
            self.end_line()

    async def _consume(self, events: AsyncIterator[Event]) -> None:
        async for event in events:
            await self.show(event)

    def interrupt(self) -> None:
        if self.busy:
            self.runtime.agent.interrupt()

    def _cycle_mode_while_busy(self) -> None:
        self.say(f"ℹ Approval mode: {self.runtime.agent.policy.next_mode()} (from the next call on).")

    async def show(self, event: Event, *, nested: bool = False) -> None:
        if isinstance(event, TextDelta):
            if self._open_call:
                self.end_line()
            self._streamed = True
            self.write(event.text)
        elif isinstance(event, AssistantMessage):
            if event.text and not self._streamed:
                self.end_line()
                self.write(event.text)
            self._streamed = False
            self.end_line()
        elif isinstance(event, ToolCallStarted):
            self.end_line()
            self.write(([("class:dim", "  ↳ ")] if nested else []) + tool_started(event))
            self._open_call = event.call_id
        elif isinstance(event, ToolResultEvent):
            same_line = self._open_call == event.call_id and not self._at_line_start
            if not same_line:
                self.end_line()
            waited = self._waited.pop(event.call_id, 0.0)
            event = dataclasses.replace(event, duration=max(0.0, event.duration - waited))
            self.write(tool_finished(event, same_line=same_line, preview=not nested))
            self._open_call = None
            if event.diff and not nested:
                self.write(diff_text(event.diff))
            self._show_todos()
        elif isinstance(event, (ApprovalRequested, QuestionAsked, PlanProposed)):
            await self.answer_request(event)
        elif isinstance(event, ApprovalAnswered):
            self._print_entry(answered_text(event))
        elif isinstance(event, TodosChanged):
            self._todos = event
            if not self._open_call:  # else after the call's ✓, so its entry stays one line
                self._show_todos()
        elif isinstance(event, ContextUsage):
            self.used, self.window = event.used, event.window
        elif isinstance(event, UsageReport):
            self.cost = event.total_cost
        elif event.type == "subagent_event":  # anvil.core.subagents.task_tool.SubagentEvent: its tool calls, indented
            inner = getattr(event, "inner", None)
            if isinstance(inner, (ToolCallStarted, ToolResultEvent)):
                await self.show(inner, nested=True)
        elif not nested:
            self._print_entry(status_line(event))

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
        """Answer an approval, question or plan; used for events in the stream and as ``ctx.ask`` (tools and
        sub-agents reach the person through it). Returns the answer and resolves the event with it."""
        from anvil.plain import requests as plain_requests
        answer: Any
        if isinstance(event, ApprovalRequested):
            started = time.monotonic()
            answer = await plain_requests.approve(self, event)
            self._waited[event.call_id] = time.monotonic() - started
        elif isinstance(event, QuestionAsked):
            answer = await plain_requests.ask_question(self, event)
        elif isinstance(event, PlanProposed):
            answer = await plain_requests.review_plan(self, event)
        else:
            return None
        event.answer(answer)
        return answer


async def run_plain(runtime: Runtime, *, input: Input | None = None, output: Output | None = None) -> int:
    """Run the REPL until /exit or Ctrl+D; closes the runtime's session. Returns the exit status."""
    return await PlainRepl(runtime, input=input, output=output).run()


def launch(flags: dict[str, Any], *, resume: str | None = None, continue_latest: bool = False) -> int:
    """The `anvil --plain` entry used by cli.py: settings, runtime, then the REPL on the real terminal."""
    from anvil.config import ConfigError, load_settings
    from anvil.core.model.errors import ModelError
    from anvil.core.session.store import SessionError
    from anvil.runtime import open_runtime

    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("anvil: --plain needs a terminal; use `anvil -p PROMPT` in scripts and pipes.", file=sys.stderr)
        return 2
    try:
        settings = load_settings(Path.cwd(), flags)
        runtime = open_runtime(settings, Path.cwd(), resume=resume, continue_latest=continue_latest)
        from prompt_toolkit.patch_stdout import patch_stdout

        # Anything else printing to stdout (litellm's own messages) goes above the prompt, not through it.
        with patch_stdout(raw=True):
            return asyncio.run(run_plain(runtime))
    except (ConfigError, SessionError, ModelError) as exc:
        print(f"anvil: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
