"""A run's workspace: a fresh copy of the task's starting point, and the diff of what the run changed in it.

Folder tasks are copied (their starting files, or nothing); repository tasks are cloned from the local repository
and checked out at the task's ref, so the run never touches the original. The final diff is ``git diff`` in a
clone and a file-by-file comparison with the starting copy in a folder, leaving out caches and compiled files.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

DIFF_LIMIT = 200_000  # characters of a run's diff kept in its record
_SKIPPED_DIRS = {".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".venv", "node_modules"}
_SKIPPED_SUFFIXES = {".pyc", ".pyo"}
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "anvil eval",
            "GIT_AUTHOR_EMAIL": "eval@anvil.invalid", "GIT_COMMITTER_NAME": "anvil eval",
            "GIT_COMMITTER_EMAIL": "eval@anvil.invalid"}


class WorkspaceError(Exception):
    """The starting point could not be laid out; the message says what failed."""


@dataclass
class Workspace:
    root: Path
    git: bool = False
    #: a folder task's starting files, to diff against
    baseline: dict[str, bytes] = field(default_factory=dict)

    def diff(self) -> str:
        """What the run changed, as a unified diff (cut at :data:`DIFF_LIMIT` characters, saying so)."""
        text = self._git_diff() if self.git else folder_diff(self.baseline, snapshot(self.root))
        if len(text) > DIFF_LIMIT:
            text = text[:DIFF_LIMIT] + f"\n[diff cut: {len(text):,} characters in all]\n"
        return text

    def apply_patch(self, patch: str) -> str | None:
        """Apply a patch (a test patch) in a clone; what went wrong, or None."""
        result = git(self.root, "apply", "--whitespace=nowarn", "-", stdin=patch)
        return None if result.returncode == 0 else f"the test patch did not apply: {result.stderr.strip()[:300]}"

    def _git_diff(self) -> str:
        git(self.root, "add", "-A")
        return git(self.root, "-c", "core.quotepath=off", "diff", "--cached", "HEAD").stdout


def git(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, input=stdin, timeout=600,
                          env={**os.environ, **_GIT_ENV})


def prepare(root: Path, *, files: Path | None = None, repo: Path | None = None, ref: str | None = None) -> Workspace:
    """Lay the starting point out in the empty folder ``root``."""
    if repo is not None:
        cloned = git(root.parent, "clone", "--quiet", "--no-hardlinks", str(repo), str(root))
        if cloned.returncode != 0:
            raise WorkspaceError(f"git clone of {repo} failed: {cloned.stderr.strip()[:300]}")
        if ref:
            checked = git(root, "checkout", "--quiet", "--detach", ref)
            if checked.returncode != 0:
                raise WorkspaceError(f"{repo} has no ref {ref}: {checked.stderr.strip()[:300]}")
        return Workspace(root, git=True)
    root.mkdir(parents=True, exist_ok=True)
    if files is not None:
        shutil.copytree(files, root, dirs_exist_ok=True, symlinks=True)
    return Workspace(root, baseline=snapshot(root))


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, caches and compiled files left out."""
    found: dict[str, bytes] = {}
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(names):
            path = Path(directory) / name
            if path.suffix in _SKIPPED_SUFFIXES or path.is_symlink():
                continue
            try:
                found[path.relative_to(root).as_posix()] = path.read_bytes()
            except OSError:
                continue
    return found


def folder_diff(before: dict[str, bytes], after: dict[str, bytes]) -> str:
    """A unified diff between two snapshots; binary files are named, not shown."""
    parts: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if _binary(old) or _binary(new):
            parts.append(f"Binary file {name} {'added' if old is None else 'removed' if new is None else 'changed'}\n")
            continue
        old_lines = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new_lines = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
        lines = difflib.unified_diff(old_lines, new_lines, "/dev/null" if old is None else f"a/{name}",
                                     "/dev/null" if new is None else f"b/{name}")
        parts.append("".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                             for line in lines))
    return "".join(parts)


def _binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:8192]
