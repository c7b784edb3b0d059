"""What ``anvil eval`` runs: tasks from suite folders and SWE-bench-style instance files.

- A **suite** is a folder of tasks; a **task** is a folder with a ``task.md`` (the header keys of
  :mod:`anvil.core.tasks.taskfile`): its starting files in ``files/`` (or ``files: DIR``), or ``repo:`` and ``ref:``
  naming a local git repository and the commit to start from; ``verify`` decides success, with ``check`` (unseen by
  the model; ``{task_dir}`` in a check is the task's folder, to compare with a pristine file there); ``timeout``
  and ``max_iterations`` are its limits; ``expect: blocked`` for a task that should end on
  a question. A task folder can also be given directly. Subfolders without a ``task.md`` are not tasks.
- An **instance file** (``.json``: one instance or a list; ``.jsonl``: one a line) holds SWE-bench-style
  instances: ``instance_id``, ``repo`` (a local path, relative to the file), ``base_commit``,
  ``problem_statement``, ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (lists of test ids, or those lists as JSON text, as
  SWE-bench ships them), optional ``test_patch`` (applied after the run, before the tests) and ``test_command``
  (anvil's addition, default ``python -m pytest -q``; the test ids are appended).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.core.tasks.taskfile import TaskFileError, load_task

DEFAULT_TIMEOUT = 900.0
DEFAULT_TEST_COMMAND = "python -m pytest -q"


class SuiteError(Exception):
    """A suite, task or instance that cannot be run; the message says which and what to change."""


@dataclass(frozen=True)
class EvalTask:
    """One task as a run needs it; plain data, so it travels to a Ray worker."""

    id: str
    title: str
    task_file: Path | None = None  # a folder task's task.md
    task_text: str | None = None  # an instance's generated task.md
    files: Path | None = None
    repo: Path | None = None
    ref: str | None = None
    verify: tuple[str, ...] = ()  # what decides success, run after the run in a fresh sandbox
    test_patch: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    workflow: str = "none"
    expect: str = "done"
    source: str = ""  # where it came from, for messages
    extra: dict[str, Any] = field(default_factory=dict)


def load_suites(paths: list[Path]) -> list[EvalTask]:
    """Every task of these suites, folders and instance files, in order; SuiteError for the first problem."""
    tasks: list[EvalTask] = []
    for path in paths:
        if path.is_file() and path.suffix in {".json", ".jsonl"}:
            tasks += load_instances(path)
        elif (path / "task.md").is_file():
            tasks.append(folder_task(path))
        elif path.is_dir():
            found = [folder_task(d) for d in sorted(path.iterdir()) if (d / "task.md").is_file()]
            if not found:
                raise SuiteError(f"{path} holds no tasks: a task is a folder with a task.md.")
            tasks += found
        else:
            raise SuiteError(f"{path}: not a suite folder, a task folder or an instance file (.json, .jsonl).")
    seen: dict[str, str] = {}
    for task in tasks:
        if task.id in seen:
            raise SuiteError(f"two tasks are named {task.id!r} ({seen[task.id]} and {task.source}); rename one.")
        seen[task.id] = task.source
    return tasks


def folder_task(folder: Path) -> EvalTask:
    try:
        spec = load_task(folder / "task.md")
    except TaskFileError as exc:
        raise SuiteError(str(exc)) from None
    files = repo = None
    if spec.repo:
        repo = (folder / spec.repo).resolve()
        if not (repo / ".git").exists():
            raise SuiteError(f"{spec.path}: repo {spec.repo} is not a git repository ({repo}).")
    else:
        files = (folder / (spec.files or "files")).resolve()
        if spec.files and not files.is_dir():
            raise SuiteError(f"{spec.path}: the starting files folder {spec.files} does not exist.")
        files = files if files.is_dir() else None  # no files: the run starts in an empty folder
    if not spec.verify and not spec.check and spec.expect == "done":
        raise SuiteError(f"{spec.path}: no verify command: eval needs one to tell success from failure.")
    checks = tuple(c.replace("{task_dir}", shlex.quote(str(folder.resolve()))) for c in spec.check)
    return EvalTask(spec.name, spec.title, task_file=spec.path, files=files, repo=repo, ref=spec.ref,
                    verify=spec.verify + checks, timeout=spec.timeout or DEFAULT_TIMEOUT,
                    workflow=spec.workflow, expect=spec.expect, source=str(spec.path))


def load_instances(path: Path) -> list[EvalTask]:
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            items = data if isinstance(data, list) else [data]
    except (OSError, ValueError) as exc:
        raise SuiteError(f"Cannot read the instance file {path}: {exc}.") from None
    return [instance_task(item, path, n) for n, item in enumerate(items, start=1)]


def instance_task(item: Any, path: Path, number: int) -> EvalTask:
    where = f"{path} (instance {number})"
    if not isinstance(item, dict):
        raise SuiteError(f"{where}: an instance is a JSON object.")
    required = ("instance_id", "repo", "base_commit", "problem_statement", "FAIL_TO_PASS")
    missing = [k for k in required if not item.get(k)]
    if missing:
        raise SuiteError(f"{where}: missing {', '.join(missing)}.")
    repo = (path.parent / str(item["repo"])).resolve()
    if not (repo / ".git").exists():
        raise SuiteError(f"{where}: repo {item['repo']} is not a local git repository ({repo}); eval runs "
                         "instances of repositories on this machine.")
    command = str(item.get("test_command") or DEFAULT_TEST_COMMAND)
    verify = tuple(f"{command} {shlex.join(tests)}" for tests in (_tests(item, "FAIL_TO_PASS", where),
                                                                   _tests(item, "PASS_TO_PASS", where)) if tests)
    instance_id = str(item["instance_id"])
    text = f"---\ntitle: {json.dumps(instance_id)}\n---\n{item['problem_statement']}\n"
    return EvalTask(instance_id, instance_id, task_text=text, repo=repo, ref=str(item["base_commit"]),
                    verify=verify, test_patch=item.get("test_patch") or None,
                    timeout=float(item.get("timeout") or DEFAULT_TIMEOUT), source=where)


def _tests(item: dict[str, Any], key: str, where: str) -> list[str]:
    value = item.get(key) or []
    if isinstance(value, str):  # SWE-bench ships these lists as JSON text
        try:
            value = json.loads(value)
        except ValueError:
            raise SuiteError(f"{where}: {key} is neither a list nor a JSON list of test ids.") from None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise SuiteError(f"{where}: {key} should be a list of test ids.")
    return value
