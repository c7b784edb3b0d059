"""What anvil says when its own code fails: one line for the person or the model, the traceback in a file.

A bug in a tool, a hook, the policy or a front end's handler must never end the session with a traceback on
the screen. The handler boundaries (one tool call, one turn, one rendered event, one slash command) catch
it, show :func:`one_line`, and keep the details in ``<data_dir>/errors.log`` (0600, cut at 1 MB) for a bug
report. The front ends use this too.
"""

from __future__ import annotations

import contextlib
import os
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from anvil.core.events import ErrorEvent, Event, TurnEnded
from anvil.core.loop.interrupt import INTERRUPTED, Interrupted
from anvil.core.private_files import open_private, private_dir

if TYPE_CHECKING:
    from anvil.core.loop.history import History
    from anvil.core.loop.turn import TurnState
    from anvil.core.tools.base import ToolContext

LOG_NAME = "errors.log"
LOG_LIMIT = 1_000_000  # bytes; beyond that the log starts over (the previous one is kept as errors.log.1)


def one_line(exc: BaseException) -> str:
    """The exception in one line: its type and message, an OS error as its reason and file."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        text = f"{exc.strerror}{where}"
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:299] + "…"


def log_failure(data_dir: Path | None, where: str, exc: BaseException) -> Path | None:
    """Append the traceback to the error log; returns its path, or None when it could not be written."""
    if data_dir is None:
        return None
    path = data_dir / LOG_NAME
    try:
        private_dir(data_dir)
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > LOG_LIMIT:
                os.replace(path, path.with_name(LOG_NAME + ".1"))
        text = (f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {where}\n"
                + "".join(traceback.format_exception(exc)))
        fd = open_private(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, text.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        return None
    return path


def report(data_dir: Path | None, where: str, exc: BaseException) -> str:
    """One line saying ``where`` failed and why, pointing to the logged details."""
    logged = log_failure(data_dir, where, exc)
    details = f" (details in {logged})" if logged else ""
    return f"{where} failed: {one_line(exc)}{details}"


def end_broken_turn(history: History, ctx: ToolContext, turn: TurnState, exc: Exception) -> list[Event]:
    """End a turn that anvil's own code broke: every open tool call gets a result, the error is one line (details
    in the error log), and the turn ends as an error, so the next message or a resume goes on from there."""
    events: list[Event] = []
    if isinstance(exc, Interrupted):
        message, turn.reason = INTERRUPTED, "interrupted"
    else:
        message = report(ctx.data_dir, "anvil's turn", exc) + ". The session is saved: send a message to go on."
        events, turn.reason = [ErrorEvent(message, kind="internal")], "error"
    with contextlib.suppress(Exception):  # recording may be what broke: the events are shown all the same
        for call in history.open_calls():
            history.add_tool_result(call, f"Not run: {message}")
        for event in events:
            history.record(event)
    with contextlib.suppress(Exception):
        ctx.checkpoints.finish_turn(turn.number)
    ended = TurnEnded(turn.number, turn.reason, turn.iterations, message)
    with contextlib.suppress(Exception):
        history.record(ended)
    return [*events, ended]
