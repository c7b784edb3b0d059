"""Downloaded bytes that end up executed: ``curl | sh``, ``bash <(curl ...)``, ``eval "$(curl ...)"``.

No rule can pre-approve these: what runs is whatever the server sends that day.
"""

from __future__ import annotations

import posixpath
import re

from anvil.core.policy.risk_rows import split_options
from anvil.core.policy.shell_command import SimpleCommand, is_dynamic
from anvil.core.policy.shell_words import SHELLS, privileged_inner

_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "xh", "aria2c"})
INTERPRETER = re.compile(r"(python[0-9.]*|pypy3?|node|nodejs|deno|bun|ruby|perl|php)")


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _executes_input(words: tuple[str, ...]) -> bool:
    """A shell or interpreter that runs whatever it reads on stdin (``sh``, ``sudo bash -s``)."""
    inner = privileged_inner(words)
    words = inner[1] if inner else words
    if not words:
        return False
    name = posixpath.basename(words[0])
    if name not in SHELLS and not INTERPRETER.fullmatch(name):
        return False
    opts, operands = split_options(words[1:])
    if any(o in ("-e", "-m", "--eval", "-p", "-r") or (name in SHELLS and "c" in o[1:] and o[1] != "-")
           for o in opts):
        return False
    return not operands or operands[0] == "-" or "-s" in opts


def executed_downloads(cmds: tuple[SimpleCommand, ...]) -> list[tuple[int, str]]:
    """(index of the command that runs it, reason) for each download that ends up executed."""
    out = []
    for d in cmds:
        if d.name not in _DOWNLOADERS:
            continue
        for j, c in enumerate(cmds):
            if c.pipeline == d.pipeline and c.stage > d.stage and _executes_input(c.words):
                out.append((j, f"pipes a download into a shell: {_short(d.text, 40)} | {_short(c.text, 25)}"))
        parent = cmds[d.parent] if d.parent is not None else None
        if parent is not None and d.origin in ("substitution", "process substitution"):
            inner = privileged_inner(parent.words)
            words = inner[1] if inner else parent.words
            name = posixpath.basename(words[0]) if words else ""
            if name in SHELLS or INTERPRETER.fullmatch(name) or name in ("eval", "source", ".") or (
                    is_dynamic(parent.program)):
                out.append((d.parent, f"runs downloaded code: {_short(parent.text, 70)}"))
    return out
