"""Approval policy: decides, for each tool call, whether it runs, is asked about, or is refused.

Front ends never decide; they only ask the person when the verdict is ``ask``. Headless mode turns
``ask`` into a refusal that tells the model why.

What needs asking, by default, follows the approval need each tool declares (``Tool.approval``):
- "command" (run_command): the command policy (:mod:`anvil.core.policy.command_policy`): parsed into simple
  commands, each allowed by a rule on its own, risky forms and the hard-deny list handled there.
- "rule" (kill_command, run_tests, MCP and web tools): tool rules written ``name(subject)`` (``run_tests(*)``,
  ``mcp__github__*(*)``, ``web_fetch(domain:docs.python.org)``), else ask.
- "edit" (edits and writes): apply without asking, unless ``ask_edits`` is on and the mode is ``ask``; writes to
  protected paths (anvil's configuration, git's files, shell start-up files) are asked about in every mode and
  refused headless, unless a rule names the file (:mod:`anvil.core.policy.protected_writes`).
- "none" (reads, searches, todos): never ask.

Rules come in three scopes. ``session`` rules live in memory. ``project`` and ``user`` rules arrive as
plain lists from the settings layer, which reads them from the config files; "always allow" in those scopes
is saved at once to the scope's rules file (:mod:`anvil.core.policy.rule_files`), whose path arrives the
same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from anvil.core.policy.protected_writes import protected_verdict
from anvil.core.policy.rule_files import save_rule
from anvil.core.policy.rules import CommandRule, CommandRules, RuleError
from anvil.core.policy.shell_parse import parse_command
from anvil.core.policy.verdict import Verdict
from anvil.core.tools.base import Tool, ToolContext

Scope = Literal["session", "project", "user"]
SCOPES: tuple[Scope, ...] = ("session", "project", "user")
#: ask: commands are asked about; accept_edits: edits apply without asking even when ask_edits is on;
#: auto: everything runs except the hard-deny list; plan: read and plan only, until the person approves
#: a plan (exit_plan_mode), which returns to the previous mode. Front ends cycle these (Shift+Tab).
Mode = Literal["ask", "accept_edits", "auto", "plan"]
MODES: tuple[Mode, ...] = ("ask", "accept_edits", "auto", "plan")
PLAN_MODE_DENIAL = ("plan mode: you can only read and plan; {what} was not run. Call exit_plan_mode with your plan "
                    "when it is ready, and the person will review it before anything is changed.")
_TOOL_RULE = re.compile(r"^([A-Za-z0-9_*?\-]+)\((.*)\)$")
#: The rule syntax's word for a command: ``run_command(git status)`` is the command rule ``git status``. People
#: write rules after the calls they see; which calls a command rule judges goes by the tool's traits
#: (``approval = "command"``), not by this word.
COMMAND_RULE_WORD = "run_command"
UNSANDBOXED_HEADLESS = (
    "Not run: running a command outside the sandbox needs the person's approval, and nobody can answer here (a "
    "headless run). Do without it, or say what you would have run and why. If the sandbox is in the way, the "
    "person can allow what the command needs in .anvil/config.toml ([sandbox] writable = [\"/path\"] or "
    "network = true), or run without a sandbox with [sandbox] mode = \"off\".")


_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
# Programs that only read, for plan mode. A rule like "git *" or "sed *" is the person allowing a program in
# general, not saying it cannot change anything, so plan mode also needs the command itself to be read-only.
_READ_ONLY_PROGRAMS = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "find", "fd", "tree", "pwd", "echo",
    "printf", "which", "type", "file", "stat", "du", "df", "diff", "cmp", "sort", "cut", "tr", "nl", "basename",
    "dirname", "realpath", "readlink", "date", "whoami", "uname", "id", "true", "false", "test", "[",
    "sha256sum", "sha1sum", "md5sum", "jq", "column", "hexdump", "xxd", "od", "strings",
})
_READ_ONLY_GIT = frozenset({"status", "log", "diff", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse",
                            "describe", "shortlog", "cat-file", "merge-base", "rev-list"})
# Options that make an otherwise read-only program write or run something.
_WRITING_OPTIONS = {"find": ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fls"),
                    "sort": ("-o", "--output"), "tree": ("-o",), "git": ("--output", "--ext-diff")}


def _protected(ctx: ToolContext) -> dict[str, Any]:
    """What the command policy protects besides every project's own files: anvil's user configuration
    directories, and the scripts its hooks and MCP servers run outside the sandbox."""
    return {"config_dirs": ctx.settings.config_dirs, "scripts": ctx.settings.outside_scripts}


def _plan_mode_problem(command: str) -> str | None:
    """Why a command (already allowed by the rules) may still change something, or None when it only reads."""
    for cmd in parse_command(command).commands:
        writes = [r.target for r in cmd.redirects if r.writes and r.target not in _HARMLESS_TARGETS]
        if writes:
            return f"it writes to {writes[0]}"
        if not cmd.words:
            continue
        if cmd.name not in _READ_ONLY_PROGRAMS and cmd.name != "git":
            return f"{cmd.name} is not a read-only program"
        if cmd.name == "git":
            sub = next((w for w in cmd.args if not w.startswith("-")), "")
            if sub not in _READ_ONLY_GIT:
                return f"git {sub} is not a read-only git command" if sub else "git needs a read-only subcommand"
        risky = _WRITING_OPTIONS.get(cmd.name, ())
        bad = next((w for w in cmd.args if any(w == o or w.startswith(o + "=") or (o.startswith("-f") and
                    w.startswith(o)) for o in risky)), None)
        if bad is not None:
            return f"{cmd.name} {bad} can change files or run programs"
    return None


@dataclass(frozen=True)
class ToolRule:
    tool: str
    effect: Literal["allow", "deny"]
    scope: Scope
    #: what the call must match: "*" for any call, or e.g. "domain:docs.python.org" for web_fetch
    subject: str = "*"

    @property
    def pattern(self) -> str:
        return f"{self.tool}({self.subject})"

    def covers(self, tool: Tool, args: Any) -> bool:
        from anvil.core.policy.rules import tool_rule_matches

        if not tool_rule_matches(self.tool, tool.name):
            return False
        if self.subject in ("", "*"):
            return True
        subject = tool.rule_subject(args)  # None: the tool's rules name only the tool
        if subject is None:
            return False
        from fnmatch import fnmatchcase

        return fnmatchcase(subject.lower(), self.subject.strip().lower())


def parse_rule(pattern: str, effect: Literal["allow", "deny"], scope: Scope) -> ToolRule | CommandRule:
    """A rule as a person writes it: ``tool(subject)`` for a tool (``web_fetch(domain:x.org)``), else a command
    pattern (``run_command(git status)`` is ``git status``). Raises :class:`RuleError` for a pattern no rule
    can be made of, which the settings layer reports with the file it came from."""
    match = _TOOL_RULE.match(pattern.strip())
    if match and match.group(1) != COMMAND_RULE_WORD:
        return ToolRule(match.group(1), effect, scope, match.group(2).strip() or "*")
    command = match.group(2) if match else pattern
    try:
        return CommandRule(command, effect, scope)
    except RuleError as exc:
        raise RuleError(f"Permission rule '{pattern}': {exc}") from exc


class ApprovalPolicy:
    """Rules, modes and risk put together. Without rules it still asks about what tools declare.

    ``rule_lists``: (allow, deny) patterns per scope; ``files``: where "always allow" saves a rule, per scope.
    ``mode`` None: "auto" with auto_approve, else "ask". ``mode="plan"`` with auto_approve starts in plan mode
    and returns to "auto" when the plan is approved (headless approves it by itself then)."""

    def __init__(self, auto_approve: bool = False, *, rule_lists: dict[Scope, tuple[list[str], list[str]]] | None
                 = None, ask_edits: bool = False, files: dict[Scope, Path] | None = None,
                 home: Path | None = None, mode: Mode | None = None) -> None:
        self.mode: Mode = "auto" if auto_approve else "ask"
        #: the mode plan mode returns to once a plan is approved
        self.previous_mode: Mode = self.mode
        if mode is not None:
            self.set_mode(mode)
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

    def _add(self, pattern: str, effect: Literal["allow", "deny"], scope: Scope) -> None:
        rule = parse_rule(pattern, effect, scope)
        if isinstance(rule, ToolRule):
            self.tool_rules.append(rule)
        else:
            self.rules.add(rule.pattern, rule.effect, rule.scope)

    # -- modes ---------------------------------------------------------------------------------------

    @property
    def auto_approve(self) -> bool:
        return self.mode == "auto"

    def set_mode(self, mode: Mode) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown approval mode {mode!r}; expected one of {', '.join(MODES)}")
        if mode != self.mode and self.mode != "plan":
            self.previous_mode = self.mode  # plan mode goes back to the last mode that could change things
        self.mode = mode

    def next_mode(self) -> Mode:
        """Cycle to the next mode and return it (Shift+Tab in the front ends)."""
        self.set_mode(MODES[(MODES.index(self.mode) + 1) % len(MODES)])
        return self.mode

    @property
    def planning(self) -> bool:
        return self.mode == "plan"

    def exit_plan(self) -> Mode:
        """Leave plan mode for the mode it was entered from (a plan was approved); returns the new mode."""
        if self.mode == "plan":
            self.mode = self.previous_mode if self.previous_mode != "plan" else "ask"
        return self.mode

    # -- decisions -----------------------------------------------------------------------------------

    def evaluate(self, tool: Tool, args: Any, ctx: ToolContext) -> Verdict:
        """The verdict on one call, from the tool's declared approval need (never from its name)."""
        outside = tool.outside_sandbox(args) if ctx.sandbox.active else None
        if self.mode == "plan":
            verdict = self._evaluate_plan(tool, args, ctx)
            if outside is not None and verdict.action == "allow":
                return Verdict("deny", by="plan mode", reasons=("it would run outside the sandbox",),
                               message=PLAN_MODE_DENIAL.format(what=f"{tool.name} outside the sandbox"))
            return verdict
        if outside is not None:
            return self._evaluate_unsandboxed(tool, args, ctx, outside)
        if tool.write_targets(args):
            protected = protected_verdict(tool, args, ctx, self.tool_rules)
            if protected is not None:
                return protected
        match tool.approval:
            case "command":
                from anvil.core.policy.command_policy import evaluate_command

                shell = ctx.state.get("shell")
                # the sandbox stands in for the person's approval of where a command writes only in auto mode
                return evaluate_command(tool.command(args) or "", self.rules, ctx.root, self.home, self.auto_approve,
                                        cwd=getattr(shell, "cwd", None),
                                        writes_confined=ctx.sandbox.active and self.auto_approve,
                                        **_protected(ctx))
            case "edit" if self.ask_edits and self.mode == "ask":
                return Verdict("ask", by="ask_edits", reasons=("edits need approval (ask_edits = true)",),
                               message="Not applied: edits need the user's approval.",
                               suggested_pattern=f"{tool.name}(*)")
            case "rule":
                return self._evaluate_tool(tool, args)
            case _:
                return Verdict("allow", by="no approval needed")

    def _evaluate_plan(self, tool: Tool, args: Any, ctx: ToolContext) -> Verdict:
        """Plan mode: what only reads, and leaving plan mode; commands only when a rule allows them and they
        are plainly harmless. Nothing is asked: the point of plan mode is that nothing changes until the plan
        is approved, and a refusal tells the model what to do instead."""
        if tool.kind == "switch_mode":
            return Verdict("allow", by="plan mode")
        if tool.approval == "command":
            from anvil.core.policy.command_policy import evaluate_command

            command = tool.command(args) or ""
            shell = ctx.state.get("shell")
            verdict = evaluate_command(command, self.rules, ctx.root, self.home, False,
                                       cwd=getattr(shell, "cwd", None), **_protected(ctx))
            problem = _plan_mode_problem(command) if verdict.action == "allow" else None
            if verdict.action == "allow" and not verdict.reasons and problem is None:
                return Verdict("allow", by=f"{verdict.by} (plan mode)")
            why = (verdict.reasons[0] if verdict.reasons else problem or
                   "no allow rule covers it, and plan mode runs only read-only commands your rules allow")
            return Verdict("deny", by="plan mode", reasons=(why,), message=PLAN_MODE_DENIAL.format(
                what=f"`{command}` ({why})"))
        if not tool.mutates:
            return self._evaluate_tool(tool, args) if tool.approval == "rule" else Verdict(
                "allow", by="no approval needed")
        return Verdict("deny", by="plan mode", reasons=(f"{tool.name} can change files or run code",),
                       message=PLAN_MODE_DENIAL.format(what=tool.name))

    def _evaluate_unsandboxed(self, tool: Tool, args: Any, ctx: ToolContext, reason: str) -> Verdict:
        """A call that asks to run outside the OS sandbox: refused where the policy refuses it anyway, otherwise
        always the person's decision: no allow rule, auto mode or hook approves it, and no "always" is offered.
        Where nobody can answer (headless) it is refused with what the person can configure instead."""
        from anvil.core.policy.command_policy import evaluate_command

        shell = ctx.state.get("shell")
        command = tool.command(args) or ""
        verdict = evaluate_command(command, self.rules, ctx.root, self.home, False, cwd=getattr(shell, "cwd", None),
                                   **_protected(ctx))
        if verdict.action == "deny":
            return verdict
        why = f"runs outside the sandbox: {reason}"
        if ctx.ask is None:
            return Verdict("deny", by="sandbox", reasons=(why,), cwd=verdict.cwd, message=UNSANDBOXED_HEADLESS)
        return Verdict("ask", by="sandbox", reasons=(why, *verdict.reasons), cwd=verdict.cwd, person_only=True,
                       no_rule_reason="running a command outside the sandbox is asked every time",
                       message="Not run: running a command outside the sandbox needs the person's approval.")

    def _evaluate_tool(self, tool: Tool, args: Any) -> Verdict:
        name = tool.name
        for rule in self.tool_rules:
            if rule.effect == "deny" and rule.covers(tool, args):
                return Verdict("deny", by=rule.pattern, reasons=(f"matches the {rule.scope} deny rule",),
                               message=f"Refused by the user's deny rule '{rule.pattern}' ({rule.scope} scope).")
        if self.auto_approve:
            return Verdict("allow", by="auto-approve")
        for rule in self.tool_rules:
            if rule.effect == "allow" and rule.covers(tool, args):
                return Verdict("allow", by=rule.pattern)
        subject = tool.rule_subject(args) or "*"  # web_fetch: "always allow" is per domain
        return Verdict("ask", by="no matching rule", message=f"Not run: {name} needs the user's approval.",
                       suggested_pattern=f"{name}({subject})")

    def remember(self, tool: str, pattern: str, scope: str, effect: Literal["allow", "deny"] = "allow") -> None:
        """Keep an "always allow" (or "always deny") rule in its scope; project and user rules are saved to disk
        at once."""
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}")
        pattern = pattern.strip()
        self._add(pattern, effect, scope)  # type: ignore[arg-type]
        path = self.files.get(scope)  # type: ignore[call-overload]
        if path is not None:
            save_rule(path, pattern, effect)
