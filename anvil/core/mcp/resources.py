"""MCP resources for the model: ``list_mcp_resources`` and ``read_mcp_resource``, tools it calls itself (the
person attaches one with ``@server:uri``). They are offered once a server that has resources is ready.

Resources are what a server lets clients read (files, records, documents), so both tools only read: they ask
nobody, like ``read_file``. A resource's text is clipped to the output budget; an image comes with the result
for a model that takes images; other binary content is described.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from anvil.core.mcp.tools import MAX_IMAGE_DATA, clip, describe_resource
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult

#: resources listed in one answer; the rest are counted
MAX_LISTED = 200


class ResourceSource(Protocol):
    """What the tools need of the servers (:class:`anvil.core.mcp.manager.McpManager`)."""

    async def list_resources(self, server: str | None) -> list[tuple[str, Any]]: ...

    async def read_resource_contents(self, server: str, uri: str) -> list[Any]: ...


class ListResourcesArgs(ToolArgs):
    server: str | None = Field(None, description="Only this MCP server's resources; all servers' when omitted.")


class ReadResourceArgs(ToolArgs):
    server: str = Field(description="The MCP server that has the resource, as list_mcp_resources names it.")
    uri: str = Field(description="The resource's URI, exactly as list_mcp_resources gives it.")


class ListMcpResources(Tool):
    name = "list_mcp_resources"
    description = ("List the resources (documents, files, records) the connected MCP servers offer: server, URI, "
                   "name, type and description. Read one with read_mcp_resource.")
    Args = ListResourcesArgs
    kind = "read"

    def __init__(self, source: ResourceSource) -> None:
        self.source = source

    def phase(self, args: Any) -> str:
        return f"Listing the resources of {args.server}" if args.server else "Listing MCP resources"

    async def run(self, args: ListResourcesArgs, ctx: ToolContext) -> ToolResult:
        found = await self.source.list_resources(args.server)
        if not found:
            return ToolResult("No MCP server offers resources" + (f" named {args.server}." if args.server else "."),
                              summary="none")
        lines = [_line(server, resource) for server, resource in found[:MAX_LISTED]]
        if len(found) > MAX_LISTED:
            lines.append(f"... and {len(found) - MAX_LISTED} more; ask for one server at a time.")
        text = clip("\n".join(lines), ctx.settings.output_budget)
        return ToolResult(text, summary=f"{len(found)} resource{'s' if len(found) != 1 else ''}")


class ReadMcpResource(Tool):
    name = "read_mcp_resource"
    description = "Read one resource of an MCP server by its URI (list_mcp_resources lists them)."
    Args = ReadResourceArgs
    kind = "read"

    def __init__(self, source: ResourceSource) -> None:
        self.source = source

    def phase(self, args: Any) -> str:
        return f"Reading {args.uri}"

    async def run(self, args: ReadResourceArgs, ctx: ToolContext) -> ToolResult:
        contents = await self.source.read_resource_contents(args.server, args.uri)
        text = "\n".join(describe_resource(item) for item in contents) or f"[resource {args.uri}: empty]"
        images = [{"mime_type": str(item.mime_type), "data": str(item.blob)} for item in contents
                  if getattr(item, "blob", None) and str(getattr(item, "mime_type", "")).startswith("image/")
                  and len(item.blob) <= MAX_IMAGE_DATA]
        return ToolResult(clip(text, ctx.settings.output_budget), summary=f"{len(text):,} characters",
                          images=images[:1])


def _line(server: str, resource: Any) -> str:
    extras = [text for text in (getattr(resource, "mime_type", None), getattr(resource, "description", None)) if text]
    name = getattr(resource, "title", None) or resource.name
    return f"{server}: {resource.uri} ({name})" + (f" - {'; '.join(str(e) for e in extras)}" if extras else "")
