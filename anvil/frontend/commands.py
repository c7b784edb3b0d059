"""The slash commands, defined once for the TUI and the plain REPL.

A command is a name, its usage, a line of help and a handler. A handler gets the session facade and its
argument and returns a :data:`~anvil.frontend.effects.Reply`: a list of effects, each something to show, to ask,
or for the front end to do (run a compaction's events, switch the model, go on with another session, quit).
Front ends carry the effects out in their own way and decide nothing themselves.

This module is imported before the TUI's first paint (the completion menu lists the commands), so it loads
nothing of the engine at import time: the handlers only talk to the facade they are given.
"""

from __future__ import annotations

import asyncio
import difflib
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from anvil.frontend.effects import Confirm, Exit, Render, Replace, Reply, RunEvents, Show, ShowTodos, SwitchModel
from anvil.frontend.export import export_markdown

if TYPE_CHECKING:
    from anvil.core.events import TodoItem
    from anvil.core.session.undo import RewindChoice, UndoReport
    from anvil.facade import SessionFacade, Usage

NOT_STARTED = "anvil is still starting; try again in a moment."
TODO_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑", "cancelled": "☒"}
ALIASES = {"quit": "exit", "q": "exit", "new": "clear", "?": "help"}
#: the reasoning levels /think takes (the engine's own list is not imported before the first paint)
REASONING_WORDS = ("off", "low", "medium", "high")
#: commands only one front end has, and what the others say about them
ONLY_IN = {"theme": "/theme is only in the full-screen app (`anvil` without --plain): themes colour its widgets."}
#: slash commands with this prefix run an MCP server's prompt
MCP_PROMPT_PREFIX = "mcp__"


# -- the command set ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CommandContext:
    session: SessionFacade
    commands: CommandSet
    #: the front end's own keys, for /help
    keys_help: str


Handler = Callable[[CommandContext, str], Awaitable[Reply]]


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    handler: Handler
    #: replaces or rewrites the conversation: waits until the running turn ends
    idle_only: bool = False
    #: works before the session is ready (the TUI opens it after its first paint)
    needs_session: bool = True


class CommandSet:
    """The commands one front end offers: the shared ones, plus its own (the TUI's /theme)."""

    def __init__(self, commands: Iterable[Command]) -> None:
        self.commands = {c.name: c for c in commands}

    def with_commands(self, *extra: Command) -> CommandSet:
        return CommandSet([*self.commands.values(), *extra])

    def completions(self) -> list[tuple[str, str]]:
        """(name, help) pairs for a completion menu."""
        return [(c.name, c.help) for c in self.commands.values()]

    def find(self, name: str) -> Command | None:
        name = name.lower()
        return self.commands.get(ALIASES.get(name, name))

    def closest(self, name: str) -> str | None:
        """The command a mistyped name most likely meant (``/hlep`` → help, ``/comp`` → compact)."""
        prefixed = [n for n in self.commands if name and n.startswith(name)]
        if prefixed:
            return prefixed[0]
        match = difflib.get_close_matches(name, [*self.commands, *ALIASES], n=1, cutoff=0.5)
        return ALIASES.get(match[0], match[0]) if match else None

    def help_rows(self) -> tuple[tuple[str, str], ...]:
        """(usage, description) of every command, for /help."""
        return tuple((c.usage, c.help) for c in self.commands.values())

    def help_text(self) -> str:
        width = max(len(c.usage) for c in self.commands.values())
        return "\n".join(f"  {c.usage:<{width}}  {c.help}" for c in self.commands.values())


async def run_command(line: str, *, session: SessionFacade | None, commands: CommandSet, keys_help: str,
                      busy: bool = False) -> Reply:
    """What the command ``line`` (``/name arg``) shows and does; a failing command reports, never raises."""
    name, _, arg = line.strip().removeprefix("/").partition(" ")
    command = commands.find(name)
    if command is None and name.lower() in ONLY_IN:
        return [Show(ONLY_IN[name.lower()])]
    if command is None and name.startswith(MCP_PROMPT_PREFIX):
        return await mcp_prompt(session, name, arg.strip(), busy=busy)
    if command is None:
        guess = commands.closest(name.lower())
        hint = f" Did you mean /{guess}?" if guess else ""
        return [Show(f"Unknown command /{name}.{hint} /help lists them; start with // to send a message that "
                     "begins with a slash.")]
    if command.idle_only and busy:
        return [Show(f"/{command.name} waits until the running turn ends (interrupt it to go on at once).")]
    if session is None and command.needs_session:
        return [Show(NOT_STARTED)]
    try:
        return await command.handler(CommandContext(session, commands, keys_help), arg.strip())  # type: ignore[arg-type]
    except Exception as exc:
        return [Show(f"/{command.name} failed: {type(exc).__name__}: {exc}", "error")]


def command_completions(commands: CommandSet, session: SessionFacade | None) -> list[tuple[str, str]]:
    """What a completion menu offers after ``/``: the front end's commands, then the MCP servers' prompts."""
    return [*commands.completions(), *(session.mcp_prompt_commands() if session is not None else [])]


async def mcp_prompt(session: SessionFacade | None, name: str, arg: str, *, busy: bool = False) -> Reply:
    """``/mcp__server__prompt args``: the server's prompt, sent as the person's next message."""
    if session is None:
        return [Show(NOT_STARTED)]
    if busy:
        return [Show(f"/{name} waits until the running turn ends (interrupt it to go on at once).")]
    from anvil.frontend.prompt import Prompt, prompt_turn

    try:
        text = await session.mcp_prompt(name, arg)
    except ValueError as exc:
        return [Show(str(exc), "error")]
    lines = text.strip().splitlines()
    preview = lines[0][:100] + (" …" if len(lines) > 1 or len(lines[0]) > 100 else "")
    return [Show(f"/{name}: {preview}"), RunEvents(prompt_turn(session, Prompt(text, text)))]


# -- the shared commands --------------------------------------------------------------------------------

async def _help(ctx: CommandContext, arg: str) -> Reply:
    rows = ctx.commands.help_rows()
    return [Show(ctx.commands.help_text(), "help", rows), Show(ctx.keys_help, "help")]


async def _clear(ctx: CommandContext, arg: str) -> Reply:
    old = ctx.session
    new = await old.open_new()
    await old.close()
    kept = f" The previous one is kept: /resume {old.id}" if old.turns else ""  # without a turn it was no file
    return [Replace(new), Show(f"New conversation (session {new.id}).{kept}")]


async def _compact(ctx: CommandContext, arg: str) -> Reply:
    return [RunEvents(ctx.session.compact(arg or None))]


async def _model(ctx: CommandContext, arg: str) -> Reply:
    if not arg:
        return [Show(f"Model: {ctx.session.settings.model}. Switch with /model NAME (any litellm model string, "
                     "e.g. anthropic/claude-sonnet-4-5).")]
    return [SwitchModel(arg, ctx.session)]


def mode_text(mode: str, modes: Sequence[str]) -> str:
    """The approval mode now, the modes there are, and how to change it."""
    return f"Approval mode: {mode}. Modes: {', '.join(modes)}; /mode NAME sets one, Shift+Tab cycles them."


async def _mode(ctx: CommandContext, arg: str) -> Reply:
    session = ctx.session
    if not arg:
        return [Show(mode_text(session.mode, session.MODES))]
    try:
        session.set_mode(arg)
    except ValueError:
        return [Show(f"Unknown mode '{arg}'. Modes: {', '.join(session.MODES)}.", "error")]
    return [Show(f"Approval mode: {session.mode}.")]


async def _todos(ctx: CommandContext, arg: str) -> Reply:
    return [ShowTodos(ctx.session.todos)]


def todo_text(item: TodoItem) -> str:
    """One item of the todo list: its mark, and what is being done for the item in progress."""
    text = item.active_form if item.status == "in_progress" and item.active_form else item.content
    return f"{TODO_MARKS.get(item.status, '?')} {text}"


async def _cost(ctx: CommandContext, arg: str) -> Reply:
    return [Show(cost_text(ctx.session.usage(), ctx.session.id, ctx.session.settings.model))]


def cost_text(usage: Usage, session_id: str, model: str) -> str:
    """The session's tokens by kind (cache reads and writes, reasoning) and its cost, or why it is unknown."""
    cached = ""
    if usage.cache_read_tokens or usage.cache_write_tokens:
        share = usage.cache_read_tokens / usage.prompt_tokens if usage.prompt_tokens else 0.0
        cached = (f" ({usage.cache_read_tokens:,} read from the prompt cache, {share:.0%} of the input; "
                  f"{usage.cache_write_tokens:,} written to it)")
    reasoning = f" ({usage.reasoning_tokens:,} of them reasoning)" if usage.reasoning_tokens else ""
    if usage.cost is None:
        cost = f"cost unknown (litellm has no price for {model})"
    else:
        cost = f"${usage.cost:.4f}" + (f", leaving out {usage.unpriced_calls} calls of unknown price"
                                       if usage.unpriced_calls else "")
    return (f"Session {session_id}: {usage.prompt_tokens:,} input tokens{cached} and {usage.completion_tokens:,} "
            f"output tokens{reasoning}, {cost}. Context: {usage.context_used:,} tokens in use"
            f"{' (estimated)' if usage.context_estimated else ''}.")


async def _think(ctx: CommandContext, arg: str) -> Reply:
    session = ctx.session
    level = arg.lower()
    if level:
        try:
            session.set_reasoning(level)
        except ValueError:
            return [Show(f"Unknown reasoning level '{arg}'. Levels: {', '.join(REASONING_WORDS)}.", "error")]
    reasoning = session.reasoning
    budget = f", thinking budget {reasoning.budget:,} tokens" if reasoning.budget and reasoning.on else ""
    text = f"Reasoning: {reasoning.level}{budget}" + (" from the next model call." if level else
                                                     f". /think {'|'.join(REASONING_WORDS)} sets it.")
    if reasoning.on and await asyncio.to_thread(session.model_reasons) is False:
        text += (f" {session.settings.model} does not reason (litellm's model information says so): the setting "
                 "applies once you switch to a model that does.")
    return [Show(text)]


async def _mcp(ctx: CommandContext, arg: str) -> Reply:
    servers = ctx.session.mcp_status()
    if not servers:
        return [Show("No MCP servers configured. Add them under [mcp_servers.NAME] in .anvil/config.toml, or set "
                     "import_mcp_json = true to use the project's .mcp.json.")]
    reply: Reply = []
    for server in servers:
        tools = ", ".join(server.tools) if server.tools else "no tools"
        error = f" — {server.error}" if server.error else ""
        prompts = f" Prompts: {', '.join('/' + p for p in server.prompts)}." if server.prompts else ""
        skipped = (f" Left out, as they only run as tasks (anvil does not run tasks): {', '.join(server.skipped)}."
                   if server.skipped else "")
        reply.append(Show(f"{server.name} ({server.transport}): {server.state}{error}. Tools: {tools}.{prompts}"
                          f"{skipped}"))
    return reply


async def _sessions(ctx: CommandContext, arg: str) -> Reply:
    sessions = await ctx.session.sessions()
    if not sessions:
        return [Show("No sessions yet.")]
    rows = []
    for s in sessions[:20]:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created))
        mark = "*" if s.id == ctx.session.id else " "
        rows.append(f"{mark} {s.id:<24} {started}  {s.turns:>3} turns  {' '.join(s.first_prompt.split())[:60]}")
    return [Show("\n".join(rows) + "\n/resume ID opens one.", "help")]


async def _resume(ctx: CommandContext, arg: str) -> Reply:
    from anvil.core.session.store import SessionError

    old = ctx.session
    session_id = arg
    if not session_id:
        others = [s for s in await old.sessions() if s.id != old.id]
        if not others:
            return [Show("No earlier session to resume.")]
        session_id = others[0].id
    try:
        new = await old.open_resumed(session_id)
    except SessionError as exc:
        return [Show(str(exc), "error")]
    await old.close()
    return [Replace(new)]


def resumed_text(session: SessionFacade) -> str | None:
    """The line that says a resumed session is back; None for a new session."""
    messages = session.resumed_messages
    if messages is None:
        return None
    return f"Resumed session {session.id}: {len(messages)} messages, {session.turns} turns."


async def _undo(ctx: CommandContext, arg: str) -> Reply:
    session = ctx.session
    if not session.can_undo:
        return [Show("Undo is not available: this session keeps no checkpoints.")]
    target = await session.undo_target()
    if target is None:
        return [Show((await session.undo()).summary())]  # says there is nothing to undo, and why
    prompt = " ".join(target.prompt.split())
    prompt = f" ({prompt[:59] + '…' if len(prompt) > 60 else prompt!r})" if prompt else ""
    files = ", ".join(f"{f.display} ({f.kind})" for f in target.files[:5])
    more = f" and {len(target.files) - 5} more" if len(target.files) > 5 else ""
    # The newest turn that changed files may be turns back: say so, so nothing older is undone unawares.
    back = session.turns - target.turn
    earlier = (f"The last turn ({session.turns}) changed no files. " if back else "") + (
        f"Undo turn {target.turn}{prompt}, {back} turn{'s' if back > 1 else ''} back" if back else
        f"Undo turn {target.turn}{prompt}")
    return [Confirm(f"{earlier}, restoring {files}{more}?",
                    lambda: _undo_files(lambda force: session.undo(force=force)))]


async def _undo_files(run: Callable[[bool], Awaitable[UndoReport]],
                      then: Callable[[], Awaitable[Reply]] | None = None) -> Reply:
    """Undo or rewind the code, then ``then``; when files changed outside anvil would be overwritten, ask first
    (and nothing more happens on no)."""
    async def report(force: bool) -> Reply:
        done = await run(force)
        if done.conflicts and not done.applied:
            return [Show(done.summary()),
                    Confirm("Overwrite those outside changes with anvil's originals?", lambda: report(True))]
        return [Show(done.summary()), *(await then() if then is not None else [])]

    return await report(False)


REWIND_HINT = "/rewind N goes back to before turn N (code and conversation); add 'code' or 'chat' for only one."


async def _rewind(ctx: CommandContext, arg: str) -> Reply:
    session = ctx.session
    if not session.can_undo:
        return [Show("Rewind is not available: this session keeps no checkpoints.")]
    choices = await session.rewind_choices()
    words = arg.split()
    if not words:
        listing = "\n".join(f"  {c.summary()}" for c in choices) or "  No turns to rewind yet."
        return [Show(f"{listing}\n{REWIND_HINT}")]
    what = words[1].lower() if len(words) > 1 else "both"
    choice = _choice(choices, words[0])
    if choice is None or what not in {"code", "chat", "conversation", "both"}:
        return [Show("Usage: /rewind N [code|chat|both], N a turn that /rewind lists.")]
    turn = choice.turn

    async def chat() -> Reply:
        return await _rewind_chat(session, turn)

    if what in {"chat", "conversation"}:
        return await chat()
    return await _undo_files(lambda force: session.rewind_code(turn, force=force), chat if what == "both" else None)


def _choice(choices: list[RewindChoice], word: str) -> RewindChoice | None:
    return next((c for c in choices if word.isdigit() and c.turn == int(word)), None)


async def _rewind_chat(session: SessionFacade, turn: int) -> Reply:
    if not session.rewind_conversation(turn):
        return [Show(f"The conversation of turn {turn} was compacted away; it cannot be rewound.")]
    return [Render((await session.measure(),)),
            Show(f"The conversation is back to before turn {turn} ({len(session.messages)} messages kept).")]


async def _export(ctx: CommandContext, arg: str) -> Reply:
    session = ctx.session
    path = session.root / (arg or f"anvil-session-{session.id}.md")
    text = export_markdown(session.messages, session_id=session.id, model=session.settings.model)
    await asyncio.to_thread(path.write_text, text, encoding="utf-8")
    return [Show(f"Exported the conversation to {path}")]


async def _workflow(ctx: CommandContext, arg: str) -> Reply:
    from anvil.frontend.jobs import workflow_command

    return await workflow_command(ctx.session, arg)


async def _task(ctx: CommandContext, arg: str) -> Reply:
    from anvil.frontend.tasks import task_command

    return await task_command(ctx.session, arg)


async def _exit(ctx: CommandContext, arg: str) -> Reply:
    return [Exit()]


async def _continue(ctx: CommandContext, arg: str) -> Reply:
    from anvil.frontend.prompt import continuation, prompt_turn

    prompt = continuation(ctx.session)
    if prompt is None:
        return [Show("Nothing to continue: /continue goes on with a reply a dropped connection cut short.")]
    return [RunEvents(prompt_turn(ctx.session, prompt))]


COMMANDS = CommandSet([
    Command("help", "/help", "commands and keys", _help, needs_session=False),
    Command("clear", "/clear", "start a new conversation (the old session is kept)", _clear, idle_only=True),
    Command("compact", "/compact [focus]", "summarise the conversation to free context", _compact, idle_only=True),
    Command("continue", "/continue", "go on with a reply a dropped connection cut short", _continue, idle_only=True),
    Command("model", "/model [name]", "show or switch the model", _model, idle_only=True),
    Command("mode", "/mode [name]", "show or set the approval mode (Shift+Tab cycles)", _mode),
    Command("todos", "/todos", "the model's todo list", _todos),
    Command("cost", "/cost", "tokens (cache reads and writes, reasoning) and cost of this session", _cost),
    Command("think", "/think [level]", "show or set the reasoning effort: off, low, medium, high", _think),
    Command("sessions", "/sessions", "this project's sessions, newest first", _sessions),
    Command("resume", "/resume [id]", "continue an earlier session (the newest other one without an id)", _resume,
            idle_only=True),
    Command("mcp", "/mcp", "MCP servers, their state and tools", _mcp),
    Command("undo", "/undo", "restore the files of the last turn that changed files (names it, asks first)", _undo,
            idle_only=True),
    Command("rewind", "/rewind [turn] [code|chat|both]", "list turns, or go back to before one (code, conversation)",
            _rewind, idle_only=True),
    Command("export", "/export [file]", "write the conversation as Markdown into the project", _export),
    Command("workflow", "/workflow [phased INSTRUCTIONS|stop]", "this session's job; start a phased job; stop it",
            _workflow, idle_only=True),
    Command("task", "/task FILE", "run a task file (title, PRD, verify commands) in this session", _task,
            idle_only=True),
    Command("exit", "/exit", "quit anvil", _exit, needs_session=False),
])
