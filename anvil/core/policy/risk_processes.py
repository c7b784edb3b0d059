"""Commands that start or end processes without bound: fork bombs, and kills of every process.

* A fork bomb is a function that starts copies of itself that run at the same time: a call to itself (or to a
  function that leads back to it) in a pipeline, in the background or in a substitution, whatever the function
  is called (``:(){ :|:& };:``, ``bomb(){ bomb | bomb & }``, ``function f { f & f; }``), and whether it names
  itself or reaches itself through ``$FUNCNAME``, a variable set to its name or an argument it is given
  (``f(){ $1 | $1 & }; f f``). Read from the parsed structure, so quoting and spacing do not hide it; a textual
  pattern stays as a second net. Also: an endless loop that starts background processes and never waits for
  them (``while true; do sleep 1 & done``), and ``fork`` in a loop in perl, python, ruby or node code.
  The sandbox's process cap (:mod:`anvil.core.sandbox.limits`) holds whatever shape gets past this.
* ``kill -9 -1``, ``kill -- -1``, ``kill -s KILL -1``: pid -1 is every process the user may signal. ``pkill -u
  USER`` without a pattern, ``killall -u USER`` without names, a pattern that matches every name, ``killall5``.
"""

from __future__ import annotations

import re

from anvil.core.policy.env_vars import split_assignment
from anvil.core.policy.risk_rows import split_options
from anvil.core.policy.shell_command import ParsedCommand, SimpleCommand, is_dynamic

_FORK_BOMB = re.compile(r"([\w:.]+)\(\)\{\1\|\1&")
#: ``$name``, ``${name}``, ``${name[0]}``, ``$1``, ``"$@"``
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*])(?:\[0\])?\}|\$([A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*])")
_INTERPRETER = re.compile(r"perl[0-9.]*|python[0-9.]*|pypy3?|ruby[0-9.]*|node|nodejs|bun|deno")
_LOOP = re.compile(r"\b(while|for|loop|until|repeat|times)\b|\.each\b")
_PKILL_VALUES = frozenset({"-g", "-G", "-P", "-s", "-t", "-u", "-U", "-F", "--pidfile", "--signal", "--pgroup",
                           "--group", "--parent", "--session", "--terminal", "--euid", "--uid", "--ns", "--nslist"})
_KILLALL_VALUES = frozenset({"-u", "--user", "-s", "--signal", "-o", "--older-than", "-y", "--younger-than",
                             "-n", "--ns", "-Z", "--context"})
_SAMPLE_NAMES = ("init", "bash", "x", "1", "python3")


def fork_bombs(parsed: ParsedCommand) -> list[int]:
    """Indexes of the calls that make a function start copies of itself at the same time, of background starts
    in an endless loop that never waits, and of code that forks in a loop."""
    cmds = parsed.commands
    defined = {c.function for c in cmds if c.function}
    calls: dict[str, set[str]] = {}
    spawns: list[tuple[int, str, str]] = []  # (index, caller, callee)
    for i, c in enumerate(cmds):
        for callee in _callees(c, cmds, defined) if c.function else ():
            calls.setdefault(c.function, set()).add(callee)
            if _concurrent(c, cmds):
                spawns.append((i, c.function, callee))
    out = [i for i, caller, callee in spawns if _reaches(callee, caller, calls)]
    waited = {c.loop for c in cmds if c.name == "wait"}
    out += [i for i, c in enumerate(cmds) if c.loop >= 0 and c.background and c.words and c.loop not in waited]
    out += [i for i, c in enumerate(cmds) if c.words and _forks_in_a_loop(c.words)]
    compact = re.sub(r"\s+", "", parsed.source)
    if not out and (_FORK_BOMB.search(compact) or "{:|:&}" in compact):
        out.append(0)
    return out


def _callees(c: SimpleCommand, cmds: tuple[SimpleCommand, ...], defined: set[str]) -> set[str]:
    """The functions a call inside a function may run: the name it is called by, or what its dynamic name can
    be (``$FUNCNAME``, a variable set to a function's name, an argument the function is called with)."""
    if not c.words:
        return set()
    program = c.words[0]
    if not is_dynamic(program):
        return {c.name} & defined
    name = _REFERENCE.fullmatch(program)
    if name is None:
        return set(defined)  # built from pieces: it could be any of them
    var = name.group(1) or name.group(2)
    if var == "FUNCNAME":
        return {c.function}
    if var.isdigit() or var in ("@", "*"):
        return {w for o in cmds if o.name == c.function for w in o.args} & defined
    values = {split[1] for o in cmds for a in (*o.env, *o.args) if (split := split_assignment(a)) and split[0] == var}
    return values & defined


def _forks_in_a_loop(words: tuple[str, ...]) -> bool:
    """``perl -e 'fork while fork'``, ``python -c 'while True: os.fork()'``, ``ruby -e 'loop { fork }'``."""
    if not _INTERPRETER.fullmatch(words[0].rsplit("/", 1)[-1]):
        return False
    code = " ".join(w for k, w in enumerate(words[1:], start=1) if words[k - 1] in ("-e", "-E", "-c", "--eval"))
    return bool(re.search(r"\bfork\b", code) and _LOOP.search(code))


def _concurrent(c: SimpleCommand, cmds: tuple[SimpleCommand, ...]) -> bool:
    """Runs alongside the code that started it: in the background, a pipeline, or a substitution."""
    piped = any(o.pipeline == c.pipeline and o.stage != c.stage for o in cmds)
    return c.background or piped or c.origin in ("substitution", "process substitution")


def _reaches(start: str, goal: str, calls: dict[str, set[str]]) -> bool:
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name == goal:
            return True
        if name not in seen:
            seen.add(name)
            todo.extend(calls.get(name, ()))
    return False


def kills_everything(words: tuple[str, ...], name: str) -> bool:
    """``kill`` with pid -1, or a ``pkill``/``killall`` that selects every process of a user or every name."""
    args = words[1:]
    if name == "kill":
        return "-1" in _kill_pids(args)
    if name == "killall5":
        return True
    if name not in ("pkill", "killall"):
        return False
    values = _PKILL_VALUES if name == "pkill" else _KILLALL_VALUES
    by_user = any(a in ("-u", "-U", "--user", "--uid", "--euid") or a.startswith(("--user=", "--uid=", "--euid="))
                  for a in args)
    operands = _operands(args, values)
    if by_user and not operands:
        return True
    return bool(operands) and (name == "pkill" or any(a in ("-r", "--regexp") for a in args)) and all(
        _matches_everything(p) for p in operands)


def _kill_pids(args: tuple[str, ...]) -> list[str]:
    i = 0
    if i < len(args) and args[i] in ("-l", "-L", "--list", "--table"):
        return []
    if i < len(args) and args[i] in ("-s", "-n", "--signal"):
        i += 2
    elif i < len(args) and args[i] != "--" and re.fullmatch(r"-(SIG)?[A-Za-z0-9+-]+", args[i]):
        i += 1  # the signal: -9, -KILL, -SIGKILL
    if i < len(args) and args[i] == "--":
        i += 1
    return list(args[i:])


def _operands(args: tuple[str, ...], takes_value: frozenset[str]) -> list[str]:
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return out + list(args[i + 1:])
        if a in takes_value:
            i += 2
            continue
        if not a.startswith("-") or a == "-":
            out.append(a)
        i += 1
    return out


def _matches_everything(pattern: str) -> bool:
    if is_dynamic(pattern):
        return False
    try:
        return all(re.search(pattern, n) for n in _SAMPLE_NAMES)
    except re.error:
        return False


def dynamic_pids(words: tuple[str, ...]) -> list[str]:
    """The pids of a ``kill`` only known at run time (``kill $(pgrep x)``), other than ``$!`` (the last job)."""
    _, operands = split_options(_kill_pids(words[1:]))
    return [p for p in operands if is_dynamic(p) and p not in ("$!", "${!}")]
