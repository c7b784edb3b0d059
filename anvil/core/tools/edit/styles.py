"""Which edit tools the model is offered: search and replace (edit_file, multi_edit), patches (apply_patch), or
both. ``auto`` offers apply_patch to the models trained on its format, OpenAI's GPT-5 family and codex models,
and edit_file and multi_edit to every other model."""

from __future__ import annotations

from typing import Literal

from anvil.core.tools.base import Tool, ToolRegistry

EditStyle = Literal["auto", "replace", "patch", "both"]
EDIT_STYLES: tuple[EditStyle, ...] = ("auto", "replace", "patch", "both")


def writes_patches(model: str) -> bool:
    """Whether a litellm model string names a GPT-5 or codex model (``openai/gpt-5``, ``gpt-5.1-codex``,
    ``openrouter/openai/gpt-5-mini``, ``codex-mini-latest``): the provider prefixes do not matter."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return name.startswith("gpt-5") or "codex" in name


def edit_tools_for(style: EditStyle, model: str) -> list[Tool]:
    """Fresh instances of the edit tools ``style`` gives ``model``."""
    from anvil.core.tools.edit.edit_tools import edit_tools
    from anvil.core.tools.edit.patch_tool import patch_tools

    if style == "auto":
        style = "patch" if writes_patches(model) else "replace"
    return [*(edit_tools() if style in ("replace", "both") else []),
            *(patch_tools() if style in ("patch", "both") else [])]


def offer_edit_tools(registry: ToolRegistry, style: EditStyle, model: str) -> None:
    """Make ``registry`` offer the edit tools ``style`` gives ``model``, and none of the other style."""
    wanted = edit_tools_for(style, model)
    kept = {tool.name for tool in wanted}
    for tool in edit_tools_for("both", model):
        if tool.name not in kept:
            registry.remove(tool.name)
    for tool in wanted:
        if registry.get(tool.name) is None:
            registry.add(tool)
