"""Read a shell command into the simple commands it would run, for the approval policy.

Decisions:

* bashlex gives the structure (lists, pipelines, compounds, redirections). Word values and the
  substitutions inside words come from our own lexer, because bashlex drops some (``$(...)`` inside
  ``${x:-...}``) and decodes ``$'...'`` wrongly. The lexer reads every command first: what it cannot read
  with certainty (an unterminated quote, a here-document whose end it cannot be sure of) is a parse failure.
  When bashlex cannot parse a command (``[[ ]]``, ``case``, ``((...))``, ``time``, arrays), and for every
  command with a here-document (so that one reader decides where each ends), the same lexer feeds a small
  flattening parser (:mod:`.shell_fallback`). Whatever neither can read is a parse failure: the policy asks,
  never guesses.
* Every command that would run is a :class:`~anvil.core.policy.shell_command.SimpleCommand`: those inside
  ``$(...)``, backticks, ``<(...)``, unquoted heredoc bodies, ``bash -c '...'`` / ``su -c`` / ``env -S`` /
  ``eval`` / ``trap`` / ``alias`` strings and ``find -exec`` too, each with ``parent`` pointing at the
  command that contained it (:mod:`.shell_build`). Nesting deeper than a few levels is a parse failure
  rather than a skim.
* ``words`` is the command normalised for matching: quotes removed, ``FOO=1`` prefixes moved to
  ``env``, and transparent wrappers (``command``, ``builtin``, ``exec``, ``env``, ``nice``,
  ``nohup``, ``time``, ``timeout``, ``stdbuf``, ``busybox``, ``xargs``, which runs its argument
  command) stripped, so ``\\rm``, ``"rm"`` and ``nice -n 5 rm`` all read as ``rm``. A wrapper
  option we do not know stops the stripping (the wrapper stays the program), which only ever makes
  a rule match less. ``sudo``/``doas`` are not stripped: running as root is what a rule must name;
  :func:`privileged_inner` looks inside.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from anvil.core.policy.shell_build import Builder, Ctx
from anvil.core.policy.shell_command import ParsedCommand, Redirect
from anvil.core.policy.shell_fallback import fallback_into
from anvil.core.policy.shell_lex import _ASSIGN, _Fail, _Lexer, _Notes, _Tok

_MAX_SOURCE = 100_000
#: a loop that never ends by itself: ``while true``, ``while :``, ``while [ 1 ]``, ``until false``
_ENDLESS = re.compile(r"\s*(while\s+(true|:|/bin/true|\[\s*1\s*\]|\(\(\s*1\s*\)\))|until\s+(false|/bin/false))\s*[;\n]")


def parse_command(source: str) -> ParsedCommand:
    if len(source) > _MAX_SOURCE:
        return ParsedCommand(source, error="command too long to check")
    b = Builder(parse_into)
    try:
        used = parse_into(source, b, Ctx())
    except _Fail as exc:
        return ParsedCommand(source, error=str(exc), parser="fallback")
    except Exception as exc:  # a bug or a pathological input must fail closed: the policy then asks
        return ParsedCommand(source, error=f"could not parse the command ({type(exc).__name__})",
                             parser="fallback")
    return ParsedCommand(source, b.finish(), parser=used, loop_vars=tuple(dict.fromkeys(b.loop_vars)))


def parse_into(source: str, b: Builder, ctx: Ctx) -> str:
    """Read ``source`` into ``b``; returns which parser did."""
    lexer = _Lexer(source)
    lexer.tokens()  # what the lexer cannot read with certainty fails here, whichever parser reads the structure
    if not lexer.heredoc_count:
        start, loops = len(b.out), len(b.loop_vars)
        try:
            bashlex_into(source, b, ctx)
            return "bashlex"
        except Exception:  # bashlex raises many kinds of errors on syntax it lacks; the fallback decides
            del b.out[start:]
            del b.loop_vars[loops:]
    fallback_into(source, b, ctx)
    return "fallback"


# --- bashlex: structure only; word values and substitutions come from our lexer --------------------

def bashlex_into(source: str, b: Builder, ctx: Ctx) -> None:
    import bashlex  # imported on first use: starting anvil does not need it

    for tree in bashlex.parse(source):
        _walk(tree, source, b, ctx)


def _walk(node: Any, src: str, b: Builder, ctx: Ctx) -> None:
    kind = node.kind
    if kind == "command":
        _command(node, src, b, ctx)
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
        _compound(node, src, b, ctx)
    else:
        raise _Fail(f"unsupported shell construct: {kind}")


def _command(node: Any, src: str, b: Builder, ctx: Ctx) -> None:
    argv: list[_Tok] = []
    env: list[str] = []
    redirects: list[Redirect] = []
    subs: list[tuple[str, str]] = []
    notes = _Notes()
    for part in node.parts:
        if part.kind == "redirect":
            redirects.append(_bashlex_redirect(part, src, subs, notes))
        elif part.kind in ("word", "assignment"):
            tok = _word(src[part.pos[0]:part.pos[1]])
            if (part.kind == "assignment" or _ASSIGN.match(tok.raw)) and not argv:  # bashlex misses a['k']=v
                env.append(tok.text)
            else:
                argv.append(tok)
            subs.extend(tok.subs)
            notes.add(tok.notes)
        else:
            raise _Fail(f"unsupported shell construct: {part.kind}")
    b.emit([t.text for t in argv], env, redirects, src[node.pos[0]:node.pos[1]], ctx, subs, notes,
           frozenset(k for k, t in enumerate(argv) if t.notes.expands))


def _compound(node: Any, src: str, b: Builder, ctx: Ctx) -> None:
    """Lists, compounds, loops and function definitions: what runs inside, and which part is started with ``&``."""
    kind, item_start = node.kind, len(b.out)
    parts = node.list if kind == "compound" else node.parts
    names = [p for p in parts if p.kind == "word"]
    if kind == "function" and names:
        ctx = replace(ctx, function=_word(src[names[0].pos[0]:names[0].pos[1]]).text)
    elif kind in ("while", "until") and _ENDLESS.match(src, node.pos[0]):
        ctx = replace(ctx, loop=b.new_pid())
    elif kind == "for" and names:
        b.loop_vars.append(_word(src[names[0].pos[0]:names[0].pos[1]]).text)
    for part in parts:
        if part.kind == "word":  # a for loop's words or a function's name
            tok = _word(src[part.pos[0]:part.pos[1]])
            b.loose(tok.raw, replace(ctx, depth=ctx.depth + 1), tok.subs, tok.notes)
        elif part.kind == "operator":
            if part.op == "&":
                b.background(item_start)
            if part.op in (";", "&", "\n"):
                item_start = len(b.out)
        elif part.kind not in ("reservedword", "pipe"):
            _walk(part, src, b, ctx)
    if getattr(node, "redirects", None):  # `{ ...; } > file`, `done < input`
        subs: list[tuple[str, str]] = []
        notes = _Notes()
        redirects = [_bashlex_redirect(r, src, subs, notes) for r in node.redirects]
        text = " ".join(src[r.pos[0]:r.pos[1]] for r in node.redirects)
        b.emit([], [], redirects, text, ctx, subs, notes)


def _bashlex_redirect(node: Any, src: str, subs: list[tuple[str, str]], notes: _Notes) -> Redirect:
    fd = node.input if isinstance(getattr(node, "input", None), int) else None
    out = getattr(node, "output", None)
    if hasattr(out, "pos"):
        tok = _word(src[out.pos[0]:out.pos[1]])
        target = tok.text
        subs.extend(tok.subs)
        notes.add(tok.notes)
    elif out is not None:
        target = str(out)
    else:  # bashlex drops the target of `<&0`
        target = src[node.pos[0]:node.pos[1]].split(node.type, 1)[-1].strip()
    heredoc = getattr(node, "heredoc", None)
    if heredoc is not None:  # bashlex only reads unquoted delimiters, whose bodies expand $(...)
        subs.extend(_Lexer(heredoc.value).subs_in(0, len(heredoc.value)))
    return Redirect(node.type, target, fd)


def _word(raw: str) -> _Tok:
    lexer = _Lexer(raw)
    tok = lexer.word()
    if lexer.i != len(raw):
        raise _Fail(f"cannot read the word {raw!r}")
    return tok
