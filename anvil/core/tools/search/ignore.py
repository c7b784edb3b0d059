"""A small pure-Python .gitignore matcher and the directory walker built on it.

ripgrep does this natively; this module is what the search tools use when no ``rg`` binary exists,
and what ``list_files`` uses always (it needs every directory's listing, which rg does not give).
It follows git's rules for the common cases: comments, ``!`` negation, anchored ``/x`` and
``a/b`` patterns, directory-only ``x/``, ``*``, ``?``, ``[...]`` and ``**``; nested ignore files
(deeper wins, last line wins within a file) and ``.git/info/exclude``. Like ripgrep it also reads
``.ignore`` and ``.rgignore``. Not handled: the global ``core.excludesFile``, ignore files above the
project root, and POSIX classes such as ``[[:alpha:]]``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: Directories never walked into, whether gitignored or not: version control internals, installed
#: dependencies, virtualenvs and tool caches. They are huge and never what the model is looking for.
#: ``dist``/``build`` are not here on purpose: some projects commit them, so only .gitignore decides.
ALWAYS_SKIPPED: frozenset[str] = frozenset({
    ".git", ".hg", ".svn",
    "node_modules",
    ".venv", "venv", ".virtualenvs",
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
})

#: The files a directory's ignore rules come from, lowest precedence first (ripgrep's order).
IGNORE_FILES: tuple[str, ...] = (".gitignore", ".ignore", ".rgignore")

#: A directory holding this file is a virtualenv, whatever its name (``env``, ``.venv311``...). Only
#: this walker checks for it; with rg, such a venv is skipped by the ``.gitignore`` holding ``*`` that
#: virtualenv, uv and Python 3.13's venv write into it.
VENV_MARKER = "pyvenv.cfg"


# --- patterns ---------------------------------------------------------------------------------

def glob_to_regex(pattern: str, *, braces: bool = False) -> str:
    """Translate a gitignore-style glob (no anchoring decided yet) into a regex body.

    ``*`` and ``?`` never cross ``/``; ``**`` as a whole segment crosses any number of directories.
    ``braces`` enables ``{a,b}`` alternatives (ripgrep's ``--glob`` has them, .gitignore does not)
    and makes an unclosed ``{`` or ``[`` a ValueError, as rg reports it; in .gitignore it is literal.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                j = i + 2
                whole_segment = (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
                if whole_segment and j == n:
                    out.append(".*")
                elif whole_segment:
                    out.append("(?:.*/)?")  # "**/": zero or more directories
                    j += 1
                else:
                    out.append("[^/]*")  # git treats a non-segment "**" as a plain "*"
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = _class_end(pattern, i)
            if end < 0 and braces:
                raise ValueError("unclosed character class; missing ']'")
            if end < 0:
                out.append(re.escape(c))
            else:
                out.append(_translate_class(pattern[i + 1:end]))
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "{" and braces:
            end, alternatives = _brace_alternatives(pattern, i)
            if end < 0:
                raise ValueError("unclosed alternate group; missing '}'")
            out.append("(?:" + "|".join(glob_to_regex(a, braces=True) for a in alternatives) + ")")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":  # a leading "]" is a literal member
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    return j if j < len(pattern) else -1


def _translate_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    members = "".join("\\" + ch if ch in "\\[]^" else ch for ch in body)
    # A class never matches "/" (git matches with FNM_PATHNAME), negated or not.
    return "(?!/)[" + ("^" if negate else "") + members + "]"


def _brace_alternatives(pattern: str, start: int) -> tuple[int, list[str]]:
    depth, parts, current = 0, [], []
    for j in range(start + 1, len(pattern)):
        ch = pattern[j]
        if ch == "{":
            depth += 1
        elif ch == "}" and depth == 0:
            parts.append("".join(current))
            return j, parts
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    return -1, []


@dataclass(frozen=True)
class IgnorePattern:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def parse_ignore_line(line: str) -> IgnorePattern | None:
    """One line of an ignore file, or None for blanks and comments."""
    line = line.rstrip("\n").rstrip("\r")
    if not line or line.startswith("#"):
        return None
    # Trailing spaces are dropped unless escaped with a backslash.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "
    line = stripped
    negated = line.startswith("!")
    if negated or line.startswith(("\\!", "\\#")):  # "\!" and "\#" are literal "!" and "#"
        line = line[1:]
    dir_only = line.endswith("/") and not line.endswith("\\/")
    line = line.rstrip("/")
    if not line:
        return None
    # A slash at the start or in the middle anchors the pattern to the ignore file's directory;
    # otherwise it matches a name at any depth below it.
    anchored = "/" in line
    body = glob_to_regex(line.lstrip("/"))
    prefix = "" if anchored else "(?:.*/)?"
    return IgnorePattern(re.compile(f"^{prefix}{body}$", re.DOTALL), negated, dir_only)


class IgnoreFile:
    """The rules from one directory's ignore files; paths are matched relative to that directory."""

    def __init__(self, base: str, lines: list[str]) -> None:
        self.base = base  # directory relative to the walk root, "" for the root, else "a/b/"
        self.patterns = [p for p in map(parse_ignore_line, lines) if p is not None]

    def match(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a ``!`` line; None: these rules say nothing."""
        for pattern in reversed(self.patterns):  # the last matching line wins
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex.match(rel):
                return not pattern.negated
        return None


Rules = tuple[IgnoreFile, ...]


def is_ignored(rules: Rules, rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` (posix, relative to the walk root) is ignored; the deepest rules decide first."""
    for rule in reversed(rules):
        if rule.base and not rel.startswith(rule.base):
            continue
        verdict = rule.match(rel[len(rule.base):], is_dir)
        if verdict is not None:
            return verdict
    return False


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def load_dir_rules(directory: Path, base: str, names: set[str] | None = None) -> IgnoreFile | None:
    """The ignore rules a directory adds, or None when it has no ignore files."""
    lines: list[str] = []
    for name in IGNORE_FILES:
        if names is None or name in names:
            lines += _read_lines(directory / name)
    if not base:
        # .git/info/exclude has the lowest precedence of the root's rules.
        lines = _read_lines(directory / ".git" / "info" / "exclude") + lines
    rules = IgnoreFile(base, lines)
    return rules if rules.patterns else None


def rules_for(root: Path, directory: Path) -> Rules:
    """The rules in force inside ``directory``: those of the root and every directory down to it."""
    rules: list[IgnoreFile] = []
    try:
        parts = directory.relative_to(root).parts
    except ValueError:
        parts, root = (), directory
    current, base = root, ""
    for part in ("", *parts):
        if part:
            current, base = current / part, f"{base}{part}/"
        loaded = load_dir_rules(current, base)
        if loaded is not None:
            rules.append(loaded)
    return tuple(rules)


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A predicate for ripgrep ``--glob`` semantics on a relative path: without a ``/`` the glob
    matches a file name at any depth, with one it is anchored; ``{a,b}`` works; ``!x`` excludes.
    Raises ValueError for a glob rg would refuse (an unclosed ``{`` or ``[``)."""
    exclude = pattern.startswith("!")
    pattern = pattern[1:] if exclude else pattern
    anchored = "/" in pattern.rstrip("/")
    body = glob_to_regex(pattern.strip("/"), braces=True)
    regex = re.compile(("^" if anchored else "^(?:.*/)?") + body + "$", re.DOTALL)
    if exclude:
        return lambda rel: regex.match(rel) is None
    return lambda rel: regex.match(rel) is not None


# --- walking ----------------------------------------------------------------------------------

@dataclass
class Listing:
    """One directory's entries after skipping, for a walker or a tree."""

    dirs: list[os.DirEntry[str]]
    files: list[os.DirEntry[str]]
    rules: Rules  # the rules in force for the entries' children
    ignored: int = 0  # entries left out because ignore rules say so
    skipped: list[str] = field(default_factory=list)  # always-skipped directories present here
    links: list[os.DirEntry[str]] = field(default_factory=list)  # symlinks, never followed
    is_venv: bool = False


def list_dir(directory: str, rel: str, rules: Rules, *, keep_file: Callable[[str], bool] | None = None,
             skip_venv: bool = True) -> Listing:
    """Read one directory; ``rel`` is its path from the project root ("" or ending in "/").

    Symlinks are not followed (ripgrep's default), so a link cannot lead a search outside the project.
    ``keep_file(rel_path)``, when given, must also accept a file for it to be listed (a glob).
    """
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except OSError:
        return Listing([], [], rules)
    names = {e.name for e in entries}
    if skip_venv and VENV_MARKER in names:
        return Listing([], [], rules, is_venv=True)
    if not rel or any(name in names for name in IGNORE_FILES):
        added = load_dir_rules(Path(directory), rel, names)
        if added is not None:
            rules = (*rules, added)
    listing = Listing([], [], rules)
    for entry in entries:
        try:
            if entry.is_symlink():
                listing.links.append(entry)
                continue
            is_dir = entry.is_dir()
        except OSError:  # vanished or unreadable since the scandir: nothing to report
            continue
        path = rel + entry.name
        if is_dir:
            if entry.name in ALWAYS_SKIPPED:
                listing.skipped.append(entry.name)
            elif rules and is_ignored(rules, path, True):
                listing.ignored += 1
            else:
                listing.dirs.append(entry)
        elif entry.name == ".git":  # a worktree's or submodule's .git file
            listing.skipped.append(entry.name)
        elif rules and is_ignored(rules, path, False):
            listing.ignored += 1
        elif keep_file is None or keep_file(path):
            listing.files.append(entry)
    return listing


def walk_files(start: Path, root: Path, *, keep_file: Callable[[str], bool] | None = None,
               ) -> Iterator[tuple[str, str]]:
    """Yield ``(absolute path, path relative to start)`` for every file a search of ``start`` should see.

    ``start`` is a directory inside ``root`` (or, for a directory the person allowed outside the
    project, the root itself). Ignore files from ``root`` down to ``start`` apply; ``start`` itself is
    never skipped, as with a path given to ripgrep explicitly. ``keep_file`` also receives paths
    relative to ``start``. The order is unspecified: callers sort.
    """
    if start != root and start.is_relative_to(root):
        prefix = start.relative_to(root).as_posix() + "/"
        rules = rules_for(root, start.parent)
    else:
        prefix, rules = "", ()
    keep = None if keep_file is None else (lambda rel: keep_file(rel[len(prefix):]))
    stack: list[tuple[str, str, Rules, bool]] = [(str(start), prefix, rules, False)]
    while stack:
        directory, rel, rules, skip_venv = stack.pop()
        listing = list_dir(directory, rel, rules, keep_file=keep, skip_venv=skip_venv)
        cut = len(prefix)
        for entry in listing.files:
            yield entry.path, (rel + entry.name)[cut:]
        for entry in listing.dirs:
            stack.append((entry.path, f"{rel}{entry.name}/", listing.rules, True))
