"""Running the configured linter on a file the model just wrote or edited.

``ctx.settings.lint`` maps a key to a command template, e.g. ``{"python": "ruff check --output-format
concise {path}"}``. The key is the file's extension (``".py"`` or ``"py"``), its language (``"python"``) or
its exact name (``"Dockerfile"``). ``{path}`` becomes the file's path relative to the project root, where
the command runs (in the session's OS sandbox); without a placeholder the path is appended. Commands run
without a shell (so a path cannot inject anything); wrap them in ``sh -c '...'`` for pipes.

A linter that is not installed is skipped quietly: the edit succeeded, and the model cannot fix that.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
from pathlib import Path

from anvil.core.sandbox.lifetime import end_tagged
from anvil.core.sandbox.sandbox import SandboxUnavailable
from anvil.core.tools.base import ToolContext

#: Findings beyond this many characters are cut: the first ones are what the model fixes first.
LINT_OUTPUT_CHARS = 4000

LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescript",
    ".go": "go", ".rs": "rust", ".rb": "ruby", ".php": "php", ".lua": "lua", ".swift": "swift",
    ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".cs": "csharp",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell",
    ".css": "css", ".scss": "scss", ".html": "html", ".htm": "html", ".vue": "vue", ".svelte": "svelte",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".md": "markdown", ".sql": "sql",
}


def lint_command_for(path: Path, lint: dict[str, str]) -> str | None:
    """The configured command template for ``path``, if any."""
    if not lint:
        return None
    table = {key.lower(): command for key, command in lint.items()}
    suffix = path.suffix.lower()
    for key in (suffix, suffix.lstrip("."), LANGUAGES.get(suffix), path.name.lower()):
        if key and key in table:
            return table[key]
    return None


def lint_argv(template: str, relative_path: str) -> list[str]:
    """The argument list for ``template``; raises ValueError for unbalanced quotes."""
    parts = shlex.split(template)
    if not any("{path}" in part for part in parts):
        return [*parts, relative_path]
    return [part.replace("{path}", relative_path) for part in parts]


async def run_linter(path: Path, ctx: ToolContext) -> str | None:
    """The linter's findings for ``path``, formatted for the model; None when there is nothing to say."""
    template = lint_command_for(path, ctx.settings.lint)
    if not template:
        return None
    try:
        argv = lint_argv(template, ctx.display(path))
    except ValueError:
        return f"Lint skipped: the configured lint command {template!r} has unbalanced quotes."
    if not argv:
        return None
    shown = shlex.join(argv)
    if not installed(argv[0], ctx.root):
        return None  # the linter is not installed (or not runnable) here
    try:
        launch = await ctx.sandbox.launch(argv, ctx.root)  # the model wrote what it reads: in the sandbox
    except SandboxUnavailable as exc:
        return f"Lint skipped: {exc}"
    try:
        process = await asyncio.create_subprocess_exec(
            *launch.argv, cwd=ctx.root, env=launch.env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=os.name == "posix")
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    try:
        output, _ = await asyncio.wait_for(process.communicate(), ctx.settings.lint_timeout)
    except TimeoutError:
        await _stop(process, launch.tag)
        return f"Lint skipped: `{shown}` did not finish within {ctx.settings.lint_timeout:g}s."
    except asyncio.CancelledError:
        await _stop(process, launch.tag)
        raise
    text = output.decode("utf-8", "replace").strip()
    if not text:
        return None if process.returncode == 0 else f"Linter `{shown}` failed (exit {process.returncode})."
    if len(text) > LINT_OUTPUT_CHARS:
        cut = text.rfind("\n", 0, LINT_OUTPUT_CHARS)
        cut = cut if cut > 0 else LINT_OUTPUT_CHARS
        hidden = text.count("\n", cut) + 1
        text = f"{text[:cut]}\n… {hidden} more lines of lint output not shown"
    return f"Linter `{shown}` (exit {process.returncode}):\n{text}"


def installed(program: str, root: Path) -> bool:
    """Whether ``program`` can be run from ``root``: a name on PATH, or a path (``node_modules/.bin/x``)."""
    if "/" in program:
        path = root / program
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(program) is not None


async def _stop(process: asyncio.subprocess.Process, tag: str) -> None:
    # The linter may have started children (npx, node...): end its whole process group, and what left it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.name == "posix":
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    await end_tagged(tag, grace=0)
    with contextlib.suppress(ProcessLookupError):
        await process.wait()
