"""Hooks: the person's shell commands, run at points of a session, that can watch and steer it.

Which hooks run where is configured in ``[hooks]`` (:mod:`anvil.core.hooks.config`). Every hook gets a JSON
object on stdin: ``hook_event_name``, ``session_id``, ``cwd`` (the project root), ``transcript_path`` (anvil's
session file), ``permission_mode`` (Claude Code's word for the approval mode; ``approval_mode`` is anvil's),
plus the event's payload (see the per-event methods of :class:`HookRunner`). Names are given both ways:
``anvil_hook_event_name`` (pre_tool_use) and ``claude_hook_event_name`` (PreToolUse), ``anvil_tool_name``
(run_command) and ``claude_tool_name`` (Bash); ``hook_event_name`` and ``tool_name`` follow the hook's dialect
(:mod:`anvil.core.hooks.claude`). ``tool_input`` has Claude Code's absolute ``file_path`` beside ``path``, and
the call's id is both ``tool_call_id`` and ``tool_use_id``. The hook runs through bash in the project root, in
its own process group (:mod:`anvil.core.hooks.process`), with ``ANVIL_PROJECT_DIR``, ``CLAUDE_PROJECT_DIR``,
``ANVIL_SESSION_ID`` and ``ANVIL_HOOK_EVENT`` in its environment. Hooks of one event run in config order; the
first that blocks ends the run. What a hook's exit says:

- ``0``: fine. Stdout may be a JSON object (anvil's fields or Claude Code's: :mod:`anvil.core.hooks.outcome`).
  Plain stdout is context for the model on ``session_start`` and ``user_prompt_submit``, ignored elsewhere.
- ``2``: block. pre_tool_use: the call is refused and stderr goes to the model; user_prompt_submit: the prompt is
  dropped and stderr shown to the person; stop: the model goes on, with stderr as the reason (at most
  :data:`MAX_STOP_CONTINUATIONS` times in a row, so two hooks cannot loop forever); post_tool_use: stderr goes to
  the model (the call already ran). Other events cannot be blocked: reported as a notice.
- anything else, a crash, a timeout, a command that cannot start, unreadable JSON: a notice for the person, and
  anvil goes on as if the hook were not there. A hook never raises into the agent and never hangs it.

How the agent calls it (every method returns a :class:`HookOutcome`, at once when no hook matches)::

    hooks = HookRunner(settings.hooks, root, session_id)
    await hooks.session_start("startup" | "resume")       # context -> add to the first user message
    await hooks.user_prompt_submit(text)                  # every turn, before the user message is added (it also
                                                          # resets the stop bound); blocked -> drop the prompt
    await hooks.pre_tool_use(name, raw_args, call_id)     # after ToolRegistry.prepare, before policy.evaluate
    await hooks.post_tool_use(name, raw_args, result, call_id)   # after the tool ran; context -> append to output
    await hooks.pre_compact("auto" | "manual", focus)     # before a compaction
    await hooks.stop(last_text)                           # the model answered without tool calls; blocked -> go on
    await hooks.notification(message)                     # anvil waits for the person (an approval, a question)
    await hooks.session_end(reason)                       # when the session closes

Outcome fields: ``blocked`` + ``message`` (why; for the model, or the person on user_prompt_submit),
``decision`` ("approve" = run without asking, but a hard-deny verdict or a question only the person may answer
still wins; "ask" = ask the person even where rules allow it; "deny" comes with ``blocked``),
``updated_input`` (re-validate with ``tool.Args`` before use), ``additional_context`` (for the model:
``append_context(text, outcome.additional_context)`` marks it in the user message or tool output),
``stop_turn`` + ``stop_reason`` (end the turn, telling the person why), ``notices`` (emit each as a
``Notice`` event).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anvil.core.hooks.claude import (
    PERMISSION_MODES,
    Dialect,
    claude_event_name,
    claude_tool_name,
    with_file_path,
)
from anvil.core.hooks.config import HookCommand, HooksConfig, matcher_matches
from anvil.core.hooks.outcome import BLOCKING_EVENTS, HookAnswer, HookOutcome
from anvil.core.hooks.process import HookRun, run_hook_process
from anvil.core.process_groups import NONINTERACTIVE_ENV, describe_exit

#: events whose plain (non-JSON) stdout is context for the model, as in Claude Code
STDOUT_CONTEXT_EVENTS = frozenset({"session_start", "user_prompt_submit"})
BLOCK_EXIT = 2
#: stop hooks may keep a turn going this many times in a row; then the turn ends, so hooks cannot loop forever
MAX_STOP_CONTINUATIONS = 3
#: characters of a tool's output passed to post_tool_use hooks
PAYLOAD_OUTPUT_LIMIT = 100_000


def _label(event: str, hook: HookCommand) -> str:
    command = " ".join(hook.command.split())
    return f"{event} hook `{command[:60] + '…' if len(command) > 60 else command}`"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:200]  # the last line of a traceback says what went wrong


class HookRunner:
    """Runs the configured hooks of a session. Cheap when none are configured: nothing is spawned."""

    def __init__(self, config: HooksConfig | None, root: Path, session_id: str,
                 environ: dict[str, str] | None = None, *, transcript_path: Path | None = None,
                 mode: Callable[[], str] | None = None) -> None:
        """``transcript_path``: the session file; ``mode``: the approval mode now (both go to every hook)."""
        self.config = config or HooksConfig()
        self.root = root.resolve()
        self.session_id = session_id
        self.transcript_path = transcript_path
        self._mode = mode or (lambda: "ask")
        self._environ = dict(os.environ if environ is None else environ)
        self._stop_continuations = 0

    def has(self, event: str, subject: str | None = None) -> bool:
        """Whether any hook would run (to skip building an expensive payload)."""
        return any(matcher_matches(h.matcher, subject) for h in self.config.for_event(event))

    def _env(self, event: str) -> dict[str, str]:
        env = {**self._environ, **NONINTERACTIVE_ENV}
        env.update(ANVIL_PROJECT_DIR=str(self.root), ANVIL_SESSION_ID=self.session_id, ANVIL_HOOK_EVENT=event,
                   CLAUDE_PROJECT_DIR=str(self.root))  # so hooks written for Claude Code find the project
        return env

    def _common(self, event: str) -> dict[str, Any]:
        mode = self._mode()
        return {"session_id": self.session_id, "cwd": str(self.root),
                "transcript_path": str(self.transcript_path) if self.transcript_path else "",
                "permission_mode": PERMISSION_MODES.get(mode, mode), "approval_mode": mode,
                "anvil_hook_event_name": event, "claude_hook_event_name": claude_event_name(event)}

    def _stdin(self, data: dict[str, Any], event: str, dialect: Dialect) -> bytes:
        said = {"hook_event_name": event if dialect == "anvil" else claude_event_name(event), **data}
        if "anvil_tool_name" in data:
            said["tool_name"] = data["anvil_tool_name"] if dialect == "anvil" else data["claude_tool_name"]
        return json.dumps(said, ensure_ascii=False, default=str).encode("utf-8")

    async def run(self, event: str, payload: dict[str, Any] | None = None, *,
                  subject: str | None = None) -> HookOutcome:
        """Run ``event``'s hooks whose matcher accepts ``subject`` (the tool name for tool events)."""
        hooks = [h for h in self.config.for_event(event) if matcher_matches(h.matcher, subject)]
        if event == "user_prompt_submit":
            self._stop_continuations = 0  # a new turn: stop hooks get their continuations back
        outcome = HookOutcome()
        if not hooks:
            return outcome
        data: dict[str, Any] = {**self._common(event), **(payload or {})}
        if "tool_input" in data:
            data["tool_input"] = with_file_path(data["tool_input"], self.root)
        for hook in hooks:
            stdin = self._stdin(data, event, hook.dialect)
            result = await run_hook_process(hook.command, stdin, self.root, self._env(event), hook.timeout)
            outcome.ran += 1
            if self._interpret(event, hook, result, outcome, data.get("tool_input")):
                break
            if outcome.updated_input is not None and "tool_input" in data:
                data["tool_input"] = with_file_path(outcome.updated_input, self.root)  # later hooks see what runs
        if event == "stop":
            self._bound_stop(outcome)
        return outcome

    def _bound_stop(self, outcome: HookOutcome) -> None:
        if not outcome.blocked:
            self._stop_continuations = 0
        elif self._stop_continuations >= MAX_STOP_CONTINUATIONS:
            outcome.blocked = False
            outcome.notices.append(f"Stop hooks asked the model to go on {MAX_STOP_CONTINUATIONS} times in a row; "
                                   f"anvil ended the turn so they cannot loop. Their last reason: {outcome.message}")
            self._stop_continuations = 0
        else:
            self._stop_continuations += 1

    def _interpret(self, event: str, hook: HookCommand, run: HookRun, outcome: HookOutcome,
                   tool_input: dict[str, Any] | None) -> bool:
        """Fold one hook's result into ``outcome``; True when it blocked (the remaining hooks are skipped)."""
        label = _label(event, hook)
        if run.error is not None:
            outcome.notices.append(f"The {label} could not start: {run.error}. Check its command in the [hooks] "
                                   "table of your config; anvil went on without it.")
            return False
        if run.timed_out:
            outcome.notices.append(f"The {label} did not finish within {hook.timeout:g}s and was stopped; anvil "
                                   "went on without it. Raise its `timeout` in the config, or make it faster.")
            return False
        if run.exit_code == BLOCK_EXIT:
            reason = run.stderr.strip() or f"Blocked by the {label} (it gave no reason on stderr)."
            if event in BLOCKING_EVENTS:
                return outcome.block(event, reason)
            if event == "post_tool_use":  # the call already ran: the model should still hear the objection
                outcome.add_context(reason)
            else:
                outcome.notices.append(f"The {label} exited 2 ({_last_line(reason)}), but {event} cannot be "
                                       "blocked; anvil went on.")
            return False
        if run.exit_code != 0:
            detail = _last_line(run.stderr)
            outcome.notices.append(f"The {label} failed ({describe_exit(run.exit_code)}"
                                   f"{': ' + detail if detail else ''}); anvil went on without it.")
            return False
        return self._apply_stdout(event, label, run.stdout, outcome, tool_input)

    def _apply_stdout(self, event: str, label: str, stdout: str, outcome: HookOutcome,
                      tool_input: dict[str, Any] | None) -> bool:
        text = stdout.strip()
        if not text.startswith("{"):
            if event in STDOUT_CONTEXT_EVENTS:
                outcome.add_context(text)
            return False
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            outcome.notices.append(f"The {label} printed invalid JSON ({exc.msg} at line {exc.lineno}); its "
                                   "output was ignored. Print one JSON object, or plain text.")
            return False
        original = {k: v for k, v in (tool_input or {}).items() if k != "file_path"} if tool_input else None
        return HookAnswer(event, label, raw, original, self.root).apply(outcome)

    # -- one method per event, with its payload ---------------------------------------------------------

    async def session_start(self, source: str = "startup") -> HookOutcome:
        return await self.run("session_start", {"source": source}, subject=source)

    async def user_prompt_submit(self, prompt: str) -> HookOutcome:
        return await self.run("user_prompt_submit", {"prompt": prompt})

    async def pre_tool_use(self, tool_name: str, tool_input: dict[str, Any], call_id: str = "") -> HookOutcome:
        return await self.run("pre_tool_use", {**_tool_names(tool_name), "tool_input": tool_input,
                                               "tool_call_id": call_id, "tool_use_id": call_id}, subject=tool_name)

    async def post_tool_use(self, tool_name: str, tool_input: dict[str, Any], result: Any,
                            call_id: str = "") -> HookOutcome:
        """``result`` is a ToolResult (or anything with ok, output and summary)."""
        output = str(getattr(result, "output", ""))
        ok = bool(getattr(result, "ok", True))
        tool_result = {"ok": ok, "summary": str(getattr(result, "summary", "")),
                       "output": output[:PAYLOAD_OUTPUT_LIMIT], "truncated": len(output) > PAYLOAD_OUTPUT_LIMIT}
        response: dict[str, Any] = {"success": ok, "output": tool_result["output"]}
        if isinstance(tool_input.get("path"), str):
            response["filePath"] = str((self.root / tool_input["path"]).resolve(strict=False))
        return await self.run("post_tool_use", {**_tool_names(tool_name), "tool_input": tool_input,
                                                "tool_call_id": call_id, "tool_use_id": call_id,
                                                "tool_result": tool_result, "tool_response": response},
                              subject=tool_name)

    async def pre_compact(self, trigger: str = "auto", instructions: str | None = None) -> HookOutcome:
        return await self.run("pre_compact", {"trigger": trigger, "custom_instructions": instructions or ""},
                              subject=trigger)

    async def stop(self, last_message: str = "") -> HookOutcome:
        return await self.run("stop", {"stop_hook_active": self._stop_continuations > 0,
                                       "last_assistant_message": last_message})

    async def session_end(self, reason: str = "exit") -> HookOutcome:
        return await self.run("session_end", {"reason": reason}, subject=reason)

    async def notification(self, message: str) -> HookOutcome:
        return await self.run("notification", {"message": message})


def _tool_names(name: str) -> dict[str, str]:
    return {"anvil_tool_name": name, "claude_tool_name": claude_tool_name(name)}
