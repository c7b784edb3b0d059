"""What `anvil --plain` prints: engine events turned into short, styled lines of prompt_toolkit formatted text.

Pure functions of the events (no terminal, no state), so they are tested directly and the REPL stays a
thin loop. Output is meant for the terminal's own scrollback: one line per tool call, never a dump of
tool output, diffs coloured by pygments' DiffLexer, commands in approvals highlighted as bash.
"""

from __future__ import annotations

import json
from typing import Any

from prompt_toolkit.formatted_text import FormattedText, PygmentsTokens, StyleAndTextTuples
from prompt_toolkit.styles import Style

from anvil.core.events import ApprovalRequested, Event, TodoItem, ToolCallStarted, ToolResultEvent
from anvil.core.workflows.base import JobStatus
from anvil.frontend.commands import todo_text
from anvil.frontend.lines import ScopeChoice, cwd_text, describe, phase_label, rules_text, short, thought_text

STYLE = Style.from_dict({
    "tool": "bold ansicyan", "args": "", "ok": "ansigreen", "fail": "ansired bold", "dim": "ansibrightblack",
    "error": "ansired", "notice": "ansiyellow", "title": "bold", "key": "bold ansimagenta", "pattern": "ansicyan",
    "user": "bold", "toolbar": "noreverse bg:ansiblack ansiwhite", "gauge.full": "ansigreen",
    "gauge.warn": "ansiyellow", "gauge.hot": "ansired", "prompt": "bold ansicyan",
})
#: the argument that says what a call does, per tool, in the order tried
MAIN_ARGS = ("command", "path", "pattern", "query", "url", "id", "question", "plan")
PREVIEW_LINES = 2
MAX_DIFF_LINES = 80
#: the style and glyph of each kind of one-line entry (anvil.frontend.lines)
LINE_STYLES = {"error": ("class:error", "✗"), "retry": ("class:notice", "↻"), "compaction": ("class:notice", "⟳"),
               "notice": ("class:notice", "ℹ"), "interrupted": ("class:notice", "⏹"), "phase": ("class:title", "──")}


def args_summary(name: str, args: dict[str, Any], width: int = 90) -> str:
    if isinstance(args.get("todos"), list):  # a todo list: its size; /todos shows the items
        return f"{len(args['todos'])} items"
    for key in MAIN_ARGS:
        if isinstance(args.get(key), (str, int)):
            return short(str(args[key]), width)
    return short(json.dumps(args, ensure_ascii=False), width) if args else ""


def tool_started(event: ToolCallStarted, width: int = 100) -> StyleAndTextTuples:
    """``● name summary`` in one line of the terminal's ``width``: the summary is cut to what is left."""
    summary = args_summary(event.name, event.args, max(10, width - len(event.name) - 4))
    return [("class:tool", f"● {event.name}"), ("class:args", f" {summary}" if summary else "")]


def _seconds(duration: float) -> str:
    return f"{duration:.1f}s" if duration < 60 else f"{int(duration // 60)}m{int(duration % 60):02d}s"


def tool_finished(event: ToolResultEvent, *, same_line: bool, preview: bool = True,
                  width: int = 120) -> StyleAndTextTuples:
    """``✓ 0.1s`` after the call's own line, or a full entry when other output came in between."""
    head: StyleAndTextTuples = [] if same_line else [("class:dim", f"  {event.name}")]
    summary = "" if event.summary in {"ok", ""} else short(event.summary, 100)
    if event.ok:
        out = [*head, ("class:ok", f" ✓ {_seconds(event.duration)}")]
        if summary:
            out.append(("class:dim", f" · {summary}"))
    else:
        out = [*head, ("class:fail", f" ✗ {summary or 'error'}")]
    out.append(("", "\n"))
    # The command tools' own trailers ("(no output)", "[exit 0 · 0.1s]") repeat the summary: leave them out.
    first = [line for line in event.output.strip().splitlines()
             if line.strip() and line.strip() != "(no output)" and not line.startswith("[exit ")]
    # The output is for the model; the person gets a glimpse only when it says something the summary does not.
    worth = not event.ok or event.kind == "execute"
    if preview and worth and first and first[0].strip() != summary:
        for line in first[:PREVIEW_LINES]:
            out.append(("class:dim", f"    {short(line, max(10, width - 5))}\n"))
        if len(first) > PREVIEW_LINES:
            out.append(("class:dim", f"    … {len(first) - PREVIEW_LINES} more lines\n"))
    return out


def thought_line(reasoning: str) -> StyleAndTextTuples:
    """The model's reasoning as one dim line: its length and how it begins (the whole text stays in the session)."""
    return [("class:dim", f"✻ {thought_text(reasoning)}: {short(reasoning, 90)}\n")]


def diff_text(diff: str, max_lines: int = MAX_DIFF_LINES) -> StyleAndTextTuples:
    from pygments.lexers.diff import DiffLexer

    lines = diff.rstrip("\n").splitlines()
    shown = "\n".join(lines[:max_lines]) + "\n"
    out: StyleAndTextTuples = list(PygmentsTokens(list(DiffLexer().get_tokens(shown))).__pt_formatted_text__())
    if len(lines) > max_lines:
        out.append(("class:dim", f"  … {len(lines) - max_lines} more diff lines\n"))
    return out


def bash_text(command: str) -> StyleAndTextTuples:
    from pygments.lexers.shell import BashLexer

    return list(PygmentsTokens(list(BashLexer().get_tokens(command.rstrip("\n") + "\n"))).__pt_formatted_text__())


def approval_text(event: ApprovalRequested) -> StyleAndTextTuples:
    """The request in full: what would run, where, why anvil asks, and the keys that answer it."""
    command = event.command
    # The title of a command call repeats the command; a sub-agent's title says whose call it is, so it stays.
    title = "" if isinstance(command, str) and command.strip() in event.title else event.title
    out: StyleAndTextTuples = [("class:title", f"\n⚠ Approve {event.tool}? "), ("class:dim", title + "\n")]
    if isinstance(command, str):
        out += [("", "  $ "), *bash_text(command)]
        where = cwd_text(event)
        if where:
            out.append(("class:dim", f"  {where}\n"))
    elif event.args:
        out.append(("", "  " + short(json.dumps(event.args, ensure_ascii=False), 200) + "\n"))
    if event.detail:
        out.append(("class:dim", f"  {event.detail}\n"))
    for reason in event.reasons:
        out.append(("class:notice", f"  • {reason}\n"))
    if event.diff:
        out += diff_text(event.diff)
    return out + approval_keys()


def approval_keys() -> StyleAndTextTuples:
    return [("class:key", "  y"), ("", " once  "), ("class:key", "a"), ("", " always  "), ("class:key", "n"),
            ("", " deny  "), ("class:key", "d"), ("", " deny with a message  "), ("class:dim", "(Ctrl+C interrupts) ")]


def scope_text(patterns: tuple[str, ...], choices: list[ScopeChoice]) -> StyleAndTextTuples:
    """The "always allow" step: every rule it saves, and each scope with the file they are saved to."""
    many = len(patterns) > 1
    out: StyleAndTextTuples = [("", "\n  Always allow "), ("class:pattern", rules_text(patterns)),
                               ("", f" from now on? {'These rules are' if many else 'The rule is'} saved for:\n")]
    for choice in choices:
        out += [("class:key", f"    {choice.key}"), ("", f" {choice.text}\n")]
    return [*out, ("class:key", "    Esc"), ("", " back ")]


def line_text(event: Event) -> StyleAndTextTuples | None:
    """The one-line entry for errors, retries, compactions, notices and the end of a turn (None: nothing)."""
    line = describe(event)
    if line is None:
        return None
    style, glyph = LINE_STYLES[line.kind]
    return [(style, f"{glyph} {line.text}\n")]


def todos_text(todos: tuple[TodoItem, ...] | list[TodoItem]) -> StyleAndTextTuples:
    if not todos:
        return [("class:dim", "  (no todos)\n")]
    out: StyleAndTextTuples = []
    for item in todos:
        style = {"completed": "class:dim", "in_progress": "class:title", "cancelled": "class:dim"}.get(item.status, "")
        out.append((style, f"  {todo_text(item)}\n"))
    return out


def tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if 1000 <= n < 100_000 else f"{n // 1000}k" if n >= 100_000 else str(n)


def gauge(fraction: float, width: int = 10) -> StyleAndTextTuples:
    filled = max(0, min(width, round(fraction * width)))
    style = "class:gauge.hot" if fraction >= 0.85 else "class:gauge.warn" if fraction >= 0.6 else "class:gauge.full"
    return [(style, "█" * filled), ("class:dim", "░" * (width - filled))]


def toolbar(*, used: int | None, window: int | None, cost: float | None, model: str, mode: str,
            hint: str = "", sandbox: str = "", job: JobStatus | None = None) -> FormattedText:
    """The bottom toolbar: context gauge, cost ($? when unknown), model, approval mode, whether commands are
    sandboxed, a workflow job's phase ("phase 2 · tactical"), or a passing hint."""
    out: StyleAndTextTuples = [("", " ctx ")]
    if used is not None and window:
        fraction = used / window
        out += [*gauge(fraction), ("", f" {fraction:.0%} {tokens(used)}/{tokens(window)}")]
    else:
        out.append(("class:dim", "–"))
    out += [("", f" · {'$?' if cost is None else f'${cost:.4f}'} · {model} · mode: "), ("class:key", mode)]
    if sandbox:
        out.append(("" if sandbox == "sandboxed" else "class:notice", f" · {sandbox}"))
    if job is not None:
        out.append(("class:title", f" · {phase_label(job.phase, job.kind)}"))
    out.append(("class:dim", f" · {hint}" if hint else " · Shift+Tab mode · /help"))
    return FormattedText(out)
