"""The agent's final verification, apart from the turn's other steps: self-correcting checks when a turn that
changed files ends.

When the model stops after changing files, the ``verify`` commands run (``verify.py``). If some fail, the
automatic fixers run first on the files the turn changed (``autofix.py``: ``ruff check --fix``, ``ruff format``)
and the checks run again; only what still fails goes back to the model, for at most ``verify_retries`` more
model calls. :class:`VerificationRecord` keeps the story for the result: how the checks ended, what the fixers
changed (a diff), and what the model had to fix.

A mixin of :class:`~anvil.core.loop.agent.Agent`, which owns the state named below.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from anvil.core.events import Event, Notice
from anvil.core.job_events import AutofixApplied
from anvil.core.loop.autofix import Fixers, FixOutcome, run_fixers
from anvil.core.loop.history import History
from anvil.core.loop.interrupt import Interrupted, Interrupter
from anvil.core.loop.stages import StageTracker
from anvil.core.loop.turn import TurnState
from anvil.core.loop.verify import CheckResult, failure_message, report, run_checks, tail
from anvil.core.tools.base import ToolContext


@dataclass
class VerificationRecord:
    """One turn's verification: the checks as they last ran, each round of automatic fixes that changed
    something, and the failures handed to the model (what it had to fix itself)."""

    checks: list[CheckResult] = field(default_factory=list)
    fixes: list[FixOutcome] = field(default_factory=list)
    handed_to_model: list[str] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        return bool(self.checks)

    @property
    def passed(self) -> bool:
        return self.ran and all(check.ok for check in self.checks)

    def autofix_diff(self) -> str:
        return "".join(fix.diff for fix in self.fixes)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form headless results and task states carry."""
        files = list(dict.fromkeys(f for fix in self.fixes for f in fix.files))
        return {"passed": self.passed,
                "checks": [{"command": c.command, "status": c.status, "ok": c.ok} for c in self.checks],
                "autofix": {"files": files, "commands": list(dict.fromkeys(c for x in self.fixes for c in x.commands)),
                            "diff": self.autofix_diff()},
                "model_fixed": list(self.handed_to_model)}


class Verifying:
    verify: list[str]
    verify_retries: int
    verify_timeout: float
    autofix: Fixers | None
    ctx: ToolContext
    history: History
    stages: StageTracker
    verification: VerificationRecord
    _interrupt: Interrupter

    async def _check_changes(self, turn: TurnState) -> AsyncIterator[Event]:
        """The model stopped: verify what the turn changed; failures the fixers leave go back to the model for a
        bounded number of extra calls."""
        if not (self.verify and turn.changed):
            turn.end()  # nothing to check, or the model stopped without changing anything since
            return
        async for event in self._verify(turn):
            yield self.history.record(event)
        if turn.checks is None:
            turn.end("interrupted")
            return
        failed = [r for r in turn.checks if not r.ok]
        turn.fix_until = turn.iterations + self.verify_retries if turn.fix_until is None else turn.fix_until
        if not failed or turn.iterations >= turn.fix_until:
            turn.end()
            return
        self.stages.last_test_failed = True
        self.verification.handed_to_model += [f"`{r.command}` {r.status}: {_last_line(r.output)}" for r in failed]
        message = failure_message(failed, turn.fix_until - turn.iterations)
        fixed = [f for fix in self.verification.fixes for f in fix.files]
        if fixed:  # the model's view of those files is stale: it must read them before editing
            message += (f"\nanvil's automatic fixers changed {', '.join(dict.fromkeys(fixed))} since you wrote "
                        "them: read them again before editing.")
        self.history.add({"role": "user", "content": message})
        yield self.history.record(Notice(f"Verification failed ({', '.join(f'`{r.command}`' for r in failed)}); "
                                         "the model is fixing it."))

    async def _final_check(self, turn: TurnState) -> AsyncIterator[Event]:
        """When checks ran this turn, say where they ended (checking again if files changed since)."""
        if turn.reason != "done" or turn.fix_until is None:
            return
        edited = turn.changed
        if edited:  # edits after the last check: check again so the report is about the end state
            async for event in self._verify(turn):
                yield self.history.record(event)
        if turn.checks is None:
            turn.reason = "interrupted"
            return
        fixed = [f for fix in self.verification.fixes for f in fix.files]
        turn.message = report(turn.checks, changed=edited, fixed_files=fixed,
                              model_fixed=bool(self.verification.handed_to_model))
        yield self.history.record(Notice(turn.message))

    async def _verify(self, turn: TurnState) -> AsyncIterator[Event]:
        """Run the checks into ``turn.checks`` (None when interrupted), saying so first; when some fail, the
        automatic fixers, then the checks again if the fixers changed anything."""
        yield Notice("Verifying the changes: " + ", ".join(f"`{command}`" for command in self.verify))
        turn.changed = False
        if not await self._run_checks(turn) or turn.checks is None or all(r.ok for r in turn.checks):
            return
        if not self.autofix or not turn.written:
            return
        try:
            fixed = await self._interrupt.until(run_fixers(
                sorted(turn.written), self.ctx.root, self.autofix, sandbox=self.ctx.sandbox,
                checkpoints=self.ctx.checkpoints))
        except Interrupted:
            turn.checks = None
            return
        for problem in fixed.problems:
            yield Notice(f"Automatic fixer: {problem}.")
        if not fixed.changed:
            return
        self.verification.fixes.append(fixed)
        yield AutofixApplied(fixed.commands, fixed.files, fixed.diff)
        yield Notice(f"The automatic fixers changed {', '.join(fixed.files)}; verifying again.")
        await self._run_checks(turn)

    async def _run_checks(self, turn: TurnState) -> bool:
        """The checks, into ``turn.checks`` and the record; False (and ``turn.checks`` None) when interrupted."""
        try:
            turn.checks = await self._interrupt.until(run_checks(self.verify, self.ctx.root, self.verify_timeout,
                                                                 self.ctx.sandbox))
        except Interrupted:
            turn.checks = None
            return False
        self.verification.checks = list(turn.checks)
        return True


def _last_line(output: str) -> str:
    lines = [line.strip() for line in tail(output, 20).splitlines() if line.strip()]
    return lines[-1][:160] if lines else "(no output)"
