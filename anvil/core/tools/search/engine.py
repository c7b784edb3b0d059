"""How grep searches and prints: ripgrep or a pure-Python fallback, the same output either way.

What a search sees: .gitignore (also outside a git repository), ``.ignore`` and ``.rgignore`` are
respected; dotfiles are searched (``.github/``, ``.env.example`` are often what the model needs) but
never ``.git``; dependency, virtualenv and cache directories
(:data:`~anvil.core.tools.search.ignore.ALWAYS_SKIPPED`) are skipped unless searched explicitly; binary
files and symlinks are skipped. Files are sorted by path, so the same search gives the same answer.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from anvil.core.tools.base import ToolContext
from anvil.core.tools.errors import ToolError
from anvil.core.tools.search import ignore
from anvil.core.tools.search.ripgrep import (
    GrepMode,
    Line,
    RgTimeout,
    count_block_matches,
    glob_filter,
    grep_args,
    parse_block,
    run_rg,
    split_blocks,
    split_counts,
    split_paths,
)

T = TypeVar("T")

SEARCH_TIMEOUT = 60.0
#: Longer lines are cut in content output: one minified file must not eat the whole answer.
MAX_LINE_CHARS = 400


@dataclass
class FileMatches:
    """One file's matching lines (content mode)."""

    path: str  # relative to the project root
    count: int
    lines: list[Line]


@dataclass
class Found:
    """A search's matching files, sorted by path, in the shape its output mode needs."""

    paths: list[str] = field(default_factory=list)  # files_with_matches
    counts: list[tuple[str, int]] = field(default_factory=list)  # count
    files: list[FileMatches] = field(default_factory=list)  # content, from the fallback
    # Content from rg: its output, and (path, start, end) of each file's lines in it. Parsing is left
    # until a file is shown, since most are only counted: this is what keeps grep close to rg's speed.
    rg_out: bytes = b""
    rg_blocks: list[tuple[str, int, int]] = field(default_factory=list)
    context: int = 0
    warning: str = ""

    @property
    def file_count(self) -> int:
        return len(self.paths) or len(self.counts) or len(self.files) or len(self.rg_blocks)

    def content(self) -> Iterator[FileMatches]:
        yield from self.files
        for path, start, end in self.rg_blocks:
            yield FileMatches(path, -1, parse_block(self.rg_out, start, end))

    def total_matches(self) -> int:
        if self.rg_blocks and not self.context:
            # Every line is a match, and files are separated by one blank line: count newlines once.
            out = self.rg_out
            return out.count(b"\n") - (len(self.rg_blocks) - 1) + (not out.endswith(b"\n"))
        return sum(f.count for f in self.files) + sum(
            count_block_matches(self.rg_out, start, end, self.context) for _, start, end in self.rg_blocks)

    @classmethod
    def of(cls, files: list[FileMatches], mode: GrepMode) -> Found:
        if mode == "files_with_matches":
            return cls(paths=[f.path for f in files])
        if mode == "count":
            return cls(counts=[(f.path, f.count) for f in files])
        return cls(files=files)


@dataclass
class Search:
    """What grep was asked, with the path resolved and defaults applied."""

    pattern: str
    mode: GrepMode
    context: int
    ignore_case: bool
    glob: str | None  # relative to ``directory``
    target: Path  # the file or directory searched
    directory: Path  # target, or its parent when target is a file
    prefix: str  # how ``directory`` is shown: "" for the root, else "src/"


@dataclass
class RgPlan:
    """Where rg searches and how it filters: a glob's literal directory prefix is searched directly."""

    directory: Path
    prefix: str
    filters: list[str]
    target: str = "."


def display_prefix(ctx: ToolContext, directory: Path) -> str:
    shown = ctx.display(directory)
    return "" if shown == "." else shown.rstrip("/") + "/"


def plan_rg(ctx: ToolContext, directory: Path, prefix: str, glob: str | None) -> RgPlan | None:
    """How rg runs for ``glob`` under ``directory``; None when the glob's directory does not exist."""
    if not glob:
        return RgPlan(directory, prefix, [])
    sub, filters = glob_filter(glob)
    if sub:
        directory = ctx.resolve(str(directory / sub))  # refuses a symlink that leads outside
        if not directory.is_dir():
            return None
        prefix = display_prefix(ctx, directory)
    return RgPlan(directory, prefix, filters)


def is_binary(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return b"\0" in f.read(8192)
    except OSError:
        return False


def compile_glob(glob: str) -> Callable[[str], bool]:
    """The fallback's glob matcher, refusing what rg would refuse with the same message."""
    try:
        return ignore.compile_glob(glob)
    except ValueError as exc:
        raise ToolError(invalid_glob(glob, str(exc))) from None


def invalid_glob(glob: str | None, error: str) -> str:
    error = error.strip().removeprefix("rg: ")
    return f"Invalid glob {glob!r}: {error}. Use e.g. '*.py', 'src/**/*.ts' or '*.{{js,jsx}}'."


def _regex_error(pattern: str, message: str) -> str:
    message = "\n".join(line.removeprefix("rg: ") for line in message.strip().splitlines())
    return (f"Invalid regular expression {pattern!r}:\n{message}\ngrep uses Rust regex syntax (like Python's "
            "re, without look-around or backreferences). Escape ( ) [ ] { } . * + ? | ^ $ \\ with a "
            "backslash to match them literally, e.g. 'foo\\(' for 'foo('.")


# --- grep engines -----------------------------------------------------------------------------

async def rg_grep(s: Search, ctx: ToolContext) -> Found:
    """Run ripgrep and read its output."""
    if s.target.is_file():  # given explicitly: rg applies no glob or ignore rule to it, nor do we
        plan: RgPlan | None = RgPlan(s.directory, s.prefix, [], f"./{s.target.name}")
    else:
        plan = plan_rg(ctx, s.directory, s.prefix, s.glob)
    if plan is None:
        return Found()
    args = grep_args(s.pattern, plan.target, mode=s.mode, filters=plan.filters, ignore_case=s.ignore_case,
                     context=s.context)
    try:
        out = await run_rg(args, plan.directory, timeout=SEARCH_TIMEOUT)
    except RgTimeout:
        raise ToolError(f"grep for {s.pattern!r} took longer than {SEARCH_TIMEOUT:g}s and was stopped. "
                        "Narrow it with path or glob.") from None
    error = out.stderr.strip()
    if out.returncode == 2 and "regex parse error" in error:
        raise ToolError(_regex_error(s.pattern, error))
    if out.returncode == 2 and "error parsing glob" in error:
        raise ToolError(invalid_glob(s.glob, error))
    if s.mode == "files_with_matches":
        found = Found(paths=sorted(split_paths(out.stdout, plan.prefix)))
    elif s.mode == "count":
        found = Found(counts=sorted(split_counts(out.stdout, plan.prefix)))
    else:
        blocks = split_blocks(out.stdout, plan.prefix)
        blocks.sort()  # by path, the first item (paths are unique)
        found = Found(rg_out=out.stdout, rg_blocks=blocks, context=s.context)
    if out.truncated:
        found.warning = "The search produced too much output and was stopped early; totals are lower bounds."
    elif error:  # e.g. permission denied on some files: the rest of the results still stand
        lines = error.splitlines()
        found.warning = f"Some files could not be searched: {lines[0].removeprefix('rg: ')}" + (
            f" (and {len(lines) - 1} more errors)" if len(lines) > 1 else "")
    return found


async def in_thread(walk: Callable[[threading.Event], T]) -> T:
    """Run a Python fallback off the event loop; if the call is cancelled (the person pressed Esc),
    ``stop`` tells the thread to give up instead of walking the tree to the end for nobody."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(walk, stop)
    finally:
        stop.set()


def python_grep(s: Search, root: Path, stop: threading.Event | None = None) -> list[FileMatches]:
    """The fallback when there is no rg binary, with the same output as :func:`rg_grep`.

    Python's ``re`` stands in for Rust's regex: they agree on everyday patterns, but ``re`` also
    accepts look-around and backreferences (rg refuses them) and rejects ``\\p{L}``-style classes
    and ``\\z`` (rg accepts them). Files are read whole and decoded as UTF-8 with replacement; a NUL
    byte marks a file as binary, as in rg.
    """
    flags = re.MULTILINE | (re.IGNORECASE if s.ignore_case else 0)
    try:
        regex = re.compile(s.pattern, flags)
    except re.error as exc:
        raise ToolError(_regex_error(s.pattern, f"error: {exc}")) from None
    paths: Iterable[tuple[str, str]]
    if s.target.is_file():
        paths = [(str(s.target), s.target.name)]  # given explicitly: no ignore or glob filter
    else:
        keep = compile_glob(s.glob) if s.glob else None
        paths = ignore.walk_files(s.target, root, keep_file=keep)
    deadline = time.monotonic() + SEARCH_TIMEOUT
    results = []
    for path, rel in paths:
        if stop is not None and stop.is_set():
            return []
        if time.monotonic() > deadline:
            raise ToolError(f"grep for {s.pattern!r} took longer than {SEARCH_TIMEOUT:g}s and was stopped. "
                            "Narrow it with path or glob.")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\0" in data:
            continue
        text = data.decode("utf-8", errors="replace")
        if regex.search(text) is None:  # most files do not match: skip splitting them into lines
            continue
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if hits:
            shown = _with_context(lines, hits, s.context) if s.mode == "content" else []
            results.append(FileMatches(s.prefix + rel, len(hits), shown))
    results.sort(key=lambda f: f.path)
    return results


def _with_context(lines: list[str], hits: list[int], context: int) -> list[Line]:
    hit_set = set(hits)
    shown = sorted({j for i in hits for j in range(max(0, i - context), min(len(lines), i + context + 1))})
    out: list[Line] = []
    for k, j in enumerate(shown):
        if context and k and j != shown[k - 1] + 1:  # rg prints "--" only when showing context
            out.append((0, False, ""))
        out.append((j + 1, j in hit_set, lines[j]))
    return out


# --- grep output ------------------------------------------------------------------------------

def _clip(text: str) -> str:
    text = text.removesuffix("\r")
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]}… [{len(text) - MAX_LINE_CHARS} more characters]"


def format_list(items: list[str], budget: int) -> tuple[list[str], bool]:
    """As many of ``items`` as fit in ``budget`` characters; and whether some did not."""
    used = 0
    for i, item in enumerate(items):
        used += len(item) + 1
        if used > budget:
            return items[:i], True
    return items, False


def format_content(files: Iterable[FileMatches], context: int, max_results: int,
                   budget: int) -> tuple[list[str], int, bool]:
    """``path:line:text`` lines (context lines ``path-line-text``), how many matching lines they show,
    and whether the character budget (rather than ``max_results``) is what stopped them."""
    out: list[str] = []
    used, shown, by_budget, stopped = 0, 0, False, False
    last_match, last_path = -1, ""  # where the last shown match is in ``out``, and its file
    for f in files:
        if context and out:
            out.append("--")
        for number, is_match, text in f.lines:
            if is_match and shown >= max_results:
                stopped = True
                break
            sep = ":" if is_match else "-"
            line = "--" if number == 0 else f"{f.path}{sep}{number}{sep}{_clip(text)}"
            if used + len(line) >= budget:
                stopped = by_budget = True
                break
            out.append(line)
            used += len(line) + 1
            if is_match:
                shown, last_match, last_path = shown + 1, len(out) - 1, f.path
        if stopped:
            # Keep the last shown match's after-context, not the lines leading to the next match.
            keep = last_match + 1
            while keep < min(len(out), last_match + 1 + context) and out[keep].startswith(f"{last_path}-"):
                keep += 1
            del out[keep:]
            break
    while out and out[-1] == "--":
        out.pop()
    return out, shown, by_budget
