"""The conversation as Markdown (/export in both front ends)."""

from __future__ import annotations

import time
from typing import Any


def export_markdown(messages: list[dict[str, Any]], *, session_id: str, model: str) -> str:
    """The whole conversation as Markdown; the system prompt is left out."""
    out = [f"# anvil session {session_id}", "", f"Model: {model} · exported {time.strftime('%Y-%m-%d %H:%M')}", ""]
    for message in messages:
        role = message.get("role")
        content = str(message.get("content") or "").rstrip()
        if role == "user":
            out += ["## You", "", content, ""]
        elif role == "assistant":
            out += ["## anvil", ""] + ([content, ""] if content else [])
            for call in message.get("tool_calls") or []:
                fn = call.get("function", {})
                out += [f"**{fn.get('name')}** `{fn.get('arguments', '')}`", ""]
        elif role == "tool":
            fence = "````" if "```" in content else "```"
            out += [f"<details><summary>{message.get('name', 'tool')} result</summary>", "", fence, content, fence,
                    "", "</details>", ""]
    return "\n".join(out).rstrip() + "\n"
