"""The app driven through Pilot with a real runtime and a scripted model: what the person sees and does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anvil.core.events import ToolCallStarted
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.policy.verdict import Verdict
from anvil.core.tools.base import Tool, ToolContext
from anvil.tui.app import AnvilApp
from anvil.tui.approval import ApprovalScreen
from anvil.tui.confirm import ConfirmScreen
from anvil.tui.diff_view import DiffView
from anvil.tui.todos import TodoSidebar
from anvil.tui.transcript import AssistantEntry, LineEntry, ToolEntry, UserEntry
from tests.tui.conftest import make_app, screen_text, submit, wait_for

SIZE = (120, 40)


def run(command: str) -> dict[str, Any]:
    return {"name": "run_command", "arguments": {"command": command}}


def tool_messages(app: AnvilApp) -> list[str]:
    assert app.runtime is not None
    return [str(m["content"]) for m in app.runtime.agent.messages if m.get("role") == "tool"]


def lines(app: AnvilApp, kind: str) -> list[str]:
    return [e.text for e in app.transcript.entries() if isinstance(e, LineEntry) and e.kind == kind]


async def test_a_prompt_streams_an_answer_as_markdown(project: Path) -> None:
    app = make_app(project, [{"text": "Hello, **world**. Here is `code`."}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "say hello")
        await wait_for(pilot, lambda: not app.busy and app.transcript.query(AssistantEntry))
        user, answer = app.transcript.entries()[:2]
        assert isinstance(user, UserEntry) and user.text == "say hello"
        assert isinstance(answer, AssistantEntry)
        assert answer.text == "Hello, **world**. Here is `code`."
        await wait_for(pilot, lambda: answer.rendered_source == answer.text)
        assert "Hello, world. Here is code." in screen_text(app)
        assert app.prompt.text == ""  # sent, so the input is empty again


async def test_the_status_bar_says_writing_while_the_answer_streams(project: Path) -> None:
    app = make_app(project, [{"text": "A slow answer, streamed in small pieces."}])
    app.runtime.agent.model.delay = 0.05  # type: ignore[union-attr]
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        await submit(pilot, "go")
        await wait_for(pilot, lambda: app.transcript.query(AssistantEntry))
        assert app.busy and app.status.state.phase == "Writing…"
        await wait_for(pilot, lambda: not app.busy)
        assert app.status.state.phase == ""


async def test_run_command_opens_the_modal_and_y_runs_it(project: Path) -> None:
    app = make_app(project, [{"text": "Creating it.", "tool_calls": [run("echo hi > made.txt")]}, {"text": "Done."}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "make a file")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        assert not (project / "made.txt").exists()  # nothing runs before the answer
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy)
        assert (project / "made.txt").read_text().strip() == "hi"
        tool = app.transcript.query_one(ToolEntry)
        assert tool.status == "ok" and tool.arg == "echo hi > made.txt"


async def test_n_denies_and_the_model_is_told(project: Path) -> None:
    app = make_app(project, [{"tool_calls": [run("echo hi > made.txt")]}, {"text": "Understood."}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "make a file")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: not app.busy)
        assert not (project / "made.txt").exists()
        assert app.transcript.query_one(ToolEntry).status == "denied"
        assert "denied" in tool_messages(app)[0]


async def test_d_denies_with_a_message_to_the_model(project: Path) -> None:
    app = make_app(project, [{"tool_calls": [run("rm -rf build")]}, {"text": "OK, I will use make clean."}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "clean up")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("d")
        await pilot.press(*"use make clean")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.busy)
        assert "use make clean" in tool_messages(app)[0]
        assert any("use make clean" in text for text in lines(app, "notice"))


class RememberingPolicy(ApprovalPolicy):
    """Asks about commands, suggests a rule and keeps what it is told to remember: the engine's side of "always"."""

    def __init__(self) -> None:
        super().__init__()
        self.rules: list[tuple[str, str, str]] = []

    def evaluate(self, tool: Tool, args: Any, ctx: ToolContext) -> Verdict:
        if tool.approval == "none":
            return Verdict("allow", by="no approval needed")
        command = tool.command(args) or ""
        if any(tool.name == t and command.startswith(p.rstrip("*").rstrip()) for t, p, _ in self.rules):
            return Verdict("allow", by="rule")
        return Verdict("ask", suggested_pattern="echo *")

    def remember(self, tool: str, pattern: str, scope: str, effect: str = "allow") -> None:
        self.rules.append((tool, pattern, scope))


async def test_a_always_allows_with_the_chosen_scope(project: Path) -> None:
    policy = RememberingPolicy()
    app = make_app(project, [{"tool_calls": [run("echo one")]}, {"tool_calls": [run("echo two")]}, {"text": "ok"}],
                   policy=policy)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "echo twice")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("a")
        await pilot.press("p")  # this project
        await wait_for(pilot, lambda: not app.busy)
        assert policy.rules == [("run_command", "echo *", "project")]
        tools = app.transcript.query(ToolEntry)
        assert [t.status for t in tools] == ["ok", "ok"]  # the second call ran without asking
        assert any("echo *" in text and "project" in text for text in lines(app, "notice"))


async def test_an_edit_shows_a_diff(project: Path) -> None:
    (project / "app.py").write_text("x = 1\n")
    turns = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "app.py"}}]},
             {"tool_calls": [{"name": "edit_file",
                              "arguments": {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}}]},
             {"text": "Changed."}]
    app = make_app(project, turns)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "change x")
        await wait_for(pilot, lambda: not app.busy and app.transcript.query(DiffView))
        edit = next(t for t in app.transcript.query(ToolEntry) if t.name_ == "edit_file")
        assert edit.status == "ok" and edit.diff is not None
        assert "-x = 1" in edit.diff and "+x = 2" in edit.diff
        assert edit.query_one(DiffView) is not None
        assert (project / "app.py").read_text() == "x = 2\n"


async def test_todos_appear_in_the_sidebar_and_ctrl_t_toggles_it(project: Path) -> None:
    todos = [{"content": "Read the code", "status": "completed"},
             {"content": "Fix the bug", "status": "in_progress", "active_form": "Fixing the bug"}]
    app = make_app(project, [{"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]}, {"text": "ok"}])
    async with app.run_test(size=SIZE) as pilot:
        sidebar = app.query_one(TodoSidebar)
        assert not sidebar.display  # no list yet: the transcript gets the width
        await submit(pilot, "plan")
        await wait_for(pilot, lambda: not app.busy)
        assert sidebar.display
        assert [t.content for t in sidebar.todos] == ["Read the code", "Fix the bug"]
        assert "Fixing the bug" in str(sidebar.query_one(".list").render())
        await pilot.press("ctrl+t")
        assert not sidebar.display
        assert app.query_one("#todo-summary").display  # the one-line summary replaces it
        await pilot.press("ctrl+t")
        assert sidebar.display


async def test_narrow_terminals_show_the_todo_summary_instead(project: Path) -> None:
    todos = [{"content": "Fix the bug", "status": "in_progress"}]
    app = make_app(project, [{"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]}, {"text": "ok"}])
    async with app.run_test(size=(80, 30)) as pilot:
        await submit(pilot, "plan")
        await wait_for(pilot, lambda: not app.busy)
        assert not app.query_one(TodoSidebar).display
        summary = app.query_one("#todo-summary")
        assert summary.display and "0/1" in str(summary.render()) and "Fix the bug" in str(summary.render())


async def test_the_gauge_follows_context_usage(project: Path) -> None:
    turns = [{"text": "one", "usage": {"prompt_tokens": 4000, "completion_tokens": 100}}]
    app = make_app(project, turns, window=10_000)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hi")
        await wait_for(pilot, lambda: not app.busy)
        state = app.status.state
        assert state.used == 4100 and state.window == 9000  # the usable window (10% kept for the reply)
        rendered = str(app.status.render())
        assert "46%" in rendered and "4.1k/9.0k" in rendered


async def test_compaction_appears_in_the_transcript(project: Path) -> None:
    long = "word " * 1200
    turns = [{"text": long}, {"text": long}, {"text": long}, {"text": "A summary of the conversation."}]
    app = make_app(project, turns, window=12_000)  # below the automatic threshold, above the recent share
    async with app.run_test(size=SIZE) as pilot:
        for prompt in ("one " * 50, "two " * 50, "three"):
            await submit(pilot, prompt)
            await wait_for(pilot, lambda: not app.busy)
        await submit(pilot, "/compact the words")
        await wait_for(pilot, lambda: not app.busy)
        started, finished = lines(app, "compaction")[-2:]
        assert started.startswith("Compacting the conversation") and "manual" in started
        assert finished.startswith("Compacted:") and "summarised" in finished  # a summary replaced older messages
        assert app.status.state.used < int(started.split("(")[1].split(" ")[0].replace(",", ""))


async def test_esc_interrupts_a_running_turn(project: Path) -> None:
    app = make_app(project, [{"tool_calls": [run("sleep 30")]}, {"text": "never"}],
                   auto_approve=True)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "wait")
        await wait_for(pilot, lambda: app.transcript.query(ToolEntry))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy, timeout=10)
        assert lines(app, "interrupted")
        assert app.transcript.query_one(ToolEntry).status != "ok"


async def test_typing_during_a_turn_queues_the_message(project: Path) -> None:
    turns = [{"tool_calls": [run("sleep 1.5")]}, {"text": "first answer"}, {"text": "second answer"}]
    app = make_app(project, turns, auto_approve=True)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "first")
        await wait_for(pilot, lambda: app.transcript.query(ToolEntry))
        await submit(pilot, "also this")
        queued = [e for e in app.transcript.query(UserEntry) if e.text == "also this"]
        assert queued and queued[0].queued
        await wait_for(pilot, lambda: not app.busy)
        assert not queued[0].queued  # the model saw it before its next call
        model = app.runtime.agent.model  # type: ignore[union-attr]
        assert any(m.get("content") == "also this" for m in model.calls[-1])  # type: ignore[attr-defined]


async def test_shift_tab_cycles_the_approval_mode(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.state.model == "scripted")
        assert app.status.state.mode == "ask"
        await pilot.press("shift+tab")
        assert app.runtime is not None and app.runtime.agent.policy.mode == "accept_edits"
        assert app.status.state.mode == "accept_edits"
        assert "accept edits" in str(app.status.render())


async def test_ctrl_c_clears_then_quits(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.load_text("draft")
        await pilot.press("ctrl+c")
        assert app.prompt.text == "" and app.is_running
        await pilot.press("ctrl+c")  # on the idle, empty prompt: says how to quit
        assert app.is_running
        await pilot.press("ctrl+c")  # the second within a second quits
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_code == 0


async def test_slash_commands(project: Path) -> None:
    app = make_app(project, [{"text": "An answer."}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "question")
        await wait_for(pilot, lambda: not app.busy)
        await submit(pilot, "/help")
        assert any("/compact [focus]" in text for text in lines(app, "help"))
        await submit(pilot, "/cost")
        assert any("input tokens and" in text for text in lines(app, "notice"))
        await submit(pilot, "/think high")
        await wait_for(pilot, lambda: "Reasoning: high from the next model call." in lines(app, "notice"))
        assert app.runtime is not None and app.runtime.agent.model.reasoning.level == "high"
        await submit(pilot, "/mode auto")
        assert app.runtime is not None and app.runtime.agent.policy.mode == "auto"
        await submit(pilot, "/nonsense")
        assert any("Unknown command /nonsense" in text for text in lines(app, "notice"))
        await submit(pilot, "/model scripted")
        await wait_for(pilot, lambda: app.status.state.model == "scripted" and lines(app, "notice")[-1].startswith(
            "Model switched to scripted"))
        await submit(pilot, "/theme anvil-light")
        assert app.theme == "anvil-light"
        await submit(pilot, "/export")
        exported = project / f"anvil-session-{app.runtime.session.id}.md"
        assert "## You\n\nquestion" in exported.read_text() and "An answer." in exported.read_text()
        old_session = app.runtime.session.id
        await submit(pilot, "/clear")
        await wait_for(pilot, lambda: app.runtime is not None and app.runtime.session.id != old_session)
        assert not app.transcript.query(AssistantEntry)
        await submit(pilot, "/sessions")
        assert any(old_session in text for text in lines(app, "help"))
        await submit(pilot, f"/resume {old_session}")
        await wait_for(pilot, lambda: app.runtime is not None and app.runtime.session.id == old_session)
        assert [e.text for e in app.transcript.query(AssistantEntry)] == ["An answer."]
        await submit(pilot, "/exit")
        await wait_for(pilot, lambda: not app.is_running)


async def test_at_mentions_attach_the_file(project: Path) -> None:
    (project / "notes.txt").write_text("remember the milk\n")
    app = make_app(project, [{"text": "Noted."}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "read @notes.txt please")
        await wait_for(pilot, lambda: not app.busy)
        model = app.runtime.agent.model  # type: ignore[union-attr]
        sent = [m["content"] for m in model.calls[0] if m["role"] == "user"][-1]  # type: ignore[attr-defined]
        assert '<file path="notes.txt">\nremember the milk\n</file>' in sent


async def test_completion_of_commands_and_paths(project: Path) -> None:
    (project / "wordstat.py").write_text("")
    app = make_app(project, [])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"/he")
        menu = app.query_one("#completions")
        await wait_for(pilot, lambda: menu.display)
        await pilot.press("tab")
        assert app.prompt.text == "/help "
        app.prompt.load_text("")
        await pilot.press(*"look at @words")
        await wait_for(pilot, lambda: menu.display)
        await pilot.press("enter")
        assert app.prompt.text == "look at @wordstat.py "


async def test_history_is_kept_across_sessions(project: Path) -> None:
    app = make_app(project, [{"text": "ok"}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "first prompt")
        await wait_for(pilot, lambda: not app.busy)
    again = make_app(project, [])
    async with again.run_test(size=SIZE) as pilot:
        await pilot.press("up")
        assert again.prompt.text == "first prompt"


async def test_a_model_error_is_a_line_not_a_crash(project: Path) -> None:
    app = make_app(project, [{"error": "The provider rejected the API key", "kind": "auth"}, {"text": "fine"}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hi")
        await wait_for(pilot, lambda: not app.busy)
        assert any("rejected the API key" in text for text in lines(app, "error"))
        await submit(pilot, "again")
        await wait_for(pilot, lambda: not app.busy and app.transcript.query(AssistantEntry))


async def test_tool_output_collapses_and_expands(project: Path) -> None:
    app = make_app(project, [{"tool_calls": [run("seq 1 20")]}, {"text": "ok"}], auto_approve=True)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "count")
        await wait_for(pilot, lambda: not app.busy)
        tool = app.transcript.query_one(ToolEntry)
        shown = str(tool.query_one(".output").render())
        assert "1\n2\n3\n4" in shown and "20" not in shown.split("more lines")[0]
        tool.focus()
        await pilot.press("enter")
        assert "20" in str(tool.query_one(".output").render())


async def test_old_entries_are_pruned_with_a_marker(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=SIZE) as pilot:
        app.transcript.max_entries = 20
        for n in range(80):
            app.add_line("notice", f"line {n}")
        await pilot.pause()
        entries = app.transcript.entries()
        assert len(entries) <= 20 + 1 and entries[-1].plain_text == "line 79"
        assert "earlier entries" in str(app.transcript.query_one("#earlier").render())


def test_key_argument_names_what_a_call_is_about() -> None:
    from anvil.tui.transcript import key_argument

    assert key_argument("run_command", {"command": "pytest -q"}) == "pytest -q"
    assert key_argument("edit_file", {"path": "a.py", "old_string": "x"}) == "a.py"
    assert key_argument("todo_write", {"todos": [{}, {}]}) == "2 items"
    assert ToolCallStarted("c", "grep", {"pattern": "foo"}, "").args["pattern"] == "foo"


def test_export_markdown_has_every_message() -> None:
    from anvil.frontend.export import export_markdown

    messages = [{"role": "system", "content": "secret system prompt"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "1", "function": {"name": "read_file", "arguments": json.dumps({"path": "a"})}}]},
                {"role": "tool", "tool_call_id": "1", "name": "read_file", "content": "1\tx = 1"},
                {"role": "assistant", "content": "done"}]
    text = export_markdown(messages, session_id="s1", model="m")
    assert "secret" not in text
    assert "## You\n\nhi" in text and '**read_file** `{"path": "a"}`' in text and "1\tx = 1" in text
    assert text.rstrip().endswith("done")


async def test_c_copies_a_message_and_a_click_copies_a_code_block(project: Path) -> None:
    answer = "Use this:\n\n```python\nprint('hi')\n```\n"
    app = make_app(project, [{"text": answer}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "how?")
        await wait_for(pilot, lambda: not app.busy)
        entry = app.transcript.query_one(AssistantEntry)
        entry.focus()
        await pilot.press("c")
        assert app.clipboard == answer
        # A finished reply is drawn from captured lines: the click finds the code block by its line.
        await wait_for(pilot, lambda: entry.frozen.code_blocks)
        first_code_line = next(y for y in range(entry.frozen.line_count) if entry.frozen.code_at(y))
        app.copy_to_clipboard("")
        await pilot.click(entry.frozen, offset=(6, first_code_line))
        assert app.clipboard == "print('hi')"
        await pilot.press("C")
        assert app.clipboard == "print('hi')"


async def test_ctrl_f_finds_text_in_the_transcript(project: Path) -> None:
    app = make_app(project, [{"text": "The needle is here."}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "find it")
        await wait_for(pilot, lambda: not app.busy)
        for n in range(30):
            app.add_line("notice", f"filler {n}")
        await pilot.press("ctrl+f")
        await pilot.press(*"needle")
        await pilot.pause()
        answer = app.transcript.query_one(AssistantEntry)
        assert answer.has_class("-current")
        assert app.query_one("#search .count").render().plain == "1/1"  # type: ignore[attr-defined]
        await pilot.press("escape")
        assert not answer.has_class("-match") and app.prompt.has_focus


async def test_the_demo_plays_through(project: Path, monkeypatch: Any) -> None:
    from anvil.tui import demo

    root = demo.prepare_demo_project()
    monkeypatch.chdir(root)
    demo.demo_environment()
    model = demo.demo_model()
    model.delay = 0
    app = AnvilApp(root, flags={"model": "scripted", "auto_approve": False}, model=model,
                   demo_prompt=demo.DEMO_PROMPT)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(2):  # the two test runs ask for approval
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), timeout=30)
            await pilot.press("y")
        await wait_for(pilot, lambda: any("That was the demo" in t for t in lines(app, "notice")), timeout=30)
        assert "text.lower()" in (root / "wordstat.py").read_text()
        assert app.transcript.query(DiffView)
        assert all(t.status == "completed" for t in app.query_one(TodoSidebar).todos)
        compaction = lines(app, "compaction")
        # a real compaction, not "nothing older to summarise yet" (tests/tui/test_demo.py pins it on any machine)
        assert compaction and compaction[-1].startswith("Compacted:") and "summarised" in compaction[-1]
        state = app.status.state
        assert 0.3 < state.used / state.window < 0.85  # the gauge rose, and stayed below automatic compaction


def test_without_a_terminal_anvil_points_to_headless_mode(project: Path) -> None:
    import subprocess

    from tests.conftest import anvil_command

    done = subprocess.run(anvil_command(), cwd=project, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "needs a terminal" in done.stderr and "anvil -p" in done.stderr


async def test_ask_user_shows_the_question_and_returns_the_answer(project: Path) -> None:
    from anvil.tui.questions import QuestionScreen

    ask = {"name": "ask_user", "arguments": {"question": "Which database?", "options": ["sqlite", "postgres"]}}
    app = make_app(project, [{"tool_calls": [ask]}, {"text": "Postgres it is."}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "set up storage")
        await wait_for(pilot, lambda: isinstance(app.screen, QuestionScreen))
        await pilot.press("2", "enter")
        await wait_for(pilot, lambda: not app.busy)
        assert "The person answered: postgres" in tool_messages(app)[0]


async def test_a_plan_is_approved_with_y(project: Path) -> None:
    from anvil.tui.questions import PlanScreen

    plan = {"name": "exit_plan_mode", "arguments": {"plan": "1. Read the code\n2. Fix the bug"}}
    app = make_app(project, [{"tool_calls": [plan]}, {"text": "Starting."}])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        await submit(pilot, "/mode plan")
        assert app.status.state.mode == "plan"
        await submit(pilot, "plan the fix")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy)
        assert app.runtime is not None and app.runtime.agent.policy.mode != "plan"
        assert app.status.state.mode == app.runtime.agent.policy.mode


async def test_a_subagent_shows_its_steps_nested_under_the_task(project: Path) -> None:
    turns = [{"tool_calls": [{"name": "task", "arguments": {"description": "look around", "prompt": "List files",
                                                             "agent_type": "explore"}}]},
             {"tool_calls": [{"name": "list_files", "arguments": {}}]},
             {"text": "There is a README."},
             {"text": "The sub-agent found a README."}]
    app = make_app(project, turns)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "explore")
        await wait_for(pilot, lambda: not app.busy and app.transcript.query(AssistantEntry))
        task = next(t for t in app.transcript.tools.values() if t.name_ == "task")
        assert any("list" in step.lower() for step in task.nested)
        assert "There is a README." in task.nested
        assert task.status == "ok"


async def test_mcp_command_without_servers_says_how_to_add_one(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.runtime is not None and app.started)
        await submit(pilot, "/mcp")
        assert any("No MCP servers configured" in text for text in lines(app, "notice"))


async def test_undo_and_rewind_in_the_app(project: Path) -> None:
    (project / "app.py").write_text("x = 1\n")
    edit = {"name": "edit_file", "arguments": {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}}
    app = make_app(project, [{"tool_calls": [{"name": "read_file", "arguments": {"path": "app.py"}}]},
                             {"tool_calls": [edit]}, {"text": "Changed."}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "change x")
        await wait_for(pilot, lambda: not app.busy and (project / "app.py").read_text() == "x = 2\n")
        (project / "app.py").write_text("x = 3\n")  # the person edits the file outside anvil
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and "Overwrite" in app.screen.question)
        assert (project / "app.py").read_text() == "x = 3\n"  # nothing overwritten without asking
        await pilot.press("n")
        await wait_for(pilot, lambda: lines(app, "notice")[-1] == "Nothing was changed.")
        assert (project / "app.py").read_text() == "x = 3\n"
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and "Overwrite" in app.screen.question)
        await pilot.press("y")
        await wait_for(pilot, lambda: (project / "app.py").read_text() == "x = 1\n")
        await submit(pilot, "/rewind")
        await wait_for(pilot, lambda: any("/rewind N goes back" in text for text in lines(app, "notice")))
        await submit(pilot, "/rewind 1 chat")
        await wait_for(pilot, lambda: any("back to before turn 1" in text for text in lines(app, "notice")))
        assert app.runtime is not None and len(app.runtime.agent.messages) == 1


async def test_a_plan_is_edited_in_the_app_then_approved(project: Path) -> None:
    from anvil.tui.questions import PlanScreen

    plan = {"name": "exit_plan_mode", "arguments": {"plan": "1. Read the code"}}
    app = make_app(project, [{"tool_calls": [plan]}, {"text": "Starting."}])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        await submit(pilot, "/mode plan")
        await submit(pilot, "plan the fix")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen))
        await pilot.press("e")
        await pilot.press("end", "enter", *"2. Test it")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not app.busy)
        assert app.runtime is not None
        result = next(m for m in app.runtime.agent.messages if m.get("role") == "tool")["content"]
        assert "approved with edits" in result and "2. Test it" in result and "1. Read the code" in result


async def test_the_status_bar_says_whether_commands_are_sandboxed(project: Path) -> None:
    app = make_app(project, [])
    expected = app.runtime.agent.ctx.sandbox.status.label  # type: ignore[union-attr]
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.state.sandbox)
        assert app.status.state.sandbox == expected and expected in str(app.status.render())
    off = make_app(project, [], sandbox={"mode": "off"})
    async with off.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: off.status.state.sandbox)
        assert "sandbox off" in str(off.status.render())
