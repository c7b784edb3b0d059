"""The .gitignore rules (pathspec lines, git's precedence) and the walker, checked against git where it matters."""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anvil.core.tools.search.ignore import (
    IgnoreFile,
    compile_glob,
    is_ignored,
    list_dir,
    parse_ignore_line,
    rules_for,
    walk_files,
)

HAVE_GIT = shutil.which("git") is not None
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def ignored(lines: list[str], path: str, is_dir: bool = False) -> bool:
    return is_ignored((IgnoreFile("", lines),), path, is_dir)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def walked(start: Path, root: Path | None = None) -> list[str]:
    return sorted(rel for _, rel in walk_files(start, root or start))


def git_visible(root: Path) -> list[str]:
    """The files git considers not ignored (an untracked-files listing of a fresh repository)."""
    out = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z"], cwd=root, env=GIT_ENV,
                         capture_output=True, check=True).stdout.decode()
    return sorted(p for p in out.split("\0") if p)


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], env=GIT_ENV, check=True)


def git_check_ignore(root: Path, line: str, path: str) -> bool:
    """Whether git ignores the file ``path`` under a .gitignore holding ``line``."""
    git_init(root)
    write(root, {".gitignore": line + "\n", path: ""})
    done = subprocess.run(["git", "check-ignore", "-q", "--", path], cwd=root, env=GIT_ENV, check=False)
    assert done.returncode in (0, 1), done
    return done.returncode == 0


# --- single patterns --------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["", "   ", "# a comment", "/", "!"])
def test_blank_lines_and_comments_are_no_patterns(line: str) -> None:
    assert parse_ignore_line(line) is None


@pytest.mark.parametrize(("pattern", "path", "is_dir", "expected"), [
    # no slash: a name at any depth
    ("*.log", "a.log", False, True),
    ("*.log", "deep/er/a.log", False, True),
    ("*.log", "a.logx", False, False),
    ("build", "build", True, True),
    ("build", "src/build", False, True),
    # leading slash: anchored to the ignore file's directory
    ("/build", "build", True, True),
    ("/build", "src/build", True, False),
    # trailing slash: directories only
    ("build/", "build", True, True),
    ("build/", "src/build", True, True),
    ("build/", "build", False, False),
    # a slash in the middle anchors too
    ("doc/*.txt", "doc/a.txt", False, True),
    ("doc/*.txt", "doc/sub/a.txt", False, False),
    ("doc/*.txt", "src/doc/a.txt", False, False),
    # ** forms
    ("**/foo", "foo", False, True),
    ("**/foo", "a/b/foo", False, True),
    ("a/**/b", "a/b", False, True),
    ("a/**/b", "a/x/y/b", False, True),
    ("a/**/b", "c/a/x/b", False, False),
    ("abc/**", "abc/x", False, True),
    ("abc/**", "abc/x/y", False, True),
    ("abc/**", "abc", True, False),
    ("foo**bar", "fooXbar", False, True),  # not a whole segment: behaves like *
    # single characters and classes never cross "/"
    ("?.py", "a.py", False, True),
    ("?.py", "ab.py", False, False),
    ("a?b", "a/b", False, False),
    ("[ab].py", "b.py", False, True),
    ("[ab].py", "c.py", False, False),
    ("[!ab].py", "c.py", False, True),
    ("[!ab].py", "a.py", False, False),
    ("[a-c]x", "bx", False, True),
    ("*", "anything/at/all", False, True),
    # escapes
    ("\\#hash", "#hash", False, True),
    ("\\!bang", "!bang", False, True),
    ("trailing\\ ", "trailing ", False, True),
    ("trailing   ", "trailing", False, True),
    ("a\\*b", "a*b", False, True),
    ("a\\*b", "axb", False, False),
    # regex metacharacters are literal
    ("a+b(c).txt", "a+b(c).txt", False, True),
    ("a.b", "axb", False, False),
])
def test_pattern_matching(pattern: str, path: str, is_dir: bool, expected: bool) -> None:
    assert ignored([pattern], path, is_dir) is expected


def test_last_matching_line_wins_and_negation_reincludes() -> None:
    lines = ["*.log", "!keep.log", "very/keep.log"]
    assert ignored(lines, "x.log")
    assert not ignored(lines, "keep.log")
    assert not ignored(lines, "sub/keep.log")
    assert ignored(lines, "very/keep.log")


def test_deeper_ignore_files_override_shallower_ones(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "*.log\n", "sub/.gitignore": "!important.log\n",
                     "sub/important.log": "", "sub/other.log": "", "important.log": ""})
    assert walked(tmp_path) == [".gitignore", "sub/.gitignore", "sub/important.log"]


def test_patterns_in_nested_files_are_relative_to_their_directory(tmp_path: Path) -> None:
    write(tmp_path, {"a/.gitignore": "/out\n", "a/out/x.txt": "", "a/b/out/y.txt": "", "out/z.txt": ""})
    assert walked(tmp_path) == ["a/.gitignore", "a/b/out/y.txt", "out/z.txt"]


def test_git_info_exclude_and_dot_ignore_files_count(tmp_path: Path) -> None:
    write(tmp_path, {".git/info/exclude": "secret.txt\n", ".ignore": "scratch/\n", "secret.txt": "",
                     "scratch/x": "", "kept.txt": ""})
    assert walked(tmp_path) == [".ignore", "kept.txt"]


# --- lines git reads otherwise than a plain glob would (the hand-written matcher did not) --------

@pytest.mark.parametrize(("line", "path", "expected"), [
    ("a\\", "a\\", False),  # a trailing backslash escapes nothing: the line never matches
    ("[abc", "[abc", False),  # an unclosed "[" makes the line match nothing, not a literal "["
    ("[z-a]", "m", False),  # a reversed range holds nothing between its ends (the old matcher crashed on it)
    ("\\[abc", "[abc", True),  # an escaped "[" is literal
    ("[]", "[]", False),
    ("[!]", "[!]", False),
])
def test_lines_git_never_matches_with(tmp_path: Path, line: str, path: str, expected: bool) -> None:
    assert ignored([line], path) is expected
    if HAVE_GIT:
        assert git_check_ignore(tmp_path, line, path) is expected


def test_lines_that_cannot_be_read_do_not_stop_the_others(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "[z-a]\n!\na\\\n[abc\n*.log\n", "x.log": "", "z": "", "[abc": ""})
    assert walked(tmp_path) == [".gitignore", "[abc", "z"]


def test_a_trailing_double_star_slash_means_the_directories_below(tmp_path: Path) -> None:
    git_init(tmp_path)
    write(tmp_path, {".gitignore": "x/**/\n", "x/f": "", "x/y/g": "", "x/y/z/h": "", "w/x/y/i": ""})
    assert walked(tmp_path) == [".gitignore", "w/x/y/i", "x/f"]
    if HAVE_GIT:
        assert walked(tmp_path) == git_visible(tmp_path)


def test_a_posix_class_warns_nothing() -> None:
    """re warns about "[[" (a nested set in a future Python); a warning would reach the person's terminal."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_ignore_line("[[:alpha:]]x")
    assert not caught


# --- globs (ripgrep --glob semantics) ---------------------------------------------------------

@pytest.mark.parametrize(("glob", "path", "expected"), [
    ("*.py", "a.py", True),
    ("*.py", "src/deep/a.py", True),
    ("*.{ts,tsx}", "src/a.tsx", True),
    ("*.{ts,tsx}", "src/a.js", False),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/sub/a.py", False),
    ("src/**/*.py", "src/sub/a.py", True),
    ("src/**/*.py", "lib/src/a.py", False),
    ("**/test_*.py", "tests/unit/test_x.py", True),
    ("!*.md", "README.md", False),
    ("!*.md", "main.py", True),
    ("{a,b{c,d}}.txt", "bd.txt", True),
    ("{a,b{c,d}}.txt", "b.txt", False),
    ("\\{a,b}.txt", "{a,b}.txt", True),  # an escaped brace is literal
    ("#notes.md", "#notes.md", True),  # "#" and "!" begin a glob as plain characters
    ("src/", "src", True),
    ("src", "src/a.py", False),  # a glob is matched against the file's path, not a directory above it
    ("src/**", "src/a/b.py", True),
])
def test_compile_glob(glob: str, path: str, expected: bool) -> None:
    assert compile_glob(glob)(path) is expected


@pytest.mark.parametrize(("glob", "message"), [
    ("*.{py", "unclosed alternate group"),
    ("src/[ab", "unclosed character class"),
    ("{a,[b}", "unclosed character class"),
])
def test_globs_rg_refuses(glob: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compile_glob(glob)


# --- walking ----------------------------------------------------------------------------------

def test_walk_skips_vcs_dependencies_virtualenvs_and_caches(tmp_path: Path) -> None:
    write(tmp_path, {"keep.py": "", ".git/config": "", "node_modules/p/i.js": "", ".venv/x.py": "",
                     "venv/x.py": "", "__pycache__/a.pyc": "", ".mypy_cache/x": "", ".pytest_cache/x": "",
                     ".ruff_cache/x": "", ".tox/x": "", "myenv/pyvenv.cfg": "", "myenv/lib/x.py": "",
                     "dist/pkg.whl": "", "build/x.py": "", ".github/ci.yml": ""})
    # dist/ and build/ are only skipped when gitignored; dotfiles are kept.
    assert walked(tmp_path) == [".github/ci.yml", "build/x.py", "dist/pkg.whl", "keep.py"]


def test_a_start_directory_is_walked_even_when_it_would_be_skipped(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "gen/\n", "gen/a.txt": "", "node_modules/p/i.js": "",
                     "node_modules/p/node_modules/q/j.js": ""})
    assert walked(tmp_path / "gen", tmp_path) == ["a.txt"]
    # The start is searched explicitly; what is below it is still filtered.
    assert walked(tmp_path / "node_modules", tmp_path) == ["p/i.js"]


def test_a_subdirectory_walk_applies_the_root_rules(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "*.tmp\nsrc/generated/\n", "src/a.py": "", "src/b.tmp": "",
                     "src/generated/c.py": ""})
    assert walked(tmp_path / "src", tmp_path) == ["a.py"]
    assert len(rules_for(tmp_path, tmp_path / "src")) == 1


def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, {"secret.txt": "x"})
    root = tmp_path / "root"
    write(root, {"a.txt": ""})
    (root / "link_dir").symlink_to(outside)
    (root / "link_file").symlink_to(outside / "secret.txt")
    assert walked(root) == ["a.txt"]
    listing = list_dir(str(root), "", ())
    assert sorted(e.name for e in listing.links) == ["link_dir", "link_file"]


def test_keep_file_filters_files_but_never_unignores(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "secret.py\n", "a.py": "", "b.txt": "", "secret.py": "", "s/c.py": ""})
    files = sorted(rel for _, rel in walk_files(tmp_path, tmp_path, keep_file=compile_glob("*.py")))
    assert files == ["a.py", "s/c.py"]


@pytest.mark.skipif(not HAVE_GIT, reason="needs git")
def test_agrees_with_git_on_a_realistic_tree(tmp_path: Path) -> None:
    git_init(tmp_path)
    write(tmp_path, {
        ".gitignore": "# deps\n*.pyc\n/dist\nbuild/\n*.log\n!important.log\ndocs/_build/\n**/tmp/**\n"
                      "coverage[0-9].xml\n",
        "src/app.py": "", "src/app.pyc": "", "src/build/x.py": "", "dist/a.whl": "", "lib/dist/b.py": "",
        "debug.log": "", "important.log": "", "logs/important.log": "", "logs/other.log": "",
        "docs/_build/index.html": "", "docs/index.md": "", "a/tmp/b/c.txt": "", "tmp/d.txt": "",
        "coverage1.xml": "", "coverageX.xml": "", "pkg/.gitignore": "*.json\n!keep.json\n",
        "pkg/data.json": "", "pkg/keep.json": "", "pkg/sub/more.json": "", ".env.example": "",
    })
    assert walked(tmp_path) == git_visible(tmp_path)


NAMES = ["a", "b", "c.py", "d.log", "e.txt"]
PATTERNS = ["*.log", "!d.log", "/a", "a/", "b/", "*.py", "!c.py", "a/**", "**/b", "a/*.txt", "/b/c.py",
            "[ab]", "?.txt", "e.*", "!b/", "**/a/*.py", "a/**/", "!*/", "*", "!a/", "[a", "a\\"]


@pytest.mark.skipif(not HAVE_GIT, reason="needs git")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    files=st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3), min_size=1, max_size=8),
    root_rules=st.lists(st.sampled_from(PATTERNS), max_size=4),
    nested_rules=st.lists(st.sampled_from(PATTERNS), max_size=3),
)
def test_agrees_with_git_on_random_trees(tmp_path_factory: pytest.TempPathFactory, files: list[list[str]],
                                         root_rules: list[str], nested_rules: list[str]) -> None:
    root = tmp_path_factory.mktemp("tree")
    git_init(root)
    made: set[str] = set()
    for parts in files:
        # The last part is a file; the others are directories (skip clashes between the two).
        path = "/".join(parts)
        if any(p == path or p.startswith(path + "/") or path.startswith(p + "/") for p in made):
            continue
        made.add(path)
        write(root, {path: "x"})
    write(root, {".gitignore": "\n".join(root_rules) + "\n"})
    if (root / "a").is_dir():
        write(root, {"a/.gitignore": "\n".join(nested_rules) + "\n"})
    assert walked(root) == git_visible(root)
