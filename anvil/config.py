"""Typed settings, layered: defaults < user TOML < project TOML < ANVIL_* environment < command-line flags.

- user: ``$XDG_CONFIG_HOME/anvil/config.toml`` (``~/.config/anvil/config.toml``)
- project: ``.anvil/config.toml`` in the project root

Every problem (TOML syntax, an unknown key, a wrong type, a permission pattern that cannot be a rule) becomes
one :class:`ConfigError` naming the file, the key and what was expected. Paths follow the XDG base directories
on every platform, so the files are where a person looks for them.

Permission rules are not layered: the user's and the project's ``[permissions]`` tables both apply, each in
its own scope, and so do the rules "always allow" saved to each scope's ``permissions.toml``
(:func:`permission_rules`). The core gets them as plain lists and never reads these files itself.

The project's settings that run code or send data (hooks, MCP servers, api_base, allow rules, ...: the table
in :mod:`anvil.trust`) apply only when the person trusts the folder with exactly that content
(:func:`project_trust`); the user's own config is always trusted. The decision travels with the settings
(:attr:`Settings.project_trust`), so what is read from ``.anvil/`` later (saved rules, agent files) follows it.
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from anvil import DEFAULT_MODEL
from anvil.config_errors import explain
from anvil.config_imports import IMPORT_KEYS, MCP_JSON, Imported, import_flags, read_imports
from anvil.config_tables import AcpConfig, CommandsConfig, Permissions, SandboxConfig, ScopedPermissions
from anvil.config_workflows import WorkflowsConfig
from anvil.core.hooks.config import HooksConfig
from anvil.core.mcp.config import McpServerConfig
from anvil.core.policy.approval import Scope, parse_rule
from anvil.core.policy.rules import RuleError
from anvil.core.subagents.agent_types import AgentTypeConfig, parse_agent_file
from anvil.core.tools.web.web_tools import WebConfig
from anvil.trust import ProjectTrust, TrustDecision, TrustStore, assess, split_layer


class ConfigError(Exception):
    """A configuration problem, with one message that says where and what to do."""


RuleScope = Literal["user", "project"]


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)

    model: str = DEFAULT_MODEL
    """Any litellm model string (``anthropic/…``, ``openai/…``, ``ollama/…``), or ``scripted`` for the demo."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible server (llama.cpp, vLLM, Ollama), used with ``openai/<name>``."""
    max_retries: int = Field(4, ge=0, le=20)
    """Retries of a model call that failed for a passing reason (rate limit, overload, 5xx, timeout)."""
    max_iterations: int = Field(50, ge=1)
    """Model calls allowed in one turn before anvil stops and reports."""
    auto_approve: bool = False
    """Run every tool without asking, except the hard-deny list. For trusted repositories only."""
    ask_edits: bool = False
    """Ask before applying edits and writes (showing the diff) instead of applying them directly."""
    edit_tools: Literal["auto", "replace", "patch", "both"] = "auto"
    """How the model edits files: ``replace`` (edit_file and multi_edit), ``patch`` (apply_patch, the
    ``*** Begin Patch`` format), ``both``, or ``auto``: apply_patch for OpenAI GPT-5 and codex models, which are
    trained on it, edit_file and multi_edit for the others."""
    mode: Literal["ask", "accept_edits", "auto", "plan"] | None = None
    """Approval mode to start in: ``ask``, ``accept_edits``, ``auto`` or ``plan`` (read and plan only until the
    person approves a plan). Unset: ``auto`` with auto_approve, else ``ask``."""
    context_window: int | None = Field(None, ge=1024)
    """Override the model's context window in tokens."""
    reasoning: Literal["off", "low", "medium", "high"] = "off"
    """Reasoning effort for models that reason (Claude's extended thinking, OpenAI's reasoning models, Gemini,
    DeepSeek): ``off``, ``low``, ``medium`` or ``high``. ``/think LEVEL`` changes it mid-session."""
    thinking_budget: int | None = Field(None, ge=1024)
    """Thinking tokens per reply for providers that take a budget (Anthropic, Gemini); replaces the level's
    default budget when reasoning is on."""
    max_output_tokens: int | None = Field(None, ge=1)
    """Output tokens a reply may use; unset: the provider's default (the model's maximum with thinking on)."""
    retry_output_tokens: int | None = Field(None, ge=1)
    """The output limit of the one retry of a reply cut off in a tool call; unset: twice the limit that cut it,
    within the model's maximum."""
    compact_threshold: float | bool = 0.85
    """Fraction of the usable window at which compaction starts; false turns it off."""
    verify: list[str] = Field(default_factory=list)
    """Commands run in the project root when a turn that changed files ends, e.g. ``["ruff check .", "pytest -q"]``.
    A failure goes back to the model to fix."""
    verify_retries: int = Field(5, ge=0, le=50)
    """Extra model calls allowed for fixing a failed verification before anvil reports it as still failing."""
    verify_timeout: float = Field(600.0, gt=0)
    """Seconds each verification command may run before it is stopped and counted as failed."""
    autofix: bool | dict[str, list[str]] = True
    """Automatic fixers run on the changed files when verification fails, before the model: true (for Python
    ``ruff check --fix`` then ``ruff format``, when ruff is installed), false, or a table of fixer commands per
    language or extension (``python = ["ruff check --fix {paths}"]``; ``[]`` turns one off)."""
    task_prd_chars: int = Field(12_000, ge=500)
    """Characters of a task's PRD put in the system prompt; the rest is cut, saying so."""
    theme: str = "anvil-dark"
    """Name of the TUI theme."""
    allowed_dirs: list[str] = Field(default_factory=list)
    """Directories outside the project that tools may read and change."""
    test_command: str | None = None
    """The command run_tests runs; detected from the project when unset."""
    output_budget: int = Field(16_000, ge=1000)
    """Characters of command output the model sees; the rest is cut in the middle and kept in a log."""
    lint: dict[str, str] = Field(default_factory=dict)
    """Linter per file type run after edits, e.g. ``python = "ruff check --output-format concise {path}"``."""
    permissions: ScopedPermissions = Field(default_factory=ScopedPermissions)
    """Allow and deny rules for commands and tools, written ``[permissions]`` in either config file; each file's
    table is kept in its own scope instead of one replacing the other."""
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    """Shell commands run at session events (``[[hooks.pre_tool_use]]`` ...); see examples/hooks/."""
    web: WebConfig = Field(default_factory=WebConfig)
    """web_fetch and web_search settings (search provider keys may also come from the environment)."""
    agents: dict[str, AgentTypeConfig] = Field(default_factory=dict)
    """Custom sub-agent types (``[agents.reviewer]``); ``.anvil/agents/*.md`` files add more."""
    subagent_max_iterations: int = Field(30, ge=1)
    """Model calls a sub-agent may make before it reports back."""
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers (``[mcp_servers.github]``: command + args for stdio, or url for streamable HTTP)."""
    mask_secrets_for_model: bool = False
    """Mask known secret values in what the model reads too. They are always masked in what anvil writes
    (sessions, command logs, stream-json)."""
    checkpoint_retention_days: float = Field(30, ge=0)
    """Days after its last activity that a session's checkpoints (the copies undo restores) are removed, when
    anvil starts; 0 keeps them forever."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """The OS sandbox for commands: ``mode``, ``network``, ``writable``, ``writable_caches``."""
    commands: CommandsConfig = Field(default_factory=CommandsConfig)
    """Command log caps and the background time limit."""
    acp: AcpConfig = Field(default_factory=AcpConfig)
    """``anvil acp``: whether commands run in the editor's terminal (``terminal = true``)."""
    import_claude_hooks: bool = False
    """Also run the hooks of the project's ``.claude/settings.json`` (Claude Code's format), in a trusted folder."""
    import_mcp_json: bool = False
    """Also start the servers of the project's ``.mcp.json`` (``mcpServers``), in a trusted folder."""
    workflows: WorkflowsConfig = Field(default_factory=WorkflowsConfig)
    """Phased jobs and where jobs keep their files (``[workflows] jobs_dir``, ``[workflows.phased]``)."""

    # Not a setting: set by load_settings. Untrusted unless decided, so a project's files stay inert by default.
    _project_trust: TrustDecision = PrivateAttr(default_factory=TrustDecision)
    _import_notes: list[str] = PrivateAttr(default_factory=list)

    @field_validator("compact_threshold")
    @classmethod
    def _a_fraction(cls, value: float | bool) -> float | bool:
        if not isinstance(value, bool) and not 0 < value <= 1:
            raise ValueError("a fraction of the window above 0 and at most 1 (e.g. 0.85), or false")
        return value

    @property
    def project_trust(self) -> TrustDecision:
        """Whether the project's risky settings apply in this run, and for which content."""
        return self._project_trust

    @property
    def import_notes(self) -> list[str]:
        """What could not be imported from .claude/settings.json or .mcp.json, for the person."""
        return list(self._import_notes)


def xdg_config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def xdg_data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def user_config_dir() -> Path:
    return xdg_config_home() / "anvil"


def data_dir() -> Path:
    return xdg_data_home() / "anvil"


def user_config_path() -> Path:
    return user_config_dir() / "config.toml"


def project_config_path(root: Path) -> Path:
    return root / ".anvil" / "config.toml"


def permission_files(root: Path) -> dict[Scope, Path]:
    """The files "always allow" saves rules to, by scope: anvil writes these, never the person's config.toml."""
    return {"user": user_config_dir() / "permissions.toml", "project": root / ".anvil" / "permissions.toml"}


def read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc}. Check its permissions and encoding.") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Config file {path} is not valid TOML: {exc}. Fix that line, or move the file "
                          "aside to use the defaults.") from exc


def _merge(base: dict[str, Any], layer: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in layer.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# Settings that are tables or lists: set in TOML files, not through single environment variables.
_TABLES = {"permissions", "lint", "allowed_dirs", "hooks", "web", "agents", "mcp_servers", "verify", "sandbox",
           "commands", "acp", "workflows"}


def env_layer(environ: dict[str, str] | os._Environ[str]) -> dict[str, Any]:
    """``ANVIL_<SETTING>`` for every top-level setting that is a plain value (strings are coerced)."""
    layer: dict[str, Any] = {}
    for name in Settings.model_fields:
        value = environ.get("ANVIL_" + name.upper())
        if value is not None and name not in _TABLES:
            layer[name] = value
    return layer


def _scoped(layer: dict[str, Any], scope: RuleScope) -> dict[str, Any]:
    """A config file's ``[permissions]`` under its scope, so merging the files keeps both tables."""
    if "permissions" not in layer:
        return layer
    return {**layer, "permissions": {scope: layer["permissions"]}}


def load_settings(root: Path, flags: dict[str, Any] | None = None, environ: dict[str, str] | None = None, *,
                  trust: bool | None = None) -> Settings:
    """Merge every layer, validating after each so an error names the layer that caused it.

    ``trust``: the project's risky settings apply with True (``--trust``), never with False (the person said
    no), and with None only if the person trusted this folder with exactly this content before.
    """
    env = os.environ if environ is None else environ
    project, user = read_toml(project_config_path(root)), read_toml(user_config_path())
    check = project_trust(root, project, imports=import_flags([user, project], env))
    trusted = check.trusted if trust is None else trust or not check.items
    if not trusted:
        project = split_layer(project)[0]
    layers = [
        (f"User config {user_config_path()}", _scoped(user, "user")),
        (f"Project config {project_config_path(root)}", _scoped(project, "project")),
        ("Environment (ANVIL_* variables)", env_layer(env)),
        ("Command line", {k: v for k, v in (flags or {}).items() if v is not None}),
    ]
    merged: dict[str, Any] = {}
    for source, layer in layers:
        if not layer:
            continue
        candidate = _merge(merged, layer)
        try:
            Settings.model_validate(candidate)
        except ValidationError as exc:
            raise ConfigError(explain(exc, source, candidate, Settings)) from None
        merged = candidate
    settings = Settings.model_validate(merged)
    settings._project_trust = TrustDecision(trusted, None if trust is True else check.digest)
    if trusted and (settings.import_claude_hooks or settings.import_mcp_json):
        _apply_imports(settings, read_imports(root, settings.model_dump(include=set(IMPORT_KEYS))))
    return settings


def _apply_imports(settings: Settings, imported: Imported) -> None:
    """Claude Code's hooks after anvil's own, and the .mcp.json servers anvil's config does not name."""
    hooks = settings.hooks.model_dump(exclude_defaults=True)
    for event, entries in imported.hooks.items():
        hooks[event] = [*hooks.get(event, []), *entries]
    settings.hooks = HooksConfig.model_validate(hooks)
    settings.mcp_servers = {**{name: McpServerConfig.model_validate(table).imported_from(MCP_JSON)
                               for name, table in imported.mcp_servers.items()}, **settings.mcp_servers}
    settings._import_notes = imported.notes


def trust_store() -> TrustStore:
    return TrustStore(data_dir() / "trusted.json")


def project_trust(root: Path, config: dict[str, Any] | None = None, *,
                  imports: dict[str, bool] | None = None) -> ProjectTrust:
    """What the project's configuration would run or change (its config.toml, the allow rules of its
    permissions.toml, its agent files that may change things, the files it imports from other tools) and
    whether the person trusted exactly that. ``config``: the project's config.toml as already read, so the
    check and the settings see the same text; ``imports``: which imports are on (read from the configs and
    the environment when not given)."""
    root = root.resolve()
    config = read_toml(project_config_path(root)) if config is None else config
    risky = split_layer(config)[1]
    saved = _read_rules_file(permission_files(root)["project"]).allow
    flags = imports if imports is not None else import_flags([read_toml(user_config_path()), config], os.environ)
    return assess(root, risky, saved, _agents_that_change_things(root), trust_store(),
                  imported=read_imports(root, flags).content())


def _agents_that_change_things(root: Path) -> dict[str, str]:
    """The text of each agent file in ``.anvil/agents`` whose agent is not read-only, by file name."""
    found: dict[str, str] = {}
    directory = root / ".anvil" / "agents"
    for path in sorted(directory.glob("*.md")) if directory.is_dir() else []:
        try:
            if not parse_agent_file(path).read_only:
                found[path.name] = path.read_text(encoding="utf-8")
        except (ValueError, OSError):  # skipped with a warning when the agents are loaded
            continue
    return found


def project_files_trusted(settings: Settings, root: Path, check: ProjectTrust | None = None) -> bool:
    """Whether what anvil reads from ``.anvil/`` after start-up (saved allow rules, agent files) may apply:
    the person trusted the folder and its risky content is still what they trusted."""
    decision = settings.project_trust
    if not decision.trusted or decision.digest is None:
        return decision.trusted
    check = check or project_trust(root)
    return not check.items or check.digest == decision.digest


def keep_trusted_after_saving(settings: Settings, root: Path) -> None:
    """The person saved an "always allow" rule to this project's permissions.toml: the folder stays trusted
    with it. Call only when the folder was trusted just before the rule was saved."""
    decision = settings.project_trust
    if decision.digest is None:  # --trust: whatever is there applies already
        return
    check = project_trust(root)
    decision.digest = check.digest
    with contextlib.suppress(OSError):  # not remembered: the next start asks again, which is safe
        trust_store().remember(root, check.digest, check.scripts)


def permission_rules(settings: Settings, root: Path) -> dict[Scope, tuple[list[str], list[str]]]:
    """(allow, deny) patterns per scope for the approval policy: the scope's ``[permissions]`` table, then
    the rules saved to its ``permissions.toml``. Every rule is checked here, so a bad one is reported with
    the file it is in."""
    config_files: dict[RuleScope, Path] = {"user": user_config_path(), "project": project_config_path(root)}
    saved = permission_files(root)
    result: dict[Scope, tuple[list[str], list[str]]] = {}
    scopes: tuple[RuleScope, ...] = ("user", "project")
    for scope in scopes:
        allow: list[str] = []
        deny: list[str] = []
        saved_rules = _read_rules_file(saved[scope])
        if scope == "project" and saved_rules.allow and not project_files_trusted(settings, root):
            saved_rules = Permissions(deny=saved_rules.deny)  # a deny rule only restricts: it always applies
        for path, table in ((config_files[scope], getattr(settings.permissions, scope)), (saved[scope], saved_rules)):
            _check_rules(path, table, scope)
            allow += table.allow
            deny += table.deny
        result[scope] = (allow, deny)
    return result


def _read_rules_file(path: Path) -> Permissions:
    """A ``permissions.toml``: its ``allow`` and ``deny`` lists (other keys are left alone)."""
    data = read_toml(path)
    table: dict[str, Any] = {key: data[key] for key in ("allow", "deny") if key in data}
    try:
        return Permissions.model_validate(table)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0])
        raise ConfigError(f"{path}: '{key}' should be a list of strings, e.g. [\"git status\", \"pytest*\"], "
                          f"not {table.get(key)!r}.") from None


def _check_rules(path: Path, table: Permissions, scope: RuleScope) -> None:
    lists: tuple[tuple[Literal["allow", "deny"], list[str]], ...] = (("allow", table.allow), ("deny", table.deny))
    for effect, patterns in lists:
        for pattern in patterns:
            try:
                parse_rule(pattern, effect, scope)
            except RuleError as exc:
                raise ConfigError(f"{path}: {exc}.") from None
