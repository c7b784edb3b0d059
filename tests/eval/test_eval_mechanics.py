"""The eval's mechanics on small suites: runs at the same time and interrupted, SWE-bench-style instances with a
test patch, compare, the records' summary, and the one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from anvil.eval.compare import compare
from anvil.eval.report import nice_step, render_report
from anvil.eval.results import summarise
from anvil.eval.runner import model_for, run_argv
from anvil.eval.suite import SuiteError, load_suites
from anvil.eval.workspace import folder_diff
from tests.conftest import anvil_command
from tests.eval.conftest import eval_run, make_model, make_task, read, records, say, write

GIT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def _sigint_as_at_a_terminal() -> None:
    """Ctrl+C as a person's shell delivers it: an earlier test of the suite may leave SIGINT ignored in pytest's
    process, and an ignored signal stays ignored across exec (the eval then ran to its end, exit 0)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_two_runs_at_a_time_and_ctrl_c_keeps_what_finished(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    make_task(suite, "a-slow", verify="true")
    make_task(suite, "b-quick", verify="test -f done.txt")
    model = make_model(tmp_path, "m", {
        "a-slow": [{"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 291.5", "timeout": 600}}]},
                   say("Slept.")],
        "b-quick": [write("done.txt", "yes\n"), say("Done.")]})
    out = tmp_path / "out"
    process = subprocess.Popen(anvil_command("eval", str(suite), "--model", model, "--jobs", "2", "--out", str(out)),
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_sigint_as_at_a_terminal)
    try:
        deadline = time.monotonic() + 120
        results = out / "results.jsonl"
        while not (results.is_file() and results.read_text().strip()):  # the quick one finished...
            assert process.poll() is None and time.monotonic() < deadline, "the quick run never finished"
            time.sleep(0.2)
        assert process.poll() is None  # ...while the slow one, started first, still runs: two at a time
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=300)  # a loaded machine can take long to wind the runs down
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    kept = records(out / "results.jsonl")
    assert [r["run_id"] for r in kept] == ["b-quick-m-none-1"] and kept[0]["success"]
    assert "interrupted: 1 of 2 runs finished and were kept" in stderr
    assert (out / "report.html").is_file() and "b-quick" in stdout
    leftover = subprocess.run(["pgrep", "-f", "sleep 291.5"], capture_output=True, text=True)
    assert leftover.stdout == "", "the interrupted run's command is still running"


def _repository(tmp_path: Path) -> Path:
    repo = tmp_path / "calc-repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_other.py").write_text("def test_ok():\n    assert True\n")
    env = {**os.environ, **GIT}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    return repo


TEST_PATCH = """diff --git a/tests/test_calc.py b/tests/test_calc.py
new file mode 100644
--- /dev/null
+++ b/tests/test_calc.py
@@ -0,0 +1,5 @@
+from calc import add
+
+
+def test_add():
+    assert add(2, 3) == 5
"""


def test_a_swe_bench_style_instance_with_a_hidden_test_patch(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / "calc.py").write_text("def add(a, b):\n    return 0  # a later commit the run must not see\n")
    subprocess.run(["git", "commit", "-qam", "later"], cwd=repo, check=True, env={**os.environ, **GIT})
    instance = {"instance_id": "calc-1", "repo": "calc-repo", "base_commit": commit,
                "problem_statement": "add() subtracts instead of adding.",
                "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
                "PASS_TO_PASS": ["test_other.py::test_ok"], "test_patch": TEST_PATCH,
                "test_command": "python -m pytest -q -p no:cacheprovider --rootdir=. --confcutdir=."}
    (tmp_path / "instances.jsonl").write_text(json.dumps(instance) + "\n")
    fixer = make_model(tmp_path, "fixer", {"calc-1": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "calc.py", "old_string": "a - b",
                                                            "new_string": "a + b"}}]},
        say("Fixed add().")]})
    idle = make_model(tmp_path, "idle", {"calc-1": [say("Looks fine to me.")]})
    out = tmp_path / "out"
    result = eval_run(tmp_path, "instances.jsonl", "--model", fixer, "--model", idle, "--out", str(out))
    assert result.returncode == 0, result.stderr
    fixed, untouched = records(out / "results.jsonl")
    assert fixed["success"] and not untouched["success"], fixed
    assert [c["command"].split(" -q")[0] for c in fixed["checks"]] == ["python -m pytest"] * 2
    assert "tests/test_calc.py::test_add" in fixed["checks"][0]["command"]
    assert "-    return a - b\n+    return a + b\n" in fixed["diff"]  # from the base commit, not the later one
    assert "test_calc" not in fixed["diff"]  # the test patch came after the diff, unseen by the model
    assert "1 failed" in untouched["checks"][0]["output"]
    assert (repo / "calc.py").read_text().endswith("a later commit the run must not see\n")  # the original is intact


def _record(task: str, model: str, success: bool, cost: float | None, wall: float, **extra: Any) -> dict[str, Any]:
    return {"run_id": f"{task}-{model}", "task": task, "model": model, "workflow": "none", "success": success,
            "blocked": False, "status": "done" if success else "failed", "cost": cost, "wall_time": wall,
            "iterations": 3, **extra}


def test_compare_names_what_flipped_and_what_it_cost(tmp_path: Path) -> None:
    before = [_record("bugfix", "m", True, 0.02, 10.0), _record("rename", "m", False, 0.01, 8.0),
              _record("tracker", "m", True, 0.05, 30.0), _record("old", "m", True, 0.01, 1.0)]
    after = [_record("bugfix", "m", False, 0.03, 12.0), _record("rename", "m", True, 0.01, 6.0),
             _record("tracker", "m", True, 0.04, 30.0), _record("new", "m", True, 0.01, 1.0)]
    for name, data in (("a.jsonl", before), ("b.jsonl", after)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in data))
    worse = eval_run(tmp_path, "compare", "a.jsonl", "b.jsonl")
    assert worse.returncode == 1, worse.stderr
    assert "Regressed: bugfix with m (none): 100% (1/1) → 0% (0/1)." in worse.stdout
    assert "Improved: rename with m (none): 0% (0/1) → 100% (1/1)." in worse.stdout
    assert "Only in a.jsonl: old with m (none)." in worse.stdout and "Only in b.jsonl: new" in worse.stdout
    assert "In all: 75% (3/4) → 75% (3/4) successful; cost $0.0900 → $0.0900" in worse.stdout
    bugfix_row = next(line for line in worse.stdout.splitlines() if line.startswith("│ bugfix"))
    assert "regressed" in bugfix_row and "$0.0300 (+$0.0100)" in bugfix_row and "12.0s (+2.0s)" in bugfix_row
    better = eval_run(tmp_path, "compare", "b.jsonl", "a.jsonl")
    assert better.returncode == 1  # rename regresses that way round
    same = eval_run(tmp_path, "compare", "a.jsonl", "a.jsonl")
    assert same.returncode == 0 and "No regressions." in same.stdout
    (tmp_path / "bad.jsonl").write_text("not json\n")
    bad = eval_run(tmp_path, "compare", "a.jsonl", "bad.jsonl")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "bad.jsonl, line 1: not JSON" in bad.stderr
    assert compare(before, after).regressions[0].before.task == "bugfix"


def test_summary_groups_medians_and_unknown_costs() -> None:
    runs = [_record("t", "a", True, 0.01, 4.0), _record("t", "a", False, 0.03, 8.0), _record("t", "a", True, None, 6.0),
            _record("t", "b", True, None, 2.0)]
    first, second = summarise(runs)
    assert (first.runs, first.successes, first.median_cost, first.median_time) == (3, 2, 0.02, 6.0)
    assert second.median_cost is None and second.total_cost is None  # unknown, never $0
    report = render_report(runs)
    assert "unknown" in report and "(cost unknown)" in report
    assert nice_step(0.0191) == 0.005 and nice_step(13.0) == 5 and nice_step(0) == 0.25


def test_suites_that_cannot_run_are_one_line(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    make_task(suite, "fine", verify="true")
    (suite / "empty-dir").mkdir()
    assert [t.id for t in load_suites([suite])] == ["fine"]  # folders without task.md are not tasks
    (suite / "noverify").mkdir()
    (suite / "noverify" / "task.md").write_text("---\ntitle: x\n---\nDo it.\n")
    with pytest.raises(SuiteError, match="no verify command: eval needs one"):
        load_suites([suite])
    with pytest.raises(SuiteError, match="holds no tasks"):
        load_suites([suite / "empty-dir"])
    (tmp_path / "i.json").write_text(json.dumps({"instance_id": "x", "repo": "nowhere"}))
    with pytest.raises(SuiteError, match=r"i.json \(instance 1\): missing base_commit, problem_statement"):
        load_suites([tmp_path / "i.json"])
    result = eval_run(tmp_path, "suite", "--model", "scripted")
    assert result.returncode == 2 and "no verify command" in result.stderr and "Traceback" not in result.stderr
    assert eval_run(tmp_path, "suite", "--model", "m", "--jobs", "0").returncode == 2


def test_a_model_folder_maps_each_task_to_its_script(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "bugfix.json").write_text("[]")
    assert model_for(f"scripted:{tmp_path / 'm'}", "bugfix") == (f"scripted:{tmp_path / 'm' / 'bugfix.json'}", None)
    model, problem = model_for(f"scripted:{tmp_path / 'm'}", "rename")
    assert model == f"scripted:{tmp_path / 'm'}"
    assert problem == f"no script for task rename in {tmp_path / 'm'} (expected rename.json)"
    assert model_for("anthropic/claude-sonnet-4-5", "x") == ("anthropic/claude-sonnet-4-5", None)


def test_a_run_without_its_script_is_an_error_record(tmp_path: Path) -> None:
    make_task(tmp_path / "suite", "lonely", verify="true")
    model = make_model(tmp_path, "empty", {})
    out = tmp_path / "out"
    result = eval_run(tmp_path, "suite", "--model", model, "--out", str(out))
    assert result.returncode == 0
    (run,) = records(out / "results.jsonl")
    assert run["status"] == "error" and run["error"].startswith("no script for task lonely") and not run["success"]
    assert "no script for task lonely" in result.stderr


def test_folder_diffs_name_binary_files_and_skip_caches() -> None:
    before = {"a.py": b"x = 1\n", "gone.txt": b"bye\n", "img.png": b"\0\1"}
    after = {"a.py": b"x = 2\n", "new.txt": b"hi", "img.png": b"\0\2"}
    diff = folder_diff(before, after)
    assert "--- a/a.py\n+++ b/a.py\n" in diff and "-x = 1\n+x = 2\n" in diff
    assert "--- a/gone.txt\n+++ /dev/null\n" in diff and "+hi\n\\ No newline at end of file\n" in diff
    assert "Binary file img.png changed" in diff


def test_the_workflow_goes_to_the_run_s_workflow_flag(tmp_path: Path) -> None:
    task = tmp_path / "task.md"
    plain = run_argv(task, "scripted", "none")
    assert plain[-8:] == ["-p", "--task", str(task), "--model", "scripted", "--output-format", "stream-json",
                          "--auto-approve"][-8:] and "--workflow" not in plain
    assert run_argv(task, "scripted", "phased")[-2:] == ["--workflow", "phased"]
    assert run_argv(task, "scripted", "tdd")[-2:] == ["--workflow", "tdd"]


def test_a_task_folder_can_start_from_a_local_repository_at_a_ref(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    start = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b  # fixed later, after the ref\n")
    subprocess.run(["git", "commit", "-qam", "later"], cwd=repo, check=True, env={**os.environ, **GIT})
    suite = tmp_path / "suite"
    make_task(suite, "calc", verify="python -c 'from calc import add; assert add(2, 3) == 5'",
              header=f"repo: ../../calc-repo\nref: {start}\n")
    model = make_model(tmp_path, "m", {"calc": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "calc.py", "old_string": "a - b",
                                                            "new_string": "a + b"}}]},
        say("Fixed.")]})
    out = tmp_path / "out"
    result = eval_run(tmp_path, str(suite), "--model", model, "--out", str(out))
    assert result.returncode == 0, result.stderr
    (run,) = records(out / "results.jsonl")
    assert run["success"], run  # the edit only matches at the ref: the run started there, not at the head
    assert run["diff"].startswith("diff --git a/calc.py b/calc.py") and "+    return a + b\n" in run["diff"]


def test_a_check_compares_with_the_task_s_pristine_files_under_tmp(tmp_path: Path) -> None:
    """The checks run in the sandbox, whose private /tmp would hide a suite kept under /tmp (as pytest's tmp_path
    is): the task's folder stays readable, so ``{task_dir}`` works wherever the suite lives."""
    suite = tmp_path / "suite"
    check = 'check: "cmp data.txt {task_dir}/files/data.txt"\n'
    make_task(suite, "keep", verify="true", files={"data.txt": "[x]\n"}, header=check)
    make_task(suite, "touch", verify="true", files={"data.txt": "[x]\n"}, header=check)
    model = make_model(tmp_path, "m", {"keep": [say("Nothing to change.")],
                                       "touch": [read("data.txt"), write("data.txt", "[y]\n"), say("Changed it.")]})
    out = tmp_path / "out"
    result = eval_run(tmp_path, str(suite), "--model", model, "--out", str(out))
    assert result.returncode == 0, result.stderr
    by_task = {r["task"]: r for r in records(out / "results.jsonl")}
    assert by_task["keep"]["success"], by_task["keep"]["checks"]
    assert not by_task["touch"]["success"]
    assert "differ" in by_task["touch"]["checks"][1]["output"]  # cmp read both files: not 'No such file'
