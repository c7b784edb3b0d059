"""A compound command's approval tells the truth: every part no rule covers is named, "always allow" saves a rule
for each of them (one answer, not one per run), and the same command then runs without asking."""

from __future__ import annotations

from pathlib import Path

from anvil.core.events import ApprovalAnswered, ApprovalDecision, ApprovalRequested
from anvil.core.policy.command_policy import evaluate_command
from anvil.core.policy.rules import CommandRules
from anvil.core.tools.shell.shell_tools import RunCommand
from tests.support.agents import make_agent
from tests.support.openai_server import ScriptedOpenAIServer

COMPOUND = "git status && rm notes.txt && ls"


def test_every_uncovered_part_is_named_with_a_rule_for_each(tmp_path: Path) -> None:
    rules = CommandRules()
    rules.add("ls")
    verdict = evaluate_command(COMPOUND, rules, tmp_path, tmp_path)
    assert verdict.action == "ask"
    assert "no rule allows: git status" in verdict.reasons and "no rule allows: rm notes.txt" in verdict.reasons
    assert verdict.suggested_patterns == ("git status *", "rm *")
    assert verdict.suggested_pattern == "git status *"
    assert "`git status`" in verdict.message and "`rm notes.txt`" in verdict.message


def test_one_uncovered_part_is_asked_about_as_before(tmp_path: Path) -> None:
    rules = CommandRules()
    rules.add("git status *")
    verdict = evaluate_command(COMPOUND, rules, tmp_path, tmp_path)
    assert verdict.suggested_patterns == ("rm *", "ls *")
    rules.add("ls")
    alone = evaluate_command(COMPOUND, rules, tmp_path, tmp_path)
    assert alone.suggested_patterns == ("rm *",) and alone.suggested_pattern == "rm *"


def test_no_always_when_one_part_can_have_no_rule(tmp_path: Path) -> None:
    verdict = evaluate_command('git status && eval "$cmd"', CommandRules(), tmp_path, tmp_path)
    assert verdict.action == "ask" and verdict.suggested_patterns == () and verdict.suggested_pattern is None
    assert verdict.no_rule_reason


async def test_always_allow_saves_every_rule_and_the_command_runs_next_time(server: ScriptedOpenAIServer,
                                                                          tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    call = {"name": "run_command", "arguments": {"command": COMPOUND}}
    server.add({"tool_calls": [call]}, {"text": "once"}, {"tool_calls": [call]}, {"text": "twice"})
    agent = make_agent(server, tmp_path, RunCommand())
    asked: list[ApprovalRequested] = []
    answered: list[ApprovalAnswered] = []
    for prompt in ("first", "second"):
        async for event in agent.run_turn(prompt):
            if isinstance(event, ApprovalRequested):
                asked.append(event)
                patterns = event.suggested_patterns
                event.answer(ApprovalDecision(True, remember="session", pattern=patterns[0], patterns=patterns))
            elif isinstance(event, ApprovalAnswered):
                answered.append(event)
        (tmp_path / "notes.txt").write_text("x")
    assert len(asked) == 1  # the second run of the same command asked nothing
    assert asked[0].suggested_patterns == ("git status *", "rm *", "ls *")
    assert answered[0].rules == ("git status *", "rm *", "ls *")
