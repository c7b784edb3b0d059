"""What a new user meets in the app (issue 17): the welcome line, Ctrl+C, history, slash output in view, /help,
the first prompt from the command line, a resumed session's gauge, the status bar at a narrow width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anvil.config import Settings
from anvil.core.model.scripted import ScriptedModel
from anvil.runtime import open_runtime
from anvil.tui.app import AnvilApp
from anvil.tui.approval import ApprovalScreen
from anvil.tui.entries import LineEntry
from anvil.tui.status import StatusState, render_status
from anvil.tui.transcript import AssistantEntry, UserEntry
from tests.tui.conftest import make_app, screen_text, submit, wait_for

SIZE = (120, 35)


def lines(app: AnvilApp, kind: str) -> list[str]:
    return [e.text for e in app.transcript.entries() if isinstance(e, LineEntry) and e.kind == kind]


async def test_a_new_session_opens_on_the_welcome_line_not_a_blank_screen(project: Path,
                                                                         monkeypatch: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANVIL_API_KEY", raising=False)
    runtime = open_runtime(Settings(), project, model=ScriptedModel([], name="anthropic/claude-sonnet-4-5"))
    app = AnvilApp(project, runtime=runtime)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        await pilot.pause(0.2)
        welcome = lines(app, "notice")[0]
        assert "anthropic/claude-sonnet-4-5 (the default)" in welcome
        assert "ANTHROPIC_API_KEY is not set" in welcome and "/model" in welcome and "/help" in welcome
        assert "ANTHROPIC_API_KEY" in screen_text(app)  # on screen, not only in the transcript's model


async def test_ctrl_c_interrupts_a_streaming_turn_instead_of_clearing(project: Path) -> None:
    app = make_app(project, [{"text": "word " * 400}])
    app.runtime.agent.model.delay = 0.02  # type: ignore[union-attr]
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "talk a lot")
        await wait_for(pilot, lambda: app.transcript.query(AssistantEntry))
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.busy)
        assert lines(app, "interrupted") and app.is_running
        answer = app.transcript.query_one(AssistantEntry)
        assert answer.text.count("word") < 400


async def test_ctrl_c_with_text_typed_during_a_turn_clears_it_and_the_turn_goes_on(project: Path) -> None:
    app = make_app(project, [{"text": "a slow but complete answer " * 10}])
    app.runtime.agent.model.delay = 0.02  # type: ignore[union-attr]
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "go")
        await wait_for(pilot, lambda: app.transcript.query(AssistantEntry))
        app.prompt.load_text("a second thought")
        await pilot.press("ctrl+c")
        assert app.prompt.text == "" and app.busy
        await wait_for(pilot, lambda: not app.busy)
        assert not lines(app, "interrupted")


async def test_ctrl_c_on_an_approval_interrupts_the_turn(project: Path) -> None:
    turns = [{"tool_calls": [{"name": "run_command", "arguments": {"command": "echo hi > made.txt"}}]},
             {"text": "never"}]
    app = make_app(project, turns)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "make a file")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.busy and not isinstance(app.screen, ApprovalScreen))
        assert not (project / "made.txt").exists() and lines(app, "interrupted") and app.is_running


async def test_up_down_walk_history_through_a_recalled_slash_command(project: Path) -> None:
    app = make_app(project, [{"text": "ok"}])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        await submit(pilot, "an older prompt")
        await wait_for(pilot, lambda: not app.busy)
        await submit(pilot, "/cost")
        await pilot.press("up")
        assert app.prompt.text == "/cost"
        await pilot.pause()
        assert not app.query_one("#completions").display  # the menu does not take the arrows
        await pilot.press("up")
        assert app.prompt.text == "an older prompt"
        await pilot.press("down")
        assert app.prompt.text == "/cost"
        await pilot.press("backspace")  # typing brings completion back
        await pilot.pause()
        assert app.query_one("#completions").display


async def test_a_slash_command_output_scrolls_into_view(project: Path) -> None:
    app = make_app(project, [{"text": "\n\n".join(f"Paragraph {n}." for n in range(60))}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "write a lot")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause(0.2)
        app.transcript.scroll_home(animate=False)
        await pilot.pause(0.1)
        assert app.transcript.scroll_y == 0
        await submit(pilot, "/cost")
        await wait_for(pilot, lambda: any(t.startswith("Session ") for t in lines(app, "notice")))
        await pilot.pause(0.2)
        assert app.transcript.scroll_y > 0 and "input tokens" in screen_text(app)


async def test_help_descriptions_wrap_under_themselves(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=(70, 70)) as pilot:  # tall enough that /think is on screen with the keys below
        await submit(pilot, "/help")
        await wait_for(pilot, lambda: lines(app, "help"))
        await pilot.pause(0.1)
        shown = screen_text(app).splitlines()
        at = next(i for i, line in enumerate(shown) if "/think [level]" in line)
        column = shown[at].index("show or set")
        continued = shown[at + 1]
        assert continued[:column].strip("█ ") == "" and continued[column:].strip()  # a hanging indent


async def test_a_prompt_given_on_the_command_line_is_the_first_message(project: Path) -> None:
    runtime = open_runtime(Settings(model="scripted"), project, model=ScriptedModel([{"text": "On it."}]))
    app = AnvilApp(project, runtime=runtime, first_prompt="fix the bug")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.transcript.query(AssistantEntry) and not app.busy)
        user = app.transcript.query_one(UserEntry)
        assert user.text == "fix the bug"
        assert runtime.agent.messages[1]["content"] == "fix the bug"


async def test_exit_says_how_to_resume_a_session_with_turns(project: Path) -> None:
    app = make_app(project, [{"text": "ok"}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: not app.busy)
        await submit(pilot, "/exit")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.farewell is not None and "anvil -c" in app.farewell and app.runtime is not None
    assert app.runtime.session.id in app.farewell


async def test_a_resumed_session_shows_its_last_known_usage(project: Path) -> None:
    first = open_runtime(Settings(model="scripted"), project, model=ScriptedModel([{"text": "ok", "cost": 0.5}]))
    async for _ in first.agent.run_turn("hello"):
        pass
    used = first.agent.context.used
    await first.close()
    resumed = open_runtime(Settings(model="scripted"), project, continue_latest=True, model=ScriptedModel([]))
    app = AnvilApp(project, runtime=resumed)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        await wait_for(pilot, lambda: app.status.state.window > 0)
        assert app.status.state.used == used > 0 and app.status.state.estimated
        await submit(pilot, "/cost")
        await wait_for(pilot, lambda: any(t.startswith("Session ") for t in lines(app, "notice")))
        cost = next(t for t in lines(app, "notice") if t.startswith("Session "))
        assert "$0.5000" in cost and f"{used:,} tokens in use (estimated)" in cost


def test_the_status_bar_cuts_the_activity_text_and_keeps_the_gauge_and_cost() -> None:
    state = StatusState(model="anthropic/claude-sonnet-4-5", mode="auto", used=20_000, window=200_000, cost=0.0123,
                        sandbox="sandboxed", busy=True, phase="Running tests in tests/test_a_very_long_name.py " * 3)
    for width in (120, 80, 60):
        shown = render_status(state, width).plain
        assert len(shown) <= width, (width, shown)
        assert "10% 20k/200k" in shown and shown.endswith("$0.0123")
        assert " auto" in shown and "auto-approve" not in shown
    assert "Running tests" in render_status(state, 120).plain


def _text(app: AnvilApp, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


async def test_always_allow_on_a_compound_command_shows_and_saves_every_rule(project: Path, monkeypatch: Any) -> None:
    call = {"name": "run_command", "arguments": {"command": "git status && touch a.txt && ls"}}
    app = make_app(project, [{"tool_calls": [call]}, {"text": "first"}, {"tool_calls": [call]}, {"text": "second"}])
    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY", 0)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "go")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        reasons = _text(app, "#approval-reasons")
        assert "no rule allows: git status" in reasons and "no rule allows: touch a.txt" in reasons
        await pilot.press("a")
        await pilot.pause()
        assert "`git status *`, `touch *` and `ls *`" in _text(app, "#approval-scope-text")
        await pilot.press("s")
        await wait_for(pilot, lambda: not app.busy)
        await submit(pilot, "again")
        await wait_for(pilot, lambda: not app.busy and len(app.transcript.query(AssistantEntry)) >= 2)
        assert not isinstance(app.screen, ApprovalScreen)
        assert any("`git status *`, `touch *` and `ls *` for this session only" in t for t in lines(app, "notice"))


async def test_the_run_tests_approval_shows_the_exact_command_and_where(project: Path) -> None:
    command = "python3 -c 'print(3)'"
    app = make_app(project, [{"tool_calls": [{"name": "run_tests", "arguments": {}}]}, {"text": "done"}],
                   test_command=command)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "test it")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.pause()
        assert command in _text(app, "#approval-command") and str(project) in _text(app, "#approval-cwd")
        await pilot.press("n")
        await wait_for(pilot, lambda: not app.busy)


async def test_undo_names_an_older_turn_and_asks(project: Path) -> None:
    from anvil.tui.confirm import ConfirmScreen

    write = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "draft\n"}}
    app = make_app(project, [{"tool_calls": [write]}, {"text": "written"}, {"text": "just talk"}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "write a note")
        await wait_for(pilot, lambda: not app.busy and (project / "notes.txt").exists())
        await submit(pilot, "what now?")
        await wait_for(pilot, lambda: not app.busy and len(app.transcript.query(AssistantEntry)) >= 2)
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.question == ("The last turn (2) changed no files. Undo turn 1 ('write a note'), "  # type: ignore[attr-defined]
                                       "1 turn back, restoring notes.txt (created)?")
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert (project / "notes.txt").exists()
