"""A TDD job on disk: ``.anvil/jobs/<job-id>/`` holds

- ``ORCHESTRATION_STATE.json``: where the job stands (anvil writes it; read and checked at every tool call);
- ``ACTIVE_PR.json``: the current PR's engineering plan (the model writes it; checked at every read);
- ``instructions.md``: the person's notes for the job, when they gave any;
- ``.gitignore``: ``*``, so git never sees the job's files: they are neither changes that make the tree dirty nor
  part of a commit.
"""

from __future__ import annotations

from anvil.core.workflows.base import JobError
from anvil.core.workflows.jobfiles import JobFiles
from anvil.core.workflows.tdd.schema import (
    ACTIVE_PR,
    ORCHESTRATION_STATE,
    ActivePr,
    Invalid,
    Orchestration,
    dump,
    parse_active_pr,
    parse_orchestration,
)

INSTRUCTIONS = "instructions.md"
IGNORE = ".gitignore"


def load_state(files: JobFiles) -> Orchestration:
    """The job's state, checked; JobError naming the file, the bad field and what to do."""
    shown = files.display(ORCHESTRATION_STATE)
    text = files.read(ORCHESTRATION_STATE)
    if text is None:
        raise JobError(f"{files.shown} is not a TDD job: it has no {ORCHESTRATION_STATE}. `ls {files.display('..')}` "
                       "lists the jobs.")
    state = parse_orchestration(text, shown)
    if isinstance(state, Invalid):
        raise JobError(f"{state.message} It is anvil's file: put the field right (the README's Workflows section "
                       "describes it), or start a new job.")
    return state


def save_state(files: JobFiles, state: Orchestration) -> None:
    files.write(ORCHESTRATION_STATE, dump(state))


def read_pr(files: JobFiles) -> ActivePr | Invalid | None:
    """ACTIVE_PR.json, checked (None: it does not exist); a file that cannot be read safely is Invalid too."""
    try:
        text = files.read(ACTIVE_PR)
    except JobError as exc:
        return Invalid(message=str(exc))
    return parse_active_pr(text, files.display(ACTIVE_PR))


def write_pr(files: JobFiles, pr: ActivePr | None) -> None:
    if pr is None:
        files.remove(ACTIVE_PR)
    else:
        files.write(ACTIVE_PR, dump(pr))


def create_job(files: JobFiles, state: Orchestration, instructions: str) -> None:
    """A new job's directory; JobError when it exists already."""
    if files.dir.exists() or files.dir.is_symlink():
        raise JobError(f"{files.shown} exists already; a new job needs a directory of its own.")
    files.write(IGNORE, "# anvil's TDD job: its files are not the project's, so git ignores them\n*\n")
    if instructions.strip():
        files.write(INSTRUCTIONS, instructions.rstrip("\n") + "\n")
    save_state(files, state)
