"""A shell lexer for the approval policy: words with their real values, and the code inside them.

bashlex gives anvil the structure of a command, but it drops substitutions nested in parameter expansions
(``"${x:-$(rm y)}"``) and decodes ``$'\\x72m'`` wrongly, so the values of words and the ``$(...)``/backtick
code inside them come from this lexer. The fallback parser in :mod:`anvil.core.policy.shell_parse` also reads its
tokens when bashlex cannot parse a command at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from anvil.core.policy.shell_expansions import parameter_expansion

#: A shell variable assignment prefix such as FOO=1, arr[0]=x or PATH+=:/bin.
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


class _Fail(Exception):
    """The command cannot be read with confidence."""


# --- our lexer ---------------------------------------------------------------------------------------

_META = frozenset(" \t\n;&|()<>")
_REDIR = re.compile(r"(\d*)(&>>|&>|<<<|<<-|<<|>>|>&|<&|<>|>\||>|<)")
_OPS = ("&&", "||", ";;&", ";;", ";&", "|&", ";", "|", "&", "(", ")")
_ESC = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
        "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_NUM_ESC = re.compile(r"x([0-9a-fA-F]{1,2})|([0-7]{1,3})")


@dataclass
class _Notes:
    """What bash evaluates in a word beyond its visible substitutions (see :mod:`.shell_expansions`)."""

    exprs: list[str] = field(default_factory=list)  # arithmetic expressions
    late: list[str] = field(default_factory=list)  # reasons it may run code the text does not show
    expands: bool = False  # a parameter, arithmetic or command expansion outside single quotes

    def add(self, other: _Notes) -> None:
        self.exprs += other.exprs
        self.late += other.late
        self.expands = self.expands or other.expands


@dataclass
class _Tok:
    kind: str  # "word", "op", "redir", "nl"
    text: str  # a word's value (quotes removed), or the operator
    start: int
    end: int
    raw: str = ""
    subs: list[tuple[str, str]] = field(default_factory=list)  # (origin, inner source)
    fd: int | None = None
    target: _Tok | None = None
    arith: bool = False  # a ``((...))`` command
    notes: _Notes = field(default_factory=_Notes)

    def all_subs(self) -> list[tuple[str, str]]:
        return self.subs + (self.target.subs if self.target else [])

    def all_notes(self) -> _Notes:
        out = _Notes()
        out.add(self.notes)
        if self.target:
            out.add(self.target.notes)
        return out


@dataclass
class _Nesting:
    """What is open in the code being read, so that only the right ``)`` ends a ``$(``."""

    parens: int = 0
    cases: int = 0


class _Lexer:
    def __init__(self, src: str) -> None:
        self.s, self.i = src, 0
        self.heredocs: list[tuple[_Tok, str, bool, bool]] = []  # owner, delimiter, strip tabs, expands
        self.heredoc_count = 0
        self._notes = [_Notes()]  # the innermost word being read collects what bash evaluates in it

    @contextmanager
    def _collect(self) -> Iterator[_Notes]:
        notes = _Notes()
        self._notes.append(notes)
        try:
            yield notes
        finally:
            self._notes.pop()

    @property
    def notes(self) -> _Notes:
        return self._notes[-1]

    def tokens(self, closer: bool = False) -> list[_Tok]:
        """All tokens, or (``closer``) those up to the ``)`` that ends a ``$(`` or ``<(``."""
        s, nesting = self.s, _Nesting()
        out: list[_Tok] = []
        while True:
            while self.i < len(s) and (s[self.i] in " \t" or s.startswith("\\\n", self.i)):
                self.i += 2 if s[self.i] == "\\" else 1
            if self.i >= len(s):
                if closer:
                    raise _Fail("unterminated $( or <(")
                if self.heredocs:
                    raise _Fail("a here-document without its end line")
                return out
            c, start = s[self.i], self.i
            if c == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            elif c == "\n":
                self.i += 1
                out.append(_Tok("nl", "\n", start, start + 1))
                self._read_heredocs()
            elif s.startswith("((", self.i) and (end := self._arith_end(self.i + 2)) is not None:
                raw = s[start:end]
                with self._collect() as notes:
                    subs = self.subs_in(start + 2, end - 2)
                notes.exprs.append(s[start + 2:end - 2])
                out.append(_Tok("word", raw, start, end, raw, subs, arith=True, notes=notes))
                self.i = end
            elif c in "<>" and s.startswith("(", self.i + 1):
                out.append(self.word())
            elif m := _REDIR.match(s, self.i):
                out.append(self._redirection(m))
            elif op := next((o for o in _OPS if s.startswith(o, self.i)), None):
                if self._operator(op, out, closer, nesting):
                    return out
            else:
                out.append(self._command_word(out, nesting))

    def _redirection(self, m: re.Match[str]) -> _Tok:
        s, start = self.s, self.i
        self.i = m.end()
        while self.i < len(s) and s[self.i] in " \t":
            self.i += 1
        if self.i >= len(s) or (s[self.i] in _META and not s.startswith(("<(", ">("), self.i)):
            raise _Fail("a redirection without a target")
        target = self.word()
        fd = int(m.group(1)) if m.group(1) else None
        tok = _Tok("redir", m.group(2), start, target.end, s[start:target.end], fd=fd, target=target)
        if tok.text in ("<<", "<<-"):
            if "\\\n" in target.raw or "$" in target.raw or "`" in target.raw:
                raise _Fail("a here-document delimiter the checker cannot be sure of (a continued line or $)")
            target.notes = _Notes()  # a delimiter is never expanded
            self.heredocs.append((tok, target.text, tok.text == "<<-", target.raw == target.text))
            self.heredoc_count += 1
        return tok

    def _operator(self, op: str, out: list[_Tok], closer: bool, nesting: _Nesting) -> bool:
        """Read an operator; True when it is the ``)`` that ends the ``$(`` being read."""
        if op == ")" and closer and nesting.parens == 0 and nesting.cases == 0:
            if self.heredocs:
                raise _Fail("a here-document that does not end inside its $(...)")
            self.i += 1
            return True
        if op == "(" or (op == ")" and nesting.parens > 0):  # else it closes a case pattern
            nesting.parens += 1 if op == "(" else -1
        start, self.i = self.i, self.i + len(op)
        out.append(_Tok("op", op, start, self.i, op))
        return False

    def _command_word(self, out: list[_Tok], nesting: _Nesting) -> _Tok:
        tok = self.word()
        if tok.raw in ("case", "esac") and (not out or out[-1].kind in ("op", "nl")):
            nesting.cases += 1 if tok.raw == "case" else -1  # so a case pattern's ")" does not end $(
        return tok

    def word(self) -> _Tok:
        with self._collect() as notes:
            tok = self._word()
        tok.notes = notes
        return tok

    def _word(self) -> _Tok:
        s, start = self.s, self.i
        buf: list[str] = []
        subs: list[tuple[str, str]] = []
        if s[start] in "<>" and s.startswith("(", start + 1):
            self.i += 2
            self.tokens(closer=True)
            subs.append(("process substitution", s[start + 2:self.i - 1]))
            buf.append(s[start:self.i])
        while self.i < len(s):
            c = s[self.i]
            if c in _META:
                if c != "(" or not _ASSIGN.fullmatch(s[start:self.i]):
                    break
                begin, self.i = self.i, self.i + 1  # an array assignment: arr=(a "b c" $(d))
                for t in self.tokens(closer=True):
                    subs.extend(t.all_subs())
                buf.append(s[begin:self.i])
            elif c == "\\":
                if not s.startswith("\n", self.i + 1):  # backslash-newline joins lines
                    buf.append(s[self.i + 1:self.i + 2] or "\\")
                self.i = min(self.i + 2, len(s))
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise _Fail("unterminated single quote")
                buf.append(s[self.i + 1:end])
                self.i = end + 1
            elif c == '"':
                self.i += 1
                self._expand(buf, subs, '"')
            elif c == "`":
                self._backtick(buf, subs)
            elif c == "$":
                self._dollar(buf, subs, quoted=False)
            else:
                buf.append(c)
                self.i += 1
        return _Tok("word", "".join(buf), start, self.i, s[start:self.i], subs)

    def subs_in(self, start: int, end: int) -> list[tuple[str, str]]:
        """The substitutions in an expanding region (a heredoc body, ``${...}``, ``$((...))``)."""
        saved, self.i = self.i, start
        subs: list[tuple[str, str]] = []
        self._expand([], subs, None, end)
        self.i = saved
        return subs

    def _expand(self, buf: list[str], subs: list[tuple[str, str]], stop: str | None,
                end: int | None = None) -> None:
        s = self.s
        limit = len(s) if end is None else end
        while self.i < limit:
            c = s[self.i]
            if c == stop:
                self.i += 1
                return
            if c == "\\":
                nxt = s[self.i + 1:self.i + 2]
                if nxt in ("$", "`", '"', "\\", "\n"):
                    buf.append("" if nxt == "\n" else nxt)
                    self.i += 2
                else:
                    buf.append("\\")
                    self.i += 1
            elif c == "$":
                self._dollar(buf, subs, quoted=True)
            elif c == "`":
                self._backtick(buf, subs)
            else:
                buf.append(c)
                self.i += 1
        if stop is not None or self.i > limit:
            raise _Fail("unterminated double quote" if stop else "unbalanced substitution")

    def _dollar(self, buf: list[str], subs: list[tuple[str, str]], quoted: bool) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1:i + 2]
        if nxt in ("(", "{", "[") or re.match(r"[A-Za-z0-9_@*#?$!-]", nxt):
            self.notes.expands = True
        if nxt == "(":
            end = self._arith_end(i + 3) if s.startswith("((", i + 1) else None
            if end is not None:  # $((...)): substitutions inside it run, and its variables' values are evaluated
                subs.extend(self.subs_in(i + 3, end - 2))
                self.notes.exprs.append(s[i + 3:end - 2])
                self.i = end
            else:
                self.i = i + 2
                self.tokens(closer=True)
                subs.append(("substitution", s[i + 2:self.i - 1]))
            buf.append(s[i:self.i])
        elif nxt in ("{", "["):
            end = self._close(i + 2, nxt, "}" if nxt == "{" else "]")
            subs.extend(self.subs_in(i + 2, end - 1))
            exprs, late = parameter_expansion(s[i + 2:end - 1]) if nxt == "{" else ([s[i + 2:end - 1]], [])
            self.notes.exprs.extend(exprs)
            self.notes.late.extend(late)
            buf.append(s[i:end])
            self.i = end
        elif nxt == "'" and not quoted:
            self._ansi(buf)
        elif nxt == '"' and not quoted:
            self.i = i + 2
            self._expand(buf, subs, '"')
        else:
            buf.append("$")
            self.i = i + 1

    def _ansi(self, buf: list[str]) -> None:
        """``$'...'``: decoded, so ``$'\\x72m'`` reads as ``rm``."""
        s, j, out = self.s, self.i + 2, []
        while j < len(s) and s[j] != "'":
            if s[j] == "\\" and j + 1 < len(s):
                m = _NUM_ESC.match(s, j + 1)
                if m:
                    out.append(chr(int(m.group(1), 16) if m.group(1) else int(m.group(2), 8)))
                    j = m.end()
                else:
                    out.append(_ESC.get(s[j + 1], "\\" + s[j + 1]))
                    j += 2
            else:
                out.append(s[j])
                j += 1
        if j >= len(s):
            raise _Fail("unterminated $'...'")
        buf.append("".join(out))
        self.i = j + 1

    def _backtick(self, buf: list[str], subs: list[tuple[str, str]]) -> None:
        self.notes.expands = True
        s, j, inner = self.s, self.i + 1, []
        while j < len(s) and s[j] != "`":
            if s[j] == "\\" and s[j + 1:j + 2] in ("`", "\\", "$"):
                inner.append(s[j + 1])
                j += 2
            else:
                inner.append(s[j])
                j += 1
        if j >= len(s):
            raise _Fail("unterminated backquote")
        subs.append(("substitution", "".join(inner)))
        buf.append(s[self.i:j + 1])
        self.i = j + 1

    def _close(self, j: int, opener: str, closer: str) -> int:
        s, depth = self.s, 1
        while j < len(s):
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c in "'\"":
                end = s.find(c, j + 1)
                if end < 0:
                    break
                j = end
            elif c == opener:
                depth += 1
            elif c == closer:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise _Fail(f"unterminated ${opener}")

    def _arith_end(self, j: int) -> int | None:
        """End of ``((...))`` starting after its ``((``, or None when it is really ``( (...) ...)``."""
        s, depth = self.s, 0
        while j < len(s):
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                if depth == 0:
                    return j + 2 if s.startswith("))", j) else None
                depth -= 1
            j += 1
        return None

    def _read_heredocs(self) -> None:
        s = self.s
        pending, self.heredocs = self.heredocs, []
        for owner, delimiter, strip_tabs, expands in pending:
            start = body_end = self.i
            while self.i < len(s):
                end = s.find("\n", self.i)
                end = len(s) if end < 0 else end
                line, body_end = s[self.i:end], self.i
                self.i = min(end + 1, len(s))
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
            else:
                raise _Fail(f"a here-document without its end line ({delimiter})")
            if expands:  # an unquoted delimiter: $(...) in the body runs, arithmetic in it is evaluated
                with self._collect() as notes:
                    owner.subs.extend(self.subs_in(start, body_end))
                owner.notes.add(notes)
