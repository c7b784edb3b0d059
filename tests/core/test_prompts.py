"""The layered system prompt."""

from __future__ import annotations

import subprocess
from pathlib import Path

from anvil.core.prompts import MEMORY_CAP, build_system_prompt, load_project_memory


def test_layers_present(project: Path, tmp_path: Path) -> None:
    (project / "AGENTS.md").write_text("Always run `make check` before finishing.")
    (project / "pyproject.toml").write_text("[project]\nname='x'\n")
    (project / "src").mkdir()
    user_dir = tmp_path / "usercfg"
    user_dir.mkdir()
    (user_dir / "AGENTS.md").write_text("Answer in British English.")
    prompt, memory = build_system_prompt(project, user_dir)
    assert "You are anvil" in prompt
    assert "Always run `make check` before finishing." in prompt
    assert "Answer in British English." in prompt
    assert "Python (pyproject.toml)" in prompt
    assert "src/" in prompt and "README.md" in prompt
    assert f"Working directory (project root): {project}" in prompt
    assert "Git: not a git repository" in prompt
    assert memory.sources == [project / "AGENTS.md", user_dir / "AGENTS.md"] and not memory.truncated


def test_git_branch_and_dirty_state(project: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "feature-x"], cwd=project, check=True)
    prompt, _ = build_system_prompt(project, None)
    assert "Git: branch feature-x, uncommitted changes" in prompt


def test_memory_is_capped_and_says_so(project: Path) -> None:
    (project / "AGENTS.md").write_text("a" * 20_000)
    (project / "CLAUDE.md").write_text("b" * 20_000)
    (project / "ANVIL.md").write_text("never included")
    memory = load_project_memory(project, None)
    assert memory.truncated
    assert len(memory.text.encode()) < MEMORY_CAP + 200
    assert "CLAUDE.md cut: project memory is capped at 32 KiB" in memory.text
    assert "never included" not in memory.text
