"""grep, glob and list_files on real files, through ripgrep and through the Python fallback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from anvil.core.tools.base import Tool, ToolContext, ToolRegistry, ToolResult, ToolSettings
from anvil.core.tools.errors import ToolError
from anvil.core.tools.search import filetree
from anvil.core.tools.search import search_tools as search
from anvil.core.tools.search.engine import Search, in_thread, python_grep
from anvil.core.tools.search.ripgrep import find_rg
from anvil.core.tools.search.search_tools import SEARCH_TOOLS, GlobTool, GrepTool, ListFilesTool

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

FILES: dict[str, str | bytes] = {
    "src/app.py": "def main():\n    print('hello world')\n\n\nclass Hello:\n    pass\n",
    "src/util/strings.py": "def greet(name):\n    return f'Hello, {name}'\n",
    "tests/test_app.py": "from src.app import main\n\n\ndef test_main():\n    main()\n",
    "README.md": "# Demo\nhello there\n",
    "docs/ünïcode.md": "héllo wörld ✓\nplain line\n",
    ".gitignore": "build/\n*.log\n",
    ".github/workflows/ci.yml": "name: hello ci\n",
    "build/out.py": "hello from build\n",
    "debug.log": "hello log\n",
    "node_modules/pkg/index.js": "hello js\n",
    ".venv/lib/site.py": "hello venv\n",
    "data.bin": b"hello\0binary\0data",
}


def make_tree(root: Path, files: dict[str, str | bytes], git: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if git:
        subprocess.run(["git", "init", "-q", str(root)], env=GIT_ENV, check=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture(params=["rg", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "rg" and find_rg() is None:
        pytest.skip("no rg binary")
    if request.param == "python":
        monkeypatch.setattr(search, "find_rg", lambda: None)
    return str(request.param)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "repo", FILES)


def context(root: Path, **settings: Any) -> ToolContext:
    return ToolContext(root=root, data_dir=root.parent / "data", settings=ToolSettings(**settings))


async def call(tool: Tool, root: Path | ToolContext, **args: Any) -> ToolResult:
    ctx = root if isinstance(root, ToolContext) else context(root)
    return await tool.run(tool.Args(**args), ctx)


async def grep(root: Path | ToolContext, **args: Any) -> ToolResult:
    return await call(GrepTool(), root, **args)


def lines(result: ToolResult) -> list[str]:
    return result.output.splitlines()


# --- grep -------------------------------------------------------------------------------------

async def test_files_with_matches_respects_gitignore_and_skips(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="hello")
    # Not: build/ and *.log (gitignored), node_modules and .venv (always skipped), data.bin (binary),
    # .git; but .github (a dotfile directory) is searched. Sorted by path, relative to the root.
    assert lines(result) == [".github/workflows/ci.yml", "README.md", "src/app.py"]
    assert result.summary == "3 files match"
    assert result.data == {"engine": engine, "total": 3, "shown": 3}


async def test_ignore_case(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="HELLO", ignore_case=True)
    assert lines(result) == [".github/workflows/ci.yml", "README.md", "src/app.py", "src/util/strings.py"]


async def test_content_mode_prints_path_line_text(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="main", output_mode="content")
    assert lines(result) == [
        "src/app.py:1:def main():",
        "tests/test_app.py:1:from src.app import main",
        "tests/test_app.py:4:def test_main():",
        "tests/test_app.py:5:    main()",
    ]
    assert result.summary == "4 matching lines in 2 files"


async def test_context_lines_and_breaks(repo: Path, engine: str) -> None:
    # Giving context implies content mode.
    result = await grep(repo, pattern="def main|class Hello", context=1)
    assert lines(result) == [
        "src/app.py:1:def main():",
        "src/app.py-2-    print('hello world')",
        "--",
        "src/app.py-4-",
        "src/app.py:5:class Hello:",
        "src/app.py-6-    pass",
    ]


async def test_context_merges_overlapping_groups_and_separates_files(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="main", output_mode="content", context=2)
    assert lines(result) == [
        "src/app.py:1:def main():",
        "src/app.py-2-    print('hello world')",
        "src/app.py-3-",
        "--",
        "tests/test_app.py:1:from src.app import main",
        "tests/test_app.py-2-",
        "tests/test_app.py-3-",
        "tests/test_app.py:4:def test_main():",
        "tests/test_app.py:5:    main()",
    ]


async def test_count_mode(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="main", output_mode="count")
    assert lines(result) == ["src/app.py:1", "tests/test_app.py:3", "Total: 4 matching lines in 2 files"]


async def test_an_explicit_files_with_matches_ignores_context(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="main", output_mode="files_with_matches", context=3)
    assert lines(result) == ["src/app.py", "tests/test_app.py"]


async def test_path_to_a_directory_keeps_paths_relative_to_the_root(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="Hello", path="src")
    assert lines(result) == ["src/app.py", "src/util/strings.py"]
    result = await grep(repo, pattern="Hello", path="./src/util/", output_mode="content")
    assert lines(result) == ["src/util/strings.py:2:    return f'Hello, {name}'"]


async def test_path_to_a_file(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="def", path="src/app.py", output_mode="content")
    assert lines(result) == ["src/app.py:1:def main():"]


async def test_explicit_paths_are_searched_even_when_skipped_or_ignored(repo: Path, engine: str) -> None:
    assert lines(await grep(repo, pattern="hello", path="node_modules")) == ["node_modules/pkg/index.js"]
    assert lines(await grep(repo, pattern="hello", path="build")) == ["build/out.py"]
    assert lines(await grep(repo, pattern="hello", path="debug.log")) == ["debug.log"]


async def test_glob_filters_files_without_overriding_gitignore(repo: Path, engine: str) -> None:
    assert lines(await grep(repo, pattern="hello", glob="*.md")) == ["README.md"]
    # build/out.py and debug.log match the globs but stay ignored.
    assert lines(await grep(repo, pattern="hello", glob="*.py")) == ["src/app.py"]
    assert (await grep(repo, pattern="hello", glob="*.log")).data["total"] == 0
    assert lines(await grep(repo, pattern="Hello", glob="*.{py,md}", ignore_case=True)) == [
        "README.md", "src/app.py", "src/util/strings.py"]


async def test_globs_with_directories(repo: Path, engine: str) -> None:
    assert lines(await grep(repo, pattern="def", glob="src/**/*.py")) == ["src/app.py", "src/util/strings.py"]
    assert lines(await grep(repo, pattern="def", glob="src/*.py")) == ["src/app.py"]
    # Relative to path; a glob written from the root while searching src is taken as meant.
    assert lines(await grep(repo, pattern="def", path="src", glob="util/*.py")) == ["src/util/strings.py"]
    assert lines(await grep(repo, pattern="def", path="src", glob="src/util/*.py")) == ["src/util/strings.py"]
    assert lines(await grep(repo, pattern="def", glob="**/test_*.py")) == ["tests/test_app.py"]
    assert (await grep(repo, pattern="def", glob="nowhere/*.py")).summary == "No matches"


async def test_unicode_content_and_file_names(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="wörld ✓", output_mode="content")
    assert lines(result) == ["docs/ünïcode.md:1:héllo wörld ✓"]
    assert lines(await grep(repo, pattern="HÉLLO", ignore_case=True)) == ["docs/ünïcode.md"]


async def test_binary_files_are_skipped_and_refused_explicitly(repo: Path, engine: str) -> None:
    assert (await grep(repo, pattern="binary")).summary == "No matches"
    with pytest.raises(ToolError, match="binary file"):
        await grep(repo, pattern="binary", path="data.bin")


async def test_gitignore_is_respected_outside_a_git_repository(tmp_path: Path, engine: str) -> None:
    root = make_tree(tmp_path / "plain", {".gitignore": "gen/\n", "gen/a.txt": "needle", "b.txt": "needle"},
                     git=False)
    assert lines(await grep(root, pattern="needle")) == ["b.txt"]


async def test_a_pattern_that_looks_like_a_flag(tmp_path: Path, engine: str) -> None:
    root = make_tree(tmp_path / "r", {"a.txt": "x --force y\n"})
    assert lines(await grep(root, pattern="--force", output_mode="content")) == ["a.txt:1:x --force y"]


async def test_invalid_regex_gives_the_error_and_how_to_fix_it(repo: Path, engine: str) -> None:
    with pytest.raises(ToolError) as info:
        await grep(repo, pattern="foo(")
    message = str(info.value)
    assert message.startswith("Invalid regular expression 'foo(':")
    assert "unclosed group" in message or "missing )" in message  # rg's / Python's wording
    assert "Escape" in message


async def test_invalid_glob(repo: Path, engine: str) -> None:
    with pytest.raises(ToolError, match=r"Invalid glob '\*\.\{py': .*unclosed alternate group"):
        await grep(repo, pattern="x", glob="*.{py")
    with pytest.raises(ToolError, match=r"Invalid glob 'src/\[ab': .*unclosed character class"):
        await call(GlobTool(), repo, pattern="src/[ab")


async def test_a_glob_with_a_colon(tmp_path: Path, engine: str) -> None:
    root = make_tree(tmp_path / "r", {"a:b.txt": "x\n", "c.txt": "x\n"})
    assert lines(await grep(root, pattern="x", glob="a:*")) == ["a:b.txt"]


async def test_no_matches_explains_what_was_searched(repo: Path, engine: str) -> None:
    result = await grep(repo, pattern="Nonexistent_Thing", glob="*.py")
    assert result.ok and result.summary == "No matches"
    assert result.output.startswith("No matches for 'Nonexistent_Thing' in the project (files matching '*.py').")
    assert "ignore_case=true" in result.output and "gitignored" in result.output


@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
async def test_no_matches_in_every_mode(repo: Path, engine: str, mode: str) -> None:
    result = await grep(repo, pattern="zzz_nothing_zzz", output_mode=mode)
    assert result.summary == "No matches" and result.data == {"engine": engine, "total": 0}


async def test_paths_outside_the_project_are_refused(repo: Path, engine: str) -> None:
    for path in ("..", "/etc", "../repo/../.."):
        with pytest.raises(ToolError, match="outside the project"):
            await grep(repo, pattern="x", path=path)


async def test_a_symlink_glob_directory_cannot_lead_outside(tmp_path: Path, engine: str) -> None:
    outside = make_tree(tmp_path / "outside", {"secret.py": "password\n"}, git=False)
    root = make_tree(tmp_path / "r", {"a.py": "password\n"})
    (root / "link").symlink_to(outside)
    assert lines(await grep(root, pattern="password")) == ["a.py"]
    if engine == "rg":  # the fallback never descends a symlink, so it simply finds nothing
        with pytest.raises(ToolError, match="outside the project"):
            await grep(root, pattern="password", glob="link/*.py")


async def test_missing_path(repo: Path, engine: str) -> None:
    with pytest.raises(ToolError, match=r"'nope' does not exist .* list_files or glob"):
        await grep(repo, pattern="x", path="nope")


async def test_empty_pattern(repo: Path, engine: str) -> None:
    with pytest.raises(ToolError, match="pattern is empty"):
        await grep(repo, pattern="")


# --- caps -------------------------------------------------------------------------------------

@pytest.fixture
def many(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {f"f{i:02}.txt": "match\nmatch\n" for i in range(30)}
    return make_tree(tmp_path / "many", files)


async def test_max_results_caps_files_with_a_note(many: Path, engine: str) -> None:
    result = await grep(many, pattern="match", max_results=10)
    assert lines(result)[:10] == [f"f{i:02}.txt" for i in range(10)]
    assert lines(result)[10:] == ["[Showing 10 of 30 files (max_results=10). Narrow the search with path, glob "
                                  "or a more specific pattern, or raise max_results.]"]
    assert result.data["total"] == 30 and result.data["shown"] == 10


async def test_max_results_caps_matching_lines_in_content_mode(many: Path, engine: str) -> None:
    result = await grep(many, pattern="match", output_mode="content", max_results=3)
    assert lines(result) == ["f00.txt:1:match", "f00.txt:2:match", "f01.txt:1:match",
                             "[Showing 3 of 60 matching lines (max_results=3). Narrow the search with path, "
                             "glob or a more specific pattern, or raise max_results.]"]


async def test_cap_keeps_after_context_but_not_the_next_matchs_before_context(tmp_path: Path,
                                                                             engine: str) -> None:
    root = make_tree(tmp_path / "r", {"a.txt": "hit\nafter\nx\nbefore\nhit\n"})
    result = await grep(root, pattern="hit", context=1, max_results=1)
    assert lines(result)[:2] == ["a.txt:1:hit", "a.txt-2-after"]
    assert lines(result)[2].startswith("[Showing 1 of 2 matching lines")


async def test_the_output_budget_caps_too(tmp_path: Path, engine: str) -> None:
    root = make_tree(tmp_path / "r", {f"f{i:02}.txt": f"match {'x' * 50}\n" * 5 for i in range(30)})
    ctx = context(root, output_budget=1000)  # the tool keeps 400 for notes, with a floor of 1000
    result = await grep(ctx, pattern="match", output_mode="content", max_results=2000)
    assert len(result.output) < 1200
    assert result.data["total"] == 150 and 0 < result.data["shown"] < 20
    assert "(output limit of 1000 characters)" in result.output
    assert "raise max_results" not in result.output


async def test_long_lines_are_cut(tmp_path: Path, engine: str) -> None:
    root = make_tree(tmp_path / "r", {"min.js": "x" * 1000 + "needle" + "y" * 1000 + "\n"})
    (line,) = lines(await grep(root, pattern="needle", output_mode="content"))
    assert line == "min.js:1:" + "x" * 400 + "… [1606 more characters]"


async def test_engines_agree(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if find_rg() is None:
        pytest.skip("no rg binary")
    queries: list[dict[str, Any]] = [
        {"pattern": "hello|Hello"}, {"pattern": "e", "output_mode": "content", "context": 1},
        {"pattern": "[a-z]+", "output_mode": "count"}, {"pattern": "def", "glob": "**/*.py"},
        {"pattern": "^\\s+\\w+", "output_mode": "content", "path": "src"},
    ]
    with_rg = [(await grep(repo, **q)).output for q in queries]
    monkeypatch.setattr(search, "find_rg", lambda: None)
    assert [(await grep(repo, **q)).output for q in queries] == with_rg


# --- glob -------------------------------------------------------------------------------------

async def test_glob_newest_first_respecting_ignores(repo: Path, engine: str) -> None:
    for age, rel in enumerate(["tests/test_app.py", "src/util/strings.py", "src/app.py"]):
        os.utime(repo / rel, (1_700_000_000 - age * 100, 1_700_000_000 - age * 100))
    result = await call(GlobTool(), repo, pattern="**/*.py")
    assert lines(result) == ["tests/test_app.py", "src/util/strings.py", "src/app.py"]
    assert result.summary == "3 files"


async def test_glob_patterns(repo: Path, engine: str) -> None:
    async def names(**args: Any) -> list[str]:
        return sorted(lines(await call(GlobTool(), repo, **args)))

    assert await names(pattern="*.md") == ["README.md", "docs/ünïcode.md"]
    assert await names(pattern="*.py", path="src") == ["src/app.py", "src/util/strings.py"]
    assert await names(pattern="src/*.py") == ["src/app.py"]
    assert await names(pattern="*.{yml,md}", path=".github") == [".github/workflows/ci.yml"]
    assert await names(pattern="**/*.js", path="node_modules") == ["node_modules/pkg/index.js"]


async def test_glob_cap_and_no_match(repo: Path, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "GLOB_LIMIT", 2)
    result = await call(GlobTool(), repo, pattern="*")
    assert lines(result)[-1].startswith("[Showing the 2 most recently modified of ")
    empty = await call(GlobTool(), repo, pattern="*.rs")
    assert empty.output.startswith("No files match '*.rs' in the project.")
    with pytest.raises(ToolError, match="is a file"):
        await call(GlobTool(), repo, pattern="*", path="README.md")


# --- list_files -------------------------------------------------------------------------------

def size(rel: str) -> str:
    content = FILES[rel]
    return f"{len(content if isinstance(content, bytes) else content.encode())} B"


async def test_list_files_tree(repo: Path) -> None:
    (repo / "myenv").mkdir()
    (repo / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    result = await call(ListFilesTool(), repo)
    assert result.output.splitlines() == [
        "./",
        "  .github/",
        "    workflows/",
        f"      ci.yml  ({size('.github/workflows/ci.yml')})",
        "  .venv/  (not listed)",
        "  docs/",
        f"    ünïcode.md  ({size('docs/ünïcode.md')})",
        "  myenv/  (virtualenv, not listed)",
        "  node_modules/  (not listed)",
        "  src/",
        "    util/",
        f"      strings.py  ({size('src/util/strings.py')})",
        f"    app.py  ({size('src/app.py')})",
        "  tests/",
        f"    test_app.py  ({size('tests/test_app.py')})",
        f"  .gitignore  ({size('.gitignore')})",
        f"  data.bin  ({size('data.bin')})",
        f"  README.md  ({size('README.md')})",
        "[2 gitignored entries not shown]",
    ]
    assert result.summary == "8 files, 6 directories"


async def test_list_files_marks_empty_directories(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "r", {".gitignore": "gen/*\n", "gen/x.c": ""})
    (root / "docs").mkdir()
    assert lines(await call(ListFilesTool(), root)) == [
        "./", "  docs/  (empty)", "  gen/  (only gitignored entries)", "  .gitignore  (6 B)",
        "[1 gitignored entry not shown]"]
    assert lines(await call(ListFilesTool(), root, path="docs")) == ["docs/  (empty)"]


async def test_list_files_depth_and_subdirectory(repo: Path) -> None:
    result = await call(ListFilesTool(), repo, path="src", max_depth=1)
    assert lines(result) == ["src/", "  util/  (1 file)", f"  app.py  ({size('src/app.py')})"]
    assert lines(await call(ListFilesTool(), repo, path="src/app.py")) == [f"src/app.py  ({size('src/app.py')})"]


async def test_list_files_summarises_large_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files: dict[str, str | bytes] = {f"big/f{i:03}.txt": "x" * 2048 for i in range(25)}
    files.update({f"big/d{i}/x.txt": "" for i in range(3)})
    root = make_tree(tmp_path / "r", files)
    monkeypatch.setattr(filetree, "PER_DIR", 5)
    out = lines(await call(ListFilesTool(), root))
    assert out[:9] == ["./", "  big/", "    d0/", "      x.txt  (0 B)", "    d1/", "      x.txt  (0 B)",
                       "    d2/", "      x.txt  (0 B)", "    f000.txt  (2.0 KB)"]
    assert "    … 23 more files" in out


async def test_list_files_overall_cap_keeps_top_levels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files: dict[str, str | bytes] = {f"{d}/{s}/f{i}.txt": "" for d in "abc" for s in "xyz" for i in range(5)}
    root = make_tree(tmp_path / "r", files)
    monkeypatch.setattr(filetree, "MAX_LINES", 8)
    out = lines(await call(ListFilesTool(), root))
    # Breadth first: every top-level and second-level directory is shown, the rest as counts.
    assert out[:5] == ["./", "  a/", "    x/  (5 files)", "    y/  (5 files)", "    z/  (5 files)"]
    assert out[-1].startswith("[Listing cut at about 8 lines.")


def test_human_sizes() -> None:
    assert [filetree.human_size(n) for n in (0, 1023, 1024, 1536, 5 * 1024**2, 3 * 1024**3)] == [
        "0 B", "1023 B", "1.0 KB", "1.5 KB", "5.0 MB", "3.0 GB"]


# --- the contract -----------------------------------------------------------------------------

def test_tools_and_schemas() -> None:
    registry = ToolRegistry(list(SEARCH_TOOLS))
    assert registry.names() == ["grep", "glob", "list_files"]
    grep_params = registry.get("grep").schema()["function"]["parameters"]  # type: ignore[union-attr]
    assert grep_params["required"] == ["pattern"]
    assert set(grep_params["properties"]) == {"pattern", "path", "glob", "ignore_case", "output_mode", "context",
                                              "max_results"}
    assert all(not tool.mutates and tool.kind == "search" and tool.approval == "none" for tool in SEARCH_TOOLS)
    bad = registry.prepare("grep", '{"pattern": "x", "regex": true}')
    assert bad.error == "Invalid arguments for grep: regex: unknown parameter"
    assert "output_mode" in (registry.prepare("grep", '{"pattern": "x", "output_mode": "lines"}').error or "")


def test_phases() -> None:
    assert GrepTool().phase(GrepTool.Args(pattern="foo", path="src")) == "Searching for 'foo' in src"
    assert GlobTool().phase(GlobTool.Args(pattern="*.py")) == "Finding files matching '*.py'"
    assert ListFilesTool().phase(ListFilesTool.Args()) == "Listing the project"


async def test_an_allowed_directory_outside_the_project(tmp_path: Path, engine: str) -> None:
    shared = make_tree(tmp_path / "shared", {"lib.py": "needle\n", ".gitignore": "gen/\n", "gen/x.py": "needle\n"},
                       git=False)
    root = make_tree(tmp_path / "r", {"a.py": "needle\n"})
    ctx = context(root, allowed_dirs=[shared])
    assert lines(await grep(ctx, pattern="needle", path=str(shared), output_mode="content")) == [
        f"{shared}/lib.py:1:needle"]
    assert lines(await call(GlobTool(), ctx, pattern="*.py", path=str(shared))) == [f"{shared}/lib.py"]


async def test_cancelling_a_fallback_search_stops_its_thread() -> None:
    started, stopped = threading.Event(), threading.Event()

    def walk(stop: threading.Event) -> None:
        started.set()
        if stop.wait(10):
            stopped.set()

    task = asyncio.create_task(in_thread(walk))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(stopped.wait, 10)


def test_a_stopped_fallback_grep_returns_early(repo: Path) -> None:
    stop = threading.Event()
    stop.set()
    s = Search(pattern="hello", mode="files_with_matches", context=0, ignore_case=False, glob=None, target=repo,
               directory=repo, prefix="")
    assert python_grep(s, repo, stop) == []
    assert [f.path for f in python_grep(s, repo)] == [".github/workflows/ci.yml", "README.md", "src/app.py"]
