"""Slash commands of `anvil --plain`: the TUI's set where they make sense in a line interface.

Each command is a small async function of the REPL and its argument. They run between turns (the
prompt is the only place to type them), so none has to wait for a running turn.
"""

from __future__ import annotations

import asyncio
import difflib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anvil.frontend.export import export_markdown
from anvil.plain.render import todos_text

if TYPE_CHECKING:
    from anvil.plain.repl import PlainRepl
    from anvil.runtime import Runtime

Handler = Callable[["PlainRepl", str], Awaitable[None]]
KEYS_HELP = ("Keys: Enter send · Alt+Enter newline · Up/Down history · Tab complete · @path attach a file\n"
             "      Shift+Tab approval mode · Ctrl+C interrupt the turn (at the prompt: clear it) · Ctrl+D exit\n"
             "      Start with // to send a message that begins with /")


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    handler: Handler


COMMANDS: dict[str, Command] = {}
ALIASES = {"quit": "exit", "q": "exit", "new": "clear", "?": "help"}


def command(name: str, usage: str, help_: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        COMMANDS[name] = Command(name, usage, help_, handler)
        return handler

    return register


def command_list() -> list[tuple[str, str]]:
    return [(c.name, c.help) for c in COMMANDS.values()]


def closest(name: str) -> str | None:
    """The command a mistyped name most likely meant (``/hlep`` → help, ``/comp`` → compact)."""
    names = list(COMMANDS) + list(ALIASES)
    prefixed = [n for n in COMMANDS if name and n.startswith(name)]
    if prefixed:
        return prefixed[0]
    match = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    return ALIASES.get(match[0], match[0]) if match else None


async def run_slash(repl: PlainRepl, line: str) -> None:
    name, _, arg = line[1:].strip().partition(" ")
    name = name.lower()
    cmd = COMMANDS.get(ALIASES.get(name, name))
    if cmd is None:
        guess = closest(name)
        hint = f" Did you mean /{guess}?" if guess else ""
        repl.say(f"Unknown command /{name}.{hint} /help lists them; start with // to send a message that "
                 "begins with a slash.")
        return
    try:
        await cmd.handler(repl, arg.strip())
    except Exception as exc:  # a failing command reports; it never ends the REPL
        repl.say(f"✗ /{cmd.name} failed: {type(exc).__name__}: {exc}", "class:error")


@command("help", "/help", "commands and keys")
async def _help(repl: PlainRepl, arg: str) -> None:
    width = max(len(c.usage) for c in COMMANDS.values())
    lines = [f"  {c.usage:<{width}}  {c.help}" for c in COMMANDS.values()]
    repl.say("\n".join(lines) + "\n\n" + KEYS_HELP, "")


@command("clear", "/clear", "start a new conversation (the old session is kept)")
async def _clear(repl: PlainRepl, arg: str) -> None:
    from anvil.runtime import open_runtime

    old = repl.runtime
    runtime = await asyncio.to_thread(open_runtime, old.settings, old.root, model=old.agent.model)
    await swap(repl, runtime)
    repl.say(f"New conversation (session {runtime.session.id}). The previous one is kept: /resume {old.session.id}")


async def swap(repl: PlainRepl, runtime: Runtime) -> None:
    """Replace the runtime (new or resumed session), keeping the approval mode the person chose."""
    old = repl.runtime
    runtime.agent.policy.set_mode(old.agent.policy.mode)
    await old.close()
    repl.runtime = runtime
    repl.install(runtime)
    await repl.start_runtime(runtime)
    repl.used = repl.window = None
    repl.cost = float(runtime.agent.totals.get("cost", 0.0))


@command("compact", "/compact [focus]", "summarise the conversation to free context")
async def _compact(repl: PlainRepl, arg: str) -> None:
    await repl.run_events(repl.runtime.agent.compact(arg or None))


@command("model", "/model [name]", "show or switch the model")
async def _model(repl: PlainRepl, arg: str) -> None:
    runtime = repl.runtime
    if not arg:
        repl.say(f"Model: {runtime.settings.model}. Switch with /model NAME (any litellm model string, "
                 "e.g. anthropic/claude-sonnet-4-5).")
        return
    problem = await runtime.switch_model(arg)
    repl.window = None  # the gauge waits for the next count against the new window
    repl.say(f"Model switched to {arg}." + (f" {problem}" if problem else ""))


@command("mode", "/mode [name]", "show or set the approval mode (Shift+Tab cycles)")
async def _mode(repl: PlainRepl, arg: str) -> None:
    from anvil.core.policy.approval import MODES

    policy = repl.runtime.agent.policy
    if arg:
        try:
            policy.set_mode(arg.replace("-", "_").replace(" ", "_"))  # type: ignore[arg-type]
        except ValueError:
            repl.say(f"Unknown mode '{arg}'. Modes: {', '.join(MODES)}.")
            return
    repl.say(f"Approval mode: {policy.mode}." + ("" if arg else f" Modes: {', '.join(MODES)}."))


@command("todos", "/todos", "the model's todo list")
async def _todos(repl: PlainRepl, arg: str) -> None:
    repl.end_line()
    repl.write([("class:title", "Todos\n"), *todos_text(list(repl.runtime.agent.ctx.todos))])


@command("cost", "/cost", "tokens and cost of this session")
async def _cost(repl: PlainRepl, arg: str) -> None:
    runtime = repl.runtime
    t = runtime.agent.totals
    repl.say(f"Session {runtime.session.id}: {int(t['prompt_tokens']):,} input and {int(t['completion_tokens']):,} "
             f"output tokens, ${float(t['cost']):.4f}. Context: {runtime.agent.context.used:,} tokens in use.")


@command("mcp", "/mcp", "MCP servers, their state and tools")
async def _mcp(repl: PlainRepl, arg: str) -> None:
    mcp = repl.runtime.mcp
    if mcp is None or not mcp.servers:
        repl.say("No MCP servers configured. Add them under [mcp_servers.NAME] in .anvil/config.toml.")
        return
    for server in mcp.status():
        tools = ", ".join(server.tools) if server.tools else "no tools"
        error = f" — {server.error}" if server.error else ""
        repl.say(f"{server.name} ({server.transport}): {server.state}{error}\n    {tools}")


@command("sessions", "/sessions", "this project's sessions, newest first")
async def _sessions(repl: PlainRepl, arg: str) -> None:
    runtime = repl.runtime
    sessions = await asyncio.to_thread(runtime.store.list)
    if not sessions:
        repl.say("No sessions yet.")
        return
    rows = []
    for s in sessions[:20]:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created))
        mark = "*" if s.id == runtime.session.id else " "
        rows.append(f"{mark} {s.id:<24} {started}  {s.turns:>3} turns  {' '.join(s.first_prompt.split())[:60]}")
    repl.say("\n".join(rows) + "\n/resume ID opens one.", "")


@command("resume", "/resume [id]", "continue an earlier session (the newest other one without an id)")
async def _resume(repl: PlainRepl, arg: str) -> None:
    runtime = repl.runtime
    session_id = arg
    if not session_id:
        others = [s for s in await asyncio.to_thread(runtime.store.list) if s.id != runtime.session.id]
        if not others:
            repl.say("No earlier session to resume.")
            return
        session_id = others[0].id
    from anvil.core.session.store import SessionError
    from anvil.runtime import open_runtime

    try:
        new = await asyncio.to_thread(open_runtime, runtime.settings, runtime.root, resume=session_id,
                                      model=runtime.agent.model)
    except SessionError as exc:
        repl.say(f"✗ {exc}", "class:error")
        return
    await swap(repl, new)
    for warning in new.warnings:
        repl.say(f"ℹ {warning}")
    show_resumed(repl)


def show_resumed(repl: PlainRepl) -> None:
    """A resumed session in a few lines: its size and the last exchange, not a replay of everything."""
    runtime = repl.runtime
    if runtime.resumed is None:
        return
    messages = runtime.agent.messages[1:]
    repl.say(f"Resumed session {runtime.session.id}: {len(messages)} messages, {runtime.agent.turn} turns.")
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    last_reply = next((m for m in reversed(messages) if m.get("role") == "assistant" and m.get("content")), None)
    for label, message in (("you", last_user), ("anvil", last_reply)):
        if message is not None:
            text = " ".join(str(message.get("content") or "").split())
            repl.say(f"  {label}: {text[:200]}{'…' if len(text) > 200 else ''}", "class:dim")


def _undo_manager(repl: PlainRepl) -> Any:
    """The undo manager over this session's checkpoints; None (after saying why) when there is none."""
    try:
        from anvil.core.session.checkpoints import FileCheckpointStore
        from anvil.core.session.undo import UndoManager
    except ImportError:
        repl.say("Undo and rewind are not available yet in this version of the engine.")
        return None
    store = repl.runtime.agent.ctx.checkpoints
    if not isinstance(store, FileCheckpointStore):
        repl.say("Undo is not available: this session keeps no checkpoints.")
        return None
    return UndoManager(store, repl.runtime.root)


async def _apply_undo(repl: PlainRepl, run: Callable[..., Any]) -> None:
    """Undo or rewind the code; files changed outside anvil are shown and only overwritten if the person says so."""
    report = await asyncio.to_thread(run, force=False)
    if report.conflicts and not report.applied:
        repl.say(report.summary())
        answer = await repl.read_line("Overwrite those outside changes with anvil's originals? [y/N] ")
        if (answer or "").strip().lower() not in {"y", "yes"}:
            repl.say("Nothing was changed.")
            return
        report = await asyncio.to_thread(run, force=True)
    repl.say(report.summary(), "")


@command("undo", "/undo", "restore the files changed in the last turn that changed files")
async def _undo(repl: PlainRepl, arg: str) -> None:
    manager = _undo_manager(repl)
    if manager is not None:
        await _apply_undo(repl, manager.undo_last)


@command("rewind", "/rewind [turn] [code|chat|both]", "list turns, or go back to before one (code, conversation)")
async def _rewind(repl: PlainRepl, arg: str) -> None:
    manager = _undo_manager(repl)
    if manager is None:
        return
    from anvil.core.session.undo import rewind_choices

    runtime = repl.runtime
    runtime.session.sync()
    prompts = (await asyncio.to_thread(runtime.session.load)).prompts
    choices = await asyncio.to_thread(rewind_choices, runtime.agent.messages[1:], prompts, manager)
    words = arg.split()
    if not words:
        if not choices:
            repl.say("No turns to rewind yet.")
            return
        repl.say("\n".join(f"  {c.summary()}" for c in choices) + "\n/rewind N goes back to before turn N "
                 "(code and conversation); add 'code' or 'chat' for only one.", "")
        return
    what = words[1].lower() if len(words) > 1 else "both"
    choice = next((c for c in choices if words[0].isdigit() and c.turn == int(words[0])), None)
    if choice is None or what not in {"code", "chat", "conversation", "both"}:
        repl.say("Usage: /rewind N [code|chat|both], N a turn from /rewind.")
        return
    if what in {"code", "both"}:
        await _apply_undo(repl, lambda force: manager.rewind(choice.turn, force=force))
    if what != "code":
        if not runtime.agent.rewind_conversation(choice.turn):
            repl.say(f"The conversation of turn {choice.turn} was compacted away; it cannot be rewound.")
            return
        repl.used = None
        repl.say(f"The conversation is back to before turn {choice.turn} "
                 f"({len(runtime.agent.messages) - 1} messages kept).")


@command("export", "/export [file]", "write the conversation as Markdown into the project")
async def _export(repl: PlainRepl, arg: str) -> None:
    runtime = repl.runtime
    path = runtime.root / (arg or f"anvil-session-{runtime.session.id}.md")
    text = export_markdown(runtime.agent.messages, session_id=runtime.session.id, model=runtime.settings.model)
    await asyncio.to_thread(path.write_text, text, encoding="utf-8")
    repl.say(f"Exported the conversation to {path}")


@command("exit", "/exit", "quit anvil (Ctrl+D)")
async def _exit(repl: PlainRepl, arg: str) -> None:
    repl.exit_requested = True
