"""`anvil -p`: one prompt (or a conversation on stdin), no terminal UI; the answer or the events on stdout.

Output formats:
- ``text``: the final answer only; notices, retries and errors go to stderr.
- ``json``: one result object at the end (:func:`result_object`).
- ``stream-json``: every engine event as one JSON object a line (see the README), then the result object.

The result object carries anvil's field names and Claude Code's (``total_cost_usd``, ``num_turns``,
``subtype``, ``duration_ms``, ``permission_denials`` ...), so tooling written for either reads it.

Input formats: ``text`` (the prompt) or ``stream-json``: one user message a line on stdin, in Claude Code's
shape (``{"type": "user", "message": {"role": "user", "content": ...}}``), each a turn with its own result
line, so another program can hold a conversation.

Nobody can answer an approval here, so a call that needs one is denied and the model is told why,
unless ``--auto-approve`` (or a rule) allowed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from anvil.core.events import (
    ApprovalAnswered,
    ApprovalRequested,
    AssistantMessage,
    ErrorEvent,
    Event,
    Notice,
    PlanProposed,
    Retrying,
    TextDelta,
    ToolCallStarted,
    TurnEnded,
    headless_denial,
)
from anvil.core.masking import SecretMasker
from anvil.core.model.errors import ModelError
from anvil.facade import SessionFacade
from anvil.frontend.lines import describe
from anvil.frontend.prompt import CONTINUE_HEADLESS, prepare_prompt, prompt_turn
from anvil.runtime import Runtime

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: the connection to the provider dropped mid-reply: the text so far is in the session, `anvil -c` goes on
#: (sysexits' EX_TEMPFAIL: a passing failure, worth trying again)
EXIT_DROPPED = 75
EXIT_CODES = {"done": EXIT_OK, "interrupted": EXIT_INTERRUPTED, "dropped": EXIT_DROPPED}
#: the events told on stderr, per output format (stream-json has them all on stdout already)
STDERR_EVENTS: dict[str, tuple[type[Event], ...]] = {
    "text": (ErrorEvent, Notice, Retrying), "json": (ErrorEvent, Retrying), "stream-json": (ErrorEvent,)}
PLAN_ONLY = ("plan mode: this is the plan; nothing was changed. Rerun with --auto-approve to carry it out, or "
             "without --mode plan.")
#: how a turn ended, in Claude Code's words (its ``subtype``)
SUBTYPES = {"done": "success", "max_iterations": "error_max_turns"}


@dataclass
class _Run:
    """What a turn left for the output: the last answer, a proposed plan, how it ended, how long it took, and
    the calls that were refused."""

    answer: str = ""
    continued: bool = False  # the last reply stopped at the output limit: the next one goes on with its text
    streaming: list[str] = field(default_factory=list)  # text of the reply streaming now (kept if it is cut)
    plan: str | None = None  # plan mode: the plan the model proposed is the result
    ended: TurnEnded | None = None
    started: float = field(default_factory=time.monotonic)
    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    denials: list[dict[str, Any]] = field(default_factory=list)


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
        if ended.reason == "dropped":  # the text so far is the answer; how to go on, in -p's terms
            run.answer = run.answer + "".join(run.streaming) if run.continued else "".join(run.streaming)
            line = describe(ended, go_on=CONTINUE_HEADLESS)
            if line is not None:
                self.complain(line.text)
        if run.plan is not None and ended.reason == "done":
            self.complain(PLAN_ONLY)
        text = run.plan if run.plan is not None else run.answer
        if self.format == "text" and text:
            self.out.write(self.mask(text.rstrip("\n")) + "\n")
        elif self.format in {"json", "stream-json"}:
            self._json(result_object(session, run))
        self.out.flush()
        return EXIT_CODES.get(ended.reason, EXIT_ERROR)

    def _json(self, data: dict[str, Any]) -> None:
        self.out.write(self.masker.mask_json(json.dumps(data, ensure_ascii=False)) + "\n")


async def run_headless(runtime: Runtime, prompt: str | None, output_format: str = "text",
                       out: TextIO | None = None, err: TextIO | None = None, *, input_format: str = "text",
                       stdin: TextIO | None = None) -> int:
    """One turn for ``prompt``; with ``input_format="stream-json"``, a turn for every user message on ``stdin``
    (after ``prompt``, when there is one)."""
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
    if input_format == "stream-json":
        try:
            with _interrupt_on_sigint(session):
                return await _conversation(session, prompt, output, stdin or sys.stdin)
        finally:
            await session.close()
    try:
        with _interrupt_on_sigint(session):
            run = await _turn(session, prompt or "", output)
    finally:
        await session.close()
    return output.finish(run, session)


async def _conversation(session: SessionFacade, prompt: str | None, output: _Output, stdin: TextIO) -> int:
    """A turn for each user message on stdin, each ending with its result line; the last turn's exit code (1
    when a line was not a user message), 130 at once when interrupted."""
    lines = _lines(stdin)
    code, rejected, turns = EXIT_OK, False, 0
    number = 0
    pending = [prompt] if prompt and prompt.strip() else []
    while True:
        if pending:
            text = pending.pop()
        else:
            line = await lines.get()
            if line is None:
                break
            number += 1
            text, problem = user_message(line)
            if problem is not None:
                rejected = True
                output.event(ErrorEvent(f"stdin line {number}: {problem}", kind="input"))
                continue
        turns += 1
        code = output.finish(await _turn(session, text, output), session)
        if code == EXIT_INTERRUPTED:
            return code
    if turns == 0:
        output.complain("stdin held no user message. Send one JSON object a line: "
                        '{"type": "user", "message": {"role": "user", "content": "..."}}')
        return EXIT_USAGE
    return EXIT_ERROR if rejected and code == EXIT_OK else code


def _lines(stdin: TextIO) -> asyncio.Queue[str | None]:
    """stdin's lines as they come (read in a thread: a pipe may stay open between messages); None at its end."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def read() -> None:
        try:
            for line in stdin:
                if line.strip():
                    loop.call_soon_threadsafe(queue.put_nowait, line)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=read, name="anvil-stdin", daemon=True).start()
    return queue


def user_message(line: str) -> tuple[str | None, str | None]:
    """The text of one stream-json input line, or what is wrong with it. Claude Code's shape:
    ``{"type": "user", "message": {"role": "user", "content": "text" or [{"type": "text", "text": ...}]}}``."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(data, dict) or data.get("type") != "user":
        kind = data.get("type") if isinstance(data, dict) else type(data).__name__
        return None, f"expected a user message ({{\"type\": \"user\", ...}}), got {kind!r}; it was skipped"
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return (content, None) if content.strip() else (None, "the message is empty; it was skipped")
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if len(texts) == len(content) and any(t.strip() for t in texts):
            return "\n\n".join(t for t in texts if t.strip()), None
        return None, "only text content is taken (no images or tool results); the message was skipped"
    return None, 'the message has no content: {"message": {"role": "user", "content": "..."}}'


async def _turn(session: SessionFacade, prompt: str, output: _Output) -> _Run:
    run = _Run()
    async for event in prompt_turn(session, prepare_prompt(prompt, session.root)):  # @file, @server:uri
        if isinstance(event, ApprovalRequested):  # nobody to ask: denied, and the model is told how to get it
            event.answer(headless_denial(event.reasons))
        output.event(event)
        match event:
            case PlanProposed(future=None, plan=plan):
                run.plan = plan
            case TextDelta(text=text):
                run.streaming.append(text)
            case AssistantMessage(text=text, continues=continues):
                run.answer = run.answer + text if run.continued else text
                run.continued = continues
                run.streaming.clear()
            case ToolCallStarted(call_id=call_id, name=name, args=args):
                run.calls[call_id] = (name, args)
            case ApprovalAnswered(allow=False, by=by) if by != "interrupt":
                name, args = run.calls.get(event.call_id, (event.tool, {}))
                run.denials.append({"tool_name": name, "tool_use_id": event.call_id, "tool_input": args, "by": by})
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


def result_object(session: SessionFacade, run: _Run) -> dict[str, Any]:
    """How a turn ended, in anvil's field names and Claude Code's: ``turns``/``num_turns``, ``cost``/
    ``total_cost_usd``, ``stop_reason``/``subtype``, usage in both token names. Tokens and cost are the session's."""
    ended = run.ended
    assert ended is not None, "a turn always ends with turn_ended"
    usage = session.usage()
    cost = None if usage.cost is None else round(usage.cost, 6)  # null when the price is unknown, never 0
    result: dict[str, Any] = {
        "type": "result",
        "subtype": SUBTYPES.get(ended.reason, "error_during_execution"),
        "result": run.plan if run.plan is not None else run.answer,
        "session_id": session.id,
        "is_error": ended.reason != "done",
        "stop_reason": ended.reason,
        "turns": ended.iterations,
        "num_turns": ended.iterations,
        "duration_ms": round((time.monotonic() - run.started) * 1000),
        "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                  "cache_read_tokens": usage.cache_read_tokens, "cache_write_tokens": usage.cache_write_tokens,
                  "reasoning_tokens": usage.reasoning_tokens,
                  "input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens,
                  "cache_read_input_tokens": usage.cache_read_tokens,
                  "cache_creation_input_tokens": usage.cache_write_tokens},
        "cost": cost,
        "total_cost_usd": cost,
        "permission_denials": run.denials,
    }
    if run.plan is not None:
        result.update(plan=run.plan, stop_reason="plan")
    return result


__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "ModelError", "run_headless"]
