"""The slash commands, defined once: what each answers, before any front end carries it out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import ContextUsage
from anvil.core.model.scripted import ScriptedModel
from anvil.core.session.store import SessionError
from anvil.frontend.commands import COMMANDS, Command, run_command
from anvil.frontend.effects import Confirm, Exit, Render, Replace, RunEvents, Show, ShowTodos, SwitchModel, follow
from tests.frontend.conftest import MakeSession, events_of

WRITE = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "draft\n"}}


async def run(line: str, session: Any, **kwargs: Any) -> list[Any]:
    return await run_command(line, session=session, commands=kwargs.pop("commands", COMMANDS), keys_help="KEYS",
                             **kwargs)


async def test_unknown_commands_get_a_guess_and_aliases_work(make_session: MakeSession) -> None:
    session = make_session()
    assert await run("/comapct", session) == [Show("Unknown command /comapct. Did you mean /compact? /help lists "
                                                   "them; start with // to send a message that begins with a slash.")]
    assert await run("/q", session) == [Exit()]
    assert await run("/theme", session) == [Show("/theme is only in the full-screen app (`anvil` without --plain): "
                                                 "themes colour its widgets.")]
    help_ = await run("/help", None)  # help works before the session is ready
    assert help_[0].kind == "help" and "/rewind [turn] [code|chat|both]" in help_[0].text
    assert help_[1] == Show("KEYS", "help")
    assert ("/rewind [turn] [code|chat|both]", "list turns, or go back to before one (code, conversation)") in \
        help_[0].rows  # each description apart from its command, for a hanging indent


async def test_commands_that_need_the_session_or_an_idle_turn_say_so(make_session: MakeSession) -> None:
    assert await run("/cost", None) == [Show("anvil is still starting; try again in a moment.")]
    busy = await run("/clear", make_session(), busy=True)
    assert busy == [Show("/clear waits until the running turn ends (interrupt it to go on at once).")]


async def test_a_failing_command_reports_one_line() -> None:
    async def broken(ctx: Any, arg: str) -> list[Any]:
        raise OSError("disk full")

    commands = COMMANDS.with_commands(Command("broken", "/broken", "fails", broken, needs_session=False))
    assert await run("/broken", None, commands=commands) == [Show("/broken failed: OSError: disk full", "error")]
    assert [name for name, _ in commands.completions()][-1] == "broken"


async def test_mode_alone_shows_the_mode_and_the_choices_and_changes_nothing(make_session: MakeSession) -> None:
    session = make_session()
    assert await run("/mode", session) == [Show("Approval mode: ask. Modes: ask, accept_edits, auto, plan; "
                                                "/mode NAME sets one, Shift+Tab cycles them.")]
    assert session.mode == "ask"
    assert await run("/mode accept-edits", session) == [Show("Approval mode: accept_edits.")]
    assert session.mode == "accept_edits"
    assert await run("/mode sideways", session) == [
        Show("Unknown mode 'sideways'. Modes: ask, accept_edits, auto, plan.", "error")]


async def test_undo_says_which_turn_and_asks_first(make_session: MakeSession, project: Path) -> None:
    session = make_session([{"tool_calls": [WRITE]}, {"text": "written"}])
    assert (await run("/undo", session))[0].text.startswith("Nothing to undo")
    await events_of(session.submit("write the notes"))
    [confirm] = await run("/undo", session)
    assert isinstance(confirm, Confirm)
    assert confirm.question == "Undo turn 1 ('write the notes'), restoring notes.txt (created)?"
    assert await follow(confirm, False) == [Show("Nothing was changed.")]
    assert (project / "notes.txt").exists()
    [done] = await follow(confirm, True)
    assert "removed notes.txt" in done.text and not (project / "notes.txt").exists()


async def test_undo_names_an_older_turn_when_the_last_changed_nothing(make_session: MakeSession,
                                                                      project: Path) -> None:
    session = make_session([{"tool_calls": [WRITE]}, {"text": "written"}, {"text": "just talk"},
                            {"text": "more talk"}])
    await events_of(session.submit("write the notes"))
    await events_of(session.submit("what now?"))
    await events_of(session.submit("and then?"))
    [confirm] = await run("/undo", session)
    assert isinstance(confirm, Confirm)
    assert confirm.question == ("The last turn (3) changed no files. Undo turn 1 ('write the notes'), 2 turns back, "
                                "restoring notes.txt (created)?")
    assert await follow(confirm, False) == [Show("Nothing was changed.")] and (project / "notes.txt").exists()


async def test_undo_asks_again_before_overwriting_outside_changes(make_session: MakeSession, project: Path) -> None:
    session = make_session([{"tool_calls": [WRITE]}, {"text": "written"}])
    await events_of(session.submit("write the notes"))
    (project / "notes.txt").write_text("mine\n")
    [confirm] = await run("/undo", session)
    conflict, overwrite = await follow(confirm, True)
    assert "changed outside anvil" in conflict.text and isinstance(overwrite, Confirm)
    assert (project / "notes.txt").read_text() == "mine\n"
    [done] = await follow(overwrite, True)
    assert "removed notes.txt" in done.text and not (project / "notes.txt").exists()


async def test_resume_of_a_missing_session_is_one_error_line(make_session: MakeSession) -> None:
    session = make_session()
    with pytest.raises(SessionError) as raised:
        await session.open_resumed("nosuch")
    assert await run("/resume nosuch", session) == [Show(str(raised.value), "error")]
    assert await run("/resume", session) == [Show("No earlier session to resume.")]


async def test_clear_goes_on_with_a_new_session_in_the_same_mode(make_session: MakeSession) -> None:
    session = make_session([{"text": "Hello."}])
    session.set_mode("auto")
    await events_of(session.submit("hi"))
    replace, said = await run("/clear", session)
    assert isinstance(replace, Replace) and replace.session.id != session.id and replace.session.mode == "auto"
    assert said == Show(f"New conversation (session {replace.session.id}). The previous one is kept: "
                        f"/resume {session.id}")
    resumed = await run(f"/resume {session.id}", replace.session)
    assert isinstance(resumed[0], Replace) and resumed[0].session.id == session.id
    await resumed[0].session.close()


async def test_clear_before_any_turn_promises_no_session_to_resume(make_session: MakeSession) -> None:
    session = make_session()
    replace, said = await run("/clear", session)
    assert isinstance(replace, Replace)
    assert said == Show(f"New conversation (session {replace.session.id}).")  # the empty one was never a file
    assert not session.runtime.session.path.exists()


async def test_model_compact_todos_and_rewind_hand_their_work_to_the_front_end(
        make_session: MakeSession, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("anvil.runtime.build_model", lambda settings: ScriptedModel([], name=settings.model))
    session = make_session([{"text": "hello"}, {"text": "A summary."}])
    await events_of(session.submit("hi"))
    assert isinstance((await run("/compact keep it short", session))[0], RunEvents)
    assert await run("/todos", session) == [ShowTodos(())]
    [switch] = await run("/model other", session)
    assert isinstance(switch, SwitchModel) and switch.name == "other"
    render, said = await switch.run()
    assert isinstance(render, Render) and isinstance(render.events[0], ContextUsage)
    assert said == Show("Model switched to other.") and session.settings.model == "other"
    render, said = await run("/rewind 1 chat", session)
    assert isinstance(render, Render) and said == Show("The conversation is back to before turn 1 (0 messages kept).")


def test_cost_says_what_the_cache_saved_and_never_prices_the_unknown() -> None:
    from anvil.facade import Usage
    from anvil.frontend.commands import cost_text

    cached = Usage(10_000, 500, 0.0123, 4_000, cache_read_tokens=9_000, cache_write_tokens=800, reasoning_tokens=120)
    assert cost_text(cached, "s1", "anthropic/claude-sonnet-4-5") == (
        "Session s1: 10,000 input tokens (9,000 read from the prompt cache, 90% of the input; 800 written to it) "
        "and 500 output tokens (120 of them reasoning), $0.0123. Context: 4,000 tokens in use.")
    unknown = Usage(100, 5, None, 50, unpriced_calls=2)
    assert cost_text(unknown, "s2", "openai/local") == (
        "Session s2: 100 input tokens and 5 output tokens, cost unknown (litellm has no price for openai/local). "
        "Context: 50 tokens in use.")
    partly = Usage(100, 5, 0.5, 50, unpriced_calls=1)
    assert "$0.5000, leaving out 1 calls of unknown price" in cost_text(partly, "s3", "m")


async def test_think_shows_and_sets_the_reasoning_effort(make_session: MakeSession) -> None:
    session = make_session()
    assert await run("/think", session) == [Show("Reasoning: off. /think off|low|medium|high sets it.")]
    assert await run("/think HIGH", session) == [Show("Reasoning: high from the next model call.")]
    assert session.reasoning.level == "high" and session.settings.reasoning == "high"
    assert await run("/think loud", session) == [
        Show("Unknown reasoning level 'loud'. Levels: off, low, medium, high.", "error")]
    budgeted = make_session(thinking_budget=8000)
    assert await run("/think medium", budgeted) == [
        Show("Reasoning: medium, thinking budget 8,000 tokens from the next model call.")]


async def test_think_says_when_the_model_does_not_reason(project: Path) -> None:
    from anvil.config import Settings
    from anvil.facade import SessionFacade
    from anvil.runtime import open_runtime

    session = SessionFacade(open_runtime(Settings(model="openai/gpt-4o"), project))
    try:
        reply = await run("/think low", session)
    finally:
        await session.close()
    assert reply == [Show("Reasoning: low from the next model call. openai/gpt-4o does not reason (litellm's model "
                          "information says so): the setting applies once you switch to a model that does.")]


def test_help_rows_wrap_each_description_under_itself() -> None:
    from anvil.frontend.effects import hanging_rows

    text = hanging_rows((("/a", "one two three four five six seven eight nine ten eleven twelve"), ("/bbb", "x")),
                        width=40)
    lines = text.splitlines()
    assert lines[0].startswith("  /a    one") and all(len(line) <= 40 for line in lines)
    assert lines[1].startswith(" " * 8) and lines[1].strip()  # the wrapped part starts under the description
    assert lines[-1] == "  /bbb  x"


async def test_task_runs_a_task_file_in_the_session(make_session: MakeSession, project: Path) -> None:
    (project / "task.md").write_text("---\ntitle: Notes\nverify: \"grep -q draft notes.txt\"\n---\nWrite notes.\n")
    session = make_session([{"text": "Outline: notes.txt only.", "tool_calls": [WRITE]}, {"text": "Wrote it."}])
    reply = await run("/task task.md", session)
    assert reply[0] == Show("Task: Notes") and isinstance(reply[1], RunEvents)
    events = await events_of(reply[1].events)
    from anvil.core.events import IntentPreview, Notice, TurnEnded

    assert any(isinstance(e, IntentPreview) and e.outline == "Outline: notes.txt only." for e in events)
    from anvil.frontend.lines import describe

    preview = next(e for e in events if isinstance(e, IntentPreview))
    assert describe(preview).text.startswith("The outline above is the model's plan")  # type: ignore[union-attr]
    assert next(e for e in events if isinstance(e, TurnEnded)).reason == "done"
    assert isinstance(events[-1], Notice) and events[-1].message == 'Task "Notes": done.'
    model = session.model
    assert isinstance(model, ScriptedModel)
    assert "# Task\n\n**Title**: Notes" in model.calls[0][0]["content"]
    assert "ask them with ask_user" in model.calls[0][0]["content"]  # somebody is there to answer
    assert (await run("/task", session))[0].text.startswith("Usage: /task FILE")
    missing = await run("/task nowhere.md", session)
    assert missing[0].kind == "error" and "No task file at" in missing[0].text
