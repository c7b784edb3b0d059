"""Images tools return (an MCP server's screenshot, a chart): shown to a model that takes images, in a user
message after the reply's tool results (tool messages carry only text for most providers), and named in the
tool's output either way, so a model that cannot see them knows they exist."""

from __future__ import annotations

from typing import Any


def image_note(count: int, shown: bool) -> str:
    what = "an image" if count == 1 else f"{count} images"
    if shown:
        return f"\n[{what} from this call follow{'s' if count == 1 else ''} in the next message]"
    return f"\n[{what} from this call not shown: this model does not take images]"


def image_message(images: list[tuple[str, dict[str, str]]]) -> dict[str, Any]:
    """One user message with the images of a reply's tool calls, each named by its call."""
    content: list[dict[str, Any]] = [{"type": "text", "text": "Images returned by the tool calls above:"}]
    for name, image in images:
        content.append({"type": "text", "text": f"From {name}:"})
        content.append({"type": "image_url",
                        "image_url": {"url": f"data:{image['mime_type']};base64,{image['data']}"}})
    return {"role": "user", "content": content}
