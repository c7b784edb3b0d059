"""What the app shares with `anvil --plain`, shown the same way: approvals that tell the truth, /mode, /undo,
/resume, MCP prompts as slash commands, a long call's progress and the one-line entries
(tests/plain/test_shared_behaviour.py is the plain REPL's twin of this file)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from textual.widgets import Button

from anvil.config import user_config_dir
from anvil.core.events import ApprovalAnswered, Retrying, ToolCallStarted, ToolProgress
from anvil.core.session.store import SessionError
from anvil.tui.approval import ApprovalScreen
from anvil.tui.confirm import ConfirmScreen
from anvil.tui.prompt_input import Composer
from anvil.tui.transcript import LineEntry, ToolEntry
from tests.support.frontend_scripts import CD_THEN_TOUCH, PROTECTED_REASON, TOUCH, WRITE, WRITE_CONFIG, allow_cd
from tests.support.mcp_servers import demo_config
from tests.tui.conftest import make_app, submit, wait_for

SIZE = (120, 40)


def lines(app: object, kind: str) -> list[str]:
    return [e.text for e in app.transcript.entries() if isinstance(e, LineEntry) and e.kind == kind]  # type: ignore[attr-defined]


def shown(screen: ApprovalScreen, selector: str) -> str:
    widget = screen.query_one(selector)
    content = widget.label if isinstance(widget, Button) else widget.content  # type: ignore[attr-defined]
    return getattr(content, "plain", str(content))


async def test_always_allow_names_the_files_rules_are_saved_to(project: Path) -> None:
    app = make_app(project, TOUCH)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "make the file")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("a")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        assert shown(modal, "#approval-scope-project") == "p this project: saved in .anvil/permissions.toml"
        assert shown(modal, "#approval-scope-user") == (
            f"e everywhere: saved in {user_config_dir() / 'permissions.toml'}")
        await pilot.press("e")
        await wait_for(pilot, lambda: not app.busy)
        assert tomllib.loads((user_config_dir() / "permissions.toml").read_text())["allow"] == ["touch *"]
        assert lines(app, "notice")[-1] == (f"Always allowed: `touch *` everywhere (saved in "
                                            f"{user_config_dir() / 'permissions.toml'}).")


async def test_the_approval_shows_the_directory_the_policy_evaluated(project: Path) -> None:
    allow_cd(project)
    app = make_app(project, CD_THEN_TOUCH)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "make it in sub")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        assert shown(modal, "#approval-command") == "touch here.txt"
        assert shown(modal, "#approval-cwd") == f"in {project / 'sub'}"
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy)
        assert (project / "sub" / "here.txt").exists()


async def test_writing_anvils_config_asks_even_in_auto_mode_showing_why_and_the_diff(project: Path) -> None:
    app = make_app(project, WRITE_CONFIG, auto_approve=True)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "grant yourself everything")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        assert shown(modal, "#approval-reasons") == f"⚠ {PROTECTED_REASON}"
        assert "+auto_approve = true" in (modal.request.diff or "") and modal.query("#approval-diff")
        await pilot.press("n")
        await wait_for(pilot, lambda: not app.busy)
        assert not (project / ".anvil" / "config.toml").exists()


async def test_mode_alone_shows_the_mode_and_the_choices(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        await submit(pilot, "/mode")
        assert lines(app, "notice")[-1] == ("Approval mode: ask. Modes: ask, accept_edits, auto, plan; /mode NAME "
                                            "sets one, Shift+Tab cycles them.")
        assert app.session is not None and app.session.mode == "ask" and app.status.state.mode == "ask"
        await submit(pilot, "/mode auto")
        assert app.status.state.mode == "auto"


async def test_undo_says_which_turn_and_no_keeps_the_files(project: Path) -> None:
    app = make_app(project, WRITE)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "write a note")
        await wait_for(pilot, lambda: not app.busy and (project / "notes.txt").exists())
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.question == "Undo turn 1 ('write a note'), restoring notes.txt (created)?"  # type: ignore[attr-defined]
        await pilot.press("n")
        await wait_for(pilot, lambda: lines(app, "notice")[-1:] == ["Nothing was changed."])
        assert (project / "notes.txt").read_text() == "draft\n"
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: not (project / "notes.txt").exists())


async def test_resume_of_a_missing_session_is_one_error_line(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        assert app.runtime is not None
        with pytest.raises(SessionError) as missing:
            app.runtime.store.open("nosuch")
        await submit(pilot, "/resume nosuch")
        assert lines(app, "error") == [str(missing.value)]


async def test_one_liners_are_the_shared_ones(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        await app.renderer.dispatch(Retrying(0, 3, 1.5, "The provider is overloaded"))
        assert lines(app, "retry") == ["The provider is overloaded; retrying in 1.5s (attempt 1 of 3)"]
        await app.renderer.dispatch(ToolCallStarted("c1", "run_command", {"command": "rm -rf /"}, "Running rm"))
        await app.renderer.dispatch(ApprovalAnswered("c1", "run_command", False, "hard-deny", "Refused: it wipes."))
        await pilot.pause()
        assert app.transcript.query_one(ToolEntry).detail == "refused by hard-deny: Refused: it wipes."


async def test_an_mcp_prompt_is_a_slash_command_and_progress_shows_in_the_status_bar(project: Path) -> None:
    app = make_app(project, [{"text": "reviewed"}], mcp_servers={"demo": demo_config()})
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None and app.session.mcp_prompt_commands(), timeout=30)
        await pilot.press(*"/mcp__demo__re")
        menu = app.query_one(Composer).menu
        await wait_for(pilot, lambda: menu.display)
        await pilot.press("tab")
        assert app.prompt.text == "/mcp__demo__review "
        await pilot.press(*"app.py", "enter")
        await wait_for(pilot, lambda: not app.busy and app.runtime.agent.model.remaining == 0)  # type: ignore[union-attr]
        sent = app.runtime.agent.model.calls[0][-1]["content"]  # type: ignore[union-attr]
        assert sent == "Review app.py for bugs."
        assert "/mcp__demo__review: Review app.py for bugs." in lines(app, "notice")
        await submit(pilot, "/mcp__demo__review")
        await wait_for(pilot, lambda: lines(app, "error")[-1:] == [
            "/mcp__demo__review needs file: /mcp__demo__review file=… [focus=…]"])

        await app.renderer.dispatch(ToolCallStarted("c1", "mcp__demo__count", {"steps": 4}, "demo: count"))
        await app.renderer.dispatch(ToolProgress("c1", "mcp__demo__count", 2, 4, "step 2"))
        assert app.status.state.phase == "demo: count: 2/4 (50%) · step 2"
