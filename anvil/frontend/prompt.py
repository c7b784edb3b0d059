"""From what the person typed to what the model gets: a command or a message, attached files and resources.

``@path`` attaches a project file (:mod:`anvil.frontend.mentions`), ``@server:uri`` an MCP resource;
``//`` at the start sends a message that begins with a slash. The problems found on the way (a file too
big, a resource that failed) reach the person as notices, in the turn's own stream of events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from anvil.frontend.mentions import expand_mentions

if TYPE_CHECKING:
    from anvil.core.events import Event
    from anvil.facade import SessionFacade


@dataclass(frozen=True)
class Prompt:
    """A message ready to send: ``typed`` as the person wrote it, ``text`` with the mentioned files appended."""

    typed: str
    text: str
    attached: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def is_command(typed: str) -> bool:
    """A slash command, not a message (``//`` escapes the slash)."""
    return typed.startswith("/") and not typed.startswith("//")


def prepare_prompt(typed: str, root: Path) -> Prompt:
    """The message with every ``@path`` that names a project file attached (fast: no network, small files)."""
    message = typed[1:] if typed.startswith("//") else typed
    expanded = expand_mentions(message, root)
    return Prompt(message, expanded.text, tuple(expanded.attached), tuple(expanded.problems))


async def prompt_turn(session: SessionFacade, prompt: Prompt) -> AsyncIterator[Event]:
    """A turn for ``prompt``: its MCP resources attached first, every problem as a notice, then the turn."""
    from anvil.core.events import Notice

    text, problems = await session.attach_resources(prompt.text)
    for problem in (*prompt.problems, *problems):
        yield Notice(problem)
    async for event in session.submit(text):
        yield event


#: what the model is sent to go on with a reply a dropped connection cut short
CONTINUE_TEXT = ("The connection dropped in the middle of your last reply. Continue it from exactly where it "
                 "stopped, without repeating what you already wrote.")
#: how the person continues after a dropped connection, in the app and in --plain
CONTINUE_KEYS = "Press Enter on an empty prompt (or type /continue) to have the model go on."
#: the same, headless: the session is resumed with a prompt
CONTINUE_HEADLESS = "Go on with: anvil -c -p continue"
#: the same, in an editor (ACP): a message
CONTINUE_MESSAGE = "Send \"continue\" to have the model go on."


def continuation(session: SessionFacade) -> Prompt | None:
    """What Enter on an empty prompt (or /continue) sends: the model goes on with a reply a dropped connection
    cut short; None when the last reply was not cut."""
    return Prompt("/continue", CONTINUE_TEXT) if session.can_continue else None


def problem_notices(prompt: Prompt) -> list[Event]:
    """The problems of a prompt that is not sent as a turn of its own (a message typed during a turn)."""
    from anvil.core.events import Notice

    return [Notice(problem) for problem in prompt.problems]
