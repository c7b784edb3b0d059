"""Hooks: the person's shell commands, run at points of a session, that can watch and steer it.

Config (a ``[hooks]`` table in the settings, :class:`HooksConfig`)::

    [[hooks.pre_tool_use]]
    matcher = "edit_file|write_file|multi_edit"   # tool name: glob, or regex matching the whole name; omitted = all
    command = "python3 .anvil/hooks/block_secrets.py"
    timeout = 10                                   # seconds, default 30; the process group is killed after it

Every hook gets a JSON object on stdin: ``hook_event_name``, ``session_id``, ``cwd`` (the project root), plus
the event's payload (see the per-event methods of :class:`HookRunner`). It runs through bash in the project root,
in its own process group (:mod:`anvil.core.hooks.process`), with ``ANVIL_PROJECT_DIR``, ``ANVIL_SESSION_ID`` and
``ANVIL_HOOK_EVENT`` in its environment. Hooks of one event run in config order; the first that blocks ends the
run. What a hook's exit says:

- ``0``: fine. Stdout may be a JSON object: ``decision`` ("approve"/"deny" for pre_tool_use, "block" for
  user_prompt_submit/stop/post_tool_use), ``reason``, ``updated_input`` (pre_tool_use: the tool's new arguments,
  seen by later hooks too), ``additional_context`` (text for the model), ``system_message`` (text for the
  person). Plain stdout is context for the model on ``session_start`` and ``user_prompt_submit``, ignored elsewhere.
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
``decision`` ("approve" = run without asking, but a hard-deny verdict still wins; "deny" comes with
``blocked``), ``updated_input`` (re-validate with ``tool.Args`` before use), ``additional_context`` (for the
model: ``append_context(text, outcome.additional_context)`` marks it in the user message or tool output),
``notices`` (emit each as a ``Notice`` event).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from anvil.core.hooks.process import HookRun, run_hook_process
from anvil.core.process_groups import NONINTERACTIVE_ENV, describe_exit

HookEvent = Literal["session_start", "user_prompt_submit", "pre_tool_use", "post_tool_use", "pre_compact", "stop",
                    "session_end", "notification"]
HOOK_EVENTS: tuple[str, ...] = get_args(HookEvent)
BLOCKING_EVENTS = frozenset({"user_prompt_submit", "pre_tool_use", "stop"})
#: events whose plain (non-JSON) stdout is context for the model, as in Claude Code
STDOUT_CONTEXT_EVENTS = frozenset({"session_start", "user_prompt_submit"})
BLOCK_EXIT = 2
#: stop hooks may keep a turn going this many times in a row; then the turn ends, so hooks cannot loop forever
MAX_STOP_CONTINUATIONS = 3
#: characters of context one hook may add; a chatty hook must not fill the model's context
CONTEXT_LIMIT = 10_000
#: characters of a tool's output passed to post_tool_use hooks
PAYLOAD_OUTPUT_LIMIT = 100_000
# Claude Code spells the JSON fields in camelCase; accepting both lets people reuse their hook scripts.
_ALIASES = {"updatedInput": "updated_input", "additionalContext": "additional_context",
            "systemMessage": "system_message"}


class HookCommand(BaseModel):
    """One hook: a shell command run at an event."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    command: str = Field(min_length=1)
    """Shell command, run by bash in the project root with the event as JSON on stdin."""
    matcher: str | None = None
    """Which tools (tool events) or sources (session_start: startup/resume; pre_compact: auto/manual) it runs for:
    a glob (``mcp__github__*``) or a regex matching the whole name (``edit_file|write_file``). Omitted: all."""
    timeout: float = Field(30.0, gt=0, le=3600)
    """Seconds the hook may run before its process group is killed and a notice reports it."""


class HooksConfig(BaseModel):
    """Hooks by event; each event's hooks run in order."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    session_start: list[HookCommand] = Field(default_factory=list)
    """When a session starts or resumes; stdout is context for the model."""
    user_prompt_submit: list[HookCommand] = Field(default_factory=list)
    """Before a prompt reaches the model; may add context, or block it with exit 2."""
    pre_tool_use: list[HookCommand] = Field(default_factory=list)
    """Before a tool call; may approve, deny (exit 2) or rewrite its input."""
    post_tool_use: list[HookCommand] = Field(default_factory=list)
    """After a tool call; may add a note for the model (formatters, linters)."""
    pre_compact: list[HookCommand] = Field(default_factory=list)
    """Before the history is compacted."""
    stop: list[HookCommand] = Field(default_factory=list)
    """When the model ends its turn; exit 2 asks it to go on, with stderr as the reason."""
    session_end: list[HookCommand] = Field(default_factory=list)
    """When the session closes."""
    notification: list[HookCommand] = Field(default_factory=list)
    """When anvil waits for the person (an approval, a question)."""

    def for_event(self, event: str) -> list[HookCommand]:
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; expected one of {', '.join(HOOK_EVENTS)}")
        hooks: list[HookCommand] = getattr(self, event)
        return hooks


def matcher_matches(matcher: str | None, subject: str | None) -> bool:
    """A glob or a whole-name regex; no matcher, ``*``, or an event without a subject matches everything."""
    pattern = (matcher or "").strip()
    if not pattern or pattern == "*" or subject is None:
        return True
    if fnmatchcase(subject, pattern):
        return True
    try:
        return re.fullmatch(pattern, subject) is not None
    except re.error:  # a glob such as "*_file" is not a valid regex: the glob test above was the one that counts
        return False


@dataclass
class HookOutcome:
    """What the hooks of one event decided. Empty (nothing blocked, nothing added) when none ran."""

    blocked: bool = False
    #: why it was blocked: for the model (pre_tool_use, stop) or the person (user_prompt_submit)
    message: str = ""
    decision: Literal["approve", "deny"] | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: str = ""
    #: for the person: hook failures, timeouts, and hooks' system_message
    notices: list[str] = field(default_factory=list)
    ran: int = 0

    def add_context(self, text: str) -> None:
        text = text.strip()
        if len(text) > CONTEXT_LIMIT:
            text = text[:CONTEXT_LIMIT] + f"\n[hook context cut at {CONTEXT_LIMIT} characters]"
        if text:
            self.additional_context = f"{self.additional_context}\n\n{text}" if self.additional_context else text


def append_context(text: str, context: str) -> str:
    """``text`` (a prompt, a tool's output) with hook context after it, marked so the model knows its source."""
    return f"{text}\n\n<hook-context>\n{context}\n</hook-context>" if context.strip() else text


def _label(event: str, hook: HookCommand) -> str:
    command = " ".join(hook.command.split())
    return f"{event} hook `{command[:60] + '…' if len(command) > 60 else command}`"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:200]  # the last line of a traceback says what went wrong


class HookRunner:
    """Runs the configured hooks of a session. Cheap when none are configured: nothing is spawned."""

    def __init__(self, config: HooksConfig | None, root: Path, session_id: str,
                 environ: dict[str, str] | None = None) -> None:
        self.config = config or HooksConfig()
        self.root = root.resolve()
        self.session_id = session_id
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

    async def run(self, event: str, payload: dict[str, Any] | None = None, *,
                  subject: str | None = None) -> HookOutcome:
        """Run ``event``'s hooks whose matcher accepts ``subject`` (the tool name for tool events)."""
        hooks = [h for h in self.config.for_event(event) if matcher_matches(h.matcher, subject)]
        if event == "user_prompt_submit":
            self._stop_continuations = 0  # a new turn: stop hooks get their continuations back
        outcome = HookOutcome()
        if not hooks:
            return outcome
        data: dict[str, Any] = {"hook_event_name": event, "session_id": self.session_id, "cwd": str(self.root),
                                **(payload or {})}
        for hook in hooks:
            stdin = json.dumps(data, ensure_ascii=False, default=str).encode("utf-8")
            result = await run_hook_process(hook.command, stdin, self.root, self._env(event), hook.timeout)
            outcome.ran += 1
            if self._interpret(event, hook, result, outcome):
                break
            if outcome.updated_input is not None and "tool_input" in data:
                data["tool_input"] = outcome.updated_input  # later hooks check what will actually run
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

    def _interpret(self, event: str, hook: HookCommand, run: HookRun, outcome: HookOutcome) -> bool:
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
                return self._block(event, outcome, reason)
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
        return self._apply_stdout(event, label, run.stdout, outcome)

    def _block(self, event: str, outcome: HookOutcome, reason: str) -> bool:
        outcome.blocked, outcome.message = True, reason.strip()[:CONTEXT_LIMIT]
        outcome.decision = "deny" if event == "pre_tool_use" else None
        return True

    def _apply_stdout(self, event: str, label: str, stdout: str, outcome: HookOutcome) -> bool:
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
        data = {_ALIASES.get(k, k): v for k, v in raw.items()}
        reason = data.get("reason") if isinstance(data.get("reason"), str) else ""
        if isinstance(data.get("system_message"), str) and data["system_message"].strip():
            outcome.notices.append(data["system_message"].strip())
        if isinstance(data.get("additional_context"), str):
            outcome.add_context(data["additional_context"])
        if "updated_input" in data:
            if event != "pre_tool_use" or not isinstance(data["updated_input"], dict):
                outcome.notices.append(f"The {label} sent updated_input, which only a pre_tool_use hook may send "
                                       "and only as a JSON object of the tool's arguments; it was ignored.")
            else:
                outcome.updated_input = data["updated_input"]
        decision = data.get("decision")
        if decision is None:
            return False
        if event == "pre_tool_use" and decision in ("approve", "allow"):
            outcome.decision = outcome.decision or "approve"
            return False
        if decision in ("deny", "block") and event in BLOCKING_EVENTS:
            return self._block(event, outcome, reason or f"Blocked by the {label}.")
        if decision in ("deny", "block") and event == "post_tool_use":
            outcome.add_context(reason or f"The {label} objected to this call's result.")
            return False
        outcome.notices.append(f"The {label} sent decision {decision!r}, which {event} does not take; it was "
                               "ignored. pre_tool_use takes approve/deny; user_prompt_submit, stop and "
                               "post_tool_use take block.")
        return False

    # -- one method per event, with its payload ---------------------------------------------------------

    async def session_start(self, source: str = "startup") -> HookOutcome:
        return await self.run("session_start", {"source": source}, subject=source)

    async def user_prompt_submit(self, prompt: str) -> HookOutcome:
        return await self.run("user_prompt_submit", {"prompt": prompt})

    async def pre_tool_use(self, tool_name: str, tool_input: dict[str, Any], call_id: str = "") -> HookOutcome:
        return await self.run("pre_tool_use", {"tool_name": tool_name, "tool_input": tool_input,
                                               "tool_call_id": call_id}, subject=tool_name)

    async def post_tool_use(self, tool_name: str, tool_input: dict[str, Any], result: Any,
                            call_id: str = "") -> HookOutcome:
        """``result`` is a ToolResult (or anything with ok, output and summary)."""
        output = str(getattr(result, "output", ""))
        tool_result = {"ok": bool(getattr(result, "ok", True)), "summary": str(getattr(result, "summary", "")),
                       "output": output[:PAYLOAD_OUTPUT_LIMIT], "truncated": len(output) > PAYLOAD_OUTPUT_LIMIT}
        return await self.run("post_tool_use", {"tool_name": tool_name, "tool_input": tool_input,
                                                "tool_call_id": call_id, "tool_result": tool_result},
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
