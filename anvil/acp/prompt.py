"""An ACP prompt (text, resource links, embedded resources) as the message anvil sends the model.

A resource link to a project file becomes an ``@path`` mention, attached the way the other front ends attach
what the person mentions (:func:`anvil.frontend.prompt.prepare_prompt`); a link to a selection
(``file:///x.py#L10:20``) says which lines. An embedded resource is the editor's own copy of a file, unsaved
changes included, so its text is attached as given. What cannot be attached (images, audio, binary blobs,
links outside the project) is named in the text, and the person is told it was not attached.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from anvil.frontend.prompt import Prompt, prepare_prompt

_LINES = re.compile(r"^L(\d+)(?::(\d+))?$")


def acp_prompt(blocks: Sequence[Any], root: Path) -> Prompt:
    """The message for the model, with every mention and embedded resource attached, and what was left out."""
    parts: list[str] = []
    embedded: list[str] = []
    problems: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(_link(block.uri, block.name, root))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                where = _display(resource.uri, root)
                parts.append(f"`@{where}`")  # quoted: prepare_prompt must not attach the disk's copy over it
                embedded.append(f'<file path="{where}">\n{resource.text.rstrip()}\n</file>')
            elif isinstance(resource, BlobResourceContents):
                parts.append(f"`{_display(resource.uri, root)}`")
                problems.append(f"{_display(resource.uri, root)} is binary and was not attached.")
        else:
            kind = getattr(block, "type", "content")
            problems.append(f"anvil takes text and files; the {kind} in the prompt was not sent to the model.")
    typed = _join(parts)
    prepared = prepare_prompt(typed, root)
    text = prepared.text
    if embedded:
        text += "\n\nAttached from the editor:\n" + "\n".join(embedded)
    return Prompt(typed, text, prepared.attached, (*prepared.problems, *problems))


def _link(uri: str, name: str, root: Path) -> str:
    """A resource link as the text that mentions it: ``@path`` for a project file (attached), else the URI."""
    parsed = urlparse(uri)
    if parsed.scheme not in {"file", ""}:
        return f"[{name}]({uri})"
    path = Path(unquote(parsed.path))
    shown = _display(uri, root)
    lines = ""
    if match := _LINES.match(parsed.fragment):
        first, last = match.group(1), match.group(2) or match.group(1)
        lines = f" (lines {first}-{last})" if first != last else f" (line {first})"
    inside = not path.is_absolute() or path.resolve().is_relative_to(root.resolve())
    if inside and " " not in shown:
        return f"@{shown}{lines}"
    return f"`{shown}`{lines}"


def _display(uri: str, root: Path) -> str:
    """A file URI as the project-relative path the model and the person use (absolute when outside)."""
    parsed = urlparse(uri)
    if parsed.scheme not in {"file", ""}:
        return uri
    path = Path(unquote(parsed.path))
    try:
        return path.resolve().relative_to(root.resolve()).as_posix() if path.is_absolute() else path.as_posix()
    except ValueError:
        return str(path)


def _join(parts: list[str]) -> str:
    """Blocks side by side, as the editor showed them: a space between two that would otherwise run together."""
    text = ""
    for part in parts:
        if text and not text[-1].isspace() and part and not part[0].isspace():
            text += " "
        text += part
    return text
