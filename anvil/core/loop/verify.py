"""Final verification: the project's own checks, run when a turn that changed files is about to end.

The commands come from the ``verify`` setting (e.g. ``["ruff check .", "pytest -q"]``) and run in order in
the project root, in the session's OS sandbox, each in its own process group with a timeout. A failure goes
back to the model as a short, focused message (the command, its exit status and the tail of its output, where
errors usually are), and the turn goes on for a bounded number of extra model calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from anvil.core.context.snapshot import ENGINE_MARK
from anvil.core.sandbox.lifetime import kill_launched
from anvil.core.sandbox.sandbox import Sandbox, SandboxUnavailable

TAIL_LINES = 60
TAIL_CHARS = 4000


@dataclass(frozen=True)
class CheckResult:
    command: str
    ok: bool
    exit_code: int | None
    output: str
    duration: float
    timed_out: bool = False

    @property
    def status(self) -> str:
        if self.timed_out:
            return "timed out"
        if self.exit_code is None:
            return "could not start"
        return "passed" if self.ok else f"failed (exit {self.exit_code})"


def tail(output: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    kept = output.rstrip("\n").splitlines()[-lines:]
    text = "\n".join(kept)
    if len(text) > chars:
        text = "..." + text[-chars:]
    return text


async def run_check(command: str, root: Path, timeout: float, sandbox: Sandbox | None = None,
                    env: Mapping[str, str] | None = None) -> CheckResult:
    """One command, in the session's sandbox (the model wrote the code it checks); ``env``: its environment
    (default: anvil's)."""
    started = time.monotonic()
    sandbox = sandbox or Sandbox.disabled(root)
    try:
        launch = await sandbox.launch(["/bin/sh", "-c", command], root, env=env)
    except SandboxUnavailable as exc:
        return CheckResult(command, False, None, str(exc), 0.0)
    try:
        process = await asyncio.create_subprocess_exec(
            *launch.argv, cwd=root, env=launch.env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True)  # its own group: a timeout kills it all
    except OSError as exc:
        return CheckResult(command, False, None, f"Could not start the command: {exc}", 0.0)
    try:
        out, _ = await asyncio.wait_for(process.communicate(), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        await kill_launched(process, launch.tag)
        if isinstance(exc, asyncio.CancelledError):
            raise
        return CheckResult(command, False, None, f"No result within {timeout:g}s; the command was stopped.",
                           time.monotonic() - started, timed_out=True)
    text = out.decode("utf-8", errors="replace")
    ok = process.returncode == 0
    block = None if ok else sandbox.find_block(launch, text, root)
    if block is not None:  # the model should read what the sandbox refused before the command's own words
        text = f"{block.text()}\n{text}"
    return CheckResult(command, ok, process.returncode, text, time.monotonic() - started)


async def run_checks(commands: list[str], root: Path, timeout: float, sandbox: Sandbox | None = None,
                     env: Mapping[str, str] | None = None) -> list[CheckResult]:
    """Every command, in order: all failures are worth seeing at once, not only the first."""
    return [await run_check(command, root, timeout, sandbox, env) for command in commands]


def failure_message(failures: list[CheckResult], retries_left: int) -> str:
    """The user-role message that gives the model the failures, focused on what it needs to fix."""
    parts = [f"{ENGINE_MARK} Verification after your changes failed. anvil ran the project's checks in the "
             "project root:"]
    for result in failures:
        parts.append(f"\n$ {result.command}\n{result.status}, last lines of output:\n{tail(result.output)}")
    parts.append(f"\nFix the cause (not the checks), then finish; the checks run again when you stop. "
                 f"{retries_left} more model calls are allowed for this.")
    return "\n".join(parts)


def report(results: list[CheckResult], changed: bool = True, *, fixed_files: Sequence[str] = (),
           model_fixed: bool = False) -> str:
    """One honest sentence for the person about the last verification run, and who fixed what on the way:
    ``fixed_files`` the automatic fixers changed, ``model_fixed`` failures went back to the model."""
    failed = [r for r in results if not r.ok]
    names = ", ".join(f"`{r.command}`" for r in results)
    fixers = f" The automatic fixers changed {', '.join(dict.fromkeys(fixed_files))}." if fixed_files else ""
    if not failed:
        model = " The model fixed the failures handed back to it." if model_fixed else ""
        return f"Verification passed: {names}.{fixers}{model}"
    detail = "; ".join(f"`{r.command}` {r.status}: {_last_line(r.output)}" for r in failed)
    why = "" if changed else " The model stopped without changing anything after the failure."
    rerun = " and ".join(f"`{r.command}`" for r in failed)
    return (f"Verification still failing: {detail}.{why}{fixers} Run {rerun} in the project root to see the whole "
            "output, or ask anvil to keep fixing it.")


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return (lines[-1][:160] if lines else "(no output)")
