"""Final verification: the configured checks run when a turn that changed files ends, and failures go back."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path
from typing import Any

from anvil.config import Settings, load_settings
from anvil.core.events import Notice
from anvil.core.loop.verify import run_check, tail
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.runtime import open_runtime
from tests.support.agents import EchoTool, ended, make_agent, run
from tests.support.openai_server import ScriptedOpenAIServer

# A check that passes only when value.txt says "good", printing noise first so the tail matters.
CHECK = shlex.join([sys.executable, "-c", "import pathlib, sys\n"
                    "print('\\n'.join(f'noise {i}' for i in range(100)))\n"
                    "value = pathlib.Path('value.txt').read_text()\n"
                    "print('value.txt says', repr(value))\n"
                    "sys.exit(0 if value == 'good' else 1)"])


class WriteArgs(ToolArgs):
    path: str
    content: str


class WriteFile(Tool):
    name = "write_file"
    description = "Write a file."
    Args = WriteArgs
    kind = "edit"
    mutates = True

    async def run(self, args: WriteArgs, ctx: ToolContext) -> ToolResult:
        (ctx.root / args.path).write_text(args.content)
        return ToolResult(f"Wrote {args.path}.")


def write(content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": "value.txt", "content": content}}]}


async def test_a_failed_check_goes_back_to_the_model_which_fixes_it(server: ScriptedOpenAIServer,
                                                                     tmp_path: Path) -> None:
    server.add(write("bad"), {"text": "Done."}, write("good"), {"text": "Fixed."})
    agent = make_agent(server, tmp_path, WriteFile(), verify=[CHECK])
    events = await run(agent, "set the value")
    feedback = server.requests[2]["messages"][-1]
    assert feedback["role"] == "user" and feedback["content"].startswith("[anvil] Verification")
    assert "value.txt says 'bad'" in feedback["content"] and "failed (exit 1)" in feedback["content"]
    assert "noise 99" in feedback["content"] and "noise 1\n" not in feedback["content"]  # the tail only
    assert "5 more model calls" in feedback["content"]
    end = ended(events)
    assert end.reason == "done" and end.message.startswith("Verification passed")
    assert any(isinstance(e, Notice) and "Verification passed" in e.message for e in events)
    assert len(server.requests) == 4


async def test_still_failing_after_the_retries_is_reported_honestly(server: ScriptedOpenAIServer,
                                                                    tmp_path: Path) -> None:
    server.add(write("bad"), {"text": "Done."}, write("worse"), write("still bad"), {"text": "never"})
    agent = make_agent(server, tmp_path, WriteFile(), verify=[CHECK], verify_retries=2)
    events = await run(agent, "set the value")
    end = ended(events)
    assert end.reason == "done" and len(server.requests) == 4  # 2 calls, then 2 more for fixing
    assert end.message.startswith("Verification still failing") and "value.txt says 'still bad'" in end.message
    assert CHECK in end.message and "without changing anything" not in end.message


async def test_a_model_that_stops_without_fixing_is_reported(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(write("bad"), {"text": "Done."}, {"text": "I think it is fine."})
    events = await run(make_agent(server, tmp_path, WriteFile(), verify=[CHECK]), "set the value")
    end = ended(events)
    assert "still failing" in end.message and "stopped without changing anything" in end.message


async def test_no_checks_without_changes(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}, {"text": "Just looked."})
    events = await run(make_agent(server, tmp_path, EchoTool(), verify=["false"]), "look around")
    end = ended(events)
    assert end.reason == "done" and end.message == "" and len(server.requests) == 2


async def test_an_interrupt_stops_a_running_check(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(write("bad"), {"text": "Done."})
    sleeper = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(30)'"
    agent = make_agent(server, tmp_path, WriteFile(), verify=[sleeper])
    events = []
    async for event in agent.run_turn("go"):
        events.append(event)
        if isinstance(event, Notice) and event.message.startswith("Verifying"):
            asyncio.get_running_loop().call_later(0.2, agent.interrupt)
    end = ended(events)
    assert end.reason == "interrupted"


async def test_timeouts_and_missing_commands_fail_clearly(tmp_path: Path) -> None:
    slow = await run_check(f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(30)'", tmp_path, 0.3)
    assert not slow.ok and slow.timed_out and slow.status == "timed out" and slow.duration < 5
    missing = await run_check("definitely-not-a-command-xyz", tmp_path, 5)
    assert not missing.ok and missing.exit_code == 127


def test_tail_keeps_the_end() -> None:
    text = "\n".join(f"line {i}" for i in range(200))
    assert tail(text).splitlines()[-1] == "line 199" and "line 139" not in tail(text)
    assert len(tail("x" * 10_000)) <= 4003


def test_settings_reach_the_agent(tmp_path: Path) -> None:
    (tmp_path / ".anvil").mkdir()
    (tmp_path / ".anvil" / "config.toml").write_text(
        'model = "scripted"\nverify = ["ruff check .", "pytest -q"]\nverify_retries = 2\nverify_timeout = 30\n'
        "compact_threshold = 0.5\ncontext_window = 8000\n")
    runtime = open_runtime(load_settings(tmp_path, trust=True), tmp_path)  # verify runs code: it needs trust
    agent = runtime.agent
    assert agent.verify == ["ruff check .", "pytest -q"] and agent.verify_retries == 2
    assert agent.verify_timeout == 30 and agent.compactor.threshold == 0.5 and agent.context.window == 8000
    runtime.session.close()
    off = open_runtime(Settings(model="scripted", compact_threshold=False), tmp_path)
    assert off.agent.compactor.threshold == 0 and not off.agent.compactor.should_compact(10**9)
    off.session.close()
