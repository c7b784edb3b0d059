"""Themes as data: bundled and user TOML files, every broken file reported by name, never a crash."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from anvil.tui import themes
from anvil.tui.themes import (
    bundled_theme_files,
    format_theme_errors,
    load_themes,
    pygments_style_for,
    register_themes,
)

REPO = Path(__file__).resolve().parents[2]
BUNDLED = {"anvil-dark", "anvil-high-contrast", "anvil-light"}

GOOD = """\
name = "ocean"
dark = true
pygments_style = "nord"
primary = "#0077be"
background = "#001f3f"

[variables]
"footer-key-foreground" = "#ff8c00"
"""


@pytest.fixture(autouse=True)
def bundled_styles_afterwards(tmp_path: Path) -> Iterator[None]:
    """Theme loading sets the process-wide theme -> pygments style table: leave it as the bundled themes set it."""
    yield
    load_themes(tmp_path / "no-user-themes")


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    path = tmp_path / "themes"
    path.mkdir()
    return path


def test_bundled_themes_load_without_errors(tmp_path: Path) -> None:
    loaded, errors = load_themes(tmp_path / "missing")
    assert errors == []
    by_name = {theme.name: theme for theme in loaded}
    assert set(by_name) >= BUNDLED
    assert by_name["anvil-dark"].dark and not by_name["anvil-light"].dark
    assert by_name["anvil-high-contrast"].background == "#000000"
    assert pygments_style_for("anvil-dark") == "one-dark"
    assert pygments_style_for("anvil-light") == "default"


def test_bundled_files_ship_in_the_package_and_match_the_top_level_copies() -> None:
    packaged = {entry.name: entry.read_text(encoding="utf-8") for entry in bundled_theme_files()}
    top_level = {path.name: path.read_text(encoding="utf-8") for path in (REPO / "themes").glob("*.toml")}
    assert {f"{name}.toml" for name in BUNDLED} <= set(packaged)
    assert packaged == top_level, "themes/ and anvil/tui/themes_data/ differ: copy the edited file to both"


def test_user_theme_is_loaded_and_can_replace_a_bundled_one(user_dir: Path) -> None:
    (user_dir / "ocean.toml").write_text(GOOD)
    (user_dir / "mine.toml").write_text('name = "anvil-dark"\nprimary = "#ff0000"\npygments_style = "monokai"\n')
    (user_dir / "README.md").write_text("not a theme")
    loaded, errors = load_themes(user_dir)
    assert errors == []
    by_name = {theme.name: theme for theme in loaded}
    assert by_name["ocean"].variables == {"footer-key-foreground": "#ff8c00"}
    assert by_name["anvil-dark"].primary == "#ff0000"
    assert len([t for t in loaded if t.name == "anvil-dark"]) == 1
    assert pygments_style_for("ocean") == "nord"
    assert pygments_style_for("anvil-dark") == "monokai"
    load_themes(user_dir.parent / "elsewhere")  # the user files are gone: so are their styles
    assert pygments_style_for("anvil-dark") == "one-dark"
    assert pygments_style_for("ocean") == themes.DEFAULT_DARK_PYGMENTS


def test_pygments_style_defaults_follow_dark_or_light(user_dir: Path) -> None:
    (user_dir / "paper.toml").write_text('name = "paper"\ndark = false\nprimary = "#333333"\n')
    load_themes(user_dir)
    assert pygments_style_for("paper") == themes.DEFAULT_LIGHT_PYGMENTS
    assert pygments_style_for("textual-light") == themes.DEFAULT_LIGHT_PYGMENTS
    assert pygments_style_for("textual-dark") == themes.DEFAULT_DARK_PYGMENTS
    assert pygments_style_for("no-such-theme") == themes.DEFAULT_DARK_PYGMENTS


def test_each_broken_file_gives_one_error_naming_it_and_good_files_still_load(user_dir: Path) -> None:
    (user_dir / "ocean.toml").write_text(GOOD)
    (user_dir / "syntax.toml").write_text('name = "syntax"\nprimary = "#fff"\ndark = \n')
    (user_dir / "types.toml").write_text('name = "types"\nprimary = "#fff"\ndark = "yes"\n')
    (user_dir / "many.toml").write_text('name = "many"\nprimary = "blurple"\npygments_style = "nope"\nprimay = 1\n')
    (user_dir / "empty.toml").write_text("")
    loaded, errors = load_themes(user_dir)
    assert "ocean" in {theme.name for theme in loaded}
    assert not {"syntax", "types", "many"} & {theme.name for theme in loaded}
    by_file = {Path(error.split(":", 1)[0]).name: error for error in errors}
    assert set(by_file) == {"syntax.toml", "types.toml", "many.toml", "empty.toml"}
    assert str(user_dir / "syntax.toml") in by_file["syntax.toml"]
    assert "not valid TOML" in by_file["syntax.toml"] and "line 3" in by_file["syntax.toml"]
    assert "`dark`" in by_file["types.toml"] and "'yes'" in by_file["types.toml"]
    many = by_file["many.toml"]
    assert "'blurple' is not a colour" in many
    assert "'nope' is not a pygments style" in many
    assert "`primay` is not a theme setting" in many
    assert "`name` is required" in by_file["empty.toml"] and "`primary` is required" in by_file["empty.toml"]


def test_two_user_files_with_one_name_report_the_second(user_dir: Path) -> None:
    (user_dir / "a.toml").write_text(GOOD)
    (user_dir / "b.toml").write_text(GOOD.replace("#0077be", "#123456"))
    loaded, errors = load_themes(user_dir)
    assert [t.primary for t in loaded if t.name == "ocean"] == ["#0077be"]
    assert len(errors) == 1 and "b.toml" in errors[0] and "a.toml" in errors[0]


def test_unreadable_file_is_reported(user_dir: Path) -> None:
    (user_dir / "latin1.toml").write_bytes(b'name = "caf\xe9"\n')
    _, errors = load_themes(user_dir)
    assert len(errors) == 1 and "latin1.toml" in errors[0] and "could not be read" in errors[0]


def test_format_theme_errors_is_one_message() -> None:
    message = format_theme_errors(["a.toml: bad", "b.toml: worse"])
    assert message.splitlines() == ["2 theme files could not be loaded:", "• a.toml: bad", "• b.toml: worse"]


class ThemedApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("hello")


async def test_every_loaded_theme_registers_and_applies(user_dir: Path) -> None:
    (user_dir / "ocean.toml").write_text(GOOD)
    app = ThemedApp()
    async with app.run_test() as pilot:
        assert register_themes(app, user_dir) == []
        for name in [*sorted(BUNDLED), "ocean"]:
            app.theme = name
            await pilot.pause()
            assert app.theme == name
        assert app.current_theme.variables["footer-key-foreground"] == "#ff8c00"
