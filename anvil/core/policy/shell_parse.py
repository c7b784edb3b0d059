"""Read a shell command into the simple commands it would run, for the approval policy.

Decisions:

* bashlex gives the structure (lists, pipelines, compounds, redirections). Word values and the
  substitutions inside words come from our own lexer, because bashlex drops some (``$(...)`` inside
  ``${x:-...}``) and decodes ``$'...'`` wrongly. When bashlex cannot parse a command (``[[ ]]``,
  ``case``, ``$((...))``, ``time``, quoted heredoc delimiters, arrays) the same lexer feeds a small
  flattening parser. Whatever neither can read is a parse failure: the policy asks, never guesses.
* Every command that would run is a :class:`~anvil.core.policy.shell_command.SimpleCommand`: those inside
  ``$(...)``, backticks, ``<(...)``, unquoted heredoc bodies, ``bash -c '...'`` / ``su -c`` / ``env -S`` /
  ``eval`` strings and ``find -exec`` too, each with ``parent`` pointing at the command that contained it.
  Nesting deeper than a few levels is a parse failure rather than a skim.
* ``words`` is the command normalised for matching: quotes removed, ``FOO=1`` prefixes moved to
  ``env``, and transparent wrappers (``command``, ``builtin``, ``exec``, ``env``, ``nice``,
  ``nohup``, ``time``, ``timeout``, ``stdbuf``, ``busybox``, ``xargs``, which runs its argument
  command) stripped, so ``\\rm``, ``"rm"`` and ``nice -n 5 rm`` all read as ``rm``. A wrapper
  option we do not know stops the stripping (the wrapper stays the program), which only ever makes
  a rule match less. ``sudo``/``doas`` are not stripped: running as root is what a rule must name;
  :func:`privileged_inner` looks inside.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from anvil.core.policy.shell_command import ParsedCommand, Redirect, SimpleCommand
from anvil.core.policy.shell_lex import _ASSIGN, _Fail, _Lexer, _Tok
from anvil.core.policy.shell_words import _find_exec, _inline_scripts, unwrap

_MAX_DEPTH = 4  # nested substitutions / -c scripts; deeper than this is refused rather than skimmed
_MAX_SOURCE = 100_000


def parse_command(source: str) -> ParsedCommand:
    if len(source) > _MAX_SOURCE:
        return ParsedCommand(source, error="command too long to check")
    b = _Builder()
    try:
        used = _parse_into(source, b, _Ctx())
    except _Fail as exc:
        return ParsedCommand(source, error=str(exc), parser="fallback")
    except Exception as exc:  # a bug or a pathological input must fail closed: the policy then asks
        return ParsedCommand(source, error=f"could not parse the command ({type(exc).__name__})",
                             parser="fallback")
    return ParsedCommand(source, b.finish(), parser=used)


@dataclass(frozen=True)
class _Ctx:
    parent: int | None = None
    origin: str = "command"
    depth: int = 0
    pipe: tuple[int, int] | None = None


@dataclass
class _Builder:
    out: list[SimpleCommand] = field(default_factory=list)
    pids: int = 0

    def new_pid(self) -> int:
        self.pids += 1
        return self.pids - 1

    def emit(self, argv: list[str], env: list[str], redirects: list[Redirect], text: str, ctx: _Ctx,
             subs: list[tuple[str, str]] | None = None) -> int:
        words, wrappers, more_env = unwrap(argv)
        pid, stage = ctx.pipe or (-1, 0)
        self.out.append(SimpleCommand(tuple(argv), text.strip(), tuple(env) + more_env, tuple(redirects),
                                      words, wrappers, ctx.origin, ctx.parent, pid, stage))
        idx = len(self.out) - 1
        child = _Ctx(idx, "substitution", ctx.depth + 1, ctx.pipe)
        self.nested([*(subs or []), *_inline_scripts(words)], child)
        for inner in _find_exec(words):
            self.emit(list(inner), [], [], " ".join(inner), replace(child, origin="find -exec"))
        return idx

    def nested(self, subs: list[tuple[str, str]], ctx: _Ctx) -> None:
        """Parse code found inside another command: (origin, source) pairs."""
        if subs and ctx.depth > _MAX_DEPTH:
            raise _Fail("commands nested too deeply to check")
        for origin, script in subs:
            _parse_into(script, self, replace(ctx, origin=origin))

    def mark(self, start: int, pid: int, stage: int) -> None:
        """Put the commands emitted since ``start`` into a pipeline stage (innermost pipeline wins)."""
        for i in range(start, len(self.out)):
            if self.out[i].pipeline == -1:
                self.out[i] = replace(self.out[i], pipeline=pid, stage=stage)

    def finish(self) -> tuple[SimpleCommand, ...]:
        return tuple(c if c.pipeline != -1 else replace(c, pipeline=self.new_pid()) for c in self.out)


def _parse_into(source: str, b: _Builder, ctx: _Ctx) -> str:
    start = len(b.out)
    try:
        _bashlex_into(source, b, ctx)
        return "bashlex"
    except Exception:  # bashlex raises many kinds of errors on syntax it lacks; the fallback decides
        del b.out[start:]
    _fallback_into(source, b, ctx)
    return "fallback"


# --- bashlex: structure only; word values and substitutions come from our lexer --------------------

def _bashlex_into(source: str, b: _Builder, ctx: _Ctx) -> None:
    import bashlex  # imported on first use: starting anvil does not need it

    for tree in bashlex.parse(source):
        _walk(tree, source, b, ctx)


def _walk(node: Any, src: str, b: _Builder, ctx: _Ctx) -> None:
    kind = node.kind
    if kind == "command":
        argv: list[str] = []
        env: list[str] = []
        redirects: list[Redirect] = []
        subs: list[tuple[str, str]] = []
        for part in node.parts:
            if part.kind == "redirect":
                redirects.append(_bashlex_redirect(part, src, subs))
            elif part.kind in ("word", "assignment"):
                value, found = _word_value(src[part.pos[0]:part.pos[1]])
                (env if part.kind == "assignment" and not argv else argv).append(value)
                subs.extend(found)
            else:
                raise _Fail(f"unsupported shell construct: {part.kind}")
        b.emit(argv, env, redirects, src[node.pos[0]:node.pos[1]], ctx, subs)
    elif kind == "pipeline":
        pid, stage = b.new_pid(), 0
        for part in node.parts:
            if part.kind == "pipe":
                stage += 1
            elif part.kind != "reservedword":  # "!"
                _walk(part, src, b, replace(ctx, pipe=(pid, stage)))
    elif kind in ("list", "compound", "if", "for", "while", "until", "function"):
        if kind == "compound" and src.startswith("((", node.pos[0]):
            raise _Fail("bashlex reads ((...)) as subshells; bash reads arithmetic")
        for part in node.list if kind == "compound" else node.parts:
            if part.kind == "word":  # a for loop's words or a function's name
                b.nested(_word_value(src[part.pos[0]:part.pos[1]])[1], replace(ctx, depth=ctx.depth + 1))
            elif part.kind not in ("reservedword", "operator", "pipe"):
                _walk(part, src, b, ctx)
        if getattr(node, "redirects", None):  # `{ ...; } > file`, `done < input`
            subs = []
            redirects = [_bashlex_redirect(r, src, subs) for r in node.redirects]
            text = " ".join(src[r.pos[0]:r.pos[1]] for r in node.redirects)
            b.emit([], [], redirects, text, ctx, subs)
    else:
        raise _Fail(f"unsupported shell construct: {kind}")


def _bashlex_redirect(node: Any, src: str, subs: list[tuple[str, str]]) -> Redirect:
    fd = node.input if isinstance(getattr(node, "input", None), int) else None
    out = getattr(node, "output", None)
    if hasattr(out, "pos"):
        target, found = _word_value(src[out.pos[0]:out.pos[1]])
        subs.extend(found)
    elif out is not None:
        target = str(out)
    else:  # bashlex drops the target of `<&0`
        target = src[node.pos[0]:node.pos[1]].split(node.type, 1)[-1].strip()
    heredoc = getattr(node, "heredoc", None)
    if heredoc is not None:  # bashlex only reads unquoted delimiters, whose bodies expand $(...)
        subs.extend(_Lexer(heredoc.value).subs_in(0, len(heredoc.value)))
    return Redirect(node.type, target, fd)


def _word_value(raw: str) -> tuple[str, list[tuple[str, str]]]:
    lexer = _Lexer(raw)
    tok = lexer.word()
    if lexer.i != len(raw):
        raise _Fail(f"cannot read the word {raw!r}")
    return tok.text, tok.subs


# --- the fallback parser: flattens what bashlex cannot read into simple commands --------------------

_OPENERS = {"if": "fi", "while": "done", "until": "done", "for": "done", "select": "done", "case": "esac",
            "{": "}", "(": ")"}
_NOISE = frozenset({"then", "else", "elif", "do", "!", "time", "coproc"})


def _fallback_into(source: str, b: _Builder, ctx: _Ctx) -> None:
    start = len(b.out)
    _Flat(source, b, replace(ctx, pipe=None)).run(_Lexer(source).tokens())
    if ctx.pipe is not None:
        b.mark(start, *ctx.pipe)


class _Flat:
    def __init__(self, src: str, b: _Builder, ctx: _Ctx) -> None:
        self.src, self.b, self.ctx = src, b, ctx
        self.words: list[_Tok] = []
        self.redirs: list[_Tok] = []
        self.stack: list[tuple[str, tuple[int, int, int]]] = []  # (closing word, outer pipeline state)
        self.pipe = (-1, 0, len(b.out))  # pipeline id, stage, first command of the stage
        self.pattern = False  # a case pattern comes next
        self.toks: list[_Tok] = []
        self.i = 0  # the next token run() reads

    def run(self, toks: list[_Tok]) -> None:
        self.toks, self.i = toks, 0
        while self.i < len(toks):
            t = toks[self.i]
            self.i += 1
            if self.pattern and t.kind != "nl":
                self._skip_pattern(t)
            elif t.kind == "word" and not self.words and not self.redirs:
                self._first_word(t)
            else:
                self._token(t)
        self._end_stage(piped=False)
        if self.stack:
            raise _Fail(f"missing {self.stack[-1][0]!r}")

    def _skip_pattern(self, t: _Tok) -> None:
        """A case pattern (``a|b)``) runs nothing: skip to its ``)``; ``esac`` ends the case."""
        if t.raw == "esac":
            self._close("esac")
            return
        toks = self.toks
        j = self.i if t.text == "(" else self.i - 1
        while j < len(toks) and not (toks[j].kind == "op" and toks[j].text == ")"):
            j += 1
        if j >= len(toks):
            raise _Fail("unterminated case pattern")
        self.i, self.pattern = j + 1, False

    def _first_word(self, t: _Tok) -> None:
        """The first word where a command may start: a reserved word opens or closes a compound (reserved
        words are never quoted), anything else starts a simple command."""
        toks, i = self.toks, self.i
        kw = t.raw if t.raw == t.text else ""
        if t.arith:
            self._loose(t)
        elif kw in _NOISE:
            self.i += 1 if kw == "time" and i < len(toks) and toks[i].raw == "-p" else 0
        elif kw in _OPENERS:
            self._open(kw)
            if kw in ("for", "select", "case"):
                self._loop_words(kw)
        elif kw in ("fi", "done", "}", "esac"):
            self._close(kw)
        elif kw == "function":
            self.i += 3 if toks[i + 1:i + 2] and toks[i + 1].text == "(" else 1
        elif kw == "[[":
            self._test_expression(t)
        elif [(x.kind, x.text) for x in toks[i:i + 2]] == [("op", "("), ("op", ")")]:
            self.i += 2  # a function definition: name () { ...; }
        else:
            self.words.append(t)

    def _loop_words(self, kw: str) -> None:
        """The words after ``for x in``, ``select``, ``case WORD in``: they run nothing but may hold substitutions."""
        toks = self.toks
        while (self.i < len(toks) and toks[self.i].kind == "word" and toks[self.i].raw != "in") or (
                kw == "case" and self.i < len(toks) and toks[self.i].kind == "nl"):
            self._loose(toks[self.i])
            self.i += 1
        if kw == "case":
            if self.i >= len(toks) or toks[self.i].raw != "in":
                raise _Fail("case without in")
            self.i, self.pattern = self.i + 1, True
        while self.i < len(toks) and toks[self.i].kind == "word":  # for x in WORDS
            self._loose(toks[self.i])
            self.i += 1

    def _test_expression(self, t: _Tok) -> None:
        """``[[ ... ]]`` as one command whose words are the expression (its substitutions run)."""
        toks, j = self.toks, self.i
        while j < len(toks) and toks[j].raw != "]]":
            j += 1
        if j >= len(toks):
            raise _Fail("unterminated [[")
        inner = toks[self.i - 1:j + 1]
        words = [w for x in inner for w in ((f"{x.fd or ''}{x.text}", x.target.text) if x.target else (x.text,))]
        text = self.src[t.start:toks[j].end]
        self.b.emit(words, [], [], text, self.ctx, [s for x in inner for s in x.all_subs()])
        self.i = j + 1

    def _token(self, t: _Tok) -> None:
        """A token inside a command: a word or redirection joins it; an operator ends it."""
        if t.kind == "word":
            self.words.append(t)
        elif t.kind == "redir":
            self.redirs.append(t)
        elif t.text == "(":
            if self.words or self.redirs:
                raise _Fail("unexpected (")
            self._open("(")
        else:
            self._end_stage(piped=t.text in ("|", "|&"))
            if t.text == ")":
                self._close(")")
            elif t.text in (";;", ";&", ";;&"):
                if not self.stack or self.stack[-1][0] != "esac":
                    raise _Fail(f"unexpected {t.text}")
                self.pattern = True

    def _loose(self, t: _Tok) -> None:
        """Substitutions in words that are not a command's (loop lists, case subjects, arithmetic)."""
        self.b.nested(t.all_subs(), replace(self.ctx, depth=self.ctx.depth + 1))

    def _flush(self) -> None:
        if not self.words and not self.redirs:
            return
        toks = sorted(self.words + self.redirs, key=lambda t: t.start)
        n = 0
        while n < len(self.words) and _ASSIGN.match(self.words[n].raw):
            n += 1
        text = self.src[min(t.start for t in toks):max(t.end for t in toks)]
        redirects = [Redirect(r.text, r.target.text if r.target else "", r.fd) for r in self.redirs]
        self.b.emit([t.text for t in self.words[n:]], [t.text for t in self.words[:n]], redirects, text,
                    self.ctx, [s for t in toks for s in t.all_subs()])
        self.words, self.redirs = [], []

    def _end_stage(self, piped: bool) -> None:
        self._flush()
        pid, stage, first = self.pipe
        if piped and pid == -1:
            pid = self.b.new_pid()
        if pid != -1:
            self.b.mark(first, pid, stage)
        self.pipe = (pid, stage + 1, len(self.b.out)) if piped else (-1, 0, len(self.b.out))

    def _open(self, kw: str) -> None:
        self.stack.append((_OPENERS[kw], self.pipe))
        self.pipe = (-1, 0, len(self.b.out))

    def _close(self, kw: str) -> None:
        self._end_stage(piped=False)
        if not self.stack or self.stack[-1][0] != kw:
            raise _Fail(f"unexpected {kw!r}")
        self.pipe = self.stack.pop()[1]
        self.pattern = False
