"""What a shell command is once read: the simple commands it would run, each with its words, redirections, and
where it came from (:mod:`anvil.core.policy.shell_parse` does the reading). Rules match these records and the
risk checks read them, so they sit below both.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from anvil.core.policy.env_vars import is_inert


@dataclass(frozen=True)
class Redirect:
    op: str  # ">", ">>", "<", "<<", "<<<", ">&", "&>", ...
    target: str  # a file, an fd number, or a heredoc delimiter
    fd: int | None = None

    @property
    def is_dup(self) -> bool:
        """``2>&1``, ``>&2``, ``2>&-``: no file involved."""
        return self.op in (">&", "<&") and (self.target.isdigit() or self.target == "-")

    @property
    def writes(self) -> bool:
        return not self.is_dup and self.op in (">", ">>", ">|", "&>", "&>>", "<>", ">&")

    def tokens(self) -> tuple[str, ...]:
        prefix = "" if self.fd is None else str(self.fd)
        if self.is_dup:
            return (f"{prefix}{self.op}{self.target}",)
        return (f"{prefix}{self.op}", self.target)


@dataclass(frozen=True)
class SimpleCommand:
    argv: tuple[str, ...]  # words as written, quotes removed, env prefixes split off
    text: str  # the source slice it came from
    env: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    words: tuple[str, ...] = ()  # normalised: transparent wrappers stripped, program first
    wrappers: tuple[str, ...] = ()
    origin: str = "command"  # or "substitution", "process substitution", "heredoc", "shell -c", ...
    parent: int | None = None
    pipeline: int = -1  # commands joined by | share a pipeline id; stage is their position
    stage: int = 0
    #: arithmetic expressions bash evaluates while running this command (``$((x))``, ``${a[i]}``, ``((...))``)
    arith: tuple[str, ...] = ()
    #: why bash may run code here that the text does not show (``${!x}``, ``${x@P}``, code built at run time)
    late: tuple[str, ...] = ()
    function: str = ""  # the function whose body this command is in
    background: bool = False  # started with ``&``
    loop: int = -1  # the endless loop (``while true; do ...``) this command is in: an id, or -1

    @property
    def program(self) -> str:
        return self.words[0] if self.words else ""

    @property
    def name(self) -> str:
        """The program's base name (``/usr/bin/rm`` -> ``rm``), for risk checks and deny rules."""
        return posixpath.basename(self.program) if "/" in self.program.rstrip("/") else self.program

    @property
    def args(self) -> tuple[str, ...]:
        return self.words[1:]

    @property
    def rule_env(self) -> tuple[str, ...]:
        """The environment assignments a rule must match: all but the inert ones (``NODE_ENV=test``)."""
        return tuple(e for e in self.env if not is_inert(e))

    def tokens(self, words: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """Environment prefixes, words, then file redirections (given ``words``: those instead of the first two).
        fd duplications and /dev/null redirections are left out: they change neither what runs nor what is
        written, and would only make rules miss."""
        out = list((*self.rule_env, *self.words) if words is None else words)
        for r in self.redirects:
            if not r.is_dup and r.target != "/dev/null":
                out.extend(r.tokens())
        return tuple(out)

    @property
    def normalized(self) -> str:
        """What rules match: :meth:`tokens` joined by single spaces."""
        return " ".join(self.tokens())


@dataclass(frozen=True)
class ParsedCommand:
    source: str
    commands: tuple[SimpleCommand, ...] = ()
    error: str | None = None
    parser: str = "bashlex"  # or "fallback"
    #: the variables ``for``/``select`` loops set (to values only known at run time)
    loop_vars: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


def is_dynamic(word: str) -> bool:
    """A word whose value is only known when the shell runs it."""
    return "$" in word or "`" in word
