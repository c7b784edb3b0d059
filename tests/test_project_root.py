"""The project is the git root (or the folder holding .anvil/) wherever in it anvil starts: sessions, config and
rules are the same from a subdirectory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from anvil.config import load_settings, permission_files
from anvil.project import find_project_root
from tests.conftest import anvil_command


def test_the_nearest_folder_with_git_or_anvil_is_the_project(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_project_root(deep) == repo.resolve()
    (repo / "src" / ".anvil").mkdir()
    assert find_project_root(deep) == (repo / "src").resolve()  # a sub-project with its own settings
    loose = tmp_path / "loose"
    loose.mkdir()
    assert find_project_root(loose) == loose.resolve()


def test_the_walk_stops_below_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)  # dotfiles in git
    work = home / "scratch"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert find_project_root(work) == work.resolve()
    assert find_project_root(home) == home.resolve()  # anvil started in the home directory itself


def test_config_and_rules_are_the_projects_from_a_subdirectory(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".anvil").mkdir(parents=True)
    (repo / ".anvil" / "config.toml").write_text("max_iterations = 7\n")
    sub = repo / "docs"
    sub.mkdir()
    root = find_project_root(sub)
    assert load_settings(root).max_iterations == 7
    assert permission_files(root)["project"] == repo.resolve() / ".anvil" / "permissions.toml"


def test_anvil_sessions_from_a_subdirectory_lists_the_projects_sessions(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    sub = repo / "src"
    sub.mkdir()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    ran = subprocess.run(anvil_command("-p", "hello from the root", "--model", "scripted"), cwd=repo, env=env,
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    listed = subprocess.run(anvil_command("sessions"), cwd=sub, env=env, capture_output=True, text=True, timeout=60)
    assert "hello from the root" in listed.stdout, listed.stdout
