"""Options that make an allowed program load or run other code: what a broad rule (``pytest *``, ``git *``,
``npm test *``) must not quietly cover.

``pytest -p plugin`` imports a plugin, ``-o``/``-c`` change the ini options (``addopts = -p x``); ``git -c
core.fsmonitor=CMD`` runs CMD; ``cargo --config`` can set a runner; ``npm --script-shell`` picks the shell scripts
run in; ``make --eval`` and ``make SHELL=`` change what recipes run. Each finding names the option and its value
as the words an allow rule must spell out.
"""

from __future__ import annotations

import os
import posixpath
import re
from itertools import pairwise

from anvil.core.policy.risk_paths import Places, inside
from anvil.core.policy.risk_rows import split_options

Risk = tuple[str, tuple[str, ...]]  # (reason, the words a rule must name)

_GIT_RUNS = re.compile("|".join((  # git config keys whose value is a command git will run
    r"core\.(pager|sshcommand|fsmonitor|editor|hookspath|askpass|gitproxy)", r"sequence\.editor", r"alias\.",
    r"diff\.external", r".*\.textconv", r"credential\.helper", r"gpg\.program", r".*command", r"include\.",
    r"includeif\.")), re.I)
#: option: does its value come attached (``-pNAME``) as well as in the next word
_PYTEST = ("-p", "-o", "--override-ini", "-c", "--config-file", "--confcutdir", "--rootdir")
_NPM = ("--script-shell", "--node-options", "--userconfig", "--globalconfig", "--init-module")
_MAKE = ("--eval", "-E")


def _valued(args: tuple[str, ...], options: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Each of ``options`` in ``args`` with its value: ``("-p", "x")`` for ``-p x``, ``("-px",)`` for ``-px``,
    ``("--opt=x",)`` for ``--opt=x``."""
    out: list[tuple[str, ...]] = []
    for i, a in enumerate(args):
        if a == "--":
            break
        for opt in options:
            if a == opt:
                out.append((a, *args[i + 1:i + 2]))
            elif a.startswith(opt + "=") or (not opt.startswith("--") and a.startswith(opt) and len(a) > len(opt)
                                                and len(opt) == 2):
                out.append((a,))
    return out


def _pytest(args: tuple[str, ...]) -> list[Risk]:
    out: list[Risk] = []
    for found in _valued(args, _PYTEST):
        value = found[-1].split("=", 1)[-1] if len(found) == 1 else found[-1]
        if found[0].startswith("-p") and value.removeprefix("-p").startswith("no:"):
            continue  # -p no:cacheprovider turns a plugin off
        what = "loads a pytest plugin (runs its code)" if found[0].startswith("-p") else \
            "changes pytest's configuration (which can load plugins)"
        out.append((what, found))
    return out


def _git(words: tuple[str, ...], sub_at: int | None) -> list[Risk]:
    """``-c key=command`` before the subcommand, and ``git config`` changing every repository's configuration."""
    out: list[Risk] = []
    head = words[:sub_at] if sub_at is not None else words
    if config := [v for k, v in pairwise(head) if k == "-c" and _GIT_RUNS.match(v)]:
        out.append(("sets git configuration that runs commands", tuple(config)))
    if paths := [w for w in head if w.startswith(("--exec-path=", "--config-env"))]:
        out.append(("makes git run programs from another place", tuple(paths)))
    if sub_at is not None and words[sub_at] == "config":
        opts, operands = split_options(words[sub_at + 1:])
        flags = [o for o in opts if o in ("--global", "--system")]
        if flags and (len(operands) >= 2 or any(o.startswith(("--unset", "--add", "--replace", "--remove"))
                                                for o in opts)):
            out.append(("changes git configuration outside the project", tuple(flags)))
        if operands and _GIT_RUNS.match(operands[0]) and len(operands) >= 2:
            out.append(("sets git configuration that runs commands", (operands[0],)))
    return out


_ELSEWHERE = ("-C", "--git-dir", "--work-tree")


def git_elsewhere(words: tuple[str, ...], sub_at: int | None, places: Places, cwd: str | None) -> list[Risk]:
    """Options that point git at another repository (``-C dir``, ``--git-dir``, ``--bare``) or work tree: git then
    reads that repository's configuration, whoever wrote it, and runs the programs it names. ``-C`` to the
    project's root stays plain ``git``. So does git in a directory of the project (``cd src && git diff``),
    unless a repository of its own sits on the way."""
    head = words[1:sub_at] if sub_at is not None else words[1:]
    out: list[Risk] = []
    for i, word in enumerate(head):
        option, _, attached = word.partition("=")
        if word == "--bare":
            out.append(("makes git read the current directory as a repository (its config can run programs)",
                        (word,)))
        elif option in _ELSEWHERE and (attached or word == option):
            value = attached or (head[i + 1] if i + 1 < len(head) else "")
            if option == "-C" and places.resolve(value, cwd) == places.root:
                continue
            found = (word,) if attached else (word, value)
            out.append(("points git at another repository or work tree (whose config can run programs)", found))
    if cwd is not None and cwd != places.root and inside(cwd, places.root) and _repository_on_the_way(cwd, places):
        out.append(("runs git in a repository inside the project other than its own (whose config can run "
                    "programs)", ()))
    return out


def _repository_on_the_way(path: str, places: Places) -> bool:
    """A directory between the project's root and ``path`` (itself included) is a repository of its own: it has a
    ``.git``, or is one (``HEAD`` and ``objects`` in it, as a bare repository has)."""
    while path != places.root and inside(path, places.root):
        if os.path.lexists(posixpath.join(path, ".git")) or (
                os.path.isfile(posixpath.join(path, "HEAD")) and os.path.isdir(posixpath.join(path, "objects"))):
            return True
        path = posixpath.dirname(path)
    return False


def option_risks(words: tuple[str, ...], sub_at: int | None) -> list[Risk]:
    """The options in ``words`` (a normalised command) that make its program load or run other code."""
    name, args = posixpath.basename(words[0]), words[1:]
    if name == "python" or re.fullmatch(r"python[0-9.]*", name):
        k = next((k for k, a in enumerate(args[:-1]) if a == "-m"), None)
        return _pytest(args[k + 2:]) if k is not None and args[k + 1] == "pytest" else []
    if name in ("pytest", "py.test"):
        return _pytest(args)
    if name == "git":
        return _git(words, sub_at)
    if name == "cargo":
        return [("sets cargo configuration (which can run programs)", found) for found in _valued(args, ("--config",))]
    if name in ("npm", "npx", "pnpm", "yarn"):
        return [("changes how the package manager runs scripts", found) for found in _valued(args, _NPM)]
    if name in ("make", "gmake"):
        assigned = tuple(a for a in args if a.startswith(("SHELL=", ".SHELLFLAGS=", "MAKESHELL=")))
        found = [*_valued(args, _MAKE), *((a,) for a in assigned)]
        return [("changes what make runs recipes with", f) for f in found]
    return []
