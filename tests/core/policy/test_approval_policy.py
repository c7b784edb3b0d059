"""The approval policy end to end: rules from config, scopes that stick, headless allow/deny, records."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

from anvil.config import load_settings, permission_files, permission_rules, user_config_dir
from anvil.core.events import ApprovalAnswered, ApprovalDecision, ApprovalRequested, ToolResultEvent
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy
from anvil.runtime import open_runtime
from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer


def command_turns(*commands: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [{"tool_calls": [{"name": "run_command", "arguments": {"command": c}}]}
                                   for c in commands]
    return [*turns, {"text": "done"}]


async def run_turn(project: Path, turns: list[dict[str, Any]], answer: ApprovalDecision | None = None,
                   trust: bool | None = None, **settings: Any) -> tuple[list[Any], Any]:
    runtime = open_runtime(load_settings(project, settings, environ={}, trust=trust), project,
                           model=ScriptedModel(turns))
    events = []
    try:
        async for event in runtime.agent.run_turn("go"):
            if isinstance(event, ApprovalRequested):
                assert answer is not None, f"unexpected approval request for {event.args}"
                event.answer(answer)
            events.append(event)
    finally:
        await runtime.agent.ctx.close()
        runtime.session.close()
    return events, runtime


def results(events: list[Any]) -> list[ToolResultEvent]:
    return [e for e in events if isinstance(e, ToolResultEvent)]


async def test_project_rule_allows_without_asking(project: Path) -> None:
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text('[permissions]\nallow = ["echo *"]\n')
    events, _ = await run_turn(project, command_turns("echo hello"), trust=True)
    assert results(events)[0].ok and "hello" in results(events)[0].output
    answered = next(e for e in events if isinstance(e, ApprovalAnswered))
    assert answered.allow and answered.by == "echo *"


async def test_always_allow_project_scope_sticks_in_a_new_session(project: Path) -> None:
    decision = ApprovalDecision(True, remember="project", pattern="echo *")
    events, _ = await run_turn(project, command_turns("echo first"), decision)
    assert results(events)[0].ok
    saved = (project / ".anvil" / "permissions.toml").read_text()
    assert tomllib.loads(saved) == {"allow": ["echo *"], "deny": []}
    assert saved.startswith("# Rules saved by anvil")  # the header tells a person where the file came from
    # A new session in the same project: no question (run_turn would fail on an approval request).
    events, _ = await run_turn(project, command_turns("echo second"))
    assert "second" in results(events)[0].output


async def test_always_allow_user_scope_applies_in_other_projects(project: Path, tmp_path: Path) -> None:
    await run_turn(project, command_turns("echo one"), ApprovalDecision(True, remember="user", pattern="echo *"))
    assert tomllib.loads((user_config_dir() / "permissions.toml").read_text())["allow"] == ["echo *"]
    other = tmp_path / "other"
    other.mkdir()
    events, _ = await run_turn(other, command_turns("echo two"))
    assert "two" in results(events)[0].output


async def test_session_scope_is_not_saved(project: Path) -> None:
    events, runtime = await run_turn(project, command_turns("echo a", "echo b"),
                                     ApprovalDecision(True, remember="session", pattern="echo *"))
    assert sum(isinstance(e, ApprovalRequested) for e in events) == 1  # the second echo ran on the rule
    assert [r.ok for r in results(events)] == [True, True]
    assert not (project / ".anvil" / "permissions.toml").exists()
    settings = load_settings(project, environ={})
    policy = ApprovalPolicy(rule_lists=permission_rules(settings, project), files=permission_files(project))
    verdict = policy.evaluate(runtime.agent.tools.get("run_command"),  # type: ignore[arg-type]
                              runtime.agent.tools.prepare("run_command", '{"command": "echo c"}').args,
                              runtime.agent.ctx)
    assert verdict.action == "ask"


async def test_chain_needs_every_part_allowed(project: Path) -> None:
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text('[permissions]\nallow = ["echo *"]\n')
    events, _ = await run_turn(project, command_turns("echo ok && touch made.txt"),
                               ApprovalDecision(False, "not now"), trust=True)
    request = next(e for e in events if isinstance(e, ApprovalRequested))
    assert request.suggested_pattern == "touch *"
    assert not (project / "made.txt").exists()
    assert "not now" in results(events)[0].output


async def test_hard_deny_holds_under_auto_approve(project: Path) -> None:
    events, _ = await run_turn(project, command_turns("rm -rf ~"), auto_approve=True)
    result = results(events)[0]
    assert not result.ok and "never runs it, even with auto-approve" in result.output
    answered = next(e for e in events if isinstance(e, ApprovalAnswered))
    assert answered.by == "hard-deny" and not answered.allow


async def test_deny_rule_beats_auto_approve(project: Path) -> None:
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text('[permissions]\ndeny = ["echo secret*"]\n')
    events, _ = await run_turn(project, command_turns("echo secret"), auto_approve=True)
    assert "deny rule 'echo secret*'" in results(events)[0].output


async def test_tool_rules_for_other_tools(project: Path) -> None:
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text('[permissions]\nallow = ["run_tests(*)"]\n')
    (project / "test_x.py").write_text("def test_ok():\n    assert True\n")
    events, _ = await run_turn(project, [{"tool_calls": [{"name": "run_tests", "arguments": {}}]}, {"text": "ok"}],
                               trust=True)
    answered = next(e for e in events if isinstance(e, ApprovalAnswered))
    assert answered.allow and answered.by == "run_tests(*)"


async def test_decisions_are_recorded_in_the_session(project: Path) -> None:
    _, runtime = await run_turn(project, command_turns("echo recorded"),
                                ApprovalDecision(True, remember="session", pattern="echo *"))
    records = [json.loads(line) for line in runtime.session.path.read_text().splitlines()]
    answers = [r["event"] for r in records if r.get("t") == "event" and r["event"]["type"] == "approval_answered"]
    assert answers == [{"type": "approval_answered", "call_id": answers[0]["call_id"], "tool": "run_command",
                        "allow": True, "by": "user", "message": "", "rule": "echo *", "rules": ["echo *"]}]


def test_bad_rule_in_config_is_one_clear_error(project: Path) -> None:
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text('[permissions]\nallow = ["*"]\n')
    result = subprocess.run(anvil_command("-p", "hi", "--model", "scripted", "--trust"), cwd=project,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"anvil: {project / '.anvil' / 'config.toml'}: Permission rule '*'")
    assert result.stderr.count("\n") == 1


def test_headless_allows_by_rule_and_denies_the_rest(project: Path, server: ScriptedOpenAIServer) -> None:
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text('[permissions]\nallow = ["echo *"]\n')
    server.add(*command_turns("echo allowed-by-rule", "touch not-allowed.txt"))
    result = subprocess.run(anvil_command("-p", "go", "--model", "openai/scripted", "--api-base", server.url,
                                          "--trust"), cwd=project, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    tool_results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "allowed-by-rule" in tool_results[0]
    assert "headless" in tool_results[1] and "--auto-approve" in tool_results[1]
    assert not (project / "not-allowed.txt").exists()

