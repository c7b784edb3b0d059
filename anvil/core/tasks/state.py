"""A task's state between runs: its status, the session it runs in, and its blockers with their answers.

One small JSON file per task, in anvil's private data directory (0700/0600, like sessions: a blocker's context can
quote code), keyed by the project and the task file's path:

    $XDG_DATA_HOME/anvil/tasks/<project-slug>/<task-name>-<hash of the task path>.json

    {"task": "/abs/path/task.md", "title": "...", "project": "/abs/project", "status": "blocked",
     "session_id": "20250101-120000-abcdef", "runs": 1, "updated": 1735732800.0,
     "blockers": [{"question": "...", "source": "ask_user", "context": "...", "tried": ["..."],
                   "raised": 1735732800.0, "session_id": "...", "answer": null, "answered": null}],
     "last": {"stop_reason": "blocked", "message": "...", "verification": {...}, "plan": "..."}}

Statuses: ``running`` (a run started and has not ended: a killed run stays so), ``done`` (the run ended and its
verification, if any, passed), ``failed`` (verification still failing, an error, the iteration limit),
``blocked`` (waiting for an answer: ``anvil answer``), ``interrupted``.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from anvil.core.private_files import private_dir, replace_private
from anvil.core.session.store import project_slug

STATUSES = ("running", "done", "failed", "blocked", "interrupted")


class TaskStateError(Exception):
    """A task state file that cannot be read or written; the message says which and what to do."""


@dataclass
class BlockerRecord:
    question: str
    source: str
    context: str = ""
    tried: list[str] = field(default_factory=list)
    raised: float = field(default_factory=time.time)
    session_id: str = ""
    answer: str | None = None
    answered: float | None = None


@dataclass
class TaskState:
    task: str
    title: str
    project: str
    status: str = "running"
    session_id: str | None = None
    runs: int = 0
    updated: float = field(default_factory=time.time)
    blockers: list[BlockerRecord] = field(default_factory=list)
    last: dict[str, Any] = field(default_factory=dict)

    @property
    def open_blocker(self) -> BlockerRecord | None:
        """The question waiting for an answer, when the task is blocked."""
        if self.status != "blocked" or not self.blockers or self.blockers[-1].answer is not None:
            return None
        return self.blockers[-1]

    @property
    def clarifications(self) -> list[BlockerRecord]:
        """The answered blockers, oldest first: the task layer's "previous clarifications"."""
        return [b for b in self.blockers if b.answer is not None]

    def answer(self, text: str) -> BlockerRecord:
        """Record the person's answer to the open question; ValueError when there is none."""
        blocker = self.open_blocker
        if blocker is None:
            raise ValueError(self.status)
        blocker.answer, blocker.answered = text.strip(), time.time()
        return blocker

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskState:
        blockers = [BlockerRecord(**b) for b in data.get("blockers", [])]
        return cls(**{**data, "blockers": blockers})


class TaskStore:
    """The task states of one project."""

    def __init__(self, data_dir: Path, project_root: Path) -> None:
        self.project_root = project_root.resolve()
        self.dir = data_dir / "tasks" / project_slug(self.project_root)

    def path_for(self, task: Path) -> Path:
        task = task.resolve()
        stem = re.sub(r"[^A-Za-z0-9]+", "-", task.parent.name if task.name.lower() == "task.md" else task.stem)
        digest = hashlib.sha1(str(task).encode()).hexdigest()[:8]
        return self.dir / f"{stem.strip('-')[:40] or 'task'}-{digest}.json"

    def load(self, task: Path) -> TaskState | None:
        """The state of the task at ``task``, or None when it never ran here."""
        return self._read(self.path_for(task))

    def save(self, state: TaskState) -> None:
        state.updated = time.time()
        path = self.path_for(Path(state.task))
        try:
            private_dir(path.parent)
            replace_private(path, state.to_json().encode("utf-8"))
        except OSError as exc:
            raise TaskStateError(f"Cannot write the task state {path}: {exc.strerror or exc}. Check the disk and "
                                 "the permissions of anvil's data directory.") from None

    def list(self) -> list[TaskState]:
        """Every task run in this project, the most recently updated first (unreadable files are skipped)."""
        states = []
        for path in sorted(self.dir.glob("*.json")) if self.dir.is_dir() else []:
            try:
                state = self._read(path)
            except TaskStateError:
                continue
            if state is not None:
                states.append(state)
        return sorted(states, key=lambda s: s.updated, reverse=True)

    def find_by_session(self, session_id: str) -> TaskState | None:
        return next((s for s in self.list() if s.session_id == session_id), None)

    def _read(self, path: Path) -> TaskState | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return TaskState.from_dict(data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            raise TaskStateError(f"The task state {path} cannot be read ({exc}). Move it aside to start the "
                                 "task afresh.") from None
