"""The git operations a TDD job runs itself, as subprocesses, each one reported as a
:class:`~anvil.core.job_events.GitOperation` event.

What it may do is narrow on purpose: it never pushes (so it never force-pushes), never deletes a branch that is not
merged (``-d``, never ``-D``), and checks out, creates, merges or deletes only the main branch and the PR branch
(:attr:`Git.branches`). The sequences the state machine needs (create the PR branch, merge it, mark the plan) are
here as one method each, answering a :class:`~anvil.core.workflows.tdd.machine.GitOutcome`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from anvil.core.job_events import GitOperation
from anvil.core.safe_git import overrides
from anvil.core.workflows.tdd.machine import GitOutcome, Head

#: seconds a git command may take (a pull talks to a remote)
TIMEOUT = 120.0
#: what a GitOperation event keeps of git's output
OUTPUT_CAP = 4000


#: configuration a pull needs to reach the remote, which the other calls turn off
_REMOTE_KEYS = ("protocol.allow=", "core.sshCommand=", "credential.helper=", "core.askPass=", "core.gitProxy=")


class GitRefused(Exception):
    """An operation this module never runs (a push, a forced delete, another branch): a bug, never the model's."""


@dataclass(frozen=True)
class GitRun:
    ok: bool
    output: str
    code: int


class Git:
    def __init__(self, root: Path, job_id: str, emit: Callable[[GitOperation], None] = lambda event: None) -> None:
        self.root = root
        self.job_id = job_id
        self.emit = emit
        #: the branches it may check out, create, merge or delete: the main branch, and the PR branch once known
        self.branches: set[str] = set()
        self._options: list[str] | None = None  # safe_git's overrides, found once

    def run(self, *args: str) -> GitRun:
        """``git ARGS`` with nothing of the repository's configuration that runs a program (hooks, fsmonitor,
        filters, pagers: :mod:`anvil.core.safe_git`, as for all of anvil's own git calls). A pull keeps what reaching
        the remote needs (its protocols, ssh command and credential helper are the person's)."""
        if "push" in args or "-D" in args or "--force" in args:
            raise GitRefused(f"git {' '.join(args)}: the TDD job never pushes or forces anything")
        if self._options is None:
            self._options = overrides(self.root)
        options = self._options
        if args[:1] == ("pull",):
            options = [option for pair in zip(options[::2], options[1::2], strict=True)
                       if not pair[1].startswith(_REMOTE_KEYS) for option in pair]
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_EDITOR": "true", "GIT_PAGER": "cat",
               "GIT_OPTIONAL_LOCKS": "0"}
        try:
            done = subprocess.run(["git", *options, *args], cwd=self.root, capture_output=True, text=True, env=env,
                                  timeout=TIMEOUT, check=False, errors="replace", stdin=subprocess.DEVNULL)
            # trailing space only: a porcelain line starts with a space (" M file")
            run = GitRun(done.returncode == 0, (done.stdout + done.stderr).rstrip(), done.returncode)
        except FileNotFoundError:
            run = GitRun(False, "git is not installed (or not on PATH)", 127)
        except subprocess.TimeoutExpired:
            run = GitRun(False, f"git {args[0]} took longer than {TIMEOUT:g}s and was stopped", 124)
        self.emit(GitOperation(self.job_id, shlex.join(["git", *args]), run.ok, run.output[:OUTPUT_CAP]))
        return run

    def _branch(self, name: str) -> str:
        if name not in self.branches:
            raise GitRefused(f"branch {name!r} is neither the main branch nor the PR branch")
        return name

    # -- looking -----------------------------------------------------------------------------------------------------

    def toplevel(self) -> str | None:
        run = self.run("rev-parse", "--show-toplevel")
        return run.output if run.ok else None

    def changes(self) -> str:
        """``git status --porcelain`` (untracked files too): empty when the working tree is clean."""
        return self.run("status", "--porcelain", "--untracked-files=all").output

    def head(self) -> str:
        run = self.run("rev-parse", "HEAD")
        return run.output if run.ok else ""

    def current_branch(self) -> str:
        run = self.run("symbolic-ref", "--short", "-q", "HEAD")
        return run.output if run.ok else ""

    def branch_exists(self, name: str) -> bool:
        return self.run("show-ref", "--verify", "--quiet", f"refs/heads/{name}").ok

    def has_upstream(self, name: str) -> bool:
        return self.run("rev-parse", "--abbrev-ref", "--symbolic-full-name", f"{name}@{{upstream}}").ok

    def main_branch(self) -> str | None:
        """The branch PRs start from: origin's HEAD branch, else ``main``, else ``master``, else the current one."""
        remote = self.run("symbolic-ref", "--short", "-q", "refs/remotes/origin/HEAD")
        if remote.ok and remote.output.startswith("origin/"):
            return remote.output.removeprefix("origin/")
        for name in ("main", "master"):
            if self.branch_exists(name):
                return name
        return self.current_branch() or None

    def state_of_head(self, main: str) -> Head:
        changes = self.changes()
        ahead = self.run("rev-list", "--count", f"{main}..HEAD")
        return Head(self.head(), not changes, int(ahead.output) if ahead.ok and ahead.output.isdigit() else -1,
                    changes)

    # -- the job's sequences ---------------------------------------------------------------------------------------

    def create_pr_branch(self, main: str, name: str) -> GitOutcome:
        """From a clean tree: the main branch, up to date when it has an upstream, then the new branch."""
        self.branches |= {main, name}
        changes = self.changes()
        if changes:
            return GitOutcome(False, "dirty", changes)
        if self.branch_exists(name):
            return GitOutcome(False, "failed", f"a branch named '{name}' exists already (an earlier attempt at this "
                                               "PR?); merge or delete it by hand, or rename the PR's prTitle.")
        steps = [("checkout", self._branch(main))]
        if self.has_upstream(main):
            steps.append(("pull", "--ff-only"))
        steps.append(("checkout", "-b", self._branch(name)))
        for step in steps:
            run = self.run(*step)
            if not run.ok:
                return GitOutcome(False, "failed", f"`git {' '.join(step)}` failed: {run.output}")
        pulled = " (pulled first)" if len(steps) == 3 else ""
        return GitOutcome(True, message=f"Created branch {name} from {main}{pulled}.", commit=self.head())

    def merge_pr_branch(self, main: str, branch: str, title: str) -> GitOutcome:
        """The PR branch into main with a merge commit; the branch deleted after. A conflict aborts the merge, so
        main is left as it was."""
        self.branches |= {main, branch}
        changes = self.changes()
        if changes:
            return GitOutcome(False, "failed", f"the working tree has uncommitted changes before the merge:\n{changes}")
        steps = [("checkout", self._branch(main))]
        if self.has_upstream(main):
            steps.append(("pull", "--ff-only"))
        for step in steps:
            run = self.run(*step)
            if not run.ok:
                return GitOutcome(False, "failed", f"`git {' '.join(step)}` failed: {run.output}")
        merge = self.run("merge", "--no-ff", "--no-gpg-sign", "-m", f"Merge {branch}: {title}", self._branch(branch))
        if not merge.ok:
            conflicted = self.run("ls-files", "--unmerged").output
            if conflicted or "CONFLICT" in merge.output:
                self.run("merge", "--abort")
                return GitOutcome(False, "conflict", merge.output)
            return GitOutcome(False, "failed", f"`git merge --no-ff {branch}` failed: {merge.output}")
        commit = self.head()
        deleted = self.run("branch", "-d", self._branch(branch))
        gone = "deleted the branch" if deleted.ok else f"could not delete the branch ({deleted.output})"
        return GitOutcome(True, message=f"Merged {branch} into {main} ({commit[:12]}) and {gone}.", commit=commit)

    def commit_plan(self, plan: str, commit: str, title: str) -> GitOutcome:
        """The master plan marked for this PR (its only change: ``[DONE]`` and the commit's hash on an added line),
        committed on the PR branch; or what is missing, for the model."""
        changed = [line[3:].strip('"') for line in self.changes().splitlines() if line.strip()]
        if plan not in changed:
            return GitOutcome(False, "failed", f"The master plan {plan} is unchanged: mark the PR \"{title}\" [DONE] "
                                               f"with its commit {commit[:12]}, then submit_work.")
        others = [path for path in changed if path != plan]
        if others:
            return GitOutcome(False, "failed", f"Only the master plan may change now; these changed too: "
                                               f"{', '.join(others)}. Undo those changes, then submit_work.")
        tracked = bool(self.run("ls-files", "--", plan).output)
        diff = self.run("diff", "--no-ext-diff", "HEAD", "--", plan).output if tracked else ""
        added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
        if not diff:  # a new, untracked plan: every line is added
            added = (self.root / plan).read_text(encoding="utf-8", errors="replace").splitlines()
        short = commit[:7]
        if not any("[DONE]" in line and short in line for line in added):
            return GitOutcome(False, "failed", f"No line the update added to {plan} has both [DONE] and the commit "
                                               f"hash ({short}, or more of {commit[:12]}). Mark the PR \"{title}\" "
                                               "that way, then submit_work.")
        message = f"docs: mark \"{title}\" done in the plan"
        for step in (("add", "--", plan), ("commit", "--no-gpg-sign", "-m", message, "--", plan)):
            run = self.run(*step)
            if not run.ok:
                return GitOutcome(False, "failed", f"`git {' '.join(step[:2])}` failed: {run.output}")
        head = self.head()
        return GitOutcome(True, message=f"The plan update is committed ({head[:12]}).", commit=head)

    def reset_attempt(self) -> GitOutcome:
        """Back to the last commit: tracked files reset, files the attempt created removed (ignored ones stay)."""
        for step in (("reset", "--hard", "HEAD"), ("clean", "-fd")):
            run = self.run(*step)
            if not run.ok:
                return GitOutcome(False, "failed", f"`git {' '.join(step)}` failed: {run.output}")
        return GitOutcome(True, message="Reverted to the last commit.", commit=self.head())

    def merging(self) -> bool:
        """A merge is under way (MERGE_HEAD exists)."""
        return self.run("rev-parse", "-q", "--verify", "MERGE_HEAD").ok
