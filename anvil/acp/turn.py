"""One anvil session as an ACP session: prompt turns out as session updates, requests in as permission requests.

Everything the person must answer during a turn (an approval, a question, a plan) becomes a
session/request_permission. A client that cannot answer denies; a cancel (session/cancel) interrupts the
turn, and the permission request it cancelled denies too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from acp import tool_terminal_ref, update_agent_message_text, update_tool_call
from acp.schema import CurrentModeUpdate, RequestPermissionResponse

from anvil.acp.permissions import (
    PLAN_OPTIONS,
    approval_decision,
    approval_options,
    approval_tool_call,
    cannot_ask,
    plan_decision,
    plan_tool_call,
    question_answer,
    question_options,
    question_tool_call,
)
from anvil.acp.prompt import acp_prompt
from anvil.acp.updates import STOP_REASONS, TurnUpdates, Update, said
from anvil.core.events import (
    ApprovalRequested,
    Event,
    Notice,
    PlanDecision,
    PlanProposed,
    QuestionAsked,
    ToolCallStarted,
    TurnEnded,
)
from anvil.facade import SessionFacade
from anvil.frontend.prompt import prompt_turn


class AcpSession:
    """A facade and the connection it reports to. One turn at a time; a second prompt waits for the first."""

    def __init__(self, facade: SessionFacade, client: Any) -> None:
        self.facade = facade
        self.client = client
        self.id = facade.id
        self.notices: list[str] = []  # told at the next chance: no update may precede the session's creation
        self._lock = asyncio.Lock()
        self._cancelled = asyncio.Event()
        self._answer_in_chat = False  # the person chose to answer a question in their next message
        self._mode = facade.mode
        self._updates: TurnUpdates | None = None
        self._running_call: str | None = None
        facade.on_notice(self.notices.append)

    async def send(self, update: Update | CurrentModeUpdate) -> None:
        with contextlib.suppress(ConnectionError):  # the editor went away: the turn still ends properly
            await self.client.session_update(session_id=self.id, update=update)

    async def tell(self) -> None:
        """The notices kept since the last chance (an MCP server that failed, a warning from opening)."""
        while self.notices:
            for update in said(Notice(self.notices.pop(0))):
                await self.send(update)

    # -- turns ---------------------------------------------------------------------------------------------

    async def prompt(self, blocks: Sequence[Any]) -> str:
        async with self._lock:
            self._cancelled.clear()
            self._answer_in_chat = False
            await self.tell()
            updates = self._updates = TurnUpdates(self.facade.root)
            ended: TurnEnded | None = None
            try:
                async for event in prompt_turn(self.facade, acp_prompt(blocks, self.facade.root)):
                    await self._answer(event)
                    for update in updates.of(event):
                        await self.send(update)
                    if isinstance(event, ToolCallStarted):
                        self._running_call = event.call_id
                    elif isinstance(event, TurnEnded):
                        ended = event
                    await self._follow_mode()
                    await self.tell()
            finally:
                self._updates = self._running_call = None
            if self._answer_in_chat:
                return "end_turn"
            if self._cancelled.is_set() or ended is None:
                return "cancelled"
            return STOP_REASONS.get(ended.reason, "end_turn")

    def cancel(self) -> None:
        self._cancelled.set()
        self.facade.interrupt()

    async def set_mode(self, mode: str) -> None:
        self._mode = self.facade.set_mode(mode)

    async def _follow_mode(self) -> None:
        """A mode the turn changed (an approved plan leaves plan mode) is told to the client."""
        if self.facade.mode != self._mode:
            self._mode = self.facade.mode
            await self.send(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=self._mode))

    async def show_terminal(self, terminal_id: str) -> None:
        """The editor's terminal a command runs in, shown in the call that runs it."""
        if self._running_call is not None:
            call = self._updates.call_id(self._running_call) if self._updates else self._running_call
            await self.send(update_tool_call(call, status="in_progress", content=[tool_terminal_ref(terminal_id)]))

    # -- what the person answers ---------------------------------------------------------------------------

    async def _answer(self, event: Event) -> None:
        match event:
            case ApprovalRequested(future=future) if future is not None:
                event.answer(await self._approve(event))
            case QuestionAsked(future=future) if future is not None:
                event.answer(await self._question(event))
            case PlanProposed(future=future) if future is not None:
                event.answer(await self._plan(event))

    async def _approve(self, event: ApprovalRequested) -> Any:
        root = self.facade.root
        call = approval_tool_call(event, root)
        if self._updates is not None:
            call = call.model_copy(update={"tool_call_id": self._updates.call_id(event.call_id)})
        response = await self._ask(call, approval_options(event, root))
        if isinstance(response, str):
            return cannot_ask(response)
        return approval_decision(event, response)

    async def _question(self, event: QuestionAsked) -> str:
        response = await self._ask(question_tool_call(event), question_options(event))
        answer = "" if isinstance(response, str) else question_answer(event, response)
        if answer is None:  # the person answers in the chat: end the turn so they can
            self._answer_in_chat = True
            await self.send(update_agent_message_text(f"\n\n> {event.question}\n\n"))
            self.facade.interrupt()
            return ""
        return answer

    async def _plan(self, event: PlanProposed) -> PlanDecision:
        response = await self._ask(plan_tool_call(event), PLAN_OPTIONS)
        if isinstance(response, str):
            return PlanDecision(False, event.plan, f"The editor could not show the plan ({response}).")
        return plan_decision(event, response)

    async def _ask(self, call: Any, options: list[Any]) -> RequestPermissionResponse | str:
        """The client's answer, or why it could not give one. A cancelled turn's request ends with it."""
        request = asyncio.ensure_future(self.client.request_permission(session_id=self.id, tool_call=call,
                                                                       options=options))
        cancelled = asyncio.ensure_future(self._cancelled.wait())
        try:
            await asyncio.wait({request, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            request.cancel()
            raise
        finally:
            cancelled.cancel()
        if not request.done():  # cancelled, and the client did not answer the request itself
            request.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await request
            return "the turn was cancelled"
        if (error := request.exception()) is not None:  # not implemented, a broken answer, a lost connection
            return str(error) or type(error).__name__
        return request.result()
