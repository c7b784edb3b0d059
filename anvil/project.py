"""Which project a directory belongs to. Standard library only: the app asks before its first paint."""

from __future__ import annotations

from pathlib import Path


def find_project_root(start: Path) -> Path:
    """The project a directory belongs to: the nearest directory at or above ``start`` holding ``.anvil/`` or
    ``.git`` (a repository's root, also a worktree's or a submodule's), else ``start`` itself. Sessions, the
    project's config and its rules are found from any subdirectory this way. The walk stops below the home
    directory and the file system's root: a home directory kept in git is nobody's project."""
    start = start.resolve()
    home = Path.home().resolve()
    for directory in (start, *start.parents):
        if directory in (home, Path(directory.anchor)) and directory != start:
            break
        if (directory / ".anvil").is_dir() or (directory / ".git").exists():
            return directory
    return start
