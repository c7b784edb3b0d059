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
    expanded = os.path.expanduser(path.strip())
    candidate = Path(expanded) if os.path.isabs(expanded) else root / expanded
    resolved = candidate.resolve()
    for base in [root, *(allowed_dirs or [])]:
        base = base.resolve()
        if resolved == base or resolved.is_relative_to(base):
            return resolved
    raise ToolError(
        f"'{path}' resolves to {resolved}, which is outside the project ({root}). Use a path inside the "
        "project; the person can allow other directories with `allowed_dirs` in .anvil/config.toml."
    )
