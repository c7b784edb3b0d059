"""Phased jobs from the command line, as a person runs them: ``anvil -p --workflow phased``, through litellm to the
local scripted server, in a subprocess; a job killed mid-phase and resumed with ``--resume JOB``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def reply(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls)}


#: phase 1 without knowing the job's directory: todos done, the next phase's todos written with todo_write
STRATEGIC = [reply(call("todo_complete", id=1), call("todo_complete", id=2), call("todo_complete", id=3)),
             reply(call("todo_write", phase="Fix", todos=[{"content": f"step {n}"} for n in range(1, 6)])),
             reply(call("todo_complete", id=4))]
TACTICAL = [reply(*(call("todo_complete", id=n) for n in range(1, 6)))]
ENDING = [reply(call("todo_complete", id=1), call("todo_complete", id=2), call("todo_complete", id=3)),
          reply(call("job_complete", summary="All done."))]


def anvil(project: Path, server: ScriptedOpenAIServer | None, *args: str,
          **options: Any) -> subprocess.CompletedProcess[str]:
    base = ["--model", "openai/scripted", "--api-base", server.url] if server else []
    return subprocess.run(anvil_command(*args, *base), cwd=project, capture_output=True, text=True, timeout=120,
                          **options)


def the_job(project: Path) -> Path:
    jobs = list((project / ".anvil" / "jobs").iterdir())
    assert len(jobs) == 1, jobs
    return jobs[0]


def test_a_prompt_after_the_options_is_the_jobs_instructions_and_the_summary_the_answer(
        project: Path, server: ScriptedOpenAIServer) -> None:
    server.add(*STRATEGIC, *TACTICAL, *ENDING)
    result = anvil(project, server, "-p", "--workflow", "phased", "--auto-approve", "Tidy the project.")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "All done.\n"
    job = the_job(project)
    lines = result.stderr.splitlines()
    assert lines[0] == (f"anvil: Job {job.name} started: Phase 1 · strategic, 4 todos (files in "
                        f".anvil/jobs/{job.name}/).")
    assert "anvil: Phase 2 · tactical: Fix. 5 todos loaded from todos.yaml." in lines
    assert "anvil: Phase 2 (tactical) done: 5 todos archived to archive/phase_2.yaml." in lines
    assert lines[-1] == f"anvil: Job {job.name} complete after 3 phases (.anvil/jobs/{job.name}/): All done."
    assert (job / "instructions.md").read_text() == "Tidy the project.\n"
    assert sorted(p.name for p in job.rglob("*")) == ["archive", "instructions.md", "phase_2.yaml", "state.yaml"]


def test_instructions_from_a_file_and_the_job_in_the_json_result(project: Path, server: ScriptedOpenAIServer) -> None:
    (project / "job.md").write_text("# The job\n\nTidy the project.\n")
    server.add(*STRATEGIC, *TACTICAL, *ENDING)
    result = anvil(project, server, "-p", "--workflow", "phased", "--instructions", "job.md", "--output-format",
                   "json")
    assert result.returncode == 0, result.stderr
    job = the_job(project)
    answer = json.loads(result.stdout)
    assert answer["job"] == {"workflow": "phased", "job_id": job.name, "job_dir": f".anvil/jobs/{job.name}",
                             "phase": 3, "kind": "strategic", "status": "complete", "summary": "All done."}
    assert answer["result"] == "All done." and answer["stop_reason"] == "done"
    assert (job / "instructions.md").read_text() == "# The job\n\nTidy the project.\n"
    assert server.requests[0]["messages"][0]["content"].count("Tidy the project.") == 1


def test_stream_json_carries_the_phase_events(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add(*STRATEGIC, *TACTICAL, *ENDING)
    result = anvil(project, server, "-p", "Tidy.", "--workflow", "phased", "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["type"] for e in events if e["type"] in {"phase_started", "phase_ended", "transition_rejected",
                                                        "job_finished"}]
    assert kinds == ["phase_started", "phase_ended", "phase_started", "phase_ended", "phase_started", "phase_ended",
                     "job_finished"]
    started = next(e for e in events if e["type"] == "phase_started" and e["phase"] == 2)
    assert started["kind"] == "tactical" and started["title"] == "Fix" and len(started["todos"]) == 5
    assert started["todos"][0] == {"content": "1. step 1", "status": "in_progress", "active_form": None}


def test_a_job_that_stops_short_exits_1_and_says_how_to_go_on(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add(*[{"text": "I am not sure."}] * 4)
    result = anvil(project, server, "-p", "--workflow", "phased", "Tidy.")
    job = the_job(project)
    assert result.returncode == 1
    assert (f"anvil: Job {job.name} paused in phase 1 (strategic), todo 1 of 4. Send a message to go on (later: "
            f"`anvil -c`, or `anvil --workflow phased --resume {job.name}`)") in result.stderr
    assert yaml.safe_load((job / "state.yaml").read_text())["status"] == "paused"


def test_workflow_flags_used_wrongly_are_one_line_each(project: Path) -> None:
    cases = [
        (["-p", "x", "--instructions", "job.md"], 2, "--instructions goes with --workflow NAME"),
        (["-p", "--workflow", "phased", "--instructions", "missing.md"], 2, "cannot read --instructions missing.md"),
        (["-p", "x", "--workflow", "phased", "-c"], 2, "-c resumes the newest session and the job it worked on"),
        (["-p", "x", "--workflow", "nope"], 1, "There is no workflow called 'nope'; the workflows are: phased, tdd."),
        (["-p", "--workflow", "phased", "--resume", "20990101-000000-abcd"], 1,
         "No job at .anvil/jobs/20990101-000000-abcd: the directory does not exist."),
        (["-p", "--workflow", "phased", "--resume", "../x"], 1, "'../x' is not a job id"),
        (["-p", "--workflow", "phased"], 2, "the prompt is empty"),
    ]
    for args, code, message in cases:
        result = anvil(project, None, *args, "--model", "scripted")
        assert result.returncode == code, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_a_job_killed_mid_phase_goes_on_from_the_same_phase_and_todo(project: Path) -> None:
    first = ScriptedOpenAIServer([*STRATEGIC, reply(call("todo_complete", id=1)),
                                  reply(call("run_command", command="sleep 60"))]).start()
    try:
        process = subprocess.Popen(anvil_command("-p", "--workflow", "phased", "--auto-approve", "Tidy.", "--model",
                                                 "openai/scripted", "--api-base", first.url),
                                   cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        deadline = time.monotonic() + 60
        state: dict[str, Any] = {}
        while time.monotonic() < deadline and not (state.get("phase") == 2 and state.get("iterations", 0) >= 5):
            time.sleep(0.1)
            jobs = project / ".anvil" / "jobs"
            files = list(jobs.glob("*/state.yaml")) if jobs.is_dir() else []
            state = (yaml.safe_load(files[0].read_text()) or {}) if files else {}
        assert state.get("phase") == 2, state
        time.sleep(0.5)  # the sleep is running now
        os.killpg(process.pid, signal.SIGKILL)  # no goodbye: the state is what the files say
        process.wait(timeout=10)
    finally:
        first.stop()
    job = the_job(project)
    killed = yaml.safe_load((job / "state.yaml").read_text())
    assert (killed["phase"], killed["kind"], killed["status"]) == (2, "tactical", "running")
    assert [t["status"] for t in killed["todos"]] == ["completed", "in_progress", "pending", "pending", "pending"]

    with ScriptedOpenAIServer([reply(*(call("todo_complete", id=n) for n in range(2, 6))), *ENDING]) as second:
        result = anvil(project, second, "-p", "--workflow", "phased", "--resume", job.name, "--auto-approve")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "All done.\n"
        assert f"anvil: Job {job.name} resumed in Phase 2 · tactical: Fix (1/5 todos done" in result.stderr
        resumed = second.requests[0]["messages"]
        assert f"# Phased job {job.name}: phase 2 of at most 30, tactical" in resumed[0]["content"]
        assert resumed[1]["content"].startswith("Phase 2 (tactical): Fix.")  # the phase's own conversation, resumed
        assert resumed[-2]["content"] == "No result: anvil stopped before this call finished."
        assert resumed[-1]["content"].startswith("[anvil] The job goes on in phase 2 (tactical). Todo 2 is in "
                                                 "progress.")
        assert {t["function"]["name"] for t in second.requests[0]["tools"]} >= {"run_command", "todo_complete"}
    final = yaml.safe_load((job / "state.yaml").read_text())
    assert (final["status"], final["phase"]) == ("complete", 3)
