"""The tables of the settings that are more than one value: ``[permissions]``, ``[sandbox]``, ``[commands]``,
``[acp]`` (``[workflows]`` is in :mod:`anvil.config_workflows`).

Each is a pydantic model with ``extra="forbid"``, so an unknown key is a configuration error naming it; the
attribute docstrings are the documentation ``anvil config`` and the README draw on.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from anvil.core.sandbox.limits import DEFAULT_MAX_PROCESSES


class Permissions(BaseModel):
    """One ``[permissions]`` table, or one ``permissions.toml``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    allow: list[str] = Field(default_factory=list)
    """Patterns that run without asking: commands (``"pytest*"``, ``"git status"``) or tools (``"run_tests(*)"``,
    ``"web_fetch(domain:docs.python.org)"``)."""
    deny: list[str] = Field(default_factory=list)
    """Patterns that are always refused. Deny beats allow."""


class ScopedPermissions(BaseModel):
    """The ``[permissions]`` table of each config file, kept apart: both apply, each in its own scope."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    user: Permissions = Field(default_factory=Permissions)
    """From the user config.toml: rules for every project."""
    project: Permissions = Field(default_factory=Permissions)
    """From the project's .anvil/config.toml."""


class SandboxConfig(BaseModel):
    """``[sandbox]``: the OS sandbox every command the model runs goes through (README: "The sandbox")."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    mode: Literal["auto", "required", "off"] = "auto"
    """``auto``: sandbox commands where the OS can (a notice where not); ``required``: run no command without it;
    ``off``: never."""
    network: bool | list[str] = False
    """Outbound network for commands: false, true, or a list of hosts (``["pypi.org", "*.pythonhosted.org"]``)
    reached through anvil's proxy."""
    writable: list[str] = Field(default_factory=list)
    """More paths commands may write, besides the project, the temp dir and allowed_dirs (``["~/.gradle"]``)."""
    writable_caches: bool = True
    """The package managers' caches in the home directory (~/.cache, ~/.npm, cargo's and go's) are writable."""
    max_processes: int = Field(DEFAULT_MAX_PROCESSES, ge=0)
    """How many processes (threads included) one sandboxed command may have at once; 0 for no cap. A fork bomb
    stops there instead of stalling the machine."""

    @field_validator("network")
    @classmethod
    def _hosts(cls, value: bool | list[str]) -> bool | list[str]:
        for host in value if isinstance(value, list) else []:
            if not host.strip() or any(c in host for c in "/: "):
                raise ValueError(f"a host name or pattern such as \"pypi.org\" or \"*.github.com\", not {host!r}")
        return value


class CommandsConfig(BaseModel):
    """``[commands]``: limits on what commands leave behind."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    log_max_mb: float = Field(50, ge=0)
    """Size of one command's log (its start and end are kept, the cut is stated); 0 for no limit."""
    logs_total_mb: float = Field(500, ge=0)
    """Size of all command logs together; the oldest go first; 0 for no limit."""
    background_timeout: float = Field(7200, ge=0)
    """Seconds a background command may run before it is stopped; 0 for no limit."""


class AcpConfig(BaseModel):
    """``[acp]``: how ``anvil acp`` uses what the editor (the ACP client) offers."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    terminal: bool = False
    """Run the model's foreground commands in the editor's terminal, where you watch them, when the editor offers
    one. They run the same command line as otherwise, so still in anvil's sandbox."""

