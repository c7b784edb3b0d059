"""`anvil -p`: one prompt, no terminal UI; the answer or the events on stdout.

Output formats:
- ``text``: the final answer only; notices, retries and errors go to stderr.
- ``json``: one object at the end: result, session_id, turns, usage, cost, stop_reason, is_error.
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
from typing import Any, TextIO

from anvil.core.events import (
    ApprovalDecision,
    ApprovalRequested,
    AssistantMessage,
    ErrorEvent,
    Notice,
    PlanProposed,
    Retrying,
    TurnEnded,
)
from anvil.core.model.errors import ModelError
from anvil.runtime import Runtime

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

HEADLESS_DENIAL = (
    "Not run: this needs the person's approval, and anvil is running headless (-p) with nobody to ask. "
    "Do without it, or tell the person to rerun with --auto-approve or to allow it with a rule in "
    ".anvil/config.toml ([permissions] allow = [...])."
)


async def run_headless(runtime: Runtime, prompt: str, output_format: str = "text",
                       out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    agent = runtime.agent
    runtime.notify = lambda message: _emit_notice(message, output_format, out, err)
    for warning in runtime.warnings:
        _emit_notice(warning, output_format, out, err)
    for notice in await runtime.start(wait_for_mcp=30.0):  # MCP tools must be there before the first turn
        _emit_notice(notice, output_format, out, err)
    problem = await asyncio.to_thread(agent.model.preflight)
    if problem:
        print(f"anvil: {problem}", file=err)
        return EXIT_ERROR
    loop = asyncio.get_running_loop()
    interrupts = 0

    def on_sigint() -> None:
        nonlocal interrupts
        interrupts += 1
        agent.interrupt()
        if interrupts > 1:  # a second Ctrl+C: the person really wants out
            raise SystemExit(EXIT_INTERRUPTED)

    with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    final_text = ""
    plan: str | None = None  # plan mode: the plan the model proposed is the result
    ended: TurnEnded | None = None
    try:
        async for event in agent.run_turn(prompt):
            if isinstance(event, ApprovalRequested):
                event.answer(ApprovalDecision(False, HEADLESS_DENIAL, by="headless"))
            if output_format == "stream-json":
                out.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
                out.flush()
            if isinstance(event, PlanProposed) and event.future is None:
                plan = event.plan
            if isinstance(event, AssistantMessage):
                final_text = event.text
            elif isinstance(event, ErrorEvent) or (isinstance(event, Notice) and output_format == "text"):
                print(f"anvil: {event.message}", file=err)
            elif isinstance(event, Retrying) and output_format != "stream-json":
                print(f"anvil: {event.message}; retrying in {event.delay:.1f}s "
                      f"(attempt {event.attempt + 1} of {event.max_attempts})", file=err)
            elif isinstance(event, TurnEnded):
                ended = event
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await runtime.close()
    assert ended is not None
    code = {"done": EXIT_OK, "interrupted": EXIT_INTERRUPTED}.get(ended.reason, EXIT_ERROR)
    if ended.reason in {"max_iterations", "stuck"}:
        print(f"anvil: {ended.message}", file=err)
    if plan is not None and ended.reason == "done":
        print("anvil: plan mode: this is the plan; nothing was changed. Rerun with --auto-approve to carry it "
              "out, or without --mode plan.", file=err)
    if output_format == "text":
        text = plan if plan is not None else final_text
        if text:
            out.write(text.rstrip("\n") + "\n")
    elif output_format == "json":
        result = _result(runtime, plan if plan is not None else final_text, ended)
        if plan is not None:
            result.update(plan=plan, stop_reason="plan")
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    out.flush()
    return code


def _result(runtime: Runtime, text: str, ended: TurnEnded) -> dict[str, Any]:
    totals = runtime.agent.totals
    return {
        "type": "result",
        "result": text,
        "session_id": runtime.session.id,
        "turns": ended.iterations,
        "stop_reason": ended.reason,
        "is_error": ended.reason not in {"done"},
        "usage": {"prompt_tokens": totals["prompt_tokens"], "completion_tokens": totals["completion_tokens"]},
        "cost": round(float(totals["cost"]), 6),
    }


def _emit_notice(message: str, output_format: str, out: TextIO, err: TextIO) -> None:
    if output_format == "stream-json":
        out.write(json.dumps(Notice(message).to_dict()) + "\n")
    print(f"anvil: {message}", file=err)


__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "ModelError", "run_headless"]
