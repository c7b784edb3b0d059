"""The Textual app: layout, the worker that runs the agent, event dispatch and keys.

First paint comes before anything slow: settings (pydantic), the runtime (tools, the git-probing system
prompt) and litellm are all loaded after it, in threads, step by step in the pauses of the person's typing
(anvil/tui/warmup.py); a prompt sent before the warm-up is over hurries it and waits for it. The agent runs
in an async worker; every event is rendered on the UI side, and approval requests are answered with a modal
pushed from that worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen

from anvil.frontend.mentions import expand_mentions
from anvil.tui import warmup
from anvil.tui.prompt_input import Composer, PromptInput
from anvil.tui.startup import configured_theme, early_theme, user_config_dir
from anvil.tui.status import StatusBar
from anvil.tui.todos import NARROW_WIDTH, TodoSidebar, TodoSummary
from anvil.tui.transcript import LineEntry, Transcript, UserEntry

if TYPE_CHECKING:
    # Not imported before the first paint: the events module alone costs ~10 ms of dataclass building.
    from anvil.config import Settings
    from anvil.core import events as ev
    from anvil.core.model.protocol import Model
    from anvil.runtime import Runtime
    from anvil.tui.render import TurnRenderer

DOUBLE_PRESS_SECONDS = 2.0
STARTUP_DELAY = 0.05
FALLBACK_THEME = "textual-dark"


class AnvilApp(App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere find it too
    TITLE = "anvil"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "ctrl_c", "Clear / quit", priority=True, show=False),
        Binding("escape", "interrupt", "Interrupt", show=False),
        Binding("shift+tab", "cycle_mode", "Approval mode", priority=True, show=False),
        Binding("ctrl+t", "toggle_todos", "Todos", priority=True, show=False),
        Binding("ctrl+f", "search", "Search", priority=True, show=False),
        Binding("ctrl+q", "exit_app", "Quit", priority=True, show=False),
    ]

    def __init__(self, root: Path, *, flags: dict[str, Any] | None = None, settings: Settings | None = None,
                 runtime: Runtime | None = None, model: Model | None = None, resume: str | None = None,
                 continue_latest: bool = False, theme: str | None = None, demo_prompt: str | None = None) -> None:
        super().__init__()
        self.root = root.resolve()
        self.flags = flags or {}
        self.settings = settings or (runtime.settings if runtime else None)
        self.runtime: Runtime | None = runtime
        self._model = model
        self._resume = resume
        self._continue = continue_latest
        self._theme_flag = theme
        self.demo_prompt = demo_prompt
        self.busy = False
        self.started = False  # set when the runtime is ready (tests wait for it)
        self._wanted_theme = "anvil-dark"
        self.theme_errors: list[str] = []
        self.warm_up = warmup.WarmUp()
        # A given runtime with a scripted model needs no warm-up: its prompts are never held.
        self.warm_up.holds_prompts = runtime is None or warmup.uses_litellm(runtime.agent.model)
        self.model_loading = False  # /model is building and warming the new model: prompts wait for it
        self._waiting: list[str] = []  # prompts sent before the warm-up (or a /model switch) was over
        self._waiting_entries: list[UserEntry] = []
        self._renderer: TurnRenderer | None = None
        self._last_ctrl_c = 0.0
        self._sidebar_forced: bool | None = None
        self._exiting = False

    # -- layout ---------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        from anvil.tui.commands import command_list

        with Horizontal(id="main"):
            yield Transcript(id="transcript")
            yield TodoSidebar(id="todos")
        yield TodoSummary(id="todo-summary")
        yield Composer(self.root, command_list(), id="composer")
        yield StatusBar(id="status")

    @property
    def renderer(self) -> TurnRenderer:
        if self._renderer is None:
            from anvil.tui.render import TurnRenderer

            self._renderer = TurnRenderer(self)
        return self._renderer

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    @property
    def status(self) -> StatusBar:
        return self.query_one("#status", StatusBar)

    @property
    def prompt(self) -> PromptInput:
        return self.query_one("#prompt", PromptInput)

    def on_mount(self) -> None:
        self._early_theme()
        self.query_one("#todos").display = False
        self.query_one("#todo-summary").display = False
        self.status.update_state(model=str(self.flags.get("model") or (self.settings.model if self.settings else "")))
        self.prompt.focus()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):  # the same way out as /exit: background commands end too
                loop.add_signal_handler(sig, self.action_exit_app)
        # Start-up work (imports in a thread) competes for the GIL with drawing: let the first frame out first.
        self.call_after_refresh(self.set_timer, STARTUP_DELAY, self.start_up)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.Paste)):  # every key reaches the app first, focused or not
            self.warm_up.key_pressed()
        await super().on_event(event)

    def _early_theme(self) -> None:
        """The wanted theme, read cheaply, so the first paint already has the right colours."""
        self._wanted_theme = self._theme_flag or configured_theme(self.root) or "anvil-dark"
        theme = early_theme(self._wanted_theme) or early_theme("anvil-dark")
        if theme is not None:
            self.register_theme(theme)
            self.theme = theme.name
        else:
            self.theme = FALLBACK_THEME

    async def _load_themes(self) -> None:
        """Every theme, validated (in a thread); problems are reported in one notification."""
        try:
            themes, self.theme_errors = await self.warm_up.run(
                "themes", partial(warmup.load_themes, user_config_dir() / "themes"))
        except Exception as exc:  # a theme problem is reported, never fatal
            themes, self.theme_errors = [], [f"Themes could not be loaded: {exc}"]
        for theme in themes:
            self.register_theme(theme)
        self.set_theme(self._wanted_theme, quiet=self._wanted_theme == "anvil-dark")
        if self.theme_errors:
            self.notify("\n".join(self.theme_errors), title="Theme problems", severity="warning", timeout=10)

    def set_theme(self, name: str, *, quiet: bool = False) -> bool:
        if name in self.available_themes:
            self.theme = name
            return True
        if not quiet:
            self.notify(f"No theme named {name!r}; /theme lists them.", severity="warning")
        if self.theme not in self.available_themes:
            self.theme = "anvil-dark" if "anvil-dark" in self.available_themes else FALLBACK_THEME
        return False

    def on_resize(self) -> None:
        self.update_todo_visibility()

    def update_todo_visibility(self) -> None:
        sidebar = self.query_one("#todos", TodoSidebar)
        wide = self.size.width >= NARROW_WIDTH
        show = self._sidebar_forced if self._sidebar_forced is not None else (wide and bool(sidebar.todos))
        sidebar.display = show
        self.query_one("#todo-summary").display = bool(sidebar.todos) and not show

    # -- start-up after the first paint ---------------------------------------------------------------

    @work(group="startup", exit_on_error=False)
    async def start_up(self) -> None:
        """After the first paint, one step at a time in the pauses of typing: themes, settings, the runtime
        (then the app is ready), then litellm and the rest of what the first model call needs."""
        await self._load_themes()
        runtime, built = self.runtime, self.runtime is None
        if runtime is None:
            try:
                settings = self.settings or await self.warm_up.run(
                    "settings", partial(warmup.load_settings, self.root, self.flags))
                runtime = await self.warm_up.run("runtime", partial(
                    warmup.open_runtime, settings, self.root, resume=self._resume, continue_latest=self._continue,
                    model=self._model))
            except Exception as exc:  # config, session or model problems: say so and keep the app open
                self.transcript.add_line("error", f"anvil could not start: {exc}")
                self.status.update_state(phase="not ready")
                return
            self.runtime = runtime
            self.warm_up.holds_prompts = warmup.uses_litellm(runtime.agent.model)
        self.runtime_ready()
        for name, step in warmup.model_steps(runtime, preflight=built):
            try:
                problem = await self.warm_up.run(name, step)
            except Exception as exc:  # the first model call meets it again and says so in its turn
                self.add_line("notice", f"Could not prepare the model ({name}): {type(exc).__name__}: {exc}")
                break
            if isinstance(problem, str) and problem:
                self.add_line("notice", problem)
        # The heap is settled last, once everything start-up loads is loaded. No answer needs it, so a waiting
        # prompt goes first, and a hurry does not start it under the keys: it holds the GIL ~100-200 ms.
        self.warm_up.holds_prompts = False
        self.send_waiting()
        await self.warm_up.run("heap", warmup.settle_heap, hurried=False)
        self.warm_up.finish()

    def runtime_ready(self) -> None:
        runtime = self.runtime
        assert runtime is not None
        self.settings = runtime.settings
        agent = runtime.agent
        threshold = runtime.settings.compact_threshold
        self.status.update_state(model=runtime.settings.model, mode=agent.policy.mode,
                                 threshold=threshold if isinstance(threshold, float) else None,
                                 cost=float(agent.totals.get("cost", 0.0)), phase="")
        if self._theme_flag is None and runtime.settings.theme != self.theme:
            self.set_theme(runtime.settings.theme)
        if runtime.resumed is not None:
            from anvil.tui.history import show_history

            show_history(self, runtime.resumed.messages)
        for warning in runtime.warnings:
            self.transcript.add_line("notice", warning)
        self.run_worker(self._start_runtime(runtime), group="runtime-start", exit_on_error=False)
        if agent.ctx.todos:
            self.show_todos(tuple(agent.ctx.todos))
        if self.demo_prompt:
            self.play_demo(self.demo_prompt)
            self.demo_prompt = None  # once: /clear and /resume come back here
        self.send_waiting()
        self.started = True

    @property
    def prompts_held(self) -> bool:
        """Prompts wait (shown as queued) until the model they go to is loaded and warm."""
        return self.runtime is None or self.warm_up.holds_prompts or self.model_loading

    def send_waiting(self) -> None:
        """Prompts held while anvil warmed up, sent as one message (shown again as sent, not queued)."""
        if self.prompts_held or not self._waiting:
            return
        waiting, self._waiting = self._waiting, []
        for entry in self._waiting_entries:
            entry.remove()
        self._waiting_entries.clear()
        self.send("\n\n".join(waiting))

    @work(group="demo")
    async def play_demo(self, prompt: str) -> None:
        """Type the demo's prompt where the person can see it, then send it."""
        await asyncio.sleep(0.6)
        for char in prompt:
            self.prompt.insert(char)
            await asyncio.sleep(0.015)
        await asyncio.sleep(0.4)
        self.prompt.load_text("")
        self.send(prompt)
        await self._until_idle()
        if self.runtime is not None:
            await asyncio.sleep(1.0)
            self._add_user("/compact")
            from anvil.tui.commands import run_slash

            await run_slash(self, "/compact")
            await self._until_idle()
        self.add_line("notice", "That was the demo: the files are in a temporary copy, "
                                f"{self.root}. Keep typing to explore the app; /exit or Ctrl+C twice quits.")

    async def _until_idle(self) -> None:
        await asyncio.sleep(0.2)
        while self.busy:
            await asyncio.sleep(0.1)

    # -- sending --------------------------------------------------------------------------------------

    @on(PromptInput.Submitted)
    async def on_prompt_submitted(self, message: PromptInput.Submitted) -> None:
        text = message.text
        self.warm_up.hurry()  # a prompt or a command: the person now waits on anvil, not the other way round
        try:
            if text.startswith("/") and not text.startswith("//"):
                from anvil.tui.commands import run_slash

                await run_slash(self, text)
                return
            self.send(text[1:] if text.startswith("//") else text)
        except Exception as exc:  # whatever goes wrong with one message, the app stays up
            self.add_line("error", f"Could not send that: {type(exc).__name__}: {exc}")

    def send(self, text: str) -> None:
        """Start a turn, or queue the message when a turn is running or anvil is still warming up."""
        if self.prompts_held:
            self._waiting.append(text)
            self._waiting_entries.append(self._add_user(text, queued=True))
            self.warm_up.hurry()  # the prompt needs every step: no more waiting for pauses in typing
            return
        expanded = expand_mentions(text, self.root)
        for problem in expanded.problems:
            self.transcript.add_line("notice", problem)
        if self.busy:
            self.runtime.agent.steer(expanded.text)
            self.renderer.queued.append(self._add_user(text, queued=True, attached=expanded.attached))
            return
        self._add_user(text, attached=expanded.attached)
        self.start_agent(self._turn(expanded.text))

    async def _turn(self, text: str) -> AsyncIterator[ev.Event]:
        """A turn, with MCP resources mentioned as @server:uri attached to the message first."""
        assert self.runtime is not None
        if self.runtime.mcp is not None:
            text, problems = await self.runtime.mcp.attach_resources(text)
            for problem in problems:
                self.add_line("notice", problem)
        async for event in self.runtime.agent.run_turn(text):
            yield event

    def _add_user(self, text: str, *, queued: bool = False, attached: list[str] | None = None) -> UserEntry:
        shown = text + (f"\n(attached: {', '.join(attached)})" if attached else "")
        entry = UserEntry(shown, queued=queued)
        self.transcript.add(entry)
        self.transcript.scroll_end(animate=False)
        self.transcript.anchor()  # sending a message means the person wants to follow the answer
        return entry

    def start_agent(self, stream: AsyncIterator[ev.Event]) -> None:
        """Busy from this moment (not from when the worker gets scheduled), so nothing starts a second turn."""
        self.busy = True
        self.run_agent(stream)

    @work(group="agent", exit_on_error=False)
    async def run_agent(self, stream: AsyncIterator[ev.Event]) -> None:
        """Render every event of a turn (or a compaction); never lets an exception reach Textual."""
        self.busy = True
        self.status.update_state(busy=True, phase="Thinking…")
        try:
            async for event in stream:
                await self.renderer.dispatch(event)
        except Exception as exc:
            self.transcript.add_line("error", f"Internal error: {type(exc).__name__}: {exc}")
        finally:
            await self.renderer.end_assistant()
            self.busy = False
            self.status.update_state(busy=False, phase="")
        self._continue_with_steering()

    def _continue_with_steering(self) -> None:
        """Messages typed during a turn that ended before its next model call become the next turn."""
        agent = self.runtime.agent if self.runtime else None
        pending = agent.take_steering() if agent is not None else []
        self.renderer.mark_queued_sent()
        if agent is None or not pending:
            return
        self.start_agent(agent.run_turn("\n\n".join(pending)))

    def show_todos(self, todos: tuple[ev.TodoItem, ...]) -> None:
        self.query_one("#todos", TodoSidebar).set_todos(todos)
        self.query_one("#todo-summary", TodoSummary).set_todos(todos)
        self.update_todo_visibility()

    # -- keys -----------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While a modal (the approval prompt) is up, its keys win: no mode cycling or search behind it.
        return not (isinstance(self.screen, ModalScreen) and action in {"cycle_mode", "toggle_todos", "search"})

    def action_ctrl_c(self) -> None:
        now = time.monotonic()
        if now - self._last_ctrl_c < DOUBLE_PRESS_SECONDS:
            self.action_exit_app()
            return
        self._last_ctrl_c = now
        if isinstance(self.screen, ModalScreen):
            self.notify("Press Ctrl+C again to quit.", timeout=DOUBLE_PRESS_SECONDS)
            return
        self.prompt.load_text("")
        self.notify("Input cleared. Press Ctrl+C again to quit.", timeout=DOUBLE_PRESS_SECONDS)

    def action_interrupt(self) -> None:
        search = self.query("#search")
        if search and search.first().display:
            search.first().display = False
            return
        if self.busy and self.runtime is not None:
            self.runtime.agent.interrupt()
            self.status.update_state(phase="Interrupting…")

    def action_cycle_mode(self) -> None:
        if self.runtime is None:
            return
        mode = self.runtime.agent.policy.next_mode()
        self.status.update_state(mode=mode)

    def action_toggle_todos(self) -> None:
        sidebar = self.query_one("#todos", TodoSidebar)
        self._sidebar_forced = not sidebar.display
        self.update_todo_visibility()

    async def action_search(self) -> None:
        from anvil.tui.search import SearchBar

        bars = self.query(SearchBar)
        bar = bars.first() if bars else None
        if bar is None:
            bar = SearchBar(self.transcript, id="search")
            await self.mount(bar, before=self.query_one("#main"))
        bar.open()

    def action_exit_app(self) -> None:
        if self._exiting:
            return
        self._exiting = True
        if self.busy and self.runtime is not None:
            self.runtime.agent.interrupt()
        self.run_worker(self._close_and_exit(), group="exit")

    async def _start_runtime(self, runtime: Runtime) -> None:
        """Session hooks and MCP servers, in the background; what fails there is told in the transcript."""
        runtime.notify = lambda message: self.add_line("notice", message)
        if runtime.mcp is not None and runtime.mcp.servers:
            from anvil.core.mcp.client import import_mcp

            # About a second of imports that hold the GIL in stretches: in a pause of typing, like the warm-up.
            with contextlib.suppress(Exception):  # starting the servers imports it again and reports problems
                await self.warm_up.run("mcp", import_mcp)
        for notice in await runtime.start():
            self.add_line("notice", notice)

    async def _close_and_exit(self) -> None:
        if self.runtime is not None:
            with contextlib.suppress(Exception):  # hooks, MCP servers, background commands; nothing may block
                await asyncio.wait_for(self.runtime.close(), timeout=5)
            with contextlib.suppress(Exception):
                self.runtime.session.close()
        self.exit(0)

    def add_line(self, kind: str, text: str) -> LineEntry:
        return self.transcript.add_line(kind, text)
