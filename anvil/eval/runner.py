"""One eval run: a headless anvil task run in a fresh copy of the task, then the verdict, as one record.

:func:`run_one` is a plain function of plain data (a :class:`RunSpec`), so the local backend runs it in a thread
and the Ray backend on any worker. It lays the task out in a temporary folder, runs ``anvil -p --task ...
--output-format stream-json --auto-approve`` there with its own data dir (``XDG_DATA_HOME`` under the run's
folder: sessions, checkpoints, the task's state), reads the events as they come (the time of the first edit, the
cost so far), then checks the result itself: the test patch, if any, is applied and the task's verify and check
commands run in anvil's OS sandbox. The model's commands ran sandboxed inside anvil, as in any run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.eval.suite import EvalTask
from anvil.eval.workspace import Workspace, WorkspaceError, prepare

EDIT_KINDS = {"edit", "delete", "move"}
OUTPUT_TAIL = 2000
GRACE = 10.0  # seconds between Ctrl+C (anvil ends the turn cleanly) and killing the run


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    task: EvalTask
    model: str
    workflow: str = "none"
    repeat: int = 1
    #: the run's folder: its data dir (sessions), anvil's stderr; kept after the run
    run_dir: Path = Path()
    keep_workdir: bool = False
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Watch:
    """What the event stream told so far."""

    started: float = field(default_factory=time.monotonic)
    first_edit: float | None = None
    cost: float | None = None
    result: dict[str, Any] | None = None
    events: int = 0

    def feed(self, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        self.events += 1
        kind = event.get("type")
        if kind == "tool_result" and event.get("ok") and event.get("kind") in EDIT_KINDS and self.first_edit is None:
            self.first_edit = time.monotonic() - self.started
        elif kind == "usage":
            self.cost = event.get("total_cost")
        elif kind == "result":
            self.result = event


def model_for(model: str, task_id: str) -> tuple[str, str | None]:
    """The ``--model`` of this task's run: ``scripted:DIR`` means ``DIR/<task>.json``. (model, problem)."""
    if model.startswith("scripted:"):
        path = Path(model.partition(":")[2]).expanduser()
        if path.is_dir():
            script = path / f"{task_id}.json"
            if not script.is_file():
                return model, f"no script for task {task_id} in {path} (expected {script.name})"
            return f"scripted:{script.resolve()}", None
    return model, None


def anvil_command() -> list[str]:
    """anvil, run by this interpreter (on a Ray worker: the worker's)."""
    return [sys.executable, "-m", "anvil.cli"]


def run_argv(task_file: Path, model: str, workflow: str) -> list[str]:
    """The headless task run: every event on stdout, tools allowed without asking (the OS sandbox holds), and
    the workflow passed on to the run's ``--workflow`` (``none`` is the run's own default)."""
    argv = [*anvil_command(), "-p", "--task", str(task_file), "--model", model, "--output-format", "stream-json",
            "--auto-approve"]
    return argv + (["--workflow", workflow] if workflow != "none" else [])


def run_environment(spec: RunSpec) -> dict[str, str]:
    """The environment of a run and of its checks: anvil's own Python environment first on PATH, so `python -m
    pytest` and `ruff` in verify commands are the ones installed with anvil."""
    env = {**os.environ, **spec.env}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
    return env


def run_one(spec: RunSpec, cancel: threading.Event | None = None,
            progress: Callable[[str, float | None], None] | None = None) -> dict[str, Any]:
    """Run ``spec`` to its record. ``cancel`` stops it (the record then says ``interrupted``); ``progress`` hears
    the run's cost so far as it changes."""
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    record = _blank(spec)
    workdir = Path(tempfile.mkdtemp(prefix=f"anvil-eval-{spec.task.id[:30]}-")) / "project"
    try:
        _run(spec, workdir, record, cancel, progress)
    except (WorkspaceError, OSError) as exc:
        record["error"] = str(exc)
    finally:
        if not spec.keep_workdir:
            shutil.rmtree(workdir.parent, ignore_errors=True)
        else:
            record["workdir"] = str(workdir)
    return record


def _blank(spec: RunSpec) -> dict[str, Any]:
    return {"run_id": spec.run_id, "task": spec.task.id, "title": spec.task.title, "model": spec.model,
            "workflow": spec.workflow, "repeat": spec.repeat, "expected": spec.task.expect, "success": False,
            "blocked": False, "status": "error", "stop_reason": None, "exit_code": None, "iterations": 0,
            "tokens": {"input": 0, "output": 0, "cached": 0}, "cost": None, "wall_time": 0.0,
            "time_to_first_edit": None, "checks": [], "question": None, "autofix_files": [], "model_fixed": [],
            "diff": "", "session": None, "error": None, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _run(spec: RunSpec, workdir: Path, record: dict[str, Any], cancel: threading.Event | None,
         progress: Callable[[str, float | None], None] | None) -> None:
    task = spec.task
    model, problem = model_for(spec.model, task.id)
    if problem:
        record["error"] = problem
        return
    workspace = prepare(workdir, files=task.files, repo=task.repo, ref=task.ref)
    task_file = task.task_file
    if task_file is None:  # an instance: its task file is written beside the data dir, out of the model's sight
        task_file = spec.run_dir / "task.md"
        task_file.write_text(task.task_text or "", encoding="utf-8")
    argv = run_argv(task_file, model, spec.workflow)
    data = spec.run_dir / "data"
    env = {**run_environment(spec), "XDG_DATA_HOME": str(data), "PYTHONUNBUFFERED": "1"}
    watch, ended = _launch(argv, workdir, env, spec, cancel, progress)
    record["wall_time"] = round(time.monotonic() - watch.started, 3)
    record["exit_code"] = ended.exit_code
    if ended.reason:
        record["error"] = ended.reason
    _take_result(record, watch, data)
    record["diff"] = workspace.diff()  # before the test patch: what the run changed
    if ended.reason == "interrupted":
        record["status"] = "interrupted"
        return
    _verdict(record, task, workspace, spec)


@dataclass
class _Ended:
    exit_code: int | None
    reason: str | None = None  # "timeout", "interrupted", or why anvil could not start


def _launch(argv: list[str], cwd: Path, env: dict[str, str], spec: RunSpec, cancel: threading.Event | None,
            progress: Callable[[str, float | None], None] | None) -> tuple[Watch, _Ended]:
    watch = Watch()
    stderr = (spec.run_dir / "anvil-stderr.log").open("w", encoding="utf-8")
    with stderr:
        try:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=stderr, text=True, start_new_session=True)
        except OSError as exc:
            return watch, _Ended(None, f"anvil could not start: {exc}")
        stopped: list[str] = []
        guard = threading.Thread(target=_watchdog, args=(process, spec.task.timeout, cancel, stopped), daemon=True)
        guard.start()
        assert process.stdout is not None
        try:
            for line in process.stdout:
                cost = watch.cost
                watch.feed(line)
                if progress is not None and watch.cost != cost:
                    progress(spec.run_id, watch.cost)
        except BaseException:  # cancelled from outside (Ray raises KeyboardInterrupt in the task): stop anvil too
            _stop(process)
            raise
        code = process.wait()
        guard.join(timeout=GRACE + 5)
    reason = stopped[0] if stopped else None
    if reason == "timeout":
        reason = f"timeout: the run took more than {spec.task.timeout:g}s and was stopped"
    return watch, _Ended(code, reason)


def _watchdog(process: subprocess.Popen[str], timeout: float, cancel: threading.Event | None,
              stopped: list[str]) -> None:
    """Stop the run at its time limit or when the eval is interrupted: Ctrl+C first (anvil ends the turn and
    closes the session), then the whole process group."""
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        if (cancel is not None and cancel.is_set()) or time.monotonic() > deadline:
            stopped.append("interrupted" if cancel is not None and cancel.is_set() else "timeout")
            _stop(process)
            return
        time.sleep(0.1)


def _stop(process: subprocess.Popen[str]) -> None:
    """Ctrl+C for anvil (it interrupts the turn and closes the session), then its whole process group."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGINT)
    try:
        process.wait(GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def _take_result(record: dict[str, Any], watch: Watch, data: Path) -> None:
    """The figures of anvil's own result object (and the session file it names)."""
    record["time_to_first_edit"] = None if watch.first_edit is None else round(watch.first_edit, 3)
    record["cost"] = watch.cost
    result = watch.result
    if result is None:
        if record["error"] is None:
            said = _last_line(data.parent / "anvil-stderr.log")
            record["error"] = f"anvil ended without a result (exit {record['exit_code']})" + (f": {said}" if said
                                                                                              else "")
        return
    usage = result.get("usage") or {}
    record.update(stop_reason=result.get("stop_reason"), iterations=result.get("turns") or 0,
                  cost=result.get("cost"), blocked=result.get("stop_reason") == "blocked",
                  tokens={"input": usage.get("prompt_tokens", 0), "output": usage.get("completion_tokens", 0),
                          "cached": usage.get("cache_read_tokens", 0)})
    task = result.get("task") or {}
    record["status"] = task.get("status") or result.get("stop_reason") or "error"
    if task.get("blocker"):
        record["question"] = task["blocker"].get("question")
    verification = result.get("verification") or {}
    record["autofix_files"] = (verification.get("autofix") or {}).get("files", [])
    record["model_fixed"] = verification.get("model_fixed", [])
    session_id = result.get("session_id")
    if session_id:
        found = sorted((data / "anvil" / "sessions").glob(f"*/{session_id}.jsonl"))
        record["session"] = str(found[0]) if found else None


def _verdict(record: dict[str, Any], task: EvalTask, workspace: Workspace, spec: RunSpec) -> None:
    """Success: the task's verify and check commands pass (after the test patch); for ``expect: blocked``, the
    run ended blocked on a question."""
    if task.expect == "blocked":
        record["success"] = record["blocked"]
        return
    if task.test_patch:
        problem = workspace.apply_patch(task.test_patch)
        if problem:
            record["error"] = problem
            return
    checks = asyncio.run(_checks(list(task.verify), workspace.root, spec))
    record["checks"] = [{"command": c.command, "ok": c.ok, "status": c.status, "output": c.output[-OUTPUT_TAIL:]}
                        for c in checks]
    record["success"] = bool(checks) and all(c.ok for c in checks)


async def _checks(commands: list[str], root: Path, spec: RunSpec) -> list[Any]:
    from anvil.config import user_config_dir
    from anvil.core.loop.verify import run_checks
    from anvil.core.sandbox.places import Places, SandboxSettings
    from anvil.core.sandbox.sandbox import Sandbox

    places = Places(root, config_dir=user_config_dir(), data_dir=spec.run_dir / "data" / "anvil")
    env = run_environment(spec)
    folders = tuple(p.parent for p in (spec.task.task_file, spec.task.files) if p is not None)
    sandbox = Sandbox(SandboxSettings(mode="auto"), places, session_id=f"eval-{spec.run_id}"[:60], environ=env,
                      shown=folders)  # a check may compare with the task's pristine files
    try:
        return await run_checks(commands, root, spec.task.timeout, sandbox, env)
    finally:
        await sandbox.close()


def _last_line(path: Path) -> str:
    """The last thing anvil said on stderr (its one-line error), for a run that ended without a result."""
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return ""
    said = [line for line in lines if line]
    return said[-1][:300] if said else ""
