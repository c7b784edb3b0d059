"""The tools driven by a model through litellm's real path (the scripted server), as `anvil -p` runs them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_model_reads_edits_searches_runs_and_plans(project: Path, server: ScriptedOpenAIServer) -> None:
    (project / "app.py").write_text("def greet(name):\n\treturn 'hello ' + name\n")
    server.add(
        call("todo_write", todos=[{"content": "Capitalise the greeting", "status": "in_progress"}]),
        call("read_file", path="app.py"),
        # The model writes spaces where the file has a tab: the indentation step finds it and keeps the tab.
        call("edit_file", path="app.py", old_string="def greet(name):\n    return 'hello ' + name",
             new_string="def greet(name):\n    return 'Hello ' + name"),
        call("grep", pattern="Hello", output_mode="content"),
        call("run_command", command="python3 -c 'import app; print(app.greet(\"Ada\"))'"),
        call("todo_write", todos=[{"content": "Capitalise the greeting", "status": "completed"}]),
        {"text": "Capitalised the greeting in `app.py`."},
    )
    result = subprocess.run(anvil_command("-p", "capitalise the greeting", "--auto-approve", "--output-format",
                                          "stream-json", "--model", "openai/scripted", "--api-base", server.url),
                            cwd=project, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (project / "app.py").read_text() == "def greet(name):\n\treturn 'Hello ' + name\n"
    events = [json.loads(line) for line in result.stdout.splitlines()]
    results = {e["name"]: e for e in events if e["type"] == "tool_result"}
    assert all(e["ok"] for e in results.values()), [e["output"] for e in results.values() if not e["ok"]]
    assert "indentation" in results["edit_file"]["output"]
    assert results["edit_file"]["diff"] and "+\treturn 'Hello ' + name" in results["edit_file"]["diff"]
    assert "app.py:2:" in results["grep"]["output"]
    assert "Hello Ada" in results["run_command"]["output"]
    todos = [e["todos"] for e in events if e["type"] == "todos_changed"]
    assert todos[-1] == [{"content": "Capitalise the greeting", "status": "completed", "active_form": None}]
    # What the model read back: the numbered file, then the edit's result.
    tool_messages = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "\tdef greet(name):" in tool_messages[1]


def test_edit_without_read_is_refused_and_explained(project: Path, server: ScriptedOpenAIServer) -> None:
    (project / "app.py").write_text("x = 1\n")
    server.add(call("edit_file", path="app.py", old_string="x = 1", new_string="x = 2"), {"text": "ok"})
    result = subprocess.run(anvil_command("-p", "edit", "--model", "openai/scripted", "--api-base", server.url),
                            cwd=project, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert (project / "app.py").read_text() == "x = 1\n"
    feedback = server.requests[-1]["messages"][-1]["content"]
    assert "read_file" in feedback
