"""Collecting the simple commands a shell command would run, for both parsers in :mod:`.shell_parse`.

Each parser walks its own structure and calls :meth:`Builder.emit` once per simple command; the builder
normalises the words (:func:`.shell_words.unwrap`), notes what bash evaluates beyond the visible text (arithmetic,
indirect expansions, code strings built at run time), and parses the code found inside the command in turn
(substitutions, ``bash -c``/``eval``/``trap`` strings, ``find -exec``), each with ``parent`` pointing back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from anvil.core.policy.shell_command import Redirect, SimpleCommand
from anvil.core.policy.shell_lex import _Fail, _Notes
from anvil.core.policy.shell_words import find_exec, inline_scripts, unwrap

MAX_DEPTH = 4  # nested substitutions / -c scripts; deeper than this is refused rather than skimmed


@dataclass(frozen=True)
class Ctx:
    """Where the commands being read sit: inside which command, pipeline stage and function."""

    parent: int | None = None
    origin: str = "command"
    depth: int = 0
    pipe: tuple[int, int] | None = None
    function: str = ""
    #: the endless loop (``while true``) the commands are in: an id, or -1
    loop: int = -1


#: parses one source into the builder (the parser's entry point, handed in to avoid an import cycle)
Parse = Callable[[str, "Builder", Ctx], str]


@dataclass
class Builder:
    parse: Parse
    out: list[SimpleCommand] = field(default_factory=list)
    pids: int = 0
    loop_vars: list[str] = field(default_factory=list)

    def new_pid(self) -> int:
        self.pids += 1
        return self.pids - 1

    def emit(self, argv: list[str], env: list[str], redirects: list[Redirect], text: str, ctx: Ctx,
             subs: Iterable[tuple[str, str]] = (), notes: _Notes | None = None,
             expanding: frozenset[int] = frozenset()) -> int:
        """Add one simple command; ``expanding``: the indexes of ``argv`` words bash expands when it runs."""
        words, wrappers, more_env = unwrap(argv)
        notes = notes or _Notes()
        scripts = inline_scripts(words)
        late = list(notes.late)
        for origin, _, positions in scripts:
            if any(len(argv) + k in expanding for k in positions):
                late.append(f"runs shell code built at run time ({origin})")
        pid, stage = ctx.pipe or (-1, 0)
        self.out.append(SimpleCommand(tuple(argv), text.strip(), tuple(env) + more_env, tuple(redirects),
                                      words, wrappers, ctx.origin, ctx.parent, pid, stage,
                                      arith=tuple(notes.exprs), late=tuple(dict.fromkeys(late)),
                                      function=ctx.function, loop=ctx.loop))
        idx = len(self.out) - 1
        child = Ctx(idx, "substitution", ctx.depth + 1, ctx.pipe, ctx.function)
        self.nested([*subs, *((origin, script) for origin, script, _ in scripts)], child)
        for inner in find_exec(words):
            self.emit(list(inner), [], [], " ".join(inner), replace(child, origin="find -exec"))
        return idx

    def loose(self, text: str, ctx: Ctx, subs: list[tuple[str, str]], notes: _Notes) -> None:
        """Words that belong to no command (loop lists, case subjects and patterns, arithmetic commands): what
        they substitute runs, and what they evaluate makes them a command that runs no program."""
        if notes.exprs or notes.late:
            self.emit([], [], [], text, ctx, subs, notes)
        else:
            self.nested(subs, ctx)

    def nested(self, subs: list[tuple[str, str]], ctx: Ctx) -> None:
        """Parse code found inside another command: (origin, source) pairs."""
        if subs and ctx.depth > MAX_DEPTH:
            raise _Fail("commands nested too deeply to check")
        for origin, script in subs:
            self.parse(script, self, replace(ctx, origin=origin))

    def mark(self, start: int, pid: int, stage: int) -> None:
        """Put the commands emitted since ``start`` into a pipeline stage (innermost pipeline wins)."""
        for i in range(start, len(self.out)):
            if self.out[i].pipeline == -1:
                self.out[i] = replace(self.out[i], pipeline=pid, stage=stage)

    def background(self, start: int) -> None:
        """The commands emitted since ``start`` were started with ``&``."""
        for i in range(start, len(self.out)):
            self.out[i] = replace(self.out[i], background=True)

    def finish(self) -> tuple[SimpleCommand, ...]:
        return tuple(c if c.pipeline != -1 else replace(c, pipeline=self.new_pid()) for c in self.out)
