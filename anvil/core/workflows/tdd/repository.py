"""The repository a TDD job works in: what must hold before a job starts, and before a halt may be cleared. Each
problem is one message saying what is wrong and what to do."""

from __future__ import annotations

from pathlib import Path

from anvil.core.workflows.base import JobError
from anvil.core.workflows.jobfiles import JobFiles
from anvil.core.workflows.tdd.git import Git
from anvil.core.workflows.tdd.schema import ACTIVE_PR, Orchestration


def _changed_paths(changes: str, limit: int = 5) -> str:
    paths = [line[3:] for line in changes.splitlines() if line.strip()]
    return ", ".join(paths[:limit]) + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def check_start(git: Git, root: Path, plan_path: str, main_branch: str | None) -> str:
    """The main branch a new job works from, once the repository is fit for one; JobError saying what is not."""
    top = git.toplevel()
    if top is None:
        raise JobError(f"{root} is not a git repository, and the TDD workflow works on branches: `git init`, commit "
                       "the project (with its plan), then start the job again.")
    if Path(top).resolve() != root.resolve():
        raise JobError(f"Start the TDD workflow at the top of the repository ({top}), not in {root}.")
    if not git.head():
        raise JobError("The repository has no commit yet: commit the project (with its plan), then start the job.")
    main = main_branch or git.main_branch()
    if not main or not git.branch_exists(main):
        raise JobError(f"The main branch {main or '(none found)'} does not exist: set [workflows.tdd] main_branch to "
                       "the branch PRs start from and merge into.")
    changes = git.changes()
    if changes:
        raise JobError(f"The working tree has uncommitted changes ({_changed_paths(changes)}); a TDD job starts from a "
                       "clean tree. Commit, stash or ignore them, then start the job again.")
    if not (root / plan_path).is_file():
        raise JobError(f"There is no master plan at {plan_path}: write the PRs to implement there (a heading or a "
                       "list item per PR), commit it, or point [workflows.tdd] plan_path at yours.")
    return main


def check_clear(git: Git, files: JobFiles, state: Orchestration) -> Orchestration:
    """The state once a halt is cleared; JobError saying what still needs doing."""
    halt = state.halt
    if state.status != "HALTED" or halt is None:
        raise JobError(f"Job {files.dir.name} is not halted (it is in {state.status}); there is nothing to clear.")
    if git.merging():
        raise JobError("A merge is still under way in the repository: finish it (git commit) or abort it (git merge "
                       "--abort), then clear the halt.")
    changes = git.changes()
    if changes:
        raise JobError(f"The working tree has uncommitted changes ({_changed_paths(changes)}): commit or undo them, "
                       "then clear the halt.")
    if halt.kind == "merge_conflict":
        if halt.branch and git.branch_exists(halt.branch):
            raise JobError(f"Branch '{halt.branch}' still exists: merge it into {state.main_branch} by hand, delete it "
                           f"(git branch -d {halt.branch}), then clear the halt.")
        if files.read(ACTIVE_PR) is not None:
            raise JobError(f"{files.display(ACTIVE_PR)} still exists: delete it (the PR was merged by hand), then "
                           "clear the halt.")
        return state.model_copy(update={
            "status": "INITIALIZING", "halt": None, "current_pr_branch": None, "pr_number": state.pr_number + 1,
            "merged": (*state.merged, halt.branch), "debug_attempt_counter": 0, "last_error": None,
            "checkpoint_due": False, "review_rounds": 0, "replanned_tasks": (), "analysis_output": None})
    return state.model_copy(update={"status": halt.resume_at, "halt": None})
