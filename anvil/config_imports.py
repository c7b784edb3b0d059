"""Configuration other tools keep in a project, read when the person asks for it.

- ``import_claude_hooks = true``: the hooks of Claude Code's ``.claude/settings.json`` run as anvil hooks, in
  Claude Code's dialect (:mod:`anvil.core.hooks.claude`).
- ``import_mcp_json = true``: the ``mcpServers`` of ``.mcp.json`` (Claude Code's and Cursor's format) join
  ``[mcp_servers]``; a server of the same name in anvil's own config wins.

Both run commands, so they apply only in a trusted folder, and what they would run is part of what the person
trusts: :meth:`Imported.content` goes into the folder's trust digest, so an edit of either file asks again. A
file that cannot be read is skipped with a note, never a reason for anvil not to start.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.core.hooks.claude import hooks_from_claude_settings
from anvil.core.mcp.config import servers_from_mcp_json

CLAUDE_SETTINGS = ".claude/settings.json"
MCP_JSON = ".mcp.json"
IMPORT_KEYS = ("import_claude_hooks", "import_mcp_json")
_TRUE = {"1", "true", "yes", "on"}


@dataclass
class Imported:
    """What the imported files add, in anvil's shapes, and what could not be imported."""

    hooks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def content(self) -> dict[str, dict[str, Any]]:
        """By file, the settings it adds (as anvil's config would write them): described and digested for trust."""
        content: dict[str, dict[str, Any]] = {}
        if self.hooks:
            content[CLAUDE_SETTINGS] = {"hooks": self.hooks}
        if self.mcp_servers:
            content[MCP_JSON] = {"mcp_servers": self.mcp_servers}
        return content


def import_flags(layers: list[Mapping[str, Any]], environ: Mapping[str, str]) -> dict[str, bool]:
    """Whether each import is on, as it would be once the folder is trusted: the last config layer that sets
    it wins, then ``ANVIL_IMPORT_*`` in the environment."""
    flags = {key: False for key in IMPORT_KEYS}
    for layer in layers:
        flags.update({key: bool(layer[key]) for key in IMPORT_KEYS if key in layer})
    for key in IMPORT_KEYS:
        value = environ.get("ANVIL_" + key.upper())
        if value is not None:
            flags[key] = value.strip().lower() in _TRUE
    return flags


def read_imports(root: Path, flags: Mapping[str, bool]) -> Imported:
    imported = Imported()
    if flags.get("import_claude_hooks"):
        data = _read_json(root / CLAUDE_SETTINGS, imported.notes)
        if data is not None:
            imported.hooks, skipped = hooks_from_claude_settings(data)
            imported.notes += [f"{CLAUDE_SETTINGS}: skipped {what}." for what in skipped]
    if flags.get("import_mcp_json"):
        data = _read_json(root / MCP_JSON, imported.notes)
        if data is not None:
            imported.mcp_servers, problems = servers_from_mcp_json(data)
            imported.notes += [f"{MCP_JSON}: skipped {what}." for what in problems]
    return imported


def _read_json(path: Path, notes: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        notes.append(f"{path} could not be read ({exc}); nothing was imported from it.")
    except json.JSONDecodeError as exc:
        notes.append(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); nothing was imported from it.")
    return None
