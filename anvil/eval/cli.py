"""``anvil eval``: run suites of tasks headless with each model and workflow, and measure the runs.

    anvil eval SUITE... --model M [--model M2 ...] [--workflow none|phased|tdd ...] [--runs N] [--jobs J]
               [--backend local|ray] [--out DIR] [--keep-workdirs]
    anvil eval compare A.jsonl B.jsonl
    anvil eval report RESULTS.jsonl [--out FILE]

Each run is a headless task run in a fresh temporary copy of its task, with its own data dir
(:mod:`anvil.eval.runner`); the results go to ``DIR/results.jsonl`` as the runs finish, then a summary table per
task × model × workflow is printed and ``DIR/report.html`` written. Ctrl+C stops the runs in flight and keeps
what finished (exit 130).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from anvil.eval.backends import BackendError, backend
from anvil.eval.results import ResultsError, read_records, summarise, summary_table, write_record
from anvil.eval.runner import RunSpec
from anvil.eval.suite import EvalTask, SuiteError, load_suites

WORKFLOWS = ("none", "phased", "tdd")
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="anvil eval", description="Run suites of tasks headless, once per model × workflow × run, each in a "
        "fresh copy with its own data dir; record success, cost, time and the diff of every run (JSONL), print a "
        "summary and write an HTML report. `anvil eval compare A.jsonl B.jsonl` shows what changed between two "
        "result sets; `anvil eval report RESULTS.jsonl` writes the HTML report again.")
    parser.add_argument("suites", nargs="+", metavar="SUITE", type=Path,
                        help="a folder of tasks (each a folder with task.md), a task folder, or a SWE-bench-style "
                             "instance file (.json, .jsonl)")
    parser.add_argument("--model", action="append", required=True, metavar="M",
                        help="a model to run (repeat for several); scripted:DIR runs DIR/<task>.json for each task")
    parser.add_argument("--workflow", action="append", choices=WORKFLOWS, metavar="W",
                        help="none, phased or tdd (repeat for several); default: each task's own (none)")
    parser.add_argument("--runs", type=int, default=1, metavar="N", help="runs of each task × model × workflow")
    parser.add_argument("--jobs", type=int, default=1, metavar="J", help="runs at a time (default 1)")
    parser.add_argument("--backend", choices=("local", "ray"), default="local",
                        help="local: this machine; ray: a Ray task per run on the cluster in RAY_ADDRESS (or a "
                             "local Ray started for the eval; needs anvil[ray])")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="where results.jsonl, report.html and each run's folder go (default "
                             "anvil-eval/<date-time>)")
    parser.add_argument("--keep-workdirs", action="store_true", help="keep each run's copy of the project")
    return parser


def main(argv: list[str]) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `anvil eval compare A B | head`: the reader went away
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR


def _main(argv: list[str]) -> int:
    if argv[:1] == ["compare"]:
        return compare_command(argv[1:])
    if argv[:1] == ["report"]:
        return report_command(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 with a usage message on bad arguments
    if args.runs < 1 or args.jobs < 1:
        parser.error("--runs and --jobs take a number of 1 or more")
    err = console(stderr=True)
    try:
        tasks = load_suites([p.expanduser() for p in args.suites])
    except SuiteError as exc:
        print(f"anvil eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out = (args.out or Path("anvil-eval") / time.strftime("%Y%m%d-%H%M%S")).resolve()
    specs = plan_runs(tasks, args.model, args.workflow, args.runs, out, keep=args.keep_workdirs)
    unconfined = sandbox_problem()
    if unconfined and args.backend == "local":
        err.print(f"anvil eval: {unconfined} The runs use --auto-approve, so the models' commands would run "
                  "unconfined.", markup=False, highlight=False)
    err.print(f"anvil eval: {len(specs)} runs ({len(tasks)} tasks × {len(args.model)} models × "
              f"{len(args.workflow or ['task'])} workflows × {args.runs}) on {args.backend}, {args.jobs} at a time; "
              f"results in {out}")
    return execute(specs, backend(args.backend, args.jobs), out, err)


def sandbox_problem() -> str | None:
    """Why the runs' commands could not be sandboxed on this machine (anvil's notice), or None."""
    from anvil.core.sandbox.places import Places, SandboxSettings
    from anvil.core.sandbox.sandbox import Sandbox

    return Sandbox(SandboxSettings(mode="auto"), Places(Path.cwd())).status.notice()


def plan_runs(tasks: list[EvalTask], models: list[str], workflows: list[str] | None, runs: int, out: Path, *,
              keep: bool = False) -> list[RunSpec]:
    """Every run, task by task, in a stable order; a run's id names its folder."""
    specs = []
    for task in tasks:
        for model in models:
            for workflow in workflows or [task.workflow]:
                for repeat in range(1, runs + 1):
                    run_id = f"{task.id}-{_slug(model)}-{workflow}-{repeat}"
                    specs.append(RunSpec(run_id, task, model, workflow, repeat, out / "runs" / run_id, keep))
    return specs


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text.rsplit("/", 1)[-1] if text.startswith("scripted:") else text).strip("-")


def console(*, stderr: bool = False) -> Console:
    """A rich console; wide when the output is not a terminal (a log, a pipe), so tables are not squeezed."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 160)


def execute(specs: list[RunSpec], runner: Any, out: Path, err: Console) -> int:
    """Run ``specs`` on ``runner``, writing each record as it comes; then the table and the report."""
    from anvil.eval.progress import ProgressDisplay

    out.mkdir(parents=True, exist_ok=True)
    order = {spec.run_id: n for n, spec in enumerate(specs)}
    results = out / "results.jsonl"
    records: list[dict[str, Any]] = []
    interrupted = False
    with results.open("a", encoding="utf-8") as sink, ProgressDisplay(len(specs), err) as progress:
        try:
            for record in runner.run(specs, progress):
                if record.get("status") == "interrupted":
                    continue  # stopped half-way: not a result
                record["index"] = order.get(record.get("run_id", ""), len(order))  # its place in the plan
                write_record(sink, record)
                records.append(record)
                progress.finished(record)
        except KeyboardInterrupt:
            interrupted = True
            err.print("anvil eval: interrupted; stopping the runs in flight (Ctrl+C again quits at once)…")
            try:
                runner.stop()
            except KeyboardInterrupt:  # the person really wants out: what finished is in results.jsonl already
                err.print(f"anvil eval: quit; {len(records)} finished runs are in {results}.")
                os._exit(EXIT_INTERRUPTED)
        except BackendError as exc:
            err.print(f"anvil eval: {exc}", markup=False, highlight=False)
            return EXIT_USAGE
    records.sort(key=lambda r: r["index"])  # the plan's order, not the finish's
    return finish(records, out, err, interrupted=interrupted, total=len(specs))


def finish(records: list[dict[str, Any]], out: Path, err: Console, *, interrupted: bool, total: int) -> int:
    from anvil.eval.report import render_report

    stdout = console()
    if records:
        stdout.print(summary_table(summarise(records)))
        (out / "report.html").write_text(render_report(records, source=str(out / "results.jsonl")), encoding="utf-8")
    if interrupted:
        err.print(f"anvil eval: interrupted: {len(records)} of {total} runs finished and were kept.")
    errors = [r for r in records if r.get("status") == "error"]
    for record in errors[:5]:
        err.print(f"anvil eval: {record.get('run_id')}: {record.get('error')}", markup=False, highlight=False)
    stdout.print(f"Results: {out / 'results.jsonl'}" + (f"\nReport:  {out / 'report.html'}" if records else ""),
                 markup=False, highlight=False)
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


def compare_command(argv: list[str]) -> int:
    from anvil.eval.compare import compare, comparison_lines, comparison_table

    parser = argparse.ArgumentParser(prog="anvil eval compare", description="What changed from result set A to B: "
                                     "success rates that flipped, cost and time. Exit 1 when anything regressed.")
    parser.add_argument("before", type=Path, metavar="A.jsonl")
    parser.add_argument("after", type=Path, metavar="B.jsonl")
    args = parser.parse_args(argv)
    try:
        result = compare(read_records(args.before), read_records(args.after))
    except ResultsError as exc:
        print(f"anvil eval compare: {exc}", file=sys.stderr)
        return EXIT_USAGE
    stdout = console()
    if result.changes:
        stdout.print(comparison_table(result))
    for line in comparison_lines(result, (args.before.name, args.after.name)):
        stdout.print(line, markup=False, highlight=False)
    return EXIT_ERROR if result.regressions else EXIT_OK


def report_command(argv: list[str]) -> int:
    from anvil.eval.report import render_report

    parser = argparse.ArgumentParser(prog="anvil eval report", description="Write the HTML report of a results file.")
    parser.add_argument("results", type=Path, metavar="RESULTS.jsonl")
    parser.add_argument("--out", type=Path, metavar="FILE", help="default: report.html beside the results")
    args = parser.parse_args(argv)
    try:
        records = read_records(args.results)
    except ResultsError as exc:
        print(f"anvil eval report: {exc}", file=sys.stderr)
        return EXIT_USAGE
    target = args.out or args.results.with_name("report.html")
    target.write_text(render_report(records, source=str(args.results)), encoding="utf-8")
    console().print(summary_table(summarise(records)))
    print(f"Report: {target}")
    return EXIT_OK
