"""A typed key is drawn at once, even while a streaming reply holds the screen's frames back (echo.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from anvil.tui import echo
from anvil.tui.app import AnvilApp

from .conftest import make_app, wait_for

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def record_displays(app: AnvilApp) -> list[str]:
    """Replace the app's terminal write (a no-op when headless) with a recorder of the text it would write."""
    written: list[str] = []

    def display(screen: Any, renderable: Any) -> None:
        if renderable is not None and not app._batch_count:
            written.append(ANSI.sub("", renderable.render_segments(app.console)))

    app._display = display  # type: ignore[method-assign]
    return written


async def test_keys_show_while_the_screen_is_held(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=(100, 30)) as pilot:
        written = record_displays(app)
        # Markdown.append holds a batch like this across its mounts: no frame is drawn until it ends.
        with app.batch_update():
            await pilot.press(*"hello")
            assert any("hello" in text for text in written)
            await pilot.press("backspace", "backspace", "left", "X")
            assert "heXl" in written[-1]
        assert app.prompt.text == "heXl"


async def test_without_the_fast_path_keys_wait_for_the_frame(project: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(echo, "_disabled", True)
    app = make_app(project, [])
    async with app.run_test(size=(100, 30)) as pilot:
        written = record_displays(app)
        with app.batch_update():
            await pilot.press(*"hello")
            await pilot.pause(0.1)
            assert not any("hello" in text for text in written)
        await wait_for(pilot, lambda: any("hello" in text for text in written))


async def test_a_prompt_that_grows_waits_for_the_layout(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=(100, 30)) as pilot:
        written = record_displays(app)
        with app.batch_update():
            await pilot.press("a", "ctrl+j", "b")
            # Drawn at its one-line size, the second line would be cut off: it waits for the layout.
            assert not any("b" in text.split("a", 1)[-1] for text in written)
            assert not echo.paint_now(app.prompt)
        await wait_for(pilot, lambda: app.prompt.size.height >= 2)
        await pilot.press("c")
        assert echo.paint_now(app.prompt)


async def test_the_search_field_shows_keys_while_the_screen_is_held(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+f")
        await pilot.pause()
        written = record_displays(app)
        with app.batch_update():
            await pilot.press(*"needle")
            assert any("needle" in text for text in written)
