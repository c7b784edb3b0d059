"""Task runs as every front end starts them: ``anvil -p --task FILE``, ``anvil answer TASK "…"``, ``-c --answer``,
``/task FILE`` in the app, and ``anvil tasks``.

:func:`prepare_launch` turns what the person typed into a :class:`TaskLaunch` (the task, the answer to its open
question, the session to resume) or one :class:`TaskStartError` line. :class:`TaskTurn` runs it in a session: its
events are the turn's, with the intent preview after the model's outline, and a last notice saying how the task
ended. The words are written here once.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anvil.frontend.lines import short

if TYPE_CHECKING:
    from anvil.core.events import Event
    from anvil.core.tasks.state import TaskState, TaskStore
    from anvil.core.tasks.taskfile import TaskSpec
    from anvil.facade import SessionFacade
    from anvil.frontend.effects import Reply

#: the exit code of a headless task run that ended blocked (waiting for an answer)
EXIT_BLOCKED = 4


class TaskStartError(Exception):
    """A task run that cannot start; the message is one line saying what to do."""


@dataclass(frozen=True)
class TaskLaunch:
    spec: TaskSpec
    #: the answer to the task's open question, when resuming it
    answer: str | None = None
    #: the session to resume (the blocked run's); None: a new one
    resume: str | None = None
    #: what the person added to the task's own message (``-p TEXT --task FILE``)
    extra: str = ""
    #: ``--max-iterations`` was given: it wins over the task's ``max_iterations``
    keep_iterations: bool = False
    notes: tuple[str, ...] = ()
    #: the workflow a new run works in (``none``: one conversation): --workflow's, else the task file's
    workflow: str = "none"


def answer_hint(task: str | Path, cwd: Path | None = None) -> str:
    """How the person answers a blocked task, as a command they can paste."""
    path = Path(task)
    try:
        shown = path.relative_to((cwd or Path.cwd()).resolve()).as_posix()
    except ValueError:
        shown = str(path)
    return f'anvil answer {shown} "your answer"'


def prepare_launch(root: Path, data_dir: Path, *, task: str | None = None, answer: str | None = None,
                   continue_latest: bool = False, resume: str | None = None, extra: str = "",
                   keep_iterations: bool = False, workflow: str | None = None) -> TaskLaunch:
    """What to run for these options; :class:`TaskStartError` (one line) when it cannot run."""
    from anvil.core.tasks.run import workflow_problem
    from anvil.core.tasks.state import TaskStateError, TaskStore
    from anvil.core.tasks.taskfile import TaskFileError, load_task

    store = TaskStore(data_dir, root)
    try:
        if task is not None:
            spec = load_task(Path(task).expanduser())
            state = store.load(spec.path) if answer is not None else None
        elif answer is not None:
            state = _state_of_session(store, data_dir, root, resume, continue_latest)
            spec = load_task(Path(state.task))
        else:
            raise TaskStartError("nothing to run: give --task FILE, or --answer with --task or -c.")
    except (TaskFileError, TaskStateError) as exc:
        raise TaskStartError(str(exc)) from None
    problem = workflow_problem(spec, workflow)
    if problem:
        raise TaskStartError(problem)
    if answer is None:
        return TaskLaunch(spec, extra=extra, keep_iterations=keep_iterations, workflow=workflow or spec.workflow)
    if not answer.strip():
        raise TaskStartError("the answer is empty. Write the answer after the task: " + answer_hint(spec.path))
    if state is None or state.open_blocker is None:
        status = state.status if state is not None else "never run here"
        raise TaskStartError(f"the task {spec.path} has no open question to answer (status: {status}). Run it "
                             f"with `anvil -p --task {spec.path}`.")
    return _resuming(spec, state, answer, data_dir, root, extra, keep_iterations)


def _state_of_session(store: TaskStore, data_dir: Path, root: Path, resume: str | None,
                      continue_latest: bool) -> TaskState:
    from anvil.core.session.store import SessionStore

    if not (resume or continue_latest):
        raise TaskStartError("--answer needs the task: `anvil answer TASK \"…\"`, or -c for the newest session.")
    sessions = SessionStore(data_dir, root).list()
    session_id = resume or (sessions[0].id if sessions else None)
    state = store.find_by_session(session_id) if session_id else None
    if state is None:
        raise TaskStartError(f"the session {session_id or '(none yet)'} is not a task run's. Answer a blocked task "
                             "with `anvil answer TASK \"…\"`; `anvil tasks` lists them.")
    return state


def _resuming(spec: TaskSpec, state: TaskState, answer: str, data_dir: Path, root: Path, extra: str,
              keep_iterations: bool) -> TaskLaunch:
    """Resume the blocked run's session when it is still there; else a new one, with the answers in its prompt."""
    from anvil.core.session.store import SessionStore

    known = {s.id for s in SessionStore(data_dir, root).list()}
    if state.session_id in known:
        return TaskLaunch(spec, answer, state.session_id, extra, keep_iterations)
    note = (f"The blocked run's session {state.session_id} is gone; the task starts in a new session, with the "
            "answers in its instructions.")
    return TaskLaunch(spec, answer, None, extra, keep_iterations, (note,))


class TaskTurn:
    """A task's run in a session, as a turn's events; :attr:`result` is the task's part of the result after it."""

    def __init__(self, session: SessionFacade, launch: TaskLaunch, *, blocking: bool) -> None:
        self.session, self.launch = session, launch
        self.run = session.task_run(launch.spec, blocking=blocking, keep_iterations=launch.keep_iterations)
        self.result: dict[str, Any] | None = None

    async def events(self) -> AsyncIterator[Event]:
        from anvil.core.events import Notice, TurnEnded
        from anvil.frontend.prompt import prepare_prompt, prompt_turn

        for note in self.launch.notes:
            yield Notice(note)
        answered = self.run.answer(self.launch.answer) if self.launch.answer is not None else None
        prompt = self.run.prepare(self.launch.extra, answered)
        if self.launch.workflow != "none":  # a new run in a workflow: a job with the task as its instructions
            events = self.session.start_job(self.launch.workflow, prepare_prompt(prompt, self.session.root).text)
        else:  # a plain run, or a resumed one (the session's job, if any, takes the answer as guidance)
            events = prompt_turn(self.session, prepare_prompt(prompt, self.session.root))
        async for event in events:
            yield event
            for extra in self.run.observe(event):
                yield extra
            if isinstance(event, TurnEnded):
                self.result = self.run.finish(event)
                yield Notice(outcome_text(self.result))


def outcome_text(result: dict[str, Any]) -> str:
    """One line on how a task run ended, with what to do next when it is blocked."""
    title, status = result["title"], result["status"]
    if status == "blocked" and result.get("blocker"):
        return (f"Task \"{title}\" is blocked: {short(result['blocker']['question'], 300)} Answer with "
                f"{answer_hint(result['path'])}.")
    verification = result.get("verification") or {}
    fixed = (verification.get("autofix") or {}).get("files") or []
    fixers = f"; the automatic fixers changed {', '.join(fixed)}" if fixed else ""
    return f"Task \"{title}\": {status}{fixers}."


# -- anvil tasks ----------------------------------------------------------------------------------------------

def tasks_command(argv: list[str], out: Any = None) -> int:
    """``anvil tasks``: this directory's tasks, newest first, with their status and open question."""
    from anvil.config import data_dir
    from anvil.core.tasks.state import TaskStore

    parser = argparse.ArgumentParser(prog="anvil tasks", description="List the tasks run in this directory, newest "
                                     "first: status (running, done, failed, blocked, interrupted) and, for a "
                                     "blocked one, its question. Answer it with `anvil answer TASK \"…\"`.")
    parser.parse_args(argv)  # exits 2 with a usage message on bad arguments
    out = out or sys.stdout
    store = TaskStore(data_dir(), Path.cwd())
    states = store.list()
    if not states:
        print(f"No tasks run yet in {store.project_root}. Run one with `anvil -p --task FILE`.", file=out)
        return 0
    print(f"{'STATUS':<12} {'UPDATED':<17} {'RUNS':>4}  TASK", file=out)
    for state in states:
        updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(state.updated))
        print(f"{state.status:<12} {updated:<17} {state.runs:>4}  {state.title} ({_shown(state.task)})", file=out)
        if state.open_blocker is not None:
            print(f"{'':<12} question: {short(state.open_blocker.question, 200)}", file=out)
            print(f"{'':<12} answer:   {answer_hint(state.task)}", file=out)
    return 0


def _shown(path: str) -> str:
    try:
        return Path(path).relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path


async def task_command(session: SessionFacade, arg: str) -> Reply:
    """``/task FILE``: run a task file in this session (somebody is there to answer, so it never blocks)."""
    import asyncio

    from anvil.frontend.effects import RunEvents, Show

    if not arg:
        return [Show("Usage: /task FILE: run a Markdown task file (title, description, PRD, verify commands) in "
                     "this session. Headless: anvil -p --task FILE.")]
    path = Path(arg).expanduser()
    try:
        launch = await asyncio.to_thread(prepare_launch, session.root, session.data_dir,
                                         task=str(path if path.is_absolute() else session.root / path))
    except TaskStartError as exc:
        return [Show(str(exc), "error")]
    return [Show(f"Task: {launch.spec.title}"), RunEvents(TaskTurn(session, launch, blocking=False).events())]
