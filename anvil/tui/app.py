"""The Textual app: layout, the worker that runs the agent, event dispatch and keys.

First paint comes before anything slow: settings (pydantic), the runtime (tools, the git-probing system
prompt) and litellm are all loaded after it, in threads, step by step in the pauses of the person's typing
(anvil/tui/warmup.py); a prompt sent before the warm-up is over hurries it and waits for it. The agent runs
in an async worker; every event is rendered on the UI side, and approval requests are answered with a modal
pushed from that worker.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen

from anvil.frontend.commands import command_completions
from anvil.frontend.keys import CtrlC
from anvil.frontend.prompt import is_command, prepare_prompt, problem_notices, prompt_turn
from anvil.tui import warmup
from anvil.tui.commands import CommandRunner
from anvil.tui.exiting import Exiting
from anvil.tui.jobs import job_to_resume, launch_job, waiting_job
from anvil.tui.opening import restore_gauge, show_opening
from anvil.tui.prompt_input import Composer, PromptInput
from anvil.tui.startup import choose_theme, configured_theme, load_themes, paint_early_theme
from anvil.tui.status import StatusBar
from anvil.tui.todos import TodoSidebar, TodoSummary, place_todos
from anvil.tui.transcript import LineEntry, Transcript, UserEntry

if TYPE_CHECKING:
    # Not imported before the first paint: the events module alone costs ~10 ms of dataclass building.
    from anvil.config import Settings
    from anvil.core import events as ev
    from anvil.core.model.protocol import Model
    from anvil.facade import SessionFacade
    from anvil.frontend.jobs import JobLaunch
    from anvil.runtime import Runtime
    from anvil.tui.render import TurnRenderer

STARTUP_DELAY = 0.05


class AnvilApp(Exiting):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere find it too
    TITLE = "anvil"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "ctrl_c", "Interrupt / clear / quit", priority=True, show=False),
        Binding("escape", "interrupt", "Interrupt", show=False),
        Binding("shift+tab", "cycle_mode", "Approval mode", priority=True, show=False),
        Binding("ctrl+t", "toggle_todos", "Todos", priority=True, show=False),
        Binding("ctrl+f", "search", "Search", priority=True, show=False),
        Binding("ctrl+q", "exit_app", "Quit", priority=True, show=False),
    ]

    def __init__(self, root: Path, *, flags: dict[str, Any] | None = None, settings: Settings | None = None,
                 runtime: Runtime | None = None, model: Model | None = None, resume: str | None = None,
                 continue_latest: bool = False, theme: str | None = None, demo_prompt: str | None = None,
                 trust: bool | None = None, job: JobLaunch | None = None,
                 first_prompt: str | None = None) -> None:
        super().__init__()
        self.root = root.resolve()
        self.flags = flags or {}
        self.settings = settings or (runtime.settings if runtime else None)
        #: what the app does with the session goes through this facade
        self.session: SessionFacade | None = _facade(runtime) if runtime is not None else None
        self._model = model
        self._resume = resume
        self._continue = continue_latest
        self._theme_flag = theme
        self.demo_prompt = demo_prompt
        self.first_prompt = first_prompt  # `anvil "fix the bug"`: sent as soon as the session is ready
        #: printed by the CLI once the terminal is back: how to resume the session
        self.farewell: str | None = None
        self._trust = trust  # --trust: the project's risky settings apply without asking
        self.job_launch = job  # --workflow: the job to start or go on with once the session is ready (tui/jobs.py)
        self.job_waiting: str | None = None  # a workflow whose new job the next message starts
        self.busy = False
        self.started = False  # set when the runtime is ready (tests wait for it)
        self._wanted_theme = "anvil-dark"
        self.warm_up = warmup.WarmUp()
        # A given runtime with a scripted model needs no warm-up: its prompts are never held.
        self.warm_up.holds_prompts = self.session is None or warmup.uses_litellm(self.session.model)
        self.commands = CommandRunner(self, warmup.warm_model)
        self.model_loading = False  # /model is building and warming the new model: prompts wait for it
        self._waiting: list[str] = []  # prompts sent before the warm-up (or a /model switch) was over
        self._waiting_entries: list[UserEntry] = []
        self._renderer: TurnRenderer | None = None
        self.ctrl_c = CtrlC()
        self._sidebar_forced: bool | None = None

    @property
    def runtime(self) -> Runtime | None:
        """The runtime the app was given or built (the CLI closes its session file after a crash)."""
        return self.session.runtime if self.session is not None else None

    # -- layout ---------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield Transcript(id="transcript")
            yield TodoSidebar(id="todos")
        yield TodoSummary(id="todo-summary")
        yield Composer(self.root, lambda: command_completions(self.commands.commands, self.session), id="composer")
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
        self._wanted_theme = self._theme_flag or configured_theme(self.root) or "anvil-dark"
        paint_early_theme(self, self._wanted_theme)
        self.query_one("#todos").display = False
        self.query_one("#todo-summary").display = False
        self.status.update_state(model=str(self.flags.get("model") or (self.settings.model if self.settings else "")))
        self.prompt.focus()
        self.watch_signals()  # SIGTERM and SIGHUP: the same way out as /exit, within 2 s (anvil/tui/exiting.py)
        # Start-up work (imports in a thread) competes for the GIL with drawing: let the first frame out first.
        self.call_after_refresh(self.set_timer, STARTUP_DELAY, self.start_up)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.Paste)):  # every key reaches the app first, focused or not
            self.warm_up.key_pressed()
        await super().on_event(event)

    def set_theme(self, name: str, *, quiet: bool = False) -> bool:
        return choose_theme(self, name, quiet=quiet)

    def on_resize(self) -> None:
        self.update_todo_visibility()

    def update_todo_visibility(self) -> None:
        place_todos(self.query_one("#todos", TodoSidebar), self.query_one("#todo-summary", TodoSummary),
                    self.size.width, self._sidebar_forced)

    def reveal_todos(self) -> None:
        self._sidebar_forced = True
        self.update_todo_visibility()

    # -- start-up after the first paint ---------------------------------------------------------------

    @work(group="startup", exit_on_error=False)
    async def start_up(self) -> None:
        """After the first paint, one step at a time in the pauses of typing: themes, settings, the runtime
        (then the app is ready), then litellm and the rest of what the first model call needs."""
        await load_themes(self, self.warm_up.run, self._wanted_theme)
        built = self.session is None
        if self.session is None:
            try:
                settings = self.settings or await self._load_settings()
                self.session = _facade(await self.warm_up.run("runtime", partial(
                    warmup.open_runtime, settings, self.root, resume=self._resume, continue_latest=self._continue,
                    model=self._model, resume_job=job_to_resume(self.job_launch))))
            except Exception as exc:  # config, session or model problems: say so and keep the app open
                self.transcript.add_line("error", f"anvil could not start: {exc}")
                self.status.update_state(phase="not ready")
                return
        assert self.session is not None
        self.warm_up.holds_prompts = warmup.uses_litellm(self.session.model)
        self.session_ready()
        for name, step in warmup.model_steps(self.session, preflight=built):
            try:
                problem = await self.warm_up.run(name, step)
            except Exception as exc:  # the first model call meets it again and says so in its turn
                self.add_line("notice", f"Could not prepare the model ({name}): {type(exc).__name__}: {exc}")
                break
            if isinstance(problem, str) and problem:
                self.add_line("notice", problem)
        await restore_gauge(self, self.session)
        # The heap is settled last, once everything start-up loads is loaded. No answer needs it, so a waiting
        # prompt goes first, and a hurry does not start it under the keys: it holds the GIL ~100-200 ms.
        self.warm_up.holds_prompts = False
        self.send_waiting()
        await self.warm_up.run("heap", warmup.settle_heap, hurried=False)
        self.warm_up.finish()

    async def _load_settings(self) -> Settings:
        """Settings, after the trust question when the folder's configuration needs one (anvil/tui/trust.py)."""
        loaded = await self.warm_up.run("settings", partial(warmup.settings_or_question, self.root, self.flags,
                                                            self._trust))
        from anvil.trust import ProjectTrust  # standard library only: cheap

        if not isinstance(loaded, ProjectTrust):
            return loaded
        from anvil.tui.trust import ask_then_load

        return await ask_then_load(self, loaded, partial(warmup.load_settings, self.root, self.flags))

    def session_ready(self) -> None:
        """The session is open (at start-up, after /clear or /resume): show it and start what runs beside it."""
        session = self.session
        assert session is not None
        settings = self.settings = session.settings
        threshold = settings.compact_threshold
        self.status.update_state(model=settings.model, mode=session.mode, cost=session.usage().cost, phase="",
                                 threshold=threshold if isinstance(threshold, float) else None,
                                 sandbox=session.sandbox.label)
        if self._theme_flag is None and settings.theme != self.theme:
            self.set_theme(settings.theme)
        show_opening(self, session)
        self.run_worker(self._start_session(session), group="runtime-start", exit_on_error=False)
        launch_job(self)  # the job's phase in the status bar; --workflow's job started, resumed or waited for
        if session.todos:
            self.show_todos(session.todos)
        if self.demo_prompt:
            from anvil.tui.demo import play

            self.run_worker(play(self, self.demo_prompt), group="demo")
            self.demo_prompt = None  # once: /clear and /resume come back here
        if self.first_prompt:
            first, self.first_prompt = self.first_prompt, None
            self.send(first)
        self.send_waiting()
        self.started = True

    async def adopt(self, session: SessionFacade) -> None:
        """Go on with another session (/clear, /resume; the old one is closed): a fresh transcript."""
        self.session = session
        await self.transcript.clear()
        self.show_todos(session.todos)
        self.status.update_state(used=session.usage().context_used)
        self.session_ready()

    @property
    def prompts_held(self) -> bool:
        """Prompts wait (shown as queued) until the model they go to is loaded and warm."""
        return self.session is None or self.warm_up.holds_prompts or self.model_loading

    def send_waiting(self) -> None:
        """Prompts held while anvil warmed up, sent as one message (shown again as sent, not queued)."""
        if self.prompts_held or not self._waiting:
            return
        waiting, self._waiting = self._waiting, []
        for entry in self._waiting_entries:
            entry.remove()
        self._waiting_entries.clear()
        self.send("\n\n".join(waiting))

    # -- sending --------------------------------------------------------------------------------------

    @on(PromptInput.Submitted)
    async def on_prompt_submitted(self, message: PromptInput.Submitted) -> None:
        text = message.text
        if not text:  # Enter on an empty prompt: goes on after a dropped connection, does nothing otherwise
            if self.session is not None and not self.busy and self.session.can_continue:
                await self.commands.run("/continue")
            return
        self.warm_up.hurry()  # a prompt or a command: the person now waits on anvil, not the other way round
        try:
            if is_command(text):
                await self.commands.run(text)
            else:
                self.send(text)
        except Exception as exc:  # whatever goes wrong with one message, the app stays up
            self.add_line("error", f"Could not send that: {type(exc).__name__}: {exc}")

    def send(self, typed: str) -> None:
        """Start a turn, or queue the message when a turn is running or anvil is still warming up."""
        if self.prompts_held or self.session is None:
            self._waiting.append(typed)
            self._waiting_entries.append(self.add_user(typed, queued=True))
            self.warm_up.hurry()  # the prompt needs every step: no more waiting for pauses in typing
            return
        prompt = prepare_prompt(typed, self.root)
        if self.busy:
            self.session.steer(prompt.text)
            for notice in problem_notices(prompt):
                self.renderer.line(notice)
            self.renderer.queued.append(self.add_user(prompt.typed, queued=True, attached=prompt.attached))
            return
        self.add_user(prompt.typed, attached=prompt.attached)
        self.start_agent(waiting_job(self, prompt.text) or prompt_turn(self.session, prompt))

    def add_user(self, text: str, *, queued: bool = False, attached: tuple[str, ...] = ()) -> UserEntry:
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
        from anvil.core.loop.failure import report  # after the first paint: the engine is loaded by now
        from anvil.frontend.guard import show_each

        data_dir = self.session.data_dir if self.session is not None else None
        try:  # an event that fails to show is one error line; the turn goes on (anvil/frontend/guard.py)
            await show_each(stream, self.renderer.dispatch, partial(self.add_line, "error"), data_dir)
        except Exception as exc:  # the stream itself broke (the engine ends its turns cleanly: a bug before it)
            self.add_line("error", report(data_dir, "The turn", exc))
        finally:
            await self.renderer.end_assistant()
            self.busy = False
            self.status.update_state(busy=False, phase="")
        self._continue_with_steering()

    async def render_event(self, event: ev.Event) -> None:
        await self.renderer.dispatch(event)

    def _continue_with_steering(self) -> None:
        """Messages typed during a turn that ended before its next model call become the next turn."""
        pending = self.session.take_steering() if self.session is not None else []
        self.renderer.mark_queued_sent()
        if self.session is not None and pending:
            self.start_agent(self.session.submit("\n\n".join(pending)))

    def show_todos(self, todos: tuple[ev.TodoItem, ...]) -> None:
        self.query_one("#todos", TodoSidebar).set_todos(todos, self.status.state.job)
        self.query_one("#todo-summary", TodoSummary).set_todos(todos)
        self.update_todo_visibility()

    # -- keys -----------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While a modal (the approval prompt) is up, its keys win: no mode cycling or search behind it.
        return not (isinstance(self.screen, ModalScreen) and action in {"cycle_mode", "toggle_todos", "search"})

    def action_ctrl_c(self) -> None:
        from anvil.tui.keys import ctrl_c

        ctrl_c(self)

    def action_interrupt(self) -> None:
        search = self.query("#search")
        if search and search.first().display:
            search.first().display = False
            return
        if self.busy and self.session is not None:
            self.session.interrupt()
            self.status.update_state(phase="Interrupting…")

    def action_cycle_mode(self) -> None:
        if self.session is not None:
            self.status.update_state(mode=self.session.next_mode())

    def action_toggle_todos(self) -> None:
        sidebar = self.query_one("#todos", TodoSidebar)
        self._sidebar_forced = not sidebar.display
        self.update_todo_visibility()

    async def action_search(self) -> None:
        from anvil.tui.search import open_search

        await open_search(self, self.transcript, self.query_one("#main"))

    async def _start_session(self, session: SessionFacade) -> None:
        """Session hooks and MCP servers, in the background; what fails there is told in the transcript."""
        from anvil.frontend.guard import guarded

        session.on_notice(lambda message: self.add_line("notice", message))
        notices = await guarded(warmup.start_session(session, self.warm_up), "Starting the session",
                                partial(self.add_line, "error"), session.data_dir)
        for notice in notices or []:
            self.add_line("notice", notice)

    def add_line(self, kind: str, text: str) -> LineEntry:
        return self.transcript.add_line(kind, text)


def _facade(runtime: Runtime) -> SessionFacade:
    from anvil.facade import SessionFacade  # not before the first paint: it loads the engine

    return SessionFacade(runtime)
