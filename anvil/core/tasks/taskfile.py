"""Task files: a Markdown description with a YAML front-matter header.

    ---
    title: Command-line task tracker
    prd: requirements.md          # optional, relative to this file's folder
    verify: ["ruff check .", "python -m pytest -q"]
    max_iterations: 40
    workflow: none                # passed to the run's --workflow
    complexity: high              # optional: low, medium, high (high asks for an intent preview)
    ---
    Build the tracker described in the requirements ...

``anvil eval`` reads more keys from the same header (ignored by a single run): ``files`` (the folder of starting
files, default ``files``), ``repo`` and ``ref`` (a local git repository and the commit to start from instead),
``timeout`` (seconds a run may take), ``check`` (commands run after the run, unseen by the model, that must pass
too: "pyproject.toml is unchanged") and ``expect`` (``done``, the default, or ``blocked`` for a task that should end
on a question). Any other key is an error, so a typo does not silently drop a limit.

A file without a header is a task too: its first ``# heading`` is the title and the rest the description.
Every problem is one :class:`TaskFileError` naming the file and what to change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

COMPLEXITIES = ("low", "medium", "high")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(\r?\n|\Z)", re.DOTALL | re.MULTILINE)
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


class TaskFileError(Exception):
    """A task file that cannot be used; the message names the file and what to change."""


@dataclass(frozen=True)
class TaskSpec:
    path: Path  # the task file, absolute
    title: str
    description: str
    prd: Path | None = None
    verify: tuple[str, ...] = ()
    max_iterations: int | None = None
    workflow: str = "none"
    complexity: str | None = None
    # read by anvil eval
    files: str | None = None
    repo: str | None = None
    ref: str | None = None
    timeout: float | None = None
    check: tuple[str, ...] = ()
    expect: str = "done"

    @property
    def name(self) -> str:
        """A short id: the folder's name for ``NAME/task.md``, else the file's stem."""
        return self.path.parent.name if self.path.name.lower() == "task.md" else self.path.stem

    @property
    def folder(self) -> Path:
        return self.path.parent


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _commands(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v for v in value if v.strip())
    return None


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _positive_number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else None


#: key -> (converter, what it should be): a converter returns None for a value it does not take
_KEYS: dict[str, tuple[Any, str]] = {
    "title": (_text, "a line of text"),
    "prd": (_text, "a file path relative to the task file"),
    "verify": (_commands, 'a command or a list of commands, e.g. ["ruff check .", "pytest -q"]'),
    "max_iterations": (_positive_int, "a whole number of 1 or more"),
    "workflow": (_text, "a workflow name, e.g. none"),
    "complexity": (lambda v: v if v in COMPLEXITIES else None, "low, medium or high"),
    "files": (_text, "a folder relative to the task file"),
    "repo": (_text, "the path of a local git repository"),
    "ref": (lambda v: str(v) if isinstance(v, (str, int)) and str(v).strip() else None, "a git commit, tag or branch"),
    "timeout": (_positive_number, "a number of seconds"),
    "check": (_commands, "a command or a list of commands"),
    "expect": (lambda v: v if v in ("done", "blocked") else None, "done or blocked"),
}


def parse_task(text: str, path: Path) -> TaskSpec:
    """A task from its file's text; ``path`` locates the PRD and names the task in errors."""
    path = path.resolve()
    header, body = _split(text, path)
    values: dict[str, Any] = {}
    for key, raw in header.items():
        if key not in _KEYS:
            raise TaskFileError(f"{path}: unknown key '{key}' in the front matter. Known keys: {', '.join(_KEYS)}.")
        convert, expected = _KEYS[key]
        value = convert(raw)
        if value is None:
            raise TaskFileError(f"{path}: '{key}' should be {expected}, not {raw!r}.")
        values[key] = value
    title = values.pop("title", None) or _first_heading(body) or path.stem
    prd = values.pop("prd", None)
    prd_path = None
    if prd is not None:
        prd_path = (path.parent / Path(prd).expanduser()).resolve()
        if not prd_path.is_file():
            raise TaskFileError(f"{path}: the prd file {prd} was not found at {prd_path} (a prd path is relative "
                                "to the task file's folder).")
    return TaskSpec(path=path, title=title, description=body.strip(), prd=prd_path, **values)


def load_task(path: Path) -> TaskSpec:
    """Read and parse a task file; TaskFileError when it cannot be read or used."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskFileError(f"No task file at {path}. Give the path of a Markdown task file.") from None
    except IsADirectoryError:
        inner = path / "task.md"
        if inner.is_file():
            return load_task(inner)
        raise TaskFileError(f"{path} is a folder without a task.md. Give the task file itself.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"Cannot read the task file {path}: {exc}.") from None
    return parse_task(text, path)


def _split(text: str, path: Path) -> tuple[dict[str, Any], str]:
    """(the front matter as a mapping, the body)."""
    text = text.removeprefix("\ufeff")
    match = _FRONT_MATTER.match(text)
    if match is None:
        if text.startswith("---"):
            raise TaskFileError(f"{path}: the front matter that starts on line 1 never ends: close it with a line "
                                "holding only ---.")
        return {}, text
    try:
        header = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)  # where the thing began
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise TaskFileError(f"{path}: the front matter is not valid YAML{where}: {problem}. Fix that line.") from None
    if header is None:
        header = {}
    if not isinstance(header, dict):
        raise TaskFileError(f"{path}: the front matter should be keys and values (title: ..., verify: ...).")
    return {str(k): v for k, v in header.items()}, text[match.end():]


def _first_heading(body: str) -> str | None:
    match = _HEADING.search(body)
    return match.group(1).strip() if match else None
