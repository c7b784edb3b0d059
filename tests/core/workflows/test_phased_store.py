"""A phased job on disk: the state file read back (and checked) in every phase, the archive, todos.yaml consumed,
and the job directory's files read and written without following links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from anvil.core.tools.base import ToolContext
from anvil.core.workflows.base import JobError
from anvil.core.workflows.jobfiles import JobFiles
from anvil.core.workflows.jobs import job_directory, jobs_root
from anvil.core.workflows.phased.store import load_state
from anvil.core.workflows.phased.workflow import PhasedSettings, PhasedWorkflow

SETTINGS = PhasedSettings()


def reopened(project: Path, directory: Path) -> PhasedWorkflow:
    """The job as a new process finds it: only what its files say."""
    workflow = PhasedWorkflow.open(project, directory, SETTINGS)
    workflow.attach(ToolContext(root=project, data_dir=project.parent / "data"), "session")
    return workflow


def test_a_job_restarted_from_its_state_file_before_every_step_runs_the_same(project: Path) -> None:
    directory = project / ".anvil" / "jobs" / "job-1"
    PhasedWorkflow.start(project, directory, "Make the parser strict.", SETTINGS)
    assert (directory / "instructions.md").read_text() == "Make the parser strict.\n"

    def step(action: str, *args: object) -> str:
        job = reopened(project, directory)
        return getattr(job, action)(*args).output

    seen = []
    for todo in (1, 2, 3):
        assert step("complete_todo", todo).startswith(f"Todo {todo} done")
    assert "Not written" in step("write_plan", [("too few", "")] * 3, "", "")
    assert step("complete_todo", 4).startswith("Phase transition rejected: todos.yaml does not exist")
    assert load_state(JobFiles(project, directory)).todos[3].status == "in_progress"
    step("write_plan", [(f"step {n}", "") for n in range(1, 6)], "Parser", "")
    assert (directory / "todos.yaml").exists()
    assert "phase 2 (tactical) starts" in step("complete_todo", 4).lower()
    assert not (directory / "todos.yaml").exists()  # consumed: a later phase cannot pass it on again
    seen.append(load_state(JobFiles(project, directory)))
    for todo in range(1, 6):
        step("complete_todo", todo)
    seen.append(load_state(JobFiles(project, directory)))
    archive = yaml.safe_load((directory / "archive" / "phase_2.yaml").read_text())
    assert archive["phase"] == 2 and archive["kind"] == "tactical" and archive["title"] == "Parser"
    assert [(t["id"], t["content"], t["status"]) for t in archive["todos"]] == [
        (n, f"step {n}", "completed") for n in range(1, 6)]
    assert "Not yet: todos 1, 2, 3" in step("complete_job", "done")
    for todo in (1, 2, 3):
        step("complete_todo", todo)
    assert step("complete_job", "The parser is strict.").startswith("Job job-1 complete after 3 phases")
    final = load_state(JobFiles(project, directory))
    assert [(s.phase, s.kind) for s in seen] == [(2, "tactical"), (3, "strategic")]
    assert (final.status, final.summary, final.phase) == ("complete", "The parser is strict.", 3)


BROKEN_STATES = [
    ("phase: [\n", "is not valid YAML"),
    ("job_id: j\nphase: 0\nkind: strategic\nstatus: running\ntodos: [{id: 1, content: x}]\n",
     "phase: input should be greater than or equal to 1"),
    ("job_id: j\nphase: 2\nkind: sideways\nstatus: running\ntodos: [{id: 1, content: x}]\n", "kind: input should be"),
    ("job_id: j\nphase: 2\nkind: tactical\nstatus: running\ntodos: []\n", "todos: list should have at least 1 item"),
    ("job_id: j\nphase: 2\nkind: tactical\nstatus: running\ntodos: [{id: '1', content: x}]\n",
     "todos.0.id: input should be a valid integer"),
    ("job_id: j\nphase: 2\nkind: tactical\nstatus: running\ncolour: red\ntodos: [{id: 1, content: x}]\n",
     "colour: extra inputs are not permitted"),
    ("job_id: j\nphase: 2\nkind: tactical\nstatus: running\ntodos: [{id: 1, content: x, status: in_progress},"
     " {id: 2, content: y, status: in_progress}]\n", "more than one todo is in_progress"),
]


@pytest.mark.parametrize(("text", "message"), BROKEN_STATES)
def test_a_state_file_that_does_not_validate_is_one_clear_error(project: Path, text: str, message: str) -> None:
    directory = project / ".anvil" / "jobs" / "j"
    directory.mkdir(parents=True)
    (directory / "state.yaml").write_text(text)
    with pytest.raises(JobError) as caught:
        PhasedWorkflow.open(project, directory, SETTINGS)
    assert message in str(caught.value) and ".anvil/jobs/j/state.yaml" in str(caught.value)


def test_a_directory_without_a_state_file_or_no_directory_is_not_a_job(project: Path) -> None:
    with pytest.raises(JobError, match="the directory does not exist"):
        PhasedWorkflow.open(project, project / ".anvil" / "jobs" / "nope", SETTINGS)
    (project / ".anvil" / "jobs" / "empty").mkdir(parents=True)
    with pytest.raises(JobError, match=r"is not a phased job: it has no state\.yaml"):
        PhasedWorkflow.open(project, project / ".anvil" / "jobs" / "empty", SETTINGS)


def test_job_files_are_read_and_written_without_following_links(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    files = JobFiles(project, project / ".anvil" / "jobs" / "j")
    files.write("workspace.md", "memory\n")
    assert files.read("workspace.md") == "memory\n" and files.read("missing.md") is None
    os.symlink(outside, files.dir / "todos.yaml")
    with pytest.raises(JobError, match="symbolic link"):
        files.read("todos.yaml")
    files.write("todos.yaml", "todos: []\n")  # replaces the link itself
    assert outside.read_text() == "secret\n"
    assert not (files.dir / "todos.yaml").is_symlink() and files.read("todos.yaml") == "todos: []\n"
    os.symlink(outside, files.dir / "link.md")
    files.remove("link.md")
    assert outside.exists() and not (files.dir / "link.md").exists()


def test_a_job_directory_swapped_for_a_link_is_refused(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".anvil" / "jobs").mkdir(parents=True)
    os.symlink(elsewhere, project / ".anvil" / "jobs" / "j")
    with pytest.raises(JobError, match="symbolic link"):
        JobFiles(project, project / ".anvil" / "jobs" / "j").write("state.yaml", "x")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(("jobs_dir", "problem"), [
    ("../elsewhere", "is outside the project"),
    ("/tmp", "is outside the project"),
    (".git/jobs", "git's own files"),
    (".anvil/hooks", "anvil's own configuration"),
    (".anvil/agents/jobs", "anvil's own configuration"),
])
def test_the_jobs_directory_must_be_work_files_inside_the_project(project: Path, jobs_dir: str, problem: str) -> None:
    with pytest.raises(JobError, match=problem):
        jobs_root(project, jobs_dir, [project.parent / "config"], project.parent / "data")


@pytest.mark.parametrize("jobs_dir", [".anvil/jobs", "work/jobs", "."])
def test_ordinary_jobs_directories_are_fine(project: Path, jobs_dir: str) -> None:
    root = jobs_root(project, jobs_dir, [project.parent / "config"], project.parent / "data")
    assert root == project or root.is_relative_to(project)


@pytest.mark.parametrize("job_id", ["", "..", "a/b", ".hidden", "x\\y"])
def test_a_job_id_is_a_plain_name(project: Path, job_id: str) -> None:
    with pytest.raises(JobError, match="is not a job id"):
        job_directory(project / ".anvil" / "jobs", job_id)


@pytest.mark.parametrize("job_id", ["hooks", "agents"])
def test_a_job_id_that_names_anvils_configuration_is_refused(project: Path, job_id: str) -> None:
    with pytest.raises(JobError, match="cannot hold a job: it is anvil's own configuration"):
        PhasedWorkflow.open(project, job_directory(project / ".anvil", job_id), SETTINGS)
