"""What a slash command asks of its front end: text to show, a question to ask, work to carry out.

A handler in :mod:`anvil.frontend.commands` returns a :data:`Reply`, a list of these effects; each front end
carries them out in its own way (a transcript entry or a printed line, a modal or a typed answer) and decides
nothing itself. Imported before the TUI's first paint: nothing of the engine is loaded at import time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from anvil.core.events import Event, TodoItem
    from anvil.facade import SessionFacade

ShowKind = Literal["notice", "error", "help"]
NOTHING_CHANGED = "Nothing was changed."


@dataclass(frozen=True)
class Show:
    """Text to show: ``notice`` a line, ``error`` a line marked as a failure, ``help`` a block (lists, help)."""

    text: str
    kind: ShowKind = "notice"
    #: for ``help``: the (name, description) rows ``text`` lays out, so a front end can wrap each description
    #: under itself (a hanging indent) at its own width; ``text`` is what shows without that
    rows: tuple[tuple[str, str], ...] = ()


def hanging_rows(rows: tuple[tuple[str, str], ...], width: int, indent: int = 2) -> str:
    """``rows`` as two columns in ``width`` characters, each description wrapped under itself."""
    import textwrap

    left = max((len(name) for name, _ in rows), default=0)
    gap = " " * (indent + left + 2)
    body = max(20, width - len(gap))
    lines = []
    for name, description in rows:
        wrapped = textwrap.wrap(description, body) or [""]
        lines.append(f"{' ' * indent}{name:<{left}}  {wrapped[0]}")
        lines += [gap + more for more in wrapped[1:]]
    return "\n".join(lines)


@dataclass(frozen=True)
class Confirm:
    """A yes/no question; ``then`` runs on yes, ``otherwise`` is shown on no."""

    question: str
    then: Callable[[], Awaitable[Reply]]
    otherwise: str = NOTHING_CHANGED


@dataclass(frozen=True)
class RunEvents:
    """Events to render the way a turn's are, busy until they end (a compaction)."""

    events: AsyncIterator[Event]


@dataclass(frozen=True)
class Render:
    """Events to render at once (the context gauge after a rewind or a model switch)."""

    events: tuple[Event, ...]


@dataclass(frozen=True)
class SwitchModel:
    """Switch to model ``name``. Slow (building a litellm model may import it), so the front end runs
    :meth:`run` where keys keep coming, and holds prompts meanwhile."""

    name: str
    session: SessionFacade

    async def run(self, warm: Callable[[SessionFacade], Awaitable[None]] | None = None) -> Reply:
        """Switch, ``warm`` the new model up (the TUI loads what its first call needs), then count the
        conversation against its window and tokenizer for the gauge."""
        try:
            problem = await self.session.switch_model(self.name)
            if warm is not None:
                await warm(self.session)
            usage = await self.session.measure()
        except Exception as exc:  # the old model stays in use
            return [Show(f"/model failed: {type(exc).__name__}: {exc}", "error")]
        return [Render((usage,)), Show(f"Model switched to {self.name}." + (f" {problem}" if problem else ""))]


@dataclass(frozen=True)
class Replace:
    """Go on with ``session`` (a new or resumed one; the old one is closed): show it as at start-up."""

    session: SessionFacade


@dataclass(frozen=True)
class ShowTodos:
    todos: tuple[TodoItem, ...]


@dataclass(frozen=True)
class Exit:
    pass


Effect = Show | Confirm | RunEvents | Render | SwitchModel | Replace | ShowTodos | Exit
Reply = list[Effect]


async def follow(confirm: Confirm, yes: bool) -> Reply:
    """What comes after the person's answer to ``confirm``; a failure is shown, never raised."""
    if not yes:
        return [Show(confirm.otherwise)]
    try:
        return await confirm.then()
    except Exception as exc:
        return [Show(f"That failed: {type(exc).__name__}: {exc}", "error")]
