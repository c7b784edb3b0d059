"""Task runs as a person runs them: `anvil -p --task FILE`, `anvil answer`, `-c --answer`, `anvil tasks`, through
litellm against the local scripted server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer

QUESTION = {"question": "English or French?", "options": ["English", "French"]}


def anvil(project: Path, server: ScriptedOpenAIServer | None, *args: str) -> subprocess.CompletedProcess[str]:
    model = ["--model", "openai/scripted", "--api-base", server.url] if server else []
    return subprocess.run(anvil_command(*args, *model), cwd=project, capture_output=True, text=True, timeout=120)


def task_file(project: Path, header: str = "", body: str = "Write greeting.txt with a greeting.") -> Path:
    path = project / "tasks" / "greet.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"---\ntitle: Greet\n{header}---\n{body}\n")
    return path


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def system_prompt(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def test_the_task_fills_the_system_prompt_and_verification_decides(project: Path,
                                                                  server: ScriptedOpenAIServer) -> None:
    (project / "tasks").mkdir()
    (project / "tasks" / "prd.md").write_text("\n".join(f"Rule {n}: greet politely." for n in range(300)) + "\nEND\n")
    task_file(project, 'prd: prd.md\nverify: "grep -q hello greeting.txt"\nmax_iterations: 7\n')
    server.add({"text": "Outline: one file, greeting.txt.", **write("greeting.txt", "hello\n")}, {"text": "Done."})
    result = subprocess.run(anvil_command("-p", "--task", "tasks/greet.md", "--output-format", "json", "--model",
                                          "openai/scripted", "--api-base", server.url), cwd=project,
                            capture_output=True, text=True, timeout=120, env=_env(ANVIL_TASK_PRD_CHARS="1000"))
    assert result.returncode == 0, result.stderr
    system = system_prompt(server.requests[0])
    assert "# Task\n\n**Title**: Greet\n\nWrite greeting.txt with a greeting." in system
    assert "## Requirements (PRD: tasks/prd.md)\n\nRule 0: greet politely." in system and "END" not in system
    assert "[The PRD is cut here:" in system and "(task_prd_chars); read tasks/prd.md for the rest.]" in system
    assert "## Before your first change" in system  # nearly empty project: an intent preview
    assert server.requests[0]["messages"][-1]["content"].startswith('Carry out the task "Greet"')
    data = json.loads(result.stdout)
    assert data["stop_reason"] == "done" and data["task"]["status"] == "done"
    assert data["task"]["plan"] == "Outline: one file, greeting.txt."
    verification = data["verification"]
    assert verification["passed"] and verification["checks"][0]["command"] == "grep -q hello greeting.txt"
    assert "intent preview" not in result.stderr  # json: the plan is in the result, not on stderr


def _env(**extra: str) -> dict[str, str]:
    import os

    return {**os.environ, **extra}


def test_a_failing_verification_fails_the_task(project: Path, server: ScriptedOpenAIServer) -> None:
    task_file(project, 'verify: "grep -q bonjour greeting.txt"\ncomplexity: low\n')
    server.add(write("greeting.txt", "hello\n"), {"text": "Done."}, {"text": "Still done."},
               {"text": "Really."}, {"text": "Yes."}, {"text": "."}, {"text": "."})
    result = anvil(project, server, "-p", "--task", "tasks/greet.md")
    assert result.returncode == 1
    assert 'Task "Greet": failed.' in result.stderr and "Verification still failing" in result.stderr
    listing = anvil(project, None, "tasks")
    assert listing.stdout.splitlines()[1].startswith("failed ")


def test_a_question_blocks_the_run_and_anvil_answer_resumes_it(project: Path, server: ScriptedOpenAIServer) -> None:
    task_file(project, 'verify: "grep -q bonjour greeting.txt"\n')
    server.add({"text": "Which language is meant?", "tool_calls": [{"name": "ask_user", "arguments": QUESTION}]})
    blocked = anvil(project, server, "-p", "--task", "tasks/greet.md")
    assert blocked.returncode == 4, blocked.stderr
    assert blocked.stdout == "English or French? (options: English; French)\n"  # the question is the output
    assert 'Answer with anvil answer tasks/greet.md "your answer".' in blocked.stderr
    assert "anvil: plan (the model's intent preview; not enforced):\nWhich language is meant?\n" in blocked.stderr
    listing = anvil(project, None, "tasks")
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert lines[1].startswith("blocked ") and lines[1].endswith("Greet (tasks/greet.md)")
    assert "question: English or French?" in lines[2] and 'anvil answer tasks/greet.md "your answer"' in lines[3]

    server.add(write("greeting.txt", "bonjour\n"), {"text": "Wrote it in French."})
    answered = anvil(project, server, "answer", "tasks/greet.md", "French, please")
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "Wrote it in French.\n"
    resumed = server.requests[1]["messages"]
    assert "## Previous clarifications" in resumed[0]["content"]
    assert "Q: English or French? (options: English; French)\nA: French, please" in resumed[0]["content"]
    assert any(m.get("tool_calls") for m in resumed if m["role"] == "assistant")  # the same conversation, resumed
    assert resumed[-1]["content"].startswith('The person answered your question "English or French?')
    assert "French, please" in resumed[-1]["content"]
    assert "## Before your first change" not in resumed[0]["content"]  # the outline was asked for once
    assert anvil(project, None, "tasks").stdout.splitlines()[1].startswith("done ")


def test_json_says_blocked_with_the_blocker(project: Path, server: ScriptedOpenAIServer) -> None:
    task_file(project)
    server.add({"text": "I cannot proceed: the task needs the API key for the greeting service, which I do not "
                        "have. Where do I find it?"})
    result = anvil(project, server, "-p", "--task", "tasks/greet.md", "--output-format", "json")
    assert result.returncode == 4
    data = json.loads(result.stdout)
    assert data["stop_reason"] == "blocked" and data["is_error"] is True
    assert data["result"] == data["task"]["blocker"]["question"]  # the question is what the run leaves
    blocker = data["task"]["blocker"]
    assert blocker["source"] == "stated" and "API key" in blocker["question"] and blocker["answer"] is None
    assert data["task"]["status"] == "blocked"


def test_c_answer_resumes_the_newest_task_session(project: Path, server: ScriptedOpenAIServer) -> None:
    task_file(project, 'verify: "test -f greeting.txt"\n')
    server.add({"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which file name?"}}]})
    assert anvil(project, server, "-p", "--task", "tasks/greet.md").returncode == 4
    server.add(write("greeting.txt", "hi\n"), {"text": "Done."})
    result = anvil(project, server, "-c", "--answer", "greeting.txt is right")
    assert result.returncode == 0, result.stderr
    assert "A: greeting.txt is right" in system_prompt(server.requests[1])


def test_answers_that_cannot_be_used_are_one_line(project: Path, server: ScriptedOpenAIServer) -> None:
    task_file(project)
    nothing_open = anvil(project, None, "answer", "tasks/greet.md", "yes")
    assert nothing_open.returncode == 2 and nothing_open.stderr.count("\n") == 1
    assert "has no open question to answer (status: never run here)" in nothing_open.stderr
    assert anvil(project, None, "answer", "tasks/greet.md").returncode == 2  # no answer given
    server.add({"text": "Hello."})
    assert anvil(project, server, "-p", "hi").returncode == 0
    not_a_task = anvil(project, None, "-c", "--answer", "yes")
    assert not_a_task.returncode == 2 and "is not a task run's" in not_a_task.stderr


def test_task_files_that_cannot_run_are_one_line(project: Path) -> None:
    task_file(project, "workflow: waterfall\n")
    workflow = anvil(project, None, "-p", "--task", "tasks/greet.md")
    assert workflow.returncode == 2 and workflow.stderr.count("\n") == 1
    assert "`workflow:` asks for workflow 'waterfall', which this anvil does not have (it has: none, phased" \
        in workflow.stderr
    task_file(project, "verfy: x\n")
    typo = anvil(project, None, "-p", "--task", "tasks/greet.md")
    assert typo.returncode == 2 and "unknown key 'verfy'" in typo.stderr and "Traceback" not in typo.stderr
    missing = anvil(project, None, "-p", "--task", "nowhere.md")
    assert missing.returncode == 2 and "No task file at nowhere.md" in missing.stderr


def test_the_person_s_words_join_the_task_message(project: Path, server: ScriptedOpenAIServer) -> None:
    task_file(project, "complexity: low\n")
    server.add({"text": "Done."})
    assert anvil(project, server, "-p", "use a formal tone", "--task", "tasks/greet.md").returncode == 0
    assert server.requests[0]["messages"][-1]["content"].endswith("The person adds: use a formal tone")


def test_no_tasks_yet(project: Path) -> None:
    listing = anvil(project, None, "tasks")
    assert listing.returncode == 0 and listing.stdout.startswith("No tasks run yet in")


def test_a_task_in_a_workflow_runs_as_the_tasks_job(project: Path, server: ScriptedOpenAIServer) -> None:
    """`workflow: phased` in the task file (or --workflow) starts a job whose instructions are the task, with the
    task layer in the system prompt; the job's end is the run's."""
    task_file(project, "workflow: phased\n")
    done = [{"name": "todo_complete", "arguments": {"id": n}} for n in (1, 2, 3)]
    server.add({"tool_calls": [{"name": "write_file", "arguments": {"path": "greeting.txt", "content": "hello\n"}},
                               *done, {"name": "job_complete", "arguments": {"summary": "Greeted."}}]})
    result = anvil(project, server, "-p", "--task", "tasks/greet.md", "--output-format", "json", "--auto-approve")
    assert result.returncode == 0, result.stderr
    first = server.requests[0]
    assert "# Task\n\n**Title**: Greet" in system_prompt(first)
    assert "job_complete" in {tool["function"]["name"] for tool in first["tools"]}  # a strategic phase's tools
    data = json.loads(result.stdout)
    assert data["job"]["workflow"] == "phased" and data["job"]["status"] == "complete"
    assert data["result"] == "Greeted." and data["task"]["status"] == "done"
    assert (project / "greeting.txt").read_text() == "hello\n"
    unknown = anvil(project, server, "-p", "--task", "tasks/greet.md", "--workflow", "waterfall")
    assert unknown.returncode == 2 and "--workflow asks for workflow 'waterfall'" in unknown.stderr
