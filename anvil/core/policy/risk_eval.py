"""Code bash may run that the command's text does not show, and settings that make a program run other code.

A command is "nothing to run" only when the parser can prove it. This module finds what it cannot prove:

* arithmetic that evaluates a variable whose value is not provably a number (``x='a[$(cmd)]'; (( x ))`` runs
  ``cmd``): every variable read in ``((...))``, ``$((...))``, ``$[...]``, ``let``, ``[[ a -eq b ]]``, an indexed
  array subscript or a substring offset must be one the command only ever sets to a literal number (or to
  arithmetic), or one the shell keeps numeric (``$#``, ``RANDOM``). Variables set from input, file names,
  loops, command output or a name only known at run time are not.
* what the parser noted (``${!x}``, ``${x@P}``, code strings built at run time), the integer attribute
  (``declare -i``), namerefs, variable names only known at run time (set, tested with ``-v`` or unset: bash
  evaluates an array subscript in the name, ``x='a[$(cmd)]'; test -v "$x"`` runs ``cmd``), ``enable -f``,
  ``hash -p``, ``fc``;
* environment assignments that make a program load or run code (:func:`.env_vars.code_variable`), as a prefix,
  through ``env`` or ``sudo``, or exported for the commands after them.

Each is a :class:`Hidden` reason to ask. Code variables carry the assignment as an exact trigger: only an allow
rule that spells it out (``GIT_DIR=/srv/repo git status``) covers it. The rest no rule can cover.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from anvil.core.policy.env_vars import code_variable, split_assignment
from anvil.core.policy.risk_rows import split_options
from anvil.core.policy.shell_command import ParsedCommand, SimpleCommand, is_dynamic
from anvil.core.policy.shell_expansions import RUNTIME_TEXT, arithmetic_names
from anvil.core.policy.shell_lex import _Fail, _Lexer
from anvil.core.policy.shell_words import privileged_inner


@dataclass(frozen=True)
class Hidden:
    command: int
    reason: str
    triggers: tuple[str, ...] = ()  # exact words an allow rule must spell out; () = no rule can cover it


_INTEGER = re.compile(r"-?[0-9]+|0[xX][0-9a-fA-F]+|[0-9]+#[0-9A-Za-z@_]+|\$\(\([^`]*\)\)")
_DECLARE = frozenset({"declare", "typeset", "local", "export", "readonly"})
_ATTRIBUTES = frozenset({"declare", "typeset", "local"})  # the ones whose -i and -n set attributes
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
#: builtins whose operands (or an option's value) are variable names, with their options that take a value
_NAMES: dict[str, tuple[str, str]] = {  # name: (options taking a value, the options whose value is a name)
    "read": ("adinNptu", "a"), "mapfile": ("dnOsuCc", ""), "readarray": ("dnOsuCc", ""),
    "printf": ("v", "v"), "wait": ("p", "p"), "getopts": ("", ""),
}
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")  # brace expansion: export GIT_DIR{,}=x sets GIT_DIR
_SUBSCRIPT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[(.*)\]", re.DOTALL)
_DEFAULT_ASSIGN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(\[[^]]*\])?:?=")
_BUILTIN_REASONS = {
    "enable": ("-f", "loads a shared library into bash as a builtin"),
    "hash": ("-p", "makes a command name run another program"),
}


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _option_values(args: tuple[str, ...], takes_value: str) -> tuple[dict[str, list[str]], list[str]]:
    """Short options with their values (``-v NAME`` or ``-vNAME``) and the operands, for a builtin's words."""
    values: dict[str, list[str]] = {}
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or not a.startswith("-") or a == "-" or operands:
            operands.extend(args[i + 1:] if a == "--" else args[i:])
            break
        for j, letter in enumerate(a[1:], start=1):
            if letter in takes_value:
                value = a[j + 1:] or (args[i + 1] if i + 1 < len(args) else "")
                values.setdefault(letter, []).append(value)
                i += 0 if a[j + 1:] else 1
                break
            values.setdefault(letter, [])
        i += 1
    return values, operands


def _name_operands(cmd: SimpleCommand) -> tuple[list[str], bool]:
    """The variable names a builtin sets (or, for ``test -v``, reads), and whether it sets them."""
    name, args = cmd.name, cmd.args
    if name in _NAMES:
        takes_value, name_options = _NAMES[name]
        values, operands = _option_values(args, takes_value)
        names = [v for letter in name_options for v in values.get(letter, [])]
        if name in ("read", "mapfile", "readarray"):
            names += operands
        elif name == "getopts":
            names += operands[1:2]
        return names, True
    if name in _DECLARE:
        _, operands = split_options(args)
        return [re.split(r"\+?=", a, maxsplit=1)[0] for a in operands if "=" in a or cmd.name != "export"], True
    if name in ("test", "[", "[["):
        return [b for a, b in pairwise(args) if a == "-v"], False
    return [], False


def _computed_name(word: str) -> bool:
    return is_dynamic(word) or bool(_BRACES.search(word.split("=", 1)[0]))


def _tainted(parsed: ParsedCommand) -> tuple[set[str], bool]:
    """The variables the command may set to something other than a number, and whether it may set any variable
    at all (a name only known at run time, a nameref, a sourced file)."""
    names = set(parsed.loop_vars) | {m.group(1) for m in _DEFAULT_ASSIGN.finditer(parsed.source)}
    everything = False
    for cmd in parsed.commands:
        for assignment in (*cmd.env, *(a for a in cmd.args if cmd.name in _DECLARE)):
            parts = split_assignment(assignment)
            if parts and not _INTEGER.fullmatch(parts[1]):
                names.add(parts[0])
        targets, sets = _name_operands(cmd)
        for target in targets if sets else ():
            everything = everything or _computed_name(target)
            names.add(target.split("[", 1)[0])
        if cmd.name in ("source", ".") or (cmd.name in _ATTRIBUTES and any(
                o.startswith("-") and "n" in o[1:] for o in split_options(cmd.args)[0])):
            everything = True
    return names, everything


def _named(cmd: SimpleCommand) -> list[str]:
    """The variable names a builtin reads or removes by name, where bash evaluates an array subscript in them:
    ``test -v NAME`` (``[``, ``[[``) and ``unset NAME`` (not ``unset -f``, whose operands are functions)."""
    if cmd.name in ("test", "[", "[["):
        return [b for a, b in pairwise(cmd.args) if a in ("-v", "-R")]
    if cmd.name == "unset":
        opts, operands = split_options(cmd.args)
        return [] if any("f" in o[1:] for o in opts) else operands
    return []


def _expressions(cmd: SimpleCommand) -> list[str]:
    """Every arithmetic expression bash evaluates for this command."""
    exprs = list(cmd.arith)
    if cmd.name == "let":
        exprs += cmd.args
    if cmd.name == "[[":  # [[ a -eq b ]] evaluates both sides as arithmetic
        words = cmd.args
        exprs += [w for k in range(1, len(words) - 1) if words[k] in _ARITH_TESTS for w in (words[k - 1], words[k + 1])]
    targets, _ = _name_operands(cmd)
    for word in [*targets, *_named(cmd), *(a.split("=", 1)[0] for a in cmd.env)]:
        m = _SUBSCRIPT.fullmatch(word)
        if m:
            exprs.append(m.group(2))
    return exprs


def _arithmetic(cmd: SimpleCommand, index: int, tainted: set[str], everything: bool) -> list[Hidden]:
    out = []
    for expr in dict.fromkeys(_expressions(cmd)):
        names = arithmetic_names(expr)
        if names is None:
            what = "the output of a command or an expansion"
        else:
            bad = sorted(n for n in names if everything or n in tainted or n in RUNTIME_TEXT)
            if not bad:
                continue
            what = "the value of " + ", ".join(f"${n}" for n in bad)
        out.append(Hidden(index, f"evaluates {what} as arithmetic, which runs any command hidden in it "
                                 f"(like a[$(cmd)]): {_short(expr)}"))
    return out


def _builtins(cmd: SimpleCommand, index: int) -> list[Hidden]:
    """Builtins that change what later commands run, or make a variable evaluate what it is given."""
    out = []
    opts = split_options(cmd.args)[0]
    if cmd.name in _ATTRIBUTES and any(o.startswith("-") and "i" in o[1:] for o in opts):
        out.append(Hidden(index, "gives a variable the integer attribute: every value assigned to it is "
                                 "evaluated as arithmetic, which can run commands"))
    if cmd.name in _ATTRIBUTES and any(o.startswith("-") and "n" in o[1:] for o in opts):
        out.append(Hidden(index, "makes a variable a reference to another variable (a nameref)"))
    targets, sets = _name_operands(cmd)
    if sets and any(_computed_name(t) for t in targets):
        out.append(Hidden(index, f"sets a variable whose name is only known at run time: {_short(cmd.text)}"))
    if any(_computed_name(t) for t in _named(cmd)):
        out.append(Hidden(index, "names a variable only known at run time, whose array subscript bash evaluates "
                                 f"(running any command in it): {_short(cmd.text)}"))
    option, reason = _BUILTIN_REASONS.get(cmd.name, ("", ""))
    if option and any(o == option or o.startswith(option) for o in opts):
        out.append(Hidden(index, f"{reason}: {_short(cmd.text)}"))
    if cmd.name == "fc":
        out.append(Hidden(index, "re-runs commands from the shell's history"))
    return out


def _assignments(cmd: SimpleCommand) -> list[str]:
    """The environment a program gets from this command: prefixes, ``env``, ``sudo VAR=x``, ``export``."""
    out = list(cmd.env)
    inner = privileged_inner(cmd.words)
    if inner is not None:
        out += [w for w in cmd.words[1:len(cmd.words) - len(inner[1])] if split_assignment(w)]
    if cmd.name in _DECLARE:
        out += [a for a in split_options(cmd.args)[1] if split_assignment(a)]
    return out


def hidden_code(parsed: ParsedCommand) -> list[Hidden]:
    tainted, everything = _tainted(parsed)
    out: list[Hidden] = []
    for i, cmd in enumerate(parsed.commands):
        out += [Hidden(i, f"{reason}: {_short(cmd.text)}") for reason in cmd.late]
        out += _arithmetic(cmd, i, tainted, everything)
        out += _builtins(cmd, i)
        for assignment in _assignments(cmd):
            reason = code_variable(assignment)
            if reason:
                out.append(Hidden(i, reason, (assignment,)))
        targets, sets = _name_operands(cmd)
        for name in targets if sets and cmd.name not in _DECLARE else ():  # read PATH, printf -v LD_PRELOAD
            if reason := code_variable(f"{name.split('[', 1)[0]}=?"):
                out.append(Hidden(i, f"{reason}, to a value only known at run time: {_short(cmd.text)}"))
    for name in parsed.loop_vars:  # for PATH in /tmp/evil; do ...
        if reason := code_variable(f"{name}=?"):
            out.append(Hidden(0, f"{reason}, in a loop"))
    return out


def code_strings(parsed: ParsedCommand) -> list[str]:
    """Code inside the values of a command's words (``x='a[$(cmd)]'``): what bash runs if it evaluates them."""
    out = []
    for cmd in parsed.commands:
        for word in (*cmd.env, *cmd.argv):
            if "$(" in word or "`" in word:
                try:
                    out += [source for _, source in _Lexer(word).subs_in(0, len(word))]
                except _Fail:
                    continue
    return out
