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
from typing import TYPE_CHECKING

from prompt_toolkit.formatted_text import StyleAndTextTuples

from anvil.core.events import ApprovalDecision, ApprovalRequested, PlanDecision, PlanProposed, QuestionAsked
from anvil.core.loop.interrupt import INTERRUPTED
from anvil.plain.render import approval_keys, approval_text, scope_text

if TYPE_CHECKING:
    from anvil.plain.repl import PlainRepl

NO_ANSWER = ""  # an interrupted question: the tool tells the model nobody answered
SCOPE_KEYS = {"s": "session", "p": "project", "e": "user"}
SCOPE_WORDS = {"session": "this session", "project": "this project (.anvil/permissions.toml)",
               "user": "everywhere (your user permissions.toml)"}


async def approve(repl: PlainRepl, event: ApprovalRequested) -> ApprovalDecision:
    repl.end_line()
    shell = repl.runtime.agent.ctx.state.get("shell")
    cwd = str(getattr(shell, "cwd", None) or repl.runtime.root)
    repl.write(approval_text(event, cwd))
    repl.keys.discard()
    while True:
        choice = await repl.key("yand")
        if choice is None:
            repl.interrupt()
            repl.say("→ interrupted", "class:error")
            return ApprovalDecision(False, INTERRUPTED, by="interrupt")
        if choice == "y":
            repl.say("→ allowed once", "class:ok")
            return ApprovalDecision(True)
        if choice == "n":
            repl.say("→ denied", "class:error")
            return ApprovalDecision(False)
        if choice == "d":
            message = await repl.read_line("Tell the model why (Enter sends): ")
            if message is None:
                return ApprovalDecision(False, INTERRUPTED, by="interrupt")
            repl.say("→ denied with your message", "class:error")
            return ApprovalDecision(False, message.strip())
        if event.suggested_pattern is None:
            repl.write([("class:notice", "\n  'Always' is not available for this call (no rule would fit it "
                                         "safely). y once · n deny · d deny with a message ")])
            continue
        repl.write(scope_text(event.suggested_pattern))
        scope = await repl.key("spe", escape=True)
        if scope is None:
            repl.interrupt()
            return ApprovalDecision(False, INTERRUPTED, by="interrupt")
        if scope == "esc":
            repl.write([("", "\n"), *approval_keys()])
            continue
        remember = SCOPE_KEYS[scope]
        repl.say(f"→ always allowed in {SCOPE_WORDS[remember]}: {event.suggested_pattern}", "class:ok")
        return ApprovalDecision(True, remember=remember, pattern=event.suggested_pattern)


async def ask_question(repl: PlainRepl, event: QuestionAsked) -> str:
    repl.end_line()
    lines: StyleAndTextTuples = [("class:title", f"\n? {event.question}\n")]
    for number, option in enumerate(event.options, 1):
        lines += [("class:key", f"  {number}"), ("", f". {option}\n")]
    repl.write(lines)
    hint = "Your answer (a number, or your own words): " if event.options else "Your answer: "
    while True:
        text = await repl.read_line(hint)
        if text is None:
            return NO_ANSWER
        text = text.strip()
        if text.isdigit() and event.options:
            if 1 <= int(text) <= len(event.options):
                return event.options[int(text) - 1]
            repl.say(f"Choose 1 to {len(event.options)}, or type an answer.")
            continue
        if text:
            return text


async def review_plan(repl: PlainRepl, event: PlanProposed) -> PlanDecision:
    plan = event.plan
    while True:
        repl.end_line()
        body = "\n".join(f"  {line}" for line in plan.rstrip().splitlines())
        repl.write([("class:title", "\n📋 Proposed plan\n"), ("", body + "\n"), ("class:key", "  a"),
                    ("", " approve  "), ("class:key", "e"), ("", " edit in $EDITOR  "), ("class:key", "r"),
                    ("", " reject with feedback ")])
        repl.keys.discard()
        choice = await repl.key("aer")
        if choice is None:
            repl.interrupt()
            return PlanDecision(False, plan, INTERRUPTED)
        if choice == "a":
            repl.say("→ plan approved", "class:ok")
            return PlanDecision(True, plan)
        if choice == "r":
            feedback = await repl.read_line("What should change? ")
            if feedback is None:
                return PlanDecision(False, plan, INTERRUPTED)
            repl.say("→ plan rejected; your feedback goes to the model", "class:error")
            return PlanDecision(False, plan, feedback.strip())
        plan = await edit_text(repl, plan)


async def edit_text(repl: PlainRepl, text: str) -> str:
    """Edit in $VISUAL / $EDITOR (vi when unset), with the terminal handed over while it runs."""
    editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
    repl.end_line()
    with tempfile.TemporaryDirectory(prefix="anvil-plan-") as tmp:
        path = Path(tmp) / "plan.md"
        path.write_text(text, encoding="utf-8")
        was_reading = repl.keys.active
        repl.keys.stop()
        try:
            result = await asyncio.to_thread(subprocess.run, [*editor, str(path)], check=False)
        except OSError as exc:
            repl.say(f"✗ Cannot start the editor {editor[0]}: {exc.strerror}. Set $EDITOR.", "class:error")
            return text
        finally:
            if was_reading:
                repl.keys.start()
        if result.returncode != 0:
            repl.say(f"The editor exited with status {result.returncode}; the plan is unchanged.")
            return text
        return path.read_text(encoding="utf-8")
