"""MCP in `anvil -p`, end to end through litellm and the scripted model server: a .mcp.json written for another
tool, @server:uri in the prompt, progress in stream-json, and an image shown to a model that takes images."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from anvil.config import user_config_path
from tests.conftest import anvil_command
from tests.support.mcp_servers import DEMO_SERVER
from tests.support.openai_server import ScriptedOpenAIServer


def run_anvil(project: Path, server: ScriptedOpenAIServer, prompt: str, *extra: str,
              model: str = "openai/scripted") -> subprocess.CompletedProcess[str]:
    args = anvil_command("-p", prompt, "--model", model, "--api-base", server.url, *extra)
    return subprocess.run(args, cwd=project, capture_output=True, text=True, timeout=120, env=dict(os.environ))


def user_config(text: str) -> None:
    user_config_path().parent.mkdir(parents=True, exist_ok=True)
    user_config_path().write_text(text)


def demo_in_user_config() -> None:
    user_config(f'[mcp_servers.demo]\ncommand = "{sys.executable}"\nargs = ["{DEMO_SERVER}"]\n')


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_a_dot_mcp_json_from_another_tool_just_works(project: Path, server: ScriptedOpenAIServer) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "demo": {"type": "stdio", "command": sys.executable, "args": [str(DEMO_SERVER)], "env": {}}}}))
    user_config("import_mcp_json = true\n")
    server.add(call("mcp__demo__add", a=2, b=3), {"text": "5"})
    result = run_anvil(project, server, "add 2 and 3", "--auto-approve")
    assert "not trusted" in result.stderr and ".mcp.json" in result.stderr  # a cloned repo's servers wait
    assert "Unknown tool 'mcp__demo__add'" in server.requests[-1]["messages"][-1]["content"]

    server.add(call("mcp__demo__add", a=2, b=3), {"text": "5"})
    result = run_anvil(project, server, "add 2 and 3", "--auto-approve", "--trust")
    assert result.returncode == 0, result.stderr
    last = server.requests[-1]["messages"][-1]
    assert (last["role"], last["content"]) == ("tool", "5")


def test_a_resource_mention_is_attached_in_print_mode(project: Path, server: ScriptedOpenAIServer) -> None:
    demo_in_user_config()
    server.add({"text": "It says hello."})
    result = run_anvil(project, server, "What does @demo:memo://greeting say?")
    assert result.returncode == 0, result.stderr
    sent = server.requests[0]["messages"][-1]["content"]
    assert sent.startswith("What does @demo:memo://greeting say?\n\n<resource server=\"demo\" uri=\"memo://greeting\">")
    assert "hello from the resource" in sent


def test_progress_and_instructions_in_stream_json(project: Path, server: ScriptedOpenAIServer) -> None:
    demo_in_user_config()
    server.add(call("mcp__demo__count", steps=2), {"text": "counted"})
    result = run_anvil(project, server, "count", "--auto-approve", "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    progress = [e for e in events if e["type"] == "tool_progress"]
    assert [(e["progress"], e["total"], e["message"]) for e in progress] == [(1, 2, "step 1"), (2, 2, "step 2")]
    system = server.requests[0]["messages"][0]["content"]
    assert "# Instructions from MCP servers" in system and "Use add for sums" in system


def test_an_image_reaches_a_model_that_takes_images(project: Path, server: ScriptedOpenAIServer) -> None:
    demo_in_user_config()
    server.add(call("mcp__demo__picture"), {"text": "A green pixel."})
    result = run_anvil(project, server, "what is in the picture?", "--auto-approve", model="openai/gpt-4o")
    assert result.returncode == 0, result.stderr
    last = server.requests[-1]["messages"][-1]
    assert last["role"] == "user"
    urls = [part["image_url"]["url"] for part in last["content"] if part["type"] == "image_url"]
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,iVBORw0KGgo")


def test_a_filesystem_like_mcp_tool_never_writes_a_protected_file_unasked(project: Path,
                                                                        server: ScriptedOpenAIServer) -> None:
    """Auto-approve and a rule allowing every demo tool: the tool still writes an ordinary file, but a path it names
    that is protected (git's config here) is refused headless, as anvil's own write_file refuses it."""
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    demo_in_user_config()
    with user_config_path().open("a") as config:
        config.write('[permissions]\nallow = ["mcp__demo__*(*)"]\n')
    server.add(call("mcp__demo__write_file", path="notes.txt", content="fine\n"),
               call("mcp__demo__write_file", path=".git/config", content="[core]\n\tfsmonitor = evil\n"),
               {"text": "done"})
    result = run_anvil(project, server, "write", "--auto-approve")
    assert result.returncode == 0, result.stderr
    assert (project / "notes.txt").read_text() == "fine\n"
    assert (project / ".git" / "config").read_text() == "[core]\n"
    refusal = server.requests[-1]["messages"][-1]["content"]
    assert "git's own files: .git/config" in refusal and "mcp__demo__write_file(path:.git/config)" in refusal
    assert "Refused a mcp__demo__write_file call" in result.stderr
