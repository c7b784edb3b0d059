"""What the risk checks work with: a finding (how risky, why, what a rule must name), the report of all of them,
and one simple command as the checks read it. Kept apart from :mod:`.command_risk` so the checks split over
several modules share them."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from anvil.core.policy.risk_rows import RiskLevel, split_options
from anvil.core.policy.rules import subcommand_index
from anvil.core.policy.shell_command import SimpleCommand

_ORDER = {"normal": 0, "risky": 1, "unattended_deny": 2, "hard_deny": 3}


@dataclass(frozen=True)
class Finding:
    level: RiskLevel
    reason: str
    command: int  # index into ParsedCommand.commands
    triggers: tuple[str, ...] = ()  # words a rule must name to cover this; () = no rule can
    exact: bool = False  # the triggers must be written out word for word, not matched by a wildcard
    #: risky only because of where it writes: the OS sandbox enforces that boundary when it is on
    confinable: bool = False
    #: a write to a protected file (anvil's configuration, git's files, a shell start-up file, a script anvil runs
    #: outside the sandbox): asked about in every mode, auto-approve included, like the file tools' writes
    protected: bool = False


@dataclass(frozen=True)
class RiskReport:
    findings: tuple[Finding, ...] = ()

    @property
    def level(self) -> RiskLevel:
        return max((f.level for f in self.findings), key=_ORDER.__getitem__, default="normal")

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.reason for f in self.findings))

    def for_command(self, index: int) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.command == index)



def short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Call:
    """One simple command as the checks read it: the program, its options and operands, its subcommand."""

    cmd: SimpleCommand
    words: tuple[str, ...]
    cwd: str | None
    name: str
    opts: list[str]
    operands: list[str]
    sub_at: int | None

    @classmethod
    def of(cls, cmd: SimpleCommand, words: tuple[str, ...], cwd: str | None) -> Call:
        opts, operands = split_options(words[1:])
        return cls(cmd, words, cwd, posixpath.basename(words[0]), opts, operands, subcommand_index(words))

    @property
    def program(self) -> str:
        return self.words[0]

    @property
    def args(self) -> tuple[str, ...]:
        return self.words[1:]

    @property
    def sub(self) -> str:
        return self.words[self.sub_at] if self.sub_at is not None else ""

    @property
    def after(self) -> tuple[str, ...]:
        """The words after the subcommand."""
        return self.words[self.sub_at + 1:] if self.sub_at is not None else ()
