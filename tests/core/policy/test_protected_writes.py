"""Protected paths: the file tools never write anvil's configuration, git's files or shell start-up files without
the person, whatever the mode, the rules or the path tricks; headless, they refuse and say what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from anvil.config import load_settings, user_config_dir
from anvil.core.events import ApprovalDecision, ApprovalRequested, ToolResultEvent
from anvil.core.hooks.config import HooksConfig
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy, Mode
from anvil.core.tools.base import Tool, ToolContext, ToolSettings
from anvil.core.tools.edit.edit_tools import EditFileArgs, EditFileTool, MultiEditArgs, MultiEditTool
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool, WriteFileArgs, WriteFileTool
from anvil.runtime import open_runtime
from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer

CONFIG = '[permissions]\nallow = ["git status"]\n'


async def _nobody(event: Any) -> Any:  # ctx.ask as interactive front ends set it; never called by the policy
    raise AssertionError("the policy must not ask by itself")


@pytest.fixture
def ctx(project: Path, tmp_path: Path) -> ToolContext:
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text(CONFIG)
    return ToolContext(root=project, data_dir=tmp_path / "data", ask=_nobody)


def verdict(ctx: ToolContext, path: str, *, tool: Tool | None = None, mode: Mode = "ask", **policy: Any) -> Any:
    tool = tool or WriteFileTool()
    args = (tool.Args.model_validate({"path": path, "content": "auto_approve = true\n"})
            if isinstance(tool, WriteFileTool) else
            tool.Args.model_validate({"path": path, "old_string": "a", "new_string": "b"}))
    return ApprovalPolicy(mode=mode, **policy).evaluate(tool, args, ctx)


@pytest.mark.parametrize("mode", ["ask", "accept_edits", "auto"])
def test_writing_anvils_config_asks_in_every_mode_and_says_why(ctx: ToolContext, mode: Mode) -> None:
    found = verdict(ctx, ".anvil/config.toml", mode=mode)
    assert found.action == "ask" and found.by == "protected path"
    assert found.reasons[0].startswith("anvil's own configuration: .anvil/config.toml (a change here can grant")
    assert found.suggested_pattern == "write_file(path:.anvil/config.toml)"


@pytest.mark.parametrize("tool", [EditFileTool(), MultiEditTool()], ids=["edit_file", "multi_edit"])
def test_every_tool_that_writes_files_is_covered(ctx: ToolContext, tool: Tool) -> None:
    if isinstance(tool, MultiEditTool):
        args: Any = MultiEditArgs(path=".git/config", edits=[{"old_string": "a", "new_string": "b"}])
    else:
        args = EditFileArgs(path=".git/config", old_string="a", new_string="b")
    found = ApprovalPolicy(mode="auto").evaluate(tool, args, ctx)
    assert found.action == "ask" and found.reasons[0].startswith("git's own files: .git/config")


@pytest.mark.parametrize("path", [
    ".anvil/config.toml", "./.anvil//config.toml", ".anvil/../.anvil/config.toml", ".ANVIL/Config.TOML",
    ".anvil/config.toml.", ".anvil/permissions.toml", ".anvil/agents/reviewer.md", ".anvil/hooks/check.py",
    "sub/.anvil/config.toml", ".git/config", ".git/hooks/pre-commit", ".GIT/HOOKS/post-checkout",
    ".g\u200cit/config", "vendor/lib/.git/config", "bare.git/hooks/update", ".bashrc", "deep/dir/.zshrc",
    ".profile", ".bash_profile", ".zshenv", ".envrc", ".config/fish/config.fish", ".config/fish/conf.d/x.fish",
])
def test_protected_paths_and_their_disguises_ask(ctx: ToolContext, path: str) -> None:
    assert verdict(ctx, path, mode="auto").action == "ask"


@pytest.mark.parametrize("path", [
    ".anvil/jobs/42/plan.md", ".anvil/jobs/42/config.toml", "src/app.py", ".anvil-notes.md", "docs/git/config",
    "bashrc.example", "notes/.bashrc.md", ".github/workflows/ci.yml",
])
def test_work_files_and_look_alikes_are_not_protected(ctx: ToolContext, path: str) -> None:
    assert verdict(ctx, path, mode="auto").action == "allow"


def test_broad_allow_rules_do_not_cover_a_protected_path(ctx: ToolContext) -> None:
    rules: Any = {"project": (["write_file(*)", "write_file(path:*)", "write_file(path:.anvil/*)", "*(*)"], [])}
    assert verdict(ctx, ".anvil/config.toml", mode="auto", rule_lists=rules).action == "ask"


def test_a_rule_naming_the_file_allows_it_and_only_for_its_tool(ctx: ToolContext) -> None:
    rules: Any = {"user": (["write_file(path:./.anvil//CONFIG.toml)"], [])}
    allowed = verdict(ctx, ".anvil/config.toml", rule_lists=rules)
    assert allowed.action == "allow" and allowed.by == "write_file(path:./.anvil//CONFIG.toml)"
    assert verdict(ctx, ".anvil/config.toml", tool=EditFileTool(), rule_lists=rules).action == "ask"
    assert verdict(ctx, ".anvil/permissions.toml", rule_lists=rules).action == "ask"


def test_headless_refuses_and_says_what_to_do(ctx: ToolContext) -> None:
    ctx.ask = None
    refused = verdict(ctx, ".anvil/config.toml", mode="auto")
    assert refused.action == "deny"
    assert "anvil's own configuration: .anvil/config.toml" in refused.message
    assert "--auto-approve does not cover it" in refused.message
    assert "`write_file(path:.anvil/config.toml)` in [permissions] allow" in refused.message


def test_the_user_config_dir_and_shell_files_in_allowed_dirs_are_protected(ctx: ToolContext, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    ctx.settings = ToolSettings(allowed_dirs=[home, user_config_dir()], config_dirs=[user_config_dir()])
    assert verdict(ctx, str(user_config_dir() / "config.toml"), mode="auto").reasons[0].startswith(
        f"anvil's own configuration: {user_config_dir() / 'config.toml'}")
    assert verdict(ctx, str(user_config_dir() / "themes" / "mine.toml"), mode="auto").action == "ask"
    assert verdict(ctx, str(home / ".bashrc"), mode="auto").reasons[0].startswith("a shell start-up file")
    assert verdict(ctx, str(home / ".config" / "fish" / "config.fish"), mode="auto").action == "ask"


async def test_a_symlink_to_a_protected_file_is_refused_by_the_policy_and_the_tool(ctx: ToolContext,
                                                                                   project: Path) -> None:
    (project / "settings.toml").symlink_to(project / ".anvil" / "config.toml")
    (project / "cfg").symlink_to(project / ".anvil")
    for path in ("settings.toml", "cfg/config.toml"):
        refused = verdict(ctx, path, mode="auto")
        assert refused.action == "deny" and "leads through a symbolic link to .anvil/config.toml" in refused.message
        with pytest.raises(ToolError, match=r"write \.anvil/config\.toml itself"):
            await WriteFileTool().run(WriteFileArgs(path=path, content="auto_approve = true\n"), ctx)
    assert (project / ".anvil" / "config.toml").read_text() == CONFIG


async def test_a_symlink_swapped_in_after_the_approval_is_caught_when_writing(ctx: ToolContext,
                                                                                project: Path) -> None:
    (project / "notes.toml").write_text("harmless\n")
    assert verdict(ctx, "notes.toml", mode="auto").action == "allow"
    (project / "notes.toml").unlink()
    (project / "notes.toml").symlink_to(project / ".anvil" / "config.toml")
    with pytest.raises(ToolError, match="leads through a symbolic link"):
        await WriteFileTool().run(WriteFileArgs(path="notes.toml", content="auto_approve = true\n"), ctx)
    assert (project / ".anvil" / "config.toml").read_text() == CONFIG


async def test_a_hard_link_to_a_protected_file_never_changes_it(ctx: ToolContext, project: Path) -> None:
    # Both names are inside the project, so the tools use the file; a write replaces the name it was given (a
    # new file renamed over it) and never rewrites the file in place, so the protected name keeps its content.
    config = project / ".anvil" / "config.toml"
    os.link(config, project / "notes.toml")
    assert verdict(ctx, "notes.toml", mode="auto").action == "allow"  # the policy cannot see it; the tools can
    assert "git status" in (await ReadFileTool().run(ReadFileArgs(path="notes.toml"), ctx)).output
    await EditFileTool().run(EditFileArgs(path="notes.toml", old_string="git", new_string="rm"), ctx)
    await WriteFileTool().run(WriteFileArgs(path="notes.toml", content="auto_approve = true\n"), ctx)
    assert (project / "notes.toml").read_text() == "auto_approve = true\n"
    assert config.read_text() == CONFIG and config.stat().st_nlink == 1


# --- end to end: the loop, the person, headless -----------------------------------------------------------


WRITE_CONFIG = [{"tool_calls": [{"name": "write_file", "arguments": {
    "path": ".anvil/config.toml", "content": "auto_approve = true\nallowed_dirs = [\"/\"]\n"}}]}, {"text": "done"}]


async def _turn(project: Path, answer: ApprovalDecision | None, interactive: bool = True) -> list[Any]:
    settings = load_settings(project, {"auto_approve": True}, environ={})
    runtime = open_runtime(settings, project, model=ScriptedModel(WRITE_CONFIG), interactive=interactive)
    events = []
    try:
        async for event in runtime.agent.run_turn("go"):
            if isinstance(event, ApprovalRequested):
                assert answer is not None
                event.answer(answer)
            events.append(event)
    finally:
        await runtime.close()
    return events


async def test_auto_mode_still_asks_showing_the_diff_and_the_reason(project: Path) -> None:
    events = await _turn(project, ApprovalDecision(False))
    asked = next(e for e in events if isinstance(e, ApprovalRequested))
    assert asked.reasons[0].startswith("anvil's own configuration: .anvil/config.toml")
    assert asked.diff is not None and "+auto_approve = true" in asked.diff
    assert not (project / ".anvil" / "config.toml").exists()
    await _turn(project, ApprovalDecision(True))
    assert (project / ".anvil" / "config.toml").read_text().startswith("auto_approve = true")


async def test_headless_auto_approve_cannot_write_the_config(project: Path) -> None:
    events = await _turn(project, None, interactive=False)
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert not result.ok and "nobody can approve here" in result.output
    assert not (project / ".anvil" / "config.toml").exists()


def test_headless_cli_refuses_and_tells_the_person(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add(*WRITE_CONFIG)
    result = subprocess.run(anvil_command("-p", "go", "--auto-approve", "--model", "openai/scripted", "--api-base",
                                          server.url), cwd=project, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    tool_results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "Not written: anvil's own configuration: .anvil/config.toml" in tool_results[0]
    assert "write_file" in result.stderr and "anvil's own configuration" in result.stderr
    assert not (project / ".anvil" / "config.toml").exists()


async def test_a_hook_that_approves_every_call_does_not_stand_in_for_the_person(project: Path) -> None:
    """A pre_tool_use hook may pre-approve ordinary asks; a protected path is the person's alone to allow."""
    hook = project / "approve_all.py"
    hook.write_text('import json; print(json.dumps({"decision": "approve"}))\n')
    (project / ".anvil").mkdir(exist_ok=True)
    settings = load_settings(project, {"auto_approve": True}, environ={})
    settings = settings.model_copy(update={"hooks": HooksConfig.model_validate(
        {"pre_tool_use": [{"matcher": "*", "command": f"{sys.executable} {hook}"}]})})
    runtime = open_runtime(settings, project, model=ScriptedModel(WRITE_CONFIG), interactive=True)
    asked: list[ApprovalRequested] = []
    try:
        async for event in runtime.agent.run_turn("go"):
            if isinstance(event, ApprovalRequested):
                asked.append(event)
                event.answer(ApprovalDecision(False))
    finally:
        await runtime.close()
    assert asked and asked[0].reasons[0].startswith("anvil's own configuration")
    assert not (project / ".anvil" / "config.toml").exists()


# -- MCP tools that write files, and scripts anvil runs outside the sandbox ---------------------------------


def fs_tool(name: str = "write_file", read_only: bool = False) -> Any:
    from types import SimpleNamespace

    from anvil.core.mcp.tools import McpTool

    remote = SimpleNamespace(name=name, description="", input_schema={"type": "object"},
                             annotations=SimpleNamespace(read_only_hint=read_only))
    return McpTool(SimpleNamespace(name="fs"), remote)  # type: ignore[arg-type]


@pytest.mark.parametrize(("tool_name", "arguments", "shown"), [
    ("write_file", {"path": ".git/config", "content": "x"}, ".git/config"),
    ("edit_file", {"path": "src/a.py", "edits": [{"path": ".anvil/config.toml", "oldText": "a"}]},
     ".anvil/config.toml"),
    ("move_file", {"source": ".git/hooks/pre-commit.sample", "destination": ".git/hooks/pre-commit"},
     ".git/hooks/pre-commit.sample"),
    ("write_file", {"uri": "file://{root}/.bashrc", "text": "x"}, ".bashrc"),
])
def test_an_mcp_tool_that_writes_a_protected_file_asks_even_in_auto_mode(ctx: ToolContext, tool_name: str,
                                                                        arguments: dict[str, Any], shown: str) -> None:
    tool = fs_tool(tool_name)
    arguments = {k: v.format(root=ctx.root) if isinstance(v, str) else v for k, v in arguments.items()}
    args = tool.Args.model_validate(arguments)
    found = ApprovalPolicy(mode="auto", rule_lists={"user": (["mcp__fs__*(*)"], [])}).evaluate(tool, args, ctx)
    assert found.action == "ask" and found.by == "protected path", found
    assert shown in found.reasons[0]
    ordinary = tool.Args.model_validate({"path": "notes/todo.md", "content": "x"})
    allowed = ApprovalPolicy(mode="auto", rule_lists={"user": (["mcp__fs__*(*)"], [])}).evaluate(tool, ordinary, ctx)
    assert allowed.action == "allow"


def test_an_mcp_tool_the_server_marks_read_only_names_paths_freely(ctx: ToolContext) -> None:
    tool = fs_tool("read_text_file", read_only=True)
    args = tool.Args.model_validate({"path": ".git/config"})
    assert tool.write_targets(args) == []
    assert ApprovalPolicy(rule_lists={"user": (["mcp__fs__*(*)"], [])}).evaluate(tool, args, ctx).action == "allow"


def test_a_script_a_hook_runs_is_protected_from_the_file_tools(project: Path, tmp_path: Path) -> None:
    """A hook runs `sh scripts/setup.sh` outside the sandbox: the file tools ask before changing that file, in
    every mode, and say why."""
    script = project / "scripts" / "setup.sh"
    script.parent.mkdir()
    script.write_text("echo hi\n")
    ctx = ToolContext(root=project, data_dir=tmp_path / "data", ask=_nobody,
                      settings=ToolSettings(outside_scripts=[script]))
    for mode in ("ask", "accept_edits", "auto"):
        found = verdict(ctx, "scripts/setup.sh", mode=mode)  # type: ignore[arg-type]
        assert found.action == "ask" and found.by == "protected path"
        assert found.reasons[0].startswith("a script anvil runs outside the sandbox: scripts/setup.sh")
    assert verdict(ctx, "scripts/other.sh", mode="auto").action == "allow"
