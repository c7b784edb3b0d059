"""The approval modal driven from the keyboard, as a person would: every answer, the scope step, the
deny message, focus staying in the modal, and the accidental-yes guard."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Button, Input, Static

from anvil.core.events import ApprovalDecision, ApprovalRequested
from anvil.tui.approval import ApprovalScreen
from anvil.tui.diff_view import DiffView
from anvil.tui.themes import register_themes

CWD = Path("/srv/project")
#: where the policy saves "always allow" rules, as the engine puts it in the request
RULE_FILES = {"project": "/srv/project/.anvil/permissions.toml", "user": "/etc/xdg-fixed/anvil/permissions.toml"}
DIFF = """\
--- a/src/app.py
+++ b/src/app.py
@@ -1,4 +1,5 @@
 import os
-def main():
-    print("hello")
+def main() -> None:
+    \"\"\"Entry point.\"\"\"
+    print("hello, world")
 main()
"""


def command(cmd: str = "git commit -m 'wip' && git push --force", *, pattern: str | None = "git commit *",
            reasons: tuple[str, ...] = ("git push --force rewrites the remote history",)) -> ApprovalRequested:
    return ApprovalRequested("call-1", "run_command", {"command": cmd}, "Running git…", command=cmd,
                             reasons=reasons, suggested_pattern=pattern, cwd=str(CWD), rule_files=RULE_FILES)


def edit() -> ApprovalRequested:
    return ApprovalRequested("call-2", "edit_file", {"path": "src/app.py", "old_string": "a", "new_string": "b"},
                             "Editing app.py…", diff=DIFF, rule_files=RULE_FILES)


class Host(App[None]):
    """A minimal app: pushes the modal on start and records what it was dismissed with."""

    def __init__(self, request: ApprovalRequested) -> None:
        super().__init__()
        self.request = request
        self.decisions: list[ApprovalDecision | None] = []

    def compose(self) -> ComposeResult:
        yield Static("transcript behind the modal")

    def on_mount(self) -> None:
        register_themes(self, Path("/nonexistent"))
        self.theme = "anvil-dark"
        self.push_screen(ApprovalScreen(self.request, CWD), self.decisions.append)

    @property
    def modal(self) -> ApprovalScreen:
        assert isinstance(self.screen, ApprovalScreen)
        return self.screen


@pytest.fixture(autouse=True)
def no_arm_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY", 0)


async def answer(request: ApprovalRequested, *keys: str) -> list[ApprovalDecision | None]:
    app = Host(request)
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
    return app.decisions


def text_of(app: Host, selector: str) -> str:
    content = app.modal.query_one(selector, Static).content
    return getattr(content, "plain", str(content))


async def test_y_allows_once() -> None:
    assert await answer(command(), "y") == [ApprovalDecision(allow=True, by="user")]


async def test_n_and_escape_deny() -> None:
    assert await answer(command(), "n") == [ApprovalDecision(allow=False, by="user")]
    assert await answer(command(), "escape") == [ApprovalDecision(allow=False, by="user")]


async def test_d_sends_a_message_with_the_denial() -> None:
    keys = ["d", *"use make test", "enter"]
    assert await answer(command(), *keys) == [ApprovalDecision(allow=False, message="use make test", by="user")]


async def test_letters_typed_into_the_message_are_text_not_answers() -> None:
    app = Host(command())
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.press("d", "y", "a", "n", "e", "s")
        await pilot.pause()
        assert app.decisions == []
        assert app.modal.query_one(Input).value == "yanes"
        await pilot.press("escape")  # back to the choices, message dropped
        await pilot.pause()
        assert app.decisions == [] and app.modal.step == "choose"
        await pilot.press("y")
        await pilot.pause()
    assert app.decisions == [ApprovalDecision(allow=True, by="user")]


async def test_always_then_project_shows_and_saves_the_exact_pattern() -> None:
    app = Host(command())
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        scope = app.modal.query_one("#approval-scope")
        assert scope.display and not app.modal.query_one("#approval-choose").display
        assert "Always allow `git commit *` from now on?" in text_of(app, "#approval-scope-text")
        labels = {scope: str(app.modal.query_one(f"#approval-scope-{scope}", Button).label)
                  for scope in ("session", "project", "user")}
        assert labels["session"].startswith("s this session")
        assert labels["project"] == "p this project: saved in .anvil/permissions.toml"
        assert labels["user"] == "e everywhere: saved in /etc/xdg-fixed/anvil/permissions.toml"
        await pilot.press("p")
        await pilot.pause()
    assert app.decisions == [ApprovalDecision(allow=True, remember="project", pattern="git commit *", by="user",
                                              patterns=("git commit *",))]


async def test_session_and_user_scopes() -> None:
    expected = ApprovalDecision(allow=True, remember="session", pattern="git commit *", by="user",
                                patterns=("git commit *",))
    assert await answer(command(), "a", "s") == [expected]
    assert (await answer(command(), "a", "e"))[0] == ApprovalDecision(True, "", "user", "git commit *", "user",
                                                                      ("git commit *",))


async def test_escape_backs_out_of_the_scope_step_then_n_denies() -> None:
    app = Host(command())
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.press("a", "escape")
        await pilot.pause()
        assert app.decisions == [] and app.modal.step == "choose"
        await pilot.press("p")  # scope keys mean nothing outside the scope step
        await pilot.pause()
        assert app.decisions == []
        await pilot.press("n")
        await pilot.pause()
    assert app.decisions == [ApprovalDecision(allow=False, by="user")]


async def test_command_cwd_and_risk_reasons_are_shown() -> None:
    reasons = ("recursive forced delete (rm -rf)", "writes outside the project: /etc")
    app = Host(command("rm -rf build /etc/x", pattern="rm *", reasons=reasons))
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        assert text_of(app, "#approval-command") == "rm -rf build /etc/x"
        assert text_of(app, "#approval-cwd") == "in /srv/project"
        shown = text_of(app, "#approval-reasons")
        assert all(reason in shown for reason in reasons)
        assert app.modal.query_one("#approval-dialog").has_class("-risky")
        # the reasons are drawn in the theme's warning text colour
        warning = app.get_css_variables()["text-warning"]
        reasons_widget = app.modal.query_one("#approval-reasons")
        assert reasons_widget.styles.color.hex.lower() == warning.lower()
        assert app.modal.query_one("#approval-command", Static).region.height >= 1


async def test_unparsed_command_offers_no_always_and_says_why() -> None:
    app = Host(command("echo $((", pattern=None))
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert app.decisions == [] and app.modal.step == "choose"
        assert app.modal.query_one("#approval-always", Button).disabled
        assert "no safe rule can be made from this call" in text_of(app, "#approval-no-always")
        await pilot.press("y")
        await pilot.pause()
    assert app.decisions == [ApprovalDecision(allow=True, by="user")]


async def test_a_run_outside_the_sandbox_says_why_always_is_not_offered() -> None:
    request = dataclasses.replace(command("echo hi > /etc/motd", pattern=None),
                                  no_rule_reason="running a command outside the sandbox is asked every time")
    app = Host(request)
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        shown = text_of(app, "#approval-no-always")
        assert "outside the sandbox is asked every time" in shown and "no safe rule" not in shown


async def test_edit_shows_the_diff_and_always_uses_the_tool_name() -> None:
    app = Host(edit())
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        view = app.modal.query_one(DiffView)
        assert (view.additions, view.deletions) == (3, 2)
        assert view.region.height > 5
        await pilot.press("a")
        await pilot.pause()
        assert "edit_file" in text_of(app, "#approval-scope-text")
        await pilot.press("s")
        await pilot.pause()
    assert app.decisions == [ApprovalDecision(allow=True, remember="session", pattern="edit_file", by="user",
                                              patterns=("edit_file",))]


async def test_other_tools_show_their_arguments_compactly() -> None:
    request = ApprovalRequested("c", "kill_command", {"id": "bg-3", "signal": "TERM", "notes": "x" * 500}, "Stopping")
    app = Host(request)
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        shown = text_of(app, "#approval-args")
        assert "id: bg-3" in shown and "signal: TERM" in shown
        assert len(shown) < 300 and "…" in shown


async def test_focus_stays_inside_the_modal() -> None:
    app = Host(command())
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        seen: set[object] = set()
        for _ in range(8):
            await pilot.press("tab")
            await pilot.pause()
            focused = app.focused
            assert focused is not None and focused.screen is app.modal
            seen.add(focused)
        for _ in range(3):
            await pilot.press("shift+tab")
            assert app.focused is not None and app.focused.screen is app.modal
        assert len(seen) == 5  # the body and the four buttons take turns; nothing behind the modal does


async def test_enter_does_nothing_until_a_button_is_chosen() -> None:
    assert await answer(command(), "enter") == []


async def test_allow_keys_wait_for_the_arm_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY", 30)
    # A "y" typed for the prompt as the dialog opens is not a yes; denying needs no delay.
    assert await answer(command(), "y", "a") == []
    assert await answer(command(), "y", "n") == [ApprovalDecision(allow=False, by="user")]


async def test_a_second_key_after_the_answer_is_ignored() -> None:
    assert await answer(command(), "y", "n") == [ApprovalDecision(allow=True, by="user")]


# -- snapshots (fixed terminal size; XDG paths pinned where the screen shows them) ----------------------


async def _settle(pilot: Pilot[None]) -> None:
    await pilot.pause()


async def _open_scope_step(pilot: Pilot[None]) -> None:
    await pilot.pause()  # the modal is pushed from on_mount: keys sent before it is up would miss it
    await pilot.press("a")
    await pilot.pause()


def test_snapshot_command_with_risks(snap_compare: object) -> None:
    reasons = ("recursive forced delete (rm -rf)", "git push --force rewrites the remote history")
    app = Host(command("rm -rf build && git push --force origin main", pattern="rm *", reasons=reasons))
    assert snap_compare(app, terminal_size=(100, 30), run_before=_settle)  # type: ignore[operator]


def test_snapshot_edit_diff_in_scope_step(snap_compare: object, monkeypatch: pytest.MonkeyPatch) -> None:
    assert snap_compare(Host(edit()), terminal_size=(100, 34), run_before=_open_scope_step)  # type: ignore[operator]
