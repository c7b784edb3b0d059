"""The pieces wired into the loop and the runtime, driven as a front end drives them."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from anvil.config import load_settings
from anvil.core.events import (
    ApprovalDecision,
    ApprovalRequested,
    ErrorEvent,
    QuestionAsked,
    ToolCallStarted,
    ToolResultEvent,
    TurnEnded,
)
from anvil.core.model.scripted import ScriptedModel
from anvil.core.subagents.task_tool import SubagentEvent
from anvil.runtime import Runtime, open_runtime
from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def drive(runtime: Runtime, prompt: str, answers: dict[type, Any] | None = None) -> list[Any]:
    """Run one turn, answering request events as a front end would."""
    events = []
    async for event in runtime.agent.run_turn(prompt):
        for kind, answer in (answers or {}).items():
            if isinstance(event, kind):
                event.answer(answer)  # type: ignore[attr-defined]
        events.append(event)
    return events


def runtime_for(project: Path, turns: list[dict[str, Any]], **settings: Any) -> Runtime:
    return open_runtime(load_settings(project, settings, environ={}), project, model=ScriptedModel(turns))


def tool_results(events: list[Any]) -> dict[str, ToolResultEvent]:
    return {e.name: e for e in events if isinstance(e, ToolResultEvent)}


async def test_ask_user_reaches_the_person_while_the_tool_waits(project: Path) -> None:
    runtime = runtime_for(project, [call("ask_user", question="Which database?", options=["sqlite", "postgres"]),
                                    {"text": "Going with it."}])
    events = await drive(runtime, "set up storage", {QuestionAsked: "postgres"})
    asked = next(e for e in events if isinstance(e, QuestionAsked))
    assert asked.question == "Which database?" and asked.options == ("sqlite", "postgres")
    assert "postgres" in tool_results(events)["ask_user"].output
    await runtime.close()


async def test_headless_ask_user_tells_the_model_to_decide(project: Path) -> None:
    runtime = open_runtime(load_settings(project, {}, environ={}), project, interactive=False,
                           model=ScriptedModel([call("ask_user", question="Which?"), {"text": "ok"}]))
    events = await drive(runtime, "go")
    assert "Decide yourself" in tool_results(events)["ask_user"].output
    await runtime.close()


def test_headless_plan_mode_prints_the_plan(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add(call("read_file", path="README.md"),
               call("write_file", path="new.txt", content="x"),
               call("exit_plan_mode", plan="1. Add a CLI flag\n2. Test it"),
               {"text": "should not be needed"})
    result = subprocess.run(anvil_command("-p", "plan it", "--mode", "plan", "--model", "openai/scripted",
                                          "--api-base", server.url, "--output-format", "json"),
                            cwd=project, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["plan"] == "1. Add a CLI flag\n2. Test it" and data["stop_reason"] == "plan"
    assert "nothing was changed" in result.stderr
    assert not (project / "new.txt").exists()
    refused = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"][1]
    assert "plan mode" in refused


async def test_undo_after_an_edit_turn(project: Path) -> None:
    (project / "app.py").write_text("x = 1\n")
    runtime = runtime_for(project, [call("read_file", path="app.py"),
                                    call("edit_file", path="app.py", old_string="x = 1", new_string="x = 2"),
                                    call("write_file", path="made.py", content="y = 1\n"), {"text": "done"}])
    await drive(runtime, "change it")
    assert (project / "app.py").read_text() == "x = 2\n" and (project / "made.py").exists()
    assert runtime.undo is not None
    (project / "unrelated.txt").write_text("not anvil's")
    report = runtime.undo.undo_last()
    assert report.ok, report.summary()
    assert (project / "app.py").read_text() == "x = 1\n" and not (project / "made.py").exists()
    assert (project / "unrelated.txt").exists()
    await runtime.close()


async def test_undo_refuses_to_overwrite_outside_changes(project: Path) -> None:
    (project / "app.py").write_text("x = 1\n")
    runtime = runtime_for(project, [call("read_file", path="app.py"),
                                    call("edit_file", path="app.py", old_string="x = 1", new_string="x = 2"),
                                    {"text": "done"}])
    await drive(runtime, "change it")
    (project / "app.py").write_text("x = 3  # changed by the person\n")
    assert runtime.undo is not None
    report = runtime.undo.undo_last()
    assert not report.applied and report.conflicts
    assert (project / "app.py").read_text() == "x = 3  # changed by the person\n"
    await runtime.close()


async def test_rewind_conversation_survives_resume(project: Path) -> None:
    runtime = runtime_for(project, [{"text": "one"}, {"text": "two"}])
    await drive(runtime, "first")
    await drive(runtime, "second")
    assert runtime.agent.rewind_conversation(2)
    assert [m.get("content") for m in runtime.agent.messages[1:]] == ["first", "one"]
    session_id = runtime.session.id
    await runtime.close()
    resumed = open_runtime(load_settings(project, {}, environ={}), project, resume=session_id,
                           model=ScriptedModel([]))
    assert [m.get("content") for m in resumed.agent.messages[1:]] == ["first", "one"]
    await resumed.close()


async def test_hooks_block_a_tool_and_add_context(project: Path) -> None:
    hooks = project / "hooks"
    hooks.mkdir()
    (hooks / "block.sh").write_text("#!/bin/sh\necho 'no edits to settings.py' >&2\nexit 2\n")
    (hooks / "context.sh").write_text("#!/bin/sh\necho 'The team uses tabs.'\n")
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text(
        '[[hooks.pre_tool_use]]\nmatcher = "write_file"\ncommand = "sh hooks/block.sh"\n'
        '[[hooks.user_prompt_submit]]\ncommand = "sh hooks/context.sh"\n')
    model = ScriptedModel([call("write_file", path="settings.py", content="x"), {"text": "ok"}])
    runtime = open_runtime(load_settings(project, {}, environ={}, trust=True), project, model=model)
    events = await drive(runtime, "make settings")
    result = tool_results(events)["write_file"]
    assert not result.ok and "no edits to settings.py" in result.output
    assert not (project / "settings.py").exists()
    assert "The team uses tabs." in model.calls[0][-1]["content"]
    await runtime.close()


async def test_a_blocked_prompt_never_reaches_the_model(project: Path) -> None:
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text(
        "[[hooks.user_prompt_submit]]\ncommand = \"echo 'contains a secret' >&2; exit 2\"\n")
    model = ScriptedModel([{"text": "never"}])
    runtime = open_runtime(load_settings(project, {}, environ={}, trust=True), project, model=model)
    events = await drive(runtime, "my password is hunter2")
    assert any(isinstance(e, ErrorEvent) and "contains a secret" in e.message for e in events)
    assert model.calls == [] and all("hunter2" not in str(m) for m in runtime.agent.messages)
    await runtime.close()


async def test_subagent_progress_arrives_while_it_runs_and_costs_count(project: Path) -> None:
    turns = [call("task", description="look around", prompt="List the files", agent_type="explore"),
             call("list_files"), {"text": "There is a README.", "usage": {"prompt_tokens": 100,
                                                                          "completion_tokens": 10}},
             {"text": "The sub-agent found a README."}]
    runtime = runtime_for(project, turns)
    events = await drive(runtime, "explore")
    task_index = next(i for i, e in enumerate(events) if isinstance(e, ToolResultEvent) and e.name == "task")
    nested = [i for i, e in enumerate(events) if isinstance(e, SubagentEvent)]
    assert nested and max(nested) < task_index  # shown as it happens, before the task's result
    assert any(isinstance(events[i].inner, ToolCallStarted) and events[i].inner.name == "list_files"
               for i in nested)
    assert "There is a README." in tool_results(events)["task"].output
    assert runtime.agent.totals["prompt_tokens"] >= 100
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
    await runtime.close()


class _Pages(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b"<html><head><title>Docs</title></head><body><h1>Hello docs</h1><p>Text.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


async def test_web_fetch_asks_per_domain_and_always_allow_sticks(project: Path) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/page"
    try:
        runtime = runtime_for(project, [call("web_fetch", url=url), call("web_fetch", url=url + "2"),
                                        {"text": "read"}])
        decision = ApprovalDecision(True, remember="project", pattern="web_fetch(domain:127.0.0.1)")
        events = await drive(runtime, "read the docs", {ApprovalRequested: decision})
        requests = [e for e in events if isinstance(e, ApprovalRequested)]
        assert len(requests) == 1 and requests[0].suggested_pattern == "web_fetch(domain:127.0.0.1)"
        fetched = [e for e in events if isinstance(e, ToolResultEvent)]
        assert all(e.ok for e in fetched) and "# Hello docs" in fetched[0].output
        assert "web_fetch(domain:127.0.0.1)" in (project / ".anvil" / "permissions.toml").read_text()
        await runtime.close()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_cli_mode_flag_is_validated(project: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "anvil.cli", "-p", "x", "--mode", "yolo"], cwd=project,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "invalid choice" in result.stderr
