"""The files in a project that a configured command runs: ``sh scripts/setup.sh``, ``./tools/lint.py``, ``uv run
server.py``, ``"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh``.

Hooks and MCP servers run outside the sandbox, and nobody is asked each time they do; lint, verify and
test_command run without asking too. Trusting a folder, or writing a hook in one's own config, is trusting what
these files say *now*, so anvil keeps them from changing behind the person's back: a trusted folder is asked
about again when one changes (:mod:`anvil.trust`), the file tools ask before writing one, and the sandbox keeps
the ones hooks and MCP servers run read-only.

A file counts when it is what a simple command runs: the program itself (``./lint.sh``), or the script an
interpreter or a runner is given (``bash x.sh``, ``python tools/x.py``, ``node server.js``, ``uv run x.py``),
an existing regular file inside the project, after ``$ANVIL_PROJECT_DIR``, ``$CLAUDE_PROJECT_DIR`` and ``~``
are expanded. Not seen: a module run by name (``python -m tools.lint``), a program found on ``PATH``, the files
a tool reads its tasks or configuration from (``package.json`` for ``npm run``, a ``Makefile``, ``conftest.py``,
``eslint.config.js``), and what a script itself goes on to run.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from anvil.core.policy.shell_command import is_dynamic
from anvil.core.policy.shell_parse import parse_command

_PROJECT_VARIABLES = ("ANVIL_PROJECT_DIR", "CLAUDE_PROJECT_DIR")
#: programs whose first operand is the script they run
_INTERPRETERS = re.compile(r"(ba|z|da|k|mk)?sh|python[0-9.]*|pypy3?|node|nodejs|deno|bun|tsx|ts-node|ruby|perl|php|"
                           r"Rscript|lua|osascript")
#: runners whose word after ``run`` is the script (``uv run server.py``)
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "hatch", "pdm", "rye", "deno", "bun"})


def referenced_files(command: str | Iterable[str], root: Path, cwd: Path | None = None) -> list[Path]:
    """The project files ``command`` (a shell line, or an argv list as MCP servers have) names, resolved;
    relative words are read from ``cwd`` (the project's root unless given)."""
    root = root.resolve()
    base = (root / cwd) if cwd is not None else root
    line = command if isinstance(command, str) else shlex.join(command)
    parsed = parse_command(line)
    if parsed.ok:
        runs = [word for cmd in parsed.commands for word in _run_words(cmd.words)]
    else:
        try:
            runs = _run_words(tuple(shlex.split(line)))
        except ValueError:
            runs = line.split()[:1]
    found: list[Path] = []
    for word in runs:
        path = _as_path(word, root, base)
        if path is not None and path not in found:
            found.append(path)
    return found


def _run_words(words: tuple[str, ...]) -> list[str]:
    """The words of one simple command that may name the file it runs."""
    if not words:
        return []
    name = os.path.basename(words[0])
    operands = [w for w in words[1:] if not w.startswith("-")]
    if _INTERPRETERS.fullmatch(name) and operands:
        return [words[0], operands[0]]
    if name in _RUNNERS and len(operands) >= 2 and operands[0] in ("run", "exec", "x"):
        return [words[0], operands[1]]
    return [words[0]]


def _as_path(word: str, root: Path, base: Path) -> Path | None:
    for name in _PROJECT_VARIABLES:
        for form in (f"${{{name}}}", f"${name}"):
            word = word.replace(form, str(root))
    if not word or is_dynamic(word) or len(word) > 4096 or "\n" in word:
        return None
    try:
        path = Path(os.path.expanduser(word))
        path = (path if path.is_absolute() else base / path).resolve()
        if path.is_file() and (path == root or root in path.parents):
            return path
    except (OSError, ValueError, RuntimeError):
        return None
    return None
