"""An MCP server's prompts as slash commands: ``/mcp__<server>__<prompt> args`` fetches the prompt and sends its
messages as the person's next message.

Arguments are ``name=value`` words (quoted as in a shell: ``city="New York"``), or bare values taken in the
order the prompt declares its arguments; a prompt with one argument takes the whole rest of the line.
"""

from __future__ import annotations

import shlex
from typing import Any

from anvil.core.mcp.tools import describe_content, tool_name
from anvil.core.tools.errors import ToolError


def command_name(server: str, prompt: str) -> str:
    """``mcp__<server>__<prompt>``, the slash command's name (named like the server's tools)."""
    return tool_name(server, prompt)


def usage(command: str, prompt: Any) -> str:
    words = [f"{a.name}=…" if a.required else f"[{a.name}=…]" for a in (prompt.arguments or [])]
    return " ".join([f"/{command}", *words])


def parse_arguments(command: str, prompt: Any, text: str) -> dict[str, str]:
    """The prompt's arguments from what the person typed after the command; a missing required one is an
    error that shows the command's usage."""
    declared = [argument.name for argument in prompt.arguments or []]
    if len(declared) == 1 and text.strip() and not text.strip().startswith(f"{declared[0]}="):
        values = {declared[0]: text.strip()}
    else:
        values = _words(command, prompt, text, declared)
    missing = [a.name for a in prompt.arguments or [] if a.required and not values.get(a.name)]
    if missing:
        raise ToolError(f"/{command} needs {', '.join(missing)}: {usage(command, prompt)}")
    return values


def _words(command: str, prompt: Any, text: str, declared: list[str]) -> dict[str, str]:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ToolError(f"/{command}: {exc} in the arguments. Usage: {usage(command, prompt)}") from None
    values: dict[str, str] = {}
    loose: list[str] = []
    for word in words:
        key, equals, value = word.partition("=")
        if equals and key in declared:
            values[key] = value
        else:
            loose.append(word)
    for name in declared:
        if name not in values and loose:
            values[name] = loose.pop(0)
    if loose:
        raise ToolError(f"/{command} got more values than it has arguments ({' '.join(loose)}). "
                        f"Usage: {usage(command, prompt)}")
    return values


def render(result: Any) -> str:
    """A ``GetPromptResult``'s messages as the text of one message: the user's parts as they are, the others
    marked with their role."""
    parts = []
    for message in result.messages:
        text = describe_content(message.content)
        parts.append(text if message.role == "user" else f"[{message.role}] {text}")
    return "\n\n".join(part for part in parts if part.strip())
