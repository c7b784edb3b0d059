"""Approval policy: decides, for each tool call, whether it runs, is asked about, or is refused.

Front ends never decide; they only ask the person when the verdict is ``ask``. Headless mode turns
``ask`` into a refusal that tells the model why.

What needs asking, by default:
- ``run_command``: the command policy (:mod:`anvil.core.command_policy`): parsed into simple commands,
  each allowed by a rule on its own, risky forms and the hard-deny list handled there.
- other tools that declare ``needs_approval`` (kill_command, run_tests, later MCP and web tools): tool
  rules written ``name(*)`` (``run_tests(*)``, ``mcp__github__*(*)``), else ask.
- edits and writes apply without asking, unless ``ask_edits`` is on and the mode is ``ask``.
- reads, searches and todos never ask.

Rules come in three scopes. ``session`` rules live in memory. ``project`` and ``user`` rules are read
from the ``[permissions]`` tables of ``.anvil/config.toml`` and the user config, plus the files anvil
writes when the person picks "always allow": ``.anvil/permissions.toml`` and
``$XDG_CONFIG_HOME/anvil/permissions.toml``. anvil writes only those files, never the person's
hand-written config, so nothing they wrote (comments included) is lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from anvil.core.tools.base import Tool, ToolContext

Action = Literal["allow", "ask", "deny"]
Scope = Literal["session", "project", "user"]
SCOPES: tuple[Scope, ...] = ("session", "project", "user")
#: ask: commands are asked about; accept_edits: edits apply without asking even when ask_edits is on;
#: auto: everything runs except the hard-deny list. Front ends cycle these (Shift+Tab).
Mode = Literal["ask", "accept_edits", "auto"]
MODES: tuple[Mode, ...] = ("ask", "accept_edits", "auto")
EDIT_TOOLS = frozenset({"write_file", "edit_file", "multi_edit"})
_TOOL_RULE = re.compile(r"^([A-Za-z0-9_*?\-]+)\((.*)\)$")


@dataclass(frozen=True)
class Verdict:
    action: Action
    #: who or what decided: "auto-approve", a rule pattern, "hard-deny", "no approval needed"...
    by: str = ""
    reasons: tuple[str, ...] = ()
    #: for "deny" (and "ask", for headless): what the model is told
    message: str = ""
    #: for "ask": the rule "always allow" would save
    suggested_pattern: str | None = None


def permission_files(root: Path, user_config_dir: Path) -> dict[Scope, Path]:
    """The files anvil writes "always allow" rules to, by scope."""
    return {"project": root / ".anvil" / "permissions.toml", "user": user_config_dir / "permissions.toml"}


def _read_permissions(path: Path) -> tuple[list[str], list[str]]:
    from anvil.config import ConfigError, read_toml

    data = read_toml(path)
    table = data.get("permissions", data) if path.name == "config.toml" else data
    if not isinstance(table, dict):
        return [], []
    lists = []
    for key in ("allow", "deny"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: '{key}' should be a list of strings, e.g. [\"git status\", \"pytest*\"].")
        lists.append(list(value))
    return lists[0], lists[1]


def load_rule_lists(root: Path, user_config_dir: Path) -> dict[Scope, tuple[list[str], list[str]]]:
    """allow/deny patterns per scope, from the config files and anvil's permission files."""
    sources: dict[Scope, list[Path]] = {
        "user": [user_config_dir / "config.toml", user_config_dir / "permissions.toml"],
        "project": [root / ".anvil" / "config.toml", root / ".anvil" / "permissions.toml"],
    }
    result: dict[Scope, tuple[list[str], list[str]]] = {}
    for scope, paths in sources.items():
        allow: list[str] = []
        deny: list[str] = []
        for path in paths:
            a, d = _read_permissions(path)
            allow += a
            deny += d
        result[scope] = (allow, deny)
    return result


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", escaped) + '"'


def save_rule(path: Path, pattern: str, effect: Literal["allow", "deny"] = "allow") -> None:
    """Add a pattern to an anvil permissions file, keeping every rule already there."""
    allow, deny = _read_permissions(path) if path.exists() else ([], [])
    target = allow if effect == "allow" else deny
    if pattern in target:
        return
    target.append(pattern)
    lines = ["# Rules saved by anvil when you chose \"always allow\". Edit freely: anvil keeps every rule here",
             "# and rewrites this file when it adds one. Rules in config.toml [permissions] apply too.",
             "allow = [" + ", ".join(_toml_string(p) for p in allow) + "]",
             "deny = [" + ", ".join(_toml_string(p) for p in deny) + "]", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text("\n".join(lines), encoding="utf-8")
    tmp.replace(path)


@dataclass(frozen=True)
class ToolRule:
    tool: str
    effect: Literal["allow", "deny"]
    scope: Scope

    @property
    def pattern(self) -> str:
        return f"{self.tool}(*)"


class ApprovalPolicy:
    """Rules, modes and risk put together. Without rules it still asks about what tools declare."""

    def __init__(self, auto_approve: bool = False, *, rule_lists: dict[Scope, tuple[list[str], list[str]]] | None
                 = None, ask_edits: bool = False, files: dict[Scope, Path] | None = None,
                 home: Path | None = None) -> None:
        from anvil.core.command_rules import CommandRules

        self.mode: Mode = "auto" if auto_approve else "ask"
        self.ask_edits = ask_edits
        self.files = files or {}
        self.home = home or Path.home()
        self.rules = CommandRules()
        self.tool_rules: list[ToolRule] = []
        for scope, (allow, deny) in (rule_lists or {}).items():
            for pattern in allow:
                self._add(pattern, "allow", scope)
            for pattern in deny:
                self._add(pattern, "deny", scope)

    @classmethod
    def from_config(cls, root: Path, user_config_dir: Path, *, auto_approve: bool = False,
                    ask_edits: bool = False) -> ApprovalPolicy:
        return cls(auto_approve, rule_lists=load_rule_lists(root, user_config_dir), ask_edits=ask_edits,
                   files=permission_files(root, user_config_dir))

    def _add(self, pattern: str, effect: Literal["allow", "deny"], scope: Scope) -> None:
        match = _TOOL_RULE.match(pattern.strip())
        if match and match.group(1) != "run_command":
            self.tool_rules.append(ToolRule(match.group(1), effect, scope))
            return
        command = match.group(2) if match else pattern  # run_command(git status) == git status
        try:
            self.rules.add(command, effect, scope)
        except ValueError as exc:
            from anvil.config import ConfigError

            raise ConfigError(f"Permission rule '{pattern}' ({scope}): {exc}") from exc

    # -- modes ---------------------------------------------------------------------------------------

    @property
    def auto_approve(self) -> bool:
        return self.mode == "auto"

    def set_mode(self, mode: Mode) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown approval mode {mode!r}; expected one of {', '.join(MODES)}")
        self.mode = mode

    def next_mode(self) -> Mode:
        """Cycle to the next mode and return it (Shift+Tab in the front ends)."""
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        return self.mode

    # -- decisions -----------------------------------------------------------------------------------

    def evaluate(self, tool: Tool, args: Any, ctx: ToolContext) -> Verdict:
        if tool.name == "run_command":
            from anvil.core.command_policy import evaluate_command

            shell = ctx.state.get("shell")
            cwd = getattr(shell, "cwd", None)
            return evaluate_command(args.command, self.rules, ctx.root, self.home, self.auto_approve, cwd=cwd)
        if tool.name in EDIT_TOOLS:
            if self.ask_edits and self.mode == "ask":
                return Verdict("ask", by="ask_edits", reasons=("edits need approval (ask_edits = true)",),
                               message="Not applied: edits need the user's approval.",
                               suggested_pattern=f"{tool.name}(*)")
            return Verdict("allow", by="no approval needed")
        if not tool.needs_approval(args, ctx):
            return Verdict("allow", by="no approval needed")
        return self._evaluate_tool(tool.name)

    def _evaluate_tool(self, name: str) -> Verdict:
        from anvil.core.command_rules import tool_rule_matches

        for rule in self.tool_rules:
            if rule.effect == "deny" and tool_rule_matches(rule.tool, name):
                return Verdict("deny", by=rule.pattern, reasons=(f"matches the {rule.scope} deny rule",),
                               message=f"Refused by the user's deny rule '{rule.pattern}' ({rule.scope} scope).")
        if self.auto_approve:
            return Verdict("allow", by="auto-approve")
        for rule in self.tool_rules:
            if rule.effect == "allow" and tool_rule_matches(rule.tool, name):
                return Verdict("allow", by=rule.pattern)
        return Verdict("ask", by="no matching rule", message=f"Not run: {name} needs the user's approval.",
                       suggested_pattern=f"{name}(*)")

    def remember(self, tool: str, pattern: str, scope: str) -> None:
        """Keep an "always allow" rule in its scope; project and user rules are saved to disk at once."""
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}")
        if tool == "run_command" and _TOOL_RULE.match(pattern) is None:
            pattern = pattern.strip()
        self._add(pattern, "allow", scope)  # type: ignore[arg-type]
        path = self.files.get(scope)  # type: ignore[call-overload]
        if path is not None:
            save_rule(path, pattern)
