"""Claude Code hooks in `anvil -p`, end to end through litellm and the scripted model server.

The hook scripts below are written against Claude Code's documented hook contract, after Anthropic's published
examples (a Bash command validator, a UserPromptSubmit hook that adds context and blocks prompts with secrets);
they know nothing of anvil. They are configured the Claude Code way, in the project's .claude/settings.json,
which anvil reads with ``import_claude_hooks = true`` in a trusted folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer

BASH_VALIDATOR = r'''
import json, re, sys

RULES = [
    (r"^grep\b(?!.*\|)", "Use 'rg' (ripgrep) instead of 'grep' for better performance and features"),
    (r"^find\s+\S+\s+-name\b", "Use 'rg --files -g pattern' instead of 'find -name' for better performance"),
]

try:
    data = json.load(sys.stdin)
except json.JSONDecodeError as exc:
    print(f"Error: Invalid JSON input: {exc}", file=sys.stderr)
    sys.exit(1)
if data.get("tool_name") != "Bash" or data.get("hook_event_name") != "PreToolUse":
    sys.exit(0)
command = data.get("tool_input", {}).get("command", "")
issues = [message for pattern, message in RULES if re.search(pattern, command)]
if issues:
    for message in issues:
        print(f"• {message}", file=sys.stderr)
    sys.exit(2)
'''

PROMPT_CONTEXT = r'''
import datetime, json, re, sys

data = json.load(sys.stdin)
prompt = data.get("prompt", "")
for pattern, message in [(r"(?i)\b(password|secret|key|token)\s*[:=]", "Prompt contains potential secrets")]:
    if re.search(pattern, prompt):
        print(json.dumps({"decision": "block",
                          "reason": f"Security policy violation: {message}. Please rephrase without it."}))
        sys.exit(0)
print(f"Current session: {data['session_id']} in {data['cwd']} ({data['hook_event_name']})")
'''

DENY_RM = r'''
import json, sys

data = json.load(sys.stdin)
if "rm -rf" in data["tool_input"].get("command", ""):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                             "permissionDecisionReason": "Recursive deletes are not allowed here"}}))
'''


def claude_project(project: Path, hooks: dict[str, list[dict[str, object]]], scripts: dict[str, str]) -> None:
    hook_dir = project / ".claude" / "hooks"
    hook_dir.mkdir(parents=True)
    for name, text in scripts.items():
        (hook_dir / name).write_text(text)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text("import_claude_hooks = true\n")


def command_hook(script: str, matcher: str | None = None) -> dict[str, object]:
    command = f'{sys.executable} "$CLAUDE_PROJECT_DIR/.claude/hooks/{script}"'
    group: dict[str, object] = {"hooks": [{"type": "command", "command": command}]}
    if matcher:
        group["matcher"] = matcher
    return group


def run_anvil(project: Path, server: ScriptedOpenAIServer, prompt: str,
              *extra: str) -> subprocess.CompletedProcess[str]:
    args = anvil_command("-p", prompt, "--model", "openai/scripted", "--api-base", server.url, *extra)
    return subprocess.run(args, cwd=project, capture_output=True, text=True, timeout=120, env=dict(os.environ))


def tool_outputs(server: ScriptedOpenAIServer) -> list[str]:
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def bash(command: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}


def test_the_bash_validator_blocks_grep_and_lets_other_commands_run(project: Path,
                                                                     server: ScriptedOpenAIServer) -> None:
    claude_project(project, {"PreToolUse": [command_hook("bash_validator.py", "Bash")]},
                   {"bash_validator.py": BASH_VALIDATOR})
    server.add(bash("grep -r TODO ."), bash("echo validated"), {"text": "done"})
    result = run_anvil(project, server, "find the TODOs", "--trust", "--auto-approve")
    assert result.returncode == 0, result.stderr
    blocked, ran = tool_outputs(server)
    assert blocked == "• Use 'rg' (ripgrep) instead of 'grep' for better performance and features"
    assert "validated" in ran and "Use 'rg'" not in ran


def test_the_prompt_hook_adds_context_and_blocks_secrets(project: Path, server: ScriptedOpenAIServer) -> None:
    claude_project(project, {"UserPromptSubmit": [command_hook("prompt_context.py")]},
                   {"prompt_context.py": PROMPT_CONTEXT})
    server.add({"text": "hello"})
    result = run_anvil(project, server, "what changed?", "--trust")
    assert result.returncode == 0, result.stderr
    sent = server.requests[0]["messages"][-1]["content"]
    assert sent.startswith("what changed?\n\n<hook-context>\nCurrent session: ")
    assert f"in {project.resolve()} (UserPromptSubmit)" in sent

    result = run_anvil(project, server, "deploy with password: hunter2", "--trust")
    assert result.returncode == 1 and len(server.requests) == 1  # the model never saw it
    assert "Security policy violation: Prompt contains potential secrets" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_json_deny_in_the_current_format_stops_the_command(project: Path, server: ScriptedOpenAIServer) -> None:
    """The safety bug of issue 19: this answer used to be ignored and the command ran."""
    (project / "keep").mkdir()
    (project / "keep" / "data.txt").write_text("precious")
    (project / "deny_rm.py").write_text(DENY_RM)
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text(
        f'[[hooks.pre_tool_use]]\nmatcher = "Bash"\ncommand = "{sys.executable} deny_rm.py"\n')
    server.add(bash("rm -rf keep"), {"text": "done"})
    result = run_anvil(project, server, "clean up", "--trust", "--auto-approve")
    assert result.returncode == 0, result.stderr
    assert tool_outputs(server) == ["Recursive deletes are not allowed here"]
    assert (project / "keep" / "data.txt").read_text() == "precious"


def test_imported_hooks_need_the_folder_to_be_trusted(project: Path, server: ScriptedOpenAIServer) -> None:
    claude_project(project, {"PreToolUse": [command_hook("bash_validator.py", "Bash")]},
                   {"bash_validator.py": BASH_VALIDATOR})
    (project / ".anvil" / "config.toml").unlink()  # the import is the person's choice, in their own config
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "anvil"
    user_config.mkdir(parents=True)
    (user_config / "config.toml").write_text("import_claude_hooks = true\n")
    server.add(bash("grep -r TODO ."), {"text": "done"})
    result = run_anvil(project, server, "find the TODOs", "--auto-approve")
    assert result.returncode == 0, result.stderr
    assert "not trusted" in result.stderr and ".claude/settings.json" in result.stderr
    assert "Use 'rg'" not in tool_outputs(server)[0]  # untrusted: the imported hook did not run
