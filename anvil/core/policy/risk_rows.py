"""The risky forms of commands, as data: which flags (or subcommands) make a program risky, why, and what an
allow rule must spell out to cover it.

Each :class:`RiskRow` names programs, optionally the subcommands it is about, the words that make it risky
(:class:`Words`), and the reason shown to the person. Adding a rule is adding a row. Commands whose risk
depends on more than their words (what a path points at, where ``cd`` went, how many operands there are) have
handlers in :mod:`anvil.core.policy.command_risk` instead.

How a row is read:

* ``subcommands=None``: the program has no subcommand that matters; its words are everything after the
  program. A tuple: the row applies to those subcommands only (``ANY`` for whichever), and its words are the
  ones after the subcommand (:func:`anvil.core.policy.rules.subcommand_index` finds it past ``-C dir``).
* ``flags``: the words that make the command risky; the row matches when any is there (no ``flags``: always).
  ``requires`` must be there too, ``unless`` must not (``--dry-run``).
* ``trigger``: what an allow rule must name to cover the finding: the flags found (``FOUND``, the default), the
  subcommand, the program, or a fixed word. Hard-deny rows have none: no rule covers them.
* Every matching row of a program adds a finding, in table order.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

RiskLevel = Literal["normal", "risky", "unattended_deny", "hard_deny"]

#: Where a :class:`Words` looks, among a row's words: options (before ``--``), operands, the first operand, or
#: every word.
Where = Literal["options", "operands", "first operand", "words"]

FOUND = "<the words found>"
SUBCOMMAND = "<the subcommand>"
PROGRAM = "<the program as written>"
ANY = "*"


def split_options(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """(options, operands): options are the words starting with ``-`` before ``--``."""
    opts, operands, done = [], [], False
    for a in words:
        if not done and a == "--":
            done = True
        elif not done and a.startswith("-") and a != "-":
            opts.append(a)
        else:
            operands.append(a)
    return opts, operands


def has_short(opt: str, letters: str) -> bool:
    """``-fdx`` has ``f``: one of ``letters`` in a cluster of short options (never in ``--long``)."""
    return opt.startswith("-") and not opt.startswith("--") and bool(set(opt[1:]) & set(letters))


@dataclass(frozen=True)
class Words:
    """Words to look for: exact ones, ones starting with a prefix, or short options holding a letter."""

    exact: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    letters: str = ""
    where: Where = "options"

    def matches(self, word: str) -> bool:
        return word in self.exact or word.startswith(self.prefixes) or (bool(self.letters) and
                                                                         has_short(word, self.letters))

    def find(self, words: tuple[str, ...]) -> list[str]:
        if self.where == "words":
            pool: Sequence[str] = words
        else:
            opts, operands = split_options(words)
            pool = opts if self.where == "options" else operands if self.where == "operands" else operands[:1]
        return [w for w in pool if self.matches(w)]


def options(*exact: str, prefixes: tuple[str, ...] = (), letters: str = "") -> Words:
    return Words(frozenset(exact), prefixes, letters, "options")


def operands(*exact: str, prefixes: tuple[str, ...] = ()) -> Words:
    return Words(frozenset(exact), prefixes, "", "operands")


def first_operand(*exact: str) -> Words:
    return Words(frozenset(exact), where="first operand")


def anywhere(*exact: str, prefixes: tuple[str, ...] = ()) -> Words:
    return Words(frozenset(exact), prefixes, "", "words")


@dataclass(frozen=True)
class RiskRow:
    programs: tuple[str, ...]  # base names; a glob (``mkfs.*``) matches several
    reason: str
    subcommands: tuple[str, ...] | None = None
    flags: tuple[Words, ...] = ()
    requires: tuple[Words, ...] = ()
    unless: tuple[Words, ...] = ()
    trigger: str = FOUND
    level: RiskLevel = "risky"

    def applies_to(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) if "*" in p else name == p for p in self.programs)

    def match(self, program: str, args: tuple[str, ...], sub: str, after: tuple[str, ...]) -> tuple[str, ...] | None:
        """The words an allow rule must name to cover this finding, or None when the command is not this form."""
        if self.subcommands is not None and sub not in self.subcommands and ANY not in self.subcommands:
            return None
        words = args if self.subcommands is None else after
        if any(w.find(words) for w in self.unless) or not all(w.find(words) for w in self.requires):
            return None
        found = [word for w in self.flags for word in w.find(words)]
        if self.flags and not found:
            return None
        if self.level == "hard_deny":
            return ()
        return {FOUND: tuple(found), SUBCOMMAND: (sub,), PROGRAM: (program,)}.get(self.trigger, (self.trigger,))


def _risky(programs: str, reason: str, **kwargs: Any) -> RiskRow:
    return RiskRow(tuple(programs.split()), reason, **kwargs)


def _hard(programs: str, reason: str, **kwargs: Any) -> RiskRow:
    return RiskRow(tuple(programs.split()), reason, level="hard_deny", **kwargs)


_DOCKER = "docker podman"
_UPLOAD = ("-T", "--upload-file", "-F", "--form", "--post-file", "@")
_PUBLISH = "publishes a package"

ROWS: tuple[RiskRow, ...] = (
    # --- the machine and its disks -------------------------------------------------------------------------
    _hard("mkfs mke2fs mkswap wipefs mkfs.*", "formats a disk"),
    _risky("fdisk sfdisk parted gdisk cfdisk", "edits disk partitions", trigger=PROGRAM),
    _hard("shutdown reboot halt poweroff", "shuts down or reboots the machine"),
    _hard("init telinit", "shuts down or reboots the machine", flags=(first_operand("0", "6"),)),
    _hard("systemctl", "shuts down or reboots the machine", subcommands=("poweroff", "reboot", "halt", "kexec")),
    _risky("systemctl", "changes system services", subcommands=("stop", "disable", "mask", "kill", "restart"),
           trigger=SUBCOMMAND),
    _risky("pkill killall", "kills processes by name", trigger=PROGRAM),
    _risky("iptables ip6tables nft ufw", "changes the firewall",
           flags=(anywhere("-F", "--flush", "flush", "disable", "reset", "-X"),), trigger=PROGRAM),
    _risky("eval", "evaluates a string as shell code", trigger=PROGRAM),
    _risky("curl wget", "uploads data", flags=(anywhere(prefixes=_UPLOAD),)),
    # --- git -----------------------------------------------------------------------------------------------
    _risky("git", "force-pushes (can overwrite remote history)", subcommands=("push",), flags=(
        options("-f", "--force", "--mirror", "--force-if-includes", prefixes=("--force-with-lease",), letters="f"),
        operands(prefixes=("+",)))),
    _risky("git", "deletes a remote branch", subcommands=("push",),
           flags=(options("-d", "--delete"), operands(prefixes=(":",)))),
    _risky("git", "discards uncommitted changes", subcommands=("reset",), flags=(options("--hard"),),
           trigger="--hard"),
    _risky("git", "deletes untracked files", subcommands=("clean",), flags=(options("--force", letters="f"),),
           unless=(options("-n", "--dry-run"),)),
    _risky("git", "rewrites history", subcommands=("rebase",), trigger=SUBCOMMAND,
           unless=(options("--abort", "--continue", "--skip", "--quit"),)),
    _risky("git", "rewrites history", subcommands=("filter-branch", "filter-repo"), trigger=SUBCOMMAND),
    _risky("git", "rewrites the last commit", subcommands=("commit",), flags=(options("--amend"),),
           trigger="--amend"),
    _risky("git", "force-deletes a branch", subcommands=("branch",), flags=(options("--force", letters="D"),)),
    _risky("git", "discards local changes", subcommands=("checkout", "restore"),
           flags=(options("-f", "--force"), operands(".", "./"))),
    _risky("git", "drops stashed changes", subcommands=("stash",), flags=(first_operand("drop", "clear"),)),
    # --- containers and clusters ---------------------------------------------------------------------------
    _risky(_DOCKER, "removes Docker data", subcommands=("system", "image", "container", "volume", "network",
                                                        "builder", "buildx"), flags=(first_operand("prune"),)),
    _risky(_DOCKER, "removes Docker data", subcommands=("volume",), flags=(first_operand("rm"),)),
    _risky(_DOCKER, "force-removes Docker containers or images", subcommands=("rm", "rmi"),
           flags=(options("--force", letters="f"),)),
    _risky(_DOCKER, "deletes Docker volumes", subcommands=("compose",), flags=(options("-v", "--volumes"),),
           requires=(operands("down"),)),
    _risky(_DOCKER, "runs a container with access to the host", subcommands=("run",),
           flags=(anywhere("--privileged", prefixes=("/:",)),)),
    _risky(_DOCKER, "pushes an image to a registry", subcommands=("push",), trigger="push"),
    _risky("kubectl", "deletes cluster resources", subcommands=("delete",), trigger=SUBCOMMAND),
    _risky("helm", "deletes cluster resources", subcommands=("uninstall", "delete"), trigger=SUBCOMMAND),
    _risky("terraform", "changes infrastructure without review", subcommands=("destroy",), trigger=SUBCOMMAND),
    _risky("terraform", "changes infrastructure without review", subcommands=("apply",),
           flags=(anywhere("-auto-approve"),), trigger=SUBCOMMAND),
    # --- packages: publishing, global installs -------------------------------------------------------------
    _risky("npm", _PUBLISH, subcommands=("publish", "unpublish", "deprecate"), trigger=SUBCOMMAND),
    _risky("pnpm yarn bun uv poetry hatch flit", _PUBLISH, subcommands=("publish",), trigger=SUBCOMMAND),
    _risky("twine", _PUBLISH, subcommands=("upload",), trigger=SUBCOMMAND),
    _risky("cargo", _PUBLISH, subcommands=("publish", "yank"), trigger=SUBCOMMAND),
    _risky("gem", _PUBLISH, subcommands=("push", "yank"), trigger=SUBCOMMAND),
    _risky("yarn", _PUBLISH, subcommands=("npm",), flags=(anywhere("publish"),), trigger="publish"),
    _risky("gh", _PUBLISH, subcommands=("release",), flags=(anywhere("create", "upload"),)),
    _risky("npm pnpm yarn", "installs packages globally", subcommands=("global",), trigger=SUBCOMMAND),
    _risky("npm pnpm yarn", "installs packages globally", subcommands=("install", "i", "add"),
           flags=(anywhere("-g", "--global", "--location=global"),)),
    _risky("pip*", "installs into the system Python", flags=(anywhere("--break-system-packages"),),
           trigger="--break-system-packages"),
)


@lru_cache(maxsize=512)
def rows_for(name: str) -> tuple[RiskRow, ...]:
    """The rows about one program, in table order."""
    return tuple(row for row in ROWS if row.applies_to(name))
