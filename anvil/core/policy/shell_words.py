"""Normalising simple commands for matching: which program really runs, behind which wrappers.

``\\rm``, ``"rm"``, ``command rm``, ``env FOO=1 rm``, ``nice``/``nohup``/``timeout 5``/``xargs`` all run ``rm``;
:func:`unwrap` peels those wrappers off so rules and risk checks see the real program. ``sudo``-like
wrappers are not peeled (a rule has to name them); :func:`privileged_inner` finds what they run.
Code inside ``bash -c``, ``eval`` and ``find -exec`` is found here too, to be parsed in turn.
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


def _inline_scripts(words: tuple[str, ...]) -> list[tuple[str, str]]:
    """Shell code given as a string: ``bash -c '...'``, ``su -c '...'``, ``eval ...`` (through sudo)."""
    inner = privileged_inner(words)
    if inner is not None:
        words = inner[1]
    if not words:
        return []
    name = posixpath.basename(words[0])
    if name == "eval" and len(words) > 1:
        return [("eval", " ".join(words[1:]))]
    if name == "env":
        return _env_split_string(words)
    if name == "su":
        return _su_command(words)
    if name in SHELLS:
        return _shell_command(words)
    return []


def _env_split_string(words: tuple[str, ...]) -> list[tuple[str, str]]:
    """unwrap() stopped at this ``env``: ``env -S 'cmd args'`` splits a string into a command."""
    for i, a in enumerate(words):
        if a in ("-S", "--split-string") or a.startswith("--split-string="):
            rest = words[i + 1:] if "=" not in a else (a.split("=", 1)[1], *words[i + 1:])
            return [("env -S", " ".join(rest))] if rest else []
    return []


def _su_command(words: tuple[str, ...]) -> list[tuple[str, str]]:
    for i, a in enumerate(words):
        if a.startswith("--command="):
            return [("su -c", a.split("=", 1)[1])]
        if a in ("-c", "--command") and i + 1 < len(words):
            return [("su -c", words[i + 1])]
    return []


def _shell_command(words: tuple[str, ...]) -> list[tuple[str, str]]:
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
    return [("shell -c", args[i])] if has_c and i < len(args) else []


def _find_exec(words: tuple[str, ...]) -> list[tuple[str, ...]]:
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
