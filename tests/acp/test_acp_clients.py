"""Clients nobody here wrote, and the rule that only JSON-RPC reaches stdout."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, anvil_command
from tests.support.openai_server import ScriptedOpenAIServer

EXAMPLE_CLIENT = REPO / "tests" / "support" / "acp_sdk_examples" / "client.py"
#: examples/client.py of agent-client-protocol 0.12.1 as published
EXAMPLE_SHA256 = "886f5ed5ad8cbd74faa236fce22b7f8cdd7493359119c7d888fc0be5b624f581"


def test_the_sdks_example_client_runs_a_prompt(project: Path, server: ScriptedOpenAIServer) -> None:
    assert hashlib.sha256(EXAMPLE_CLIENT.read_bytes()).hexdigest() == EXAMPLE_SHA256
    server.add({"text": "Let me check.", "tool_calls": [{"id": "c1", "name": "run_command",
                                                          "arguments": {"command": "touch made-by-model"}}]},
               {"text": "This is a tiny demo project."})
    # As its README says: python examples/client.py AGENT_PROGRAM [ARGS...]
    done = subprocess.run([sys.executable, str(EXAMPLE_CLIENT), *anvil_command("acp", "--model", "openai/scripted",
                                                                               "--api-base", server.url)],
                          cwd=project, input="what is this project?\n", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = "".join(line.removeprefix("| Agent: ") for line in done.stdout.replace("> ", "").splitlines()
                   if line.startswith("| Agent: "))
    assert "Let me check." in said and said.endswith("This is a tiny demo project.")
    assert "Traceback" not in done.stderr
    # It answers no permission request (method not found): the command was denied, not run, and the turn went on.
    told = next(m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool")
    assert "could not ask" in told and not (project / "made-by-model").exists()


NOISY = '''
import os
import anvil.runtime

_open = anvil.runtime.open_runtime


def noisy(*args, **kwargs):
    print("a dependency printing to stdout")
    os.write(1, b"bytes written straight to descriptor 1\\n")
    return _open(*args, **kwargs)


anvil.runtime.open_runtime = noisy
'''


def test_nothing_but_json_rpc_reaches_stdout(project: Path, server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    """A dependency that prints while a session opens (print and a raw write to fd 1) ends up on stderr."""
    (tmp_path / "sitecustomize.py").write_text(NOISY)
    server.add({"text": "Hello from the model."})
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(project), "mcpServers": []}},
    ]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen(anvil_command("acp", "--model", "openai/scripted", "--api-base", server.url), cwd=project,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[bytes] = []
    for request in requests:
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        lines.append(proc.stdout.readline())
    session = json.loads(lines[-1])["result"]["sessionId"]
    prompt = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
              "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}
    proc.stdin.write(json.dumps(prompt).encode() + b"\n")
    proc.stdin.flush()
    while not (lines and json.loads(lines[-1]).get("id") == 2):
        lines.append(proc.stdout.readline())
    rest, stderr = proc.communicate(timeout=60)
    lines += rest.splitlines(keepends=True)
    messages = [json.loads(line) for line in lines if line.strip()]  # every line parses: nothing else is there
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    assert messages[-1]["result"]["stopReason"] == "end_turn"
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(chunks) == "Hello from the model."
    assert b"a dependency printing to stdout" in stderr and b"bytes written straight to descriptor 1" in stderr
    assert proc.returncode == 0
