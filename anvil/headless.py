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
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from anvil.core.events import (
    ApprovalAnswered,
    ApprovalRequested,
    AssistantMessage,
    ErrorEvent,
    Event,
    IntentPreview,
    Notice,
    PlanProposed,
    Retrying,
    TextDelta,
    ToolCallStarted,
    TurnEnded,
    headless_denial,
)
from anvil.core.job_events import (
    GitOperation,
    JobFinished,
    JobStateChanged,
    PhaseEnded,
    PhaseStarted,
    TransitionRejected,
)
from anvil.core.masking import SecretMasker
from anvil.core.model.errors import ModelError
from anvil.core.workflows.base import JobError
from anvil.facade import SessionFacade
from anvil.frontend.jobs import JobLaunch
from anvil.frontend.lines import describe, short
from anvil.frontend.prompt import CONTINUE_HEADLESS, prepare_prompt, prompt_turn
from anvil.frontend.signal_exit import EndOnSignal, interrupt_on_sigint
from anvil.frontend.tasks import TaskLaunch, TaskTurn
from anvil.runtime import Runtime

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_BLOCKED, EXIT_INTERRUPTED = 0, 1, 2, 4, 130
#: a workflow's job stopped for the person (an escalation to answer, a HALTED job to put right): stdout says why
EXIT_NEEDS_PERSON = 3
#: the connection to the provider dropped mid-reply: the text so far is in the session, `anvil -c` goes on
#: (sysexits' EX_TEMPFAIL: a passing failure, worth trying again)
EXIT_DROPPED = 75
EXIT_CODES = {"done": EXIT_OK, "interrupted": EXIT_INTERRUPTED, "blocked": EXIT_BLOCKED, "dropped": EXIT_DROPPED}
#: the events told on stderr, per output format (stream-json has them all on stdout already)
JOB_EVENTS = (PhaseStarted, PhaseEnded, TransitionRejected, JobFinished, JobStateChanged, GitOperation)
STDERR_EVENTS: dict[str, tuple[type[Event], ...]] = {
    "text": (ErrorEvent, Notice, Retrying, IntentPreview, *JOB_EVENTS), "json": (ErrorEvent, Retrying),
    "stream-json": (ErrorEvent,)}
PLAN_ONLY = ("plan mode: this is the plan; nothing was changed. Rerun with --auto-approve to carry it out, or "
             "without --mode plan.")
#: how a turn ended, in Claude Code's words (its ``subtype``)
SUBTYPES = {"done": "success", "max_iterations": "error_max_turns"}


@dataclass
class _Run:
    """What a turn left for the output: the last answer, a proposed plan, how it ended, how long it took, and
    the calls that were refused."""

    answer: str = ""
    partial: str = ""  # the reply streaming now: an interrupt leaves only this
    continued: bool = False  # the last reply stopped at the output limit: the next one goes on with its text
    plan: str | None = None  # plan mode: the plan the model proposed is the result
    ended: TurnEnded | None = None
    started: float = field(default_factory=time.monotonic)
    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    denials: list[dict[str, Any]] = field(default_factory=list)
    job: PhaseStarted | None = None  # the workflow job the run worked on (its last phase)
    finished: JobFinished | None = None  # how that job ended, when it did
    waiting: JobStateChanged | None = None  # the job stopped for the person (halted, escalated)
    state: str = ""  # the job's state, when its workflow has states (the TDD job's)

    @property
    def result(self) -> str:
        """What the run answered: a completed job's summary, what a job that waits for the person says (the model's
        report, why it halted), a proposed plan, or the last reply."""
        if self.finished is not None and self.finished.status == "complete":
            return self.finished.summary
        if self.waiting is not None:
            return self.waiting.detail
        if self.ended is not None and self.ended.reason == "blocked":  # the question is what the run leaves
            return self.ended.message
        return self.plan if self.plan is not None else self.answer


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
        told = isinstance(event, STDERR_EVENTS[self.format]) and not getattr(event, "waiting", "")  # stdout has it
        line = describe(event) if told else None
        if isinstance(event, IntentPreview) and line is not None:  # text mode shows no other text of the model's
            self.complain(f"plan (the model's intent preview; not enforced):\n{event.outline}")
        elif line is not None:
            self.complain(line.text)

    def denied(self, name: str, args: dict[str, Any], by: str) -> None:
        """Text output only shows the answer: a call that was not run is said on stderr (json and stream-json
        carry it as ``permission_denials`` and events)."""
        if self.format != "text":
            return
        what = short(str(args.get("command") or args.get("path") or ""), 80)
        call = f"{name} `{what}`" if what else name
        if by == "headless":
            self.complain(f"{call} was not run: it needs approval, and nobody can answer here; allow it with "
                          "--auto-approve or a rule in .anvil/config.toml ([permissions] allow).")
        else:
            self.complain(f"{call} was not run: refused by {by}.")

    def finish(self, run: _Run, session: SessionFacade, task: dict[str, Any] | None = None) -> int:
        ended = run.ended
        assert ended is not None, "a turn always ends with turn_ended"
        if ended.reason in {"max_iterations", "stuck"}:
            self.complain(ended.message)
        if ended.reason == "dropped":  # the text so far is the answer; how to go on, in -p's terms
            run.answer = run.answer + run.partial if run.continued else run.partial
            line = describe(ended, go_on=CONTINUE_HEADLESS)
            if line is not None:
                self.complain(line.text)
        if ended.reason == "interrupted" and run.partial:
            run.answer += run.partial  # what streamed before the interrupt is the answer there is
        if ended.reason == "interrupted" and self.format == "text":
            self.complain(f"interrupted: the answer {'below is incomplete' if run.answer else 'was not finished'}; "
                          "`anvil -c -p \"go on\"` continues the session.")
        if run.plan is not None and ended.reason == "done":
            self.complain(PLAN_ONLY)
        text = run.result
        if self.format == "text" and text:
            self.out.write(self.mask(text.rstrip("\n")) + "\n")
        elif self.format in {"json", "stream-json"}:
            self._json(result_object(session, run, task))
        self.out.flush()
        if task is not None and task["status"] == "failed":  # verification still failing counts as an error
            return EXIT_ERROR
        code = EXIT_CODES.get(ended.reason, EXIT_ERROR)
        if run.waiting is not None and code == EXIT_OK:
            return EXIT_NEEDS_PERSON
        job_unfinished = run.job is not None and (run.finished is None or run.finished.status != "complete")
        return EXIT_ERROR if code == EXIT_OK and job_unfinished else code  # a job that stopped short is no success

    def _json(self, data: dict[str, Any]) -> None:
        self.out.write(self.masker.mask_json(json.dumps(data, ensure_ascii=False)) + "\n")


async def run_headless(runtime: Runtime, prompt: str | None, output_format: str = "text",
                       out: TextIO | None = None, err: TextIO | None = None, *, input_format: str = "text",
                       stdin: TextIO | None = None, job: JobLaunch | None = None,
                       task: TaskLaunch | None = None) -> int:
    """One turn for ``prompt``; with ``input_format="stream-json"``, a turn for every user message on ``stdin``
    (after ``prompt``, when there is one). With ``job``, a workflow job: a new one for its instructions (or the
    prompt), or, resumed, the job the runtime was opened on, with the prompt as guidance. With ``task``, the
    task's run (exit 4 when it ends blocked)."""
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
    ending = EndOnSignal(asyncio.get_running_loop().call_soon_threadsafe, lambda _: session.interrupt(),
                         session.close_now)  # SIGTERM, SIGHUP: the turn interrupted, its result written, 128+N
    if input_format == "stream-json":
        try:
            with interrupt_on_sigint(session.interrupt, EXIT_INTERRUPTED), ending:
                code = await _conversation(session, prompt, output, stdin or sys.stdin, ending)
        finally:
            await session.close()
        ending.end()
        return code
    task_turn = TaskTurn(session, task, blocking=True) if task is not None else None
    try:
        stream = _job_stream(session, job, prompt or "")
    except JobError as exc:
        output.complain(str(exc))
        await session.close()
        return EXIT_ERROR
    try:
        with interrupt_on_sigint(session.interrupt, EXIT_INTERRUPTED), ending:
            run = await _turn(session, prompt or "", output, task_turn.events() if task_turn else stream)
    finally:
        await session.close()
    with contextlib.suppress(OSError) if ending.signum else contextlib.nullcontext():  # a hung-up terminal
        code = output.finish(run, session, task_turn.result if task_turn else None)
    ending.end()
    return code


def _job_stream(session: SessionFacade, job: JobLaunch | None, prompt: str) -> AsyncIterator[Event] | None:
    """A new job's run (its instructions: the file's, then the prompt with its @files attached); None for a plain
    turn, or a resumed job's (the runtime has it: the prompt is guidance). Raises JobError."""
    if job is None or job.resume:
        return None
    instructions = "\n\n".join(part for part in (job.instructions or "",
                                                 prepare_prompt(prompt, session.root).text) if part.strip())
    return session.start_job(job.workflow, instructions)


async def _conversation(session: SessionFacade, prompt: str | None, output: _Output, stdin: TextIO,
                        ending: EndOnSignal) -> int:
    """A turn for each user message on stdin, each ending with its result line; the last turn's exit code (1
    when a line was not a user message), 130 at once when interrupted."""
    lines = _lines(stdin)
    ending.also(lambda _: lines.put_nowait(None))  # a signal: no next message
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
    if turns == 0 and ending.signum is None:
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


async def _turn(session: SessionFacade, prompt: str, output: _Output,
                stream: AsyncIterator[Event] | None = None) -> _Run:
    run = _Run()
    async for event in stream or prompt_turn(session, prepare_prompt(prompt, session.root)):  # @file, @server:uri
        if isinstance(event, ApprovalRequested):  # nobody to ask: denied, and the model is told how to get it
            event.answer(headless_denial(event.reasons, event.person_only))
        output.event(event)
        match event:
            case PlanProposed(future=None, plan=plan):
                run.plan = plan
            case TextDelta(text=text):
                run.partial += text
            case AssistantMessage(text=text, continues=continues):
                run.answer = run.answer + text if run.continued else text
                run.continued, run.partial = continues, ""
            case ToolCallStarted(call_id=call_id, name=name, args=args):
                run.calls[call_id] = (name, args)
            case ApprovalAnswered(allow=False, by=by) if by != "interrupt":
                name, args = run.calls.get(event.call_id, (event.tool, {}))
                run.denials.append({"tool_name": name, "tool_use_id": event.call_id, "tool_input": args, "by": by})
                output.denied(name, args, by)
            case PhaseStarted():
                run.job = event
            case JobFinished():
                run.finished = event
            case JobStateChanged(new=new, waiting=waiting):
                run.state = new
                run.waiting = event if waiting else run.waiting
            case TurnEnded():
                run.ended = event
    return run


def result_object(session: SessionFacade, run: _Run, task: dict[str, Any] | None = None) -> dict[str, Any]:
    """How a turn ended, in anvil's field names and Claude Code's: ``turns``/``num_turns``, ``cost``/
    ``total_cost_usd``, ``stop_reason``/``subtype``, usage in both token names. Tokens and cost are the session's.
    ``verification``: the turn's checks and who fixed what; ``task``: a task run's status, question and plan."""
    ended = run.ended
    assert ended is not None, "a turn always ends with turn_ended"
    usage = session.usage()
    cost = None if usage.cost is None else round(usage.cost, 6)  # null when the price is unknown, never 0
    result: dict[str, Any] = {
        "type": "result",
        "subtype": SUBTYPES.get(ended.reason, "error_during_execution"),
        "result": run.result,
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
        "verification": session.verification(),
    }
    if task is not None:
        result["task"] = task
    if run.plan is not None:
        result.update(plan=run.plan, stop_reason="plan")
    if run.job is not None:
        job = run.job
        status = run.finished.status if run.finished else run.waiting.waiting if run.waiting else "paused"
        result["job"] = {"workflow": job.workflow, "job_id": job.job_id, "job_dir": job.job_dir, "phase": job.phase,
                         "kind": run.state or job.kind, "status": status,
                         "summary": run.finished.summary if run.finished else ""}
    return result


__all__ = ["EXIT_BLOCKED", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_NEEDS_PERSON", "EXIT_OK", "EXIT_USAGE",
           "ModelError", "run_headless"]
