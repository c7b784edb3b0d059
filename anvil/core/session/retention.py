"""Keeping the data directory from growing without end: pruning sessions, expiring old checkpoints.

``anvil sessions --prune`` removes whole sessions (the session file, its checkpoints, its command logs) by
age and by count, with a dry run that lists them first: :func:`plan_prune` and :func:`apply_prune`.

Checkpoints are the large part (a copy of every file before every change), and they only serve undo in a
session someone may still go back to. Those of sessions untouched for ``days`` are removed when anvil starts
(:func:`expire_checkpoints`): two directory listings per session, and at most once every few hours.

Layout these rely on: ``sessions/<project>/<id>.jsonl``, ``checkpoints/<project>/<id>/``, ``logs/<id>/`` (and
``logs/<id>.subN/`` for sub-agents).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from anvil.core.private_files import open_private

DAY = 86_400.0
#: start-up expiry runs at most this often (seconds): the mark file's age says when it last ran
EXPIRY_INTERVAL = 6 * 3600.0
EXPIRY_MARK = ".last-expiry"


@dataclass(frozen=True)
class Prunable:
    """One session and everything anvil keeps for it."""

    session_id: str
    project: str  # the project's directory name under sessions/
    updated: float  # the session file's last change
    paths: tuple[Path, ...]
    size: int  # bytes, all paths together


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for current, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(current) / name).lstat().st_size
            except OSError:
                continue
    return total


def session_paths(data_dir: Path, project: str, session_id: str) -> list[Path]:
    """The session file, its checkpoints and its command logs (those that exist)."""
    paths = [data_dir / "sessions" / project / f"{session_id}.jsonl",
             data_dir / "checkpoints" / project / session_id,
             data_dir / "logs" / session_id]
    logs = data_dir / "logs"
    if logs.is_dir():
        paths += sorted(logs.glob(f"{session_id}.sub*"))
    return [p for p in paths if p.exists()]


def plan_prune(data_dir: Path, projects: list[str], *, older_than_days: float | None = None,
               keep: int | None = None, now: float | None = None) -> list[Prunable]:
    """The sessions of ``projects`` to remove: older than ``older_than_days`` (if given) and not among the
    ``keep`` newest of their project (if given). Oldest first."""
    now = time.time() if now is None else now
    chosen: list[Prunable] = []
    for project in projects:
        folder = data_dir / "sessions" / project
        dated = []
        for path in folder.glob("*.jsonl") if folder.is_dir() else []:
            try:
                dated.append((path.stat().st_mtime, path.stem))
            except OSError:
                continue
        dated.sort(reverse=True)  # newest first
        for rank, (updated, session_id) in enumerate(dated):
            if keep is not None and rank < keep:
                continue
            if older_than_days is not None and now - updated < older_than_days * DAY:
                continue
            paths = session_paths(data_dir, project, session_id)
            chosen.append(Prunable(session_id, project, updated, tuple(paths), sum(_size(p) for p in paths)))
    return sorted(chosen, key=lambda p: p.updated)


def apply_prune(plan: list[Prunable]) -> list[str]:
    """Remove what ``plan`` lists; returns the problems (one line each), if any."""
    problems = []
    for item in plan:
        for path in item.paths:
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
            except OSError as exc:
                problems.append(f"Could not remove {path}: {exc.strerror or exc}.")
    return problems


def all_projects(data_dir: Path) -> list[str]:
    folder = data_dir / "sessions"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def expire_checkpoints(data_dir: Path, days: float, *, keep: frozenset[str] | set[str] = frozenset(),
                       now: float | None = None, force: bool = False) -> int:
    """Remove the checkpoints of sessions untouched for ``days`` (0 or less keeps them forever), except the
    sessions in ``keep`` (the open one). Runs at most every :data:`EXPIRY_INTERVAL` unless ``force``.
    Returns how many sessions' checkpoints were removed."""
    root = data_dir / "checkpoints"
    if days <= 0 or not root.is_dir():
        return 0
    now = time.time() if now is None else now
    mark = root / EXPIRY_MARK
    with contextlib.suppress(OSError):
        if not force and now - mark.stat().st_mtime < EXPIRY_INTERVAL:
            return 0
    removed = 0
    for project in _folders(root):
        for folder in _folders(project):
            if folder.name not in keep and now - _last_touched(data_dir, project.name, folder) >= days * DAY:
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
    with contextlib.suppress(OSError):
        os.close(open_private(mark, os.O_WRONLY))  # 0600 like everything in the data dir, whatever the umask
        os.utime(mark, (now, now))
    return removed


def _folders(path: Path) -> list[Path]:
    try:
        return [child for child in path.iterdir() if child.is_dir() and not child.is_symlink()]
    except OSError:
        return []


def _last_touched(data_dir: Path, project: str, folder: Path) -> float:
    """When a session last did something: its file, its checkpoint folder, or one of its turns changed."""
    times = []
    for path in (data_dir / "sessions" / project / f"{folder.name}.jsonl", folder):
        try:
            times.append(path.stat().st_mtime)
        except OSError:
            continue
    with contextlib.suppress(OSError):
        times += [child.stat().st_mtime for child in folder.iterdir()]
    return max(times, default=0.0)
