"""Paths the file tools never change without the person: anvil's configuration, git's files, shell start-up files,
and the scripts anvil itself runs outside the sandbox (those its hooks and MCP servers name).

A change to one of these widens what runs or what is allowed (an allow rule, a hook, a git hook or
``core.fsmonitor``, a line in ``.bashrc``), so every tool that writes files declares the paths it writes
(``Tool.write_targets``) and the approval policy asks about these whatever the mode or the rules: only a rule
naming the file itself allows one, and headless runs refuse them. The work files anvil's workflows keep under
``.anvil/`` (jobs and the like) are not configuration.

Names are compared the way the most forgiving file systems compare them: case-insensitive, Unicode-normalised,
without the code points HFS+ ignores and the trailing dots and spaces Windows drops, so ``.ANVIL/Config.toml`` and
``.g\\u200cit/config`` count as the real names. A protected file is written only by its own path: reached through a
symbolic link from a name that is not protected (at approval time or later, in a race), the write is refused,
so what the person approved is what gets written (the tools then write by a path with no link in it).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from anvil.core.tools.errors import ToolError
from anvil.core.tools.paths import lexical_path

if TYPE_CHECKING:
    from anvil.core.tools.base import ToolContext

CONFIG = "anvil's own configuration"
GIT = "git's own files"
SHELL = "a shell start-up file"
DATA = "anvil's own data"
SCRIPT = "a script anvil runs outside the sandbox"
#: what a change to each kind of protected file could do, said in the approval and in refusals
WHY = {
    CONFIG: "a change here can grant permissions or add hooks and commands that anvil then runs unasked",
    GIT: "git runs the programs its config and hooks name, even for a plain `git status`",
    SHELL: "every new shell runs what it says",
    DATA: "anvil's sessions and its record of which folders the person trusts",
    SCRIPT: "a hook or an MCP server (or, unsandboxed, lint, verify or test_command) runs it without asking",
}
#: start-up files of bash, zsh, sh, csh, ksh, X sessions and direnv, wherever they are
SHELL_STARTUP = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zshenv",
    ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout", ".kshrc", ".mkshrc", ".envrc",
    ".xprofile", ".xsessionrc", ".xinitrc",
})
#: directories under ``.anvil/`` whose files anvil reads as configuration (agent definitions, hook scripts)
ANVIL_CONFIG_DIRS = frozenset({"agents", "hooks"})
# Code points HFS+ ignores in names (zero-width joiners, direction marks, the BOM): ".g\u200cit" is ".git" there.
_IGNORED = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u206a-\u206f\ufeff]")


def fold(name: str) -> str:
    """A name as a case-insensitive, normalising file system compares it."""
    folded = unicodedata.normalize("NFC", _IGNORED.sub("", name)).casefold()
    return folded.rstrip(". ") or folded


def folded_parts(path: PurePath) -> list[str]:
    return [fold(part) for part in path.parts]


def _in_dir(parts: list[str], base: PurePath) -> bool:
    base_parts = folded_parts(base)
    return parts[:len(base_parts)] == base_parts


def _by_name(parts: list[str]) -> str | None:
    """The kind of protected file ``parts`` name wherever they sit, or None."""
    for index, part in enumerate(parts):
        rest = parts[index + 1:]
        if part == ".git" or (part.endswith(".git") and rest[:1] in (["config"], ["hooks"])):
            return GIT  # all of .git: config, hooks, and submodules' under .git/modules; bare repositories too
        if part == ".anvil" and rest and ((len(rest) == 1 and rest[0].endswith(".toml"))
                                          or rest[0] in ANVIL_CONFIG_DIRS):
            return CONFIG
        if part == "fish" and rest[:1] in (["conf.d"], ["functions"]):
            return SHELL
    name = parts[-1] if parts else ""
    return SHELL if name in SHELL_STARTUP or name == "config.fish" else None


def classify(path: PurePath, config_dirs: list[Path], data_dir: Path | None,
             scripts: Sequence[Path] = ()) -> str | None:
    """Which kind of protected file ``path`` is (:data:`CONFIG`, :data:`GIT`, :data:`SHELL`, :data:`DATA`,
    :data:`SCRIPT`), or None. ``path`` is absolute; the directories are compared as given and as resolved."""
    parts = folded_parts(path)
    if any(parts == folded_parts(script) for script in scripts):
        return SCRIPT
    for directory in config_dirs:
        if _in_dir(parts, directory) or _in_dir(parts, directory.resolve()):
            return CONFIG
    if data_dir is not None and (_in_dir(parts, data_dir) or _in_dir(parts, data_dir.resolve())):
        return DATA
    return _by_name(parts)


@dataclass(frozen=True)
class ProtectedWrite:
    """A write the person must approve: what the file is and why it matters."""

    kind: str
    #: the path as the person reads it (relative to the project root when inside)
    shown: str
    #: the path judged by its text (absolute, ``..`` folded, no link followed)
    path: Path

    @property
    def reason(self) -> str:
        return f"{self.kind}: {self.shown} ({WHY[self.kind]})"


def protected_write(ctx: ToolContext, raw: str) -> ProtectedWrite | None:
    """Whether writing the model's path ``raw`` needs the person, judged from its text (so the policy and the
    tool agree whatever changes on disk between them). Raises :class:`ToolError` when the path reaches a
    protected file through a symbolic link: that write is refused outright."""
    lexical = lexical_path(raw, ctx.root)
    kind = classify(lexical, ctx.settings.config_dirs, ctx.data_dir, ctx.settings.outside_scripts)
    try:
        resolved: Path | None = ctx.resolve(raw)
    except ToolError:
        resolved = None  # outside the project: the tool refuses it; the text alone still decides here
    if resolved is not None:
        check_link_target(ctx, raw, resolved)
    return ProtectedWrite(kind, ctx.display(lexical), lexical) if kind else None


def check_link_target(ctx: ToolContext, raw: str, resolved: Path) -> None:
    """Refuse a write that reaches a protected file through a symbolic link (or ``..`` after one).

    Called by the policy and again by the tool right before it writes, with the path resolved then."""
    kind = classify(resolved, ctx.settings.config_dirs, ctx.data_dir, ctx.settings.outside_scripts)
    lexical = lexical_path(raw, ctx.root)
    if kind is None or folded_parts(resolved) == folded_parts(lexical):
        return
    shown, real = ctx.display(lexical), ctx.display(resolved)
    raise ToolError(
        f"Not written: {shown} leads through a symbolic link to {real}, which is {kind} ({WHY[kind]}). The file "
        f"tools change such a file only by its own path, so the person sees exactly what changes. If the change "
        f"is needed, write {real} itself: the person will be asked to approve it.")
