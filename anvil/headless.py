"""`anvil -p`: one prompt, no terminal UI; the answer or the events on stdout.

Output formats:
- ``text``: the final answer only; notices, retries and errors go to stderr.
- ``json``: one object at the end: result, session_id, turns, usage (tokens, cache reads and writes, reasoning),
  cost (null when the price is unknown), stop_reason, is_error.
- ``stream-json``: every engine event as one JSON object a line (see the README).

Nobody can answer an approval here, so a call that needs one is denied and the model is told why,
unless ``--auto-approve`` (or a rule) allowed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from anvil.core.events import (
    ApprovalRequested,
    AssistantMessage,
    ErrorEvent,
    Event,
    Notice,
    PlanProposed,
    Retrying,
    TurnEnded,
    headless_denial,
)
from anvil.core.masking import SecretMasker
from anvil.core.model.errors import ModelError
from anvil.facade import SessionFacade
from anvil.frontend.lines import describe
from anvil.runtime import Runtime

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_CODES = {"done": EXIT_OK, "interrupted": EXIT_INTERRUPTED}
#: the events told on stderr, per output format (stream-json has them all on stdout already)
STDERR_EVENTS: dict[str, tuple[type[Event], ...]] = {
    "text": (ErrorEvent, Notice, Retrying), "json": (ErrorEvent, Retrying), "stream-json": (ErrorEvent,)}
PLAN_ONLY = ("plan mode: this is the plan; nothing was changed. Rerun with --auto-approve to carry it out, or "
             "without --mode plan.")


@dataclass
class _Run:
    """What a turn left for the output: the last answer, a proposed plan, how it ended."""

    answer: str = ""
    continued: bool = False  # the last reply stopped at the output limit: the next one goes on with its text
    plan: str | None = None  # plan mode: the plan the model proposed is the result
    ended: TurnEnded | None = None


class _Output:
    """stdout gets the answer, one result or every event; stderr gets what the person should know. Known secret
    values are masked in all of it: this output usually ends up in a CI log."""

    def __init__(self, output_format: str, out: TextIO, err: TextIO, masker: SecretMasker | None = None) -> None:
        self.format, self.out, self.err = output_format, out, err
        self.masker = masker or SecretMasker()
        self.mask = self.masker.mask

    def started(self, session: SessionFacade) -> None:
        """stream-json's first event: what the session is (its id, the model, the mode, the sandbox)."""
        if self.format == "stream-json":
            self._json({"type": "session_started", "session_id": session.id, "model": session.settings.model,
                        "mode": session.mode, "cwd": str(session.root), "sandbox": session.sandbox.to_dict()})

    def notice(self, message: str) -> None:
        if self.format == "stream-json":
            self._json(Notice(message).to_dict())
        self.complain(message)

    def complain(self, message: str) -> None:
        print(self.mask(f"anvil: {message}"), file=self.err)

    def event(self, event: Event) -> None:
        if self.format == "stream-json":
            self._json(event.to_dict())
            self.out.flush()
        line = describe(event) if isinstance(event, STDERR_EVENTS[self.format]) else None
        if line is not None:
            self.complain(line.text)

    def finish(self, run: _Run, session: SessionFacade) -> int:
        ended = run.ended
        assert ended is not None, "a turn always ends with turn_ended"
        if ended.reason in {"max_iterations", "stuck"}:
            self.complain(ended.message)
        if run.plan is not None and ended.reason == "done":
            self.complain(PLAN_ONLY)
        text = run.plan if run.plan is not None else run.answer
        if self.format == "text" and text:
            self.out.write(self.mask(text.rstrip("\n")) + "\n")
        elif self.format == "json":
            self._json(_result(session, text, ended, run.plan))
        self.out.flush()
        return EXIT_CODES.get(ended.reason, EXIT_ERROR)

    def _json(self, data: dict[str, Any]) -> None:
        self.out.write(self.masker.mask_json(json.dumps(data, ensure_ascii=False)) + "\n")


async def run_headless(runtime: Runtime, prompt: str, output_format: str = "text",
                       out: TextIO | None = None, err: TextIO | None = None) -> int:
    session = SessionFacade(runtime)
    output = _Output(output_format, out or sys.stdout, err or sys.stderr, runtime.secrets)
    output.started(session)
    session.on_notice(output.notice)
    for warning in session.warnings:
        output.notice(warning)
    for notice in await session.start(wait_for_mcp=30.0):  # MCP tools must be there before the first turn
        output.notice(notice)
    problem = await session.preflight()
    if problem:
        output.complain(problem)
        await session.close()
        return EXIT_ERROR
    try:
        with _interrupt_on_sigint(session):
            run = await _turn(session, prompt, output)
    finally:
        await session.close()
    return output.finish(run, session)


async def _turn(session: SessionFacade, prompt: str, output: _Output) -> _Run:
    run = _Run()
    async for event in session.submit(prompt):
        if isinstance(event, ApprovalRequested):  # nobody to ask: denied, and the model is told how to get it
            event.answer(headless_denial(event.reasons))
        output.event(event)
        match event:
            case PlanProposed(future=None, plan=plan):
                run.plan = plan
            case AssistantMessage(text=text, continues=continues):
                run.answer = run.answer + text if run.continued else text
                run.continued = continues
            case TurnEnded():
                run.ended = event
    return run


@contextlib.contextmanager
def _interrupt_on_sigint(session: SessionFacade) -> Iterator[None]:
    """Ctrl+C interrupts the turn (exit 130 once it has ended); a second one quits at once."""
    loop = asyncio.get_running_loop()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        session.interrupt()
        if presses > 1:  # the person really wants out
            raise SystemExit(EXIT_INTERRUPTED)

    with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


def _result(session: SessionFacade, text: str, ended: TurnEnded, plan: str | None) -> dict[str, Any]:
    usage = session.usage()
    result: dict[str, Any] = {
        "type": "result",
        "result": text,
        "session_id": session.id,
        "turns": ended.iterations,
        "stop_reason": ended.reason,
        "is_error": ended.reason not in {"done"},
        "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                  "cache_read_tokens": usage.cache_read_tokens, "cache_write_tokens": usage.cache_write_tokens,
                  "reasoning_tokens": usage.reasoning_tokens},
        "cost": None if usage.cost is None else round(usage.cost, 6),
    }
    if plan is not None:
        result.update(plan=plan, stop_reason="plan")
    return result


__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "ModelError", "run_headless"]
