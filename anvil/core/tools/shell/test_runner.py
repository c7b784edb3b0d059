"""run_tests: the project's test runner, reduced to counts and the first failure.

The command is ``settings.test_command`` when configured, else detected from the project's files.
It runs through the shell session's machinery (process group, timeout, full log on disk) from the
project root. A whole test log rarely helps a model: it gets a one-line result and the first
failure's details, and asks for everything with ``verbose`` when it needs to.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from anvil.core.process_groups import describe_exit
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from anvil.core.tools.shell.jobs import format_duration
from anvil.core.tools.shell.output_capture import HeadTail
from anvil.core.tools.shell.processes import CommandRun, shell_session

#: Logs bigger than this are not read back for parsing; the in-memory head and tail are used instead.
MAX_PARSED_LOG = 20_000_000
#: How much of the output's end is shown when a run failed and no failure block was recognised.
FALLBACK_TAIL_CHARS = 4000
#: How many of the other failing tests are named after the first failure's details.
MAX_NAMED_FAILURES = 10


@dataclass
class TestPlan:
    command: str
    runner: str  # "pytest", "npm", "go", "cargo" or "configured"
    notes: list[str] = field(default_factory=list)


#: a command that runs a test runner: the known runners by name, and the usual ways to start them
_TEST_RUNNER = re.compile(
    r"(^|[\s;&|(/])(pytest|py\.test|tox|nox|jest|vitest|mocha|phpunit|rspec|ctest)(?=$|[\s;&|)])"
    r"|\b(python3?|uv run|poetry run)\s+-m\s+(pytest|unittest)\b"
    r"|\b(npm|pnpm|yarn|bun)\s+(run\s+)?test\b|\b(go|cargo|dotnet|mix|deno)\s+test\b|\bmake\s+(test|check)\b")


def runs_test_runner(command: str, project_command: str | None = None) -> bool:
    """Whether a shell command runs tests: a known runner (pytest, npm test, go test, make check ...), or the
    project's own test command (``project_command``: the configured one, or what :func:`detect_test_command`
    found). Stage words and workflows that gate testing ask this, so both see the same commands as tests."""
    if _TEST_RUNNER.search(command):
        return True
    own = " ".join((project_command or "").replace("{path}", "").split())
    return bool(own) and own in " ".join(command.split())


def project_test_command(ctx: ToolContext) -> str | None:
    """The project's test command: ``test_command`` when configured, else the one detected from its files."""
    configured = (ctx.settings.test_command or "").strip()
    if configured:
        return configured.replace("{path}", "").strip()
    plan = detect_test_command(ctx.root)
    return plan.command if plan is not None else None


def _has_python_tests(root: Path) -> bool:
    """Signs that pytest is the project's runner, beyond merely being a Python project."""
    if (root / "pytest.ini").exists() or (root / "conftest.py").exists():
        return True
    markers = (("pyproject.toml", "[tool.pytest"), ("setup.cfg", "[tool:pytest]"), ("tox.ini", "[pytest]"))
    for name, marker in markers:
        try:
            if marker in (root / name).read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            continue
    if next(root.glob("test_*.py"), None) is not None:
        return True
    test_dirs = (root / "tests", root / "test")
    return any(d.is_dir() and next(d.rglob("*.py"), None) is not None for d in test_dirs)


def _npm_test_command(root: Path) -> str | None:
    try:
        scripts = json.loads((root / "package.json").read_text(encoding="utf-8")).get("scripts") or {}
    except (OSError, ValueError, AttributeError):
        return None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(test, str) or "no test specified" in test:  # npm init's placeholder always fails
        return None
    for lockfile, manager in (("pnpm-lock.yaml", "pnpm test"), ("yarn.lock", "yarn test"),
                              ("bun.lockb", "bun run test"), ("bun.lock", "bun run test")):
        if (root / lockfile).exists():
            return manager
    return "npm test"


def _python(root: Path) -> str:
    """The interpreter that has the project's dependencies: its own virtualenv first."""
    for venv in (".venv", "venv"):
        if (root / venv / "bin" / "python").exists():
            return f"{venv}/bin/python"
    active = os.environ.get("VIRTUAL_ENV")
    if active and (Path(active) / "bin" / "python").exists():
        return shlex.quote(str(Path(active) / "bin" / "python"))
    if (root / "poetry.lock").exists() and shutil.which("poetry"):
        return "poetry run python"
    if importlib.util.find_spec("pytest") is not None:  # anvil runs inside the project's environment
        return shlex.quote(sys.executable)
    return "python3"


def detect_test_command(root: Path) -> TestPlan | None:
    """The project's test command from its files, or None when nothing is recognised."""
    pytest = f"{_python(root)} -m pytest -q"
    if _has_python_tests(root):
        return TestPlan(pytest, "pytest")
    npm = _npm_test_command(root)
    if npm:
        return TestPlan(npm, "npm")
    if (root / "go.mod").exists():
        return TestPlan("go test ./...", "go")
    if (root / "Cargo.toml").exists():
        return TestPlan("cargo test", "cargo")
    if any((root / name).exists() for name in ("pyproject.toml", "setup.cfg", "setup.py")):
        return TestPlan(pytest, "pytest")
    return None


def plan_tests(ctx: ToolContext, path: str | None) -> TestPlan:
    """The command to run, narrowed to ``path`` where the runner allows it."""
    configured = (ctx.settings.test_command or "").strip()
    plan = TestPlan(configured, "configured") if configured else detect_test_command(ctx.root)
    if plan is None:
        raise ToolError(
            "No test runner was found for this project (looked for pytest configuration or a tests/ "
            "directory, a package.json test script, go.mod and Cargo.toml). Run the tests with run_command, "
            "or ask the person to set test_command = \"...\" in .anvil/config.toml.")
    if not path or not path.strip():
        plan.command = plan.command.replace("{path}", "").strip()
        return plan
    file_part, sep, selector = path.strip().partition("::")  # pytest node ids: tests/test_x.py::test_y
    if sep and plan.runner not in ("pytest", "configured"):
        raise ToolError(f"'::' test selectors only work with pytest, and this project runs {plan.runner}. "
                        "Give a file or directory as path, or use run_command to pass the runner a filter.")
    target = ctx.resolve(file_part)
    if not target.exists():
        raise ToolError(f"'{file_part}' does not exist in the project. Give a test file or directory relative "
                        "to the project root, or leave path out to run the whole suite.")
    rel = ctx.display(target)
    quoted = shlex.quote(rel + sep + selector)
    if plan.runner == "configured":
        # `{path}` lets a configured command say where the path goes; otherwise it is appended
        plan.command = (plan.command.replace("{path}", quoted) if "{path}" in plan.command
                        else f"{plan.command} {quoted}")
    elif plan.runner == "pytest":
        plan.command = f"{plan.command} {quoted}"
    elif plan.runner == "npm":
        # npm needs `--` to hand arguments to the script; yarn, pnpm and bun pass them on as they are
        separator = " --" if plan.command == "npm test" else ""
        plan.command = f"{plan.command}{separator} {quoted}"
    elif plan.runner == "go":
        package = rel if target.is_dir() else ctx.display(target.parent)  # go tests whole packages
        plan.command = "go test ./..." if package == "." else f"go test {shlex.quote('./' + package)}/..."
    elif plan.runner == "cargo":
        if target.suffix == ".rs" and target.parent == ctx.root / "tests":
            plan.command = f"cargo test --test {shlex.quote(target.stem)}"
        else:
            plan.notes.append(f"cargo test cannot be narrowed to {rel}, so the whole suite ran; pass a test "
                              "name filter with run_command (cargo test NAME) to run fewer.")
    return plan


@dataclass
class Counts:
    passed: int
    failed: int  # failures and errors together: anything that needs fixing
    text: str  # as the runner put it, e.g. "2 failed, 5 passed, 1 skipped"


def _pairs(text: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for number, word in re.findall(r"(\d+) ([a-z]+)", text):
        found[word] = found.get(word, 0) + int(number)
    return found


def _counts_from(text: str, pairs: dict[str, int]) -> Counts:
    failed = sum(pairs.get(w, 0) for w in ("failed", "failing", "fail", "error", "errors"))
    passed = sum(pairs.get(w, 0) for w in ("passed", "passing", "pass"))
    return Counts(passed, failed, text.strip().rstrip(",").strip())


def parse_counts(output: str) -> Counts | None:
    """Passed/failed counts from the summary lines of pytest, cargo, go, jest, vitest, node, mocha,
    or any "N passed, N failed" line."""
    cargo = re.findall(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", output, re.M)
    if cargo:
        passed, failed, ignored = (sum(int(row[i]) for row in cargo) for i in range(3))
        text = f"{failed} failed, {passed} passed" + (f", {ignored} ignored" if ignored else "")
        return Counts(passed, failed, text)
    pytest = re.findall(r"^=*\s*(\d+ [a-z]+(?:, \d+ [a-z]+)*|no tests ran) in [\d.]+s\b", output, re.M)
    if pytest:
        return _counts_from(pytest[-1], _pairs(pytest[-1]))
    jest = re.findall(r"^Tests:\s+(.+)$", output, re.M)
    if jest:
        text = re.sub(r",?\s*\d+ total", "", jest[-1])
        return _counts_from(text, _pairs(text))
    vitest = re.findall(r"^\s*Tests\s+(\d+ [a-z]+.*?)(?:\s+\(\d+\))?\s*$", output, re.M)
    if vitest:
        text = vitest[-1].replace(" | ", ", ")
        return _counts_from(text, _pairs(text))
    node = dict(re.findall(r"^(?:#|ℹ) (pass|fail) (\d+)\s*$", output, re.M))
    if node:
        passed, failed = int(node.get("pass", 0)), int(node.get("fail", 0))
        return Counts(passed, failed, f"{failed} failed, {passed} passed")
    mocha = dict((w, int(n)) for n, w in re.findall(r"^\s*(\d+) (passing|failing)\b", output, re.M))
    if mocha:
        passed, failed = mocha.get("passing", 0), mocha.get("failing", 0)
        return Counts(passed, failed, f"{failed} failed, {passed} passed")
    go = _go_counts(output)
    if go:
        return go
    generic = [line for line in output.splitlines() if re.search(r"\b\d+ (passed|failed)\b", line, re.I)]
    if generic:
        pairs = _pairs(generic[-1].lower())
        return Counts(pairs.get("passed", 0), pairs.get("failed", 0),
                      ", ".join(f"{n} {w}" for w, n in pairs.items() if w in ("passed", "failed", "skipped")))
    return None


def _go_counts(output: str) -> Counts | None:
    failed = len(re.findall(r"^--- FAIL:", output, re.M))
    passed = len(re.findall(r"^--- PASS:", output, re.M))  # only listed with -v
    ok_packages = len(re.findall(r"^ok\s+\S+", output, re.M))
    failed_packages = len(re.findall(r"^FAIL\s+\S+", output, re.M))
    if not (failed or ok_packages or failed_packages):
        return None
    parts = [f"{failed} failed"] + ([f"{passed} passed"] if passed else [])
    parts.append(f"packages: {ok_packages} ok, {failed_packages} failed")
    return Counts(passed, max(failed, failed_packages), ", ".join(parts))


_PYTEST_SECTION = re.compile(r"^_{3,} .+? _{3,}$", re.M)
_CARGO_SECTION = re.compile(r"^---- .+? stdout ----$", re.M)
_JEST_SECTION = re.compile(r"^\s*● (?!Console).+$", re.M)


def first_failure(output: str) -> tuple[str, int] | None:
    """The first failing test's section of the output, and how many failures the output has."""
    for section, end in ((_PYTEST_SECTION, re.compile(r"^={3,}", re.M)),
                         (_CARGO_SECTION, re.compile(r"^failures:$", re.M)),
                         (_JEST_SECTION, re.compile(r"^Test Suites:", re.M))):
        starts = list(section.finditer(output))
        if starts:
            begin = starts[0].start()
            stop = starts[1].start() if len(starts) > 1 else len(output)
            ended = end.search(output, starts[0].end(), stop)
            return output[begin: ended.start() if ended else stop].strip("\n"), len(starts)
    go = list(re.finditer(r"^--- FAIL: .*$", output, re.M))
    if go:
        lines = [go[0].group()]
        for line in output[go[0].end() + 1:].splitlines():
            if line and not line[0].isspace():  # a go failure block is its header and the indented lines
                break
            lines.append(line)
        return "\n".join(lines).rstrip(), len(go)
    return None


class RunTestsArgs(ToolArgs):
    path: str | None = Field(default=None, description="A test file or directory to run instead of the "
                                                       "whole suite, relative to the project root; with "
                                                       "pytest also a node id like tests/test_x.py::test_y.")
    verbose: bool = Field(default=False, description="Show the runner's full output instead of the result "
                                                     "line and the first failure.")


class RunTests(Tool):
    name = "run_tests"
    description = (
        "Run the project's tests (the configured test_command, else pytest, npm test, go test or cargo test "
        "as detected) from the project root. Returns passed/failed counts and the first failure's details; "
        "verbose=true returns the whole output. Narrow to a file or directory with path."
    )
    Args = RunTestsArgs
    kind = "execute"
    mutates = True  # tests run project code, which can change anything
    approval = "rule"
    runs_tests = True

    def phase(self, args: Any) -> str:
        return f"Running tests in {args.path}" if args.path else "Running tests"

    def shown_command(self, args: Any, ctx: ToolContext) -> tuple[str, Path] | None:
        try:
            return plan_tests(ctx, args.path).command, ctx.root
        except ToolError:
            return None  # no runner found: the call itself says so

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        plan = plan_tests(ctx, args.path)
        run = await shell_session(ctx).run(plan.command, ctx.settings.max_timeout, cwd=ctx.root)
        full = _full_output(run)
        counts = parse_counts(full)
        failed = run.timed_out or run.exit_code != 0 or (counts is not None and counts.failed > 0)
        status = f"timed out after {run.timeout:g}s" if run.timed_out else describe_exit(run.exit_code)
        result = counts.text if counts else ("failed" if failed else "passed")
        parts = [run.block.text()] if run.block else []  # what the sandbox refused comes first
        parts += [f"Ran `{plan.command}` in the project root.",
                  f"Result: {result} · {status} · {format_duration(run.duration)}", *plan.notes, *run.notes]
        if run.exit_code == 127:
            parts.append("The test command was not found. Check it with run_command, or ask the person to "
                         "set test_command in .anvil/config.toml.")
        budget = ctx.settings.output_budget
        if args.verbose:
            parts += ["", run.output.rstrip("\n") or "(no output)"]
        elif failed:
            parts += ["", *_failure_details(full, budget, run)]
        if run.log_path is not None and (failed or args.verbose):
            parts.append(f"Full output: {run.log_path}")
        summary = status if run.timed_out else f"{result} · {format_duration(run.duration)}"
        data = {"command": plan.command, "exit_code": run.exit_code, "timed_out": run.timed_out,
                "passed": counts.passed if counts else None, "failed": counts.failed if counts else None,
                "log_path": str(run.log_path) if run.log_path else None}
        return ToolResult(output="\n".join(parts), ok=not failed, summary=summary, data=data)


def _failure_details(full: str, budget: int, run: CommandRun) -> list[str]:
    found = first_failure(full)
    if found is None:
        tail = HeadTail.of(full, budget).last(min(budget, FALLBACK_TAIL_CHARS)).rstrip("\n")
        return ["The output ended with:", tail or "(no output)"]
    block, total = found
    lines = [f"First failure{f' (of {total})' if total > 1 else ''}:",
             HeadTail.of(block, budget).render(run.log_path)]
    if total > 1:
        others = failing_tests(full)[1:MAX_NAMED_FAILURES + 1]
        named = f" ({', '.join(others)}{', …' if total - 1 > len(others) else ''})" if others else ""
        lines.append(f"{total - 1} more failure{'s' if total > 2 else ''} not shown{named}. "
                     "run_tests(verbose=true) shows the full output; path runs one file, or one test with "
                     "pytest (path=\"tests/test_x.py::test_name\").")
    return lines


def failing_tests(output: str) -> list[str]:
    """Names of the failing tests, in the order the runner lists them (pytest, cargo, go, jest)."""
    names = re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.M)  # pytest's short summary
    if not names:
        listing = re.findall(r"^failures:\n((?:    \S.*\n)+)", output, re.M)  # cargo's second failures:
        names = [line.strip() for line in listing[-1].splitlines()] if listing else []
    if not names:
        names = re.findall(r"^--- FAIL: (\S+)", output, re.M)  # go, top-level tests only
    if not names:
        names = [m.strip() for m in re.findall(r"^\s*● (?!Console)(.+)$", output, re.M)]  # jest
    return list(dict.fromkeys(names))


def _full_output(run: CommandRun) -> str:
    """Everything the runner printed (parsing needs the middle that the model's copy leaves out)."""
    if run.log_path is not None and run.truncated:
        try:
            if run.log_path.stat().st_size <= MAX_PARSED_LOG:
                return run.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            pass
    return run.output


TEST_TOOLS: list[Tool] = [RunTests()]
