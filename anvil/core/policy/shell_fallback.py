"""The fallback parser: flattens what bashlex cannot read (``[[ ]]``, ``case``, ``((...))``, ``select``, here-documents,
arrays) into simple commands, from the tokens of :mod:`.shell_lex`.

It keeps only what the policy needs: which simple commands run, in which pipeline stage, inside which function,
whether they are started with ``&``, and the words that belong to no command (loop lists, case subjects and
patterns, arithmetic commands), whose substitutions run and whose arithmetic is evaluated.
"""

from __future__ import annotations

from dataclasses import replace

from anvil.core.policy.shell_build import Builder, Ctx
from anvil.core.policy.shell_command import Redirect
from anvil.core.policy.shell_lex import _ASSIGN, _Fail, _Lexer, _Notes, _Tok

_OPENERS = {"if": "fi", "while": "done", "until": "done", "for": "done", "select": "done", "case": "esac",
            "{": "}", "(": ")"}
_NOISE = frozenset({"then", "else", "elif", "do", "!", "time", "coproc"})
_SEPARATORS = frozenset({";", "&", "\n", ";;", ";&", ";;&"})


def fallback_into(source: str, b: Builder, ctx: Ctx) -> None:
    start = len(b.out)
    _Flat(source, b, replace(ctx, pipe=None)).run(_Lexer(source).tokens())
    if ctx.pipe is not None:
        b.mark(start, *ctx.pipe)


class _Flat:
    def __init__(self, src: str, b: Builder, ctx: Ctx) -> None:
        self.src, self.b, self.ctx = src, b, ctx
        self.words: list[_Tok] = []
        self.redirs: list[_Tok] = []
        # (closing word, outer pipeline state, outer list start, outer function)
        self.stack: list[tuple[str, tuple[int, int, int], int, str]] = []
        self.pipe = (-1, 0, len(b.out))  # pipeline id, stage, first command of the stage
        self.list_start = len(b.out)  # first command of the and-or list being read (what `&` sends off)
        self.pattern = False  # a case pattern comes next
        self.function = ""  # a function definition's name, until its body opens
        self.toks: list[_Tok] = []
        self.i = 0  # the next token run() reads

    def run(self, toks: list[_Tok]) -> None:
        self.toks, self.i = toks, 0
        while self.i < len(toks):
            t = toks[self.i]
            self.i += 1
            if self.pattern and t.kind != "nl":
                self._pattern(t)
            elif t.kind == "word" and not self.words and not self.redirs:
                self._first_word(t)
            else:
                self._token(t)
        self._end_stage(piped=False)
        if self.stack:
            raise _Fail(f"missing {self.stack[-1][0]!r}")

    def _pattern(self, t: _Tok) -> None:
        """A case pattern (``a|b)``) runs no program, but its substitutions run: read up to its ``)``."""
        if t.raw == "esac":
            self._close("esac")
            return
        toks = self.toks
        j = self.i if t.text == "(" else self.i - 1
        while j < len(toks) and not (toks[j].kind == "op" and toks[j].text == ")"):
            if toks[j].kind == "word":
                self._loose(toks[j])
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
        elif kw == "function" and i < len(toks):
            self.function = toks[i].text
            self.i += 3 if toks[i + 1:i + 2] and toks[i + 1].text == "(" else 1
        elif kw == "[[":
            self._test_expression(t)
        elif [(x.kind, x.text) for x in toks[i:i + 2]] == [("op", "("), ("op", ")")]:
            self.function = t.text  # a function definition: name () { ...; }
            self.i += 2
        else:
            self.words.append(t)

    def _loop_words(self, kw: str) -> None:
        """The words after ``for x in``, ``select``, ``case WORD in``: they run nothing but may hold substitutions."""
        toks = self.toks
        if kw != "case" and self.i < len(toks) and toks[self.i].kind == "word" and not toks[self.i].arith:
            self.b.loop_vars.append(toks[self.i].text)
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
        self.b.emit(words, [], [], text, self.ctx, [s for x in inner for s in x.all_subs()], _notes(inner))
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
            if t.text == "&":
                self.b.background(self.list_start)
            if t.text in _SEPARATORS:
                self.list_start = len(self.b.out)
            if t.text == ")":
                self._close(")")
            elif t.text in (";;", ";&", ";;&"):
                if not self.stack or self.stack[-1][0] != "esac":
                    raise _Fail(f"unexpected {t.text}")
                self.pattern = True

    def _loose(self, t: _Tok) -> None:
        """Words that are no command's (loop lists, case subjects and patterns, arithmetic commands)."""
        self.b.loose(t.raw, replace(self.ctx, depth=self.ctx.depth + 1), t.all_subs(), t.all_notes())

    def _flush(self) -> None:
        if not self.words and not self.redirs:
            return
        toks = sorted(self.words + self.redirs, key=lambda t: t.start)
        n = 0
        while n < len(self.words) and _ASSIGN.match(self.words[n].raw):
            n += 1
        text = self.src[min(t.start for t in toks):max(t.end for t in toks)]
        redirects = [Redirect(r.text, r.target.text if r.target else "", r.fd) for r in self.redirs]
        argv = self.words[n:]
        self.b.emit([t.text for t in argv], [t.text for t in self.words[:n]], redirects, text, self.ctx,
                    [s for t in toks for s in t.all_subs()], _notes(toks),
                    frozenset(k for k, t in enumerate(argv) if t.notes.expands))
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
        self.stack.append((_OPENERS[kw], self.pipe, self.list_start, self.ctx.function))
        if self.function and kw in ("{", "("):
            self.ctx = replace(self.ctx, function=self.function)
        self.function = ""
        self.pipe = (-1, 0, len(self.b.out))
        self.list_start = len(self.b.out)

    def _close(self, kw: str) -> None:
        self._end_stage(piped=False)
        if not self.stack or self.stack[-1][0] != kw:
            raise _Fail(f"unexpected {kw!r}")
        _, self.pipe, self.list_start, function = self.stack.pop()
        self.ctx = replace(self.ctx, function=function)
        self.pattern = False


def _notes(toks: list[_Tok]) -> _Notes:
    out = _Notes()
    for t in toks:
        out.add(t.all_notes())
    return out
