"""git as anvil itself runs it, outside the sandbox (the branch and status in the system prompt, the project's files
for ``@`` mentions): reading the repository's state, never running what its configuration names.

A repository's configuration can make git run programs: ``core.fsmonitor`` on every index refresh (a plain
``git status``), hooks and ``core.hooksPath``, the clean filter of a filter driver (``git status`` runs it on
files whose timestamps look changed), pagers, editors, credential helpers, ssh commands. That configuration may
come from files the model could write, so anvil's own calls turn each of these off on the command line, which
wins over every configuration file and reaches the git processes git itself starts. Filter drivers have names
the repository picks: the ones its configuration defines are listed first (reading configuration runs
nothing) and emptied by name. Optional locks are off (anvil never writes the index) and submodules are not
entered (each has its own configuration).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: configuration that runs a program, turned off for anvil's own calls
_OFF = ("core.fsmonitor=false", "core.hooksPath=/dev/null", "core.pager=cat", "core.editor=true",
        "sequence.editor=true", "core.sshCommand=false", "core.askPass=false", "core.gitProxy=",
        "credential.helper=", "diff.external=", "gpg.program=false", "protocol.allow=never",
        "core.untrackedCache=false", "submodule.recurse=false", "status.submoduleSummary=false")
_FILTER_KEYS = r"^filter\..*\.(clean|smudge|process)$"
_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_EDITOR": "true",
        "GIT_ASKPASS": "false", "GIT_EXTERNAL_DIFF": "", "GIT_SSH_COMMAND": "false"}


def overrides(root: Path) -> list[str]:
    """The ``-c`` options that keep git from running what the configuration in ``root`` names."""
    options = [option for key in _OFF for option in ("-c", key)]
    for driver in _filter_drivers(root):
        for key in ("clean", "smudge", "process"):
            options += ["-c", f"filter.{driver}.{key}="]
        options += ["-c", f"filter.{driver}.required=false"]
    return options


def _filter_drivers(root: Path) -> list[str]:
    try:
        listed = subprocess.run(["git", "config", "--name-only", "--get-regexp", _FILTER_KEYS], cwd=root,
                                capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL,
                                env=_environment())
    except (OSError, subprocess.TimeoutExpired):
        return []
    return list(dict.fromkeys(name.split(".", 1)[1].rsplit(".", 1)[0] for name in listed.stdout.splitlines()
                              if name.count(".") >= 2))


def _environment() -> dict[str, str]:
    return {**os.environ, **_ENV}


def run_git(root: Path, *args: str, timeout: float = 5.0,
            options: list[str] | None = None) -> subprocess.CompletedProcess[str] | None:
    """``git ARGS`` in ``root`` with nothing of the repository's configuration that runs programs; None when git
    is missing or too slow. ``options``: :func:`overrides` already found, for several calls in a row."""
    try:
        options = overrides(root) if options is None else options
        return subprocess.run(["git", *options, *args], cwd=root, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, env=_environment())
    except (OSError, subprocess.TimeoutExpired):
        return None
