"""Opening what an MCP server speaks over: a local process on stdio, streamable HTTP, or the older HTTP+SSE
transport. And the mcp package itself: imported in a worker thread (about a second), its logging kept off the
terminal, and its absence reported as the broken installation it is.

The SDK logs through :mod:`logging` (a traceback for every line a server writes to stdout that is not
JSON-RPC, a dropped stream). With no handler configured Python prints those on stderr, over the screen a front
end draws, so they go to ``<log dir>/sdk.log`` instead; anvil reports what matters in its own words.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from anvil.core.mcp.config import McpServerConfig, expand_env
from anvil.core.private_files import open_private, private_dir

SETUP_ERROR = ("anvil's installation is incomplete: the mcp package (2.2 or newer, below 3) cannot be imported "
               "({cause}). Reinstall anvil with its dependencies, e.g. `pip install --upgrade anvil` or "
               "`pip install -e .` in its checkout")


class McpSetupError(Exception):
    """The mcp package is missing or too old: no server can start until anvil is reinstalled."""


async def load_mcp() -> None:
    """Import the mcp package in a thread: it takes about a second, which would freeze a front end's loop."""
    if "mcp.client.sse" not in sys.modules:
        await asyncio.to_thread(import_mcp)


def import_mcp() -> None:
    """The mcp package's client modules (a front end may load them ahead, in a pause of typing)."""
    try:
        import mcp.client.sse
        import mcp.client.stdio
        import mcp.client.streamable_http  # noqa: F401
    except ImportError as exc:  # a missing package, or mcp 1.x without the names anvil uses
        raise McpSetupError(SETUP_ERROR.format(cause=exc)) from exc


class _SdkLog(logging.Handler):
    """Appends the SDK's log records to a file; a file that cannot be written loses them quietly."""

    path: Path | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.path is None:
            return
        text = self.format(record)
        if record.exc_info:
            text += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
        with contextlib.suppress(OSError):
            private_dir(self.path.parent)
            with os.fdopen(open_private(self.path, os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8") as log:
                log.write(text + "\n")


_SDK_LOG = _SdkLog(logging.WARNING)
_SDK_LOG.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))


def keep_sdk_logs_in(log_dir: Path) -> None:
    _SDK_LOG.path = log_dir / "sdk.log"
    logger = logging.getLogger("mcp")
    if _SDK_LOG not in logger.handlers:
        logger.addHandler(_SDK_LOG)
        logger.propagate = False


async def open_transport(config: McpServerConfig, root: Path, errlog: Any, stack: contextlib.AsyncExitStack) -> Any:
    """The transport a ``Client`` enters. ``errlog``: where a stdio server's stderr goes."""
    if config.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(expand_env(config.url or ""), headers=_headers(config))
    if config.transport == "http":
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

        http = await stack.enter_async_context(create_mcp_http_client(headers=_headers(config)))
        return streamable_http_client(expand_env(config.url or ""), http_client=http)
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    cwd = (root / config.cwd).resolve() if config.cwd else root
    params = StdioServerParameters(command=expand_env(config.command or ""),
                                   args=[expand_env(arg) for arg in config.args], cwd=cwd,
                                   env={k: expand_env(v) for k, v in config.env.items()})
    return stdio_client(params, errlog=errlog)


def _headers(config: McpServerConfig) -> dict[str, str]:
    return {key: expand_env(value) for key, value in config.headers.items()}
