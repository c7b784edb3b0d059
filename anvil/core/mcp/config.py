"""Configuration of MCP servers (``[mcp_servers.<name>]``, or the ``mcpServers`` of a project's ``.mcp.json``)
and the status ``/mcp`` shows; see client.py."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

ServerState = Literal["starting", "ready", "failed", "stopped"]
Transport = Literal["stdio", "http", "sse"]
#: ``${VAR}``, or ``${VAR:-default}`` (the default when VAR is unset or empty), as Claude Code's .mcp.json has them
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
#: seconds one tool call may take unless the server's ``call_timeout`` says otherwise
DEFAULT_CALL_TIMEOUT = 300.0


class McpServerConfig(BaseModel):
    """One MCP server: ``command`` (+ ``args``, ``env``) for a local stdio server, or ``url`` for HTTP."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    type: Transport | None = None
    """How anvil talks to it: ``stdio`` (a local ``command``), ``http`` (streamable HTTP at ``url``) or ``sse``
    (the older HTTP+SSE transport at ``url``). Unset: ``stdio`` with a command, ``http`` with a url."""
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
    call_timeout: float = Field(DEFAULT_CALL_TIMEOUT, gt=0)
    """Seconds one tool call may take before it is abandoned with an error (default 300)."""

    # Not a setting: where the entry came from, for messages that tell the person what to fix.
    _defined_in: str = PrivateAttr(default="")

    def where(self, name: str) -> str:
        """Where the person edits this server: anvil's table, or the other tool's file it was imported from."""
        return f"'{name}' in {self._defined_in}" if self._defined_in else f"[mcp_servers.{name}] in the config"

    def imported_from(self, path: str) -> McpServerConfig:
        self._defined_in = path
        return self

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (a local server over stdio) or 'url' (streamable HTTP), "
                             "exactly one of them")
        if self.type == "stdio" and self.command is None:
            raise ValueError("type = \"stdio\" runs a local 'command'; give one (or type = \"http\" for a url)")
        if self.type in ("http", "sse") and self.url is None:
            raise ValueError(f"type = \"{self.type}\" connects to a 'url'; give one (or type = \"stdio\" for a "
                             "command)")
        return self

    @property
    def transport(self) -> Transport:
        return self.type or ("stdio" if self.command is not None else "http")


@dataclass
class ServerStatus:
    """What ``/mcp`` shows for one server."""

    name: str
    state: ServerState
    tools: list[str] = field(default_factory=list)
    error: str | None = None
    transport: Transport = "stdio"
    #: tools the server offers that anvil cannot call (they need task support): left out, named here
    skipped: list[str] = field(default_factory=list)
    #: the server's prompts, as the slash commands that run them
    prompts: list[str] = field(default_factory=list)


def expand_env(value: str, environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """``${VAR}`` replaced from the environment (unset variables become empty, or the ``:-default``), so secrets
    stay out of config."""
    env = os.environ if environ is None else environ
    return _ENV_REF.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), value)


#: the transport names other tools write in .mcp.json, in anvil's words
_MCP_JSON_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http",
                   "sse": "sse"}
_MCP_JSON_KEYS = ("command", "args", "env", "cwd", "url", "headers")


def servers_from_mcp_json(data: Any) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The ``mcpServers`` of a ``.mcp.json`` (Claude Code's and Cursor's format) as anvil's ``[mcp_servers]``
    tables, and a line for each server that cannot be used. Keys other tools use that anvil has no use for are
    left out."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return {}, ["it has no \"mcpServers\" object"]
    found: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            problems.append(f"server {name!r} is not an object")
            continue
        table = {key: entry[key] for key in _MCP_JSON_KEYS if key in entry}
        kind = entry.get("type", entry.get("transport"))
        if kind is not None:
            if kind not in _MCP_JSON_TYPES:
                problems.append(f"server {name!r} has type {kind!r}, which anvil does not speak (stdio, http, sse)")
                continue
            table["type"] = _MCP_JSON_TYPES[kind]
        if entry.get("disabled") is True:
            table["enabled"] = False
        try:
            McpServerConfig.model_validate(table)
        except ValidationError as exc:
            problems.append(f"server {name!r}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}")
            continue
        found[name] = table
    return found, problems
