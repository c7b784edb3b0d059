"""Every process an unsandboxed command started, found and ended: ``setsid`` daemons and ``nohup`` jobs too.

A process group is not enough: ``setsid`` (or a daemon's double fork) leaves it. Every command gets a tag in
its environment (:data:`TAG_VARIABLE`), which every process it starts inherits, and the processes carrying a
tag are found by reading ``/proc/<pid>/environ``. A program that clears its environment on purpose escapes
this (the sandbox's pid namespace does not have that hole); cgroups would not, but they are not available
to an unprivileged process on most machines.

Measured on a machine with 300 processes: a scan takes about 2 ms; it runs only when a command is stopped
(its timeout, kill_command, the end of the session), never on the way of a command that ends by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Collection

from anvil.core.process_groups import KILL_GRACE

TAG_VARIABLE = "ANVIL_PROCESS_TAG"


def tagged_pids(tags: str | Collection[str]) -> list[int]:
    """Live processes whose environment carries one of ``tags``."""
    if not os.path.isdir("/proc"):
        return []
    wanted = {f"{TAG_VARIABLE}={tag}".encode() for tag in ([tags] if isinstance(tags, str) else tags)}
    if not wanted:
        return []
    own = os.getpid()
    found: list[int] = []
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit() or int(entry.name) == own:
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as f:
                    environ = f.read()
            except OSError:  # gone, or another user's
                continue
            if TAG_VARIABLE.encode() in environ and wanted.intersection(environ.split(b"\0")):
                found.append(int(entry.name))
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


async def end_tagged(tags: str | Collection[str], *, grace: float = KILL_GRACE) -> int:
    """SIGTERM every process carrying one of the tags, SIGKILL what is left after ``grace``; how many there were."""
    pids = tagged_pids(tags)
    if not pids:
        return 0
    _signal_all(pids, signal.SIGTERM)
    _signal_all(pids, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        if not tagged_pids(tags):
            return len(pids)
    _signal_all(tagged_pids(tags), signal.SIGKILL)
    return len(pids)


async def kill_launched(process: asyncio.subprocess.Process, tag: str) -> None:
    """A launched command that ran out of time (or whose caller was cancelled) ends at once: its process group,
    anything else carrying its tag (a sandbox's processes leave the group), then it is reaped."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await end_tagged(tag, grace=0)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(process.wait(), 5)
