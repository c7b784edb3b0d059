"""The task layer of the system prompt: the third layer, after anvil's base text and the project's.

It holds the task's title and description, its PRD (cut to a budget, saying so), the answers to its earlier
blockers ("previous clarifications"), how the run ends and what to do when blocked, and for a complex task the
request for an intent preview: an outline of files, module boundaries and order before the first change.

A task is complex when its header says ``complexity: high``, when the project is empty or nearly so
(greenfield), or when the task asks to create a new program; ``complexity: low`` or ``medium`` turns the
preview off.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from anvil.core.tasks.state import BlockerRecord
from anvil.core.tasks.taskfile import TaskSpec

PRD_BUDGET = 12_000  # characters of the PRD in the prompt (the ``task_prd_chars`` setting)
NEAR_EMPTY = 3  # a project with this many files or fewer (anvil's own and hidden ones aside) is greenfield
_IGNORED = {".git", ".anvil", "__pycache__", ".venv", "venv", "node_modules", ".pytest_cache", ".ruff_cache",
            ".mypy_cache"}
_CREATES = re.compile(
    r"\b(create|build|write|implement|make|develop|scaffold|generate)\b[^.\n]{0,60}?\b(new\s+)?"
    r"(program|app|application|tool|cli|command[- ]line|service|project|library|package|game|server|website)\b"
    r"|\bfrom scratch\b", re.IGNORECASE)

INTENT_PREVIEW = (
    "## Before your first change\n\n"
    "This task is complex ({reason}). Begin your first reply with a short outline, the intent preview: the files "
    "you will create or change and what each one is for, the module boundaries and the interfaces between them, "
    "and the order you will build them in. Make your first tool calls in that same reply (a reply without a tool "
    "call ends the run). The outline is shown to the person as your plan; it is a sketch, not a contract: deviate "
    "when what you find says so.")
BLOCKED_HEADLESS = (
    "## When you are blocked\n\n"
    "Nobody watches this run. Decide what you can decide yourself (names, layout, libraries already in use, "
    "reasonable defaults) and say what you assumed. If you cannot finish without something only the person has "
    "(requirements that contradict each other, missing credentials or access, an external service you cannot "
    "reach), call ask_user with one precise question, saying what you found and what you tried: the run stops as "
    "blocked and resumes with the answer. anvil also stops the run when the same error comes back 3 times, the "
    "same file fails 3 edits, or more than 5 calls fail before you stop.")
BLOCKED_INTERACTIVE = (
    "## When you are blocked\n\n"
    "Decide what you can decide yourself and say what you assumed. If you cannot finish without something only "
    "the person has (contradictory requirements, missing credentials, an unreachable service), ask them with "
    "ask_user.")


def is_greenfield(root: Path) -> bool:
    """An empty or near-empty project: at most :data:`NEAR_EMPTY` files, hidden and anvil's own aside."""
    return all(count <= NEAR_EMPTY for count, _ in enumerate(_walk(root), start=1))


def _walk(root: Path) -> Iterator[Path]:
    try:
        entries = list(root.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name in _IGNORED or entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry)
        else:
            yield entry


def preview_reason(spec: TaskSpec, root: Path) -> str | None:
    """Why the task gets an intent preview, or None when it does not."""
    if spec.complexity == "high":
        return "marked complexity: high"
    if spec.complexity in {"low", "medium"}:
        return None
    if is_greenfield(root):
        return "the project is empty or nearly so"
    if _CREATES.search(f"{spec.title}\n{spec.description}"):
        return "it asks for a new program"
    return None


def prd_text(spec: TaskSpec, root: Path, budget: int = PRD_BUDGET) -> str | None:
    """The PRD section, cut to ``budget`` characters with a line that says so and where the rest is."""
    if spec.prd is None:
        return None
    try:
        text = spec.prd.read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        return f"## Requirements (PRD)\n\n(The PRD {spec.prd} could not be read: {exc.strerror or exc}.)"
    where = _shown(spec.prd, root)
    if len(text) > budget:
        cut = text.rfind("\n", 0, budget)
        cut = cut if cut > budget // 2 else budget
        rest = (f"read {where} for the rest" if where != str(spec.prd)
                else "the rest is outside the project; ask if you need it")
        text = (f"{text[:cut].rstrip()}\n\n[The PRD is cut here: {cut:,} of {len(text):,} characters shown "
                f"(task_prd_chars); {rest}.]")
    return f"## Requirements (PRD: {where})\n\n{text}"


def clarifications_text(answered: list[BlockerRecord]) -> str | None:
    if not answered:
        return None
    pairs = "\n\n".join(f"Q: {b.question}\nA: {b.answer}" for b in answered)
    return ("## Previous clarifications\n\nQuestions this task raised earlier, with the person's answers. They "
            f"override the description where they differ.\n\n{pairs}")


def task_layer(spec: TaskSpec, root: Path, answered: list[BlockerRecord], *, prd_budget: int = PRD_BUDGET,
               preview: str | None = None, blocking: bool = True, verify: list[str] | None = None) -> str:
    """The whole layer, as it joins the system prompt."""
    sections = [f"# Task\n\n**Title**: {spec.title}\n\n{spec.description or '(no description)'}"]
    for extra in (prd_text(spec, root, prd_budget), clarifications_text(answered)):
        if extra:
            sections.append(extra)
    if preview:
        sections.append(INTENT_PREVIEW.format(reason=preview))
    checks = ", ".join(f"`{c}`" for c in verify or [])
    done = (f"When you stop, anvil runs {checks}; what fails comes back to you to fix." if checks else
            "Check your work (run the tests) before you stop.")
    sections.append("## How the run ends\n\nImplement exactly what the task asks, no more. When it is done, reply "
                    f"with a short summary of what you changed and how you checked it, and call no tool. {done}")
    sections.append(BLOCKED_HEADLESS if blocking else BLOCKED_INTERACTIVE)
    return "\n\n".join(sections)


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
