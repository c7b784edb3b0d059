"""Keeping model-supplied paths inside the project (or a directory the person allowed)."""

from __future__ import annotations

import os
from pathlib import Path

from anvil.core.tools.errors import ToolError


def resolve_path(path: str, root: Path, allowed_dirs: list[Path] | None = None) -> Path:
    """Resolve ``path`` against ``root`` following symlinks; refuse anything that lands outside.

    ``..``, absolute paths and symlinks are all judged by where they finally point, so a link
    inside the project to ``/etc`` is refused just like ``/etc`` itself.
    """
    if not path or not path.strip():
        raise ToolError("The path is empty. Give a path relative to the project root.")
    try:
        resolved = as_given(path, root).resolve()
    except OSError as exc:  # a link loop, or a link swapped for a directory while it was being followed
        raise ToolError(f"'{path}' cannot be resolved ({exc.strerror}): a symbolic link on its way loops or "
                        "changed meanwhile. Check the path (list_files) and retry.") from None
    for base in [root, *(allowed_dirs or [])]:
        base = base.resolve()
        if resolved == base or resolved.is_relative_to(base):
            return resolved
    raise ToolError(
        f"'{path}' resolves to {resolved}, which is outside the project ({root}). Use a path inside the "
        "project; the person can allow other directories with `allowed_dirs` in .anvil/config.toml."
    )


def as_given(path: str, root: Path) -> Path:
    """``path`` made absolute against ``root`` without touching the file system (``~`` expanded)."""
    expanded = os.path.expanduser(path.strip())
    return Path(expanded) if os.path.isabs(expanded) else root / expanded


def lexical_path(path: str, root: Path) -> Path:
    """Where ``path`` points judged by its text alone: ``.`` and ``..`` folded, no symlink followed.

    The approval policy and the tool that writes compute the same answer from the same text, whatever
    happens on disk in between.
    """
    return Path(os.path.normpath(as_given(path, root)))


def default_user_config_dir() -> Path:
    """``$XDG_CONFIG_HOME/anvil`` (``~/.config/anvil``): where the person's own settings and rules live."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "anvil"
