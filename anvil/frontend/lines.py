"""What an event, an approval answer or a scope choice says, in one line, for every front end.

Front ends style these (a colour per ``kind``, a glyph in the plain REPL, ``anvil:`` on headless stderr);
the words are written here once, so the TUI, ``--plain`` and ``-p`` say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from anvil.core.events import (
    ApprovalAnswered,
    ApprovalDecision,
    ApprovalRequested,
    CompactionFinished,
    CompactionStarted,
    ErrorEvent,
    Event,
    IntentPreview,
    Notice,
    Retrying,
    TodoItem,
    ToolProgress,
    TurnEnded,
)
from anvil.core.job_events import (
    GitOperation,
    JobFinished,
    JobStateChanged,
    PhaseEnded,
    PhaseStarted,
    TransitionRejected,
)
from anvil.frontend.prompt import CONTINUE_KEYS

#: how a line is shown: the TUI's entry colours, the plain REPL's glyphs ("phase": a workflow job's phases)
LineKind = Literal["error", "retry", "compaction", "notice", "interrupted", "phase"]
TODO_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑", "cancelled": "☒"}
_COMPACTED_HOW = {1: " (old tool results shortened)", 2: " (older messages summarised)"}


@dataclass(frozen=True)
class Line:
    kind: LineKind
    text: str


def describe(event: Event, *, go_on: str = CONTINUE_KEYS) -> Line | None:
    """The one-line entry for errors, retries, compactions, notices and the end of a turn; None for the rest.
    ``go_on``: how the person has the model go on after a dropped connection, in this front end's terms."""
    match event:
        case ErrorEvent(message=message):
            return Line("error", message)
        case Retrying():
            return Line("retry", retrying_text(event))
        case CompactionStarted(tokens_before=before, reason=reason):
            return Line("compaction", f"Compacting the conversation ({before:,} tokens, {reason})…")
        case CompactionFinished(ok=False, message=message):
            return Line("error", f"Compaction failed: {message or 'no details'}")
        case CompactionFinished(tokens_before=before, tokens_after=after, tier=tier, message=message):
            note = f" {message.rstrip('.')}." if message else ""
            return Line("compaction", f"Compacted: {before:,} → {after:,} tokens{_COMPACTED_HOW.get(tier, '')}.{note}")
        case Notice(message=message):
            return Line("notice", message)
        case PhaseStarted() | PhaseEnded() | TransitionRejected() | JobFinished():
            return job_line(event)
        case JobStateChanged():
            return state_line(event)
        case GitOperation(command=command, ok=ok, output=output):
            return git_line(command, ok, output)
        case TurnEnded(reason="interrupted"):
            return Line("interrupted", "Interrupted. The model keeps what it did so far; type to continue.")
        case TurnEnded(reason="dropped", message=message):
            return Line("error", f"{message} {go_on}")
        case TurnEnded(reason="max_iterations" | "stuck", message=message) if message:
            return Line("error", message)
        case TurnEnded(reason="blocked", message=message):
            return Line("error", f"Blocked: {message}")
        case IntentPreview():
            return Line("notice", "The outline above is the model's plan for this task (an intent preview; not "
                                  "enforced).")
    return None


def job_line(event: PhaseStarted | PhaseEnded | TransitionRejected | JobFinished) -> Line:
    """A workflow job's phases, in one line each: a phase begins (the TUI draws it as a divider), ends, cannot end
    yet; the job ends."""
    match event:
        case PhaseStarted():
            return Line("phase", phase_started_text(event))
        case PhaseEnded(phase=phase, kind=kind, detail=detail):
            return Line("phase", f"Phase {phase} ({kind}) done" + (f": {detail}." if detail else "."))
        case TransitionRejected(phase=phase, reason=reason):
            return Line("notice", f"Phase {phase} cannot end yet: {reason}")
        case JobFinished(status="complete", job_id=job_id, phases=phases, summary=summary, job_dir=job_dir):
            return Line("phase", f"Job {job_id} complete after {_count(phases, 'phase')} ({job_dir}/): "
                                 f"{short(summary, 300)}")
    return Line("error", f"Job {event.job_id} stopped after {_count(event.phases, 'phase')}: {event.summary}")


def _count(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"


def state_line(event: JobStateChanged) -> Line:
    """A workflow job's state changed (the TDD job's states); when it stopped for the person, what they must read."""
    if event.waiting == "halted":
        return Line("error", event.detail or f"Job {event.job_id} is HALTED.")
    if event.waiting == "escalated":
        return Line("notice", f"The model asks for your help (job {event.job_id}, {event.new}). Its report:\n\n"
                              f"{event.detail}\n\nYour next message is its guidance; the job goes on with it.")
    return Line("phase", f"{event.old} → {event.new}" + (f": {short(event.detail, 200)}" if event.detail else ""))


#: git commands that only look: a job runs many, and they say nothing the person needs
_GIT_QUERIES = {"status", "rev-parse", "rev-list", "symbolic-ref", "show-ref", "diff", "ls-files"}


def git_line(command: str, ok: bool, output: str) -> Line | None:
    """A git command a workflow ran: the ones that change something, and any that failed to (None: a query)."""
    words = command.split()
    if len(words) > 1 and words[1] in _GIT_QUERIES:
        return None
    if ok:
        return Line("notice", f"$ {command}")
    first = output.strip().splitlines()[0] if output.strip() else "no output"
    return Line("error", f"$ {command} failed: {short(first, 200)}")


def phase_label(phase: int, kind: str) -> str:
    """``phase 3 · tactical``: the status bar's and the toolbar's words for where a job is."""
    return f"phase {phase} · {kind}"


def phase_started_text(event: PhaseStarted) -> str:
    done = sum(item.status == "completed" for item in event.todos)
    title = f": {event.title}" if event.title else ""
    where = f"Phase {event.phase} · {event.kind}{title}"
    if event.resumed:
        return (f"Job {event.job_id} resumed in {where} ({done}/{len(event.todos)} todos done; files in "
                f"{event.job_dir}/).")
    if event.phase == 1:
        return f"Job {event.job_id} started: {where}, {len(event.todos)} todos (files in {event.job_dir}/)."
    return f"{where}. {event.detail}".rstrip()


def thought_text(reasoning: str, *, done: bool = True) -> str:
    """The label of the model's reasoning, shown collapsed: how long it is, and whether it is still coming."""
    words = len(reasoning.split())
    return f"Thought ({words:,} words)" if done else f"Thinking… ({words:,} words)"


def progress_text(event: ToolProgress, label: str | None = None) -> str:
    """How far a long call has got: ``Counting: 3/10 (30%) · step 3``; ``label`` names the call (its phase)."""
    done = f"{event.progress:g}"
    if event.total:
        done += f"/{event.total:g} ({min(event.progress / event.total, 1):.0%})"
    message = f" · {short(event.message, 60)}" if event.message.strip() else ""
    return f"{label or event.name}: {done}{message}"


def retrying_text(event: Retrying) -> str:
    return (f"{event.message.rstrip('.')}; retrying in {event.delay:.1f}s "
            f"(attempt {event.attempt + 1} of {event.max_attempts})")


def answered_text(event: ApprovalAnswered) -> str | None:
    """A decision taken without the person (a rule, auto mode, the hard-deny list, a hook), so it stays
    visible; None for the person's own answers, which their front end already showed."""
    if event.by in {"user", "interrupt"}:
        return None
    if event.allow:
        return f"allowed by {event.by}"
    return f"refused by {event.by}" + (f": {short(event.message, 100)}" if event.message else "")


#: the scopes of "always allow", in the words the picker, the confirmation and every front end use
SCOPE_WORDS = {"session": "this session only", "project": "this project", "user": "everywhere"}


@dataclass(frozen=True)
class ScopeChoice:
    """One answer of the "always allow" step: its key, the scope, and where the rule is kept."""

    key: str
    scope: str
    file: str | None  # shown as people type it; None: kept in memory (session), or a policy that saves nowhere

    @property
    def label(self) -> str:
        return SCOPE_WORDS[self.scope]

    @property
    def text(self) -> str:
        if self.scope == "session":
            return f"{self.label}: forgotten when anvil exits"
        return self.label + (f": saved in {self.file}" if self.file else "")


def scope_choices(request: ApprovalRequested, root: Path) -> list[ScopeChoice]:
    """The scopes "always allow" offers, with the files the policy saves each one to (from the request)."""
    files = {scope: shown_path(path, root) for scope, path in request.rule_files.items()}
    return [ScopeChoice("s", "session", None), ScopeChoice("p", "project", files.get("project")),
            ScopeChoice("e", "user", files.get("user"))]


def always_patterns(request: ApprovalRequested) -> tuple[str, ...]:
    """Every rule "always allow" would save for this request (one per part of a compound command no rule
    covers), or none when none can be offered (a command no rule can describe)."""
    if request.suggested_patterns:
        return request.suggested_patterns
    if request.suggested_pattern:
        return (request.suggested_pattern,)
    return () if request.command is not None else (request.tool,)


def rules_text(patterns: tuple[str, ...]) -> str:
    """The rules as they are shown before and after saving: `a`, `b` and `c`."""
    quoted = [f"`{p}`" for p in patterns]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


def decision_text(decision: ApprovalDecision, request: ApprovalRequested, root: Path) -> str:
    """The person's answer, said back to them: for "always", every rule and where it is kept."""
    if decision.allow and decision.rules:
        choice = next((c for c in scope_choices(request, root) if c.scope == decision.remember), None)
        where = f" for {choice.label}" if choice and choice.scope != "user" else " everywhere" if choice else ""
        saved = f" (saved in {choice.file})" if choice and choice.file else ""
        return f"always allowed: {rules_text(decision.rules)}{where}{saved}"
    if decision.allow:
        return "allowed once"
    if decision.by == "interrupt":
        return "interrupted"
    return f"denied with your message: {decision.message}" if decision.message else "denied"


def no_always_text(request: ApprovalRequested) -> str:
    """Why the approval offers no "always allow", in one sentence that ends with what the person can do."""
    why = request.no_rule_reason or "no safe rule can be made from this call"
    return f"Always allow is not offered: {why}. Allow it once or deny it."


def cwd_text(request: ApprovalRequested) -> str | None:
    """Where a command would run, as the policy evaluated it: ``in ~/src/app/sub``."""
    return f"in {home_relative(request.cwd)}" if request.cwd else None


def mode_text(mode: str, modes: tuple[str, ...], *, changed: bool = False) -> str:
    """The approval mode, and (when only shown) the modes there are and how to change it."""
    if changed:
        return f"Approval mode: {mode}."
    return f"Approval mode: {mode}. Modes: {', '.join(modes)}; /mode NAME sets one, Shift+Tab cycles them."


def todo_text(item: TodoItem) -> str:
    text = item.active_form if item.status == "in_progress" and item.active_form else item.content
    return f"{TODO_MARKS.get(item.status, '?')} {text}"


def shown_path(path: str | Path, root: Path) -> str:
    """A file as people type it: relative inside the project, else as :func:`home_relative` shows it."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return home_relative(path)


def home_relative(path: str | Path) -> str:
    """``~/src/app`` rather than ``/home/me/src/app``: shorter, and what people type."""
    try:
        return "~/" + Path(path).relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def short(text: str, width: int = 100) -> str:
    """One line of at most ``width`` characters: newlines become ⏎ so a multi-line command stays one entry."""
    flat = " ⏎ ".join(part.strip() for part in text.strip().splitlines() if part.strip())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
