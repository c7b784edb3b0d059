"""The search tools the model calls: ``grep`` (contents), ``glob`` (file names), ``list_files``.

grep and glob run ripgrep when there is an ``rg`` binary and a pure-Python walker otherwise
(:mod:`~anvil.core.tools.search.engine`); list_files walks in Python (:mod:`~anvil.core.tools.search.filetree`).
All three respect .gitignore and skip .git, node_modules, virtualenvs and caches.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from anvil.core.tools.search import ignore
from anvil.core.tools.search.engine import (
    SEARCH_TIMEOUT,
    Found,
    Search,
    compile_glob,
    display_prefix,
    format_content,
    format_list,
    in_thread,
    invalid_glob,
    is_binary,
    plan_rg,
    python_grep,
    rg_grep,
)
from anvil.core.tools.search.filetree import list_tree, plural
from anvil.core.tools.search.ripgrep import GrepMode, RgTimeout, files_args, find_rg, run_rg, split_paths

DEFAULT_MAX_RESULTS = 200
GLOB_LIMIT = 200


def resolve_target(ctx: ToolContext, path: str | None) -> Path:
    """The model's path (default: the project root), inside the project and existing."""
    target = ctx.resolve(path or ".")
    if not target.exists():
        raise ToolError(f"'{path}' does not exist (resolved to {target}). Check the path with list_files "
                        "or glob.")
    return target


def _relative_glob(glob: str | None, prefix: str, directory: Path) -> str | None:
    """Globs are matched from the searched directory. One written from the project root
    ('src/**/*.py' while searching src) or as an absolute path is taken as meant."""
    if not glob or not glob.strip():
        return None
    glob = glob.strip()
    if os.path.isabs(glob) and glob.startswith(f"{directory}/"):
        glob = glob[len(str(directory)) + 1:]
    glob = glob.removeprefix("./")
    if prefix and glob.startswith(prefix):
        glob = glob[len(prefix):]
    return glob


# --- the tools --------------------------------------------------------------------------------

class GrepTool(Tool):
    name = "grep"
    kind = "search"
    planning = True
    description = (
        "Search file contents with a regular expression (ripgrep). Respects .gitignore; skips .git, "
        "node_modules, virtualenvs, caches and binary files. Output modes: 'files_with_matches' (default: "
        "matching file paths), 'content' (matching lines as path:line:text, context lines as "
        "path-line-text), 'count' (matching lines per file). Results are sorted by path and capped by "
        "max_results; a note says how many more there are. Use this instead of running grep or rg "
        "through run_command."
    )

    class Args(ToolArgs):
        pattern: str = Field(description="Regular expression (Rust/ripgrep syntax). Escape literal ( ) [ ] "
                             "{ } . * + ? | ^ $ \\ with a backslash, e.g. 'foo\\(' to find 'foo('. "
                             "No look-around or backreferences.")
        path: str | None = Field(None, description="File or directory to search, relative to the project "
                                 "root. Default: the whole project.")
        glob: str | None = Field(None, description="Only search files matching this glob, e.g. '*.py', "
                                 "'*.{ts,tsx}', 'tests/**/test_*.py'. Without '/', it matches file names "
                                 "at any depth; with '/', it is matched from `path`.")
        ignore_case: bool = Field(False, description="Match case-insensitively.")
        output_mode: GrepMode = Field("files_with_matches", description="'files_with_matches' (paths), "
                                      "'content' (matching lines) or 'count' (matching lines per file).")
        context: int | None = Field(None, ge=0, le=20, description="Lines of context before and after "
                                    "each match, in content mode (giving it implies content mode).")
        max_results: int = Field(DEFAULT_MAX_RESULTS, ge=1, le=2000, description="Most files "
                                 "(files_with_matches, count) or matching lines (content) to show.")

    def phase(self, args: Any) -> str:
        where = f" in {args.path}" if args.path else ""
        return f"Searching for '{args.pattern}'{where}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        if not args.pattern:
            raise ToolError("The pattern is empty. Give a regular expression to search for, e.g. 'def main'.")
        target = resolve_target(ctx, args.path)
        mode: GrepMode = args.output_mode
        if args.context and "output_mode" not in args.model_fields_set:
            mode = "content"
        is_file = target.is_file()
        if is_file and is_binary(target):
            raise ToolError(f"'{ctx.display(target)}' is a binary file; grep only searches text files.")
        directory = target.parent if is_file else target
        prefix = display_prefix(ctx, directory)
        search = Search(pattern=args.pattern, mode=mode,
                        context=(args.context or 0) if mode == "content" else 0, ignore_case=args.ignore_case,
                        glob=_relative_glob(args.glob, prefix, directory), target=target, directory=directory,
                        prefix=prefix)
        if find_rg() is not None:
            found, engine = await rg_grep(search, ctx), "rg"
        else:
            files = await in_thread(lambda stop: python_grep(search, ctx.root, stop))
            found, engine = Found.of(files, mode), "python"
        where = ctx.display(target) if args.path else "the project"
        if not found.file_count:
            return ToolResult(self._no_match(search, where, found.warning), summary="No matches",
                              data={"engine": engine, "total": 0})
        budget = max(1000, ctx.settings.output_budget - 400)  # room for the notes below
        n_files = found.file_count
        if mode == "content":
            lines, shown, by_budget = format_content(found.content(), search.context, args.max_results, budget)
            total, unit = found.total_matches(), "matching lines"
            summary = f"{plural(total, 'matching line')} in {plural(n_files, 'file')}"
        else:
            items = (found.paths[:args.max_results] if mode == "files_with_matches" else
                     [f"{path}:{n}" for path, n in found.counts[:args.max_results]])
            lines, by_budget = format_list(items, budget)
            total, shown, unit = n_files, len(lines), "files"
            summary = f"{plural(total, 'file')} match"
        if mode == "count":
            lines.append(f"Total: {plural(sum(n for _, n in found.counts), 'matching line')} in "
                         f"{plural(n_files, 'file')}")
        if shown < total:
            why = f"output limit of {budget} characters" if by_budget else f"max_results={args.max_results}"
            lines.append(f"[Showing {shown} of {total} {unit} ({why}). Narrow the search with path, glob "
                         f"or a more specific pattern{'' if by_budget else ', or raise max_results'}.]")
        if found.warning:
            lines.append(f"[{found.warning}]")
        return ToolResult("\n".join(lines), summary=summary,
                          data={"engine": engine, "total": total, "shown": shown})

    @staticmethod
    def _no_match(s: Search, where: str, warning: str) -> str:
        text = f"No matches for {s.pattern!r} in {where}"
        text += f" (files matching {s.glob!r})." if s.glob else "."
        hints = ["gitignored files, .git, dependency and cache directories are not searched"]
        if not s.ignore_case and any(ch.isalpha() for ch in s.pattern):
            hints.append("matching is case-sensitive (try ignore_case=true)")
        text += " Note: " + "; ".join(hints) + "."
        return text + (f"\n[{warning}]" if warning else "")


class GlobTool(Tool):
    name = "glob"
    kind = "search"
    planning = True
    description = (
        "Find files by name pattern, e.g. '**/*.py', 'src/**/*.test.ts', '*.{json,toml}'. Returns paths "
        "relative to the project root, most recently modified first, capped at 200. Respects .gitignore; "
        "skips .git, node_modules, virtualenvs and caches. Lists files only: use list_files to see "
        "directories."
    )

    class Args(ToolArgs):
        pattern: str = Field(description="Glob pattern. Without '/', it matches file names at any depth "
                             "('*.py' finds every Python file); with '/', it is matched from `path` "
                             "('src/*.py' only direct children of src). '**' spans directories; "
                             "'{a,b}' gives alternatives.")
        path: str | None = Field(None, description="Directory to search in, relative to the project root. "
                                 "Default: the whole project.")

    def phase(self, args: Any) -> str:
        return f"Finding files matching '{args.pattern}'" + (f" in {args.path}" if args.path else "")

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        target = resolve_target(ctx, args.path)
        if target.is_file():
            raise ToolError(f"'{args.path}' is a file; glob searches a directory. Give its directory as "
                            "path, or use read_file to read it.")
        prefix = display_prefix(ctx, target)
        pattern = _relative_glob(args.pattern, prefix, target)
        if pattern is None:
            raise ToolError("The pattern is empty. Give a glob such as '**/*.py'.")
        if find_rg() is not None:
            rels = await self._rg_files(ctx, target, prefix, pattern)
        else:
            keep = compile_glob(pattern)
            rels = await in_thread(lambda stop: _walk_glob(target, ctx.root, keep, prefix, stop))
        where = ctx.display(target) if args.path else "the project"
        if not rels:
            return ToolResult(f"No files match {pattern!r} in {where}. Gitignored files and .git, "
                              "node_modules, virtualenv and cache directories are not listed.",
                              summary="No files", data={"total": 0})
        newest = await asyncio.to_thread(_newest_first, ctx.root, rels, GLOB_LIMIT)
        lines = list(newest)
        if len(rels) > len(newest):
            lines.append(f"[Showing the {len(newest)} most recently modified of {len(rels)} matching files. "
                         "Use a more specific pattern or path to see the others.]")
        return ToolResult("\n".join(lines), summary=plural(len(rels), "file"),
                          data={"total": len(rels), "shown": len(newest)})

    @staticmethod
    async def _rg_files(ctx: ToolContext, target: Path, prefix: str, pattern: str) -> list[str]:
        plan = plan_rg(ctx, target, prefix, pattern)
        if plan is None:
            return []
        try:
            out = await run_rg(files_args(plan.filters, "."), plan.directory, timeout=SEARCH_TIMEOUT)
        except RgTimeout:
            raise ToolError(f"glob {pattern!r} took longer than {SEARCH_TIMEOUT:g}s and was stopped. "
                            "Give a narrower path.") from None
        if out.returncode == 2 and "error parsing glob" in out.stderr:
            raise ToolError(invalid_glob(pattern, out.stderr))
        return split_paths(out.stdout, plan.prefix)


def _walk_glob(target: Path, root: Path, keep: Callable[[str], bool], prefix: str,
               stop: threading.Event) -> list[str]:
    found = []
    for _, rel in ignore.walk_files(target, root, keep_file=keep):
        if stop.is_set():
            break
        found.append(prefix + rel)
    return found


def _newest_first(root: Path, rels: list[str], limit: int) -> list[str]:
    """The ``limit`` most recently modified of ``rels`` (shown paths: relative to root, or absolute)."""
    base = str(root)

    def mtime(rel: str) -> float:
        try:
            return os.stat(os.path.join(base, rel)).st_mtime
        except OSError:  # removed since it was listed
            return 0.0

    stamped = sorted((-mtime(rel), rel) for rel in rels)
    return [rel for _, rel in stamped[:limit]]


class ListFilesTool(Tool):
    name = "list_files"
    kind = "search"
    planning = True
    description = (
        "Show a directory as a tree with file sizes, to get oriented in a project. Skips .git, "
        "node_modules, virtualenvs, caches and gitignored paths; large directories are summarised with "
        "counts. Use glob to find files by name and grep to search contents."
    )

    class Args(ToolArgs):
        path: str | None = Field(None, description="Directory to list, relative to the project root. "
                                 "Default: the project root.")
        max_depth: int = Field(3, ge=1, le=10, description="How many directory levels to expand; deeper "
                               "directories are shown with their file and directory counts.")

    def phase(self, args: Any) -> str:
        return f"Listing {args.path or 'the project'}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        target = resolve_target(ctx, args.path)
        text, files, dirs = await asyncio.to_thread(list_tree, target, ctx.root, ctx.display(target),
                                                    args.max_depth)
        return ToolResult(text, summary=f"{files} files, {dirs} directories")


SEARCH_TOOLS: list[Tool] = [GrepTool(), GlobTool(), ListFilesTool()]
