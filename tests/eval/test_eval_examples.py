"""`anvil eval examples/tasks` as a new user runs it: two scripted models of different quality, two runs at a time;
the table, the JSONL and the HTML report say who solved what, at what cost."""

from __future__ import annotations

import html.parser
from pathlib import Path

from tests.conftest import REPO
from tests.eval.conftest import eval_run, records

EXAMPLES = REPO / "examples"
#: what each scripted model should achieve on each example task
EXPECTED = {
    ("tracker", "solver"): True, ("tracker", "sloppy"): True,
    ("brownfield", "solver"): True, ("brownfield", "sloppy"): False,  # it changed pyproject.toml
    ("bugfix", "solver"): True, ("bugfix", "sloppy"): False,
    ("rename", "solver"): True, ("rename", "sloppy"): False,
    ("contradiction", "solver"): True, ("contradiction", "sloppy"): False,  # should have asked
    ("autofix", "solver"): True, ("autofix", "sloppy"): True,  # the fixers carry both
}


class _Parser(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.sources += [value or "" for name, value in attrs if name in {"src", "href"}]


def test_the_example_suite_with_a_good_and_a_sloppy_model(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = eval_run(tmp_path, str(EXAMPLES / "tasks"), "--model", f"scripted:{EXAMPLES / 'scripted' / 'solver'}",
                      "--model", f"scripted:{EXAMPLES / 'scripted' / 'sloppy'}", "--jobs", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    runs = records(out / "results.jsonl")
    assert len(runs) == 12
    outcome = {(r["task"], r["model"].rsplit("/", 1)[-1]): r["success"] for r in runs}
    assert outcome == EXPECTED, [(r["run_id"], r["error"], r["checks"]) for r in runs if not r["success"]]
    for run in runs:
        assert run["status"] != "error", run["error"]
        assert run["tokens"]["input"] > 0 and run["tokens"]["output"] > 0 and run["tokens"]["cached"] > 0
        assert run["cost"] and run["cost"] > 0 and run["wall_time"] > 0 and run["iterations"] >= 2
        assert run["session"] and Path(run["session"]).is_file()
        assert Path(run["session"]).is_relative_to(out / "runs" / run["run_id"] / "data")  # its own data dir
    by_id = {r["run_id"]: r for r in runs}
    blocked = by_id["contradiction-solver-none-1"]
    assert blocked["blocked"] and blocked["status"] == "blocked" and "Which rule wins?" in blocked["question"]
    assert blocked["diff"] == "" and blocked["time_to_first_edit"] is None  # it asked before changing anything
    fixed = by_id["autofix-solver-none-1"]
    assert fixed["autofix_files"] == ["stats.py", "test_stats.py"] and fixed["model_fixed"] == []
    assert "+def summary(numbers: list[float]) -> dict:" in fixed["diff"] and "import os" not in fixed["diff"]
    tracker = by_id["tracker-solver-none-1"]
    assert "+++ b/tracker.py" in tracker["diff"] and tracker["time_to_first_edit"] is not None
    sloppy = by_id["brownfield-sloppy-none-1"]
    assert [c["ok"] for c in sloppy["checks"]] == [True, False] and "-line-length = 100" in sloppy["diff"]

    table = [line for line in result.stdout.splitlines() if "scripted:" in line]
    assert len(table) == 12
    assert "bugfix" in table[4] and "scripted:solver" in table[4] and "100% (1/1)" in table[4]
    assert "bugfix" in table[5] and "scripted:sloppy" in table[5] and "0% (0/1)" in table[5]
    assert f"Report:  {out / 'report.html'}" in result.stdout
    assert "done 12 · running 0 · failed 4 · cost so far $" in result.stderr  # the progress line, at its end

    report = (out / "report.html").read_text()
    parser = _Parser()
    parser.feed(report)
    assert parser.tags.count("svg") == 2 and parser.sources == []  # self-contained: nothing fetched
    assert "Success rate against cost, per model" in report and "Time per task (median wall time)" in report
    assert report.count("<circle") == 2  # a point per model
    assert "scripted:solver" in report and "83% (5/6)" not in report and "33% (2/6)" in report
    assert "100% (6/6)" in report
