"""Hooks written for Claude Code: its JSON answers, its tool names in matchers, its field names on stdin, and
its settings file. Each hook here is a small script that follows Claude Code's documented hook contract."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from anvil.core.hooks.claude import CLAUDE_TOOLS, hooks_from_claude_settings
from anvil.core.hooks.config import HookCommand, HooksConfig, matcher_matches
from anvil.core.hooks.runner import HookRunner

PY = shlex.quote(sys.executable)


def answer(tmp_path: Path, name: str, reply: dict[str, Any]) -> str:
    """A hook that prints ``reply`` as its JSON answer and exits 0."""
    path = tmp_path / f"{name}.py"
    path.write_text(f"import json, sys\nsys.stdin.read()\nprint(json.dumps({reply!r}))\n")
    return f"{PY} {shlex.quote(str(path))}"


def runner(project: Path, **events: list[dict[str, Any]]) -> HookRunner:
    return HookRunner(HooksConfig.model_validate(events), project, "sess-1",
                      transcript_path=project / "session.jsonl", mode=lambda: "accept_edits")


def specific(**fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", **fields}}


async def test_permission_decision_deny_blocks_the_call_with_its_reason(project: Path, tmp_path: Path) -> None:
    deny = answer(tmp_path, "deny", specific(permissionDecision="deny", permissionDecisionReason="no rm here"))
    outcome = await runner(project, pre_tool_use=[{"command": deny}]).pre_tool_use("run_command", {"command": "rm"})
    assert outcome.blocked and outcome.decision == "deny" and outcome.message == "no rm here"
    assert outcome.notices == []


async def test_permission_decision_allow_and_ask(project: Path, tmp_path: Path) -> None:
    allow = answer(tmp_path, "allow", specific(permissionDecision="allow", permissionDecisionReason="known safe"))
    ask = answer(tmp_path, "ask", specific(permissionDecision="ask", permissionDecisionReason="touches CI"))
    outcome = await runner(project, pre_tool_use=[{"command": allow}]).pre_tool_use("run_tests", {})
    assert (outcome.decision, outcome.decision_reason, outcome.blocked) == ("approve", "known safe", False)
    # of several hooks the stronger word stands, whatever their order: ask over allow
    for order in ([allow, ask], [ask, allow]):
        outcome = await runner(project, pre_tool_use=[{"command": c} for c in order]).pre_tool_use("run_tests", {})
        assert (outcome.decision, outcome.decision_reason) == ("ask", "touches CI")


async def test_hook_specific_output_wins_over_the_older_top_level_decision(project: Path, tmp_path: Path) -> None:
    both = answer(tmp_path, "both", {"decision": "approve", **specific(permissionDecision="deny",
                                                                          permissionDecisionReason="newer form")})
    outcome = await runner(project, pre_tool_use=[{"command": both}]).pre_tool_use("run_tests", {})
    assert outcome.blocked and outcome.message == "newer form"
    old_block = answer(tmp_path, "old", {"decision": "block", "reason": "older form"})
    outcome = await runner(project, pre_tool_use=[{"command": old_block}]).pre_tool_use("run_tests", {})
    assert outcome.blocked and outcome.message == "older form"


async def test_updated_input_is_merged_and_its_file_path_becomes_path(project: Path, tmp_path: Path) -> None:
    moved = answer(tmp_path, "moved", specific(permissionDecision="allow",
                                               updatedInput={"file_path": str(project / "src" / "b.py")}))
    hooks = runner(project, pre_tool_use=[{"command": moved}])
    outcome = await hooks.pre_tool_use("edit_file", {"path": "a.py", "old_string": "x", "new_string": "y"})
    assert outcome.updated_input == {"path": "src/b.py", "old_string": "x", "new_string": "y"}
    outside = answer(tmp_path, "outside", specific(updatedInput={"file_path": "/etc/hosts"}))
    outcome = await runner(project, pre_tool_use=[{"command": outside}]).pre_tool_use("read_file", {"path": "a"})
    assert outcome.updated_input == {"path": "/etc/hosts"}  # the path checks of the tool then refuse it


async def test_continue_false_ends_the_turn_with_its_stop_reason(project: Path, tmp_path: Path) -> None:
    stop = answer(tmp_path, "stop", {"continue": False, "stopReason": "budget spent"})
    outcome = await runner(project, pre_tool_use=[{"command": stop}]).pre_tool_use("run_tests", {})
    assert outcome.stop_turn and outcome.stop_reason == "budget spent" and outcome.blocked
    outcome = await runner(project, user_prompt_submit=[{"command": stop}]).user_prompt_submit("go")
    assert outcome.blocked and outcome.stop_turn and outcome.stop_reason == "budget spent"
    outcome = await runner(project, post_tool_use=[{"command": stop}]).post_tool_use("read_file", {}, None)
    assert outcome.stop_turn and not outcome.blocked
    outcome = await runner(project, session_end=[{"command": stop}]).session_end()
    assert not outcome.stop_turn and "session_end has no turn to stop" in outcome.notices[0]


async def test_system_message_suppress_output_and_context_forms(project: Path, tmp_path: Path) -> None:
    said = answer(tmp_path, "said", {"systemMessage": "formatted 3 files", "suppressOutput": True,
                                     "hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                            "additionalContext": "Sprint ends Friday"}})
    outcome = await runner(project, user_prompt_submit=[{"command": said}]).user_prompt_submit("plan")
    assert outcome.notices == ["formatted 3 files"] and outcome.additional_context == "Sprint ends Friday"
    start = answer(tmp_path, "start", {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                              "additionalContext": "Open issues: 4"}})
    outcome = await runner(project, session_start=[{"command": start}]).session_start()
    assert outcome.additional_context == "Open issues: 4" and outcome.notices == []


async def test_unknown_keys_and_a_wrong_event_are_reported_not_ignored(project: Path, tmp_path: Path) -> None:
    typo = answer(tmp_path, "typo", {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                            "permisionDecision": "deny"}, "verdict": "no"})
    outcome = await runner(project, pre_tool_use=[{"command": typo}]).pre_tool_use("run_tests", {})
    assert not outcome.blocked and len(outcome.notices) == 1
    assert "verdict, hookSpecificOutput.permisionDecision, which anvil does not know" in outcome.notices[0]
    wrong = answer(tmp_path, "wrong", {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                              "permissionDecision": "deny"}})
    outcome = await runner(project, pre_tool_use=[{"command": wrong}]).pre_tool_use("run_tests", {})
    assert not outcome.blocked and "hookSpecificOutput for PostToolUse, not for PreToolUse" in outcome.notices[0]
    odd = answer(tmp_path, "odd", specific(permissionDecision="defer"))
    outcome = await runner(project, pre_tool_use=[{"command": odd}]).pre_tool_use("run_tests", {})
    assert not outcome.blocked and "decision 'defer'" in outcome.notices[0]


def test_matchers_take_claude_code_tool_names() -> None:
    assert matcher_matches("Bash", "run_command") and not matcher_matches("Bash", "run_tests")
    assert matcher_matches("Edit|Write", "edit_file") and matcher_matches("Edit|Write", "write_file")
    assert not matcher_matches("Edit|Write", "multi_edit") and matcher_matches("MultiEdit", "multi_edit")
    assert matcher_matches("Read", "read_file") and not matcher_matches("read", "read_file")  # case counts
    assert matcher_matches("Web.*", "web_fetch") and matcher_matches("mcp__.*", "mcp__github__x")
    assert HookCommand(command="x", matcher="Edit|Write").dialect == "claude"
    assert HookCommand(command="x", matcher="edit_file").dialect == "anvil"
    assert HookCommand(command="x", matcher="edit_file", format="claude").dialect == "claude"


def test_every_claude_tool_name_names_a_real_anvil_tool(project: Path) -> None:
    from anvil.config import Settings
    from anvil.core.model.scripted import ScriptedModel
    from anvil.runtime import open_runtime

    runtime = open_runtime(Settings(model="scripted"), project, model=ScriptedModel([]))
    names = set(runtime.agent.tools.names()) | {"web_search"}  # offered only with a search key
    assert set(CLAUDE_TOOLS.values()) <= names


async def test_stdin_carries_claude_code_field_names(project: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    seen.mkdir()
    dump = tmp_path / "dump.py"
    dump.write_text("import sys, pathlib\npathlib.Path(sys.argv[1]).write_text(sys.stdin.read())\n")
    hooks = runner(project, pre_tool_use=[
        {"matcher": "Edit", "command": f"{PY} {dump} {seen / 'claude.json'}"},
        {"matcher": "edit_file", "command": f"{PY} {dump} {seen / 'anvil.json'}"}])
    await hooks.pre_tool_use("edit_file", {"path": "src/a.py", "old_string": "x"}, "call-9")
    claude, anvil = (json.loads((seen / f"{n}.json").read_text()) for n in ("claude", "anvil"))
    assert (claude["hook_event_name"], claude["tool_name"]) == ("PreToolUse", "Edit")
    assert (anvil["hook_event_name"], anvil["tool_name"]) == ("pre_tool_use", "edit_file")
    for seen_by in (claude, anvil):
        assert seen_by["tool_input"]["file_path"] == str(project.resolve() / "src" / "a.py")
        assert seen_by["tool_input"]["path"] == "src/a.py"
        assert seen_by["tool_use_id"] == seen_by["tool_call_id"] == "call-9"
        assert seen_by["transcript_path"] == str(project / "session.jsonl")
        assert (seen_by["permission_mode"], seen_by["approval_mode"]) == ("acceptEdits", "accept_edits")
        assert (seen_by["anvil_tool_name"], seen_by["claude_tool_name"]) == ("edit_file", "Edit")
        assert (seen_by["anvil_hook_event_name"], seen_by["claude_hook_event_name"]) == ("pre_tool_use",
                                                                                        "PreToolUse")
        assert seen_by["session_id"] == "sess-1" and seen_by["cwd"] == str(project.resolve())


def test_claude_settings_hooks_become_anvil_hooks_in_claude_dialect() -> None:
    settings = {"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.py", "timeout": 5},
                                                     {"type": "prompt", "prompt": "is it safe?"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "context.sh"}]}],
        "SubagentStop": [{"hooks": [{"type": "command", "command": "x"}]}]}, "model": "opus"}
    hooks, skipped = hooks_from_claude_settings(settings)
    assert hooks == {"pre_tool_use": [{"command": "check.py", "format": "claude", "matcher": "Bash", "timeout": 5}],
                     "user_prompt_submit": [{"command": "context.sh", "format": "claude"}]}
    assert skipped == ["a PreToolUse hook of type 'prompt' (anvil runs only \"command\" hooks)",
                       "SubagentStop hooks (anvil has no such event)"]
    assert HooksConfig.model_validate(hooks).pre_tool_use[0].dialect == "claude"
    assert hooks_from_claude_settings({"permissions": {}}) == ({}, [])


@pytest.mark.parametrize("bad", [{"hooks": []}, {"hooks": "x"}])
def test_a_malformed_hooks_table_imports_nothing_and_says_so(bad: dict[str, Any]) -> None:
    hooks, skipped = hooks_from_claude_settings(bad)
    assert hooks == {} and skipped
