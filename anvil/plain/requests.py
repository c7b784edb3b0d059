"""The requests that pause a turn in `anvil --plain`: approvals, questions (ask_user) and plans (exit_plan_mode).

Approvals and plans take a single key (no Enter), read raw by the REPL's key reader; keys typed before
the request appeared are dropped, so a stray `y` never approves anything. Ctrl+C interrupts the turn.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Protocol

from prompt_toolkit.formatted_text import StyleAndTextTuples

from anvil.core.events import ApprovalDecision, ApprovalRequested, PlanDecision, PlanProposed, QuestionAsked
from anvil.frontend.lines import always_patterns, decision_text, no_always_text, scope_choices
from anvil.plain.input import KeyReader
from anvil.plain.render import approval_keys, approval_text, scope_text

NO_ANSWER = ""  # an interrupted question: the tool tells the model nobody answered
#: what an interrupted request answers; the interrupt itself ends the call, so no message is needed
INTERRUPTED_APPROVAL = ApprovalDecision(False, by="interrupt")


class Terminal(Protocol):
    """What answering a request needs of the REPL: printing, single keys, typed lines, interrupting."""

    keys: KeyReader

    def end_line(self) -> None: ...

    def write(self, fragments: StyleAndTextTuples | str) -> None: ...

    def say(self, text: str, style: str = "class:notice") -> None: ...

    async def key(self, allowed: str, *, escape: bool = False) -> str | None: ...

    async def read_line(self, message: str) -> str | None: ...

    def interrupt(self) -> None: ...


async def approve(term: Terminal, event: ApprovalRequested, root: Path) -> ApprovalDecision:
    term.end_line()
    term.write(approval_text(event))
    term.keys.discard()
    decision = await _approval_answer(term, event, root)
    if decision is INTERRUPTED_APPROVAL:
        term.interrupt()
    term.say(f"→ {decision_text(decision, event, root)}", "class:ok" if decision.allow else "class:error")
    return decision


async def _approval_answer(term: Terminal, event: ApprovalRequested, root: Path) -> ApprovalDecision:
    while True:
        choice = await term.key("yand")
        if choice is None:
            return INTERRUPTED_APPROVAL
        if choice == "y":
            return ApprovalDecision(True)
        if choice == "n":
            return ApprovalDecision(False)
        if choice == "d":
            message = await term.read_line("Tell the model why (Enter sends): ")
            return INTERRUPTED_APPROVAL if message is None else ApprovalDecision(False, message.strip())
        patterns = always_patterns(event)
        if not patterns:
            term.write([("class:notice", f"\n  {no_always_text(event)} ")])
            continue
        choices = scope_choices(event, root)
        term.write(scope_text(patterns, choices))
        scope = await term.key("".join(c.key for c in choices), escape=True)
        if scope is None:
            return INTERRUPTED_APPROVAL
        if scope == "esc":
            term.write([("", "\n"), *approval_keys()])
            continue
        remember = next(c.scope for c in choices if c.key == scope)
        return ApprovalDecision(True, remember=remember, pattern=patterns[0], patterns=patterns)


async def ask_question(term: Terminal, event: QuestionAsked) -> str:
    term.end_line()
    lines: StyleAndTextTuples = [("class:title", f"\n? {event.question}\n")]
    for number, option in enumerate(event.options, 1):
        lines += [("class:key", f"  {number}"), ("", f". {option}\n")]
    term.write(lines)
    hint = "Your answer (a number, or your own words): " if event.options else "Your answer: "
    while True:
        text = await term.read_line(hint)
        if text is None:
            return NO_ANSWER
        text = text.strip()
        if text.isdigit() and event.options:
            if 1 <= int(text) <= len(event.options):
                return event.options[int(text) - 1]
            term.say(f"Choose 1 to {len(event.options)}, or type an answer.")
            continue
        if text:
            return text


async def review_plan(term: Terminal, event: PlanProposed) -> PlanDecision:
    plan = event.plan
    while True:
        term.end_line()
        body = "\n".join(f"  {line}" for line in plan.rstrip().splitlines())
        term.write([("class:title", "\n📋 Proposed plan\n"), ("", body + "\n"), ("class:key", "  a"),
                    ("", " approve  "), ("class:key", "e"), ("", " edit in $EDITOR  "), ("class:key", "r"),
                    ("", " reject with feedback ")])
        term.keys.discard()
        choice = await term.key("aer")
        if choice is None:
            term.interrupt()
            return PlanDecision(False, plan)
        if choice == "a":
            term.say("→ plan approved", "class:ok")
            return PlanDecision(True, plan)
        if choice == "r":
            feedback = await term.read_line("What should change? ")
            if feedback is None:
                return PlanDecision(False, plan)
            term.say("→ plan rejected; your feedback goes to the model", "class:error")
            return PlanDecision(False, plan, feedback.strip())
        plan = await edit_text(term, plan)


async def edit_text(term: Terminal, text: str) -> str:
    """Edit in $VISUAL / $EDITOR (vi when unset), with the terminal handed over while it runs."""
    editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
    term.end_line()
    with tempfile.TemporaryDirectory(prefix="anvil-plan-") as tmp:
        path = Path(tmp) / "plan.md"
        path.write_text(text, encoding="utf-8")
        was_reading = term.keys.active
        term.keys.stop()
        try:
            result = await asyncio.to_thread(subprocess.run, [*editor, str(path)], check=False)
        except OSError as exc:
            term.say(f"✗ Cannot start the editor {editor[0]}: {exc.strerror}. Set $EDITOR.", "class:error")
            return text
        finally:
            if was_reading:
                term.keys.start()
        if result.returncode != 0:
            term.say(f"The editor exited with status {result.returncode}; the plan is unchanged.")
            return text
        return path.read_text(encoding="utf-8")
