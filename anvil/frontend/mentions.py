"""@path mentions: finding project files to complete, and attaching the mentioned files to a message.

Shared by the TUI and the plain REPL (so it imports no UI library): the same rules in both front ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from anvil.core.safe_git import run_git

MAX_ATTACH_BYTES = 200_000
#: a bound on what a completion menu keeps in memory; ripgrep lists a large monorepo well within it
MAX_FILES = 500_000
MENTION = re.compile(r"(?<!\S)@([^\s@]+)")
SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
             "dist", "build", ".tox"}
LIST_TIMEOUT = 30.0


def list_project_files(root: Path, limit: int = MAX_FILES) -> list[str]:
    """Project files relative to root, sorted: ripgrep's listing (``rg --files``: .gitignore respected with or
    without git, fast on large trees), else git's list, else a walk."""
    for lister in (_ripgrep_files, _git_files):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            files = lister(root)
            if files:
                return sorted(files)[:limit]
    return _walk(root, limit)


def _ripgrep_files(root: Path) -> list[str]:
    from anvil.core.tools.search.ripgrep import find_rg  # not before the TUI's first paint

    rg = find_rg()
    if rg is None:
        return []
    skipped = ["--glob", "!.git", *(arg for name in sorted(SKIP_DIRS) for arg in ("--glob", f"!{name}/"))]
    out = subprocess.run([rg, "--files", "--hidden", "--no-require-git", "--no-messages", *skipped, "."], cwd=root,
                         capture_output=True, text=True, timeout=LIST_TIMEOUT, stdin=subprocess.DEVNULL)
    if out.returncode not in (0, 1):  # 1: no files at all
        return []
    return [line.removeprefix("./") for line in out.stdout.splitlines() if line]


def _git_files(root: Path) -> list[str]:
    out = run_git(root, "ls-files", "--cached", "--others", "--exclude-standard",  # runs no repository config
                  timeout=LIST_TIMEOUT)
    return [line for line in out.stdout.splitlines() if line] if out is not None and out.returncode == 0 else []


def _walk(root: Path, limit: int) -> list[str]:
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        rel = Path(dirpath).relative_to(root)
        for name in sorted(filenames):
            found.append((rel / name).as_posix())
            if len(found) >= limit:
                return found
    return found


def match_files(files: Iterable[str], query: str, limit: int = 20) -> list[str]:
    """Paths containing the query, the ones whose name starts with it first, then the shortest."""
    q = query.lower()
    hits = [f for f in files if q in f.lower()]
    hits.sort(key=lambda f: (not Path(f).name.lower().startswith(q), not f.lower().startswith(q), len(f), f))
    return hits[:limit]


@dataclass
class Expanded:
    text: str
    attached: list[str]
    problems: list[str]


def expand_mentions(text: str, root: Path, max_bytes: int = MAX_ATTACH_BYTES) -> Expanded:
    """The message with the content of every ``@path`` that names a project file appended to it (capped)."""
    attached: list[str] = []
    problems: list[str] = []
    blocks: list[str] = []
    root = root.resolve()
    for match in MENTION.finditer(text):
        rel = match.group(1).rstrip(".,;:!?)")
        path = (root / rel).resolve()
        if rel in attached or not path.is_file() or not path.is_relative_to(root):
            continue
        try:
            data = path.read_bytes()
        except OSError as exc:
            problems.append(f"@{rel}: {exc.strerror}")
            continue
        if len(data) > max_bytes or b"\0" in data[:8000]:
            problems.append(f"@{rel} was not attached (binary or over {max_bytes // 1000} kB); "
                            "the model can read it with read_file.")
            continue
        attached.append(rel)
        blocks.append(f'<file path="{rel}">\n{data.decode("utf-8", errors="replace").rstrip()}\n</file>')
    if not blocks:
        return Expanded(text, [], problems)
    return Expanded(f"{text}\n\nAttached files:\n" + "\n".join(blocks), attached, problems)
