"""Escalation in task runs: when to stop trying and hand the problem to the person as a blocker.

A task run works alone; going round in circles costs money and teaches nothing. On top of the loop guards
(``guard.py``, which stop a turn in any run), a task run stops when, within one turn:

- the same error came back 3 times (its signature: tool and output with numbers and spacing normalised), in a
  row or not;
- the same file failed 3 edit attempts (calls of kind "edit" that wrote it and failed);
- more than 5 tool calls failed.

And when the model, stopping, says it cannot go on without the person: contradictory requirements, missing
credentials or access, a service it cannot reach (:func:`stated_blocker`). The prompt of a task run tells it to
call ask_user for that instead; this catches the models that only say so.

Where somebody can answer (``/task`` in the app) a threshold stops the turn as a loop guard does; where nobody
can (``anvil -p --task``) the turn ends ``blocked`` and the task waits for ``anvil answer``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anvil.core.events import ToolCall
from anvil.core.job_events import BlockerRaised
from anvil.core.loop.guard import LoopGuard, describe_call, error_signature, first_line
from anvil.core.loop.history import History
from anvil.core.loop.interrupt import Interrupter
from anvil.core.loop.turn import TurnState
from anvil.core.model.protocol import Completion
from anvil.core.tools.base import ToolContext

if TYPE_CHECKING:
    from anvil.core.loop.tool_call import CallOutcome

SAME_ERROR = 3
SAME_FILE_EDITS = 3
TURN_FAILURES = 5  # more than this many failed calls in one turn
TRIED_KEPT = 12  # the calls a blocker lists, the latest
_ASK = "How should I proceed? Answer with what is missing, or say what to change."

# A statement that the work cannot go on: a "cannot go on" phrase, or a named reason that needs the person.
_CANNOT = re.compile(r"\b(cannot|can't|can ?not|unable to|am not able to|could not|couldn't|won't be able to)\s+"
                     r"(proceed|continue|go on|complete|finish|implement|satisfy)\b", re.IGNORECASE)
_REASONS = re.compile(
    r"\b(contradict\w*|conflicting requirements?|requirements? (that )?conflict|mutually exclusive"
    r"|(missing|need|needs|require[sd]?|without)\s+(\S+\s+){0,3}?(credentials?|api keys?|access tokens?"
    r"|passwords?|secrets?|permissions?)\b|(unreachable|cannot reach|can't reach|could not reach|couldn't connect))",
    re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?\n]*[.!?]?")


def stated_blocker(text: str) -> str | None:
    """The model's own words when its final reply says it cannot go on without the person, else None.

    Both a "cannot go on" phrase and a reason only the person can remove must be there: "I could not
    reproduce it at first, then fixed it" is not a blocker, nor is "the tests contradicted the docs, so I
    fixed the docs"."""
    if not (_CANNOT.search(text) and _REASONS.search(text)):
        return None
    sentences = [s.strip() for s in _SENTENCE.findall(text) if s.strip()]
    said = [s for s in sentences if _CANNOT.search(s) or _REASONS.search(s) or s.endswith("?")]
    return " ".join(said)[:1000] or text.strip()[:1000]


def tried_line(name: str, args: dict[str, Any], ok: bool, summary: str, output: str) -> str:
    """One call of the turn for a blocker's "what was tried": ``edit_file (path 'app.py'): failed (No match…)``."""
    what = describe_call(name, args)
    if ok:
        return f"{what}: ok"
    why = summary.strip() if summary.strip() and summary not in {"error", "ok"} else first_line(output, 160)
    return f"{what}: failed ({why})"


@dataclass
class Escalation:
    """The thresholds of a task run, counted within one turn; ``blocking``: nobody can answer in this run."""

    blocking: bool = True
    same_error: int = SAME_ERROR
    same_file_edits: int = SAME_FILE_EDITS
    turn_failures: int = TURN_FAILURES
    _errors: dict[str, int] = field(default_factory=dict)
    _files: dict[str, int] = field(default_factory=dict)
    _failures: int = 0

    def reset(self) -> None:
        self._errors.clear()
        self._files.clear()
        self._failures = 0

    def observe(self, name: str, args: dict[str, Any], ok: bool, output: str, *, edits: bool = False,
                paths: list[str] | None = None) -> str | None:
        """Count one tool result; why the run should stop and ask, once a threshold is reached, else None.

        ``edits``: the tool is of kind "edit"; ``paths``: the files the call writes, as the model gave them."""
        if ok:
            return None
        self._failures += 1
        signature = error_signature(name, output)
        self._errors[signature] = self._errors.get(signature, 0) + 1
        what, last = describe_call(name, args), first_line(output)
        if self._errors[signature] >= self.same_error:
            return (f"The same error came back {self._errors[signature]} times this turn, last from {what}: {last} "
                    f"{_ASK}")
        for path in (paths or []) if edits else []:
            self._files[path] = self._files.get(path, 0) + 1
            if self._files[path] >= self.same_file_edits:
                return f"Editing {path} failed {self._files[path]} times this turn. Last error: {last} {_ASK}"
        if self._failures > self.turn_failures:
            return f"{self._failures} tool calls failed this turn, the last {what}: {last} {_ASK}"
        return None


class Blocking:
    """The agent's bookkeeping after each call (files written, what was tried, loop guards and escalation) and
    the blocked end of a turn. A mixin of :class:`~anvil.core.loop.agent.Agent`, which owns the state below."""

    ctx: ToolContext
    history: History
    guard: LoopGuard
    escalation: Escalation | None
    _interrupt: Interrupter

    def _observe_call(self, turn: TurnState, call: ToolCall, outcome: CallOutcome, changed: bool) -> None:
        """After a call's result: the files it wrote, a line for "what was tried", a question that blocks, and
        the loop guards (with a task run's thresholds), which may stop the turn (``turn.stuck``)."""
        result, prepared = outcome.result, outcome.prepared
        targets = outcome.tool.write_targets(prepared.args) if outcome.tool and prepared.args is not None else []
        if changed:
            turn.written.update(p for p in (_resolved(self.ctx, raw) for raw in targets) if p is not None)
        turn.tried.append(tried_line(call.name, prepared.raw_args, result.ok, result.summary, result.output))
        if result.blocked and turn.blocker is None:
            turn.blocker = self._blocker(turn, result.blocked, "ask_user",
                                         turn.completion.text if turn.completion else "")
        if self._interrupt.is_set():
            return
        polls = outcome.tool is not None and outcome.tool.polls
        turn.stuck = self.guard.observe(call.name, prepared.raw_args, result.ok, result.output, result.summary,
                                        polls=polls)
        if self.escalation is not None and not turn.stuck:
            edits = outcome.tool is not None and outcome.tool.kind == "edit"
            turn.stuck = self.escalation.observe(call.name, prepared.raw_args, result.ok, result.output,
                                                 edits=edits, paths=targets)

    def _stuck_blocks(self, turn: TurnState) -> None:
        """Where nobody can answer, a stopped turn is a blocker: the question waits for the person."""
        if turn.stuck and turn.blocker is None and self.escalation is not None and self.escalation.blocking:
            turn.blocker = self._blocker(turn, turn.stuck, "escalation", turn.tried[-1] if turn.tried else "")

    def _stated_blocker(self, turn: TurnState, completion: Completion) -> bool:
        """The model's final reply says it cannot go on without the person, in a run where nobody can answer."""
        said = stated_blocker(completion.text) if self.escalation and self.escalation.blocking else None
        if said is not None:
            turn.blocker = self._blocker(turn, said, "stated", completion.text)
        return said is not None

    def _blocker(self, turn: TurnState, question: str, source: str, context: str) -> BlockerRaised:
        return BlockerRaised(question.strip(), source, context.strip()[:2000], tuple(turn.tried[-TRIED_KEPT:]))

    def _block(self, turn: TurnState) -> BlockerRaised:
        """End the turn ``blocked`` on ``turn.blocker``: recorded, so the session says why it stopped."""
        assert turn.blocker is not None
        turn.end("blocked", turn.blocker.question)
        return self.history.record(turn.blocker)


def _resolved(ctx: ToolContext, raw: str) -> Path | None:
    """A path a call wrote, as the model gave it, made absolute; None when anvil may not touch it."""
    try:
        return ctx.resolve(raw)
    except Exception:  # a refused path: the call did not write it
        return None
