"""anvil's own git calls (the system prompt's branch and status, the files offered for @ mentions) run outside the
sandbox: they must run nothing a repository's configuration names, wherever that configuration comes from."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from anvil.core.prompts import environment
from anvil.frontend.mentions import list_project_files


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", *args], cwd=root, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("one\n")
    (root / ".gitattributes").write_text("*.txt filter=sneaky\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    return root


def payload(root: Path, name: str) -> str:
    """A command that leaves a mark if git runs it."""
    return f"touch {root / name}; false"


def make_racy(root: Path) -> None:
    """a.txt changed on disk with the same size and a new timestamp: git status must look at its content, through
    the clean filter."""
    (root / "a.txt").write_text("two\n")
    later = time.time() + 5
    os.utime(root / "a.txt", (later, later))


CONFIGS = {
    "fsmonitor": "[core]\n\tfsmonitor = \"{p}\"\n",
    "hooksPath": "[core]\n\thooksPath = {hooks}\n",
    "filter": "[filter \"sneaky\"]\n\tclean = \"{p}\"\n\tsmudge = cat\n\trequired = true\n",
    "filter process": "[filter \"sneaky\"]\n\tprocess = \"{p}\"\n",
}


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_the_repository_configuration_runs_nothing(repo: Path, kind: str) -> None:
    hooks = repo / "myhooks"
    hooks.mkdir()
    for hook in ("post-index-change", "post-checkout", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\n{payload(repo, 'HOOK_RAN')}\n")
        (hooks / hook).chmod(0o755)
    with (repo / ".git" / "config").open("a") as config:
        config.write(CONFIGS[kind].format(p=payload(repo, "PAYLOAD_RAN"), hooks=hooks))
    make_racy(repo)
    text = environment(repo)
    files = list_project_files(repo)
    assert "Git: branch" in text and "a.txt" in files
    assert not (repo / "PAYLOAD_RAN").exists() and not (repo / "HOOK_RAN").exists()


def test_configuration_reached_through_commondir_runs_nothing(repo: Path) -> None:
    """The audit's escape: .git/commondir pointing at a directory the model wrote, whose config has an fsmonitor."""
    evil = repo / "evil"
    (evil / "refs" / "heads").mkdir(parents=True)
    (evil / "objects").mkdir()
    (evil / "config").write_text(f"[core]\n\tfsmonitor = \"{payload(repo, 'PAYLOAD_RAN')}\"\n")
    (repo / ".git" / "commondir").write_text("../evil\n")
    environment(repo)
    list_project_files(repo)
    assert not (repo / "PAYLOAD_RAN").exists()


def test_a_plain_git_would_have_run_it(repo: Path) -> None:
    """The same payload through git as anyone runs it: the tests above would catch a real escape."""
    with (repo / ".git" / "config").open("a") as config:
        config.write(CONFIGS["fsmonitor"].format(p=payload(repo, "PAYLOAD_RAN")))
    subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True)
    assert (repo / "PAYLOAD_RAN").exists()


def test_a_submodules_configuration_runs_nothing(repo: Path, tmp_path: Path) -> None:
    sub_source = tmp_path / "sub"
    sub_source.mkdir()
    git(sub_source, "init", "-q")
    git(sub_source, "commit", "-q", "--allow-empty", "-m", "sub")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_source), "sub")
    git(repo, "commit", "-qam", "with a submodule")
    sub_git = Path(subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=repo / "sub", capture_output=True,
                                  text=True, check=True).stdout.strip())
    with (sub_git / "config").open("a") as config:
        config.write(CONFIGS["fsmonitor"].format(p=payload(repo, "PAYLOAD_RAN")))
    (repo / "sub" / "new.txt").write_text("x\n")
    assert "uncommitted changes" in environment(repo) or "clean" in environment(repo)
    assert not (repo / "PAYLOAD_RAN").exists()
