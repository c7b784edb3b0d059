"""Configuration of MCP servers (``[mcp_servers.<name>]``) and the status ``/mcp`` shows; see client.py."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ServerState = Literal["starting", "ready", "failed", "stopped"]
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpServerConfig(BaseModel):
    """One MCP server: ``command`` (+ ``args``, ``env``) for a local stdio server, or ``url`` for HTTP."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    command: str | None = None
    """The program that runs a local server speaking MCP over stdio, e.g. ``npx`` or ``uvx``."""
    args: list[str] = Field(default_factory=list)
    """Arguments of ``command``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for ``command``; ``${VAR}`` is replaced from anvil's environment."""
    cwd: str | None = None
    """Working directory of ``command``, relative to the project root (default: the root)."""
    url: str | None = None
    """The endpoint of a streamable-HTTP server, e.g. ``https://example.com/mcp``."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent to ``url`` (e.g. Authorization); ``${VAR}`` is replaced from the environment."""
    enabled: bool = True
    """false keeps the entry but does not start the server."""
    start_timeout: float = Field(30.0, gt=0)
    """Seconds the server may take to start and list its tools before it is reported as failed."""
    call_timeout: float = Field(300.0, gt=0)
    """Seconds one tool call may take before it is abandoned with an error."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (a local server over stdio) or 'url' (streamable HTTP), "
                             "exactly one of them")
        return self


@dataclass
class ServerStatus:
    """What ``/mcp`` shows for one server."""

    name: str
    state: ServerState
    tools: list[str] = field(default_factory=list)
    error: str | None = None
    transport: Literal["stdio", "http"] = "stdio"


def expand_env(value: str, environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """``${VAR}`` replaced from the environment (unset variables become empty), so secrets stay out of config."""
    env = os.environ if environ is None else environ
    return _ENV_REF.sub(lambda m: env.get(m.group(1), ""), value)
