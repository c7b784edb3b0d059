"""Automatic fixers: cheap, deterministic repairs tried on failed checks before the model spends calls on them.

When the final verification fails, the fixers for the files the turn changed run first (for Python, by default,
``ruff check --fix`` then ``ruff format``), then the checks run again; only what is still failing goes back to
the model. Lint findings that a tool can fix cost no model call that way.

Fixers are command templates per language or extension, as ``lint`` is (``{paths}`` becomes the files, relative
to the project root; without it they are appended). They run without a shell, in the session's OS sandbox (they
read what the model wrote), each with a time limit. A fixer whose program is not installed is skipped quietly: a
project without ruff verifies as before. Their exit status is not a verdict (``ruff check --fix`` exits 1 while
unfixable findings remain): the checks that run next are.

Every file a fixer may change is recorded in the turn's checkpoints first, so undo covers it, and what they changed
comes back as a unified diff for the person and the task's result.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from anvil.core.sandbox.lifetime import kill_launched
from anvil.core.sandbox.sandbox import Sandbox, SandboxUnavailable
from anvil.core.session.checkpoints import CheckpointStore, NullCheckpointStore
from anvil.core.tools.files.lint import LANGUAGES, installed
from anvil.core.tools.files.textdiff import unified_diff

#: the fixers anvil runs when the settings name none for a language
DEFAULT_FIXERS: dict[str, tuple[str, ...]] = {
    "python": ("ruff check --fix --quiet {paths}", "ruff format --quiet {paths}"),
}
FIXER_TIMEOUT = 60.0
Fixers = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class FixOutcome:
    """What one round of fixers did: the commands that ran, the files they changed and how, what went wrong."""

    commands: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    diff: str = ""
    problems: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.files)


def fixers_for(path: Path, fixers: Fixers) -> tuple[str, ...]:
    """The fixer templates for ``path``: by extension (``.py`` or ``py``), language (``python``) or file name."""
    table = {key.lower(): tuple(commands) for key, commands in fixers.items()}
    suffix = path.suffix.lower()
    for key in (suffix, suffix.lstrip("."), LANGUAGES.get(suffix), path.name.lower()):
        if key and key in table:
            return table[key]
    return ()


def plan_fixes(paths: Sequence[Path], fixers: Fixers) -> list[tuple[str, list[Path]]]:
    """(template, the files it runs on) in a stable order: each template once, on all of its files."""
    plan: dict[str, list[Path]] = {}
    for path in sorted(set(paths)):
        for template in fixers_for(path, fixers):
            plan.setdefault(template, []).append(path)
    return list(plan.items())


def fixer_argv(template: str, relative_paths: Sequence[str]) -> list[str]:
    """The argument list of ``template`` for these files; raises ValueError for unbalanced quotes."""
    parts = shlex.split(template)
    if "{paths}" not in parts:
        return [*parts, *relative_paths]
    at = parts.index("{paths}")
    return [*parts[:at], *relative_paths, *parts[at + 1:]]


async def run_fixers(paths: Sequence[Path], root: Path, fixers: Fixers, *, sandbox: Sandbox | None = None,
                     checkpoints: CheckpointStore | None = None, timeout: float = FIXER_TIMEOUT) -> FixOutcome:
    """Run the fixers for ``paths`` (files the turn changed, absolute); what they changed, as a diff."""
    existing = [p for p in paths if p.is_file()]
    plan = plan_fixes(existing, fixers)
    if not plan:
        return FixOutcome()
    before = {path: _read(path) for _, files in plan for path in files}
    store = checkpoints or NullCheckpointStore()
    for path, data in before.items():
        store.record(path, data)  # the first original of the turn is kept: undo covers the fixers too
    sandbox = sandbox or Sandbox.disabled(root)
    ran: list[str] = []
    problems: list[str] = []
    for template, files in plan:
        shown, problem = await _run_one(template, [_relative(p, root) for p in files], root, sandbox, timeout)
        if shown:
            ran.append(shown)
        if problem:
            problems.append(problem)
    changed: list[str] = []
    diffs: list[str] = []
    for path, old in before.items():
        new = _read(path)
        if new != old and old is not None and new is not None:
            label = _relative(path, root)
            changed.append(label)
            diffs.append(unified_diff(old.decode("utf-8", "replace"), new.decode("utf-8", "replace"), label))
    return FixOutcome(tuple(ran), tuple(changed), "".join(diffs), tuple(problems))


async def _run_one(template: str, files: list[str], root: Path, sandbox: Sandbox,
                   timeout: float) -> tuple[str | None, str | None]:
    """(the command as shown, a problem) for one fixer; (None, None) when its program is not installed."""
    try:
        argv = fixer_argv(template, files)
    except ValueError:
        return None, f"the fixer {template!r} has unbalanced quotes; it was skipped"
    if not argv or not installed(argv[0], root):
        return None, None
    shown = shlex.join(argv)
    try:
        launch = await sandbox.launch(argv, root)
    except SandboxUnavailable as exc:
        return None, f"`{shown}` was not run: {exc}"
    try:
        process = await asyncio.create_subprocess_exec(
            *launch.argv, cwd=root, env=launch.env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return None, f"`{shown}` could not start: {exc.strerror or exc}"
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        await kill_launched(process, launch.tag)
        if isinstance(exc, asyncio.CancelledError):
            raise
        return shown, f"`{shown}` did not finish within {timeout:g}s and was stopped"
    return shown, None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
