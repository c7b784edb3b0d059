"""Where a destructive command's target really lands when the text alone cannot say.

:mod:`.risk_paths` judges paths the text spells out. This module covers the rest, for the commands that destroy
(recursive deletes, ``find -delete``, ``dd of=``, recursive ``chmod``/``chown``, ``rsync --delete``, ``shred``,
``truncate``):

* A target built from a variable the same command sets to a literal (``x=/; rm -rf $x``) is also judged with that
  value substituted, so an unthinkable target is refused whatever else the variable might hold. Only ever to
  refuse: a variable may still hold something else when the command runs.
* A target through a symbolic link, one this command makes (``ln -s .. up && rm -rf up/*``) or one already on
  disk inside the project, is judged where the link points.

What remains only known at run time (an expansion, a command substitution, ``~-``, ``xargs`` input) is the
caller's to flag: asked about, and refused under auto-approve where nobody would see it.
"""

from __future__ import annotations

import itertools
import os
import posixpath
import re

from anvil.core.policy.env_vars import split_assignment
from anvil.core.policy.risk_paths import Places, inside, strip_glob
from anvil.core.policy.shell_command import ParsedCommand, is_dynamic

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_SETTERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_MAX_CANDIDATES = 16


#: tests that pick some of what find visits; -type, -user, -readable and the like let nearly all of it through
_FIND_TESTS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex",
                         "-iregex", "-newer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin",
                         "-size", "-perm", "-empty", "-inum", "-samefile", "-lname", "-ilname", "-used"})
#: values of the name and path tests that match everything
_MATCH_ALL = frozenset({"*", ".*", "*/*", "/*"})


def find_parts(args: tuple[str, ...]) -> tuple[list[str], bool]:
    """find's start paths, and whether a test (``-name``, ``-mtime``...) narrows what it visits. Not narrowed,
    ``find X -delete`` is ``rm -rf X``; nor is it narrowed by a negated test (``! -name x``), a pattern that
    matches everything (``-name '*'``) or an ``-o`` that lets the rest through."""
    k = next((k for k, a in enumerate(args) if a[:1] in "-(!" and a not in ("-L", "-P", "-H")), len(args))
    starts = [a for a in args[:k] if a not in ("-L", "-P", "-H")] or ["."]
    expression, in_exec = [], False
    for a in args[k:]:  # the words of -exec ... ; are not find's own tests
        in_exec = (in_exec and a not in (";", "+")) or a in ("-exec", "-execdir", "-ok", "-okdir")
        if not in_exec:
            expression.append(a)
    if any(a in ("-o", "-or") for a in expression):
        return starts, False
    narrowed = any(a in _FIND_TESTS and (j == 0 or expression[j - 1] not in ("!", "-not"))
                   and (j + 1 >= len(expression) or expression[j + 1] not in _MATCH_ALL)
                   for j, a in enumerate(expression))
    return starts, narrowed


class RunTimeTargets:
    def __init__(self, parsed: ParsedCommand, places: Places) -> None:
        self.places = places
        self.values: dict[str, list[str]] = {}
        for cmd in parsed.commands:
            for assignment in (*cmd.env, *(a for a in cmd.args if cmd.name in _SETTERS)):
                parts = split_assignment(assignment)
                if parts and not is_dynamic(parts[1]) and "[" not in assignment.split("=", 1)[0]:
                    self.values.setdefault(parts[0], []).append(parts[1])
        self.links: dict[str, str | None] = {}  # symbolic links this command makes: path -> where they point

    def candidates(self, word: str, cwd: str | None) -> list[str]:
        """The paths ``word`` names with the literal values this command gives its variables."""
        names = list(dict.fromkeys(a or b for a, b in _REFERENCE.findall(word)))
        if not names or any(n not in self.values for n in names):
            return []
        out = []
        for combo in itertools.islice(itertools.product(*(self.values[n] for n in names)), _MAX_CANDIDATES):
            path = self.places.resolve(_substitute(word, dict(zip(names, combo, strict=True))), cwd)
            if path is not None:
                out.append(path)
        return out

    def made_link(self, link: str | None, target: str) -> None:
        """``ln -s TARGET LINK``: remember the link, and where it points (relative to the link's directory)."""
        if link is not None:
            self.links[link] = self.places.resolve(target, posixpath.dirname(link))

    def through_link(self, word: str, path: str) -> tuple[str, str | None] | None:
        """(how, where it really lands) when deleting ``path`` goes through a symbolic link: one this command
        makes, or one on disk inside the project that points out of it. None when it does not."""
        whole = strip_glob(path) if word.rstrip("/") != word or strip_glob(path) != path else posixpath.dirname(path)
        for link, points_to in self.links.items():
            if whole == link or whole.startswith(link + "/"):
                real = points_to and points_to + whole[len(link):]
                return "through a symbolic link this command makes", real
        if inside(whole, self.places.root) and whole != self.places.root:
            real = posixpath.normpath(os.path.realpath(whole))
            if real != whole and self.places.outside(real):
                return "through a symbolic link that points outside the project", real
        return None


def _substitute(word: str, values: dict[str, str]) -> str:
    return _REFERENCE.sub(lambda m: values[m.group(1) or m.group(2)], word)
