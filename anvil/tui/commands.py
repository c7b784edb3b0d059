"""Slash commands typed in the prompt: ``/help``, ``/clear``, ``/compact [focus]`` and the rest.

Each command is a small function of the app and its argument. Commands that replace the conversation
(clear, resume, model, compact) wait until the running turn ends; the others work at any time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anvil.frontend.export import export_markdown

if TYPE_CHECKING:
    from anvil.runtime import Runtime
    from anvil.tui.app import AnvilApp

Handler = Callable[["AnvilApp", str], Awaitable[None]]

KEYS_HELP = """Keys: Enter send · Shift+Enter or Ctrl+J newline · Up/Down history · @path attach a file
Esc interrupt · Shift+Tab approval mode (ask, accept edits, auto, plan) · Ctrl+T todos · Ctrl+F search
c copy the focused entry · C its last code block · Enter on a tool call expands it · Ctrl+C clear, twice quits"""


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    handler: Handler
    idle_only: bool = False


COMMANDS: dict[str, Command] = {}


def command(name: str, usage: str, help_: str, *, idle_only: bool = False) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        COMMANDS[name] = Command(name, usage, help_, handler, idle_only)
        return handler

    return register


def command_list() -> list[tuple[str, str]]:
    """(name, help) pairs for the prompt's completion menu."""
    return [(c.name, c.help) for c in COMMANDS.values()]


async def run_slash(app: AnvilApp, line: str) -> None:
    name, _, arg = line[1:].strip().partition(" ")
    cmd = COMMANDS.get(name.lower())
    if cmd is None:
        close = [c for c in COMMANDS if c.startswith(name[:2].lower())] if name else []
        hint = f" Did you mean /{close[0]}?" if close else ""
        app.add_line("notice", f"Unknown command /{name}.{hint} /help lists them; start with // to send a "
                               "message that begins with a slash.")
        return
    if cmd.idle_only and app.busy:
        app.add_line("notice", f"/{cmd.name} waits until the running turn ends (Esc interrupts it).")
        return
    if cmd.idle_only and app.runtime is None:
        app.add_line("notice", f"/{cmd.name} is not available until anvil has started.")
        return
    try:
        await cmd.handler(app, arg.strip())
    except Exception as exc:  # a failing command reports, it never takes the app down
        app.add_line("error", f"/{cmd.name} failed: {type(exc).__name__}: {exc}")


def _runtime(app: AnvilApp) -> Runtime | None:
    if app.runtime is None:
        app.add_line("notice", "anvil is still starting; try again in a moment.")
    return app.runtime


@command("help", "/help", "commands and keys")
async def _help(app: AnvilApp, arg: str) -> None:
    width = max(len(c.usage) for c in COMMANDS.values())
    lines = [f"{c.usage:<{width}}  {c.help}" for c in COMMANDS.values()]
    app.add_line("help", "\n".join(lines) + "\n\n" + KEYS_HELP)


@command("clear", "/clear", "start a new conversation (the old session is kept)", idle_only=True)
async def _clear(app: AnvilApp, arg: str) -> None:
    old = app.runtime
    assert old is not None
    from anvil.runtime import open_runtime

    runtime = await asyncio.to_thread(open_runtime, old.settings, app.root, model=old.agent.model)
    await _swap(app, runtime)
    app.add_line("notice", f"New conversation (session {runtime.session.id}). The previous one is kept: "
                           f"/resume {old.session.id}")


async def _swap(app: AnvilApp, runtime: Runtime) -> None:
    old = app.runtime
    if old is not None:
        runtime.agent.policy.set_mode(old.agent.policy.mode)
        await old.close()
    app.runtime = runtime
    await app.transcript.clear()
    app.show_todos(tuple(runtime.agent.ctx.todos))
    app.status.update_state(used=runtime.agent.context.used, cost=float(runtime.agent.totals.get("cost", 0.0)))
    app.runtime_ready()


@command("compact", "/compact [focus]", "summarise the conversation to free context", idle_only=True)
async def _compact(app: AnvilApp, arg: str) -> None:
    assert app.runtime is not None
    app.start_agent(app.runtime.agent.compact(arg or None))


@command("model", "/model [name]", "show or switch the model", idle_only=True)
async def _model(app: AnvilApp, arg: str) -> None:
    runtime = app.runtime
    assert runtime is not None
    if not arg:
        app.add_line("notice", f"Model: {runtime.settings.model}. Switch with /model NAME "
                               "(any litellm model string, e.g. anthropic/claude-sonnet-4-5).")
        return
    app.model_loading = True
    app.status.update_state(phase=f"Loading {arg}…")
    app.run_worker(_switch_model(app, runtime, arg), group="model", exit_on_error=False)


async def _switch_model(app: AnvilApp, runtime: Runtime, name: str) -> None:
    """In a worker, not in the app's message handler: building a litellm model may import litellm (seconds),
    and keys must keep coming meanwhile. A prompt sent before the switch is over waits and goes to the new
    model, which is warm by then (its first call imports nothing on the event loop)."""
    from anvil.tui.warmup import warm_model

    try:
        message = await runtime.switch_model(name)
        await warm_model(runtime)
        # The gauge against the new window, counted with the new tokenizer (no turn runs meanwhile).
        agent = runtime.agent
        await asyncio.to_thread(agent.context.measure, agent.messages, agent.tools.schemas())
        usage = agent.context.event()
        app.status.update_state(model=name, used=usage.used, window=usage.window, estimated=usage.estimated)
        app.add_line("notice", f"Model switched to {name}." + (f" {message}" if message else ""))
    except Exception as exc:  # the old model stays in use
        app.add_line("error", f"/model failed: {type(exc).__name__}: {exc}")
    finally:
        app.model_loading = False
        app.status.update_state(phase="")
        app.send_waiting()


@command("mode", "/mode [ask|accept_edits|auto|plan]", "cycle or set the approval mode (Shift+Tab cycles)")
async def _mode(app: AnvilApp, arg: str) -> None:
    runtime = _runtime(app)
    if runtime is None:
        return
    policy = runtime.agent.policy
    if arg:
        policy.set_mode(arg.replace("-", "_").replace(" ", "_"))  # type: ignore[arg-type]
    else:
        policy.next_mode()
    app.status.update_state(mode=policy.mode)
    app.add_line("notice", f"Approval mode: {policy.mode}.")


@command("todos", "/todos", "show or hide the todo list (Ctrl+T)")
async def _todos(app: AnvilApp, arg: str) -> None:
    app.action_toggle_todos()


@command("cost", "/cost", "tokens and cost of this session")
async def _cost(app: AnvilApp, arg: str) -> None:
    runtime = _runtime(app)
    if runtime is None:
        return
    t = runtime.agent.totals
    ctx = runtime.agent.context
    app.add_line("notice", f"Session {runtime.session.id}: {int(t['prompt_tokens']):,} input and "
                           f"{int(t['completion_tokens']):,} output tokens, ${float(t['cost']):.4f}. "
                           f"Context: {ctx.used:,} tokens in use.")


@command("sessions", "/sessions", "this project's sessions, newest first")
async def _sessions(app: AnvilApp, arg: str) -> None:
    runtime = _runtime(app)
    if runtime is None:
        return
    sessions = await asyncio.to_thread(runtime.store.list)
    if not sessions:
        app.add_line("notice", "No sessions yet.")
        return
    rows = []
    for s in sessions[:20]:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created))
        prompt = " ".join(s.first_prompt.split())[:60]
        mark = "*" if s.id == runtime.session.id else " "
        rows.append(f"{mark} {s.id:<24} {started}  {s.turns:>3} turns  {prompt}")
    app.add_line("help", "\n".join(rows) + "\n\n/resume ID opens one.")


@command("resume", "/resume [id]", "continue an earlier session (the newest other one without an id)",
         idle_only=True)
async def _resume(app: AnvilApp, arg: str) -> None:
    runtime = app.runtime
    assert runtime is not None
    session_id = arg
    if not session_id:
        others = [s for s in await asyncio.to_thread(runtime.store.list) if s.id != runtime.session.id]
        if not others:
            app.add_line("notice", "No earlier session to resume.")
            return
        session_id = others[0].id
    from anvil.runtime import open_runtime

    new = await asyncio.to_thread(open_runtime, runtime.settings, app.root, resume=session_id,
                                  model=runtime.agent.model)
    await _swap(app, new)


@command("mcp", "/mcp", "MCP servers, their state and tools")
async def _mcp(app: AnvilApp, arg: str) -> None:
    mcp = app.runtime.mcp if app.runtime else None
    if mcp is None or not mcp.servers:
        app.add_line("notice", "No MCP servers configured. Add them under [mcp_servers.NAME] in .anvil/config.toml.")
        return
    for server in mcp.status():
        tools = ", ".join(server.tools) if server.tools else "no tools"
        error = f" — {server.error}" if server.error else ""
        app.add_line("notice", f"{server.name} ({server.transport}): {server.state}{error}. Tools: {tools}")


@command("theme", "/theme [name]", "list themes or switch to one")
async def _theme(app: AnvilApp, arg: str) -> None:
    if not arg:
        names = sorted(app.available_themes)
        app.add_line("notice", "Themes: " + ", ".join(f"{n} (current)" if n == app.theme else n for n in names))
        return
    if app.set_theme(arg):
        app.add_line("notice", f"Theme: {arg}.")


@command("undo", "/undo [!]", "restore the files the last turn changed (! overwrites changes made outside anvil)",
         idle_only=True)
async def _undo(app: AnvilApp, arg: str) -> None:
    runtime = app.runtime
    if runtime is None or runtime.undo is None:
        app.add_line("notice", "Undo is not available: this session keeps no checkpoints.")
        return
    force = arg.strip() == "!"
    report = await asyncio.to_thread(runtime.undo.undo_last, force=force)
    _report_undo(app, report, "/undo !")


@command("rewind", "/rewind [turn] [code|chat|both] [!]",
         "list turns, or go back to before one (code, conversation or both)", idle_only=True)
async def _rewind(app: AnvilApp, arg: str) -> None:
    from anvil.core.session.undo import rewind_choices

    runtime = app.runtime
    if runtime is None or runtime.undo is None:
        app.add_line("notice", "Rewind is not available: this session keeps no checkpoints.")
        return
    runtime.session.sync()
    prompts = (await asyncio.to_thread(runtime.session.load)).prompts
    choices = await asyncio.to_thread(rewind_choices, runtime.agent.messages[1:], prompts, runtime.undo)
    words = arg.split()
    force = "!" in words
    words = [w for w in words if w != "!"]
    if not words:
        listing = "\n".join(f"  {c.summary()}" for c in choices) or "  No turns to rewind yet."
        app.add_line("notice", f"{listing}\n/rewind N goes back to before turn N (code and conversation); add "
                               "'code' or 'chat' for only one.")
        return
    what = words[1].lower() if len(words) > 1 else "both"
    choice = next((c for c in choices if words[0].isdigit() and c.turn == int(words[0])), None)
    if choice is None or what not in {"code", "chat", "conversation", "both"}:
        app.add_line("notice", "Usage: /rewind N [code|chat|both], N a turn that /rewind lists.")
        return
    if what in {"code", "both"}:
        report = await asyncio.to_thread(runtime.undo.rewind, choice.turn, force=force)
        if not _report_undo(app, report, f"/rewind {choice.turn} {what} !"):
            return
    if what != "code":
        if runtime.agent.rewind_conversation(choice.turn):
            app.status.update_state(used=0)
            app.add_line("notice", f"The conversation is back to before turn {choice.turn}.")
        else:
            app.add_line("notice", f"The conversation of turn {choice.turn} was compacted away; it cannot be rewound.")


def _report_undo(app: AnvilApp, report: Any, force_command: str) -> bool:
    """Say what an undo did; when it stopped on changes made outside anvil, say how to overwrite them."""
    app.add_line("notice", report.summary())
    if report.conflicts and not report.applied:
        app.add_line("notice", f"Nothing was changed. To overwrite those files with anvil's originals: {force_command}")
        return False
    return True


@command("export", "/export", "write the conversation as Markdown into the project")
async def _export(app: AnvilApp, arg: str) -> None:
    runtime = _runtime(app)
    if runtime is None:
        return
    path = app.root / (arg or f"anvil-session-{runtime.session.id}.md")
    text = export_markdown(runtime.agent.messages, session_id=runtime.session.id, model=runtime.settings.model)
    await asyncio.to_thread(path.write_text, text, encoding="utf-8")
    app.add_line("notice", f"Exported the conversation to {path}")


@command("exit", "/exit", "quit anvil")
async def _exit(app: AnvilApp, arg: str) -> None:
    app.action_exit_app()
