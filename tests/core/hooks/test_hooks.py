"""Hooks: real shell commands and small Python scripts written into tmp dirs, run through HookRunner."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from anvil.core.hooks.config import HookCommand, HooksConfig, matcher_matches
from anvil.core.hooks.outcome import append_context
from anvil.core.hooks.runner import MAX_STOP_CONTINUATIONS, HookRunner
from anvil.core.tools.base import ToolResult

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "hooks"
PY = shlex.quote(sys.executable)


def script(tmp_path: Path, name: str, body: str) -> str:
    """A Python hook script in tmp_path; returns the command that runs it."""
    path = tmp_path / name
    path.write_text("import json, os, sys\n" + body)
    return f"{PY} {shlex.quote(str(path))}"


def running(pid: int) -> bool:
    """Alive and not a zombie (a killed child may wait a while for its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def runner(project: Path, **events: list[dict]) -> HookRunner:
    config = HooksConfig.model_validate(events)
    return HookRunner(config, project, "sess-1")


async def test_no_hooks_is_an_empty_outcome(project: Path) -> None:
    hooks = HookRunner(None, project, "s")
    outcome = await hooks.pre_tool_use("edit_file", {"path": "a.py"})
    assert not outcome.blocked and outcome.ran == 0 and outcome.notices == [] and not hooks.has("stop")


async def test_hook_receives_event_json_and_environment(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    cmd = script(tmp_path, "dump.py", f"data = json.load(sys.stdin)\n"
                 f"data['env'] = {{k: os.environ.get(k) for k in ('ANVIL_PROJECT_DIR', 'ANVIL_SESSION_ID', "
                 f"'ANVIL_HOOK_EVENT')}}\ndata['pwd'] = os.getcwd()\n"
                 f"open({str(out)!r}, 'w').write(json.dumps(data))\n")
    hooks = runner(project, pre_tool_use=[{"command": cmd}])
    outcome = await hooks.pre_tool_use("edit_file", {"path": "a.py", "old_string": "x"}, "call-7")
    assert outcome.ran == 1 and not outcome.blocked and outcome.notices == []
    seen = json.loads(out.read_text())
    assert seen["hook_event_name"] == "pre_tool_use"
    assert seen["session_id"] == "sess-1" and seen["cwd"] == str(project.resolve())
    assert seen["tool_name"] == "edit_file" and seen["tool_input"] == {
        "path": "a.py", "old_string": "x", "file_path": str(project.resolve() / "a.py")}
    assert seen["tool_call_id"] == "call-7"
    assert seen["env"] == {"ANVIL_PROJECT_DIR": str(project.resolve()), "ANVIL_SESSION_ID": "sess-1",
                           "ANVIL_HOOK_EVENT": "pre_tool_use"}
    assert seen["pwd"] == str(project.resolve())


async def test_exit_2_blocks_the_call_with_stderr_for_the_model(project: Path) -> None:
    hooks = runner(project, pre_tool_use=[{"command": "echo 'no edits to vendored code' >&2; exit 2"}])
    outcome = await hooks.pre_tool_use("edit_file", {"path": "vendor/x.py"})
    assert outcome.blocked and outcome.decision == "deny"
    assert outcome.message == "no edits to vendored code"


async def test_a_block_skips_the_remaining_hooks(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hooks = runner(project, pre_tool_use=[{"command": "echo stop >&2; exit 2"},
                                          {"command": f"touch {shlex.quote(str(marker))}"}])
    outcome = await hooks.pre_tool_use("write_file", {"path": "a"})
    assert outcome.blocked and outcome.ran == 1 and not marker.exists()


async def test_json_approve_and_deny(project: Path, tmp_path: Path) -> None:
    approve = script(tmp_path, "approve.py", "print(json.dumps({'decision': 'approve'}))\n")
    deny = script(tmp_path, "deny.py", "print(json.dumps({'decision': 'deny', 'reason': 'read-only Fridays'}))\n")
    outcome = await runner(project, pre_tool_use=[{"command": approve}]).pre_tool_use("run_tests", {})
    assert outcome.decision == "approve" and not outcome.blocked
    outcome = await runner(project, pre_tool_use=[{"command": deny}]).pre_tool_use("run_tests", {})
    assert outcome.blocked and outcome.decision == "deny" and outcome.message == "read-only Fridays"
    # a later deny beats an earlier approve
    outcome = await runner(project, pre_tool_use=[{"command": approve}, {"command": deny}]).pre_tool_use("x", {})
    assert outcome.blocked and outcome.decision == "deny" and outcome.ran == 2


async def test_updated_input_rewrites_the_call_and_later_hooks_see_it(project: Path, tmp_path: Path) -> None:
    rewrite = script(tmp_path, "rewrite.py", "data = json.load(sys.stdin)\nargs = data['tool_input']\n"
                     "args['command'] = args['command'] + ' --no-color'\n"
                     "print(json.dumps({'updated_input': args}))\n")
    seen = tmp_path / "second.json"
    second = script(tmp_path, "second.py", f"open({str(seen)!r}, 'w').write(sys.stdin.read())\n")
    hooks = runner(project, pre_tool_use=[{"command": rewrite}, {"command": second}])
    outcome = await hooks.pre_tool_use("run_command", {"command": "pytest"})
    assert outcome.updated_input == {"command": "pytest --no-color"}
    assert json.loads(seen.read_text())["tool_input"] == {"command": "pytest --no-color"}


async def test_camel_case_fields_from_claude_code_hooks_are_understood(project: Path, tmp_path: Path) -> None:
    cmd = script(tmp_path, "cc.py", "print(json.dumps({'updatedInput': {'path': 'b'}, 'systemMessage': 'hi'}))\n")
    outcome = await runner(project, pre_tool_use=[{"command": cmd}]).pre_tool_use("read_file", {"path": "a"})
    assert outcome.updated_input == {"path": "b"} and outcome.notices == ["hi"]


async def test_user_prompt_submit_adds_context_from_text_or_json(project: Path, tmp_path: Path) -> None:
    text = "echo 'Branch: main'"
    as_json = script(tmp_path, "ctx.py", "prompt = json.load(sys.stdin)['prompt']\n"
                     "print(json.dumps({'additional_context': f'You asked: {prompt}'}))\n")
    hooks = runner(project, user_prompt_submit=[{"command": text}, {"command": as_json}])
    outcome = await hooks.user_prompt_submit("fix the bug")
    assert not outcome.blocked
    assert outcome.additional_context == "Branch: main\n\nYou asked: fix the bug"
    assert append_context("fix the bug", outcome.additional_context) == (
        "fix the bug\n\n<hook-context>\nBranch: main\n\nYou asked: fix the bug\n</hook-context>")
    assert append_context("fix the bug", "") == "fix the bug"


async def test_user_prompt_submit_exit_2_blocks_the_prompt(project: Path) -> None:
    hooks = runner(project, user_prompt_submit=[{"command": "cat >/dev/null; echo 'no prod talk' >&2; exit 2"}])
    outcome = await hooks.user_prompt_submit("deploy to prod")
    assert outcome.blocked and outcome.message == "no prod talk" and outcome.decision is None


async def test_post_tool_use_json_adds_a_note_and_gets_the_result(project: Path, tmp_path: Path) -> None:
    cmd = script(tmp_path, "post.py", "r = json.load(sys.stdin)['tool_result']\n"
                 "print(json.dumps({'additional_context': f\"saw ok={r['ok']} {r['summary']}: {r['output']}\"}))\n")
    hooks = runner(project, post_tool_use=[{"command": cmd}])
    outcome = await hooks.post_tool_use("edit_file", {"path": "a.py"}, ToolResult("done", summary="1 edit"))
    assert outcome.additional_context == "saw ok=True 1 edit: done"
    # plain stdout is not context on post_tool_use (formatters print chatter)
    outcome = await runner(project, post_tool_use=[{"command": "echo formatted"}]).post_tool_use(
        "edit_file", {}, ToolResult("x"))
    assert outcome.additional_context == "" and outcome.notices == []


async def test_matcher_by_tool_name(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    hooks = runner(project, pre_tool_use=[
        {"matcher": "edit_file|write_file", "command": f"echo regex >> {log}"},
        {"matcher": "mcp__github__*", "command": f"echo glob >> {log}"},
        {"command": f"echo all >> {log}"},
    ])
    await hooks.pre_tool_use("write_file", {})
    await hooks.pre_tool_use("mcp__github__create_issue", {})
    await hooks.pre_tool_use("multi_edit", {})  # "edit_file" must not match part of a name
    assert log.read_text().split() == ["regex", "all", "glob", "all", "all"]
    assert hooks.has("pre_tool_use", "anything") and not runner(project, pre_tool_use=[
        {"matcher": "grep", "command": "true"}]).has("pre_tool_use", "glob")


def test_matcher_rules() -> None:
    assert matcher_matches(None, "x") and matcher_matches("*", "x") and matcher_matches("", "x")
    assert matcher_matches("read_.*", "read_file") and matcher_matches("read_*", "read_file")
    assert not matcher_matches("read", "read_file")
    assert matcher_matches("*_file", "edit_file")  # a glob that is not a valid regex
    assert matcher_matches("edit_file", None)  # events without a subject run every hook


async def test_timeout_kills_the_hook_quickly_and_reports_it(project: Path, tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    hooks = runner(project, pre_tool_use=[{"command": f"sleep 60 & echo $! > {child}; sleep 60", "timeout": 0.3}])
    started = time.monotonic()
    outcome = await hooks.pre_tool_use("edit_file", {})
    assert time.monotonic() - started < 3
    assert not outcome.blocked
    assert len(outcome.notices) == 1 and "did not finish within 0.3s" in outcome.notices[0]
    # the whole process group went, not only the shell
    pid = int(child.read_text())
    deadline = time.monotonic() + 2
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not running(pid)


async def test_crash_and_garbage_are_reported_and_ignored(project: Path, tmp_path: Path) -> None:
    crash = script(tmp_path, "crash.py", "print('{{{ not json')\nraise RuntimeError('hook exploded')\n")
    garbage = "echo '{\"decision\": approve'"  # exit 0, broken JSON
    hooks = runner(project, pre_tool_use=[{"command": crash}, {"command": garbage},
                                          {"command": "echo '\\x00\\xff binary junk'"}])
    outcome = await hooks.pre_tool_use("edit_file", {"path": "a"})
    assert not outcome.blocked and outcome.decision is None and outcome.updated_input is None
    assert outcome.ran == 3 and len(outcome.notices) == 2
    assert "failed (exit 1: RuntimeError: hook exploded)" in outcome.notices[0]
    assert "invalid JSON" in outcome.notices[1]


async def test_a_missing_command_is_a_notice(project: Path) -> None:
    outcome = await runner(project, session_start=[{"command": "definitely-not-a-command-xyz"}]).session_start()
    assert not outcome.blocked and "exit 127" in outcome.notices[0]


async def test_exit_2_on_an_event_that_cannot_block_is_a_notice(project: Path) -> None:
    outcome = await runner(project, session_end=[{"command": "echo nope >&2; exit 2"}]).session_end()
    assert not outcome.blocked and "cannot be blocked" in outcome.notices[0]


async def test_stop_hook_continues_but_only_a_bounded_number_of_times(project: Path, tmp_path: Path) -> None:
    cmd = script(tmp_path, "stop.py", "data = json.load(sys.stdin)\n"
                 "print('tests still fail; active=' + str(data['stop_hook_active']), file=sys.stderr)\n"
                 "sys.exit(2)\n")
    hooks = runner(project, stop=[{"command": cmd}])
    outcomes = [await hooks.stop("done") for _ in range(MAX_STOP_CONTINUATIONS + 1)]
    assert [o.blocked for o in outcomes] == [True] * MAX_STOP_CONTINUATIONS + [False]
    assert outcomes[0].message == "tests still fail; active=False"
    assert outcomes[1].message == "tests still fail; active=True"
    assert "cannot loop" in outcomes[-1].notices[0]
    await hooks.user_prompt_submit("next")  # a new turn resets the count
    assert (await hooks.stop("done")).blocked


def test_config_rejects_unknown_events_and_bad_timeouts() -> None:
    with pytest.raises(ValidationError):
        HooksConfig.model_validate({"pre_tool_usee": [{"command": "x"}]})
    with pytest.raises(ValidationError):
        HookCommand.model_validate({"command": "x", "timeout": 0})
    config = HooksConfig.model_validate({"stop": [{"command": "true"}]})
    assert config.stop[0].timeout == 30.0 and config.stop[0].matcher is None


# -- the example hooks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [".env", "config/.env.production", "certs/server.pem", "home/.ssh/config",
                                  "id_rsa", "secrets.yaml"])
async def test_example_block_secrets_refuses_secrets_files(project: Path, path: str) -> None:
    hooks = runner(project, pre_tool_use=[{"matcher": "edit_file|write_file|multi_edit",
                                           "command": f"{PY} {EXAMPLES / 'block_secrets.py'}"}])
    outcome = await hooks.pre_tool_use("write_file", {"path": path, "content": "KEY=1"})
    assert outcome.blocked and outcome.decision == "deny"
    assert path in outcome.message and "secrets file" in outcome.message


@pytest.mark.parametrize("path", [".env.example", "src/app.py", "id_rsa.pub", "docs/environment.md"])
async def test_example_block_secrets_lets_other_files_through(project: Path, path: str) -> None:
    hooks = runner(project, pre_tool_use=[{"command": f"{PY} {EXAMPLES / 'block_secrets.py'}"}])
    outcome = await hooks.pre_tool_use("edit_file", {"path": path, "old_string": "a", "new_string": "b"})
    assert not outcome.blocked and outcome.notices == []


async def test_example_format_after_edit_formats_python_and_tells_the_model(project: Path) -> None:
    bin_dir = str(Path(sys.executable).parent)  # the venv's ruff
    if "ruff" not in os.listdir(bin_dir):
        pytest.skip("ruff is not installed next to the test interpreter")
    (project / "ugly.py").write_text("x = {'a':1,\n  'b':2}\n")
    hooks = HookRunner(HooksConfig.model_validate({"post_tool_use": [
        {"command": f"{PY} {EXAMPLES / 'format_after_edit.py'}"}]}), project, "s",
        environ={**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")})
    outcome = await hooks.post_tool_use("edit_file", {"path": "ugly.py"}, ToolResult("ok"))
    assert (project / "ugly.py").read_text() == 'x = {"a": 1, "b": 2}\n'
    assert "reformatted ugly.py with ruff" in outcome.additional_context and outcome.notices == []


async def test_example_format_after_edit_is_quiet_without_a_formatter(project: Path) -> None:
    (project / "a.py").write_text("x = {'a':1}\n")
    hooks = HookRunner(HooksConfig.model_validate({"post_tool_use": [
        {"command": f"{PY} {EXAMPLES / 'format_after_edit.py'}"}]}), project, "s",
        environ={**os.environ, "PATH": "/nonexistent"})
    outcome = await hooks.post_tool_use("write_file", {"path": "a.py"}, ToolResult("ok"))
    assert outcome.additional_context == "" and outcome.notices == []
    assert (project / "a.py").read_text() == "x = {'a':1}\n"


async def test_example_notify_never_blocks_and_never_fails(project: Path) -> None:
    hooks = HookRunner(HooksConfig.model_validate({"stop": [
        {"command": f"bash {EXAMPLES / 'notify_turn_end.sh'}", "timeout": 5}]}), project, "s",
        environ={"PATH": "/usr/bin:/bin"})  # no DISPLAY: falls back to the bell, quietly without a terminal
    outcome = await hooks.stop("all done")
    assert outcome.ran == 1 and not outcome.blocked and outcome.notices == []
