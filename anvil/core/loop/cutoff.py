"""Replies cut off at the output limit (``finish_reason == "length"``): what anvil does, and says.

A tool call in such a reply has arguments cut mid-JSON (or cut before the model meant to stop), so it is never
run. The step is retried once with a larger output limit (the model adapter picks it: ``retry_output_tokens``
when configured, else twice the limit that cut it, within the model's own maximum), and the person is told.
If that reply is cut off too, or no larger limit exists, its calls are dropped and the model is told to do
the work in smaller pieces. A reply of text only is kept, and the model is asked to go on from where it
stopped, a few times at most in one turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from anvil.core.loop.turn import TurnState
from anvil.core.model.protocol import Completion

MAX_CONTINUATIONS = 3
#: the text of a cut-off reply that had none of its own (a provider rejects an empty assistant message)
CUT_PLACEHOLDER = "[reply cut off at the output limit]"


@dataclass(frozen=True)
class Settled:
    """What follows a reply: for a cut-off one, the note the model reads next, the notice for the person, and
    whether the next reply continues this one's text."""

    placeholder: str = ""  # the history's text for a cut-off reply that has none
    note: str = ""
    notice: str = ""
    continues: bool = False


def is_cut_off(completion: Completion | None) -> bool:
    return completion is not None and completion.finish_reason == "length"


def settle(completion: Completion, turn: TurnState) -> Settled:
    """What to do with a reply that may have stopped at the output limit; a cut-off reply's tool calls are
    dropped from ``completion`` (never run with arguments cut mid-JSON). Sets ``turn.cut_off`` when the model
    is asked to go on."""
    turn.cut_off = False
    if not is_cut_off(completion):
        return Settled()
    if completion.tool_calls:
        note, notice = dropped_calls(completion)
        completion.tool_calls = []
        turn.cut_off = True
        return Settled(CUT_PLACEHOLDER, note, notice)
    turn.continuations += 1
    said = continuation(turn.continuations)
    if said is None:
        return Settled(CUT_PLACEHOLDER, notice=gave_up_notice())
    turn.cut_off = True
    return Settled(CUT_PLACEHOLDER, *said, continues=True)


def retry_notice(limit: int) -> str:
    return (f"The reply stopped at the output limit in the middle of a tool call, which was not run; retrying "
            f"once with a limit of {limit:,} tokens.")


def _names(completion: Completion) -> str:
    return ", ".join(dict.fromkeys(call.name or "?" for call in completion.tool_calls))


def dropped_calls(completion: Completion) -> tuple[str, str]:
    """(what the model reads, what the person is told) when a cut-off reply's tool calls are not run."""
    names = _names(completion)
    note = (f"[anvil] Your reply stopped at the output limit in the middle of a tool call ({names}), so it was "
            "not run: its arguments were incomplete. Do the work in smaller steps, so that each call fits: for "
            "example several edits instead of one large one, or a long file written in parts.")
    notice = (f"The reply stopped at the output limit in a tool call ({names}); the call was not run, and the "
              "model was asked to do it in smaller steps.")
    return note, notice


def continuation(count: int) -> tuple[str, str] | None:
    """(what the model reads, what the person is told) to go on after the ``count``-th cut-off text reply, or
    None when the turn has asked often enough."""
    if count > MAX_CONTINUATIONS:
        return None
    note = ("[anvil] Your reply stopped at the output limit. Continue exactly where it stopped, without "
            "repeating what you already wrote.")
    return note, "The reply stopped at the output limit; anvil asked the model to continue."


def gave_up_notice() -> str:
    return (f"The reply stopped at the output limit again; anvil stopped asking the model to continue after "
            f"{MAX_CONTINUATIONS} times. Raise max_output_tokens, or ask for a shorter answer.")
