"""The layered system prompt: base text, the project layer, and the environment.

- base: ``base.md`` beside this file, how anvil works.
- project: the project memory files (AGENTS.md, CLAUDE.md, ANVIL.md at the root, and the user-level
  AGENTS.md), capped at 32 KiB in all and saying so when cut; the detected stack; a short summary of the
  repository's top level.
- environment: date, OS, working directory, git branch and whether the tree is dirty (git run so that it runs
  nothing the repository's configuration names: :mod:`anvil.core.safe_git`).

May import: safe_git (anvil's own git calls), and otherwise nothing else in anvil (the standard library only);
the loop and runtime hand it plain values.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from anvil.core.safe_git import overrides, run_git

MEMORY_FILES = ("AGENTS.md", "CLAUDE.md", "ANVIL.md")
MEMORY_CAP = 32 * 1024

# Files whose presence names a stack; checked at the project root only.
_STACK_MARKERS = {
    "pyproject.toml": "Python (pyproject.toml)", "setup.py": "Python (setup.py)",
    "requirements.txt": "Python (requirements.txt)", "package.json": "JavaScript/TypeScript (package.json)",
    "tsconfig.json": "TypeScript", "go.mod": "Go (go.mod)", "Cargo.toml": "Rust (Cargo.toml)",
    "pom.xml": "Java (Maven)", "build.gradle": "Java/Kotlin (Gradle)", "Gemfile": "Ruby (Gemfile)",
    "composer.json": "PHP (composer)", "CMakeLists.txt": "C/C++ (CMake)", "Makefile": "Make",
    "Dockerfile": "Docker",
}
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
              ".ruff_cache", ".tox", ".idea", ".vscode"}


@dataclass
class ProjectMemory:
    text: str
    sources: list[Path] = field(default_factory=list)
    truncated: bool = False


def base_prompt() -> str:
    return resources.files("anvil.core.prompts").joinpath("base.md").read_text(encoding="utf-8").strip()


def load_project_memory(root: Path, user_config_dir: Path | None) -> ProjectMemory:
    """The memory files, project first then user-level, within :data:`MEMORY_CAP` bytes in all."""
    candidates = [root / name for name in MEMORY_FILES]
    if user_config_dir is not None:
        candidates.append(user_config_dir / "AGENTS.md")
    parts: list[str] = []
    sources: list[Path] = []
    budget = MEMORY_CAP
    truncated = False
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if not text:
            continue
        sources.append(path)
        header = f"## {path.name} ({'user' if user_config_dir and path.parent == user_config_dir else 'project'})\n"
        block = header + text
        encoded = block.encode("utf-8")
        if len(encoded) > budget:
            block = encoded[:max(0, budget)].decode("utf-8", errors="ignore")
            block += f"\n[... {path.name} cut: project memory is capped at {MEMORY_CAP // 1024} KiB in all]"
            truncated = True
        parts.append(block)
        budget -= len(encoded)
        if budget <= 0:
            truncated = True
            break
    return ProjectMemory("\n\n".join(parts), sources, truncated)


def detect_stack(root: Path) -> list[str]:
    return [label for marker, label in _STACK_MARKERS.items() if (root / marker).exists()]


def repository_summary(root: Path, limit: int = 40) -> str:
    """The top-level entries (directories first), so the model starts oriented."""
    try:
        entries = sorted(root.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    except OSError:
        return ""
    names = [p.name + ("/" if p.is_dir() else "") for p in entries
             if p.name not in _SKIP_DIRS and not (p.name.startswith(".") and p.name not in {".github", ".anvil"})]
    more = len(names) - limit
    shown = ", ".join(names[:limit])
    return shown + (f", … {more} more" if more > 0 else "")


def _git(root: Path, options: list[str], *args: str) -> str | None:
    result = run_git(root, *args, timeout=2, options=options)
    return result.stdout.strip() if result is not None and result.returncode == 0 else None


def environment(root: Path) -> str:
    lines = [f"Date: {time.strftime('%Y-%m-%d')}", f"OS: {platform.system()} {platform.release()}",
             f"Working directory (project root): {root}"]
    options = overrides(root)  # git runs nothing the repository's configuration names (anvil.core.safe_git)
    if _git(root, options, "rev-parse", "--is-inside-work-tree") != "true":
        lines.append("Git: not a git repository")
    else:
        # `branch --show-current` also names an unborn branch (no commits yet); empty when detached.
        branch = _git(root, options, "branch", "--show-current") or \
            f"(detached at {_git(root, options, 'rev-parse', '--short', 'HEAD')})"
        status = _git(root, options, "status", "--porcelain", "--ignore-submodules=all")
        dirty = "uncommitted changes" if status else "clean"
        lines.append(f"Git: branch {branch}, {dirty}")
    return "\n".join(lines)


def build_system_prompt(root: Path, user_config_dir: Path | None) -> tuple[str, ProjectMemory]:
    memory = load_project_memory(root, user_config_dir)
    sections = [base_prompt()]
    project = []
    stack = detect_stack(root)
    if stack:
        project.append("Detected stack: " + ", ".join(stack))
    summary = repository_summary(root)
    if summary:
        project.append("Top level: " + summary)
    if memory.text:
        project.append("Project instructions from the person (follow them):\n\n" + memory.text)
    if project:
        sections.append("# Project\n\n" + "\n\n".join(project))
    sections.append("# Environment\n\n" + environment(root))
    return "\n\n".join(sections), memory
