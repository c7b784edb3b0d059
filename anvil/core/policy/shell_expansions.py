"""Where bash evaluates a value as code after the command text has been read, and what such a value may name.

Bash evaluates arithmetic in ``((...))``, ``$((...))``, ``$[...]``, ``let``, indexed array subscripts (``a[i]=``,
``${a[i]}``), substring offsets (``${y:x}``) and the operands of ``[[ a -eq b ]]``. In arithmetic a variable's
*value* is evaluated again, and a value such as ``a[$(rm -rf ~)]`` runs the command in its subscript: so
``x='a[$(cmd)]'; (( x ))`` runs ``cmd`` although no ``$(...)`` is ever expanded where the text shows it.
``${!x}`` (indirect expansion) does the same with a variable *name*, and ``${x@P}`` expands a value as a prompt
string, running the command substitutions in it.

:func:`parameter_expansion` reads one ``${...}`` for the lexer; :func:`arithmetic_names` says which variables an
arithmetic expression reads, or that it evaluates something no one can read (a command's output).
"""

from __future__ import annotations

import re

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PARAM = re.compile(rf"(?P<hash>#)?(?P<bang>!)?(?P<name>{_NAME}|[0-9]+|[@*#?$!-])(?P<sub>\[)?")
#: after the name (and subscript): a default/assign/alternative/error word, a pattern, a case change, a transform
_WORD_OPERATORS = (":-", ":=", ":+", ":?", "-", "=", "+", "?", "#", "%", "/", "^", ",")

INDIRECT = "expands a variable whose name is only known at run time (${!...}), which can run commands"
PROMPT = "expands a value as a prompt string (${...@P}), which runs the commands in it"
UNREADABLE = "uses a parameter expansion the checker cannot read"


def _closing_bracket(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i
    return -1


def parameter_expansion(body: str) -> tuple[list[str], list[str]]:
    """For the text inside ``${...}``: (arithmetic expressions bash evaluates, reasons it may run hidden code)."""
    m = _PARAM.match(body)
    if m is None:
        return [], [UNREADABLE]
    exprs: list[str] = []
    rest = body[m.end():]
    if m.group("sub"):
        end = _closing_bracket(body, m.end() - 1)
        if end < 0:
            return [], [UNREADABLE]
        subscript = body[m.end():end]
        if subscript not in ("@", "*"):
            exprs.append(subscript)
        rest = body[end + 1:]
    if m.group("bang") and not m.group("hash"):
        names_only = rest in ("*", "@") or (m.group("sub") and body[m.end():m.end() + 1] in "@*" and not rest)
        return exprs, [] if names_only else [INDIRECT]  # ${!prefix*} and ${!a[@]} list names and keys
    if rest.startswith("@"):
        return exprs, [PROMPT] if rest.startswith("@P") else []
    if rest.startswith(":") and not rest.startswith(_WORD_OPERATORS):
        exprs.append(rest[1:])  # ${y:offset} and ${y:offset:length} are arithmetic
    elif rest and not rest.startswith(_WORD_OPERATORS):
        return exprs, [UNREADABLE]
    return exprs, []


_ARITH_TOKEN = re.compile(r"\$\{(?P<braced>[^}]*)\}|\$(?P<plain>[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!_-])|"
                          r"(?P<number>[0-9][A-Za-z0-9_#@]*)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)")
#: specials and variables that always hold a number (or are set by the shell to one)
_NUMERIC = frozenset({"#", "?", "$", "!", "RANDOM", "SRANDOM", "SECONDS", "LINENO", "BASHPID", "PPID", "UID", "EUID",
                      "SHLVL", "OPTIND", "EPOCHSECONDS", "HISTCMD", "COLUMNS", "LINES"})
#: variables the shell sets from text it reads (input, file names, matches, arguments): never provably numbers
RUNTIME_TEXT = frozenset({"_", "REPLY", "MAPFILE", "BASH_REMATCH", "OPTARG", "PWD", "OLDPWD", "BASH_COMMAND",
                          "BASH_ARGV", "DIRSTACK", "FUNCNAME", "BASH_SOURCE", "COPROC", "READLINE_LINE", "HOME",
                          "IFS", "PATH", "@", "*", "-", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"})


def arithmetic_names(expr: str) -> set[str] | None:
    """The variables an arithmetic expression reads (``$x`` and bare ``x`` alike: both are evaluated), without
    the ones that always hold numbers; None when it evaluates something that is not a variable at all (a
    command's output, an expansion with an operator), which cannot be proved harmless."""
    if "$(" in expr or "`" in expr or "$[" in expr:
        return None
    names: set[str] = set()
    for m in _ARITH_TOKEN.finditer(expr):
        name = m.group("braced")
        if name is not None and not re.fullmatch(rf"#?{_NAME}|#?[0-9]+", name):
            return None
        if name is not None and name.startswith("#"):
            continue  # ${#x}: a length
        name = name or m.group("plain") or m.group("name")
        if name and name not in _NUMERIC:
            names.add(name)
    return names
