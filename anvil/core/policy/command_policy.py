"""The verdict for one ``run_command``: rules, risk and auto-approve put together.

Order, first match wins:

1. The command cannot be parsed: ask, even with auto-approve. What we cannot read we cannot check
   for the hard-deny list, and a person is there to look; headless refuses and the model can
   rewrite it (simpler, or as a script file).
2. Hard-deny (see ``command_risk``): refused, even with auto-approve, with a message telling the
   model not to look for another way. Under auto-approve, also a destructive command whose target is
   only known at run time (``rm -rf $x``): nobody would see it, so the model is told to write the
   target out or ask the person. Without auto-approve it is asked about, whatever the rules say.
3. A deny rule on any part: refused, naming the rule. Deny beats allow and auto-approve, because a
   deny rule is something the person wrote down on purpose.
4. Auto-approve: allowed, risky or not, except a write to a protected file (anvil's configuration, anything
   under ``.git``, a shell start-up file, a script anvil's hooks or MCP servers run): asked about in every mode,
   like the file tools' writes to them, unless a rule spells the file out.
5. Every part allowed by a rule: allowed. But a rule only covers a risky part when it names the
   words that make it risky: ``git *`` allows ``git status`` and not ``git push --force``;
   ``rm *`` allows ``rm notes.txt`` but not ``rm -rf build``, which needs ``rm -rf *``; a delete
   outside the project needs a rule naming that path; ``GIT_DIR=x git status`` needs a rule that
   spells ``GIT_DIR=x`` out. Risky parts with nothing a rule could name (``curl … | sh``, a program
   only known at run time, code bash evaluates that the text does not show) always ask. Broad rules
   stay useful for everyday commands without quietly covering the dangerous forms. A part that runs
   no program (``x=1``) needs no rule, unless it is risky (``PROMPT_COMMAND=…``): then it asks.
6. Otherwise ask, naming every part no rule covers, with every risk reason, and an "always allow"
   pattern for each of those parts that keeps the risky words literal (``rm -rf *``), so that, once
   all of them are saved, the same command does not ask again. When some part can have no rule
   (a risky form with nothing to name), no "always allow" is offered at all: saving the others would
   still leave the command asking.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from anvil.core.policy.command_risk import Finding, RiskReport, classify
from anvil.core.policy.rules import CommandRule, CommandRules, suggest_pattern
from anvil.core.policy.shell_command import ParsedCommand, SimpleCommand
from anvil.core.policy.shell_parse import parse_command
from anvil.core.policy.verdict import Verdict


def evaluate_command(command: str, rules: CommandRules, root: Path, home: Path,
                     auto_approve: bool = False, cwd: Path | None = None, *, writes_confined: bool = False,
                     config_dirs: Sequence[Path] = (), scripts: Sequence[Path] = ()) -> Verdict:
    """The verdict, naming the directory it was evaluated in, so an approval shows where the command runs.

    ``writes_confined``: the person chose auto mode and the command runs in the OS sandbox, which enforces where
    it may write, so findings that are risky only because of where they write (outside the project, a dotfile)
    need no approval; a write the sandbox refuses fails and is reported as blocked. Never a protected file's,
    nor the kernel's. ``config_dirs`` and ``scripts``: protected besides the files every project has (anvil's
    user configuration directories; the scripts its hooks and MCP servers run outside the sandbox)."""
    verdict = _verdict(command, rules, root, home, auto_approve, cwd, writes_confined,
                       {"config_dirs": config_dirs, "scripts": scripts})
    return dataclasses.replace(verdict, cwd=cwd or root)


def _verdict(command: str, rules: CommandRules, root: Path, home: Path, auto_approve: bool,
             cwd: Path | None, writes_confined: bool, protected: dict[str, Sequence[Path]]) -> Verdict:
    parsed = parse_command(command)
    if not parsed.ok:
        reason = f"the command could not be checked: {parsed.error}"
        return Verdict("ask", by="parse failure", reasons=(reason,),
                       message=f"Not run: {reason}. Simplify the command or put it in a script file.")
    report = classify(parsed, root, home, cwd, **protected)
    if writes_confined:
        report = RiskReport(tuple(f for f in report.findings if not f.confinable))
    refusal = _refusal(parsed, report, rules, auto_approve)
    if refusal is not None:
        return refusal
    if auto_approve:
        return _protected_writes(parsed, report, rules) or Verdict("allow", by="auto-approve", reasons=report.reasons)
    used: list[CommandRule] = []
    uncovered: list[tuple[SimpleCommand, list[Finding], tuple[CommandRule, ...]]] = []
    for i, cmd in enumerate(parsed.commands):
        risky = [f for f in report.for_command(i) if f.level in ("risky", "unattended_deny")]
        if not cmd.words:  # assignments, bare redirections: nothing to allow unless they are risky
            if risky:
                return _ask(cmd, risky, report, ())
            continue
        candidates = rules.allow_rules_for(cmd)
        rule = next((r for r in candidates if _covers(r, risky)), None)
        if rule is None:
            uncovered.append((cmd, risky, candidates))
        else:
            used.append(rule)
    if uncovered:
        return _ask_all(uncovered, report)
    by = ", ".join(dict.fromkeys(r.pattern for r in used)) or "nothing to run"
    return Verdict("allow", by=by, reasons=report.reasons)


def _refusal(parsed: ParsedCommand, report: RiskReport, rules: CommandRules, auto_approve: bool) -> Verdict | None:
    """A command refused outright: on the hard-deny list, destructive and blind under auto-approve, or denied by
    a rule."""
    hard = tuple(dict.fromkeys(f.reason for f in report.findings if f.level == "hard_deny"))
    if hard:
        return Verdict("deny", by="hard-deny", reasons=hard, message=(
            f"Refused: this command {hard[0]}. anvil never runs it, even with auto-approve. Do not try "
            "to reach the same result another way; if it is really needed, ask the user to run it."))
    blind = tuple(dict.fromkeys(f.reason for f in report.findings if f.level == "unattended_deny"))
    if blind and auto_approve:
        return Verdict("deny", by="hard-deny", reasons=blind, message=(
            f"Refused: this command {blind[0]}. With auto-approve anvil never runs a destructive command whose "
            "target it cannot see. If you know the exact path, write it out literally so it can be checked; "
            "otherwise do not look for another way to do it: ask the user to run it."))
    decision = rules.decide(parsed)
    if decision.action == "deny" and decision.rule is not None and decision.command is not None:
        rule, part = decision.rule, decision.command.text
        reason = f"matches the {rule.scope} deny rule '{rule.pattern}'"
        return Verdict("deny", by=rule.pattern, reasons=(reason,), message=(
            f"Refused by the user's deny rule '{rule.pattern}' ({rule.scope} scope): {part}. "
            "Do not retry it or work around it; ask the user if it is needed."))
    return None


def _protected_writes(parsed: ParsedCommand, report: RiskReport, rules: CommandRules) -> Verdict | None:
    """Under auto-approve: ask about a write to a protected file no rule spells out, as the file tools do."""
    for finding in (f for f in report.findings if f.protected):
        cmd = parsed.commands[finding.command]
        candidates = rules.allow_rules_for(cmd) if cmd.words else ()
        if not any(_covers(rule, [finding]) for rule in candidates):
            return _ask(cmd, [finding], report, candidates)
    return None


def _covers(rule: CommandRule, risky: list[Finding]) -> bool:
    return all(f.triggers and all(rule.names(t, f.exact) for t in f.triggers) for f in risky)


def _ask_all(uncovered: list[tuple[SimpleCommand, list[Finding], tuple[CommandRule, ...]]],
             report: RiskReport) -> Verdict:
    """Ask about every part no rule covers: each named in the reasons, each with the rule "always allow" would
    save for it (all of them, or none when one part can have no rule)."""
    asks = [_ask(cmd, risky, report, candidates) for cmd, risky, candidates in uncovered]
    if len(asks) == 1:
        return asks[0]
    reasons = tuple(dict.fromkeys(reason for ask in asks for reason in ask.reasons))
    patterns = tuple(dict.fromkeys(ask.suggested_pattern for ask in asks if ask.suggested_pattern))
    ruleless = any(ask.suggested_pattern is None for ask in asks)
    parts = ", ".join(f"`{cmd.text}`" for cmd, _, _ in uncovered)
    return Verdict("ask", by=asks[0].by, reasons=reasons,
                   message=f"Not run: the command needs the user's approval ({len(uncovered)} parts no rule allows: "
                           f"{parts}).",
                   suggested_pattern=None if ruleless else patterns[0],
                   suggested_patterns=() if ruleless else patterns,
                   no_rule_reason="a part of this command cannot be allowed by a rule" if ruleless else "")


def _ask(cmd: SimpleCommand, risky: list[Finding], report: RiskReport,
         candidates: tuple[CommandRule, ...]) -> Verdict:
    reasons = list(report.reasons)
    if candidates:
        reasons.append(f"'{candidates[0].pattern}' allows this command, but not its risky form")
    elif cmd.words:
        reasons.append(f"no rule allows: {cmd.text}")
    suggestion = None
    if cmd.words and all(f.triggers for f in risky):
        suggestion = suggest_pattern(cmd, keep=[t for f in risky for t in f.triggers])
    message = "Not run: the command needs the user's approval" + (f" ({reasons[0]})." if reasons else ".")
    return Verdict("ask", by="risk" if candidates or not cmd.words else "no matching rule", reasons=tuple(reasons),
                   message=message, suggested_pattern=suggestion, person_only=any(f.protected for f in risky),
                   suggested_patterns=(suggestion,) if suggestion else ())
