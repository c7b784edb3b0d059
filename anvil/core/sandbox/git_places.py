"""What of a git repository stays read-only inside the sandbox: everything git reads as configuration, as code to
run, or as a pointer to another git directory. The rest of ``.git`` stays writable, so commits, branches,
checkouts, stashes and fetches work in the sandbox.

git needs its directory itself writable (``index.lock``, ``HEAD.lock`` and ``packed-refs.lock`` are made there and
renamed into place), so the protection is a read-only mount on each name git reads, existing or not:

* ``config`` and ``config.worktree``: ``core.fsmonitor``, ``core.hooksPath``, aliases, filters and diff drivers
  all run programs, even for a plain ``git status``.
* ``hooks/``: programs git runs on commit, checkout, merge, push.
* ``info/``: ``attributes`` picks filter and diff drivers, ``exclude`` and ``sparse-checkout`` change what git sees.
* ``commondir``: a linked worktree's pointer to the repository's shared directory, read in *any* git directory.
  One written into ``.git`` would make git take its config (and hooks) from wherever it points. A missing one
  is stood in for by a file that points at its own directory (``.``): git reads that as the directory itself,
  and an empty file would stop git altogether.
* ``modules/`` (submodules' git directories, each with its own config and hooks), ``worktrees/`` (linked
  worktrees' directories, with their ``commondir`` and ``gitdir`` pointers), ``remotes/`` and ``branches/``
  (remote definitions from before ``git remote``): read-only as a whole, so work inside a submodule or a linked
  worktree (``git submodule update``, ``git worktree add``) runs outside the sandbox, with the person's approval.
* In a linked worktree or a submodule, the ``.git`` file itself: it names the directory git reads.

Object alternates (``objects/info/alternates``) stay writable: they name other object stores, which hold data,
never code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

#: "pointer": a git pointer file that stands in for a missing one by pointing at its own directory
PlaceKind = Literal["file", "dir", "pointer"]
#: (path, kind, placeholder when missing)
Protected = tuple[Path, PlaceKind, bool]
#: what git reads in a git directory, and how a missing one is stood in for (None: only when git would read it)
_GIT_READS: tuple[tuple[str, PlaceKind], ...] = (
    ("config", "file"), ("hooks", "dir"), ("info", "dir"), ("commondir", "pointer"), ("modules", "dir"),
    ("worktrees", "dir"), ("remotes", "dir"), ("branches", "dir"))
POINTER_TO_ITSELF = ".\n"


def git_protected(root: Path) -> list[Protected]:
    """git's files in the project that run code or point elsewhere: (path, kind, placeholder when missing)."""
    dot_git = root / ".git"
    if not dot_git.exists() and not dot_git.is_symlink():
        return [(dot_git, "dir", True)]
    if dot_git.is_dir() and not dot_git.is_symlink():
        return git_dir_protected(dot_git, placeholders=True)
    found: list[Protected] = [(dot_git, "file", False)]
    linked = _linked_git_dirs(dot_git)  # usually outside the project, and then read-only anyway
    if linked:
        own, common = linked
        found += _worktree_pointers(own)
        found += [(common / name, kind, False) for name, kind in _GIT_READS if name != "worktrees"]
        found.append((common / "config.worktree", "file", False))
        worktrees = common / "worktrees"
        for admin in sorted(worktrees.iterdir())[:200] if worktrees.is_dir() else []:
            found += _worktree_pointers(admin)
    return found


def _worktree_pointers(admin: Path) -> list[Protected]:
    """A linked worktree's own git directory: its pointers and its config, never its index or HEAD."""
    return [(admin / "commondir", "pointer", False), (admin / "gitdir", "file", False),
            (admin / "config.worktree", "file", False), (admin / "hooks", "dir", False), (admin / "info", "dir", False)]


def git_dir_protected(git_dir: Path, *, placeholders: bool) -> list[Protected]:
    """What git reads in one git directory. ``placeholders``: stand-ins for missing names (the project's own
    ``.git``, which anvil may write to; never a linked repository's directory elsewhere)."""
    found: list[Protected] = [(git_dir / name, kind, placeholders) for name, kind in _GIT_READS]
    worktree_config = git_dir / "config.worktree"
    found.append((worktree_config, "file", placeholders and _reads_worktree_config(git_dir)))
    return found


def _reads_worktree_config(git_dir: Path) -> bool:
    """``extensions.worktreeConfig`` is on: git reads ``config.worktree`` too, so a missing one needs a stand-in."""
    try:
        text = (git_dir / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "worktreeconfig" in text.lower()


def _linked_git_dirs(dot_git_file: Path) -> tuple[Path, Path] | None:
    """(the worktree's or submodule's own git directory, the shared one), from a ``.git`` file."""
    try:
        text = dot_git_file.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = (dot_git_file.parent / text.split(":", 1)[1].strip()).resolve()
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir, git_dir  # a submodule: its git directory is its own
    return git_dir, (git_dir / common).resolve()
