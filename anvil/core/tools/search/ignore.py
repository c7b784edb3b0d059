"""The directory walker behind ``list_files`` and the search tools' pure-Python fallback, and rg-style globs.

ripgrep does this natively; this module is what the search tools use when no ``rg`` binary exists,
and what ``list_files`` uses always (it needs every directory's listing, which rg does not give).
Each ignore-file line is compiled by pathspec, which knows git's pattern syntax (comments, ``!``,
escapes, trailing spaces, anchored ``/x`` and ``a/b``, directory-only ``x/``, ``*``, ``?``, ``[...]``,
``**``); a line git would never match with, such as an unclosed ``[`` or a trailing ``\\``, is skipped.
Which line decides is git's rule, kept here rather than in pathspec's spec classes (they also let a
line that names a directory above a path decide for the path, which git does not): the deepest
ignore file first, the last line within it that matches the path itself; an ignored directory is
never entered, so nothing below it can come back. Nested ignore files and ``.git/info/exclude``
count, and like ripgrep ``.ignore`` and ``.rgignore``. Not handled: the global
``core.excludesFile``, ignore files above the project root, POSIX classes such as ``[[:alpha:]]``,
and two rare spellings pathspec reads differently from git: a negated class can match the ``/``
between two names (``a[!b]c`` matches ``a/c``), and a line with a reversed range (``[z-a]``) is
skipped whole.
"""

from __future__ import annotations

import os
import re
import warnings
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

@dataclass(frozen=True)
class IgnorePattern:
    """One ignore-file line as pathspec compiles it."""

    regex: re.Pattern[str]
    ignores: bool  # False for a "!" line, which re-includes
    dir_only: bool  # the line ends with "/": it matches directories only

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether the line matches ``rel`` itself (posix, relative to the ignore file's directory).

        pathspec's regexes also match every path below a directory they match, capturing the ``/``
        after that directory in their one group. Such a match is about a directory above ``rel``,
        decided when the walk reached it, so it does not count here: a line matches ``rel`` when its
        regex matches without the group (``*.log``, ``/build``, ``src/**``) or, for a directory-only
        line, when the group is the directory's own trailing slash (``build/`` against ``build``).
        """
        if self.dir_only:
            return is_dir and self.regex.search(rel + "/") is not None  # this regex ends with \Z
        found = self.regex.search(rel)
        return found is not None and found.lastindex is None


def parse_ignore_line(line: str) -> IgnorePattern | None:
    """One line of an ignore file, or None for blanks, comments and lines that never match."""
    line = line.rstrip("\n")
    if line.rstrip().endswith("/**/"):
        # pathspec reads "x/**/" as "x/", the directory itself included; git means the directories
        # below x, which "x/**/*/" says to both.
        line = line.rstrip() + "*/"
    # Imported here: pathspec costs ~10 ms to import, needed only once an ignore file is read.
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    try:
        with warnings.catch_warnings():
            # re warns about "[[" (as in a POSIX class) that a future Python may read as a nested set.
            warnings.simplefilter("ignore", FutureWarning)
            compiled = GitIgnoreSpecPattern(line)
            if compiled.include is None or compiled.regex is None:
                return None
            regex = compiled.regex
            if line.rstrip().endswith("/"):  # the group closes the regex: it must close the path too
                return IgnorePattern(re.compile(f"(?:{regex.pattern})\\Z", regex.flags), compiled.include, True)
            return IgnorePattern(regex, compiled.include, False)
    except (ValueError, re.error):  # "!" alone, a trailing backslash, "[z-a]": skipped
        return None


class IgnoreFile:
    """The rules from one directory's ignore files; paths are matched relative to that directory."""

    def __init__(self, base: str, lines: list[str]) -> None:
        self.base = base  # directory relative to the walk root, "" for the root, else "a/b/"
        self.patterns = [p for p in map(parse_ignore_line, lines) if p is not None]
        # The last matching line wins, so they are tried last first; a file skips the directory-only ones.
        self._for_dirs = self.patterns[::-1]
        self._for_files = [p for p in self._for_dirs if not p.dir_only]
        # Most paths match no line at all: one regex of all the lines (named groups made plain, so
        # they can repeat) says so at once.
        self._any_line = re.compile("|".join(re.sub(r"\(\?P<\w+>", "(?:", p.regex.pattern) for p in self.patterns))

    def match(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a ``!`` line; None: these rules say nothing."""
        if self._any_line.search(rel + "/" if is_dir else rel) is None:
            return None
        for pattern in self._for_dirs if is_dir else self._for_files:
            if pattern.matches(rel, is_dir):
                return pattern.ignores
        return None


Rules = tuple[IgnoreFile, ...]


def is_ignored(rules: Rules, rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` (posix, relative to the walk root) is ignored; the deepest rules decide first.

    The directories above ``rel`` are taken as not ignored: the walk never enters one that is.
    """
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


# --- globs (ripgrep --glob) -------------------------------------------------------------------

def _unescaped(text: str, char: str) -> int:
    """The index of the first ``char`` not escaped by a backslash, or -1."""
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == char:
            return i
        else:
            i += 1
    return -1


def _brace_group(glob: str, start: int) -> tuple[int, list[str]]:
    """The index of the ``}`` closing the group opened at ``start``, and its top-level alternatives."""
    depth, parts, begin, i = 0, [], start + 1, start + 1
    while i < len(glob):
        char = glob[i]
        if char == "\\":
            i += 1
        elif char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif char in ",}" and not depth:
            parts.append(glob[begin:i])
            if char == "}":
                return i, parts
            begin = i + 1
        i += 1
    raise ValueError("unclosed alternate group; missing '}'")


def expand_braces(glob: str) -> list[str]:
    """The globs a ``{a,b}`` group stands for (rg's globs have them, .gitignore does not):
    ``*.{ts,tsx}`` is ``*.ts`` and ``*.tsx``; groups nest. Raises ValueError for an unclosed ``{``."""
    start = _unescaped(glob, "{")
    if start < 0:
        return [glob]
    end, alternatives = _brace_group(glob, start)
    head, tail = glob[:start], glob[end + 1:]
    return [expanded for alternative in alternatives for expanded in expand_braces(head + alternative + tail)]


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A predicate for ripgrep ``--glob`` semantics on a file's relative path: without a ``/`` the
    glob matches a file name at any depth, with one it is anchored; ``{a,b}`` works; ``!x`` excludes.
    Raises ValueError for a glob rg would refuse (an unclosed ``{`` or ``[``)."""
    exclude = pattern.startswith("!")
    compiled = []
    for alternative in expand_braces(pattern[1:] if exclude else pattern):
        glob = alternative.rstrip("/")
        # In a glob a leading "#" or "!" is a plain character; in an ignore-file line it is not.
        line = "\\" + glob if glob.startswith(("#", "!")) else glob
        parsed = parse_ignore_line(line)
        if parsed is None and glob:
            raise ValueError("unclosed character class; missing ']'" if "[" in glob else "not a glob rg accepts")
        if parsed is not None:
            compiled.append(parsed)

    def matches(rel: str) -> bool:
        return any(p.matches(rel, False) for p in compiled)

    return (lambda rel: not matches(rel)) if exclude else matches


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

    def sort_in(self, entry: os.DirEntry[str], path: str, keep_file: Callable[[str], bool] | None) -> None:
        """Put ``entry`` (``path`` from the project root) with the dirs, files, links, skipped or ignored."""
        try:
            if entry.is_symlink():
                self.links.append(entry)
                return
            is_dir = entry.is_dir()
        except OSError:  # vanished or unreadable since the scandir: nothing to report
            return
        if entry.name in ALWAYS_SKIPPED and (is_dir or entry.name == ".git"):  # a worktree's .git is a file
            self.skipped.append(entry.name)
        elif self.rules and is_ignored(self.rules, path, is_dir):
            self.ignored += 1
        elif is_dir:
            self.dirs.append(entry)
        elif keep_file is None or keep_file(path):
            self.files.append(entry)


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
    if not rel or not names.isdisjoint(IGNORE_FILES):
        added = load_dir_rules(Path(directory), rel, names)
        if added is not None:
            rules = (*rules, added)
    listing = Listing([], [], rules)
    for entry in entries:
        listing.sort_in(entry, rel + entry.name, keep_file)
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
