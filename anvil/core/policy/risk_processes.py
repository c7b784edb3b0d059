"""Commands that start or end processes without bound: fork bombs in any shape, and kills of every process.

* A fork bomb is a function that starts copies of itself that run at the same time: a call to itself (or to a
  function that leads back to it) in a pipeline, in the background or in a substitution, whatever the function
  is called (``:(){ :|:& };:``, ``bomb(){ bomb | bomb & }``, ``function f { f & f; }``). Read from the parsed
  structure, so quoting and spacing do not hide it; a textual pattern stays as a second net.
* ``kill -9 -1``, ``kill -- -1``, ``kill -s KILL -1``: pid -1 is every process the user may signal. ``pkill -u
  USER`` without a pattern, ``killall -u USER`` without names, a pattern that matches every name, ``killall5``.
"""

from __future__ import annotations

import re

from anvil.core.policy.risk_rows import split_options
from anvil.core.policy.shell_command import ParsedCommand, SimpleCommand, is_dynamic

_FORK_BOMB = re.compile(r"([\w:.]+)\(\)\{\1\|\1&")
_PKILL_VALUES = frozenset({"-g", "-G", "-P", "-s", "-t", "-u", "-U", "-F", "--pidfile", "--signal", "--pgroup",
                           "--group", "--parent", "--session", "--terminal", "--euid", "--uid", "--ns", "--nslist"})
_KILLALL_VALUES = frozenset({"-u", "--user", "-s", "--signal", "-o", "--older-than", "-y", "--younger-than",
                             "-n", "--ns", "-Z", "--context"})
_SAMPLE_NAMES = ("init", "bash", "x", "1", "python3")


def fork_bombs(parsed: ParsedCommand) -> list[int]:
    """Indexes of the calls that make a function start copies of itself at the same time."""
    cmds = parsed.commands
    defined = {c.function for c in cmds if c.function}
    calls: dict[str, set[str]] = {}
    spawns: list[tuple[int, str, str]] = []  # (index, caller, callee)
    for i, c in enumerate(cmds):
        if c.function and c.name in defined:
            calls.setdefault(c.function, set()).add(c.name)
            if _concurrent(c, cmds):
                spawns.append((i, c.function, c.name))
    out = [i for i, caller, callee in spawns if _reaches(callee, caller, calls)]
    compact = re.sub(r"\s+", "", parsed.source)
    if not out and (_FORK_BOMB.search(compact) or "{:|:&}" in compact):
        out.append(0)
    return out


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
