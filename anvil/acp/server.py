"""The ``anvil acp`` process: JSON-RPC on stdout and nothing else, the SDK's connection, a clean end.

Nothing but JSON-RPC may reach stdout, and a dependency may print anywhere (litellm prints its "Give Feedback"
banner to stdout; a C library may write to file descriptor 1). So the real stdout is moved to a new descriptor
for the connection alone, and descriptor 1 (and ``sys.stdout``) become stderr before anything else runs: what
others print lands in the editor's log of the agent's stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

#: the largest JSON-RPC line accepted (a prompt with embedded files can be big); the SDK's own default
LINE_LIMIT = 50 * 1024 * 1024


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog="anvil acp", description="Run anvil as an Agent Client Protocol agent on stdin and stdout, for an "
        "editor (Zed, JetBrains IDEs, Neovim plugins) that starts it. See the README for the editor's settings.")
    parse.add_argument("--model", help="litellm model string (default: from config or ANVIL_MODEL)")
    parse.add_argument("--api-base", help="base URL of an OpenAI-compatible server")
    parse.add_argument("--mode", choices=["ask", "accept_edits", "auto", "plan"], help="approval mode to start in")
    parse.add_argument("--auto-approve", action="store_true", default=None,
                       help="run every tool without asking, except the hard-deny list")
    parse.add_argument("--trust", action="store_true",
                       help="apply the project's .anvil/ settings that run commands or send data, without asking")
    parse.add_argument("--max-iterations", type=int, metavar="N", help="model calls allowed per turn")
    return parse


def main(argv: list[str]) -> NoReturn:
    args = parser().parse_args(argv)  # exits 2 with a usage message (on stderr) on bad arguments
    if args.max_iterations is not None and args.max_iterations < 1:
        parser().error("--max-iterations must be at least 1")
    out = keep_stdout_for_rpc()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="anvil acp: %(name)s: %(message)s")
    flags = {"model": args.model, "api_base": args.api_base, "auto_approve": args.auto_approve,
             "max_iterations": args.max_iterations, "mode": args.mode}
    code = 0
    try:
        asyncio.run(serve(flags, trust=True if args.trust else None, out=out))
    except KeyboardInterrupt:
        code = 130
    # Every session is closed (hooks, MCP servers, commands, files) and stdout is flushed. Tearing down the
    # interpreter would now cost seconds (litellm's module graph) while the editor waits for the agent to end.
    sys.stderr.flush()
    os._exit(code)


def keep_stdout_for_rpc() -> BinaryIO:
    """The real stdout, for JSON-RPC alone; descriptor 1 and ``sys.stdout`` now write to stderr."""
    sys.stdout.flush()
    rpc = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return rpc


async def serve(flags: dict[str, Any], *, trust: bool | None, out: BinaryIO,
                input: BinaryIO | None = None, cwd: Path | None = None) -> None:
    """Answer the editor until it closes the connection, then end every session."""
    from acp import run_agent

    from anvil.acp.agent import AnvilAgent

    reader, writer = await _streams(input or sys.stdin.buffer, out)
    agent = AnvilAgent(flags, trust=trust, cwd=cwd)
    try:
        await run_agent(agent, writer, reader)  # the SDK's names: what it writes to, then what it reads
    finally:
        await agent.close()


async def _streams(input: BinaryIO, out: BinaryIO) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), input)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)
