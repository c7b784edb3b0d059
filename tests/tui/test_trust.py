"""The trust question in the app: a modal before the session starts, listing what the folder's configuration
would run; the answer is remembered, and a changed configuration asks again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from anvil.config import project_trust
from anvil.core.model.scripted import ScriptedModel
from anvil.tui.app import AnvilApp
from anvil.tui.transcript import LineEntry
from anvil.tui.trust import TrustScreen
from tests.support.cloned_repo import config_text, make_cloned_repo
from tests.tui.conftest import screen_text, wait_for

SIZE = (140, 45)


def app_for(project: Path) -> AnvilApp:
    return AnvilApp(project, flags={"model": "scripted"}, model=ScriptedModel([{"text": "hello"}]))


async def wait_for_question(pilot: Pilot[Any], app: AnvilApp) -> str:
    """The modal, once drawn: what it shows."""
    await wait_for(pilot, lambda: isinstance(app.screen, TrustScreen) and "Trust this folder?" in screen_text(app))
    return screen_text(app)


def notices(app: AnvilApp) -> list[str]:
    return [e.text for e in app.transcript.entries() if isinstance(e, LineEntry) and e.kind == "notice"]


@pytest.fixture(autouse=True)
def armed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TrustScreen, "ARM_DELAY", 0)


async def test_the_modal_lists_what_would_run_and_remembers_a_yes(project: Path) -> None:
    make_cloned_repo(project)
    app = app_for(project)
    async with app.run_test(size=SIZE) as pilot:
        shown = await wait_for_question(pilot, app)
        assert "Trust this folder?" in shown and "hooks: session_start runs `touch hook-ran`" in shown
        assert "api_base: model requests, with your API key, go to http://127.0.0.1:9/v1" in shown
        assert app.runtime is None and not (project / "hook-ran").exists()  # nothing runs before the answer
        await pilot.press("t")
        await wait_for(pilot, lambda: app.started)
        await wait_for(pilot, lambda: (project / "hook-ran").exists())
        assert app.runtime is not None and app.runtime.settings.auto_approve is True
    assert project_trust(project).remembered

    (project / "hook-ran").unlink()
    again = app_for(project)
    async with again.run_test(size=SIZE) as pilot:  # remembered: no question
        await wait_for(pilot, lambda: again.started)
        assert not isinstance(again.screen, TrustScreen)
        await wait_for(pilot, lambda: (project / "hook-ran").exists())


async def test_no_ignores_the_settings_and_a_changed_config_asks_again(project: Path) -> None:
    make_cloned_repo(project)
    app = app_for(project)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, TrustScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: app.started)
        assert app.runtime is not None and app.runtime.settings.auto_approve is False
        assert app.runtime.settings.hooks.session_start == []
        await wait_for(pilot, lambda: any("not trusted" in n for n in notices(app)))
    assert not (project / "hook-ran").exists() and not project_trust(project).remembered

    asked = app_for(project)  # "not this time": asked again next time, then trusted
    async with asked.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(asked.screen, TrustScreen))
        await pilot.press("t")
        await wait_for(pilot, lambda: asked.started)

    (project / ".anvil" / "config.toml").write_text(config_text("http://127.0.0.1:9/v1", hook="touch changed"))
    changed = app_for(project)
    async with changed.run_test(size=SIZE) as pilot:
        shown = await wait_for_question(pilot, changed)
        assert "session_start runs `touch changed`" in shown
        question = changed.screen.question  # type: ignore[attr-defined]
        assert "changed since you trusted it" in question.intro
        await pilot.press("escape")
        await wait_for(pilot, lambda: changed.started)
    assert not (project / "changed").exists()


async def test_a_key_typed_as_the_modal_opens_does_not_trust(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TrustScreen, "ARM_DELAY", 30)
    make_cloned_repo(project)
    app = app_for(project)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, TrustScreen))
        await pilot.press("t")
        await pilot.pause(0.1)
        assert isinstance(app.screen, TrustScreen) and not app.started
        await pilot.press("n")
        await wait_for(pilot, lambda: app.started)
    assert not project_trust(project).remembered


async def test_trust_flag_applies_without_asking(project: Path) -> None:
    make_cloned_repo(project)
    app = AnvilApp(project, flags={"model": "scripted"}, model=ScriptedModel([]), trust=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        assert not isinstance(app.screen, TrustScreen)
        await wait_for(pilot, lambda: (project / "hook-ran").exists())
    assert not project_trust(project).remembered
