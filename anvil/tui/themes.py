"""Themes as data: TOML files that define a Textual theme plus the pygments style for code and diffs.

Bundled themes live in ``anvil/tui/themes_data/`` (read through importlib.resources, so they are found
in a source checkout and in an installed wheel alike); the repository's top-level ``themes/`` holds
identical copies for people browsing the repo, kept in sync by a test. User themes come from
``$XDG_CONFIG_HOME/anvil/themes/*.toml`` and may replace a bundled theme by using its name.

Loading never raises: each broken file becomes one error string naming the file and what is wrong,
so the app can show every problem in a single notification (as Posting does) and start anyway.

A theme file::

    name = "my-theme"
    dark = true
    pygments_style = "one-dark"      # any pygments style name
    primary = "#4c9aff"              # required; every other colour is optional
    secondary = "#8b7cf6"
    accent = "#f5a742"
    background = "#16181d"
    surface = "#1e2128"
    panel = "#272b34"
    foreground = "#d7dae0"
    warning = "#f0b429"
    error = "#f2545b"
    success = "#3fb950"

    [variables]                      # optional Textual CSS variables
    "footer-key-foreground" = "#f5a742"
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from textual.color import Color, ColorParseError
from textual.theme import BUILTIN_THEMES, Theme

if TYPE_CHECKING:
    from textual.app import App

#: Used when a theme names no pygments style, and for Textual's own themes.
DEFAULT_DARK_PYGMENTS = "one-dark"
DEFAULT_LIGHT_PYGMENTS = "default"
BUNDLED_PACKAGE = "anvil.tui"
BUNDLED_DIR = "themes_data"

#: theme name -> pygments style, filled by load_themes (bundled themes are loaded on first lookup)
_pygments_styles: dict[str, str] = {}


def _check_color(value: str) -> str:
    try:
        Color.parse(value)
    except ColorParseError:
        raise ValueError(f"{value!r} is not a colour (use e.g. \"#1e2128\", \"rgb(30,33,40)\" or \"red\")") from None
    return value


def _check_pygments_style(value: str) -> str:
    from pygments.styles import get_style_by_name
    from pygments.util import ClassNotFound

    try:
        get_style_by_name(value)
    except ClassNotFound:
        raise ValueError(f"{value!r} is not a pygments style (e.g. \"monokai\", \"one-dark\", \"default\")") from None
    return value


ColorStr = Annotated[str, AfterValidator(_check_color)]


class ThemeFile(BaseModel):
    """The schema of a theme file. Strict: TOML has real booleans and strings, so ``dark = "yes"`` is
    a mistake to report, not a value to guess at."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=64)
    """What ``--theme``, ``/theme`` and config ``theme`` use: letters, digits, ``-``, ``_``, ``.``."""
    dark: bool = True
    """Whether this is a dark theme; Textual derives shades in the right direction from it."""
    primary: ColorStr
    """The main colour: focus borders, highlights."""
    secondary: ColorStr | None = None
    accent: ColorStr | None = None
    background: ColorStr | None = None
    surface: ColorStr | None = None
    panel: ColorStr | None = None
    foreground: ColorStr | None = None
    warning: ColorStr | None = None
    """Also the colour of risk reasons in the approval modal."""
    error: ColorStr | None = None
    """Also the tint of removed lines in diffs."""
    success: ColorStr | None = None
    """Also the tint of added lines in diffs."""
    pygments_style: Annotated[str, AfterValidator(_check_pygments_style)] | None = None
    """Pygments style for code and diffs; defaults to a dark or light style to match ``dark``."""
    variables: dict[str, str] = Field(default_factory=dict)
    """Extra Textual CSS variables, e.g. ``"footer-key-foreground" = "#f5a742"``."""

    @model_validator(mode="after")
    def _default_pygments(self) -> ThemeFile:
        if self.pygments_style is None:
            self.pygments_style = DEFAULT_DARK_PYGMENTS if self.dark else DEFAULT_LIGHT_PYGMENTS
        return self

    def to_theme(self) -> Theme:
        colours = self.model_dump(exclude={"pygments_style", "variables", "name", "dark"}, exclude_none=True)
        return Theme(name=self.name, dark=self.dark, variables=dict(self.variables), **colours)


def _describe(error: Any) -> str:
    """One pydantic error as a person reads it: where, and what was expected."""
    where = ".".join(str(part) for part in error["loc"]) or "the file"
    kind = error["type"]
    if kind == "missing":
        return f"`{where}` is required"
    if kind == "extra_forbidden":
        known = ", ".join(ThemeFile.model_fields)
        return f"`{where}` is not a theme setting (known: {known})"
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind in ("value_error", "assertion_error"):
        return f"`{where}`: {message}"
    return f"`{where}`: {message} (got {error['input']!r})"


def parse_theme_file(text: str, source: str) -> tuple[ThemeFile | None, str | None]:
    """Parse one theme file's text; returns (theme, None) or (None, "source: what is wrong")."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, f"{source}: not valid TOML: {exc}"
    try:
        return ThemeFile.model_validate(data), None
    except ValidationError as exc:
        problems = "; ".join(_describe(error) for error in exc.errors())
        return None, f"{source}: {problems}"


def _toml_files(directory: Traversable) -> list[Traversable]:
    try:
        entries = list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted((entry for entry in entries if entry.name.endswith(".toml") and entry.is_file()),
                  key=lambda entry: entry.name)


def bundled_theme_files() -> list[Traversable]:
    """The theme files shipped inside the package."""
    return _toml_files(files(BUNDLED_PACKAGE) / BUNDLED_DIR)


def _load(sources: Iterable[tuple[Traversable, str]]) -> tuple[list[tuple[ThemeFile, str]], list[str]]:
    loaded: list[tuple[ThemeFile, str]] = []
    errors: list[str] = []
    for entry, label in sources:
        try:
            text = entry.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(f"{label}: could not be read ({exc})")
            continue
        theme, error = parse_theme_file(text, label)
        if error is not None:
            errors.append(error)
        elif theme is not None:
            loaded.append((theme, label))
    return loaded, errors


def load_themes(user_dir: Path) -> tuple[list[Theme], list[str]]:
    """Bundled themes, then the user's from ``user_dir/*.toml`` (a missing directory is fine).

    A user theme with a bundled theme's name replaces it. Two user files with the same name: the
    first (by file name) wins and the second is reported. Returns (themes, one error per broken file).
    """
    bundled, errors = _load((entry, f"{entry.name} (bundled)") for entry in bundled_theme_files())
    user_entries: list[Traversable] = _toml_files(user_dir) if user_dir.is_dir() else []
    user, user_errors = _load((entry, str(user_dir / entry.name)) for entry in user_entries)
    errors.extend(user_errors)

    by_name: dict[str, ThemeFile] = {theme.name: theme for theme, _ in bundled}
    user_sources: dict[str, str] = {}
    for theme, label in user:
        if theme.name in user_sources:
            errors.append(f"{label}: theme name {theme.name!r} is already used by {user_sources[theme.name]}; "
                          "this file is ignored")
            continue
        user_sources[theme.name] = label
        by_name[theme.name] = theme

    # Replace, not merge: a theme removed or renamed since the last load must not keep its old style.
    _pygments_styles.clear()
    _pygments_styles.update((theme.name, theme.pygments_style or DEFAULT_DARK_PYGMENTS) for theme in by_name.values())
    return [theme.to_theme() for theme in by_name.values()], errors


def pygments_style_for(theme_name: str) -> str:
    """The pygments style that goes with a theme; Textual's own themes get a dark or light default."""
    if not _pygments_styles:  # the lookup works before the app has loaded themes: use the bundled ones
        bundled, _ = _load((entry, entry.name) for entry in bundled_theme_files())
        _pygments_styles.update((theme.name, theme.pygments_style or DEFAULT_DARK_PYGMENTS) for theme, _ in bundled)
    if theme_name in _pygments_styles:
        return _pygments_styles[theme_name]
    builtin = BUILTIN_THEMES.get(theme_name)
    if builtin is not None and not builtin.dark:
        return DEFAULT_LIGHT_PYGMENTS
    return DEFAULT_DARK_PYGMENTS


def register_themes(app: App[Any], user_dir: Path) -> list[str]:
    """Load every theme and register it with ``app``; returns the errors for one notification."""
    themes, errors = load_themes(user_dir)
    for theme in themes:
        app.register_theme(theme)
    return errors


def format_theme_errors(errors: list[str]) -> str:
    """The text of the single notification that reports every broken theme file."""
    count = len(errors)
    heading = f"{count} theme file{'s' if count != 1 else ''} could not be loaded:"
    return "\n".join([heading, *(f"• {error}" for error in errors)])
