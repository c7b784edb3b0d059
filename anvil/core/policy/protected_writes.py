"""The approval of writes to protected paths (anvil's configuration, git's files, shell start-up files).

Such a write is asked about in every mode, auto included, and no broad rule covers it: ``write_file(*)`` does
not, nor does ``--auto-approve``. Only an allow rule naming the file itself does, written
``TOOL(path:FILE)`` (``edit_file(path:.anvil/config.toml)``; ``*(path:.git/hooks/pre-commit)`` for any tool);
its path has no wildcard, and is compared the way the file system compares names. Where nobody can answer
(headless), the write is refused with a message that says what to do. What is protected, and why, is
:mod:`anvil.core.tools.protected`.
"""

from __future__ import annotations

from typing import Any, Protocol

from anvil.core.events import Notice
from anvil.core.policy.rules import tool_rule_matches
from anvil.core.policy.verdict import Verdict
from anvil.core.tools.base import Tool, ToolContext
from anvil.core.tools.errors import ToolError
from anvil.core.tools.paths import lexical_path
from anvil.core.tools.protected import ProtectedWrite, folded_parts, protected_write

PATH_SUBJECT = "path:"
_WILDCARDS = frozenset("*?[")


class ToolRuleLike(Protocol):
    """A tool rule as the approval policy keeps it (``name(subject)``)."""

    tool: str
    effect: str
    subject: str

    @property
    def pattern(self) -> str: ...


def protected_verdict(tool: Tool, args: Any, ctx: ToolContext, rules: list[ToolRuleLike]) -> Verdict | None:
    """The verdict on a call that writes protected paths, or None when it writes none (the usual rules apply)."""
    found: list[ProtectedWrite] = []
    for raw in tool.write_targets(args):
        try:
            hit = protected_write(ctx, raw)
        except ToolError as exc:  # a protected file reached through a symbolic link
            _tell_the_person(ctx, tool, str(exc))
            return Verdict("deny", by="protected path", reasons=(str(exc),), message=str(exc))
        if hit is not None:
            found.append(hit)
    if not found:
        return None
    pending = [hit for hit in found if _allowing_rule(tool, hit, ctx, rules) is None]
    if not pending:
        return Verdict("allow", by=_allowing_rule(tool, found[0], ctx, rules) or "rule")
    reasons = tuple(hit.reason for hit in pending)
    rule = f"{tool.name}(path:{pending[0].shown})"
    if ctx.ask is None:  # headless: nobody can approve, and no mode or broad rule stands in for the person
        _tell_the_person(ctx, tool, f"{pending[0].reason}. Make the change yourself if it is wanted, or allow "
                                    f"exactly this file with `{rule}` in [permissions] allow.")
        return Verdict("deny", by="protected path", reasons=reasons, message=_headless_message(pending[0], rule))
    return Verdict("ask", by="protected path", reasons=reasons, suggested_pattern=rule, person_only=True,
                   message=f"Not written: {pending[0].shown} is {pending[0].kind}, and the person did not approve.")


def _allowing_rule(tool: Tool, hit: ProtectedWrite, ctx: ToolContext, rules: list[ToolRuleLike]) -> str | None:
    """The pattern of an allow rule that names this very file for this tool, if any."""
    for rule in rules:
        subject = rule.subject.strip()
        if rule.effect != "allow" or not subject.startswith(PATH_SUBJECT):
            continue
        if not tool_rule_matches(rule.tool, tool.name):
            continue
        named = subject[len(PATH_SUBJECT):].strip()
        if not named or _WILDCARDS & set(named):
            continue
        if folded_parts(lexical_path(named, ctx.root)) == folded_parts(hit.path):
            return rule.pattern
    return None


def _tell_the_person(ctx: ToolContext, tool: Tool, what: str) -> None:
    """Headless, a refusal reaches the model as the call's result; the person hears of it too (stderr)."""
    if ctx.ask is None:
        ctx.emit(Notice(f"Refused a {tool.name} call: {what.removeprefix('Not written: ')}"))


def _headless_message(hit: ProtectedWrite, rule: str) -> str:
    return (f"Not written: {hit.reason}. The file tools never change it without the person's approval, and "
            "nobody can approve here (a headless run); --auto-approve does not cover it. Tell the person what you "
            "wanted to change and why: they can make the change themselves, run anvil interactively and approve "
            f"it, or allow exactly this file with the rule `{rule}` in [permissions] allow.")
