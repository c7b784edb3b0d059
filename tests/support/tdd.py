"""A project for the TDD workflow's tests: a git repository with a master plan, and the pieces of a scripted model's
work on it (the plan it writes, the test and the code)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

PLAN_PATH = "docs/Plan_Doc/Active_Plan.md"
PLAN = "# Active plan\n\n## PR 1: feat: Add greeting\n\ngreet(name) returns 'Hello, NAME!'.\n"
TEST_GREET = "from greet import greet\n\nassert greet('Ann') == 'Hello, Ann!', greet('Ann')\nprint('ok')\n"
GREET = "def greet(name):\n    return f'Hello, {name}!'\n"
TEST = "python3 test_greet.py"
#: the preflight gate the tests configure: not the test itself, so it is seen to run
PREFLIGHT = "python3 -m py_compile greet.py test_greet.py"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def tdd_repo(root: Path, plan: str = PLAN) -> Path:
    """``root`` as a git repository on ``main`` with one commit: a README and the master plan."""
    git(root, "init", "-q", "-b", "main")
    for key, value in (("user.email", "dev@example.com"), ("user.name", "Dev"), ("commit.gpgsign", "false")):
        git(root, "config", key, value)
    (root / PLAN_PATH).parent.mkdir(parents=True, exist_ok=True)
    (root / PLAN_PATH).write_text(plan)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "The project and its plan")
    return root


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def reply(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls)}


def active_pr(*tasks: tuple[str, tuple[str, ...]], title: str = "feat: Add greeting") -> str:
    """ACTIVE_PR.json as the model writes it: tasks as (name, step types)."""
    return json.dumps({
        "masterPlanPath": PLAN_PATH, "prTitle": title, "summary": "greet(name) says hello.",
        "verificationPlan": f"{TEST} passes.",
        "tasks": [{"taskName": name, "status": "TODO",
                   "tdd_steps": [{"type": kind, "description": f"{kind.lower()} for {name}", "status": "TODO"}
                                 for kind in kinds]} for name, kinds in tasks]}, indent=2)


def submit(expectation: str | None = None, **fields: Any) -> dict[str, Any]:
    """submit_work: a test run (``expectation``), or the fields given."""
    if expectation is not None:
        return call("submit_work", summary=f"run, expecting {expectation}", test_command=TEST, expectation=expectation)
    return call("submit_work", summary=fields.pop("summary", "done"), **fields)


def mark_plan_done(title: str = "PR 1: feat: Add greeting") -> dict[str, Any]:
    """The model's edit of the master plan: the PR marked [DONE] with HEAD's hash (the squashed commit)."""
    return call("run_command", command=f'sed -i "s/^## {title}$/## [DONE] {title} ($(git rev-parse --short=12 HEAD))/" '
                                       f"{PLAN_PATH}")


def write_pr_anywhere(pr: str) -> dict[str, Any]:
    """ACTIVE_PR.json written without knowing the job's id (a headless run's script): into the only job there is."""
    return call("run_command", command=f"cat > \"$(ls -d .anvil/jobs/*/ | head -1)ACTIVE_PR.json\" <<'EOF'\n{pr}\nEOF")
