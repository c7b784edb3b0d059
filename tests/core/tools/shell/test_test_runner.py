"""run_tests: runner detection, path narrowing, parsing of counts and failures, and a real pytest run."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from anvil.core.tools.base import ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from anvil.core.tools.shell.test_runner import (
    TEST_TOOLS,
    RunTests,
    detect_test_command,
    failing_tests,
    first_failure,
    parse_counts,
    plan_tests,
)

tool = RunTests()
PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider"

GOOD = "def test_ok():\n    assert 1 + 1 == 2\n"
BAD = '''def test_broken():
    value = 1
    assert value == 2


def test_other_broken():
    assert "left" == "right"
'''


@pytest.fixture
async def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ToolContext]:
    # the inner pytest inherits the environment: without the plugins installed here it starts far faster
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_good.py").write_text(GOOD)
    (root / "tests" / "test_bad.py").write_text(BAD)
    ctx = ToolContext(root=root, data_dir=tmp_path / "data")
    yield ctx
    await ctx.close()


async def run_tests(ctx: ToolContext, **kwargs: object) -> ToolResult:
    return await tool.run(tool.Args(**kwargs), ctx)


def test_flags() -> None:
    assert [t.name for t in TEST_TOOLS] == ["run_tests"]
    assert tool.approval == "rule" and tool.mutates and tool.runs_tests
    assert tool.phase(tool.Args()) == "Running tests"
    assert tool.phase(tool.Args(path="tests/test_x.py")) == "Running tests in tests/test_x.py"


async def test_configured_pytest_run_reports_counts_and_only_the_first_failure(project: ToolContext) -> None:
    project.settings.test_command = PYTEST
    result = await run_tests(project)
    assert not result.ok
    assert result.summary.startswith("2 failed, 1 passed")
    assert result.data is not None and (result.data["passed"], result.data["failed"]) == (1, 2)
    assert "Result: 2 failed, 1 passed" in result.output
    assert "First failure (of 2):" in result.output
    assert "test_broken" in result.output and "assert 1 == 2" in result.output
    assert "'left' == 'right'" not in result.output  # the second failure stays out
    assert "1 more failure not shown (tests/test_bad.py::test_other_broken)" in result.output
    log = Path(result.data["log_path"])
    assert "'left' == 'right'" in log.read_text() and str(log) in result.output


async def test_verbose_shows_the_whole_output(project: ToolContext) -> None:
    project.settings.test_command = PYTEST
    result = await run_tests(project, verbose=True)
    assert "assert 1 == 2" in result.output and "'left' == 'right'" in result.output
    assert "short test summary info" in result.output


async def test_path_narrows_the_run(project: ToolContext) -> None:
    project.settings.test_command = PYTEST
    result = await run_tests(project, path="tests/test_good.py")
    assert result.ok and result.summary.startswith("1 passed")
    assert "tests/test_good.py" in result.output.splitlines()[0]
    assert "First failure" not in result.output


async def test_path_can_be_a_pytest_node_id(project: ToolContext) -> None:
    project.settings.test_command = PYTEST
    result = await run_tests(project, path="tests/test_bad.py::test_other_broken")
    assert result.summary.startswith("1 failed")
    assert "'left' == 'right'" in result.output and "First failure:" in result.output


async def test_path_placeholder_in_configured_command(project: ToolContext) -> None:
    project.settings.test_command = f"{PYTEST} {{path}} -x"
    assert plan_tests(project, "tests/test_bad.py").command == f"{PYTEST} tests/test_bad.py -x"
    assert plan_tests(project, None).command == f"{PYTEST}  -x"


async def test_detected_pytest_uses_the_project_virtualenv(project: ToolContext) -> None:
    python = project.root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n")
    python.chmod(0o755)
    plan = detect_test_command(project.root)
    assert plan is not None and plan.command == ".venv/bin/python -m pytest -q" and plan.runner == "pytest"
    result = await run_tests(project)
    assert result.summary.startswith("2 failed, 1 passed")
    assert "First failure (of 2):" in result.output


async def test_missing_path_is_refused(project: ToolContext) -> None:
    project.settings.test_command = PYTEST
    with pytest.raises(ToolError, match="does not exist"):
        await run_tests(project, path="tests/nope.py")
    with pytest.raises(ToolError, match="outside the project"):
        await run_tests(project, path="../elsewhere")


async def test_timeout_is_reported(project: ToolContext) -> None:
    project.settings.test_command = "echo collecting; sleep 5"
    project.settings.max_timeout = 0.5
    result = await run_tests(project)
    assert not result.ok and result.summary == "timed out after 0.5s"
    assert "collecting" in result.output


async def test_command_not_found_says_what_to_do(project: ToolContext) -> None:
    project.settings.test_command = "definitely-not-a-test-runner-xyz"
    result = await run_tests(project)
    assert not result.ok and "exit 127" in result.output and "test_command" in result.output
    assert "command not found" in result.output


async def test_no_runner_detected(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path, data_dir=tmp_path / "data")
    with pytest.raises(ToolError, match=r"No test runner was found.*run_command.*test_command"):
        await run_tests(ctx)


def test_detection(tmp_path: Path) -> None:
    def fresh(name: str) -> Path:
        root = tmp_path / name
        root.mkdir()
        return root

    assert detect_test_command(fresh("empty")) is None
    npm = fresh("npm")
    (npm / "package.json").write_text(json.dumps({"scripts": {"test": "vitest run"}}))
    assert detect_test_command(npm).command == "npm test"  # type: ignore[union-attr]
    (npm / "yarn.lock").write_text("")
    assert detect_test_command(npm).command == "yarn test"  # type: ignore[union-attr]
    placeholder = fresh("placeholder")
    (placeholder / "package.json").write_text(json.dumps(
        {"scripts": {"test": 'echo "Error: no test specified" && exit 1'}}))
    assert detect_test_command(placeholder) is None
    go = fresh("go")
    (go / "go.mod").write_text("module example.com/m\n")
    assert detect_test_command(go).command == "go test ./..."  # type: ignore[union-attr]
    cargo = fresh("cargo")
    (cargo / "Cargo.toml").write_text("[package]\nname = 'x'\n")
    assert detect_test_command(cargo).command == "cargo test"  # type: ignore[union-attr]
    py = fresh("py")
    (py / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert detect_test_command(py).runner == "pytest"  # type: ignore[union-attr]
    # Python tests win over a package.json that sits next to them (a web front end, say)
    mixed = fresh("mixed")
    (mixed / "package.json").write_text(json.dumps({"scripts": {"test": "jest"}}))
    (mixed / "tests").mkdir()
    (mixed / "tests" / "test_x.py").write_text(GOOD)
    assert detect_test_command(mixed).runner == "pytest"  # type: ignore[union-attr]


def test_narrowing_for_go_and_cargo(tmp_path: Path) -> None:
    go = tmp_path / "go"
    (go / "pkg" / "util").mkdir(parents=True)
    (go / "go.mod").write_text("module example.com/m\n")
    (go / "pkg" / "util" / "util_test.go").write_text("package util\n")
    ctx = ToolContext(root=go, data_dir=tmp_path / "data")
    assert plan_tests(ctx, "pkg/util").command == "go test ./pkg/util/..."
    assert plan_tests(ctx, "pkg/util/util_test.go").command == "go test ./pkg/util/..."
    cargo = tmp_path / "cargo"
    (cargo / "tests").mkdir(parents=True)
    (cargo / "src").mkdir()
    (cargo / "Cargo.toml").write_text("[package]\nname = 'x'\n")
    (cargo / "tests" / "api.rs").write_text("")
    (cargo / "src" / "lib.rs").write_text("")
    ctx = ToolContext(root=cargo, data_dir=tmp_path / "data")
    assert plan_tests(ctx, "tests/api.rs").command == "cargo test --test api"
    plan = plan_tests(ctx, "src/lib.rs")
    assert plan.command == "cargo test" and "cannot be narrowed" in plan.notes[0]
    with pytest.raises(ToolError, match="only work with pytest"):
        plan_tests(ctx, "tests/api.rs::a")


CARGO_OUTPUT = """\
running 3 tests
test tests::it_fails_too ... FAILED
test tests::it_fails ... FAILED
test tests::it_works ... ok

failures:

---- tests::it_fails_too stdout ----

thread 'tests::it_fails_too' panicked at src/lib.rs:10:25:
boom
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

---- tests::it_fails stdout ----

thread 'tests::it_fails' panicked at src/lib.rs:8:21:
assertion `left == right` failed
  left: 4
 right: 5


failures:
    tests::it_fails
    tests::it_fails_too

test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.11s

     Running tests/api.rs (target/debug/deps/api-1234)

running 2 tests
test a ... ok
test b ... ok

test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s
"""

GO_OUTPUT = """\
--- FAIL: TestAdd (0.00s)
    add_test.go:9: Add(2, 2) = 5, want 4
    --- FAIL: TestAdd/negative (0.00s)
        add_test.go:14: wrong sign
--- FAIL: TestSub (0.00s)
    sub_test.go:7: bad
FAIL
FAIL\texample.com/m/calc\t0.002s
ok  \texample.com/m/util\t(cached)
?   \texample.com/m/cmd\t[no test files]
FAIL
"""


def test_cargo_parsing() -> None:
    counts = parse_counts(CARGO_OUTPUT)
    assert counts is not None and (counts.passed, counts.failed) == (3, 2)
    assert counts.text == "2 failed, 3 passed, 1 ignored"
    found = first_failure(CARGO_OUTPUT)
    assert found is not None
    block, total = found
    assert total == 2 and block.startswith("---- tests::it_fails_too stdout ----") and "boom" in block
    assert "left: 4" not in block
    assert failing_tests(CARGO_OUTPUT) == ["tests::it_fails", "tests::it_fails_too"]


def test_go_parsing() -> None:
    counts = parse_counts(GO_OUTPUT)
    assert counts is not None and counts.failed == 2
    assert counts.text == "2 failed, packages: 1 ok, 1 failed"
    found = first_failure(GO_OUTPUT)
    assert found is not None
    block, total = found
    assert total == 2
    assert block.splitlines() == ["--- FAIL: TestAdd (0.00s)", "    add_test.go:9: Add(2, 2) = 5, want 4",
                                  "    --- FAIL: TestAdd/negative (0.00s)", "        add_test.go:14: wrong sign"]
    assert failing_tests(GO_OUTPUT) == ["TestAdd", "TestSub"]


@pytest.mark.parametrize(("output", "passed", "failed", "text"), [
    ("===== 1 failed, 4 passed, 2 warnings in 0.31s =====\n", 4, 1, "1 failed, 4 passed, 2 warnings"),
    ("3 passed, 1 error in 1.02s (0:00:01)\n", 3, 1, "3 passed, 1 error"),
    ("no tests ran in 0.01s\n", 0, 0, "no tests ran"),
    ("Tests:       1 failed, 2 passed, 3 total\n", 2, 1, "1 failed, 2 passed"),
    (" Test Files  1 failed (1)\n      Tests  1 failed | 5 passed (6)\n", 5, 1, "1 failed, 5 passed"),
    ("ℹ tests 3\nℹ pass 2\nℹ fail 1\n", 2, 1, "1 failed, 2 passed"),
    ("# pass 7\n# fail 0\n", 7, 0, "0 failed, 7 passed"),
    ("  5 passing (20ms)\n  2 failing\n", 5, 2, "2 failed, 5 passed"),
    ("Summary: 10 Passed, 3 Failed\n", 10, 3, "10 passed, 3 failed"),
])
def test_count_parsing(output: str, passed: int, failed: int, text: str) -> None:
    counts = parse_counts(output)
    assert counts is not None and (counts.passed, counts.failed, counts.text) == (passed, failed, text)


def test_unrecognised_output_has_no_counts() -> None:
    assert parse_counts("compiling...\nerror: something broke\n") is None
    assert first_failure("compiling...\nerror: something broke\n") is None


async def test_unrecognised_failure_shows_the_end_of_the_output(project: ToolContext) -> None:
    project.settings.test_command = "echo building; echo 'error: linker failed'; exit 2"
    result = await run_tests(project)
    assert not result.ok and result.summary.startswith("failed")
    assert "The output ended with:\nbuilding\nerror: linker failed" in result.output


def test_pytest_first_failure_stops_at_the_summary() -> None:
    output = (
        "=================================== FAILURES ===================================\n"
        "___________________________________ test_one ___________________________________\n"
        "E       assert 1 == 2\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_a.py::test_one - assert 1 == 2\n"
        "1 failed in 0.02s\n"
    )
    found = first_failure(output)
    assert found is not None
    assert found == ("___________________________________ test_one ___________________________________\n"
                     "E       assert 1 == 2", 1)
