"""Process groups: every command anvil starts runs in its own group, so a timeout, an interrupt or the end of
the session can end everything it started. Used by the shell tools, hooks and verification alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

#: Seconds between SIGTERM and SIGKILL when a process group is stopped.
KILL_GRACE = 2.0

#: Variables that stop tools from paging, prompting, opening editors or colouring their output.
NONINTERACTIVE_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "GIT_TERMINAL_PROMPT": "0",
    # an editor would wait forever for a person: `true` makes `git commit` without -m fail at once instead
    "GIT_EDITOR": "true",
    "EDITOR": "true",
    "VISUAL": "true",
    "DEBIAN_FRONTEND": "noninteractive",
    "PIP_NO_INPUT": "1",
    # so background Python servers show their output as it happens, not when a buffer fills
    "PYTHONUNBUFFERED": "1",
    "ANVIL": "1",
    # an `anvil` that a command or hook runs is a one-off in its own process: a warm engine started there would be
    # confined (and ended) with the command, only costing a litellm import, and one outside refuses such a client
    "ANVIL_ENGINE": "off",
}


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """True while a process of the group still runs. Zombies do not count: a dead child whose
    parent was killed may wait a long time for a reaper, and it holds nothing."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):
        return True
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(os.path.join(entry.path, "stat"), encoding="utf-8", errors="replace") as f:
                    stat = f.read()
            except OSError:
                continue
            # the command name may contain spaces and parentheses; the fields after the last ")" are fixed
            fields = stat[stat.rfind(")") + 2:].split()
            if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                return True
    return False


async def terminate_group(pgid: int, grace: float = KILL_GRACE) -> None:
    """SIGTERM the group, give it ``grace`` seconds to clean up, then SIGKILL what is left."""
    signal_group(pgid, signal.SIGTERM)
    signal_group(pgid, signal.SIGCONT)  # a stopped process would never act on the SIGTERM
    if await _group_gone_within(pgid, grace):
        return
    signal_group(pgid, signal.SIGKILL)
    await _group_gone_within(pgid, 1.0)


async def _group_gone_within(pgid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"
