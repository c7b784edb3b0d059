"""An MCP server built on the mcp SDK, for what anvil's tests need beyond the reference servers: tools that
fail, sleep, list the client's roots, report progress or add a tool at run time (tools/list_changed), a
resource, a prompt, an image, instructions; and servers that misbehave.

    python mcp_demo_server.py                  # stdio
    python mcp_demo_server.py http PORT        # streamable HTTP on 127.0.0.1:PORT/mcp
    python mcp_demo_server.py sse PORT         # the older HTTP+SSE transport on 127.0.0.1:PORT/sse
    python mcp_demo_server.py --banner         # stdio, after a line on stdout that is not JSON-RPC
    python mcp_demo_server.py --junk-only      # writes text to stdout and never speaks MCP
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations at run time.
import base64
import os
import sys
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ListRootsResult, ToolAnnotations

#: a 1x1 PNG, a real image a model could be shown
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")
INSTRUCTIONS = "Use add for sums; the memo://greeting resource greets."


def ask_for_roots() -> ListRoots:
    return ListRoots()


def build() -> MCPServer:
    server = MCPServer("demo", instructions=INSTRUCTIONS)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool(name="fail.hard")
    def fail(reason: str) -> str:
        """Always fails."""
        raise ToolError(f"cannot do it: {reason}")

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def write_file(path: str, content: str) -> str:
        """Write a file, as a filesystem server does (relative to the server's directory)."""
        Path(path).write_text(content)
        return f"wrote {path}"

    @server.tool()
    def picture() -> Image:
        """A tiny image."""
        return Image(data=PNG, format="png")

    @server.tool()
    async def sleepy(seconds: float) -> str:
        """Sleeps."""
        await anyio.sleep(seconds)
        return "woke up"

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Counts, reporting progress at each step."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
            await anyio.sleep(0.3)
        return f"counted to {steps}"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds the tool `fresh` and tells the client its tools changed."""
        server.add_tool(lambda: "fresh and new", name="fresh", description="Added at run time.")
        await ctx.notify_tools_changed()  # to subscriptions/listen streams (2026-07-28 clients)
        await ctx.session.send_tool_list_changed()  # as a notification (clients of earlier versions)
        return "grown"

    @server.tool()
    def roots(listed: Annotated[ListRootsResult, Resolve(ask_for_roots)]) -> str:
        """The roots the client gave."""
        return "\n".join(f"{root.name}: {root.uri}" for root in listed.roots)

    @server.resource("memo://greeting")
    def greeting() -> str:
        return "hello from the resource"

    @server.prompt()
    def review(file: str, focus: str = "bugs") -> str:
        """Review a file."""
        return f"Review {file} for {focus}."

    return server


def main() -> None:
    args = sys.argv[1:]
    if "--junk-only" in args:
        print("Welcome to the demo tool 1.0! Type help for help.", flush=True)
        sys.stdin.read()
        return
    print("demo server starting", file=sys.stderr, flush=True)
    if "--banner" in args:
        print("demo server 1.0 listening on stdio", flush=True)
    server = build()
    if args[:1] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(args[1]))
    elif args[:1] == ["sse"]:
        server.run("sse", host="127.0.0.1", port=int(args[1]))
    else:
        server.run()


if __name__ == "__main__":
    main()
