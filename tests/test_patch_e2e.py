"""apply_patch end to end: a GPT-5 codex model name, litellm's real path to the scripted server, the runtime that
chooses the tools, the diff events, and /undo.

The model name is ``openai/gpt-5-codex-local``: litellm sends the exact ``gpt-5-codex`` name to OpenAI's
Responses API, which the scripted server does not speak; any name with ``gpt-5`` or ``codex`` chooses the tools
the same way.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from anvil.config import Settings
from anvil.core.events import ToolResultEvent, TurnEnded
from anvil.runtime import open_runtime
from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer

MODEL = "openai/gpt-5-codex-local"
PATCH = """*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: app.py
*** Move to: src/main.py
@@ def greet():
-    print('Hi')
+    print('Hello, world!')
*** Update File: util.py
@@
 def add(a, b):
-    return a+b
+    return a + b
*** Delete File: obsolete.txt
*** End Patch
"""


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def write_project(project: Path) -> dict[str, bytes]:
    (project / "app.py").write_text("def greet():\n    print('Hi')\n")
    (project / "util.py").write_text("def add(a, b):\n    return a+b\n")
    (project / "obsolete.txt").write_text("old\n")
    return {p.name: p.read_bytes() for p in project.iterdir() if p.is_file()}


def script(server: ScriptedOpenAIServer) -> None:
    server.add(call("read_file", path="app.py"), call("read_file", path="util.py"),
               call("read_file", path="obsolete.txt"), call("apply_patch", input=PATCH), {"text": "Patched."})


async def test_a_codex_model_patches_several_files_with_diffs_and_undo(project: Path,
                                                                       server: ScriptedOpenAIServer) -> None:
    before = write_project(project)
    script(server)
    runtime = open_runtime(Settings(model=MODEL, api_base=server.url), project, interactive=False)
    try:
        events = [event async for event in runtime.agent.run_turn("tidy the project")]
        assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
        offered = [tool["function"]["name"] for tool in server.requests[0]["tools"]]
        assert "apply_patch" in offered and "edit_file" not in offered and "multi_edit" not in offered
        result = next(e for e in events if isinstance(e, ToolResultEvent) and e.name == "apply_patch")
        assert result.ok, result.output
        assert result.summary == "Patched 4 files (+3 -3)"
        assert result.diff is not None
        for header in ("diff --git a/hello.txt b/hello.txt", "diff --git a/app.py b/src/main.py",
                       "+    print('Hello, world!')", "+    return a + b", "+++ /dev/null"):
            assert header in result.diff
        assert (project / "src" / "main.py").read_text() == "def greet():\n    print('Hello, world!')\n"
        assert (project / "hello.txt").read_text() == "Hello world\n"
        assert not (project / "app.py").exists() and not (project / "obsolete.txt").exists()
        tool_messages = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
        assert tool_messages[-1].startswith("Applied the patch to 4 files")

        assert runtime.undo is not None
        report = runtime.undo.undo_last()
        assert report.ok, report.summary()
        assert {p.name: p.read_bytes() for p in project.iterdir() if p.is_file()} == before
        assert not (project / "src").exists()
    finally:
        await runtime.close()


def test_other_models_keep_edit_file_and_the_setting_can_offer_both(project: Path) -> None:
    claude = open_runtime(Settings(model="anthropic/claude-sonnet-4-5"), project, interactive=False)
    both = open_runtime(Settings(model="anthropic/claude-sonnet-4-5", edit_tools="both"), project, interactive=False)
    assert "edit_file" in claude.agent.tools.names() and "apply_patch" not in claude.agent.tools.names()
    assert {"edit_file", "multi_edit", "apply_patch"} <= set(both.agent.tools.names())


def test_headless_run_streams_the_patch_result(project: Path, server: ScriptedOpenAIServer) -> None:
    write_project(project)
    script(server)
    result = subprocess.run(anvil_command("-p", "tidy", "--output-format", "stream-json", "--model", MODEL,
                                          "--api-base", server.url), cwd=project, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    patched = next(e for e in events if e["type"] == "tool_result" and e["name"] == "apply_patch")
    assert patched["ok"] and "diff --git a/app.py b/src/main.py" in patched["diff"]
    assert (project / "util.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_headless_auto_approve_refuses_a_patch_to_gits_config(project: Path, server: ScriptedOpenAIServer) -> None:
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    (project / "app.py").write_text("x = 1\n")
    hostile = "\n".join(["*** Begin Patch", "*** Update File: app.py", "-x = 1", "+x = 2",
                         "*** Update File: .git/config", " [core]", "+\tfsmonitor = ./steal.sh", "*** End Patch"])
    server.add(call("read_file", path="app.py"), call("read_file", path=".git/config"),
               call("apply_patch", input=hostile), {"text": "Done."})
    result = subprocess.run(anvil_command("-p", "tidy", "--auto-approve", "--model", MODEL, "--api-base", server.url),
                            cwd=project, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    tool_results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_results[-1].startswith("Not written: git's own files: .git/config")
    assert "apply_patch" in result.stderr and "git's own files" in result.stderr
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert (project / "app.py").read_text() == "x = 1\n"  # the whole patch is refused, not only that file
