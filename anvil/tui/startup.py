"""The app's theme: before its first paint at the least cost (the name and colours), validated after it.

The full theme loader (anvil.tui.themes) validates every file with pydantic, which costs more than a
third of a bare Textual app's start-up; it runs after the first paint. Before it, the chosen theme's file
is read with tomllib alone and handed to Textual as-is; when the validated themes arrive they replace it
(same name, same colours for a good file, so nothing visibly changes) and any problem is reported then.
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from collections.abc import Awaitable, Callable
from functools import partial
from importlib.resources import files
from pathlib import Path
from typing import Any

from textual.app import App
from textual.theme import Theme

FALLBACK_THEME = "textual-dark"
COLOURS = ("primary", "secondary", "accent", "background", "surface", "panel", "foreground", "warning", "error",
           "success")


def user_config_dir() -> Path:
    # anvil.config says the same, but importing it loads pydantic, which must wait for the first paint.
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "anvil"


def configured_theme(root: Path) -> str | None:
    """The ``theme`` setting from the environment, the project config or the user config, without validation."""
    if os.environ.get("ANVIL_THEME"):
        return os.environ["ANVIL_THEME"]
    for path in (root / ".anvil" / "config.toml", user_config_dir() / "config.toml"):
        with contextlib.suppress(OSError, tomllib.TOMLDecodeError):
            theme = tomllib.loads(path.read_text(encoding="utf-8")).get("theme")
            if isinstance(theme, str):
                return theme
    return None


def _theme_from(data: dict[str, Any]) -> Theme | None:
    try:
        colours = {k: data[k] for k in COLOURS if isinstance(data.get(k), str)}
        variables = data.get("variables") if isinstance(data.get("variables"), dict) else {}
        return Theme(name=str(data["name"]), dark=bool(data.get("dark", True)), variables=dict(variables),
                     **colours)
    except Exception:  # anything odd waits for the real loader, which reports it
        return None


def early_theme(name: str) -> Theme | None:
    """The theme called ``name`` from the user's themes or the bundled ones, read without validation."""
    user_dir = user_config_dir() / "themes"
    candidates: list[Any] = sorted(user_dir.glob("*.toml")) if user_dir.is_dir() else []
    with contextlib.suppress(OSError, ModuleNotFoundError):
        candidates += sorted((p for p in (files("anvil.tui") / "themes_data").iterdir() if p.name.endswith(".toml")),
                             key=lambda p: p.name)
    for path in candidates:
        with contextlib.suppress(OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            if data.get("name") == name:
                return _theme_from(data)
    return None


def paint_early_theme(app: App[Any], wanted: str) -> None:
    """The wanted theme, read cheaply, so the first paint already has the right colours."""
    theme = early_theme(wanted) or early_theme("anvil-dark")
    if theme is not None:
        app.register_theme(theme)
        app.theme = theme.name
    else:
        app.theme = FALLBACK_THEME


def choose_theme(app: App[Any], name: str, *, quiet: bool = False) -> bool:
    """Switch to theme ``name``. An unknown one is reported (unless ``quiet``) and leaves a theme that exists."""
    if name in app.available_themes:
        app.theme = name
        return True
    if not quiet:
        app.notify(f"No theme named {name!r}; /theme lists them.", severity="warning")
    if app.theme not in app.available_themes:
        app.theme = "anvil-dark" if "anvil-dark" in app.available_themes else FALLBACK_THEME
    return False


async def load_themes(app: App[Any], run_step: Callable[[str, Callable[[], Any]], Awaitable[Any]], wanted: str) -> None:
    """Every theme, validated in a warm-up step (``run_step``), then the wanted one; problems in one notification."""
    from anvil.tui import warmup

    try:
        themes, errors = await run_step("themes", partial(warmup.load_themes, user_config_dir() / "themes"))
    except Exception as exc:  # a theme problem is reported, never fatal
        themes, errors = [], [f"Themes could not be loaded: {exc}"]
    for theme in themes:
        app.register_theme(theme)
    choose_theme(app, wanted, quiet=wanted == "anvil-dark")
    if errors:
        app.notify("\n".join(errors), title="Theme problems", severity="warning", timeout=10)
