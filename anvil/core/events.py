"""Events: the engine's only output, and the only thing front ends consume.

Every event is a frozen dataclass with a ``type`` tag. ``to_dict()`` gives the JSON form that
``anvil -p --output-format stream-json`` writes one per line and that sessions record.
An approval request is the one event that carries something live: a future the front end
resolves with a :class:`ApprovalDecision`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

#: why a turn ended; "blocked": a task run cannot go on without the person's answer (see job_events.BlockerRaised);
#: "dropped": the connection to the provider dropped in the middle of a reply; the text so far is kept, and the
#: person can have the model go on from there
TurnEndReason = Literal["done", "interrupted", "max_iterations", "error", "stuck", "blocked", "dropped"]


@dataclass(frozen=True)
class Event:
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            if f.metadata.get("transient"):
                continue
            data[f.name] = _plain(getattr(self, f.name))
        return data


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class TurnStarted(Event):
    type: ClassVar[str] = "turn_started"
    turn: int
    prompt: str
    session_id: str


@dataclass(frozen=True)
class TurnEnded(Event):
    type: ClassVar[str] = "turn_ended"
    turn: int
    reason: TurnEndReason
    iterations: int
    message: str = ""


@dataclass(frozen=True)
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True)
class ReasoningDelta(Event):
    """A piece of the model's reasoning (thinking) as it streams: shown apart from the answer, never sent as it."""

    type: ClassVar[str] = "reasoning_delta"
    text: str


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a model reply: the model assembles it, the loop runs it, events carry it."""

    id: str
    name: str
    #: the raw JSON text the model sent, parsed and validated only when the call runs
    arguments: str


@dataclass(frozen=True)
class AssistantMessage(Event):
    type: ClassVar[str] = "assistant_message"
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    #: the reasoning the provider showed for this reply ("" when none)
    reasoning: str = ""
    #: the reply stopped at the output limit and the model was asked to go on: the next reply continues its text
    continues: bool = False


@dataclass(frozen=True)
class ToolCallStarted(Event):
    type: ClassVar[str] = "tool_call_started"
    call_id: str
    name: str
    args: dict[str, Any]
    phase: str
    # One word for what the model is doing: exploring, planning, creating, editing, testing, fixing,
    # verifying; None when the call says nothing about it (an unknown command).
    stage: str | None = None
    # What the tool does (Tool.kind: read, edit, execute, search, fetch, think, ...), for showing calls by kind.
    kind: str = "other"


@dataclass(frozen=True)
class ApprovalDecision:
    """The answer to an approval request.

    ``remember`` is a scope ("session", "project", "user") when the person chose "always allow" (or, with
    ``allow`` false, "always deny"); ``pattern`` is then the rule saved, and ``patterns`` every rule saved when
    there are several (one per part of a compound command).
    """

    allow: bool
    message: str = ""
    remember: str | None = None
    pattern: str | None = None
    by: str = "user"
    patterns: tuple[str, ...] = ()

    @property
    def rules(self) -> tuple[str, ...]:
        """Every rule this answer saves (none unless ``remember``)."""
        if not self.remember:
            return ()
        return self.patterns or ((self.pattern,) if self.pattern else ())


#: The answer to an approval request nobody can give: ``anvil -p``, and a sub-agent's request in such a run.
HEADLESS_DENIAL = ApprovalDecision(False, (
    "Not run: this needs the person's approval, and nobody can answer here (a headless, non-interactive run). "
    "Do without it, or say what you would have run and why; the person can allow it by rerunning with "
    "--auto-approve or with an allow rule ([permissions] allow = [...] in .anvil/config.toml)."), by="headless")


#: The same, for what only the person may approve (a protected file): no flag or broad rule stands in for them.
PERSON_ONLY_DENIAL = ApprovalDecision(False, (
    "Not run: this needs the person's own approval, and nobody can answer here (a headless, non-interactive run); "
    "--auto-approve and broad rules do not cover it. Do without it, or tell the person what you wanted to do and "
    "why: they can do it themselves, or allow exactly this with a rule that names the file."), by="headless")


def headless_denial(reasons: tuple[str, ...] = (), person_only: bool = False) -> ApprovalDecision:
    """:data:`HEADLESS_DENIAL` (:data:`PERSON_ONLY_DENIAL` for what only the person may approve), saying why the
    call needed approval when the policy gave reasons."""
    denial = PERSON_ONLY_DENIAL if person_only else HEADLESS_DENIAL
    if not reasons:
        return denial
    return dataclasses.replace(denial, message=f"{denial.message} Why it needs approval: {'; '.join(reasons)}.")


@dataclass(frozen=True)
class ApprovalRequested(Event):
    type: ClassVar[str] = "approval_requested"
    call_id: str
    tool: str
    args: dict[str, Any]
    title: str
    detail: str = ""
    reasons: tuple[str, ...] = ()
    suggested_pattern: str | None = None
    diff: str | None = None
    #: for a command-running tool (and run_tests): the shell command it would run, as the policy evaluated it
    command: str | None = None
    #: for a command: the directory the policy evaluated it in, where it would run (the shell's, after a cd)
    cwd: str | None = None
    #: where "always allow" saves the rule, by scope ("project", "user"); session rules stay in memory
    rule_files: dict[str, str] = field(default_factory=dict)
    #: why "always allow" is not offered, when the reason is not simply that no rule fits the call
    no_rule_reason: str = ""
    #: only the person may answer, once (a protected path, a command leaving the sandbox): offer no "always"
    person_only: bool = False
    #: every rule "always allow" saves, each shown before it is saved: one per part of a compound command no
    #: rule covers (``suggested_pattern`` is the first)
    suggested_patterns: tuple[str, ...] = ()
    future: asyncio.Future[ApprovalDecision] | None = field(
        default=None, compare=False, repr=False, metadata={"transient": True}
    )

    def answer(self, decision: ApprovalDecision) -> None:
        """Resolve the request; a second answer (e.g. after an interrupt) is ignored."""
        if self.future is not None and not self.future.done():
            self.future.get_loop().call_soon_threadsafe(_set_if_pending, self.future, decision)


def _set_if_pending(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


@dataclass(frozen=True)
class ApprovalAnswered(Event):
    type: ClassVar[str] = "approval_answered"
    call_id: str
    tool: str
    allow: bool
    by: str
    message: str = ""
    rule: str | None = None
    #: every rule saved with this answer ("always allow" on a compound command saves one per part)
    rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolResultEvent(Event):
    type: ClassVar[str] = "tool_result"
    call_id: str
    name: str
    ok: bool
    summary: str
    output: str
    diff: str | None = None
    duration: float = 0.0
    #: what the tool does (its declared kind: read, edit, execute, search, fetch, think, …)
    kind: str = "other"


@dataclass(frozen=True)
class ToolProgress(Event):
    """How far a long tool call has got, as its MCP server reports it."""

    type: ClassVar[str] = "tool_progress"
    call_id: str
    name: str
    progress: float
    total: float | None = None
    message: str = ""


@dataclass(frozen=True)
class TodoItem:
    content: str
    status: Literal["pending", "in_progress", "completed", "cancelled"]
    active_form: str | None = None


@dataclass(frozen=True)
class TodosChanged(Event):
    type: ClassVar[str] = "todos_changed"
    todos: tuple[TodoItem, ...]


@dataclass(frozen=True)
class ContextUsage(Event):
    type: ClassVar[str] = "context_usage"
    used: int
    window: int
    fraction: float
    estimated: bool = False


@dataclass(frozen=True)
class CompactionStarted(Event):
    type: ClassVar[str] = "compaction_started"
    tokens_before: int
    reason: str = "threshold"


@dataclass(frozen=True)
class CompactionFinished(Event):
    type: ClassVar[str] = "compaction_finished"
    tokens_before: int
    tokens_after: int
    tier: int
    ok: bool = True
    message: str = ""


@dataclass(frozen=True)
class UsageReport(Event):
    """Usage of one model call, and the running totals of the session.

    ``prompt_tokens`` counts every input token, those read from and written to the provider's prompt cache
    included; ``completion_tokens`` every output token, reasoning included. A cost is in USD at litellm's
    prices for each kind of token, and None when the price is unknown (``total_cost``: while no call's price
    was known; calls of unknown price are counted in ``unpriced_calls``)."""

    type: ClassVar[str] = "usage"
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    total_prompt_tokens: int
    total_completion_tokens: int
    total_cost: float | None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    total_cache_read_tokens: int = 0
    total_cache_write_tokens: int = 0
    total_reasoning_tokens: int = 0
    unpriced_calls: int = 0


@dataclass(frozen=True)
class Retrying(Event):
    type: ClassVar[str] = "retrying"
    attempt: int
    max_attempts: int
    delay: float
    message: str


@dataclass(frozen=True)
class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    message: str
    retryable: bool = False
    kind: str = "error"


@dataclass(frozen=True)
class Notice(Event):
    """Something the person should know that is not an error (a cut project memory, a skipped line)."""

    type: ClassVar[str] = "notice"
    message: str


@dataclass(frozen=True)
class QuestionAsked(Event):
    """ask_user: the model asks the person; ``answer(text)`` resolves it with their reply."""

    type: ClassVar[str] = "question_asked"
    call_id: str
    question: str
    options: tuple[str, ...] = ()
    future: asyncio.Future[str] | None = field(
        default=None, compare=False, repr=False, metadata={"transient": True}
    )

    def answer(self, text: str) -> None:
        if self.future is not None and not self.future.done():
            self.future.get_loop().call_soon_threadsafe(_set_if_pending, self.future, text)


@dataclass(frozen=True)
class PlanDecision:
    """The person's answer to a proposed plan: approved (possibly edited), or rejected with feedback."""

    approved: bool
    plan: str = ""
    feedback: str = ""


@dataclass(frozen=True)
class PlanProposed(Event):
    """exit_plan_mode: the model proposes a plan; ``answer(PlanDecision)`` resolves it."""

    type: ClassVar[str] = "plan_proposed"
    call_id: str
    plan: str
    future: asyncio.Future[PlanDecision] | None = field(
        default=None, compare=False, repr=False, metadata={"transient": True}
    )

    def answer(self, decision: PlanDecision) -> None:
        if self.future is not None and not self.future.done():
            self.future.get_loop().call_soon_threadsafe(_set_if_pending, self.future, decision)


@dataclass(frozen=True)
class IntentPreview(Event):
    """A complex task's outline (files, module boundaries, order), written by the model before its first change;
    shown to the person as the plan, not enforced."""

    type: ClassVar[str] = "intent_preview"
    outline: str
