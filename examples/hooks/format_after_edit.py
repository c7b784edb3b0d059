#!/usr/bin/env python3
"""post_tool_use hook: format the file the model just edited or wrote.

Python goes through ``ruff format``; JavaScript, TypeScript, CSS, JSON, Markdown, YAML and HTML through
``prettier`` (the project's ``node_modules/.bin/prettier`` first, then one on PATH). A missing formatter,
an unknown file type or a formatter error is skipped quietly: formatting is a nicety, never a reason to
interrupt the model. When the file changed, the hook tells the model (as JSON ``additional_context``),
because its next edit must start from the formatted text.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

PRETTIER_SUFFIXES = {".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".css", ".scss", ".less", ".json", ".md",
                     ".yaml", ".yml", ".html", ".vue"}
TIMEOUT = 20


def formatter(path: Path, project: Path) -> list[str] | None:
    if path.suffix == ".py" or path.suffix == ".pyi":
        ruff = shutil.which("ruff")
        return [ruff, "format", "--quiet", str(path)] if ruff else None
    if path.suffix.lower() in PRETTIER_SUFFIXES:
        local = project / "node_modules" / ".bin" / "prettier"
        prettier = str(local) if local.is_file() else shutil.which("prettier")
        return [prettier, "--write", str(path)] if prettier else None
    return None


def main() -> int:
    try:
        event = json.load(sys.stdin)
    except json.JSONDecodeError:
        return 0
    result = event.get("tool_result") or {}
    raw = (event.get("tool_input") or {}).get("path")
    if not result.get("ok") or not isinstance(raw, str):
        return 0  # a failed edit changed nothing to format
    project = Path(os.environ.get("ANVIL_PROJECT_DIR") or event.get("cwd") or ".")
    path = Path(raw) if Path(raw).is_absolute() else project / raw
    command = formatter(path, project)
    if command is None or not path.is_file():
        return 0
    before = path.read_bytes()
    try:
        subprocess.run(command, cwd=project, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT,
                       check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    if path.read_bytes() != before:
        tool = Path(command[0]).name
        print(json.dumps({"additional_context": f"The format_after_edit hook reformatted {raw} with {tool}. "
                                                "Read the file again before editing it."}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
