"""Small suites and scripted models for the eval's tests, written into a temporary folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import anvil_command


def make_task(suite: Path, name: str, *, verify: str, files: dict[str, str] | None = None,
              header: str = "") -> Path:
    folder = suite / name
    (folder / "files").mkdir(parents=True)
    for path, content in (files or {}).items():
        (folder / "files" / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / "files" / path).write_text(content)
    (folder / "task.md").write_text(f"---\ntitle: {name}\nverify: {json.dumps(verify)}\ncomplexity: low\n"
                                    f"{header}---\nDo {name}.\n")
    return folder


def make_model(root: Path, name: str, scripts: dict[str, Any]) -> str:
    """A folder of scripts, one per task; the --model that runs it."""
    folder = root / name
    folder.mkdir(parents=True)
    for task, turns in scripts.items():
        (folder / f"{task}.json").write_text(json.dumps(turns))
    return f"scripted:{folder}"


def write(path: str, content: str, cost: float = 0.01) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}], "cost": cost,
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cache_read_tokens": 600}}


def read(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]}


def say(text: str, cost: float = 0.01) -> dict[str, Any]:
    return {"text": text, "cost": cost, "usage": {"prompt_tokens": 1200, "completion_tokens": 20,
                                                   "cache_read_tokens": 800}}


def eval_run(cwd: Path, *args: str, timeout: float = 600, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(anvil_command("eval", *args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
