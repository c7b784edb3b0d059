"""`anvil --plain` as a person uses it: prompts, approvals, keys, commands and requests (see conftest.py)."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from anvil.config import data_dir
from anvil.core.context.meter import REPLY_RESERVE_FRACTION
from anvil.core.events import ApprovalDecision, ApprovalRequested, PlanProposed, QuestionAsked
from anvil.core.model.scripted import ScriptedModel
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.frontend.commands import COMMANDS
from anvil.plain.input import PlainCompleter
from anvil.plain.render import diff_text, toolbar
from tests.plain.conftest import CTRL_C, SHIFT_TAB

TOUCH_CALL = {"name": "run_command", "arguments": {"command": "touch made.txt"}}
TOUCH = [{"text": "I'll create it.", "tool_calls": [TOUCH_CALL]}, {"text": "All done here."}]


class AskTool(Tool):
    """Stands in for ask_user / exit_plan_mode: reaches the person through ``ctx.ask`` as those tools do."""

    name = "ask_test"
    description = "test"

    class Args(ToolArgs):
        kind: str = "question"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        assert ctx.ask is not None, "the REPL should let tools ask the person"
        future = asyncio.get_running_loop().create_future()
        if args.kind == "plan":
            decision = await ctx.ask(PlanProposed("c1", "Step one\nStep two", future=future))
            assert decision == await future
            return ToolResult(f"approved={decision.approved} plan={decision.plan!r} feedback={decision.feedback!r}")
        answer = await ctx.ask(QuestionAsked("c1", "Which database?", ("sqlite", "postgres"), future=future))
        assert answer == await future
        return ToolResult(f"The person answered: {answer}")


def tool_message(call: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(call) if m["role"] == "tool")


async def test_a_prompt_streams_the_answer_and_shows_the_gauge(make_repl: Any) -> None:
    repl = make_repl([{"text": "Hello from the scripted model, streamed in pieces.", "cost": 0.0123}])
    await repl.prompt("hi there")
    await repl.wait("Hello from the scripted model, streamed in pieces.")
    await repl.idle()
    await repl.wait("$0.0123")  # the toolbar of the next prompt: cost, gauge, model, mode
    assert "mode: ask" in repl.screen()
    assert re.search(r"ctx [█░]+ \d+%", repl.screen())
    assert await repl.exit() == 0
    assert "hi there" in (data_dir() / "plain_history").read_text()


async def test_y_runs_the_command(make_repl: Any, project: Path) -> None:
    repl = make_repl(TOUCH)
    await repl.prompt("make the file")
    await repl.wait("Approve run_command?")
    await repl.wait("$ touch made.txt")
    await repl.wait(f"in {project}")
    assert not (project / "made.txt").exists()
    await repl.send("y", then="allowed once")
    await repl.wait("✓")
    await repl.wait("All done here.")
    assert (project / "made.txt").exists()
    assert await repl.exit() == 0


async def test_n_denies(make_repl: Any, project: Path) -> None:
    repl = make_repl(TOUCH)
    await repl.prompt("make the file")
    await repl.wait("Approve run_command?")
    await repl.send("n", then="denied")
    await repl.wait("All done here.")
    assert not (project / "made.txt").exists()
    assert "denied" in tool_message(repl.model.calls[1])
    await repl.exit()


async def test_d_sends_the_message_to_the_model(make_repl: Any, project: Path) -> None:
    repl = make_repl(TOUCH)
    await repl.prompt("make the file")
    await repl.wait("Approve run_command?")
    await repl.send("d", then="Tell the model why")
    await repl.send("use the scaffold script instead\r", then="denied with your message")
    await repl.wait("All done here.")
    assert not (project / "made.txt").exists()
    assert "use the scaffold script instead" in tool_message(repl.model.calls[1])
    await repl.exit()


async def test_always_in_the_project_saves_the_rule_and_stops_asking(make_repl: Any, project: Path) -> None:
    call = TOUCH_CALL
    repl = make_repl([{"tool_calls": [call]}, {"text": "first"}, {"tool_calls": [call]}, {"text": "second"}])
    await repl.prompt("make the file")
    await repl.wait("Approve run_command?")
    await repl.send("a", then="Always allow")
    await repl.send("p", then="always allowed: `")
    await repl.wait("first")
    shown = re.search(r"always allowed: `(.+)` for this project \(saved in \.anvil/permissions\.toml\)", repl.screen())
    assert shown is not None
    rules = tomllib.loads((project / ".anvil" / "permissions.toml").read_text())
    assert rules["allow"] == [shown.group(1).strip()]  # exactly the pattern the person was shown
    await repl.prompt("again")
    await repl.wait("second")
    assert repl.screen().count("Approve run_command?") == 1  # the saved rule answered the second time
    await repl.exit()


async def test_always_without_a_pattern_says_so(make_repl: Any) -> None:
    repl = make_repl([], start=False)
    repl.repl.busy = True
    repl.repl.keys.start()
    # a command no rule can describe (the TUI and ACP offer no "always" for it either: anvil/frontend/lines.py)
    event = ApprovalRequested("c1", "run_command", {"command": "eval \"$x\""}, "Running eval", command='eval "$x"',
                              suggested_pattern=None)
    answer = asyncio.create_task(repl.repl.answer_request(event))
    await repl.wait("Approve run_command?")
    await repl.send("a", then="Always allow is not offered: no safe rule can be made from this call")
    await repl.send("y")
    assert await asyncio.wait_for(answer, 5) == ApprovalDecision(True)
    repl.repl.keys.stop()


async def test_ctrl_c_interrupts_the_approval_and_the_turn(make_repl: Any, project: Path) -> None:
    repl = make_repl(TOUCH)
    await repl.prompt("make the file")
    await repl.wait("Approve run_command?")
    await repl.send(CTRL_C, then="Interrupted.")
    assert not (project / "made.txt").exists()
    await repl.prompt("still here?")
    await repl.wait("All done here.")  # the REPL goes on after an interrupt
    await repl.exit()


async def test_ctrl_c_interrupts_a_streaming_answer(make_repl: Any) -> None:
    repl = make_repl([{"text": "word " * 400}])
    repl.model.delay = 0.02
    await repl.prompt("talk a lot")
    await repl.wait("word word")
    await repl.send(CTRL_C, then="Interrupted.")
    assert repl.screen().count("word") < 400
    assert await repl.exit() == 0


async def test_ctrl_c_at_the_prompt_clears_it_and_shift_tab_cycles_the_mode(make_repl: Any) -> None:
    repl = make_repl([{"text": "ok"}])
    await repl.idle()
    await repl.send("half typed")
    await repl.send(CTRL_C)
    await repl.send(SHIFT_TAB, then="approval mode: accept_edits")
    assert repl.runtime.agent.policy.mode == "accept_edits"
    await repl.send("hello\r", then="ok")
    assert repl.model.calls[0][-1] == {"role": "user", "content": "hello"}
    assert await repl.exit() == 0


async def test_a_mentioned_file_is_attached(make_repl: Any, project: Path) -> None:
    (project / "notes.txt").write_text("the secret word is anvil\n")
    repl = make_repl([{"text": "read it"}])
    await repl.prompt("look at @notes.txt please")
    await repl.wait("attached: notes.txt")
    await repl.wait("read it")
    sent = repl.model.calls[0][-1]["content"]
    assert sent.startswith("look at @notes.txt please")
    assert '<file path="notes.txt">\nthe secret word is anvil\n</file>' in sent
    await repl.exit()


async def test_help_unknown_commands_and_exit(make_repl: Any) -> None:
    repl = make_repl([])
    await repl.prompt("/help")
    for usage in ("/compact [focus]", "/mode [name]", "/resume [id]", "/undo", "/exit"):
        await repl.wait(usage)
    await repl.prompt("/comapct")
    await repl.wait("Unknown command /comapct. Did you mean /compact?")
    await repl.prompt("/exit")
    assert await asyncio.wait_for(repl.task, 10) == 0


async def test_mode_cost_todos_clear_and_export(make_repl: Any, project: Path) -> None:
    repl = make_repl([{"text": "hello", "tool_calls": [{"name": "todo_write", "arguments": {"todos": [
        {"content": "Write the parser", "status": "in_progress", "active_form": "Writing the parser"}]}}]},
        {"text": "planned"}])
    await repl.prompt("plan it")
    await repl.wait("Writing the parser")
    await repl.wait("planned")
    await repl.prompt("/mode auto")
    await repl.wait("Approval mode: auto.")
    await repl.prompt("/mode sideways")
    await repl.wait("Unknown mode 'sideways'")
    await repl.prompt("/todos")
    await repl.wait("◐ Writing the parser")
    await repl.prompt("/cost")
    await repl.wait("output tokens, cost unknown (litellm has no price for scripted)")
    await repl.prompt("/export")
    await repl.wait("Exported the conversation to")
    first = repl.runtime.session.id
    assert "plan it" in (project / f"anvil-session-{first}.md").read_text()
    await repl.prompt("/clear")
    await repl.wait("New conversation")
    assert repl.repl.runtime.session.id != first
    assert repl.repl.runtime.agent.policy.mode == "auto"  # the mode survives a new session
    await repl.prompt("/sessions")
    await repl.wait(first)
    await repl.prompt(f"/resume {first}")
    await repl.wait(f"Resumed session {first}")
    await repl.wait("you: plan it")
    assert repl.repl.runtime.session.id == first
    assert repl.repl.runtime.agent.messages[1] == {"role": "user", "content": "plan it"}
    await repl.prompt("/resume nosuch")
    await repl.wait("No session 'nosuch'")
    await repl.exit()


async def test_undo_restores_the_files_of_the_last_turn(make_repl: Any, project: Path) -> None:
    write = {"name": "write_file", "arguments": {"path": "notes/new.txt", "content": "draft\n"}}
    repl = make_repl([{"tool_calls": [write]}, {"text": "written"}])
    await repl.prompt("write a note")
    await repl.wait("written")
    assert (project / "notes" / "new.txt").read_text() == "draft\n"
    await repl.prompt("/rewind")
    await repl.wait("turn 1: 'write a note'")
    await repl.prompt("/undo")
    await repl.wait("Undo turn 1 ('write a note'), restoring notes/new.txt (created)? [y/N]")
    assert (project / "notes" / "new.txt").exists()  # nothing before the answer
    await repl.send("y\r", then="removed notes/new.txt")
    assert not (project / "notes" / "new.txt").exists()
    await repl.prompt("/undo")
    await repl.wait("Nothing to undo")
    await repl.exit()


async def test_undo_asks_before_overwriting_outside_changes(make_repl: Any, project: Path) -> None:
    write = {"name": "write_file", "arguments": {"path": "new.txt", "content": "draft\n"}}
    repl = make_repl([{"tool_calls": [write]}, {"text": "written"}])
    await repl.prompt("write a note")
    await repl.wait("written")
    await repl.idle()
    # The loop records how anvil left the files when a turn ends; repeated here for an engine not yet doing so
    # (recording twice before anything else changes the files is harmless).
    repl.runtime.agent.ctx.checkpoints.finish_turn()
    (project / "new.txt").write_text("edited by hand\n")
    await repl.prompt("/undo")
    await repl.wait("Undo turn 1 ('write a note')")
    await repl.send("y\r", then="changed outside anvil")
    await repl.wait("Overwrite those outside changes")
    await repl.send("n\r", then="Nothing was changed.")
    assert (project / "new.txt").read_text() == "edited by hand\n"
    await repl.prompt("/undo")
    await repl.wait("Undo turn 1")
    await repl.send("y\r", then="Overwrite those outside changes")
    await repl.send("y\r", then="removed new.txt")
    assert not (project / "new.txt").exists()
    await repl.exit()


async def test_a_question_is_answered_by_number(make_repl: Any) -> None:
    repl = make_repl([{"tool_calls": [{"name": "ask_test", "arguments": {}}]}, {"text": "noted"}], tools=(AskTool(),))
    await repl.prompt("set up storage")
    await repl.wait("? Which database?")
    await repl.wait("2. postgres")
    await repl.send("2\r", then="noted")
    assert tool_message(repl.model.calls[1]) == "The person answered: postgres"
    await repl.exit()


async def test_a_plan_is_rejected_with_feedback(make_repl: Any) -> None:
    turns = [{"tool_calls": [{"name": "ask_test", "arguments": {"kind": "plan"}}]}, {"text": "revising"}]
    repl = make_repl(turns, tools=(AskTool(),))
    await repl.prompt("plan first")
    await repl.wait("Proposed plan")
    await repl.wait("Step two")
    await repl.send("r", then="What should change?")
    await repl.send("add tests\r", then="revising")
    assert tool_message(repl.model.calls[1]) == "approved=False plan='Step one\\nStep two' feedback='add tests'"
    await repl.exit()


async def test_a_plan_is_edited_in_the_editor_then_approved(make_repl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", "sed -i s/two/three/")
    turns = [{"tool_calls": [{"name": "ask_test", "arguments": {"kind": "plan"}}]}, {"text": "on it"}]
    repl = make_repl(turns, tools=(AskTool(),))
    await repl.prompt("plan first")
    await repl.wait("Proposed plan")
    await repl.send("e", then="Step three")
    await repl.send("a", then="plan approved")
    await repl.wait("on it")
    assert tool_message(repl.model.calls[1]) == "approved=True plan='Step one\\nStep three' feedback=''"
    await repl.exit()


async def test_ask_user_tool(make_repl: Any) -> None:
    module = importlib.import_module("anvil.core.tools.interaction")
    tool = next(v() for v in vars(module).values()
                if isinstance(v, type) and issubclass(v, Tool) and getattr(v, "name", "") == "ask_user")
    turns = [{"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which port?",
                                                                 "options": ["8000", "8080"]}}]}, {"text": "ok"}]
    repl = make_repl(turns, tools=() if repl_has(tool.name) else (tool,))
    await repl.prompt("serve it")
    await repl.wait("Which port?")
    await repl.send("2\r", then="ok")
    assert "8080" in tool_message(repl.model.calls[1])
    await repl.exit()


def repl_has(name: str) -> bool:
    from anvil.core.tools import default_tools

    return default_tools().get(name) is not None


def test_completion_of_commands_and_paths(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "parser.py").write_text("")
    completer = PlainCompleter(project, COMMANDS.completions)

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert complete("/com") == ["/compact"]
    assert "/rewind" in complete("/re")
    assert complete("explain @pars") == ["@src/parser.py"]
    assert complete("@READ") == ["@README.md"]
    assert complete("no trigger") == []
    assert COMMANDS.closest("hlep") == "help" and COMMANDS.closest("quti") == "exit"


def test_diff_and_toolbar_rendering() -> None:
    fragments = diff_text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n")
    styles = {style for style, text in fragments if text.strip() in {"-old", "+new"}}
    assert any("deleted" in s for s in styles) and any("inserted" in s for s in styles)
    text = "".join(t for _, t in toolbar(used=84_000, window=200_000, cost=0.5, model="m", mode="auto"))
    assert "42% 84.0k/200k" in text and "$0.5000" in text and "mode: auto" in text
    sandboxed = toolbar(used=None, window=None, cost=0, model="m", mode="ask", sandbox="not sandboxed")
    assert ("class:notice", " · not sandboxed") in list(sandboxed)


async def test_the_toolbar_says_whether_commands_are_sandboxed(make_repl: Any) -> None:
    repl = make_repl([])
    label = repl.repl.session.sandbox.label
    assert label in {"sandboxed", "not sandboxed"}
    assert label in "".join(t for _, t in repl.repl._toolbar())
    await repl.exit()


async def test_escape_goes_back_from_the_scope_choice_and_shift_tab_works_during_a_turn(make_repl: Any,
                                                                                      project: Path) -> None:
    repl = make_repl(TOUCH)
    await repl.prompt("make the file")
    await repl.wait("Approve run_command?")
    await repl.send(SHIFT_TAB, then="Approval mode: accept_edits (from the next call on)")
    await repl.send("a", then="Always allow")
    await repl.send("\x1b", then="y once")  # Esc: back to the first choice, nothing saved
    await repl.send("y", then="allowed once")
    await repl.wait("All done here.")
    assert not (project / ".anvil" / "permissions.toml").exists()
    await repl.exit()


async def test_an_engine_failure_ends_the_turn_not_the_repl(make_repl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    repl = make_repl([{"text": "recovered"}])
    real = repl.runtime.agent.run_turn

    async def broken(text: str) -> AsyncIterator[Any]:
        raise RuntimeError("boom")
        yield  # pragma: no cover - makes this an async generator

    monkeypatch.setattr(repl.runtime.agent, "run_turn", broken)
    await repl.prompt("first")
    await repl.wait("The turn failed: RuntimeError: boom")
    monkeypatch.setattr(repl.runtime.agent, "run_turn", real)
    await repl.prompt("second")
    await repl.wait("recovered")
    assert await repl.exit() == 0


async def test_sub_agent_tool_calls_are_shown_nested(make_repl: Any) -> None:
    subagents = pytest.importorskip("anvil.core.subagents.task_tool", reason="sub-agents have not landed")
    from anvil.core.events import ToolCallStarted, ToolResultEvent

    repl = make_repl([], start=False)
    started = ToolCallStarted("s1", "grep", {"pattern": "def main"}, "Searching")
    await repl.repl.show(subagents.SubagentEvent("explore", "find main", started))
    await repl.repl.show(subagents.SubagentEvent("explore", "find main", ToolResultEvent("s1", "grep", True, "3 hits",
                                                                                          "a.py:1\nb.py:2")))
    await repl.wait("↳ ● grep def main ✓ 0.0s · 3 hits")
    assert "a.py:1" not in repl.screen()  # a sub-agent's output stays out of the transcript


async def test_compact_runs_the_engines_compaction(make_repl: Any) -> None:
    repl = make_repl([{"text": "hello " * 50}, {"text": "The person said hi; anvil greeted them."}])
    await repl.prompt("hi")
    await repl.wait("hello hello")
    await repl.prompt("/compact keep the greeting")
    await repl.wait("⟳ Compacting the conversation")
    await repl.wait("⟳ Compacted")
    await repl.exit()


async def test_mcp_lists_servers_and_their_tools(make_repl: Any, tmp_path: Path) -> None:
    from anvil.core.mcp.config import McpServerConfig
    from tests.support.mcp_servers import demo_config

    servers = {"demo": demo_config(), "broken": McpServerConfig(command=str(tmp_path / "no-such-server"))}
    repl = make_repl([], mcp_servers=servers)
    await repl.idle()
    assert repl.repl.runtime.mcp is not None
    await asyncio.wait_for(repl.repl.runtime.mcp.wait_started(), 30)
    await repl.prompt("/mcp")
    await repl.wait("demo (stdio): ready")
    await repl.wait("mcp__demo__add")
    await repl.wait("broken (stdio): failed")
    assert await repl.exit() == 0


async def test_model_switch_goes_through_the_agent_like_the_tui(make_repl: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """/model NAME switches with ``agent.set_model``, as the TUI does: the new model's window is the one the
    gauge and automatic compaction measure against, not only the one the gauge shows."""
    repl = make_repl([{"text": "A long answer. " * 500}])
    await repl.prompt("hi")
    await repl.wait("A long answer.")
    await repl.idle()
    agent = repl.runtime.agent
    # A window the history already fills past the compaction threshold, with room left for the summary
    usable = (agent.context.used - 1000) / agent.compactor.threshold
    window = int(usable / (1 - REPLY_RESERVE_FRACTION))
    small = ScriptedModel([{"text": "The person said hi and got a long answer."}, {"text": "Answered by small."}],
                          name="small", window=window)
    monkeypatch.setattr("anvil.runtime.build_model", lambda settings: small)
    await repl.prompt("/model small")
    await repl.wait("Model switched to small.")
    await repl.prompt("and now?")
    await repl.wait("threshold)")  # ⟳ Compacting the context (N tokens, threshold)…
    await repl.wait("⟳ Compacted")
    await repl.wait("Answered by small.")
    assert len(small.calls) == 2  # the summary, then the answer
    assert agent.context.window == window and agent.compactor.meter is agent.context
    assert repl.runtime.settings.model == "small"
    await repl.exit()


async def test_reasoning_is_one_dim_line_and_think_sets_the_effort(make_repl: Any) -> None:
    reasoning = ("The person wants a greeting. A short one will do: there is no file to read and no command to "
                 "run, so nothing to look up first.")
    repl = make_repl([{"reasoning": reasoning, "text": "Hello!"}])
    await repl.prompt("/think high")
    await repl.wait("Reasoning: high from the next model call.")
    assert repl.runtime.agent.model.reasoning.level == "high" and repl.runtime.settings.reasoning == "high"
    await repl.prompt("hi")
    await repl.wait("✻ Thought (27 words): The person wants a greeting.")
    await repl.wait("Hello!")
    screen = repl.screen()
    assert "nothing to look up first" not in screen  # a glimpse, not the whole reasoning
    assert screen.index("✻ Thought") < screen.index("Hello!")
    await repl.prompt("/think sideways")
    await repl.wait("Unknown reasoning level 'sideways'. Levels: off, low, medium, high.")
    assert await repl.exit() == 0
