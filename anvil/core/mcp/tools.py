"""MCP tools as anvil tools: names, schemas passed through, and results turned into text for the model.

A server's tool ``search`` on server ``github`` becomes ``mcp__github__search`` (characters outside
``[A-Za-z0-9_-]`` become ``_``; names past 64 characters, the providers' limit, are cut and given a
hash suffix). Its ``inputSchema`` goes to the model as is, since there is no pydantic model to
generate one from; anvil checks only that the required keys are there and leaves the rest to the
server, which validates its own input. Every MCP tool asks before running (rules match the name:
``mcp__github__*(*)``) and counts as changing things unless the server marks it ``readOnlyHint``.

A tool that may change things and whose arguments name files (a filesystem server's ``write_file(path=...)``,
``move_file(source=..., destination=...)``, ``edit_file``) declares those as the paths it writes: the approval
policy then treats a protected one (anvil's configuration, git's files, shell start-up files, a script anvil runs
outside the sandbox) as it does for anvil's own file tools, asking the person whatever the mode or a broad
``mcp__fs__*(*)`` rule, and refusing headless. Which arguments name files is read from their names (``path``,
``file``, ``destination``, ``uri``...), the one thing every filesystem server has in common.

While a call runs, the server's progress notifications become :class:`~anvil.core.events.ToolProgress` events
(at most a few a second). Images a tool returns travel with its result (``ToolResult.images``): the loop shows
them to a model that takes images, and tells another that there were some.

This module never imports ``mcp`` at import time: results are read by attribute, so start-up stays fast.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pydantic import ConfigDict

from anvil.core.events import ToolProgress
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError

PREFIX = "mcp__"
MAX_NAME = 64
MAX_DESCRIPTION = 4000
#: base64 characters of images one result may carry to the model (about 3.75 MB of image)
MAX_IMAGE_DATA = 5_000_000
#: seconds between two progress events of one call (the last one always goes out)
PROGRESS_INTERVAL = 0.25
Progress = Callable[[float, float | None, str | None], Awaitable[None]]
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
#: argument names (lowercased, without ``_`` and ``-``) that name a file or directory
_PATH_KEY = re.compile(r"(path|paths|file|files|filename|filepath|dir|directory|folder|dest|destination|target|"
                       r"source|src|dst|uri|location|output|to|from|old|new)\w*|\w*(path|file|dir|uri|dest)s?")


def sanitize(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, safe for every provider's function-name rules."""
    name = f"{PREFIX}{sanitize(server)}__{sanitize(tool)}"
    if len(name) > MAX_NAME:  # keep it unique when cut: two long names rarely share a hash
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = f"{name[:MAX_NAME - 9]}_{digest}"
    return name


class McpConnection(Protocol):
    """What a tool needs of its server (:class:`anvil.core.mcp.client.McpServer`): its name, and a call."""

    @property
    def name(self) -> str: ...

    async def call(self, tool: str, arguments: dict[str, Any], progress: Progress | None = None) -> Any: ...


class McpArgs(ToolArgs):
    """Whatever the server's schema describes: kept as extra fields and passed through."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool):
    """One tool of one MCP server. Instances carry their own name and description."""

    Args = McpArgs
    kind = "other"  # anvil cannot tell what a server's tool does; whether it mutates comes from the server
    approval = "rule"  # code we know nothing about; rules like mcp__server__*(*) allow it without asking

    def __init__(self, server: McpConnection, remote: Any) -> None:
        self.server = server
        self.remote_name: str = remote.name
        # name/description are class-level on built-in tools; MCP tools are made at run time, one per instance
        self.name = tool_name(server.name, remote.name)  # type: ignore[misc]
        text = (remote.description or getattr(remote, "title", None) or "").strip()
        self.description = (f"[MCP server '{server.name}'] {text or remote.name}")[:MAX_DESCRIPTION]  # type: ignore[misc]
        annotations = getattr(remote, "annotations", None)
        # code anvil knows nothing about changes things unless its server says it only reads
        self.mutates = not (annotations is not None and annotations.read_only_hint)  # type: ignore[misc]
        schema = dict(remote.input_schema or {})
        schema.pop("title", None)
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})  # some providers reject an object schema without properties
        self.input_schema = schema

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.input_schema}}

    def phase(self, args: Any) -> str:
        return f"{self.server.name}: {self.remote_name}"

    def write_targets(self, args: Any) -> list[str]:
        """The files a tool that may change things names in its arguments (see the module's docstring)."""
        if not self.mutates:
            return []
        return list(dict.fromkeys(_named_paths(dict(getattr(args, "model_extra", None) or {}))))

    async def run(self, args: McpArgs, ctx: ToolContext) -> ToolResult:
        arguments = dict(args.model_extra or {})
        missing = [key for key in self.input_schema.get("required", []) if key not in arguments]
        if missing:
            raise ToolError(f"Missing required parameter(s) for {self.name}: {', '.join(missing)}. "
                            "Check the tool's schema and call it again with them.")
        result = await self.server.call(self.remote_name, arguments, _progress_events(ctx, self.name))
        return format_result(self.name, result, ctx.settings.output_budget)


def _named_paths(value: Any, key: str = "", depth: int = 0) -> list[str]:
    """The strings under path-like argument names, in nested objects and lists too (``edits: [{path: ...}]``);
    ``file://`` URIs as paths."""
    if depth > 4:
        return []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _named_paths(v, str(k), depth + 1)]
    if isinstance(value, list):
        return [p for v in value for p in _named_paths(v, key, depth + 1)]
    if (isinstance(value, str) and value.strip() and "\n" not in value and len(value) < 4096
            and _PATH_KEY.fullmatch(key.lower().replace("_", "").replace("-", ""))):
        return [value.removeprefix("file://")]
    return []


def _progress_events(ctx: ToolContext, name: str) -> Progress:
    """The progress callback of one call: its notifications as events, no more often than a few a second."""
    call_id = str(ctx.state.get("call_id", ""))
    last = 0.0

    async def progress(done: float, total: float | None, message: str | None) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PROGRESS_INTERVAL or (total is not None and done >= total):
            last = now
            ctx.emit(ToolProgress(call_id, name, done, total, message or ""))

    return progress


def format_result(name: str, result: Any, budget: int) -> ToolResult:
    """A ``CallToolResult`` as text (text joined, media summarised, ``isError`` as a failed result), with its
    images apart for a model that can look at them."""
    blocks = list(result.content or [])
    parts = [describe_content(block) for block in blocks]
    structured = getattr(result, "structured_content", None)
    if not any(p.strip() for p in parts) and structured is not None:
        parts = [json.dumps(structured, ensure_ascii=False, indent=2)]
    text = "\n".join(p for p in parts if p) or "(no output)"
    text = clip(text, budget)
    failed = bool(getattr(result, "is_error", False))
    first = text.strip().split("\n", 1)[0][:120]
    return ToolResult(f"The MCP tool {name} reported an error:\n{text}" if failed else text, ok=not failed,
                      summary=first if failed else f"{len(text):,} characters", images=images_of(blocks))


def images_of(blocks: list[Any]) -> list[dict[str, str]]:
    """The images among content blocks (``mime_type``, base64 ``data``), as many as fit the cap."""
    images, size = [], 0
    for block in blocks:
        if getattr(block, "type", "") == "image" and str(block.mime_type).startswith("image/"):
            size += len(block.data)
            if size > MAX_IMAGE_DATA:
                break
            images.append({"mime_type": str(block.mime_type), "data": str(block.data)})
    return images


def describe_content(block: Any) -> str:
    """One content block as text; binary content is described, never inlined."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in {"image", "audio"}:
        size = len(block.data) * 3 // 4  # base64
        return f"[{kind} ({block.mime_type}, about {size:,} bytes)]"
    if kind == "resource":
        return describe_resource(block.resource)
    if kind == "resource_link":
        return f"[resource link: {block.name} <{block.uri}>" + (f" - {block.description}]" if block.description
                                                                else "]")
    return f"[{kind or 'unknown'} content: not shown]"


def describe_resource(contents: Any) -> str:
    """A resource's contents: text as is (headed by its URI), blobs summarised."""
    text = getattr(contents, "text", None)
    if text is not None:
        return f"[resource {contents.uri}]\n{text}"
    blob = getattr(contents, "blob", "") or ""
    mime = getattr(contents, "mime_type", None) or "binary"
    what = "an image" if mime.startswith("image/") else "binary, not shown"
    return f"[resource {contents.uri} ({mime}, about {len(blob) * 3 // 4:,} bytes): {what}]"


def clip(text: str, budget: int) -> str:
    """Head and tail of a long output, saying how much was cut from the middle."""
    if len(text) <= budget:
        return text
    keep = max(budget // 2, 1)
    cut = len(text) - 2 * keep
    return f"{text[:keep]}\n[... {cut:,} characters cut: ask the tool for less, e.g. a narrower query ...]\n" \
           f"{text[-keep:]}"
