"""The hooks around a turn: ``user_prompt_submit`` before the prompt joins the history, ``stop`` when the model
answers without tool calls. (Tool calls' hooks are :mod:`anvil.core.loop.tool_call`'s.)"""

from __future__ import annotations

from anvil.core.events import ErrorEvent, Event, Notice
from anvil.core.hooks.outcome import append_context
from anvil.core.hooks.runner import HookRunner
from anvil.core.loop.turn import TurnState


async def prompt_hooks(hooks: HookRunner, turn: TurnState) -> list[Event]:
    """They may add context to the prompt, or refuse it (the turn is then over before it began: ``turn.over``)."""
    submitted = await hooks.user_prompt_submit(turn.prompt)
    events: list[Event] = [Notice(notice) for notice in submitted.notices]
    if submitted.blocked:
        why = submitted.stop_reason if submitted.stop_turn else submitted.message
        message = f"A user_prompt_submit hook blocked this prompt: {why}"
        events.append(ErrorEvent(message, kind="hook"))
        turn.end("done" if submitted.stop_turn else "error", message)
    else:
        turn.prompt = append_context(turn.prompt, submitted.additional_context)
    return events


async def stop_hooks(hooks: HookRunner, last_text: str) -> tuple[list[Event], str | None]:
    """Their notices, and the reason a stop hook gives for the model to go on (None: the turn may end)."""
    stop = await hooks.stop(last_text)
    events: list[Event] = [Notice(notice) for notice in stop.notices]
    if stop.stop_turn:
        events.append(Notice(f"A stop hook ended the turn: {stop.stop_reason}"))
        return events, None
    return events, stop.message if stop.blocked else None
