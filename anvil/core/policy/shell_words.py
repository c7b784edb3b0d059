"""Normalising simple commands for matching: which program really runs, behind which wrappers.

``\\rm``, ``"rm"``, ``command rm``, ``env FOO=1 rm``, ``nice``/``nohup``/``timeout 5``/``xargs`` all run ``rm``;
:func:`unwrap` peels those wrappers off so rules and risk checks see the real program. ``sudo``-like
wrappers are not peeled (a rule has to name them); :func:`privileged_inner` finds what they run.
Code inside ``bash -c``, ``eval``, ``trap``, ``alias`` and ``find -exec`` is found here too, to be parsed in turn.
"""

from __future__ import annotations

import posixpath

from anvil.core.policy.shell_lex import _ASSIGN

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})

_F = frozenset
# name: (short flags, short options taking a value, long options taking a value, long flags)
_Spec = tuple[str, str, frozenset[str], frozenset[str]]
_WRAPPERS: dict[str, _Spec] = {
    "builtin": ("", "", _F(), _F()),
    "busybox": ("", "", _F(), _F()),
    "command": ("p", "", _F(), _F()),  # -v/-V make it a lookup, not a run: unknown, so it stays
    "exec": ("cl", "a", _F(), _F()),
    "nohup": ("", "", _F(), _F()),
    "nice": ("", "n", _F({"--adjustment"}), _F()),
    "time": ("pvqa", "fo", _F({"--format", "--output"}), _F({"--portability", "--verbose", "--append"})),
    "timeout": ("v", "sk", _F({"--signal", "--kill-after"}), _F({"--foreground", "--preserve-status"})),
    "stdbuf": ("", "ioe", _F({"--input", "--output", "--error"}), _F()),
    "env": ("i0", "uC", _F({"--unset", "--chdir"}), _F({"--ignore-environment", "--null"})),
    "xargs": ("0rtpxo", "ILnPsdEa", _F({"--max-args", "--max-procs", "--max-lines", "--max-chars",
                                        "--delimiter", "--arg-file", "--eof", "--process-slot-var"}),
              _F({"--null", "--no-run-if-empty", "--verbose", "--interactive", "--open-tty", "--exit"})),
}
_PRIVILEGED: dict[str, _Spec] = {
    "sudo": ("AbBEeHiKklnPSsVvh", "ugpCDrtTU", _F({"--user", "--group", "--prompt", "--chdir", "--role",
                                                   "--type", "--close-from", "--other-user", "--host"}),
             _F({"--preserve-env", "--login", "--shell", "--non-interactive", "--stdin", "--set-home",
                 "--background", "--askpass", "--preserve-groups"})),
    "doas": ("ns", "uCa", _F(), _F()),
    "pkexec": ("", "", _F({"--user"}), _F({"--keep-cwd", "--disable-internal-agent"})),
    "run0": ("", "uDg", _F({"--user", "--chdir", "--group", "--description"}), _F()),
}


def _skip_options(args: list[str] | tuple[str, ...], spec: _Spec, name: str) -> int | None:
    """Index of the first operand after ``name``'s options, or None when an option is unknown."""
    short, short_value, long_value, long_flags = spec
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return i + 1
        if a.startswith("--"):
            key = a.split("=", 1)[0]
            if key in long_value:
                i += 1 if "=" in a else 2
            elif key in long_flags or (name == "xargs" and key == "--replace"):
                i += 1
            else:
                return None
            continue
        if not a.startswith("-") or a == "-":
            return i
        if (name == "nice" and a[1:].isdigit()) or (name == "xargs" and a[1] in "ie"):
            i += 1  # nice -10; xargs -i[R] / -e[EOF] take their value attached only
            continue
        for j, ch in enumerate(a[1:], start=1):
            if ch in short_value:
                i += 1 if j + 1 < len(a) else 2
                break
            if ch not in short:
                return None
        else:
            i += 1
    return i


def unwrap(argv: tuple[str, ...] | list[str]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(words, wrappers stripped, env assignments found in ``env``) for an argv."""
    words, wrappers, env = list(argv), [], []
    while words:
        name = posixpath.basename(words[0])
        spec = _WRAPPERS.get(name)
        k = None if spec is None else _skip_options(words[1:], spec, name)
        if k is None:
            break
        rest = words[1 + k:]
        if name == "timeout":
            rest = rest[1:]  # the duration
        while name == "env" and rest and _ASSIGN.match(rest[0]):
            env.append(rest.pop(0))
        if not rest:
            if name != "xargs":
                break
            rest = ["echo"]  # xargs without a command runs echo
        wrappers.append(name)
        words = rest
    return tuple(words), tuple(wrappers), tuple(env)


def privileged_inner(words: tuple[str, ...] | list[str]) -> tuple[str, tuple[str, ...]] | None:
    """For ``sudo -u x FOO=1 rm a``: ("sudo", ("rm", "a")), the inner command normalised.
    An empty inner command means a root shell (``sudo -i``) or one we cannot see past."""
    if not words:
        return None
    name = posixpath.basename(words[0])
    if name not in _PRIVILEGED:
        return None
    k = _skip_options(words[1:], _PRIVILEGED[name], name)
    if k is None:
        return name, ()
    rest = list(words[1 + k:])
    while rest and _ASSIGN.match(rest[0]):
        rest.pop(0)
    return name, unwrap(rest)[0]


#: a code string found in a command: (where it came from, the code, which words hold it, counted from the end)
Script = tuple[str, str, tuple[int, ...]]


def _at(words: tuple[str, ...], *indexes: int) -> tuple[int, ...]:
    return tuple(i - len(words) for i in indexes)


def inline_scripts(words: tuple[str, ...]) -> list[Script]:
    """Shell code given as a string, to be read in turn: ``bash -c '...'``, ``su -c``, ``env -S``, ``eval``,
    and the builtins that keep code to run later (``trap``, ``alias``, ``bind -x``, ``complete -C``,
    ``mapfile -C``), also through sudo."""
    inner = privileged_inner(words)
    if inner is not None:
        words = inner[1]
    if not words:
        return []
    name = posixpath.basename(words[0])
    if name in ("eval", "watch") and len(words) > 1:
        first = 1 if name == "eval" else _watch_command(words)
        return [(name, " ".join(words[first:]), _at(words, *range(first, len(words))))] if first else []
    if name in SHELLS:
        return _shell_command(words)
    if name in ("alias", "trap"):
        return _alias(words) if name == "alias" else _trap(words)
    if name == "git":
        return _git_scripts(words)
    options = _CODE_OPTIONS.get(name)
    if options is not None:
        return [(f"{name} {opt}", code, _at(words, i)) for opt, code, i in _option_values(words, options)]
    return []


#: builtins and programs whose option value is shell code: name -> the options
_CODE_OPTIONS = {"env": ("-S", "--split-string"), "su": ("-c", "--command"), "bind": ("-x",),
                 "complete": ("-C",), "compgen": ("-C",), "mapfile": ("-C",), "readarray": ("-C",)}


def _option_values(words: tuple[str, ...], options: tuple[str, ...]) -> list[tuple[str, str, int]]:
    """(option, code, index of the word holding it) for each of ``options`` with its value (attached or not)."""
    out = []
    for i, a in enumerate(words[1:], start=1):
        for opt in options:
            if a == opt and i + 1 < len(words):
                out.append((opt, words[i + 1], i + 1))
            elif a.startswith(opt + ("=" if opt.startswith("--") else "")) and a != opt:
                out.append((opt, a[len(opt):].lstrip("="), i))
    if words[0] == "env":  # env -S 'cmd args': the rest of the words are split into the command too
        return [(o, " ".join((code, *words[i + 1:])), i) for o, code, i in out[:1]]
    if words[0] == "bind":  # bind -x '"\C-a": command'
        return [(o, code.split(":", 1)[1].strip().strip("\"'"), i) for o, code, i in out if ":" in code]
    return out


def _alias(words: tuple[str, ...]) -> list[Script]:
    return [("alias", w.split("=", 1)[1], _at(words, i)) for i, w in enumerate(words) if i and "=" in w]


def _trap(words: tuple[str, ...]) -> list[Script]:
    """``trap CODE SIGNAL...``: CODE runs when a signal (or EXIT) comes. One operand, or ``-``, resets."""
    args = [(i, a) for i, a in enumerate(words) if i and a not in ("--", "-l", "-p", "-P")]
    if len(args) >= 2 and args[0][1] != "-":
        return [("trap", args[0][1], _at(words, args[0][0]))]
    return []


def _git_scripts(words: tuple[str, ...]) -> list[Script]:
    """Commands git runs through the shell: ``rebase -x CMD``, ``submodule foreach CMD``, ``bisect run CMD``."""
    for i, w in enumerate(words):
        rest = words[i + 1:]
        if w == "rebase":
            found = _option_values(words, ("-x", "--exec"))
            return [("git rebase --exec", code, _at(words, k)) for _, code, k in found]
        if w in ("submodule", "bisect") and rest[:1] == (("foreach",) if w == "submodule" else ("run",)):
            first = i + 2 + (1 if words[i + 2:i + 3] in (("--recursive",), ("--quiet",)) else 0)
            if first < len(words):
                return [(f"git {w} {rest[0]}", " ".join(words[first:]), _at(words, *range(first, len(words))))]
    return []


def _watch_command(words: tuple[str, ...]) -> int:
    """Where ``watch [-n SECS] [-d] COMMAND...`` starts its command (0: none)."""
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in ("-n", "--interval", "-q", "--equexit") else 1
    return i if i < len(words) else 0


def _shell_command(words: tuple[str, ...]) -> list[Script]:
    """The script of ``bash -c SCRIPT`` (``-lc``, ``-o pipefail -c`` too): the first operand after ``-c``."""
    has_c, i, args = False, 0, words[1:]
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
        elif len(a) > 1 and a[0] in "-+":
            has_c = has_c or (a[0] == "-" and not a.startswith("--") and "c" in a[1:])
            i += 1
        else:
            break
    return [("shell -c", args[i], _at(words, i + 1))] if has_c and i < len(args) else []


def find_exec(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    if not words or posixpath.basename(words[0]) != "find":
        return []
    out, i = [], 1
    while i < len(words):
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(words) and words[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                out.append(words[i + 1:j])
            i = j
        i += 1
    return out
