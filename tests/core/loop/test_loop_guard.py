"""Loop guards end a turn that goes round in circles with a "stuck" message; stage words follow the work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anvil.core.events import ToolCallStarted
from anvil.core.loop.guard import LoopGuard, error_signature
from anvil.core.loop.stages import StageTracker
from anvil.core.tools import default_tools
from anvil.core.tools.base import PreparedCall, Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from tests.support.agents import EchoTool, assert_history_valid, ended, make_agent, run
from tests.support.openai_server import ScriptedOpenAIServer


class PathArgs(ToolArgs):
    path: str


class FailingEdit(Tool):
    """Fails like a real edit whose old_string is not in the file; the line number varies."""

    name = "edit_file"
    description = "Edit."
    Args = PathArgs
    kind = "edit"
    mutates = True

    def __init__(self) -> None:
        self.calls = 0

    def write_targets(self, args: PathArgs) -> list[str]:
        return [args.path]

    async def run(self, args: PathArgs, ctx: ToolContext) -> ToolResult:
        self.calls += 1
        raise ToolError(f"old_string was not found in {args.path}; the closest region is at line {10 + self.calls}.")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_the_same_failing_call_three_times_is_stuck(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(*[call("edit_file", path="app.py")] * 3, {"text": "never reached"})
    agent = make_agent(server, tmp_path, FailingEdit())
    events = await run(agent, "fix app.py")
    end = ended(events)
    assert end.reason == "stuck" and end.iterations == 3
    assert "edit_file (path 'app.py') failed 3 times" in end.message
    assert "old_string was not found in app.py" in end.message and "How should I proceed?" in end.message
    assert len(server.requests) == 3
    assert_history_valid(agent.messages)
    assert agent.messages[-1]["role"] == "assistant" and end.message in agent.messages[-1]["content"]


async def test_the_same_error_from_different_calls_three_times_is_stuck(server: ScriptedOpenAIServer,
                                                                         tmp_path: Path) -> None:
    # Different arguments each time, the same failure but for numbers: still going round in circles.
    server.add(call("edit_file", path="part1.py"), call("echo", text="look"), call("edit_file", path="part2.py"),
               call("edit_file", path="part3.py"), {"text": "never"})
    agent = make_agent(server, tmp_path, FailingEdit(), EchoTool())
    events = await run(agent, "fix it")
    end = ended(events)
    assert end.reason == "stuck" and "the same error came back 3 times in a row" in end.message


async def test_different_errors_do_not_stop_the_turn(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(call("edit_file", path="a.py"), call("edit_file", path="b.py"), call("edit_file", path="c.py"),
               {"text": "I could not edit those files."})
    events = await run(make_agent(server, tmp_path, FailingEdit()), "fix it")
    assert ended(events).reason == "done"


async def test_an_identical_call_five_times_in_a_row_is_stuck(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(*[call("echo", text="same")] * 5, {"text": "never"})
    events = await run(make_agent(server, tmp_path, EchoTool()), "go")
    end = ended(events)
    assert end.reason == "stuck" and end.iterations == 5 and "5 times in a row" in end.message


async def test_four_identical_calls_are_allowed_and_guards_reset_per_turn(server: ScriptedOpenAIServer,
                                                                           tmp_path: Path) -> None:
    server.add(*[call("echo", text="same")] * 4, {"text": "done"}, *[call("echo", text="same")] * 4, {"text": "ok"})
    agent = make_agent(server, tmp_path, EchoTool())
    assert ended(await run(agent, "go")).reason == "done"
    assert ended(await run(agent, "again")).reason == "done"


async def test_stuck_mid_batch_answers_the_remaining_calls(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(call("edit_file", path="a.py"), call("edit_file", path="a.py"),
               {"tool_calls": [{"name": "edit_file", "arguments": {"path": "a.py"}},
                               {"name": "echo", "arguments": {"text": "after"}}]})
    echo = EchoTool()
    agent = make_agent(server, tmp_path, FailingEdit(), echo)
    events = await run(agent, "go")
    assert ended(events).reason == "stuck" and echo.seen == []
    assert_history_valid(agent.messages)
    assert "Not run" in [m for m in agent.messages if m["role"] == "tool"][-1]["content"]


def test_error_signature_ignores_numbers_and_spacing() -> None:
    assert error_signature("run_tests", "FAILED test_x.py:12  - 3 != 4\n") == \
        error_signature("run_tests", "FAILED test_x.py:19 - 5 != 6")
    assert error_signature("run_tests", "FAILED a") != error_signature("run_tests", "FAILED b")
    assert error_signature("edit_file", "x") != error_signature("write_file", "x")


def test_polling_counts_only_while_nothing_new_comes_back() -> None:
    guard = LoopGuard()
    for n in range(8):
        assert guard.observe("command_output", {"id": "b1"}, True, f"new line {n}", polls=True) is None
    stops = [guard.observe("command_output", {"id": "b1"}, True, "no new output", polls=True) for _ in range(5)]
    assert stops[:4] == [None] * 4 and stops[4] is not None and "5 times in a row" in stops[4]
    # a tool that does not poll: new output each time is still the same call made again
    guard.reset()
    stops = [guard.observe("echo", {"text": "x"}, True, f"new line {n}") for n in range(5)]
    assert stops[4] is not None and "5 times in a row" in stops[4]


def test_a_success_of_the_same_call_resets_its_failures() -> None:
    guard = LoopGuard()
    assert guard.observe("run_tests", {}, False, "1 failed") is None
    assert guard.observe("run_tests", {}, False, "2 failed: other") is None
    assert guard.observe("run_tests", {}, True, "all passed") is None
    assert guard.observe("run_tests", {}, False, "3 failed: new") is None


# -- stage words ----------------------------------------------------------------------------------


def test_stages_follow_a_typical_task(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    tools = default_tools()

    def prepared(name: str, **arguments: Any) -> PreparedCall:
        return tools.prepare(name, json.dumps(arguments))

    tracker = StageTracker()
    assert tracker.stage(prepared("read_file", path="app.py")) == "exploring"
    assert tracker.stage(prepared("grep", pattern="x")) == "exploring"
    assert tracker.stage(prepared("command_output", id="bg1")) == "exploring"
    assert tracker.stage(prepared("run_command", command="git status")) == "exploring"
    assert tracker.stage(prepared("todo_write", todos=[])) == "planning"
    assert tracker.stage(prepared("run_tests")) == "testing"  # before any change: a baseline
    tracker.observe(prepared("run_tests"), True, changed_files=False)
    assert tracker.stage(prepared("write_file", path="new.py", content=""), tmp_path) == "creating"
    assert tracker.stage(prepared("write_file", path="app.py", content=""), tmp_path) == "editing"
    assert tracker.stage(prepared("edit_file", path="app.py", old_string="1", new_string="2"), tmp_path) == "editing"
    tracker.observe(prepared("edit_file", path="app.py", old_string="1", new_string="2"), True, changed_files=True)
    assert tracker.stage(prepared("run_command", command="python -m pytest -q")) == "verifying"
    tracker.observe(prepared("run_command", command="python -m pytest -q"), False, changed_files=False)
    assert tracker.stage(prepared("multi_edit", path="app.py", edits=[]), tmp_path) == "fixing"
    tracker.observe(prepared("edit_file", path="app.py", old_string="1", new_string="2"), True, changed_files=True)
    assert tracker.stage(prepared("run_tests")) == "verifying"
    assert tracker.stage(prepared("run_command", command="ruff check .")) == "verifying"
    assert tracker.stage(prepared("run_command", command="./deploy.sh")) is None
    assert tracker.stage(prepared("kill_command", id="bg1")) is None  # it changes things, says nothing of the work


async def test_tool_call_events_carry_the_stage_and_keep_the_phase_label(server: ScriptedOpenAIServer,
                                                                          tmp_path: Path) -> None:
    server.add(call("echo", text="x"), call("edit_file", path="new.py"), {"text": "ok"})
    events = await run(make_agent(server, tmp_path, EchoTool(), FailingEdit()), "go")
    started, edit = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started.phase == "echo" and started.stage == "exploring"  # a tool that changes nothing
    assert started.to_dict()["stage"] == "exploring" and started.kind == "other"
    assert (edit.stage, edit.kind) == ("creating", "edit")  # the tool's kind, for front ends and ACP clients
    assert edit.to_dict()["kind"] == "edit"
